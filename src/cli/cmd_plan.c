/* forgex plan: the Architect alone (options shared with run, in cmd_run.c). */
#include "cli/cli.h"
#include "cli/commands.h"

int cmd_plan(int argc, char **argv)
{
	return cli_run_request("plan", 1, argc, argv);
}
