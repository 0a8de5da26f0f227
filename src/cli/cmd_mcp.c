/*
 * forgex mcp list [--json]
 * forgex mcp call [--json] [--yes] NAME TOOL [ARGUMENTS-JSON]
 *
 * `list` starts every configured MCP server ([mcp_servers.NAME]), runs the
 * handshake and shows its state and tools, then stops it. `call` starts
 * the server NAME (even when enabled = false) and calls one tool, through
 * the same approval as an agent's call (--yes: approve it), for a person
 * to try a server. Exit: 0 done, 1 a server failed or the tool answered
 * with isError, 2 usage or configuration error, 4 not approved, 130
 * interrupted.
 *
 * forgex mcp __serve [--cwd DIR] [--writable] [--name NAME] [--allow-domain D]...
 *     -- PROGRAM ARGS...
 *
 * Not for a person: how the stdio transport (src/mcp/stdio.c) starts a
 * server in the sandbox. Started in the workspace with the server's
 * environment and the transport's socket as its stdin and stdout, it runs
 * PROGRAM through a native (or configured) executor whose profile is the
 * server's: its working folder is a private empty folder outside the
 * workspace (DIR inside it with --cwd), the workspace read-only unless
 * --writable, the network only through the egress proxy to the domains
 * --allow-domain names (the server's allowed_domains; none: no network),
 * each connection logged on its stderr as it happens; then it waits for
 * the server and exits with its status.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/jsonx.h"
#include "base/log.h"
#include "base/path.h"
#include "cli/approve_tty.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "mcp/servers.h"
#include "sandbox/approval.h"
#include "sandbox/executor.h"
#include "base/fsutil.h"
#include "tools/mcp_tools.h"

static volatile sig_atomic_t mcp_interrupted;

static void on_interrupt(int sig)
{
	(void)sig;
	mcp_interrupted = 1;
}

static void catch_interrupts(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_interrupt;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* Text from a server is the server's: shown with control characters escaped. */
static void put_visible(FILE *f, const char *s)
{
	struct buf b = BUF_INIT;

	approval_add_visible(&b, s ? s : "");
	fputs(b.buf, f);
	buf_release(&b);
}

/*
 * JSON for stdout: jansson escapes C0 controls but writes C1 controls
 * (U+0080-U+009F: the 8-bit CSI and OSC) and format characters as UTF-8,
 * which a terminal may act on; on a terminal every non-ASCII character is
 * written as \uXXXX (the same JSON).
 */
static size_t json_flags(void)
{
	return JSON_COMPACT | (isatty(STDOUT_FILENO) ? JSON_ENSURE_ASCII : 0);
}

static volatile sig_atomic_t serve_stop;

static void on_serve_signal(int sig)
{
	(void)sig;
	serve_stop = 1;
}

extern char **environ;

/* The places the sandbox replaces with fresh empty ones (native backend). */
static int in_replaced_place(const char *path)
{
	static const char *const places[] = { "/tmp", "/run", "/dev/shm" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(places); i++)
		if (path_is_within(path, places[i]))
			return strcmp(path, places[i]) != 0;	/* the place itself: never */
	return 0;
}

/*
 * `name` (absolute, or relative to `base`) when it exists and it or the
 * place it resolves to lies in /tmp, /run or /dev/shm: pushed to `out`.
 */
static void add_if_replaced(struct strvec *out, const char *name, const char *base)
{
	struct buf abs = BUF_INIT;
	struct stat sb;
	char *real;

	if (name[0] == '/')
		buf_addstr(&abs, name);
	else
		path_join(&abs, base, name);
	real = stat(abs.buf, &sb) == 0 ? realpath(abs.buf, NULL) : NULL;
	if (real && (in_replaced_place(abs.buf) || in_replaced_place(real)) &&
	    strvec_find(out, abs.buf) < 0)
		strvec_push(out, abs.buf);
	free(real);
	buf_release(&abs);
}

/*
 * What the server must read that the sandbox would cover: its program
 * (found on the server's PATH as exec does) and every argument naming an
 * existing file or folder, absolute or relative to its working folder
 * `base`. A path inside a whole argument only ("--config=/etc/app.toml") is
 * not looked at.
 */
static void collect_readonly(struct strvec *out, const char *const *argv, size_t argc,
			     const char *base, const struct strvec *env)
{
	const char *path = getenv("PATH");
	size_t i;

	for (i = 0; i < env->nr; i++)
		if (!strncmp(env->v[i], "PATH=", 5))
			path = env->v[i] + 5;
	if (strchr(argv[0], '/'))
		add_if_replaced(out, argv[0], base);
	else if (path) {
		char *dirs = xstrdup(path), *save = NULL, *d;

		for (d = strtok_r(dirs, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
			char *cand = xstrfmt("%s/%s", d, argv[0]);
			int found = d[0] == '/' && access(cand, X_OK) == 0;

			if (found)
				add_if_replaced(out, cand, base);
			free(cand);
			if (found)
				break;
		}
		free(dirs);
	}
	for (i = 1; i < argc; i++)
		if (argv[i][0])
			add_if_replaced(out, argv[i], base);
}

static int mcp_serve(int argc, char **argv)
{
	static const int stdio_fds[3] = { 0, 1, 2 };
	struct exec_request req = { NULL, 0, NULL, 0, NULL, NULL, 0, stdio_fds };
	struct exec_result res = EXEC_RESULT_INIT;
	struct config cfg = CONFIG_INIT;
	struct executor ex;
	struct sigaction sa;
	struct strvec server_env = STRVEC_INIT;
	struct strvec domains = STRVEC_INIT;
	const char *cwd = NULL, *server = "?";
	char *private = NULL, *list_name;
	int i, writable = 0, status;

	for (i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "--cwd") && i + 1 < argc)
			cwd = argv[++i];
		else if (!strcmp(argv[i], "--writable"))
			writable = 1;
		else if (!strcmp(argv[i], "--name") && i + 1 < argc)
			server = argv[++i];
		else if (!strcmp(argv[i], "--allow-domain") && i + 1 < argc)
			strvec_push(&domains, argv[++i]);
		else {
			strvec_clear(&domains);
			return cli_usage_error("mcp", "__serve: unknown option '%s'", argv[i]);
		}
	}
	if (i + 1 >= argc) {
		strvec_clear(&domains);
		return cli_usage_error("mcp", "__serve: no program after --");
	}
	req.argv = (const char *const *)argv + i + 1;
	req.argc = (size_t)(argc - i - 1);
	/* the server's environment: the one the transport built, less the launcher's own */
	for (i = 0; environ[i]; i++)
		if (strncmp(environ[i], "FX_SERVE_", 9))
			strvec_push(&server_env, environ[i]);
	/* forgex's configuration and state folders, as the transport saw them */
	{
		static const char *const vars[] = { "XDG_CONFIG_HOME", "XDG_STATE_HOME" };
		size_t k;

		for (k = 0; k < ARRAY_SIZE(vars); k++) {
			char *name = xstrfmt("FX_SERVE_%s", vars[k]);
			const char *v = getenv(name);

			if (v)
				setenv(vars[k], v, 1);
			free(name);
		}
	}
	if (cli_load_config(&cfg) != 0) {
		strvec_clear(&server_env);
		strvec_clear(&domains);
		return EXIT_USAGE;
	}
	/* the server's network is its own table's, not [sandbox]'s (denied_domains still count) */
	cfg.sandbox.network = domains.nr > 0;
	strvec_clear(&cfg.sandbox.allowed_domains);
	strvec_pushv(&cfg.sandbox.allowed_domains, (const char *const *)domains.v);
	strvec_clear(&domains);
	if (!cfg.workspace) {
		fprintf(stderr, "forgex: the MCP server has no workspace to run for\n");
		config_release(&cfg);
		strvec_clear(&server_env);
		return EXIT_USAGE;
	}
	if (!cwd) {
		/* its own empty folder: nothing planted in the workspace is found from there */
		private = xstrdup("/tmp/forgex-mcp-XXXXXX");
		if (!mkdtemp(private)) {
			fprintf(stderr, "forgex: cannot make a working folder for the MCP server: %s\n",
				strerror(errno));
			free(private);
			config_release(&cfg);
			return EXIT_FAIL;
		}
	}
	list_name = xstrfmt("[mcp_servers.%s] allowed_domains", server);
	if (executor_init(&ex, &cfg, private ? private : cfg.workspace) < 0) {
		fprintf(stderr, "forgex: the MCP server cannot run in the sandbox: %s\n", err_last());
		status = EXIT_DENIED;
		goto out;
	}
	ex.allowed_domains_name = list_name;
	ex.proxy_log_fd = STDERR_FILENO;	/* the transport's pipe: the server's log */
	if (private && writable)
		strvec_push(&ex.writable_roots, cfg.workspace);
	else if (!private && !writable)
		ex.workspace_read_only = 1;
	{
		char *base = private ? xstrdup(private) : NULL;

		if (!base && cwd[0] == '/')
			base = xstrdup(cwd);
		else if (!base)
			base = xstrfmt("%s/%s", cfg.workspace, cwd);
		collect_readonly(&ex.readonly_paths, req.argv, req.argc, base, &server_env);
		free(base);
	}
	/* the person configured it: approved by the configuration, as a test_command is */
	ex.policy.mode = APPROVAL_AUTO;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_serve_signal;	/* no SA_RESTART: the wait is interrupted at once */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	executor_set_cancel(&ex, -1, &serve_stop);
	req.cwd = cwd;
	req.timeout_ms = INT_MAX;
	req.env_overrides = server_env.v;
	if (executor_run(&res, &ex, &req) < 0) {
		fprintf(stderr, "forgex: the MCP server did not start in the sandbox: %s\n",
			err_last());
		status = serve_stop ? EXIT_INTERRUPTED : EXIT_DENIED;
	} else {
		if (res.err.len)
			fwrite(res.err.buf, 1, res.err.len, stderr);
		status = res.exit_code;
	}
	exec_result_release(&res);
	executor_release(&ex);
out:
	if (private) {
		if (fsutil_remove_tree(private) < 0)
			err_clear();
		free(private);
	}
	config_release(&cfg);
	strvec_clear(&server_env);
	free(list_name);
	return status;
}

static int mcp_list(int json)
{
	struct config cfg = CONFIG_INIT;
	struct mcp_servers set = MCP_SERVERS_INIT;
	json_t *all;
	size_t i, j;
	int ret = EXIT_OK;

	if (cli_load_config(&cfg) != 0)
		return EXIT_USAGE;
	all = json_array();
	mcp_servers_init(&set);
	catch_interrupts();
	mcp_servers_start(&set, &cfg, NULL, NULL, &mcp_interrupted);
	if (!set.nr && !json)
		printf("no MCP servers configured (add a [mcp_servers.NAME] table)\n");
	for (i = 0; i < set.nr; i++) {
		const struct mcp_server_entry *e = &set.entries[i];
		const struct mcp_client *c = e->client;

		if (!c && !e->skipped)
			ret = EXIT_FAIL;
		if (json) {
			json_array_append_new(all, mcp_servers_json(&set, i));
			continue;
		}
		/* every string below is the configuration's or the server's: escaped */
		put_visible(stdout, e->cfg->name);
		printf(" (%s ", *e->cfg->url ? "http" : "stdio");
		put_visible(stdout, *e->cfg->url ? e->cfg->url : e->cfg->command);
		fputs("): ", stdout);
		if (!c) {
			printf("%s: ", e->skipped ? "not started" : "failed");
			put_visible(stdout, e->skipped ? e->skipped : e->error);
			putchar('\n');
			continue;
		}
		fputs("ready, protocol ", stdout);
		put_visible(stdout, c->protocol_version);
		fputs(", ", stdout);
		put_visible(stdout, c->server_name ? c->server_name : "(unnamed)");
		putchar(' ');
		put_visible(stdout, c->server_version);
		printf(", %.0f ms\n", c->handshake_ms);
		for (j = 0; j < c->tools_nr; j++) {
			const struct mcp_tool *t = &c->tools[j];
			char *name = mcp_tool_registry_name(e->cfg->name, t->name);

			fputs("  ", stdout);
			put_visible(stdout, name);
			printf("%s%s  ", t->read_only ? " (read-only)" : "",
			       mcp_tool_enabled(e->cfg, t->name) ? "" : " (disabled)");
			put_visible(stdout, t->description);
			putchar('\n');
			free(name);
		}
	}
	if (json) {
		struct buf b = BUF_INIT;

		jsonx_dump(&b, all, json_flags());
		printf("%s\n", b.buf);
		buf_release(&b);
	}
	json_decref(all);
	mcp_servers_release(&set);
	config_release(&cfg);
	return ret;
}

static int mcp_call(int json, int yes, const char *server, const char *tool, const char *args_text)
{
	struct config cfg = CONFIG_INIT;
	struct mcp_servers set = MCP_SERVERS_INIT;
	struct mcp_client *c;
	json_t *args = NULL, *res = NULL;
	struct buf text = BUF_INIT;
	int ret = EXIT_OK, is_error;

	if (cli_load_config(&cfg) != 0)
		return EXIT_USAGE;
	if (!config_mcp_server(&cfg, server)) {
		fprintf(stderr, "forgex: error: no MCP server named '%s' (add [mcp_servers.%s])\n",
			server, server);
		config_release(&cfg);
		return EXIT_USAGE;
	}
	if (jsonx_parse(&args, args_text, strlen(args_text), "arguments") < 0 ||
	    !json_is_object(args)) {
		fprintf(stderr, "forgex: error: the arguments must be a JSON object%s%s\n",
			args ? "" : ": ", args ? "" : err_last());
		json_decref(args);
		config_release(&cfg);
		return EXIT_USAGE;
	}
	mcp_servers_init(&set);
	catch_interrupts();
	mcp_servers_start(&set, &cfg, NULL, server, &mcp_interrupted);
	c = set.entries[0].client;
	if (!c) {
		fprintf(stderr, "forgex: error: MCP server %s did not start: ", server);
		put_visible(stderr, set.entries[0].error);
		fputc('\n', stderr);
		ret = EXIT_FAIL;
		goto out;
	}
	if (!mcp_client_tool(c, tool)) {
		fprintf(stderr, "forgex: error: MCP server %s has no tool '%s'\n", server, tool);
		ret = EXIT_USAGE;
		goto out;
	}
	if (!yes && strcmp(cfg.permissions.mode, "auto")) {
		char *what = xstrfmt("the MCP tool %s (server %s)", tool, server);
		char *shown = json_dumps(args, JSON_COMPACT);
		struct approval_request rq = { APPROVAL_MCP_TOOL, "forgex mcp call", NULL, 0, NULL, 0,
					       tool, what, shown ? shown : "{}" };
		struct approval_answer answer = APPROVAL_ANSWER_INIT;
		int a = approve_tty_ask(NULL, &answer, &rq, NULL);

		approval_answer_release(&answer);
		free(what);
		free(shown);
		if (!a) {
			fprintf(stderr, "forgex: not run: %s\n", *err_last() ? err_last() : "not approved");
			ret = EXIT_DENIED;
			goto out;
		}
	}
	if (mcp_client_call(&res, c, tool, args, 0, &mcp_interrupted) < 0) {
		fprintf(stderr, "forgex: error: ");
		put_visible(stderr, err_last());
		fputc('\n', stderr);
		ret = mcp_interrupted ? EXIT_INTERRUPTED : EXIT_FAIL;
		goto out;
	}
	is_error = mcp_result_text(&text, res);
	if (json) {
		struct buf b = BUF_INIT;

		jsonx_dump(&b, res, json_flags());
		printf("%s\n", b.buf);
		buf_release(&b);
	} else {
		const char *p = text.buf;

		/* the server's text, one line at a time, control characters escaped */
		while (*p) {
			const char *nl = strchr(p, '\n');
			size_t n = nl ? (size_t)(nl - p) : strlen(p);
			char *line = xstrndup(p, n);

			put_visible(stdout, line);
			putchar('\n');
			free(line);
			p += n + (nl ? 1 : 0);
		}
	}
	if (is_error)
		ret = EXIT_FAIL;
out:
	buf_release(&text);
	json_decref(args);
	json_decref(res);
	mcp_servers_release(&set);
	config_release(&cfg);
	return ret;
}

int cmd_mcp(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "yes", no_argument, NULL, 'y' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *sub;
	int c, json = 0, yes = 0;

	if (argc < 2)
		return cli_usage_error("mcp", "expected list or call");
	sub = argv[1];
	if (!strcmp(sub, "--help") || !strcmp(sub, "-h"))
		return cli_help("mcp");
	/* before any option parsing: what follows "--" is the server's */
	if (!strcmp(sub, "__serve"))
		return mcp_serve(argc - 1, argv + 1);
	argc--;
	argv++;
	optind = 1;
	while ((c = getopt_long(argc, argv, "jyh", opts, NULL)) != -1) {
		switch (c) {
		case 'j': json = 1; break;
		case 'y': yes = 1; break;
		case 'h': return cli_help("mcp");
		default: return cli_usage_error("mcp", "unknown option");
		}
	}
	if (!strcmp(sub, "list")) {
		if (optind != argc)
			return cli_usage_error("mcp", "list takes no operands");
		return mcp_list(json);
	}
	if (!strcmp(sub, "call")) {
		if (argc - optind < 2 || argc - optind > 3)
			return cli_usage_error("mcp", "call takes NAME TOOL [ARGUMENTS-JSON]");
		return mcp_call(json, yes, argv[optind], argv[optind + 1],
				argc - optind == 3 ? argv[optind + 2] : "{}");
	}
	return cli_usage_error("mcp", "unknown subcommand '%s' (list or call)", sub);
}
