/*
 * forgex exec [--backend B] [--cwd DIR] [--timeout S] [--json] -- CMD [ARG...]
 *
 * Runs one command exactly as an agent's command runs: command policy,
 * approval (asked on the terminal in "ask" mode), then the executor and
 * its sandbox backend, in the current project's workspace.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/termsafe.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/path.h"
#include "cli/approve_tty.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "sandbox/approval.h"
#include "sandbox/executor.h"

static volatile sig_atomic_t exec_interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	exec_interrupted = 1;
}

/* "30", "1.5": seconds to milliseconds; -1 when invalid. */
static int parse_timeout(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v > 0) || v > INT_MAX / 1000)
		return -1;
	return (int)(v * 1000.0 + 0.5) ? (int)(v * 1000.0 + 0.5) : 1;
}

/* The child's status as ours: 0-255 pass through; anything else is a failure. */
static int exit_for_result(const struct exec_result *r)
{
	return r->exit_code >= 0 && r->exit_code <= 255 ? r->exit_code : EXIT_FAIL;
}

/*
 * A command's output as it is, except on a terminal: there its control
 * characters are escaped (base/termsafe.h), so it cannot clear the screen,
 * retitle the window or write the clipboard (OSC 52).
 */
static void write_output(int fd, const struct buf *b)
{
	struct buf safe = BUF_INIT;

	if (!isatty(fd)) {
		fsutil_write_all(fd, b->buf, b->len);
		return;
	}
	buf_add_termsafe(&safe, b->buf, b->len, TERMSAFE_MULTILINE);
	fsutil_write_all(fd, safe.buf, safe.len);
	buf_release(&safe);
}

int cmd_exec(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "cwd", required_argument, NULL, 'C' },
		{ "timeout", required_argument, NULL, 't' },
		{ "json", no_argument, NULL, 'j' },
		{ "yes", no_argument, NULL, 'Y' },
		{ "ask", no_argument, NULL, 'A' },
		{ "safe", no_argument, NULL, 'S' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct exec_result r = EXEC_RESULT_INIT;
	const char *backend = NULL, *cwd_opt = NULL, *mode = NULL;
	struct sigaction sa, old_int, old_term, old_hup;
	struct exec_request req;
	struct executor ex;
	struct approver ap;
	struct config cfg;
	struct buf cwd = BUF_INIT;
	char *here = NULL;
	int json = 0, timeout_ms = 0, c, ret, status;
	size_t i;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			backend = optarg;
			break;
		case 'C':
			cwd_opt = optarg;
			break;
		case 't':
			timeout_ms = parse_timeout(optarg);
			if (timeout_ms < 0)
				return cli_usage_error("exec", "--timeout needs a number of seconds "
						       "above 0, not '%s'", optarg);
			break;
		case 'j':
			json = 1;
			break;
		case 'Y':
			mode = "auto";
			break;
		case 'A':
			mode = "ask";
			break;
		case 'S':
			mode = "safe";
			break;
		case 'h':
			return cli_help("exec");
		case ':':
			return cli_usage_error("exec", "%s needs an argument", argv[optind - 1]);
		default:
			return cli_usage_error("exec", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage_error("exec", "a command is required (forgex exec -- CMD [ARG...])");

	if ((ret = cli_load_config(&cfg)))
		return ret;
	if ((mode && config_set(&cfg, "permissions.mode", mode, CFG_FLAG) < 0) ||
	    (backend && config_set(&cfg, "sandbox.backend", backend, CFG_FLAG) < 0)) {
		cli_print_error();
		config_release(&cfg);
		return EXIT_USAGE;
	}
	if (!cfg.workspace) {
		log_error("no workspace: run inside a project folder");
		config_release(&cfg);
		return EXIT_USAGE;
	}

	/* The working folder: --cwd (from here) or here; the executor confines it. */
	here = getcwd(NULL, 0);
	if (!here) {
		log_error("cannot get the current folder: %s", strerror(errno));
		config_release(&cfg);
		return EXIT_FAIL;
	}
	if (cwd_opt && cwd_opt[0] == '/')
		buf_addstr(&cwd, cwd_opt);
	else
		path_join(&cwd, here, cwd_opt ? cwd_opt : ".");

	ret = executor_init(&ex, &cfg, cfg.workspace);
	if (ret < 0) {
		cli_print_error();
		status = cli_exit_for_error(ret);
		goto out_cfg;
	}
	if (!cli_quiet)
		for (i = 0; i < executor_warnings(&ex)->nr; i++)
			log_warn("%s", executor_warnings(&ex)->v[i]);

	/* Ctrl-C, SIGTERM, hangup: stop the command and everything it started. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_interrupt;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	executor_set_cancel(&ex, -1, &exec_interrupted);
	/* asked on the terminal; SIGTERM at the question: no */
	approver_init(&ap, approve_tty_ask, NULL, &exec_interrupted);
	ex.approver = &ap;

	memset(&req, 0, sizeof(req));
	req.argv = (const char *const *)argv + optind;
	req.argc = (size_t)(argc - optind);
	req.cwd = cwd.buf;
	req.timeout_ms = timeout_ms;
	ret = executor_run(&r, &ex, &req);
	approver_release(&ap);

	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);

	if (ret < 0) {
		if (ret == FX_EINTR)
			log_error("interrupted: the command and everything it started were stopped");
		else
			cli_print_error();
		status = cli_exit_for_error(ret);
		goto out_ex;
	}
	if (json) {
		json_t *o = exec_result_to_json(&r);
		struct buf b = BUF_INIT;

		jsonx_dump(&b, o, 0);
		buf_addch(&b, '\n');
		fsutil_write_all(STDOUT_FILENO, b.buf, b.len);
		buf_release(&b);
		json_decref(o);
	} else {
		fflush(stdout);
		write_output(STDOUT_FILENO, &r.out);
		write_output(STDERR_FILENO, &r.err);
	}
	status = exit_for_result(&r);
	exec_result_release(&r);
out_ex:
	executor_release(&ex);
out_cfg:
	config_release(&cfg);
	buf_release(&cwd);
	free(here);
	return status;
}
