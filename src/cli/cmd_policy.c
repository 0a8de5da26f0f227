/* forgex policy check [--json] [--] CMD [ARG...] */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "base/jsonx.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "sandbox/approval.h"
#include "sandbox/policy.h"

static int exit_code(enum policy_decision d)
{
	switch (d) {
	case POLICY_ALLOW:
		return EXIT_OK;
	case POLICY_DENY:
		return EXIT_DENIED;
	case POLICY_APPROVAL:
		return EXIT_APPROVAL;
	}
	BUG("policy decision %d", (int)d);
}

static void print_decision(enum policy_decision d, const struct buf *reason, int json)
{
	struct buf out = BUF_INIT;

	if (json) {
		json_t *o = json_object();

		jsonx_set(o, "decision", jsonx_string(policy_decision_name(d)));
		/* a reason quotes the command's name, which may not be UTF-8 */
		jsonx_set(o, "reason", jsonx_stringn_lossy(reason->buf, reason->len));
		jsonx_dump(&out, o, 0);
		json_decref(o);
	} else {
		buf_addstr(&out, policy_decision_name(d));
		if (d != POLICY_ALLOW) {
			buf_addstr(&out, ": ");
			/* the name comes from the command line: keep escapes off the terminal */
			approval_add_visible(&out, reason->buf);
		}
	}
	puts(out.buf);
	buf_release(&out);
}

static int policy_check_cmd(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct config cfg;
	struct policy p = POLICY_INIT;
	struct policy_verdict v = POLICY_VERDICT_INIT;
	enum policy_decision d;
	int json = 0, c, ret;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'h':
			return cli_help("policy");
		default:
			return cli_usage_error("policy", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage_error("policy", "'check' needs a command (forgex policy check -- CMD [ARG...])");
	ret = cli_load_config(&cfg);
	if (ret)
		return ret;
	if (policy_init_from_config(&p, &cfg) < 0) {
		cli_print_error();
		config_release(&cfg);
		return EXIT_USAGE;
	}
	d = policy_check(&v, &p, (const char *const *)argv + optind, (size_t)(argc - optind));
	print_decision(d, &v.reason, json);
	policy_verdict_release(&v);
	policy_release(&p);
	config_release(&cfg);
	return exit_code(d);
}

int cmd_policy(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error("policy", "a subcommand is required (check)");
	if (!strcmp(argv[1], "check"))
		return policy_check_cmd(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))
		return cli_help("policy");
	return cli_usage_error("policy", "unknown subcommand '%s' (check)", argv[1]);
}
