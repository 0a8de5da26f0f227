/* forgex replay: re-run a recorded run offline from its transcript. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "cli/approve_tty.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "pipeline/chat.h"
#include "pipeline/pipeline.h"
#include "pipeline/recorder.h"
#include "pipeline/rundir.h"
#include "pipeline/runrecord.h"

#define REPLAY_PROVIDER "forgex-replay"

/*
 * The edit tools the recorded run offered ("edit_file", "apply_patch",
 * "both"), from the first request of the transcript that offered one;
 * NULL when none did. The replay must offer the same, whatever model name
 * the replay provider has.
 */
static const char *recorded_edit_tools(const char *transcript)
{
	struct buf b = BUF_INIT;
	const char *found = NULL;
	size_t pos = 0;

	if (fsutil_read_file(&b, transcript, 0) < 0) {
		err_clear();
		return NULL;
	}
	while (pos < b.len && !found) {
		const char *nl = memchr(b.buf + pos, '\n', b.len - pos);
		size_t len = nl ? (size_t)(nl - b.buf) - pos : b.len - pos;
		json_t *line = NULL, *tools, *t;
		int edit = 0, patch = 0;
		size_t i;

		if (len && !jsonx_parse(&line, b.buf + pos, len, "transcript")) {
			tools = json_object_get(json_object_get(line, "request"), "tools");
			json_array_foreach(tools, i, t) {
				const char *name = jsonx_str(json_object_get(t, "function"), "name");

				edit |= name && !strcmp(name, "edit_file");
				patch |= name && !strcmp(name, "apply_patch");
			}
			if (edit || patch)
				found = edit && patch ? "both" : edit ? "edit_file" : "apply_patch";
		}
		err_clear();
		json_decref(line);
		pos += len + 1;
	}
	buf_release(&b);
	return found;
}

/* The changed paths of a "turn_end" event as one line, for comparing. */
static void changed_text(struct buf *out, const json_t *ev)
{
	const json_t *v;
	size_t i;

	json_array_foreach(json_object_get(ev, "changed"), i, v)
		buf_addf(out, "%s%s", i ? ", " : "", json_string_value(v));
}

/*
 * Replay an interactive session: from the tree it started from, each of
 * its turns again (and its /undo, /clear and /compact where they were),
 * every model call answered from its transcript; each turn must end as it
 * did and change the same paths. Pipeline runs made from the session
 * (/run, /plan, /go) are runs of their own: `forgex replay RUN` each.
 */
static int replay_session(struct config *cfg, const char *id, int json)
{
	struct chat_opts co = CHAT_OPTS_INIT;
	struct approver ap;
	struct chat *c = NULL;
	char *dir = rundir_dir_kind(cfg->workspace, RUNDIR_CHATS, id);
	json_t *events = NULL, *ev, *ends = json_array();
	size_t i, turn = 0, differ = 0;
	int ret, status = EXIT_OK;

	ret = rundir_load_events(&events, dir);
	if (ret < 0)
		goto fail;
	json_array_foreach(events, i, ev)
		if (!strcmp(jsonx_str(ev, "type") ? jsonx_str(ev, "type") : "", "turn_end"))
			json_array_append(ends, ev);
	ret = recorder_restore_start(NULL, cfg->workspace,
				     (uint64_t)cfg->checkpoints.max_file_bytes, RUNDIR_CHATS, id);
	if (ret < 0 && ret != FX_ENOTFOUND)
		goto fail;
	err_clear();
	if (!json)
		fprintf(stderr, "forgex: replaying session %s offline from its transcript\n", id);
	co.cfg = cfg;
	co.force_provider = REPLAY_PROVIDER;
	approver_init(&ap, approve_tty_ask, NULL, NULL);
	co.approver = &ap;
	ret = chat_open(&c, &co);
	if (ret < 0)
		goto fail;
	json_array_foreach(events, i, ev) {
		const char *type = jsonx_str(ev, "type") ? jsonx_str(ev, "type") : "";

		if (!strcmp(type, "user")) {
			struct agent_result r = AGENT_RESULT_INIT;
			const json_t *was = json_array_get(ends, turn++);
			struct buf a = BUF_INIT, b = BUF_INIT;
			const char *st;

			ret = chat_turn(c, jsonx_str(ev, "text") ? jsonx_str(ev, "text") : "", &r);
			st = ret < 0 ? "error" : agent_status_name(r.status);
			changed_text(&a, was);
			{
				/* what this turn changed: its own turn_end, the newest event */
				json_t *now = NULL, *e;
				size_t k;

				if (!rundir_load_events(&now, chat_dir(c)))
					json_array_foreach(now, k, e)
						if (!strcmp(jsonx_str(e, "type") ? jsonx_str(e, "type")
									       : "", "turn_end")) {
							buf_reset(&b);
							changed_text(&b, e);
						}
				err_clear();
				json_decref(now);
			}
			if (!was || strcmp(st, jsonx_str(was, "status") ? jsonx_str(was, "status") : "") ||
			    strcmp(a.buf ? a.buf : "", b.buf ? b.buf : "")) {
				differ++;
				log_error("turn %zu: the replay ended '%s' changing [%s]; the session's "
					  "ended '%s' changing [%s]", turn, st, b.len ? b.buf : "",
					  was ? jsonx_str(was, "status") : "(no end recorded)",
					  a.len ? a.buf : "");
			} else if (!json) {
				cli_printf(stdout, "turn %zu: %s%s%s\n", turn, st, b.len ? ", changed " : "",
					   b.len ? b.buf : "");
			}
			err_clear();
			agent_result_release(&r);
			buf_release(&a);
			buf_release(&b);
		} else if (!strcmp(type, "undo")) {
			struct journal_outcome o;
			int n;

			journal_outcome_init(&o);
			if (chat_undo(c, &n, &o) < 0)
				err_clear();
			journal_outcome_release(&o);
		} else if (!strcmp(type, "clear")) {
			chat_clear(c);
		} else if (!strcmp(type, "compact")) {
			struct agent_result r = AGENT_RESULT_INIT;

			if (chat_compact(c, &r) < 0)
				err_clear();
			agent_result_release(&r);
		} else if (!strcmp(type, "model")) {
			const char *role = jsonx_str(ev, "role");

			chat_set_model(c, role && strcmp(role, "chat") ? role : NULL,
				       jsonx_str(ev, "model"));
			err_clear();
		}
	}
	if (json) {
		json_t *j = json_pack("{s:s, s:s, s:i, s:i, s:b}", "session", id, "replay",
				      chat_id(c), "turns", (int)turn, "differ", (int)differ,
				      "same", !differ);
		struct buf b = BUF_INIT;

		jsonx_dump(&b, j, JSON_COMPACT);
		printf("%s\n", b.buf);
		buf_release(&b);
		json_decref(j);
	} else if (!differ) {
		printf("Same outcome as session %s: %zu turn%s\n", id, turn, turn == 1 ? "" : "s");
	}
	status = differ ? EXIT_FAIL : EXIT_OK;
	goto out;
fail:
	cli_print_error();
	status = ret == FX_ENOTFOUND || ret == FX_EPARSE ? EXIT_USAGE : EXIT_FAIL;
out:
	chat_close(c);
	if (co.approver)
		approver_release(&ap);
	json_decref(events);
	json_decref(ends);
	free(dir);
	return status;
}

int cmd_replay(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "strict", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct pipeline_opts po = PIPELINE_OPTS_INIT;
	struct config cfg;
	struct buf request = BUF_INIT;
	char *id = NULL, *dir = NULL, *tr = NULL, *rp = NULL, *newid = NULL;
	json_t *sum = NULL, *nsum = NULL;
	int json = 0, strict = 0, c, status, chat = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 's':
			strict = 1;
			break;
		case 'h':
			return cli_help("replay");
		default:
			return cli_usage_error("replay", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind != 1)
		return cli_usage_error("replay", "one RUN is required");
	if (cli_load_config(&cfg) != 0)
		return EXIT_USAGE;
	status = EXIT_USAGE;
	/* only a run or session this user started: a planted transcript is not replayed */
	if (runrecord_resolve(&id, cfg.workspace, argv[optind], NULL) < 0) {
		if (err_last_code() != FX_ENOTFOUND ||
		    rundir_resolve_kind(&id, cfg.workspace, RUNDIR_CHATS, argv[optind]) < 0) {
			if (err_last_code() == FX_ENOTFOUND)
				err_set(FX_ENOTFOUND, "no run or session '%s' (see 'forgex log')",
					argv[optind]);
			if (err_last_code() == FX_EDENIED)
				status = EXIT_DENIED;
			goto fail;
		}
		if (!chat_session_mine(cfg.workspace, id)) {
			err_set(FX_EDENIED, "session %s was not started here by you (it is not in "
				"your record of sessions): a session folder shipped with the "
				"repository or left by someone else is planted, and forgex does not "
				"replay it", id);
			status = EXIT_DENIED;
			goto fail;
		}
		chat = 1;
	}
	dir = chat ? rundir_dir_kind(cfg.workspace, RUNDIR_CHATS, id)
		   : rundir_dir(cfg.workspace, id);
	tr = xstrfmt("%s/transcript.jsonl", dir);
	rp = xstrfmt("%s/request.txt", dir);
	if (!fsutil_exists(tr)) {
		err_set(FX_ENOTFOUND, "run %s has no transcript to replay", id);
		goto fail;
	}
	if (!chat && fsutil_read_file(&request, rp, 1u << 20) < 0)
		goto fail;
	if (chat || rundir_read_json(&sum, dir, "summary.json") < 0)
		err_clear();
	if (config_set(&cfg, "providers." REPLAY_PROVIDER ".type", "replay", CFG_FLAG) < 0 ||
	    config_set(&cfg, "providers." REPLAY_PROVIDER ".transcript", tr, CFG_FLAG) < 0 ||
	    config_set(&cfg, "providers." REPLAY_PROVIDER ".replay_mode",
		       strict ? "strict" : "lenient", CFG_FLAG) < 0)
		goto fail;
	{
		const char *edit = recorded_edit_tools(tr);

		if (edit && config_set(&cfg, "providers." REPLAY_PROVIDER ".edit_tools", edit,
				       CFG_FLAG) < 0)
			goto fail;
	}
	if (chat) {
		status = replay_session(&cfg, id, json);
		goto out;
	}
	/* the run starts from the tree it started from */
	if (recorder_restore_start(NULL, cfg.workspace,
				   (uint64_t)cfg.checkpoints.max_file_bytes, RUNDIR_RUNS, id) < 0) {
		if (err_last_code() != FX_ENOTFOUND)
			goto fail;
		err_clear();
	}
	if (!json)
		fprintf(stderr, "forgex: replaying run %s offline from its transcript\n", id);
	po.request = request.buf;
	po.force_provider = REPLAY_PROVIDER;
	status = cli_pipeline("replay", &cfg, &po, json);
	if (sum && !runrecord_resolve(&newid, cfg.workspace, NULL, NULL)) {
		char *ndir = rundir_dir(cfg.workspace, newid);
		const char *was = jsonx_str(sum, "outcome");

		if (!rundir_read_json(&nsum, ndir, "summary.json")) {
			const char *now = jsonx_str(nsum, "outcome");

			if (was && now && strcmp(was, now)) {
				log_error("the replay ended '%s'; run %s ended '%s'", now, id, was);
				if (!status)
					status = EXIT_FAIL;
			} else if (!json) {
				printf("Same outcome as run %s: %s\n", id, now ? now : "?");
			}
		}
		err_clear();
		free(ndir);
	}
	goto out;
fail:
	cli_print_error();
out:
	json_decref(sum);
	json_decref(nsum);
	buf_release(&request);
	free(id);
	free(dir);
	free(tr);
	free(rp);
	free(newid);
	config_release(&cfg);
	return status;
}
