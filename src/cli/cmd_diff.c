/* forgex diff [ID]: what changed since a checkpoint. */
#include <getopt.h>
#include <stdio.h>
#include <unistd.h>
#include <string.h>

#include "base/log.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "vcs/checkpoint.h"
#include "vcs/diff.h"

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
	unsigned flags = 0;
	int color = -1, c, ret;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
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
		return cli_usage_error("diff", "at most one checkpoint ID");
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
	if (checkpoint_open(&cps, cfg.workspace) < 0 ||
	    vcs_diff_ext(&out, NULL, cps, id, flags) < 0) {
		int code = err_last_code();

		cli_print_error();
		ret = code == FX_ENOTFOUND || code == FX_EINVAL ? EXIT_USAGE : EXIT_FAIL;
	} else {
		fwrite(out.buf, 1, out.len, stdout);
		ret = EXIT_OK;
	}
	buf_release(&out);
	checkpoint_close(cps);
	config_release(&cfg);
	return ret;
}
