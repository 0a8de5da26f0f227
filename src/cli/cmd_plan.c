/* forgex plan: the Architect alone. */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/commands.h"
#include "pipeline/pipeline.h"

int cmd_plan(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct pipeline_opts po = PIPELINE_OPTS_INIT;
	struct buf request = BUF_INIT;
	struct config cfg;
	int json = 0, c, status;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'h':
			return cli_help("plan");
		default:
			return cli_usage_error("plan", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (cli_read_request(&request, argc - optind, argv + optind, 1) < 0) {
		buf_release(&request);
		return cli_usage_error("plan", "a request is required");
	}
	if (cli_load_config(&cfg) != 0) {
		buf_release(&request);
		return EXIT_USAGE;
	}
	/* the Architect reads only: no baseline test run is needed */
	cfg.pipeline.baseline = 0;
	po.request = request.buf;
	po.plan_only = 1;
	status = cli_pipeline("plan", &cfg, &po, json);
	config_release(&cfg);
	buf_release(&request);
	return status;
}
