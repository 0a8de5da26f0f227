#ifndef FX_TOOLS_SHELL_H
#define FX_TOOLS_SHELL_H

/*
 * The tools that run programs: run_command (needs terminal) and run_tests
 * (needs test). Both go through the three gates of DESIGN.md section 4:
 * the role's permissions (tool_dispatch()), then the command policy and
 * approval, then the sandbox (executor_run(), sandbox/executor.h).
 *
 *   run_command {argv: [str] (at least one), cwd?: str (relative to the
 *               workspace), timeout_seconds?: int}
 *     -> "exit_code: 0\ntimed_out: false\ntruncated: false\n
 *         duration_ms: 12\n--- stdout ---\n...\n--- stderr ---\n..."
 *        with each stream cut to its head and tail; a refusal
 *        ("Command denied by policy: ...", "Command not approved: ...")
 *        is the call's result (status failed).
 *   run_tests {} -> the command used, counts, failing tests with short
 *        excerpts, or the output's tail when nothing was recognised.
 *
 * The caller:
 *   1. executor_init() on the workspace of the tool_ctx;
 *   2. fills a `struct shell_tools` (SHELL_TOOLS_INIT) that outlives the
 *      registry's use, and tools_register_shell();
 *   3. dispatches as for every tool.
 */

#include <stddef.h>

#include "base/strvec.h"
#include "tools/registry.h"

struct executor;
struct verify_result;
struct exec_result;

/** Called after each command the tools ran (or were refused); for events. */
typedef void (*shell_command_fn)(void *data, const char *tool, const struct strvec *argv,
				 int code, const struct exec_result *r);

/** What run_command and run_tests work with; borrowed by the registry. */
struct shell_tools {
	struct executor *executor;		/* required */
	const struct strvec *test_command;	/* [pipeline] test_command; NULL or empty: detect */
	long test_timeout_seconds;		/* 0: the executor's default */
	size_t head_bytes, tail_bytes;		/* per stream shown to the model; 0: defaults */
	shell_command_fn on_command;		/* may be NULL */
	void *data;
	/* The last run_tests outcome (owned here; NULL until a run). */
	struct verify_result *last_tests;
	/* test_command came from an untrusted project file: not approved by being configured */
	int test_command_untrusted;
};

/** Default bytes of the head and of the tail of each stream run_command shows. */
#define SHELL_HEAD_BYTES 8192
#define SHELL_TAIL_BYTES 8192

#define SHELL_TOOLS_INIT { NULL, NULL, 0, 0, 0, NULL, NULL, NULL }

/**
 * Register run_command and run_tests, bound to `st` (which must outlive
 * every dispatch). FX_EEXISTS when one is already registered.
 */
int tools_register_shell(struct tool_registry *reg, struct shell_tools *st);

/** Free `st->last_tests`; the rest is borrowed. */
void shell_tools_release(struct shell_tools *st);

#endif
