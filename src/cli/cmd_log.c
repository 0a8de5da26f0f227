/* forgex log: the runs of this project, or one run's timeline. */
#include <fcntl.h>
#include <getopt.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "pipeline/session.h"

/* "20261130-031500-ab12" -> "2026-11-30 03:15:00" */
static void id_time(char *out, size_t size, const char *id)
{
	if (strlen(id) >= 15)
		snprintf(out, size, "%.4s-%.2s-%.2s %.2s:%.2s:%.2s", id, id + 4, id + 6, id + 9,
			 id + 11, id + 13);
	else
		snprintf(out, size, "?");
}

static int list_runs(const char *workspace, int json)
{
	struct strvec ids = STRVEC_INIT;
	size_t i;

	if (session_list(&ids, workspace) < 0) {
		cli_print_error();
		return EXIT_FAIL;
	}
	if (!ids.nr && !json)
		printf("No runs yet. Start one with: forgex run \"REQUEST\"\n");
	for (i = 0; i < ids.nr; i++) {
		char *dir = session_dir(workspace, ids.v[i]), *rp = xstrfmt("%s/request.txt", dir);
		struct buf req = BUF_INIT;
		json_t *sum = NULL;
		const char *outcome = "unfinished";
		char when[32];
		size_t n;

		{
			int fd = session_file_open(dir, "request.txt", O_RDONLY, 0);

			if (fd >= 0) {
				fsutil_read_fd(&req, fd, 64u << 10);
				close(fd);
			}
			err_clear();
		}
		if (!session_read_json(&sum, dir, "summary.json") && jsonx_str(sum, "outcome"))
			outcome = jsonx_str(sum, "outcome");
		err_clear();
		id_time(when, sizeof(when), ids.v[i]);
		if (json) {
			json_t *j = json_pack("{s:s, s:s, s:s, s:s}", "id", ids.v[i], "time", when,
					      "request", req.buf, "outcome", outcome);
			struct buf b = BUF_INIT;

			jsonx_dump(&b, j, JSON_COMPACT);
			printf("%s\n", b.buf);
			buf_release(&b);
			json_decref(j);
		} else {
			n = strcspn(req.buf, "\n");
			if (n > 60)
				n = 60;
			cli_printf(stdout, "%s  %s  %-11s %.*s\n", ids.v[i], when, outcome, (int)n, req.buf);
		}
		json_decref(sum);
		buf_release(&req);
		free(rp);
		free(dir);
	}
	strvec_clear(&ids);
	return EXIT_OK;
}

static void detail(struct buf *b, const json_t *ev)
{
	const char *type = jsonx_str(ev, "type"), *k;
	static const char *const skip[] = { "seq", "time", "elapsed_ms", "type", NULL };
	json_t *v;

	(void)type;
	json_object_foreach((json_t *)ev, k, v) {
		const char *const *s;
		struct buf t = BUF_INIT;

		for (s = skip; *s && strcmp(*s, k); s++)
			;
		if (*s)
			continue;
		if (json_is_string(v))
			buf_addstr(&t, json_string_value(v));
		else
			jsonx_dump(&t, v, JSON_COMPACT);
		if (t.len > 100) {
			buf_setlen(&t, 97);
			buf_addstr(&t, "...");
		}
		buf_addf(b, " %s=%s", k, t.buf);
		buf_release(&t);
	}
}

static int show_run(const char *workspace, const char *id, int json)
{
	char *dir = session_dir(workspace, id);
	json_t *events = NULL, *ev;
	size_t i;
	int ret;

	ret = session_load_events(&events, dir);
	free(dir);
	if (ret < 0) {
		cli_print_error();
		return EXIT_FAIL;
	}
	json_array_foreach(events, i, ev) {
		struct buf b = BUF_INIT;

		if (json) {
			jsonx_dump(&b, ev, JSON_COMPACT);
		} else {
			buf_addf(&b, "%4lld %8.1fs  %-14s", (long long)jsonx_int(ev, "seq", 0),
				 (double)jsonx_int(ev, "elapsed_ms", 0) / 1000.0,
				 jsonx_str(ev, "type") ? jsonx_str(ev, "type") : "?");
			detail(&b, ev);
		}
		/* tool arguments, file names, reasons: the model's words, escaped */
		if (json)
			printf("%s\n", b.buf);
		else
			cli_printf(stdout, "%s\n", b.buf);
		buf_release(&b);
	}
	json_decref(events);
	return EXIT_OK;
}

int cmd_log(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct config cfg;
	char *id = NULL;
	int json = 0, c, status = EXIT_OK;

	optind = 1;
	opterr = 0;
	/* options may come before or after the RUN */
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'h':
			return cli_help("log");
		default:
			return cli_usage_error("log", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind > 1)
		return cli_usage_error("log", "at most one RUN");
	if (cli_load_config(&cfg) != 0)
		return EXIT_USAGE;
	if (optind == argc) {
		status = list_runs(cfg.workspace, json);
	} else if (session_resolve(&id, cfg.workspace, argv[optind]) < 0) {
		cli_print_error();
		status = EXIT_USAGE;
	} else {
		status = show_run(cfg.workspace, id, json);
	}
	free(id);
	config_release(&cfg);
	return status;
}
