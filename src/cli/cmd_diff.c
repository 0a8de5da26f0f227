/* forgex diff [RUN|ID]: a run's whole change, or what changed since a checkpoint. */
#include <getopt.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>

#include "base/log.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "base/jsonx.h"
#include "pipeline/journal.h"
#include "pipeline/rundir.h"
#include "vcs/checkpoint.h"
#include "vcs/diff.h"
#include "vcs/paths.h"

/*
 * The whole change of run `id`: from its pre-run checkpoint to the tree it
 * ended with (to the tree now while it has not ended), the run's own
 * paths only.
 */
static int run_diff(struct buf *out, struct checkpoints *cps, const char *workspace,
		    const char *id, unsigned flags)
{
	char *dir = rundir_dir(workspace, id);
	struct journal jr = JOURNAL_INIT;
	struct strvec paths = STRVEC_INIT, compared = STRVEC_INIT;
	json_t *st = NULL, *sum = NULL;
	char now[VCS_OID_HEX];
	const char *pre, *end;
	int ret;

	ret = rundir_read_json(&st, dir, "state.json");
	if (ret < 0)
		goto out;
	if (rundir_read_json(&sum, dir, "summary.json") < 0)
		err_clear();
	pre = jsonx_str(st, "pre_checkpoint");
	if (!pre) {
		ret = err_set(FX_ENOTFOUND, "run %s changed nothing (it has no pre-run checkpoint)", id);
		goto out;
	}
	ret = journal_open(&jr, cps, dir, 0);
	if (ret < 0)
		goto out;
	journal_paths(&jr, &paths);
	journal_release(&jr);
	end = jsonx_str(sum, "end_tree");
	if (!end) {
		const struct strvec *large;
		size_t i, k;

		ret = vcs_snapshot(now, cps);
		if (ret < 0)
			goto out;
		end = now;
		/* too large now: named, never compared (it is in no tree: it would show deleted) */
		large = checkpoint_too_large(cps);
		vcs_diff_note_too_large(out, cps);
		for (k = 0; k < paths.nr; k++) {
			for (i = 0; i < large->nr; i++)
				if (!strcmp(paths.v[k], strchr(large->v[i], ' ') + 1))
					break;
			if (i == large->nr)
				strvec_push(&compared, paths.v[k]);
		}
	} else {
		strvec_copy(&compared, &paths);
	}
	/* a run from an older forgex has no journal: everything since it started */
	ret = vcs_diff_trees(out, NULL, cps, pre, end,
			     paths.nr || json_object_get(st, "interrupted") ? &compared : NULL, flags);
out:
	strvec_clear(&compared);
	strvec_clear(&paths);
	json_decref(st);
	json_decref(sum);
	free(dir);
	return ret;
}

/* Whether `name` designates a run rather than a checkpoint. */
static int is_run(char **run, struct checkpoints *cps, const char *workspace, const char *name)
{
	char *full = NULL;

	if (!name || !strcmp(name, "last") || strchr(name, '-')) {
		if (!name) {
			struct strvec ids = STRVEC_INIT;
			int any = !rundir_list(&ids, workspace) && ids.nr;

			strvec_clear(&ids);
			err_clear();
			if (!any)
				return 0;	/* no runs yet: the newest checkpoint */
		}
		return rundir_resolve(run, workspace, name) < 0 ? -1 : 1;
	}
	if (!checkpoint_resolve(&full, cps, name)) {
		free(full);
		return 0;
	}
	if (!rundir_resolve(run, workspace, name)) {
		err_clear();
		return 1;
	}
	/* neither: say what a checkpoint lookup says */
	checkpoint_resolve(&full, cps, name);
	return -1;
}

int cmd_diff(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "color", optional_argument, NULL, 'c' },
		{ "stat", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct checkpoints *cps = NULL;
	struct buf out = BUF_INIT;
	struct config cfg;
	const char *id = NULL;
	char *run_id = NULL;
	unsigned flags = 0;
	int color = -1, c, ret, run = 0;

	optind = 1;
	opterr = 0;
	/* options may come before or after the ID */
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			if (!optarg || !strcmp(optarg, "always"))
				color = 1;
			else if (!strcmp(optarg, "never"))
				color = 0;
			else if (!strcmp(optarg, "auto"))
				color = -1;
			else
				return cli_usage_error("diff", "--color takes always, never or auto, not '%s'",
						       optarg);
			break;
		case 's':
			flags |= VCS_DIFF_STAT;
			break;
		case 'h':
			return cli_help("diff");
		default:
			return cli_usage_error("diff", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind > 1)
		return cli_usage_error("diff", "at most one RUN or checkpoint ID");
	if (argc - optind == 1)
		id = argv[optind];
	if (color < 0)
		color = log_color_for_fd(1);
	if (color)
		flags |= VCS_DIFF_COLOR;
	/* file names and contents a model wrote: escaped on a terminal, a patch as is elsewhere */
	if (isatty(STDOUT_FILENO))
		flags |= VCS_DIFF_TERMSAFE;
	ret = cli_load_config(&cfg);
	if (ret)
		return ret;
	ret = checkpoint_open(&cps, cfg.workspace);
	if (!ret) {
		/*
		 * The tree now is snapshotted as a checkpoint would be: with the
		 * same bound, or a file over the default but under the setting
		 * would show as deleted (and one over the setting as new).
		 */
		checkpoint_set_max_file_bytes(cps, (uint64_t)cfg.checkpoints.max_file_bytes);
		run = is_run(&run_id, cps, cfg.workspace, id);
		ret = run < 0 ? run : run ? run_diff(&out, cps, cfg.workspace, run_id, flags)
			: vcs_diff_ext(&out, NULL, cps, id, flags);
	}
	if (ret < 0) {
		int code = err_last_code();

		cli_print_error();
		ret = code == FX_ENOTFOUND || code == FX_EINVAL ? EXIT_USAGE : EXIT_FAIL;
	} else {
		fwrite(out.buf, 1, out.len, stdout);
		ret = EXIT_OK;
	}
	buf_release(&out);
	free(run_id);
	checkpoint_close(cps);
	config_release(&cfg);
	return ret;
}
