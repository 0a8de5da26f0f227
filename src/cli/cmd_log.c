/* forgex log: the runs of this project, or one run's timeline. */
#include <fcntl.h>
#include <getopt.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "cli/chat_sess.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "pipeline/recorder.h"
#include "pipeline/pipeline.h"
#include "pipeline/rundir.h"

/* "20261130-031500-ab12" -> "2026-11-30 03:15:00" */
static void id_time(char *out, size_t size, const char *id)
{
	if (strlen(id) >= 15)
		snprintf(out, size, "%.4s-%.2s-%.2s %.2s:%.2s:%.2s", id, id + 4, id + 6, id + 9,
			 id + 11, id + 13);
	else
		snprintf(out, size, "?");
}

/* One run's line (or JSON object). */
static void list_run(const char *workspace, const char *id, int json)
{
	char *dir = rundir_dir(workspace, id);
	struct buf req = BUF_INIT;
	json_t *sum = NULL;
	const char *outcome = "unfinished";
	char when[32];
	size_t n;
	int fd = rundir_file_open(dir, "request.txt", O_RDONLY, 0);

	if (fd >= 0) {
		fsutil_read_fd(&req, fd, 64u << 10);
		close(fd);
	}
	err_clear();
	if (!rundir_read_json(&sum, dir, "summary.json") && jsonx_str(sum, "outcome"))
		outcome = jsonx_str(sum, "outcome");
	err_clear();
	id_time(when, sizeof(when), id);
	if (json) {
		json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:s}", "id", id, "kind", "run", "time",
				      when, "request", req.buf, "outcome", outcome);
		struct buf b = BUF_INIT;

		jsonx_dump(&b, j, JSON_COMPACT);
		printf("%s\n", b.buf);
		buf_release(&b);
		json_decref(j);
	} else {
		n = strcspn(req.buf, "\n");
		if (n > 60)
			n = 60;
		cli_printf(stdout, "%s  %s  %-11s %.*s\n", id, when, outcome, (int)n, req.buf);
	}
	json_decref(sum);
	buf_release(&req);
	free(dir);
}

/* One interactive session's line: its turns, when it was last used, its first message. */
static void list_session(const char *workspace, const char *id, int json, long long now)
{
	struct chat_session_info si;
	char when[32];

	chat_session_info_read(&si, workspace, id);
	err_clear();
	id_time(when, sizeof(when), id);
	if (json) {
		json_t *j = json_pack("{s:s, s:s, s:s, s:s, s:i, s:I}", "id", id, "kind", "session",
				      "time", when, "request", si.first ? si.first : "", "turns",
				      (int)si.turns, "used", (json_int_t)si.used);
		struct buf b = BUF_INIT;

		jsonx_dump(&b, j, JSON_COMPACT);
		printf("%s\n", b.buf);
		buf_release(&b);
		json_decref(j);
	} else {
		struct buf row = BUF_INIT, age = BUF_INIT;
		size_t cols = chat_sess_columns(stdout), lead;
		char what[32];

		snprintf(what, sizeof(what), "session:%zu", si.turns);
		chat_sess_age(&age, si.used, now);
		lead = strlen(id) + 2 + strlen(when) + 2 + 12 + (age.len > 11 ? age.len : 11) + 1;
		chat_sess_cut(&row, si.first ? si.first : "",
			      !cols ? 0 : cols > lead + 8 ? cols - lead - 1 : 8, 1);
		cli_printf(stdout, "%s  %s  %-11s %-11s %s\n", id, when, what, age.buf, row.buf);
		buf_release(&row);
		buf_release(&age);
	}
	chat_session_info_release(&si);
}

/* The runs and the interactive sessions of the project, oldest first. */
static int list_runs(const char *workspace, int json)
{
	struct strvec runs = STRVEC_INIT, all = STRVEC_INIT, chats = STRVEC_INIT;
	long long now = (long long)time(NULL);
	size_t i = 0, j = 0;

	if (rundir_list(&runs, workspace) < 0 ||
	    rundir_list_kind(&all, workspace, RUNDIR_CHATS) < 0) {
		cli_print_error();
		strvec_clear(&runs);
		strvec_clear(&all);
		return EXIT_FAIL;
	}
	/* a session in which nothing was said (one that is still open, or left by a crash) is not listed */
	for (i = 0; i < all.nr; i++) {
		struct chat_session_info si;

		if (chat_session_info_read(&si, workspace, all.v[i]) == 0 && si.turns)
			strvec_push(&chats, all.v[i]);
		err_clear();
		chat_session_info_release(&si);
	}
	strvec_clear(&all);
	i = 0;
	if (!runs.nr && !chats.nr && !json)
		printf("No runs yet. Start one with: forgex run \"REQUEST\" (or talk: forgex chat)\n");
	/* ids begin with the time: merged, they are in time order */
	while (i < runs.nr || j < chats.nr) {
		if (j >= chats.nr || (i < runs.nr && strcmp(runs.v[i], chats.v[j]) <= 0))
			list_run(workspace, runs.v[i++], json);
		else
			list_session(workspace, chats.v[j++], json, now);
	}
	strvec_clear(&runs);
	strvec_clear(&chats);
	return EXIT_OK;
}

static void detail(struct buf *b, const json_t *ev)
{
	const char *type = jsonx_str(ev, "type"), *k;
	/* a command's tail: its whole output follows the line (command_output()) */
	static const char *const skip[] = { "seq", "time", "elapsed_ms", "type", "tail", NULL };
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

/* The output a "command" event names (output/SEQ.txt of the folder), under its line. */
static void command_output(const char *dir, const json_t *ev)
{
	const char *name = jsonx_str(ev, "output");
	struct buf out = BUF_INIT;
	const char *p;
	int fd;

	if (!name)
		return;
	fd = recorder_output_open(dir, name);
	if (fd < 0 || fsutil_read_fd(&out, fd, RECORDER_OUTPUT_MAX + 4096) < 0) {
		/* a folder copied without it: the tail the event kept */
		cli_printf(stdout, "       | (%s: %s)\n", name, err_last());
		err_clear();
		buf_reset(&out);
		if (jsonx_str(ev, "tail"))
			buf_addstr(&out, jsonx_str(ev, "tail"));
	}
	if (fd >= 0)
		close(fd);
	for (p = out.buf; p < out.buf + out.len;) {
		size_t n = strcspn(p, "\n");

		/* the command's words, escaped like the rest */
		cli_printf(stdout, "       | %.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
	buf_release(&out);
}

/* A rollback or undo that could not finish: every path left, why, and the way to finish. */
static void show_restore_pending(const char *workspace, const char *id, int json)
{
	struct strvec left = STRVEC_INIT;
	size_t i;

	if (pipeline_restore_pending(&left, workspace, id) < 0)
		err_clear();
	if (left.nr && json) {
		json_t *j = json_pack("{s:s, s:o, s:s+}", "type", "restore_pending", "left",
				      jsonx_from_strvec(&left), "finish_with", "forgex undo ", id);
		struct buf b = BUF_INIT;

		jsonx_dump(&b, j, JSON_COMPACT);
		printf("%s\n", b.buf);
		buf_release(&b);
		json_decref(j);
	} else if (left.nr) {
		cli_printf(stdout, "The tree is not fully restored: %zu path%s left changed by run %s:\n",
			   left.nr, left.nr == 1 ? "" : "s", id);
		for (i = 0; i < left.nr; i++)
			cli_printf(stdout, "  %s\n", left.v[i]);
		cli_printf(stdout, "Finish it with: forgex undo %s\n", id);
	}
	strvec_clear(&left);
}

static int show_run(const char *workspace, const char *kind, const char *id, int json)
{
	char *dir = rundir_dir_kind(workspace, kind, id);
	json_t *events = NULL, *ev;
	size_t i;
	int ret;

	ret = rundir_load_events(&events, dir);
	if (ret < 0) {
		free(dir);
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
		if (!json && !strcmp(jsonx_str(ev, "type") ? jsonx_str(ev, "type") : "", "command"))
			command_output(dir, ev);
		buf_release(&b);
	}
	json_decref(events);
	if (!strcmp(kind, RUNDIR_RUNS))
		show_restore_pending(workspace, id, json);
	free(dir);
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
	} else if (rundir_resolve(&id, cfg.workspace, argv[optind]) == 0) {
		status = show_run(cfg.workspace, RUNDIR_RUNS, id, json);
	} else if (err_last_code() == FX_ENOTFOUND &&
		   rundir_resolve_kind(&id, cfg.workspace, RUNDIR_CHATS, argv[optind]) == 0) {
		/* not a run: an interactive session */
		status = show_run(cfg.workspace, RUNDIR_CHATS, id, json);
	} else {
		if (err_last_code() == FX_ENOTFOUND)
			err_set(FX_ENOTFOUND, "no run or session '%s' (see 'forgex log')", argv[optind]);
		cli_print_error();
		status = EXIT_USAGE;
	}
	free(id);
	config_release(&cfg);
	return status;
}
