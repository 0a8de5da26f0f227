/* forgex undo: put back the tree as it was before a run. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "pipeline/pipeline.h"
#include "pipeline/session.h"

int cmd_undo(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct config cfg;
	char *id = NULL, *cp = NULL;
	int c, status = EXIT_OK;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
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
	if (session_resolve(&id, cfg.workspace, optind < argc ? argv[optind] : NULL) < 0) {
		cli_print_error();
		status = EXIT_USAGE;
		goto out;
	}
	if (pipeline_undo(&cp, cfg.workspace, id) < 0) {
		cli_print_error();
		status = EXIT_FAIL;
		goto out;
	}
	printf("Restored the tree to before run %s (checkpoint %.12s).\n", id, cp);
	printf("The tree as it was is saved too: see 'forgex checkpoint list'.\n");
out:
	free(id);
	free(cp);
	config_release(&cfg);
	return status;
}
