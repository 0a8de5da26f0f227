#ifndef FX_PIPELINE_WORKBENCH_H
#define FX_PIPELINE_WORKBENCH_H

/*
 * What agents work with, the same for a run (pipeline.c) and an
 * interactive session (chat.c): the executor (policy, sandbox; approvals
 * by the front's approver), the tool registry (built-in, shell, role and MCP tools, and
 * repo_map), the tool context on the workspace, the user's hooks, and the
 * repository map with a second, read-only executor for its ctags.
 *
 * The caller:
 *   1. workbench_init() (workbench_release() is safe from then on);
 *   2. workbench_open(); then sets what is its own: the change hooks of
 *      its journal (wb->tctx.hooks), a prefetch of the map;
 *   3. workbench_release().
 */

#include <jansson.h>
#include <signal.h>

#include "config/config.h"
#include "context/context.h"
#include "pipeline/hooks.h"
#include "sandbox/executor.h"
#include "tools/mcp_tools.h"
#include "tools/registry.h"
#include "tools/shell.h"

struct workbench {
	struct executor ex;		/* the agents' commands and tests */
	struct executor map_ex;		/* a second ctags at a time while indexing; read-only */
	int have_ex, have_map_ex, have_tctx, have_ctx;
	struct shell_tools st;
	struct tool_registry reg;
	struct mcp_set mcp;
	struct hooks uhooks;		/* the user's [[hooks.EVENT]] */
	struct tool_ctx tctx;
	struct ctx_session ctx;		/* the repository map and repo_map */
};

struct workbench_opts {
	const struct config *cfg;	/* required; cfg->workspace is the project */
	const char *log_dir;		/* where MCP servers' stderr goes: the run or session folder */
	const char *id;			/* the run or session id hooks are told (outlives the bench) */
	const volatile sig_atomic_t *cancel;	/* stops commands, MCP calls, ctags */
	shell_command_fn on_command;	/* every command (may be NULL) */
	hooks_event_fn on_hook;		/* every hook run (may be NULL) */
	void (*on_mcp_server)(void *data, json_t *fields);	/* each MCP server started */
	void *data;			/* for the three */
	struct approver *approver;	/* decides for commands, hooks, MCP tools (borrowed; may be NULL) */
};

/** Make `wb` safe to release (nothing open). */
void workbench_init(struct workbench *wb);

/**
 * Open everything (see the overview). Returns 0, or a negative FX_E*
 * code (what was opened is released by workbench_release()). A map
 * executor that cannot start only costs the second ctags.
 */
int workbench_open(struct workbench *wb, const struct workbench_opts *o);

/** Release what is open; `wb` is left as after workbench_init(). */
void workbench_release(struct workbench *wb);

#endif
