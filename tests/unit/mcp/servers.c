#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "mcp/servers.h"

static void load(struct config *cfg, const char *toml)
{
	char *cwd = getcwd(NULL, 0);

	config_init(cfg);
	if (config_apply_string(cfg, toml, strlen(toml), "t.toml", CFG_USER) < 0)
		fail_msg("config: %s", err_last());
	free(cfg->workspace);
	cfg->workspace = cwd;
}

static const char *state_of(const struct mcp_servers *s, size_t i, json_t **keep)
{
	*keep = mcp_servers_json(s, i);
	return jsonx_str(*keep, "state");
}

static void test_mcp_servers_lifecycle(void **state)
{
	char *py = realpath("tests/fixtures/mcp/server.py", NULL);
	struct mcp_servers s = MCP_SERVERS_INIT;
	struct config cfg;
	json_t *j;
	char *toml;

	(void)state;
	if (!py)
		fail_msg("tests/fixtures/mcp/server.py not found (run from the top folder)");
	toml = xstrfmt("[mcp_servers.off]\ncommand = \"false\"\nenabled = false\n"
		       "[mcp_servers.gone]\ncommand = \"forgex-no-such-mcp-server\"\n"
		       "[mcp_servers.real]\ncommand = \"python3\"\nargs = [\"%s\"]\n", py);
	load(&cfg, toml);
	mcp_servers_init(&s);
	assert_int_equal(mcp_servers_start(&s, &cfg, NULL, NULL, NULL), 1);
	assert_int_equal(s.nr, 3);

	assert_string_equal(s.entries[0].skipped, "enabled = false");
	assert_null(s.entries[0].client);
	assert_string_equal(state_of(&s, 0, &j), "skipped");
	json_decref(j);

	assert_null(s.entries[1].client);
	assert_non_null(strstr(s.entries[1].error, "MCP server 'gone': program "
			       "'forgex-no-such-mcp-server' not found on PATH"));
	assert_string_equal(state_of(&s, 1, &j), "failed");
	json_decref(j);

	assert_non_null(s.entries[2].client);
	assert_string_equal(state_of(&s, 2, &j), "ready");
	assert_string_equal(jsonx_str(j, "transport"), "stdio");
	assert_true(json_array_size(json_object_get(j, "tools")) > 0);
	json_decref(j);
	mcp_servers_release(&s);
	assert_int_equal(s.nr, 0);
	assert_null(s.entries);

	/* `only`: that server alone, even when disabled */
	assert_int_equal(mcp_servers_start(&s, &cfg, NULL, "off", NULL), 0);
	assert_int_equal(s.nr, 1);
	assert_null(s.entries[0].skipped);
	assert_null(s.entries[0].client);
	assert_non_null(strstr(s.entries[0].error, "MCP server 'off'"));
	mcp_servers_release(&s);

	config_release(&cfg);
	free(toml);
	free(py);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mcp_servers_lifecycle),
	};

	/* this binary is not forgex: no `mcp __serve` to start servers through (tests/e2e/mcp.c does) */
	mcp_stdio_set_sandboxed(0);
	return cmocka_run_group_tests_name("mcp/servers", tests, NULL, NULL);
}
