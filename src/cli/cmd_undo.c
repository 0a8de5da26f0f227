/* forgex undo: revert a run's own changes. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/termsafe.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "pipeline/pipeline.h"
#include "pipeline/rundir.h"
#include "pipeline/runrecord.h"

static void on_wait(void *data, const char *holder)
{
	(void)data;
	fprintf(stderr, "forgex: waiting for %s to finish ('--no-wait' fails instead)\n", holder);
}

static void list(const char *title, const struct strvec *v)
{
	size_t i;

	if (!v->nr)
		return;
	printf("%s\n", title);
	/* the workspace's file names: escapes shown, not sent */
	for (i = 0; i < v->nr; i++) {
		fputs("  ", stdout);
		fputs_termsafe(v->v[i], stdout, 0);
		putchar('\n');
	}
}

static void say_planted(const struct strvec *planted)
{
	struct buf b = BUF_INIT;

	runrecord_describe_planted(&b, planted);
	if (b.len)
		fputs(b.buf, stderr);
	buf_release(&b);
}

int cmd_undo(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "no-wait", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct pipeline_undo_result res;
	struct strvec planted = STRVEC_INIT;
	struct config cfg;
	char *id = NULL;
	int c, status = EXIT_OK, force = 0, no_wait = 0, ret;

	optind = 1;
	opterr = 0;
	/* options may come before or after the RUN */
	while ((c = getopt_long(argc, argv, "fh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			force = 1;
			break;
		case 'n':
			no_wait = 1;
			break;
		case 'h':
			return cli_help("undo");
		default:
			return cli_usage_error("undo", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind > 1)
		return cli_usage_error("undo", "at most one RUN");
	if (cli_load_config(&cfg) != 0)
		return EXIT_USAGE;
	pipeline_undo_result_init(&res);
	/* only a run this user started: a planted journal is never reverted */
	if (runrecord_resolve(&id, cfg.workspace, optind < argc ? argv[optind] : NULL,
			      &planted) < 0) {
		say_planted(&planted);
		cli_print_error();
		status = err_last_code() == FX_EDENIED ? EXIT_DENIED : EXIT_USAGE;
		goto out;
	}
	say_planted(&planted);
	ret = pipeline_undo(&res, cfg.workspace, (uint64_t)cfg.checkpoints.max_file_bytes, id, force,
			    no_wait, on_wait, NULL, NULL);
	if (ret < 0) {
		cli_print_error();
		if (res.conflicts.nr) {
			size_t i;

			fprintf(stderr, "changed since the run ended (undo would lose this):\n");
			for (i = 0; i < res.conflicts.nr; i++) {
				fputs("  ", stderr);
				fputs_termsafe(res.conflicts.v[i], stderr, 0);
				fputc('\n', stderr);
			}
			fprintf(stderr, "see them with 'forgex diff %s'; 'forgex undo %s --force' "
				"reverts them anyway, saving your versions in "
				".forgex/runs/%s/user-versions/\n", id, id, id);
		}
		list("not put back:", &res.failed);
		if (res.failed.nr)
			fprintf(stderr, "once the cause is fixed, run 'forgex undo %s' again to finish "
				"(forgex log %s shows what is left)\n", id, id);
		if (*res.backup)
			fprintf(stderr, "the tree as it was before this undo is checkpoint %.12s\n",
				res.backup);
		status = ret == FX_ENOTFOUND ? EXIT_USAGE : EXIT_FAIL;
		goto out;
	}
	if (res.already) {
		/* a rollback put the tree back (its saved copies renamed into place) */
		printf("Run %s is already undone: its %zu path%s %s as before the run. Nothing to "
		       "undo.\n", id, res.reverted.nr, res.reverted.nr == 1 ? "" : "s",
		       res.reverted.nr == 1 ? "is" : "are");
		goto out;
	}
	if (res.legacy)
		printf("Restored the whole tree to before run %s (a run from an older forgex).\n", id);
	else
		printf("Undid run %s: %zu path%s put back as %s before the run.\n", id,
		       res.reverted.nr, res.reverted.nr == 1 ? "" : "s",
		       res.reverted.nr == 1 ? "it was" : "they were");
	list("kept as they are now (changed by you too; the run's version saved):", &res.kept);
	list("your versions, saved before they were reverted (--force):", &res.overwritten);
	if (*res.revert_commit)
		printf("The run's commit is reverted by commit %.12s.\n", res.revert_commit);
	if (res.commit_note)
		printf("Note: %s.\n", res.commit_note);
	if (*res.backup) {
		printf("To redo it: forgex checkpoint restore %.12s", res.backup);
		if (*res.revert_commit)
			printf(" && git reset --soft HEAD~1");
		printf("\n");
	}
out:
	strvec_clear(&planted);
	pipeline_undo_result_release(&res);
	free(id);
	config_release(&cfg);
	return status;
}
