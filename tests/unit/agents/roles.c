/* Roles: prompts, permission sets, terminal tools and the tools each role is offered. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "agents/roles.h"
#include "base/jsonx.h"
#include "helpers/testutil.h"
#include "sandbox/executor.h"
#include "sandbox/permissions.h"
#include "tools/shell.h"

struct env {
	struct tool_registry reg;
	struct tool_ctx ctx;
	struct config cfg;
	struct executor ex;
	struct shell_tools sh;
	char *ws;
	struct buf out;
};

static int setup(void **state)
{
	struct env *e = xcalloc(1, sizeof(*e));
	const char *toml = "[sandbox]\nbackend = \"none\"\n";

	e->ws = tu_mkdtemp();
	config_init(&e->cfg);
	if (config_apply_string(&e->cfg, toml, strlen(toml), "t.toml", CFG_USER) < 0 ||
	    executor_init(&e->ex, &e->cfg, e->ws) < 0)
		fail_msg("%s", err_last());
	e->sh = (struct shell_tools)SHELL_TOOLS_INIT;
	e->sh.executor = &e->ex;
	registry_init(&e->reg);
	if (tools_register_builtin(&e->reg) < 0 || tools_register_shell(&e->reg, &e->sh) < 0 ||
	    roles_register_tools(&e->reg) < 0 || tool_ctx_init(&e->ctx, &e->reg, e->ws) < 0)
		fail_msg("%s", err_last());
	buf_init(&e->out, 0);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	tool_ctx_release(&e->ctx);
	registry_release(&e->reg);
	shell_tools_release(&e->sh);
	executor_release(&e->ex);
	config_release(&e->cfg);
	buf_release(&e->out);
	tu_rmtree(e->ws);
	free(e);
	return 0;
}

static void names_of(struct buf *out, json_t *tools)
{
	json_t *t;
	size_t i;

	json_array_foreach(tools, i, t)
		buf_addf(out, "%s%s", i ? " " : "", jsonx_str(json_object_get(t, "function"), "name"));
	json_decref(tools);
}

static void test_roles_tool_lists(void **state)
{
	struct env *e = *state;
	struct buf b = BUF_INIT;

	names_of(&b, role_tools(&e->reg, ROLE_ARCHITECT));
	assert_string_equal(b.buf, "read_file list_dir search submit_plan");
	buf_reset(&b);
	names_of(&b, role_tools(&e->reg, ROLE_BUILDER));
	assert_string_equal(b.buf, "read_file list_dir write_file delete_file move_file edit_file "
			    "search git_status git_diff run_command run_tests finish");
	buf_reset(&b);
	names_of(&b, role_tools(&e->reg, ROLE_EXPERT_CODER));
	assert_string_equal(b.buf, "read_file list_dir write_file delete_file move_file edit_file "
			    "search git_status git_diff run_command run_tests finish");
	buf_reset(&b);
	names_of(&b, role_tools(&e->reg, ROLE_SUPERVISOR));
	assert_string_equal(b.buf, "read_file list_dir search git_status git_diff run_tests "
			    "submit_verdict");
	buf_reset(&b);
	/* forgex ask: the architect's read tools, no terminal tool */
	names_of(&b, role_tools_json(&e->reg, role_permissions(ROLE_ARCHITECT), NULL));
	assert_string_equal(b.buf, "read_file list_dir search");
	buf_reset(&b);
	names_of(&b, role_tools(&e->reg, ROLE__COUNT));
	assert_string_equal(b.buf, "");
	buf_release(&b);
}


/* [providers.NAME] edit_tools, and the default by the model's name. */
static void test_roles_edit_tools(void **state)
{
	static const struct {
		const char *setting, *model;
		unsigned want;
	} cases[] = {
		{ NULL, "qwen2.5-coder", ROLE_EDIT_FILE },
		{ "auto", "gpt-4o", ROLE_EDIT_FILE },
		{ NULL, "gpt-4o-mini", ROLE_EDIT_FILE },
		{ NULL, "gpt-4.1", ROLE_APPLY_PATCH },
		{ NULL, "gpt-4.1-mini-2025-04-14", ROLE_APPLY_PATCH },
		{ NULL, "gpt-5", ROLE_APPLY_PATCH },
		{ NULL, "openai/GPT-5-mini", ROLE_APPLY_PATCH },
		{ NULL, "gpt-5.1-codex", ROLE_APPLY_PATCH },
		{ NULL, "codex-mini-latest", ROLE_APPLY_PATCH },
		{ NULL, "o3", ROLE_APPLY_PATCH },
		{ NULL, "o4-mini", ROLE_APPLY_PATCH },
		{ NULL, "o1-preview", ROLE_APPLY_PATCH },
		{ NULL, "gpt-oss-20b", ROLE_EDIT_FILE },
		{ NULL, "ollama", ROLE_EDIT_FILE },
		{ NULL, "olmo-2", ROLE_EDIT_FILE },
		{ NULL, "", ROLE_EDIT_FILE },
		{ NULL, NULL, ROLE_EDIT_FILE },
		{ "edit_file", "gpt-5", ROLE_EDIT_FILE },
		{ "apply_patch", "llama3.1", ROLE_APPLY_PATCH },
		{ "both", "llama3.1", ROLE_EDIT_FILE | ROLE_APPLY_PATCH },
	};
	struct env *e = *state;
	struct buf b = BUF_INIT;
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++)
		if (role_edit_tools(cases[i].setting, cases[i].model) != cases[i].want)
			fail_msg("edit_tools %s, model %s: got %u, want %u", cases[i].setting ?
				 cases[i].setting : "(unset)", cases[i].model ? cases[i].model : "(null)",
				 role_edit_tools(cases[i].setting, cases[i].model), cases[i].want);
	names_of(&b, role_tools_json_edit(&e->reg, ROLE_BUILDER, role_permissions(ROLE_BUILDER),
					  "finish", ROLE_APPLY_PATCH));
	assert_string_equal(b.buf, "read_file list_dir write_file delete_file move_file apply_patch "
			    "search git_status git_diff run_command run_tests finish");
	buf_reset(&b);
	names_of(&b, role_tools_json_edit(&e->reg, ROLE_BUILDER, role_permissions(ROLE_BUILDER),
					  "finish", ROLE_EDIT_FILE | ROLE_APPLY_PATCH));
	assert_string_equal(b.buf, "read_file list_dir write_file delete_file move_file edit_file "
			    "apply_patch search git_status git_diff run_command run_tests finish");
	buf_reset(&b);
	/* A role that may not write gets neither. */
	names_of(&b, role_tools_json_edit(&e->reg, ROLE_SUPERVISOR,
					  role_permissions(ROLE_SUPERVISOR), NULL, ROLE_APPLY_PATCH));
	assert_string_equal(b.buf, "read_file list_dir search git_status git_diff run_tests");
	assert_null(role_edit_note(ROLE_EDIT_FILE));
	assert_non_null(strstr(role_edit_note(ROLE_APPLY_PATCH), "apply_patch"));
	buf_release(&b);
}

static void test_roles_permissions_and_terminals(void **state)
{
	(void)state;
	assert_int_equal(role_permissions(ROLE_ARCHITECT), PERM_READ | PERM_RESEARCH);
	assert_int_equal(role_permissions(ROLE_BUILDER), PERM_READ | PERM_WRITE | PERM_DELETE |
			 PERM_TERMINAL | PERM_GIT | PERM_TEST | PERM_BUILD);
	assert_int_equal(role_permissions(ROLE_EXPERT_CODER), role_permissions(ROLE_BUILDER));
	assert_int_equal(role_permissions(ROLE_SUPERVISOR), PERM_READ | PERM_TEST | PERM_BUILD |
			 PERM_GIT);
	assert_int_equal(role_permissions(ROLE__COUNT), 0);
	assert_int_equal(role_permissions((enum agent_role)-1), 0);
	assert_string_equal(role_terminal_tool(ROLE_ARCHITECT), "submit_plan");
	assert_string_equal(role_terminal_tool(ROLE_BUILDER), "finish");
	assert_string_equal(role_terminal_tool(ROLE_EXPERT_CODER), "finish");
	assert_string_equal(role_terminal_tool(ROLE_SUPERVISOR), "submit_verdict");
	assert_null(role_terminal_tool(ROLE__COUNT));
}

static void test_roles_prompts(void **state)
{
	enum agent_role r;
	struct buf b = BUF_INIT;

	(void)state;
	for (r = ROLE_ARCHITECT; r < ROLE__COUNT; r++) {
		const char *p = role_prompt(r);
		char *ends = xstrfmt("ends only when you call %s", role_terminal_tool(r));

		assert_non_null(strstr(p, "relative to the workspace"));
		assert_non_null(strstr(p, ends));
		free(ends);
	}
	assert_non_null(strstr(role_prompt(ROLE_ARCHITECT), "You must not change anything"));
	assert_null(strstr(role_prompt(ROLE_ARCHITECT), "edit_file"));
	assert_non_null(strstr(role_prompt(ROLE_SUPERVISOR), "the request"));
	assert_non_null(strstr(role_prompt(ROLE_SUPERVISOR), "the plan"));
	assert_non_null(strstr(role_prompt(ROLE_SUPERVISOR), "diff"));
	assert_non_null(strstr(role_prompt(ROLE_SUPERVISOR), "test results before and after"));
	assert_non_null(strstr(role_prompt(ROLE_BUILDER), "run_command"));
	assert_non_null(strstr(role_prompt(ROLE_EXPERT_CODER), "required fix"));
	assert_string_equal(role_prompt(ROLE__COUNT), "");
	assert_non_null(strstr(role_ask_prompt(), "plain text"));

	role_build_prompt(&b, ROLE_BUILDER, "/src/proj", "Use tabs.");
	assert_true(!strncmp(b.buf, role_prompt(ROLE_BUILDER), strlen(role_prompt(ROLE_BUILDER))));
	assert_non_null(strstr(b.buf, "The workspace is /src/proj.\n"));
	assert_non_null(strstr(b.buf, "# Project context\n\nUse tabs.\n"));
	buf_reset(&b);
	role_build_prompt(&b, ROLE_BUILDER, NULL, "");
	assert_string_equal(b.buf, role_prompt(ROLE_BUILDER));
	buf_release(&b);
}

static void test_roles_terminal_tool_allowed(void **state)
{
	struct env *e = *state;
	struct buf why = BUF_INIT;

	assert_int_equal(role_tool_allowed(&e->reg, "finish", "finish", &why), 1);
	assert_int_equal(role_tool_allowed(&e->reg, "read_file", "finish", &why), 1);
	assert_int_equal(role_tool_allowed(&e->reg, "no_such_tool", "finish", &why), 1);
	assert_string_equal(why.buf, "");
	assert_int_equal(role_tool_allowed(&e->reg, "submit_plan", "finish", &why), 0);
	assert_string_equal(why.buf, "refused: submit_plan is not available to this role; end with "
			    "finish");
	buf_reset(&why);
	assert_int_equal(role_tool_allowed(&e->reg, "finish", NULL, &why), 0);
	assert_non_null(strstr(why.buf, "answer in plain text"));
	buf_release(&why);
}

static int call(struct env *e, const char *name, const char *args)
{
	buf_reset(&e->out);
	return tool_dispatch(&e->ctx, role_permissions(ROLE_BUILDER), name, args, &e->out);
}

static void test_roles_submit_plan_checks(void **state)
{
	struct env *e = *state;

	assert_int_equal(call(e, "submit_plan", "{\"summary\": \"s\", \"acceptance\": [],"
			      " \"steps\": [{\"id\": \"1\", \"title\": \"t\", \"description\": \"d\","
			      " \"files\": [\"a.c\"]}, {\"id\": \"2\", \"title\": \"t\","
			      " \"description\": \"d\", \"files\": []}], \"test_command\": [\"make\"]}"),
			 TOOL_OK);
	assert_string_equal(e->out.buf, "accepted: a plan of 2 steps");
	/* no steps: the schema says so */
	assert_int_equal(call(e, "submit_plan", "{\"summary\": \"s\", \"acceptance\": [], \"steps\": []}"),
			 TOOL_REFUSED);
	assert_non_null(strstr(e->out.buf, "steps: must have at least 1 item"));
	assert_int_equal(call(e, "submit_plan", "{\"summary\": \"s\", \"acceptance\": [],"
			      " \"steps\": [{\"id\": \"1\", \"title\": \"t\", \"description\": \"d\"}]}"),
			 TOOL_REFUSED);
	assert_non_null(strstr(e->out.buf, "steps[0]: missing required property \"files\""));
	assert_int_equal(call(e, "submit_plan", "{\"summary\": \"\", \"acceptance\": [],"
			      " \"steps\": [{\"id\": \"1\", \"title\": \"t\", \"description\": \"d\","
			      " \"files\": []}]}"), TOOL_REFUSED);
	/* what a schema cannot say */
	assert_int_equal(call(e, "submit_plan", "{\"summary\": \"s\", \"acceptance\": [],"
			      " \"steps\": [{\"id\": \"1\", \"title\": \"t\", \"description\": \"d\","
			      " \"files\": []}, {\"id\": \"1\", \"title\": \"u\", \"description\": \"d\","
			      " \"files\": []}]}"), TOOL_FAILED);
	assert_non_null(strstr(e->out.buf, "steps[1]: the id \"1\" is used twice"));
	assert_int_equal(call(e, "submit_plan", "{\"summary\": \"s\", \"acceptance\": [],"
			      " \"steps\": [{\"id\": \"1\", \"title\": \"t\", \"description\": \"d\","
			      " \"files\": []}], \"test_command\": []}"), TOOL_FAILED);
	assert_non_null(strstr(e->out.buf, "test_command is empty"));
}

static void test_roles_verdict_checks(void **state)
{
	struct env *e = *state;

	assert_int_equal(call(e, "submit_verdict", "{\"verdict\": \"PASS\", \"reasons\": [\"ok\"],"
			      " \"required_fixes\": []}"), TOOL_OK);
	assert_string_equal(e->out.buf, "accepted: PASS");
	assert_int_equal(call(e, "submit_verdict", "{\"verdict\": \"FAIL\", \"reasons\": [\"no\"],"
			      " \"required_fixes\": [\"fix x\"]}"), TOOL_OK);
	assert_int_equal(call(e, "submit_verdict", "{\"verdict\": \"FAIL\", \"reasons\": [\"no\"],"
			      " \"required_fixes\": []}"), TOOL_FAILED);
	assert_non_null(strstr(e->out.buf, "at least one required fix"));
	assert_int_equal(call(e, "submit_verdict", "{\"verdict\": \"PASS\", \"reasons\": [\"ok\"],"
			      " \"required_fixes\": [\"x\"]}"), TOOL_FAILED);
	assert_int_equal(call(e, "submit_verdict", "{\"verdict\": \"maybe\", \"reasons\": [\"?\"],"
			      " \"required_fixes\": []}"), TOOL_REFUSED);
	assert_non_null(strstr(e->out.buf, "verdict: must be one of \"PASS\", \"FAIL\""));
	assert_int_equal(call(e, "submit_verdict", "{\"verdict\": \"PASS\", \"reasons\": [],"
			      " \"required_fixes\": []}"), TOOL_REFUSED);
	assert_int_equal(call(e, "finish", "{}"), TOOL_REFUSED);
	assert_non_null(strstr(e->out.buf, "missing required property \"summary\""));
	assert_int_equal(call(e, "finish", "{\"summary\": \"done\"}"), TOOL_OK);
	/* terminal tools are registered once */
	assert_int_equal(roles_register_tools(&e->reg), FX_EEXISTS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_roles_tool_lists, setup, teardown),
		cmocka_unit_test_setup_teardown(test_roles_edit_tools, setup, teardown),
		cmocka_unit_test(test_roles_permissions_and_terminals),
		cmocka_unit_test(test_roles_prompts),
		cmocka_unit_test_setup_teardown(test_roles_terminal_tool_allowed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_roles_submit_plan_checks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_roles_verdict_checks, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
