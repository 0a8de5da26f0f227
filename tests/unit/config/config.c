#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "config/config.h"
#include "helpers/testutil.h"

static void apply_ok(struct config *cfg, const char *text, enum cfg_origin o)
{
	int ret = config_apply_string(cfg, text, strlen(text), "test.toml", o);

	if (ret)
		fail_msg("config_apply_string: %s", err_last());
}

static void test_config_defaults_match_design(void **state)
{
	struct config cfg;

	(void)state;
	config_init(&cfg);
	assert_string_equal(cfg.permissions.mode, "ask");
	assert_int_equal(cfg.terminal.timeout_seconds, 120);
	assert_int_equal(cfg.terminal.max_output_bytes, 1000000);
	assert_string_equal(cfg.sandbox.backend, "auto");
	assert_false(cfg.sandbox.network);
	assert_true(cfg.sandbox.read_only);
	assert_int_equal(cfg.sandbox.max_processes, 512);
	assert_string_equal(cfg.sandbox.image, "python:3.12-slim");
	assert_int_equal(cfg.providers_nr, 1);
	assert_string_equal(cfg.providers[0].name, "default");
	assert_string_equal(cfg.providers[0].base_url, "http://127.0.0.1:11434/v1");
	assert_string_equal(cfg.providers[0].api_key_env, "OPENAI_API_KEY");
	assert_int_equal(cfg.providers[0].max_retries, 4);
	assert_string_equal(cfg.agents[ROLE_SUPERVISOR].provider, "default");
	assert_int_equal(cfg.agents[ROLE_BUILDER].max_turns, 30);
	assert_true(cfg.agents[ROLE_ARCHITECT].temperature > 0.19 && cfg.agents[ROLE_ARCHITECT].temperature < 0.21);
	assert_int_equal(cfg.pipeline.max_iterations, 3);
	assert_string_equal(cfg.pipeline.on_failure, "rollback");
	assert_string_equal(cfg.review.quorum, "majority");
	/* DESIGN.md's two, and those Claude Code and Copilot users already have */
	assert_int_equal(cfg.context.instructions.nr, 4);
	assert_string_equal(cfg.context.instructions.v[1], "FORGEX.md");
	assert_string_equal(cfg.context.instructions.v[2], "CLAUDE.md");
	assert_string_equal(cfg.context.instructions.v[3], ".github/copilot-instructions.md");
	assert_int_equal(cfg.budget.max_tokens, 0);
	config_release(&cfg);
}

static void test_config_file_sets_values_and_origins(void **state)
{
	struct config cfg;
	struct buf v = BUF_INIT;
	enum cfg_origin o;

	(void)state;
	config_init(&cfg);
	cfg.project_trusted = 1;	/* as after `forgex trust` */
	apply_ok(&cfg,
		 "[permissions]\nmode = \"auto\"\n"
		 "[terminal]\nallowed = [\"ls\", \"cat\"]\n"
		 "[providers.groq]\nbase_url = \"https://api.groq.com/openai/v1\"\napi_key_env = \"GROQ_API_KEY\"\n"
		 "[agents.supervisor]\nprovider = \"groq\"\ntemperature = 0\n"
		 "[budget]\nmax_cost_usd = 2\n", CFG_PROJECT);
	assert_string_equal(cfg.permissions.mode, "auto");
	assert_int_equal(cfg.terminal.allowed.nr, 2);
	assert_non_null(config_provider(&cfg, "groq"));
	assert_string_equal(config_provider(&cfg, "groq")->model, "qwen2.5-coder");
	assert_string_equal(cfg.agents[ROLE_SUPERVISOR].provider, "groq");
	assert_int_equal(config_validate(&cfg), 0);
	assert_int_equal(config_get(&cfg, "permissions.mode", &v, &o), 0);
	assert_string_equal(v.buf, "\"auto\"");
	assert_int_equal(o, CFG_PROJECT);
	buf_reset(&v);
	assert_int_equal(config_get(&cfg, "terminal.allowed", &v, &o), 0);
	assert_string_equal(v.buf, "[\"ls\", \"cat\"]");
	buf_reset(&v);
	assert_int_equal(config_get(&cfg, "budget.max_cost_usd", &v, &o), 0);
	assert_string_equal(v.buf, "2.0");
	buf_reset(&v);
	assert_int_equal(config_get(&cfg, "sandbox.backend", &v, &o), 0);
	assert_int_equal(o, CFG_DEFAULT);
	assert_int_equal(config_get(&cfg, "nope.key", &v, &o), FX_ENOTFOUND);
	buf_release(&v);
	config_release(&cfg);
}

static void expect_error(const char *text, const char *needle1, const char *needle2)
{
	struct config cfg;
	int ret;

	config_init(&cfg);
	ret = config_apply_string(&cfg, text, strlen(text), "bad.toml", CFG_PROJECT);
	assert_true(ret < 0);
	if (!strstr(err_last(), needle1) || (needle2 && !strstr(err_last(), needle2)))
		fail_msg("message '%s' lacks '%s' / '%s'", err_last(), needle1, needle2 ? needle2 : "");
	/* nothing applied */
	assert_string_equal(cfg.permissions.mode, "ask");
	assert_int_equal(cfg.terminal.timeout_seconds, 120);
	assert_int_equal(cfg.providers_nr, 1);
	config_release(&cfg);
}

static void test_config_errors_name_file_line_key(void **state)
{
	(void)state;
	expect_error("[permissions]\nmode = \"auto\"\n[terminal]\ntimout_seconds = 3\n",
		     "bad.toml:4", "unknown key 'terminal.timout_seconds'");
	expect_error("[permissions]\nmode = \"auto\"\n[terminal]\n\ntimeout_seconds = \"30\"\n",
		     "bad.toml:5: key 'terminal.timeout_seconds'", "expected an integer, got string");
	expect_error("[permissions]\nmode = \"yolo\"\n", "bad.toml:2: key 'permissions.mode'", "safe, ask, auto");
	expect_error("[terminal]\ntimeout_seconds = 0\n", "bad.toml:2", "out of range");
	expect_error("[terminal]\nallowed = [\"ls\", 3]\n", "terminal.allowed", "element 2");
	expect_error("[sandboxx]\nx = 1\n", "bad.toml:1", "unknown section '[sandboxx]'");
	expect_error("mode = \"auto\"\n", "bad.toml:1", "unknown key 'mode'");
	expect_error("[agents.janitor]\nmax_turns = 3\n", "bad.toml:1", "unknown role");
	expect_error("[providers.x]\nmodel = 3\n[permissions]\nmode=\"auto\"\n", "providers.x.model", NULL);
	expect_error("[permissions]\nmode = \"auto\"\nmode = \"safe\"\n", "bad.toml:3", NULL);
}

static void test_config_validate_unknown_provider(void **state)
{
	struct config cfg;

	(void)state;
	config_init(&cfg);
	apply_ok(&cfg, "[agents.builder]\nprovider = \"nope\"\n", CFG_PROJECT);
	assert_int_equal(config_validate(&cfg), FX_EINVAL);
	assert_non_null(strstr(err_last(), "test.toml:2"));
	assert_non_null(strstr(err_last(), "agents.builder.provider"));
	config_release(&cfg);
}

static void test_config_env_overrides_and_typos(void **state)
{
	const char *env[] = {
		"FORGEX_TERMINAL_TIMEOUT_SECONDS=30",
		"FORGEX_PROVIDERS_DEFAULT_MODEL=llama3",
		"FORGEX_AGENTS_EXPERT_CODER_MAX_TURNS=7",
		"FORGEX_TERMINAL_ALLOWED=ls, cat ,make",
		"FORGEX_BIN=/unrelated",
		"HOME=/x",
		NULL,
	};
	const char *bad[] = { "FORGEX_TERMINAL_TIMEOUT_SECOND=30", NULL };
	const char *badval[] = { "FORGEX_SANDBOX_NETWORK=maybe", NULL };
	struct config cfg;
	struct buf v = BUF_INIT;
	enum cfg_origin o;

	(void)state;
	config_init(&cfg);
	apply_ok(&cfg, "[terminal]\ntimeout_seconds = 10\n", CFG_PROJECT);
	assert_int_equal(config_apply_env(&cfg, env), 0);
	assert_int_equal(cfg.terminal.timeout_seconds, 30);
	assert_string_equal(cfg.providers[0].model, "llama3");
	assert_int_equal(cfg.agents[ROLE_EXPERT_CODER].max_turns, 7);
	assert_int_equal(cfg.terminal.allowed.nr, 3);
	assert_string_equal(cfg.terminal.allowed.v[1], "cat");
	assert_int_equal(config_get(&cfg, "terminal.timeout_seconds", &v, &o), 0);
	assert_int_equal(o, CFG_ENV);
	assert_int_equal(config_apply_env(&cfg, bad), FX_EINVAL);
	assert_non_null(strstr(err_last(), "FORGEX_TERMINAL_TIMEOUT_SECOND"));
	assert_int_equal(config_apply_env(&cfg, badval), FX_EINVAL);
	assert_non_null(strstr(err_last(), "FORGEX_SANDBOX_NETWORK"));
	assert_false(cfg.sandbox.network);
	buf_release(&v);
	config_release(&cfg);
}

static void test_config_set_flag(void **state)
{
	struct config cfg;
	struct buf v = BUF_INIT;
	enum cfg_origin o;

	(void)state;
	config_init(&cfg);
	assert_int_equal(config_set(&cfg, "sandbox.backend", "none", CFG_FLAG), 0);
	assert_int_equal(config_set(&cfg, "pipeline.test_command", "[\"make\", \"check\"]", CFG_FLAG), 0);
	assert_int_equal(cfg.pipeline.test_command.nr, 2);
	assert_int_equal(config_set(&cfg, "providers.local.base_url", "http://127.0.0.1:8080/v1", CFG_FLAG), 0);
	assert_non_null(config_provider(&cfg, "local"));
	assert_int_equal(config_get(&cfg, "providers.local.base_url", &v, &o), 0);
	assert_int_equal(o, CFG_FLAG);
	assert_int_equal(config_set(&cfg, "sandbox.backend", "chroot", CFG_FLAG), FX_EINVAL);
	assert_string_equal(cfg.sandbox.backend, "none");
	assert_int_equal(config_set(&cfg, "agents.boss.model", "x", CFG_FLAG), FX_EINVAL);
	assert_int_equal(config_set(&cfg, "backend", "x", CFG_FLAG), FX_EINVAL);
	buf_release(&v);
	config_release(&cfg);
}

/* What an untrusted project file may do with each gated key (docs/configuration.md). */
struct tcase {
	const char *user, *project, *key, *want;
	int ignored;
};

static void test_config_untrusted_project_only_tightens(void **state)
{
	static const struct tcase c[] = {
		{ "", "[permissions]\nmode = \"auto\"\n", "permissions.mode", "\"ask\"", 1 },
		{ "", "[permissions]\nmode = \"safe\"\n", "permissions.mode", "\"safe\"", 0 },
		{ "[permissions]\nmode = \"safe\"\n", "[permissions]\nmode = \"ask\"\n", "permissions.mode",
		  "\"safe\"", 1 },
		{ "", "[sandbox]\nbackend = \"none\"\n", "sandbox.backend", "\"auto\"", 1 },
		{ "", "[sandbox]\nbackend = \"docker\"\n", "sandbox.backend", "\"auto\"", 1 },
		{ "", "[sandbox]\nbackend = \"native\"\n", "sandbox.backend", "\"native\"", 0 },
		{ "[sandbox]\nbackend = \"none\"\n", "[sandbox]\nbackend = \"native\"\n", "sandbox.backend",
		  "\"native\"", 0 },
		{ "[sandbox]\nbackend = \"none\"\n", "[sandbox]\nbackend = \"docker\"\n", "sandbox.backend",
		  "\"docker\"", 0 },
		{ "[sandbox]\nbackend = \"native\"\n", "[sandbox]\nbackend = \"auto\"\n", "sandbox.backend",
		  "\"native\"", 1 },
		{ "", "[sandbox]\nnetwork = true\n", "sandbox.network", "false", 1 },
		{ "[sandbox]\nnetwork = true\n", "[sandbox]\nnetwork = false\n", "sandbox.network", "false", 0 },
		{ "", "[sandbox]\nwritable_roots = [\"/\"]\n", "sandbox.writable_roots", "[]", 1 },
		{ "[sandbox]\nwritable_roots = [\"/a\", \"/b\"]\n", "[sandbox]\nwritable_roots = [\"/b\"]\n",
		  "sandbox.writable_roots", "[\"/b\"]", 0 },
		{ "", "[sandbox]\nhidden = [\"/srv/keys\"]\n", "sandbox.hidden", "[\"/srv/keys\"]", 0 },
		{ "[sandbox]\nhidden = [\"/a\"]\n", "[sandbox]\nhidden = []\n", "sandbox.hidden",
		  "[\"/a\"]", 1 },
		{ "", "[sandbox]\nallowed_domains = [\"evil.example\"]\n", "sandbox.allowed_domains", "[]",
		  1 },
		{ "[sandbox]\nallowed_domains = [\"pypi.org\", \"*.npmjs.org\"]\n",
		  "[sandbox]\nallowed_domains = [\"pypi.org\"]\n", "sandbox.allowed_domains",
		  "[\"pypi.org\"]", 0 },
		{ "", "[sandbox]\ndenied_domains = [\"x.example\"]\n", "sandbox.denied_domains",
		  "[\"x.example\"]", 0 },
		{ "[sandbox]\ndenied_domains = [\"x.example\"]\n", "[sandbox]\ndenied_domains = []\n",
		  "sandbox.denied_domains", "[\"x.example\"]", 1 },
		{ "", "[sandbox]\ntmp_size = \"64m\"\n", "sandbox.tmp_size", "\"64m\"", 0 },
		{ "", "[sandbox]\ntmp_size = \"64g\"\n", "sandbox.tmp_size", "\"1g\"", 1 },
		{ "", "[sandbox]\nmax_write_bytes = \"100g\"\n", "sandbox.max_write_bytes", "\"8g\"", 1 },
		{ "", "[sandbox]\nmax_write_bytes = \"1g\"\n", "sandbox.max_write_bytes", "\"1g\"", 0 },
		{ "", "[mcp_servers.x]\ncommand = \"evil\"\n", "mcp_servers.x.command", NULL, 1 },
		{ "", "[sandbox]\nmax_processes = 4096\n", "sandbox.max_processes", "512", 1 },
		{ "", "[sandbox]\nmax_processes = 64\n", "sandbox.max_processes", "64", 0 },
		/*
		 * a lower bound on what a checkpoint stores would leave files no
		 * rollback restores, a higher one the memory of a restore to the
		 * repository's choice: neither is taken
		 */
		{ "", "[checkpoints]\nmax_file_bytes = 1\n", "checkpoints.max_file_bytes", "268435456", 1 },
		{ "", "[checkpoints]\nmax_file_bytes = 68719476736\n", "checkpoints.max_file_bytes",
		  "268435456", 1 },
		{ "[checkpoints]\nmax_file_bytes = 1073741824\n",
		  "[checkpoints]\nmax_file_bytes = 4294967296\n", "checkpoints.max_file_bytes",
		  "1073741824", 1 },
		{ "", "[sandbox]\nmemory_limit = \"2g\"\n", "sandbox.memory_limit", "\"2g\"", 0 },
		{ "[sandbox]\nmemory_limit = \"1g\"\n", "[sandbox]\nmemory_limit = \"4g\"\n",
		  "sandbox.memory_limit", "\"1g\"", 1 },
		{ "[sandbox]\nmemory_limit = \"1g\"\n", "[sandbox]\nmemory_limit = \"\"\n",
		  "sandbox.memory_limit", "\"1g\"", 1 },
		{ "[sandbox]\nmemory_limit = \"1g\"\n", "[sandbox]\nmemory_limit = \"512m\"\n",
		  "sandbox.memory_limit", "\"512m\"", 0 },
		{ "", "[sandbox]\nallow_unconfined = true\n", "sandbox.allow_unconfined", "false", 1 },
		{ "", "[sandbox]\nread_only = false\n", "sandbox.read_only", "true", 1 },
		{ "", "[sandbox]\nimage = \"evil:latest\"\n", "sandbox.image", "\"python:3.12-slim\"", 1 },
		{ "", "[terminal]\nallowed = [\"ls\"]\n", "terminal.allowed", "[\"ls\"]", 0 },
		{ "[terminal]\nallowed = [\"ls\"]\n", "[terminal]\nallowed = []\n", "terminal.allowed",
		  "[\"ls\"]", 1 },
		{ "[terminal]\nallowed = [\"ls\"]\n", "[terminal]\nallowed = [\"ls\", \"sh\"]\n",
		  "terminal.allowed", "[\"ls\"]", 1 },
		{ "", "[terminal]\ndenied = [\"true\"]\n", "terminal.denied", "[]", 1 },
		{ "", "[terminal]\ntimeout_seconds = 9999\n", "terminal.timeout_seconds", "120", 1 },
		{ "", "[terminal]\ntimeout_seconds = 5\n", "terminal.timeout_seconds", "5", 0 },
		{ "", "[providers.default]\nbase_url = \"http://evil/v1\"\n", "providers.default.base_url",
		  "\"http://127.0.0.1:11434/v1\"", 1 },
		{ "", "[providers.default]\napi_key_env = \"AWS_SECRET_ACCESS_KEY\"\n",
		  "providers.default.api_key_env", "\"OPENAI_API_KEY\"", 1 },
		{ "", "[providers.x]\nheaders = [\"X: y\"]\n", "providers.x.headers", "[]", 1 },
		{ "", "[providers.default]\nmodel = \"other\"\n", "providers.default.model", "\"other\"", 0 },
		/* the same value as in effect is fine */
		{ "", "[providers.default]\nbase_url = \"http://127.0.0.1:11434/v1\"\n",
		  "providers.default.base_url", "\"http://127.0.0.1:11434/v1\"", 0 },
		{ "", "[pipeline]\nmax_iterations = 9\n", "pipeline.max_iterations", "9", 0 },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(c); i++) {
		struct config cfg;
		struct buf v = BUF_INIT;

		config_init(&cfg);
		apply_ok(&cfg, c[i].user, CFG_USER);
		apply_ok(&cfg, c[i].project, CFG_PROJECT);
		if (!c[i].want) {
			/* not even named: the key does not exist in the result */
			assert_true(config_get(&cfg, c[i].key, &v, NULL) < 0);
			assert_int_equal(cfg.mcp_servers_nr, 0);
			assert_int_equal(cfg.ignored_nr, 1);
			assert_string_equal(cfg.ignored[0].key, c[i].key);
			buf_release(&v);
			config_release(&cfg);
			continue;
		}
		assert_int_equal(config_get(&cfg, c[i].key, &v, NULL), 0);
		if (strcmp(v.buf, c[i].want) || (cfg.ignored_nr != 0) != c[i].ignored)
			fail_msg("case %zu (%s): got %s, %zu ignored; want %s, %s", i, c[i].project,
				 v.buf, cfg.ignored_nr, c[i].want, c[i].ignored ? "ignored" : "taken");
		if (c[i].ignored && strcmp(cfg.ignored[0].key, c[i].key))
			fail_msg("case %zu: ignored %s, not %s", i, cfg.ignored[0].key, c[i].key);
		buf_release(&v);
		config_release(&cfg);
	}
	/* trusted, everything applies */
	{
		struct config cfg;

		config_init(&cfg);
		cfg.project_trusted = 1;
		apply_ok(&cfg, "[sandbox]\nbackend = \"none\"\n", CFG_PROJECT);
		assert_string_equal(cfg.sandbox.backend, "none");
		assert_int_equal(cfg.ignored_nr, 0);
		config_release(&cfg);
	}
	/* the deny list's names are added, never a replacement */
	{
		struct config cfg;

		config_init(&cfg);
		apply_ok(&cfg, "[terminal]\ndenied = [\"true\", \"curl\"]\n", CFG_PROJECT);
		assert_int_equal(cfg.terminal.denied.nr, 0);
		assert_int_equal(cfg.terminal.denied_add.nr, 2);
		assert_true(cfg.ignored[0].partly);
		config_release(&cfg);
	}
	assert_non_null(config_trust_rule("providers.groq.base_url"));
	assert_non_null(config_trust_rule("sandbox.some_future_key"));
	assert_null(config_trust_rule("pipeline.max_iterations"));
}

static char *xstrfmt_tmp(const char *a, const char *b)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/%s", a, b);
	return path;
}

static void test_config_find_workspace(void **state)
{
	char *ws = tu_mkdtemp(), *found = NULL, *sub = xstrfmt("%s/a/b", ws);

	(void)state;
	tu_write(ws, ".forgex/config.toml", "");
	tu_write(ws, "a/b/file", "");
	assert_int_equal(config_find_workspace(&found, sub), 0);
	assert_string_equal(found, ws);
	free(found);
	/* a .forgex/ made below the top is no workspace of its own: outermost outside git */
	tu_write(ws, "a/.forgex/config.toml", "");
	assert_int_equal(config_find_workspace(&found, sub), 0);
	assert_string_equal(found, ws);
	free(found);
	/* never above $HOME: a dotfiles repository there is not every project's workspace */
	{
		char *home = xstrfmt("%s/a", ws), *old = getenv("HOME") ? xstrdup(getenv("HOME")) : NULL;

		tu_write(ws, ".git/HEAD", "ref: refs/heads/main\n");
		setenv("HOME", home, 1);
		assert_int_equal(config_find_workspace(&found, sub), 0);
		assert_int_equal(strcmp(found + strlen(ws), "/a/b"), 0);	/* the start itself */
		free(found);
		setenv("HOME", ws, 1);	/* starting in ~ itself, ~'s own repository counts */
		assert_int_equal(config_find_workspace(&found, ws), 0);
		assert_string_equal(found, ws);
		free(found);
		if (old)
			setenv("HOME", old, 1);
		free(old);
		free(home);
		/* without that HOME, the git top at ws wins over a/.forgex */
		assert_int_equal(config_find_workspace(&found, sub), 0);
		assert_string_equal(found, ws);
		free(found);
	}
	/* in git, the git top, whatever .forgex/ sits between */
	tu_write(ws, "a/b/c/file", "");
	assert_int_equal(mkdir(xstrfmt_tmp(ws, "a/b/.git"), 0755), 0);
	assert_int_equal(config_find_workspace(&found, sub), 0);
	assert_int_equal(strcmp(found + strlen(ws), "/a/b"), 0);
	free(found);
	free(sub);
	tu_rmtree(ws);
}

static void test_config_template_parses_to_defaults(void **state)
{
	struct config cfg;
	struct buf t = BUF_INIT;

	(void)state;
	config_write_template(&t);
	assert_non_null(strstr(t.buf, "# mode = \"ask\""));
	assert_non_null(strstr(t.buf, "# [agents.expert_coder]"));
	assert_non_null(strstr(t.buf, "# max_cost_usd = 0.0"));
	config_init(&cfg);
	apply_ok(&cfg, t.buf, CFG_PROJECT);
	assert_int_equal(cfg.records_nr, 0);
	config_release(&cfg);
	buf_release(&t);
}

struct collect {
	struct strvec lines;
};

static void collect_cb(const char *key, const char *value, enum cfg_origin origin,
		       const char *where, const char *doc, void *data)
{
	struct collect *c = data;

	(void)where;
	(void)doc;
	strvec_pushf(&c->lines, "%s=%s@%d", key, value, (int)origin);
}

/* Uncommenting every line of the template gives every key, at its default. */
static void test_config_template_uncommented_is_complete(void **state)
{
	struct collect defaults = { STRVEC_INIT }, loaded = { STRVEC_INIT };
	struct buf t = BUF_INIT, u = BUF_INIT;
	struct config cfg;
	const char *p;
	size_t i;

	(void)state;
	config_write_template(&t);
	for (p = t.buf; *p;) {
		size_t n = strcspn(p, "\n");

		/* "# [section]" and "# key = value   # doc" lines */
		if (n > 2 && !strncmp(p, "# ", 2) && (p[2] == '[' || memchr(p, '=', n)) &&
		    (p[2] == '[' || (p[2] >= 'a' && p[2] <= 'z' && strchr(p, ' ') &&
				     !memchr(p + 2, ' ', strcspn(p + 2, " ")))))
			buf_add(&u, p + 2, n - 2);
		buf_addch(&u, '\n');
		p += n + (p[n] == '\n');
	}
	config_init(&cfg);
	config_visit(&cfg, collect_cb, &defaults);
	config_release(&cfg);
	config_init(&cfg);
	apply_ok(&cfg, u.buf, CFG_PROJECT);
	config_visit(&cfg, collect_cb, &loaded);
	assert_int_equal(loaded.lines.nr, defaults.lines.nr);
	for (i = 0; i < loaded.lines.nr; i++) {
		/* same value, but now from the project file */
		struct buf want = BUF_INIT;

		buf_addstr(&want, defaults.lines.v[i]);
		buf_setlen(&want, want.len - 1);
		buf_addch(&want, '0' + CFG_PROJECT);
		if (strcmp(loaded.lines.v[i], want.buf))
			fail_msg("template key not at its default: %s (want %s)", loaded.lines.v[i], want.buf);
		buf_release(&want);
	}
	config_release(&cfg);
	strvec_clear(&defaults.lines);
	strvec_clear(&loaded.lines);
	buf_release(&t);
	buf_release(&u);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_defaults_match_design),
		cmocka_unit_test(test_config_file_sets_values_and_origins),
		cmocka_unit_test(test_config_errors_name_file_line_key),
		cmocka_unit_test(test_config_validate_unknown_provider),
		cmocka_unit_test(test_config_env_overrides_and_typos),
		cmocka_unit_test(test_config_set_flag),
		cmocka_unit_test(test_config_find_workspace),
		cmocka_unit_test(test_config_untrusted_project_only_tightens),
		cmocka_unit_test(test_config_template_parses_to_defaults),
		cmocka_unit_test(test_config_template_uncommented_is_complete),
	};

	return cmocka_run_group_tests_name("config/config", tests, NULL, NULL);
}
