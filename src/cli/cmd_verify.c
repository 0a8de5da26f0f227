/*
 * forgex verify [--json]
 *
 * Finds how this project is tested, runs it through the executor (policy,
 * approval, sandbox) and reports the counts and the failing tests. With
 * [pipeline] must_pass, the command is narrowed to those tests and each
 * must pass, as the gate of `forgex run` requires.
 * Exit: 0 all passed, 1 tests failed (or a must-pass test did not pass),
 * 2 nothing to run (or a usage or configuration error), 4 refused by the
 * policy or the sandbox, 130 interrupted.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/termsafe.h"
#include "cli/approve_tty.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "sandbox/approval.h"
#include "sandbox/executor.h"
#include "tools/verify_executor.h"
#include "verify/verify.h"

static volatile sig_atomic_t verify_interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	verify_interrupted = 1;
}

static void print_argv(const struct strvec *argv)
{
	struct buf b = BUF_INIT;
	size_t i;

	for (i = 0; i < argv->nr; i++) {
		if (i)
			buf_addch(&b, ' ');
		buf_add_shell_quoted(&b, argv->v[i]);
	}
	fputs_termsafe(b.buf, stdout, 0);
	buf_release(&b);
}

/*
 * Test output comes from the project, which a model may have changed:
 * what reaches the terminal has bytes that are not UTF-8 and invisible or
 * reordering characters escaped (control characters are '?' already).
 */
static void print_visible(const char *prefix, const char *s, size_t n)
{
	struct buf raw = BUF_INIT, b = BUF_INIT;

	for (; n; s++, n--) {
		if (*s == '\t')
			buf_addstr(&raw, "    ");	/* a tab reads as space, not "\t" */
		else
			buf_addch(&raw, *s);
	}
	buf_addstr(&b, prefix);
	approval_add_visible(&b, raw.buf);
	buf_addch(&b, '\n');
	fputs(b.buf, stdout);
	buf_release(&raw);
	buf_release(&b);
}

static void print_excerpt(const char *text)
{
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		print_visible("      ", p, n);
		p += n + (nl ? 1 : 0);
	}
}

/* The outcome of must-pass test `id` in `r`: its outcome's name, or "missing" (not in the output). */
static const char *must_pass_outcome(const struct verify_result *r, const char *id)
{
	int o = verify_outcome_of(r, id);

	return o < 0 ? "missing" : verify_outcome_name((enum verify_outcome)o);
}

static void print_must_pass(const struct verify_result *r, const struct strvec *ids)
{
	size_t i, ok = 0;

	for (i = 0; i < ids->nr; i++)
		ok += verify_outcome_of(r, ids->v[i]) == VERIFY_PASS;
	printf("\nmust pass ([pipeline] must_pass): %zu of %zu pass\n", ok, ids->nr);
	for (i = 0; i < ids->nr; i++) {
		const char *o = must_pass_outcome(r, ids->v[i]);
		char tag[16];
		size_t k;

		snprintf(tag, sizeof(tag), "  %-7s ", o);
		for (k = 0; tag[k]; k++)
			if (tag[k] >= 'a' && tag[k] <= 'z')
				tag[k] = (char)(tag[k] - 'a' + 'A');
		print_visible(tag, ids->v[i], strlen(ids->v[i]));
	}
}

static void print_report(const struct verify_command *cmd, const struct verify_result *r)
{
	size_t i, shown = 0;

	fputs("command: ", stdout);
	print_argv(&cmd->argv);
	fputc('\n', stdout);
	print_visible("reason:  ", cmd->reason, strlen(cmd->reason));
	printf("formats: ");
	if (!r->formats.nr)
		printf("none recognised (judged by the exit status)");
	for (i = 0; i < r->formats.nr; i++)
		printf("%s%s", i ? " " : "", r->formats.v[i]);
	printf("\nresult:  %s: %ld passed, %ld failed, %ld skipped, %ld error%s "
	       "(exit status %d%s, %.1f s)\n",
	       verify_result_ok(r) ? "PASS" : "FAIL", r->passed, r->failed, r->skipped,
	       r->errors, r->errors == 1 ? "" : "s", r->exit_code,
	       r->timed_out ? ", timed out" : "", r->duration_ms / 1000.0);
	if (r->truncated)
		printf("note:    the output was longer than [terminal] max_output_bytes; "
		       "its middle was dropped\n");
	for (i = 0; i < r->disagreements.nr; i++)
		print_visible("note:    counts disagree: ", r->disagreements.v[i],
			      strlen(r->disagreements.v[i]));
	if (r->fresh_note)
		print_visible("note:    not fresh: ", r->fresh_note, strlen(r->fresh_note));
	for (i = 0; i < r->tests_nr; i++) {
		const struct verify_test *t = &r->tests[i];

		if (t->outcome != VERIFY_FAIL && t->outcome != VERIFY_ERROR)
			continue;
		if (!shown++)
			printf("\nfailing tests:\n");
		print_visible(t->outcome == VERIFY_FAIL ? "  FAIL  " : "  ERROR ", t->name,
			      strlen(t->name));
		if (t->excerpt)
			print_excerpt(t->excerpt);
	}
	if (r->tests_dropped)
		printf("  (%zu more tests not listed)\n", r->tests_dropped);
}

static void print_json(const struct verify_command *cmd, const struct verify_result *r,
		       const struct strvec *must_pass, int blocked)
{
	json_t *o = json_object();
	struct buf b = BUF_INIT;
	size_t i;

	jsonx_set(o, "command", verify_command_to_json(cmd));
	jsonx_set(o, "result", verify_result_to_json(r));
	if (must_pass->nr) {
		json_t *a = json_array();

		for (i = 0; i < must_pass->nr; i++) {
			json_t *t = json_object();

			jsonx_set(t, "id", jsonx_string(must_pass->v[i]));
			jsonx_set(t, "outcome", jsonx_string(must_pass_outcome(r, must_pass->v[i])));
			json_array_append_new(a, t);
		}
		jsonx_set(o, "must_pass", a);
	}
	jsonx_set(o, "ok", json_boolean(verify_result_ok(r) && !blocked));
	jsonx_dump(&b, o, 0);
	buf_addch(&b, '\n');
	fwrite(b.buf, 1, b.len, stdout);
	buf_release(&b);
	json_decref(o);
}

int cmd_verify(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct verify_command cmd = VERIFY_COMMAND_INIT;
	struct verify_result r = VERIFY_RESULT_INIT;
	struct sigaction sa, old_int, old_term, old_hup;
	struct verify_request req;
	struct executor ex;
	struct approver ap;
	struct config cfg;
	struct buf gate = BUF_INIT;
	int json = 0, c, ret, status, blocked;
	size_t i;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'h':
			return cli_help("verify");
		default:
			return cli_usage_error("verify", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("verify", "unexpected argument '%s'", argv[optind]);

	if ((ret = cli_load_config(&cfg)))
		return ret;
	if (!cfg.workspace) {
		log_error("no workspace: run inside a project folder");
		config_release(&cfg);
		return EXIT_USAGE;
	}
	ret = verify_detect(&cmd, cfg.workspace, &cfg.pipeline.test_command);
	if (!ret && config_from_untrusted_project(&cfg, "pipeline.test_command"))
		cmd.configured = 0;	/* an untrusted project file approves nothing */
	if (ret < 0) {
		cli_print_error();
		status = EXIT_USAGE;
		goto out_cfg;
	}
	/* must-pass tests given: those are the tests that run, as in the run's gate */
	if (verify_select(&cmd, &cfg.pipeline.must_pass) < 0) {
		err_prefix(FX_EINVAL, "pipeline.must_pass");
		cli_print_error();
		status = EXIT_USAGE;
		goto out_cfg;
	}
	ret = executor_init(&ex, &cfg, cfg.workspace);
	if (ret < 0) {
		cli_print_error();
		status = cli_exit_for_error(ret);
		goto out_cfg;
	}
	if (!cli_quiet) {
		struct buf b = BUF_INIT;

		for (i = 0; i < executor_warnings(&ex)->nr; i++)
			log_warn("%s", executor_warnings(&ex)->v[i]);
		for (i = 0; i < cmd.argv.nr; i++) {
			if (i)
				buf_addch(&b, ' ');
			buf_add_shell_quoted(&b, cmd.argv.v[i]);
		}
		log_info("running %s (%s)", b.buf, cmd.reason);
		buf_release(&b);
	}

	/* Ctrl-C, SIGTERM, hangup: stop the tests and everything they started. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_interrupt;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	executor_set_cancel(&ex, -1, &verify_interrupted);
	/* a detected test command that needs approval is asked about on the terminal */
	approver_init(&ap, approve_tty_ask, NULL, NULL);
	ex.approver = &ap;

	req.cmd = &cmd;
	req.workspace = cfg.workspace;
	req.timeout_seconds = cfg.terminal.timeout_seconds;
	ret = verify_run(&r, &req, verify_executor_run, &ex);
	ex.approver = NULL;
	approver_release(&ap);

	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);

	if (ret < 0) {
		if (ret == FX_EINTR)
			log_error("interrupted: the tests and everything they started were stopped");
		else
			cli_print_error();
		status = cli_exit_for_error(ret);
		goto out_ex;
	}
	blocked = verify_must_pass_gate(&gate, &r, &cfg.pipeline.must_pass);
	if (json) {
		print_json(&cmd, &r, &cfg.pipeline.must_pass, blocked);
	} else {
		print_report(&cmd, &r);
		if (cfg.pipeline.must_pass.nr)
			print_must_pass(&r, &cfg.pipeline.must_pass);
	}
	status = verify_result_ok(&r) && !blocked ? EXIT_OK : EXIT_FAIL;
	verify_result_release(&r);
out_ex:
	executor_release(&ex);
out_cfg:
	verify_command_release(&cmd);
	config_release(&cfg);
	buf_release(&gate);
	return status;
}
