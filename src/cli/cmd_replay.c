/* forgex replay: re-run a recorded run offline from its transcript. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "pipeline/pipeline.h"
#include "pipeline/session.h"

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
	int json = 0, strict = 0, c, status;

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
	if (session_resolve(&id, cfg.workspace, argv[optind]) < 0)
		goto fail;
	dir = session_dir(cfg.workspace, id);
	tr = xstrfmt("%s/transcript.jsonl", dir);
	rp = xstrfmt("%s/request.txt", dir);
	if (!fsutil_exists(tr)) {
		err_set(FX_ENOTFOUND, "run %s has no transcript to replay", id);
		goto fail;
	}
	if (fsutil_read_file(&request, rp, 1u << 20) < 0)
		goto fail;
	if (session_read_json(&sum, dir, "summary.json") < 0)
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
	/* the run starts from the tree it started from */
	if (pipeline_restore_start(NULL, cfg.workspace, id) < 0) {
		if (err_last_code() != FX_ENOTFOUND)
			goto fail;
		err_clear();
	}
	if (!json)
		fprintf(stderr, "forgex: replaying run %s offline from its transcript\n", id);
	po.request = request.buf;
	po.force_provider = REPLAY_PROVIDER;
	status = cli_pipeline("replay", &cfg, &po, json);
	if (sum && !session_resolve(&newid, cfg.workspace, NULL)) {
		char *ndir = session_dir(cfg.workspace, newid);
		const char *was = jsonx_str(sum, "outcome");

		if (!session_read_json(&nsum, ndir, "summary.json")) {
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
