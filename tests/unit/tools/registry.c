#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <unistd.h>

#include "unit/tools/common.h"

/* ---- what each role is offered ---- */

static void names_of(struct buf *out, json_t *tools)
{
	size_t i;
	json_t *t;

	json_array_foreach(tools, i, t) {
		const char *name = jsonx_str(json_object_get(t, "function"), "name");

		if (out->len)
			buf_addch(out, ' ');
		buf_addstr(out, name ? name : "?");
	}
}

static void test_registry_tools_for_role(void **state)
{
	struct tool_registry reg = TOOL_REGISTRY_INIT;
	struct buf names = BUF_INIT;
	json_t *tools, *first, *params;

	(void)state;
	assert_int_equal(tools_register_builtin(&reg), 0);

	tools = tools_for_role(&reg, permissions_for_role("architect"));
	names_of(&names, tools);
	assert_string_equal(names.buf, "read_file list_dir search");
	json_decref(tools);

	buf_reset(&names);
	tools = tools_for_role(&reg, permissions_for_role("supervisor"));
	names_of(&names, tools);
	assert_string_equal(names.buf, "read_file list_dir search git_status git_diff");
	json_decref(tools);

	buf_reset(&names);
	tools = tools_for_role(&reg, permissions_for_role("builder"));
	names_of(&names, tools);
	assert_string_equal(names.buf, "read_file list_dir write_file delete_file move_file edit_file apply_patch "
			    "search git_status git_diff");
	/* The OpenAI function-calling shape, with the schema as parameters. */
	first = json_array_get(tools, 0);
	assert_string_equal(jsonx_str(first, "type"), "function");
	params = json_object_get(json_object_get(first, "function"), "parameters");
	assert_string_equal(jsonx_str(params, "type"), "object");
	assert_true(json_is_object(json_object_get(json_object_get(params, "properties"), "path")));
	assert_string_equal(json_string_value(json_array_get(json_object_get(params, "required"), 0)),
			    "path");
	assert_true(json_is_false(json_object_get(params, "additionalProperties")));
	assert_non_null(jsonx_str(json_object_get(first, "function"), "description"));
	json_decref(tools);

	/* A role forgex does not know gets nothing at all. */
	tools = tools_for_role(&reg, permissions_for_role("intern"));
	assert_int_equal(json_array_size(tools), 0);
	json_decref(tools);
	/* write without delete: move_file needs both. */
	buf_reset(&names);
	tools = tools_for_role(&reg, PERM_READ | PERM_WRITE);
	names_of(&names, tools);
	assert_string_equal(names.buf, "read_file list_dir write_file edit_file search");
	json_decref(tools);
	buf_release(&names);
	registry_release(&reg);
}

/* ---- the permission gate ---- */

static void test_registry_read_only_role_cannot_write(void **state)
{
	unsigned architect = permissions_for_role("architect");
	unsigned supervisor = permissions_for_role("supervisor");
	struct tt t;
	char *c;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "keep.txt", "original\n");
	assert_int_equal(tt_callj(&t, architect, "write_file",
				  json_pack("{s:s,s:s}", "path", "new.txt", "content", "x")), TOOL_REFUSED);
	assert_contains(t.out.buf, "missing permissions: write");
	assert_false(fsutil_exists(tt_path(&t, "new.txt")));
	assert_int_equal(tt_callj(&t, architect, "edit_file",
				  json_pack("{s:s,s:s,s:s}", "path", "keep.txt", "old_string", "original",
					    "new_string", "changed")), TOOL_REFUSED);
	assert_contains(t.out.buf, "missing permissions: write");
	assert_int_equal(tt_callj(&t, supervisor, "delete_file", json_pack("{s:s}", "path", "keep.txt")),
			 TOOL_REFUSED);
	assert_contains(t.out.buf, "missing permissions: delete");
	assert_int_equal(tt_callj(&t, architect, "move_file",
				  json_pack("{s:s,s:s}", "from", "keep.txt", "to", "k2")), TOOL_REFUSED);
	assert_contains(t.out.buf, "missing permissions: write, delete");
	assert_int_equal(tt_callj(&t, architect, "git_status", json_object()), TOOL_REFUSED);
	assert_contains(t.out.buf, "missing permissions: git");
	/* Nothing changed on disk, nothing was recorded. */
	c = tu_read(t.ws, "keep.txt");
	assert_string_equal(c, "original\n");
	free(c);
	assert_false(fsutil_exists(tt_path(&t, "k2")));
	assert_int_equal(t.ctx.changed.nr, 0);
	/* The same calls from the builder go through. */
	assert_int_equal(tt_callj(&t, tt_builder(), "write_file",
				  json_pack("{s:s,s:s}", "path", "new.txt", "content", "x")), TOOL_OK);
	/* And a role with nothing can call nothing, not even read_file. */
	assert_int_equal(tt_callj(&t, 0, "read_file", json_pack("{s:s}", "path", "keep.txt")),
			 TOOL_REFUSED);
	assert_contains(t.out.buf, "missing permissions: read");
	tt_teardown(&t);
}

static void test_registry_unknown_tool(void **state)
{
	struct tt t;

	(void)state;
	tt_setup(&t);
	assert_int_equal(tt_call(&t, permissions_for_role("architect"), "rm_rf", "{}"), TOOL_REFUSED);
	assert_contains(t.out.buf, "unknown tool 'rm_rf'");
	assert_contains(t.out.buf, "read_file, list_dir, search");
	assert_not_contains(t.out.buf, "write_file");	/* only what the role may use */
	assert_int_equal(tt_call(&t, 0, "", "{}"), TOOL_REFUSED);
	assert_contains(t.out.buf, "(none for this role)");
	assert_int_equal(tt_call(&t, tt_builder(), NULL, NULL), TOOL_REFUSED);
	tt_teardown(&t);
}

/* ---- arguments ---- */

static void test_registry_argument_refusals(void **state)
{
	static const struct {
		const char *tool, *args, *says;
	} cases[] = {
		{ "read_file", "{\"path\": \"a.txt\"", "not JSON" },
		{ "read_file", "[\"a.txt\"]", "expected a JSON object, got array" },
		{ "read_file", "\"a.txt\"", "expected a JSON object, got string" },
		{ "read_file", "{}", "missing required property \"path\"" },
		{ "read_file", "{\"path\": 7}", "path: expected string, got integer" },
		{ "read_file", "{\"path\": \"a.txt\", \"start_line\": \"3\"}",
		  "start_line: expected integer, got string" },
		{ "read_file", "{\"path\": \"a.txt\", \"start_line\": 0}", "start_line: must be at least 1" },
		{ "read_file", "{\"path\": \"a.txt\", \"start_line\": 1.5}",
		  "start_line: expected integer, got number" },
		{ "read_file", "{\"path\": \"a.txt\", \"lines\": 3}", "unknown property \"lines\"" },
		{ "read_file", "{\"path\": \"\"}", "path: must not be empty" },
		{ "read_file", "{\"path\": \"a\\u0000.txt\"}", "NUL" },
		{ "list_dir", "{\"depth\": 99}", "depth: must be at most 10" },
		{ "edit_file", "{\"path\": \"a.txt\", \"old_string\": \"x\"}",
		  "missing required property \"new_string\"" },
		{ "edit_file", "{\"path\": \"a.txt\", \"old_string\": \"a\", \"new_string\": \"b\", "
		  "\"replace_all\": \"yes\"}", "replace_all: expected boolean, got string" },
		{ "search", "{\"pattern\": \"x\", \"max_results\": -1}", "max_results: must be at least 1" },
		{ "move_file", "{\"from\": \"a\", \"to\": null}", "to: expected string, got null" },
		{ "read_file", "{\"path\": \"a\", \"path\": \"b\"}", "not JSON" },
	};
	struct tt t;
	size_t i;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "a.txt", "content\n");
	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		int st = tt_call(&t, tt_builder(), cases[i].tool, cases[i].args);

		if (st != TOOL_REFUSED || !strstr(t.out.buf, cases[i].says) ||
		    !strstr(t.out.buf, "invalid arguments for"))
			fail_msg("%s(%s): status %d, result \"%s\", wanted \"%s\"", cases[i].tool,
				 cases[i].args, st, t.out.buf, cases[i].says);
	}
	/* An integral number counts as an integer; blank arguments as {}. */
	assert_int_equal(tt_call(&t, tt_builder(), "read_file",
				 "{\"path\": \"a.txt\", \"start_line\": 1.0}"), TOOL_OK);
	assert_int_equal(tt_call(&t, tt_builder(), "list_dir", "  "), TOOL_OK);
	assert_contains(t.out.buf, "a.txt");
	assert_int_equal(t.ctx.changed.nr, 0);
	tt_teardown(&t);
}

static void test_registry_schema_validator(void **state)
{
	json_t *schema = json_loads(
		"{\"type\":\"object\",\"properties\":{"
		"\"mode\":{\"type\":\"string\",\"enum\":[\"fast\",\"slow\"]},"
		"\"argv\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
		"\"opt\":{\"type\":[\"string\",\"null\"]},"
		"\"nested\":{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"number\",\"minimum\":0.5}},"
		"\"required\":[\"n\"],\"additionalProperties\":false}"
		"},\"required\":[\"mode\"],\"additionalProperties\":false}", 0, NULL);
	static const struct {
		const char *value, *why;
	} bad[] = {
		{ "{\"mode\":\"medium\"}", "mode: must be one of \"fast\", \"slow\"" },
		{ "{\"mode\":\"fast\",\"argv\":[\"ls\",3]}", "argv[1]: expected string, got integer" },
		{ "{\"mode\":\"fast\",\"opt\":true}", "opt: got boolean, which is not an allowed type" },
		{ "{\"mode\":\"fast\",\"nested\":{}}", "nested: missing required property \"n\"" },
		{ "{\"mode\":\"fast\",\"nested\":{\"n\":0.1}}", "nested.n: must be at least 0.5" },
		{ "{\"mode\":\"fast\",\"nested\":{\"n\":1,\"m\":2}}", "nested: unknown property \"m\" (known: n)" },
	};
	struct buf why = BUF_INIT;
	size_t i;

	(void)state;
	assert_non_null(schema);
	assert_int_equal(schema_check(schema), 0);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		json_t *v = json_loads(bad[i].value, 0, NULL);

		buf_reset(&why);
		assert_int_equal(schema_validate(schema, v, &why), FX_EINVAL);
		if (strcmp(why.buf, bad[i].why))
			fail_msg("%s: got \"%s\", wanted \"%s\"", bad[i].value, why.buf, bad[i].why);
		json_decref(v);
	}
	{
		json_t *v = json_loads("{\"mode\":\"slow\",\"argv\":[\"a\"],\"opt\":null,"
				       "\"nested\":{\"n\":2}}", 0, NULL);

		buf_reset(&why);
		assert_int_equal(schema_validate(schema, v, &why), 0);
		assert_string_equal(why.buf, "");
		json_decref(v);
	}
	json_decref(schema);
	buf_release(&why);
}

/* ---- registering tools from other layers ---- */

static int finish_calls;

static int tool_finish(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	const char *tag = tool_ctx_data(ctx);

	finish_calls++;
	buf_addf(result, "%s: %s", tag, jsonx_str(args, "summary"));
	return 0;
}

static int tool_broken(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	(void)ctx;
	(void)args;
	(void)result;
	return err_set(FX_EOS, "the disk caught fire");
}

static int tool_explains(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	(void)ctx;
	(void)args;
	buf_addstr(result, "it went wrong like this");
	return FX_ERROR;
}

static void test_registry_add_and_terminal_tools(void **state)
{
	static char tag[] = "pipeline";
	const struct tool_def finish = {
		"finish", "End the turn with a summary.",
		"{\"type\":\"object\",\"properties\":{\"summary\":{\"type\":\"string\"}},"
		"\"required\":[\"summary\"],\"additionalProperties\":false}",
		0, TOOL_TERMINAL, tool_finish, tag,
	};
	const struct tool_def broken = {
		"broken", "Fails.", "{\"type\":\"object\",\"additionalProperties\":false}",
		PERM_READ, 0, tool_broken, NULL,
	};
	const struct tool_def explains = {
		"explains", "Fails with its own words.",
		"{\"type\":\"object\",\"additionalProperties\":false}", PERM_READ, 0, tool_explains, NULL,
	};
	struct tool_def bad = finish;
	const struct tool *t;
	struct tt tt;

	(void)state;
	tt_setup(&tt);
	assert_int_equal(registry_add(&tt.reg, &finish), 0);
	assert_int_equal(registry_add(&tt.reg, &broken), 0);
	assert_int_equal(registry_add(&tt.reg, &explains), 0);
	assert_int_equal(registry_add(&tt.reg, &finish), FX_EEXISTS);
	bad.name = "has space";
	assert_int_equal(registry_add(&tt.reg, &bad), FX_EINVAL);
	bad.name = "ok_name";
	bad.parameters = "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"string\","
			 "\"pattern\":\"^a\"}},\"additionalProperties\":false}";
	assert_int_equal(registry_add(&tt.reg, &bad), FX_EINVAL);
	assert_contains(err_last(), "\"pattern\" is not supported");
	bad.parameters = "{\"type\":\"array\"}";
	assert_int_equal(registry_add(&tt.reg, &bad), FX_EINVAL);
	bad.parameters = "{\"type\":\"object\"}";
	assert_int_equal(registry_add(&tt.reg, &bad), FX_EINVAL);
	assert_contains(err_last(), "additionalProperties");
	bad.parameters = "{\"type\":\"object\",\"required\":[\"ghost\"],\"additionalProperties\":false}";
	assert_int_equal(registry_add(&tt.reg, &bad), FX_EINVAL);
	bad.parameters = "{not json";
	assert_int_equal(registry_add(&tt.reg, &bad), FX_EPARSE);
	assert_null(registry_find(&tt.reg, "ok_name"));

	t = registry_find(&tt.reg, "finish");
	assert_non_null(t);
	assert_true(t->flags & TOOL_TERMINAL);
	assert_false(registry_find(&tt.reg, "read_file")->flags & TOOL_TERMINAL);
	/* A tool needing nothing is offered to every role, even one with no permissions. */
	{
		json_t *tools = tools_for_role(&tt.reg, 0);

		assert_int_equal(json_array_size(tools), 1);
		json_decref(tools);
	}
	assert_int_equal(tt_call(&tt, 0, "finish", "{\"summary\":\"done\"}"), TOOL_OK);
	assert_string_equal(tt.out.buf, "pipeline: done");
	assert_int_equal(finish_calls, 1);
	assert_int_equal(tt_call(&tt, 0, "finish", "{}"), TOOL_REFUSED);
	assert_int_equal(finish_calls, 1);	/* the handler never saw bad arguments */
	assert_int_equal(tt_call(&tt, PERM_READ, "broken", ""), TOOL_FAILED);
	assert_string_equal(tt.out.buf, "error: the disk caught fire");
	assert_int_equal(tt_call(&tt, PERM_READ, "explains", ""), TOOL_FAILED);
	assert_string_equal(tt.out.buf, "error: it went wrong like this");
	tt_teardown(&tt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry_tools_for_role),
		cmocka_unit_test(test_registry_read_only_role_cannot_write),
		cmocka_unit_test(test_registry_unknown_tool),
		cmocka_unit_test(test_registry_argument_refusals),
		cmocka_unit_test(test_registry_schema_validator),
		cmocka_unit_test(test_registry_add_and_terminal_tools),
	};

	return cmocka_run_group_tests_name("tools/registry", tests, NULL, NULL);
}
