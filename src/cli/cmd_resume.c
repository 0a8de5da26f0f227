/* forgex resume: continue an interrupted run from its last completed stage. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "pipeline/pipeline.h"
#include "pipeline/rundir.h"
#include "pipeline/runrecord.h"

int cmd_resume(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "no-wait", no_argument, NULL, 'n' },
		{ "model", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct pipeline_opts po = PIPELINE_OPTS_INIT;
	struct config cfg;
	struct strvec planted = STRVEC_INIT;
	struct buf said = BUF_INIT;
	char *id = NULL;
	int json = 0, c, status, no_wait = 0;

	optind = 1;
	opterr = 0;
	/* options may come before or after the RUN */
	while ((c = getopt_long(argc, argv, "hm:", opts, NULL)) != -1) {
		switch (c) {
		case 'm':
			if (cli_set_model(optarg) < 0)
				return cli_usage_error("resume", "%s", err_last());
			break;
		case 'j':
			json = 1;
			break;
		case 'n':
			no_wait = 1;
			break;
		case 'h':
			return cli_help("resume");
		default:
			return cli_usage_error("resume", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind > 1)
		return cli_usage_error("resume", "at most one RUN (default: the last run)");
	if (cli_load_config(&cfg) != 0)
		return EXIT_USAGE;
	/* only a run this user started: a planted state never steers a run */
	status = runrecord_resolve(&id, cfg.workspace, optind < argc ? argv[optind] : NULL,
				   &planted);
	runrecord_describe_planted(&said, &planted);
	if (said.len)
		fputs(said.buf, stderr);
	buf_release(&said);
	strvec_clear(&planted);
	if (status < 0) {
		cli_print_error();
		status = err_last_code() == FX_EDENIED ? EXIT_DENIED : EXIT_USAGE;
		config_release(&cfg);
		return status;
	}
	po.resume_id = id;
	po.no_wait = no_wait;
	status = cli_pipeline("resume", &cfg, &po, json);
	free(id);
	config_release(&cfg);
	return status;
}
