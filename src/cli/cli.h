#ifndef FX_CLI_H
#define FX_CLI_H

/*
 * The front: the command table, exit codes, and what every command shares.
 * Only src/cli/ prints for a person or exits.
 *
 * A command is `int cmd_NAME(int argc, char **argv)`: argv[0] is the
 * command's name, global options are already consumed. It parses its own
 * options (getopt_long, with "+" to stop at the first operand, so
 * "-- CMD ARGS" works), calls the layers below, presents the result, and
 * returns the process exit status.
 */

#include <stdio.h>

#include "base/buf.h"
#include "config/config.h"

/* Exit codes (DESIGN.md section 7). */
enum {
	EXIT_OK = 0,		/* done / PASS */
	EXIT_FAIL = 1,		/* FAIL after the last iteration; a check failed */
	EXIT_USAGE = 2,		/* usage or configuration error */
	EXIT_PROVIDER = 3,	/* the model provider failed */
	EXIT_DENIED = 4,	/* refused by policy or sandbox */
	EXIT_APPROVAL = 5,	/* needs approval (policy check only) */
	EXIT_INTERRUPTED = 130,	/* interrupted; tree restored */
};

enum cli_command_flags {
	CLI_HIDDEN = 1 << 0,	/* not listed in --help */
	CLI_HEAVY = 1 << 1,	/* needs libcurl or libgit2: runs in forgex-core */
};

struct cli_command {
	const char *name;
	int (*fn)(int argc, char **argv);
	unsigned flags;
	const char *summary;	/* one line for `forgex --help` */
	const char *usage;	/* full text for `forgex help NAME` / NAME --help */
};

/** Every command of the table, in order (`*nr` of them). */
const struct cli_command *cli_commands(size_t *nr);

/** The global options' lines of `forgex --help`, and the usage line. */
extern const char cli_global_options[];
const char *cli_global_usage(void);

/** Write the forgex(1) manual page, made from the help texts, to `f` (cmd_completion.c). */
int cli_write_manpage(FILE *f);

/** The command called `name`, or NULL. */
const struct cli_command *cli_find_command(const char *name);

/** Print the usage of `name` to stdout (for --help) and return EXIT_OK. */
int cli_help(const char *name);

/**
 * -m/--model M of a command that talks to a model: every role's model is
 * M for this command (as -c agents.ROLE.model=M for each role would set
 * it; applied by cli_load_config()). FX_EINVAL for an empty M.
 */
int cli_set_model(const char *model);

/** Print "usage error" `fmt` and the usage line of `name` to stderr; return EXIT_USAGE. */
int cli_usage_error(const char *name, const char *fmt, ...) FX_PRINTF(2, 3);

/**
 * Load the effective configuration for the current folder (defaults, user
 * file, project file, environment, then the --set/-c flags given before
 * the command). On failure prints the error and returns EXIT_USAGE.
 */
int cli_load_config(struct config *cfg);

/** config_trust_fn over the user's trust store (cmd_trust.c). */
int cli_trust_check(const char *path, const char *hash, int *changed, void *data);

/**
 * Say on stderr which settings of an untrusted project file were not
 * applied and how to trust it, and which nested .forgex/config.toml files
 * were ignored (cli_load_config() does).
 */
void cli_report_trust(const struct config *cfg);

/**
 * Apply the -c flags to `cfg` (loaded already) and validate it again;
 * FX_EINVAL naming the flag. For commands that load the files themselves
 * (doctor, which reports a broken configuration instead of stopping).
 */
int cli_apply_config_flags(struct config *cfg);

/**
 * The exit status for a failed service call's FX_E* `code`: refusals 4,
 * interrupts 130, bad input 2, provider failures 3, anything else 1.
 */
int cli_exit_for_error(int code);

/**
 * printf for text that holds what a model or a command wrote: control
 * characters are escaped (base/termsafe.h), newlines and tabs kept.
 * Every human (not --json) view of such text goes through it.
 */
void cli_printf(FILE *f, const char *fmt, ...) FX_PRINTF(2, 3);

/** Print "forgex: error: " + err_last() to stderr. */
void cli_print_error(void);

/* Global options, set by main() before the command runs. */
extern int cli_quiet, cli_verbose;

/*
 * `forgex doctor` is assembled from sections; each layer's section lives
 * in src/cli/doctor_<layer>.c and reports items through doctor_item().
 */
enum doctor_status {
	DOCTOR_OK,
	DOCTOR_WARN,		/* works, with a limitation the user should know */
	DOCTOR_FAIL,		/* something required is missing: exit non-zero */
	DOCTOR_INFO,
};

struct doctor {
	int json;
	int failures, warnings;
	void *items;		/* json_t array when json */
};

/** Report one check: `what` is short ("libcurl"), `fmt` says what was found. */
void doctor_item(struct doctor *d, enum doctor_status st, const char *what,
		 const char *fmt, ...) FX_PRINTF(4, 5);
/** Start a section ("Build", "Sandbox", "Providers"). */
void doctor_section(struct doctor *d, const char *title);

#endif
