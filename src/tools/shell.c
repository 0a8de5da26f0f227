/*
 * run_command and run_tests: the tools that run programs, through the
 * command policy, approval and the sandbox (sandbox/executor.h).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "base/utf8.h"
#include "sandbox/approval.h"
#include "sandbox/executor.h"
#include "sandbox/permissions.h"
#include "tools/shell.h"
#include "tools/verify_executor.h"
#include "verify/verify.h"

/* What run_tests shows of the failing tests. */
#define TESTS_SHOWN_MAX 20
#define TEST_EXCERPT_SHOWN 800
#define TESTS_TAIL_SHOWN 2000

static const char run_command_schema[] =
	"{\"type\": \"object\", \"additionalProperties\": false,"
	" \"required\": [\"argv\"],"
	" \"properties\": {"
	"  \"argv\": {\"type\": \"array\", \"minItems\": 1, \"items\": {\"type\": \"string\"},"
	"   \"description\": \"The program and its arguments, one string each, e.g. "
	"[\\\"make\\\", \\\"-j4\\\"]. No shell: pipes, redirections and globs are not "
	"interpreted.\"},"
	"  \"cwd\": {\"type\": \"string\", \"description\": \"Folder to run in, relative to "
	"the workspace (default: the workspace).\"},"
	"  \"timeout_seconds\": {\"type\": \"integer\", \"minimum\": 1, \"maximum\": 3600,"
	"   \"description\": \"Stop the command sooner than the configured timeout "
	"([terminal] timeout_seconds), after this many seconds; a longer one is cut to the "
	"configured timeout.\"}"
	" }}";

static const char run_tests_schema[] =
	"{\"type\": \"object\", \"additionalProperties\": false, \"properties\": {}}";

/*
 * Append `data` to `out` as the model sees it: at most `head` + `tail`
 * bytes, the middle replaced by a marker counting what was left out of
 * the `total` bytes the command wrote. Invalid UTF-8 becomes U+FFFD.
 */
static void add_stream(struct buf *out, const char *name, const struct buf *data,
		       uint64_t total, size_t head, size_t tail)
{
	struct buf shown = BUF_INIT;
	json_t *clean;

	if (data->len > head + tail) {
		size_t h = utf8_cut(data->buf, data->len, head);
		size_t t = utf8_start(data->buf, data->len, data->len - tail);
		uint64_t kept = h + (data->len - t);

		buf_add(&shown, data->buf, h);
		buf_addf(&shown, "\n[... forgex: %llu bytes omitted ...]\n",
			 (unsigned long long)(total > kept ? total - kept : data->len - kept));
		buf_add(&shown, data->buf + t, data->len - t);
	} else {
		buf_addbuf(&shown, data);
	}
	clean = jsonx_stringn_lossy(shown.buf, shown.len);
	buf_addf(out, "--- %s (%llu bytes) ---\n", name, (unsigned long long)total);
	buf_addstr(out, json_string_value(clean));
	if (shown.len && shown.buf[shown.len - 1] != '\n')
		buf_addch(out, '\n');
	json_decref(clean);
	buf_release(&shown);
}

static int run_command(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	struct shell_tools *st = tool_ctx_data(ctx);
	struct strvec argv = STRVEC_INIT;
	struct exec_result r = EXEC_RESULT_INIT;
	struct exec_request req;
	long long timeout = tool_arg_int(args, "timeout_seconds", 0);
	size_t head = st->head_bytes ? st->head_bytes : SHELL_HEAD_BYTES;
	size_t tail = st->tail_bytes ? st->tail_bytes : SHELL_TAIL_BYTES;
	int ret;

	ret = jsonx_to_strvec(&argv, json_object_get(args, "argv"));
	if (ret < 0)
		goto out;
	memset(&req, 0, sizeof(req));
	req.argv = argv.v;
	req.argc = argv.nr;
	req.cwd = tool_arg_str(args, "cwd");
	req.timeout_ms = timeout > INT_MAX / 1000 ? INT_MAX : (int)(timeout * 1000);
	/* the model may only shorten the user's timeout, never extend it */
	if (st->executor->default_timeout_ms > 0 &&
	    (req.timeout_ms <= 0 || req.timeout_ms > st->executor->default_timeout_ms))
		req.timeout_ms = st->executor->default_timeout_ms;
	ret = executor_run(&r, st->executor, &req);
	if (st->on_command)
		st->on_command(st->data, "run_command", &argv, ret, ret < 0 ? NULL : &r);
	if (ret < 0) {
		/* the refusal itself ("Command denied by policy: ...") is the result */
		buf_addf(result, "error: %s", err_last());
		goto out;
	}
	buf_addstr(result, "$ ");
	approval_format_argv(result, argv.v, argv.nr);
	buf_addf(result, "\nexit_code: %d\ntimed_out: %s\ntruncated: %s\nduration_ms: %.0f\n",
		 r.exit_code, r.timed_out ? "true" : "false",
		 r.truncated || r.out.len > head + tail || r.err.len > head + tail ? "true" : "false",
		 r.duration_ms);
	if (r.timed_out)
		buf_addstr(result, "note: the command ran out of time and was stopped\n");
	add_stream(result, "stdout", &r.out, r.out_total, head, tail);
	add_stream(result, "stderr", &r.err, r.err_total, head, tail);
out:
	exec_result_release(&r);
	strvec_clear(&argv);
	return ret;
}

static void add_excerpt(struct buf *out, const char *text, size_t max)
{
	size_t len = strlen(text), n = utf8_cut(text, len, max), i, start = 0;

	for (i = 0; i <= n; i++) {
		if (i < n && text[i] != '\n')
			continue;
		if (i > start)
			buf_addf(out, "    | %.*s\n", (int)(i - start), text + start);
		start = i + 1;
	}
	if (n < len)
		buf_addstr(out, "    | [...]\n");
}

static void format_tests(struct buf *out, const struct verify_command *cmd,
			 const struct verify_result *res)
{
	size_t i, shown = 0, failing = verify_result_failing(res);

	buf_addstr(out, "command: ");
	approval_format_argv(out, cmd->argv.v, cmd->argv.nr);
	buf_addf(out, " (%s: %s)\n", cmd->kind, cmd->reason);
	buf_addf(out, "outcome: %s (exit code %d%s, %ld ms)\n",
		 verify_result_ok(res) ? "PASS" : "FAIL", res->exit_code,
		 res->timed_out ? ", timed out" : "", res->duration_ms);
	buf_addf(out, "passed: %ld, failed: %ld, skipped: %ld, errors: %ld\n", res->passed,
		 res->failed, res->skipped, res->errors);
	if (res->formats.nr) {
		buf_addstr(out, "formats: ");
		for (i = 0; i < res->formats.nr; i++)
			buf_addf(out, "%s%s", i ? ", " : "", res->formats.v[i]);
		buf_addch(out, '\n');
	}
	if (failing) {
		buf_addf(out, "failing tests (%zu):\n", failing);
		for (i = 0; i < res->tests_nr && shown < TESTS_SHOWN_MAX; i++) {
			const struct verify_test *t = &res->tests[i];

			if (t->outcome != VERIFY_FAIL && t->outcome != VERIFY_ERROR)
				continue;
			shown++;
			buf_addf(out, "- %s [%s]\n", t->name, verify_outcome_name(t->outcome));
			if (t->excerpt && *t->excerpt)
				add_excerpt(out, t->excerpt, TEST_EXCERPT_SHOWN);
		}
		if (failing > shown)
			buf_addf(out, "(%zu more failing tests not shown)\n", failing - shown);
	}
	if (!verify_result_ok(res) && !shown && res->tail && *res->tail) {
		size_t len = strlen(res->tail);
		size_t from = len > TESTS_TAIL_SHOWN ?
			utf8_start(res->tail, len, len - TESTS_TAIL_SHOWN) : 0;

		buf_addstr(out, "output (last lines):\n");
		add_excerpt(out, res->tail + from, TESTS_TAIL_SHOWN);
	}
}

static int run_tests(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	struct shell_tools *st = tool_ctx_data(ctx);
	struct verify_command cmd = VERIFY_COMMAND_INIT;
	struct verify_result *res = xcalloc(1, sizeof(*res));
	struct verify_request req;
	struct buf text = BUF_INIT;
	json_t *clean;
	int ret;

	(void)args;
	*res = (struct verify_result)VERIFY_RESULT_INIT;
	ret = verify_detect(&cmd, st->executor->workspace, st->test_command);
	if (!ret && st->test_command_untrusted)
		cmd.configured = 0;	/* an untrusted project file approves nothing */
	if (ret < 0) {
		buf_addf(result, "error: no test command: %s", err_last());
		goto out;
	}
	memset(&req, 0, sizeof(req));
	req.cmd = &cmd;
	req.workspace = st->executor->workspace;
	req.timeout_seconds = st->test_timeout_seconds;
	ret = verify_run(res, &req, verify_executor_run, st->executor);
	if (st->on_command)
		st->on_command(st->data, "run_tests", &cmd.argv, ret, NULL);
	if (ret < 0) {
		buf_addf(result, "error: the tests could not run: %s", err_last());
		goto out;
	}
	format_tests(&text, &cmd, res);
	clean = jsonx_stringn_lossy(text.buf, text.len);
	buf_addstr(result, json_string_value(clean));
	json_decref(clean);
	if (st->last_tests) {
		verify_result_release(st->last_tests);
		free(st->last_tests);
	}
	st->last_tests = res;
	res = NULL;
out:
	if (res) {
		verify_result_release(res);
		free(res);
	}
	buf_release(&text);
	verify_command_release(&cmd);
	return ret;
}

int tools_register_shell(struct tool_registry *reg, struct shell_tools *st)
{
	const struct tool_def defs[] = {
		{ "run_command",
		  "Run one program in the workspace (argv, no shell) through the command policy "
		  "and the sandbox. Returns the exit code, whether it timed out or its output "
		  "was cut, its duration, and the head and tail of stdout and stderr. A command "
		  "the policy refuses returns the refusal.",
		  run_command_schema, PERM_TERMINAL, 0, run_command, st },
		{ "run_tests",
		  "Run the project's test suite (the configured test command, or the one forgex "
		  "detects) and return the command used, the counts of passed, failed, skipped "
		  "and errored tests, and the failing tests with short excerpts.",
		  run_tests_schema, PERM_TEST, 0, run_tests, st },
	};
	size_t i;
	int ret;

	if (!st || !st->executor)
		return err_set(FX_EINVAL, "run_command and run_tests need an executor");
	for (i = 0; i < ARRAY_SIZE(defs); i++) {
		ret = registry_add(reg, &defs[i]);
		if (ret < 0)
			return ret;
	}
	return 0;
}

void shell_tools_release(struct shell_tools *st)
{
	if (st->last_tests) {
		verify_result_release(st->last_tests);
		FREE_AND_NULL(st->last_tests);
	}
}
