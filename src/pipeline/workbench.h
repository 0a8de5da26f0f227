#ifndef FX_PIPELINE_WORKBENCH_H
#define FX_PIPELINE_WORKBENCH_H

/*
 * What agents work with, the same for a run (pipeline.c) and an
 * interactive session (chat.c): the executor (policy, sandbox; approvals
 * by the front's approver), the tool registry (built-in, shell, role and MCP tools, and
 * repo_map), the tool context on the workspace, the user's hooks, and the
 * repository map with a second, read-only executor for its ctags.
 *
 * What happens in it is recorded by the caller's recorder
 * (pipeline/recorder.h): its commands, hook runs and MCP servers are
 * events, and the tools' change hooks are the recorder's.
 *
 * The caller:
 *   1. workbench_init() (workbench_release() is safe from then on);
 *   2. workbench_open(); then sets what is its own: a prefetch of the map;
 *   3. workbench_release().
 */

#include <jansson.h>
#include <signal.h>

#include "config/config.h"
#include "context/context.h"
#include "pipeline/hooks.h"
#include "pipeline/recorder.h"
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
	struct recorder *rec;		/* the opts' (borrowed) */
	const struct config *cfg;	/* the opts' (borrowed) */
	int instructions_warned;	/* a refused instruction file was recorded */
};

struct workbench_opts {
	const struct config *cfg;	/* required; cfg->workspace is the project */
	const char *log_dir;		/* where MCP servers' stderr goes: the run or session folder */
	const char *id;			/* the run or session id hooks are told (outlives the bench) */
	const volatile sig_atomic_t *cancel;	/* stops commands, MCP calls, ctags */
	/*
	 * Required: records every command, hook run and MCP server started,
	 * gets the map (rec->map) and is the tools' change hooks
	 * (tctx.hooks); it outlives the bench.
	 */
	struct recorder *recorder;
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

/**
 * Append the project's instruction files ([context] instructions, read
 * beneath the workspace without following a link, 32 KiB each) as
 * "## NAME" sections, for a system prompt. A file that cannot be read is
 * a "warning" event, once per bench.
 */
void workbench_instructions(struct workbench *wb, struct buf *out);

/**
 * Append the repository map for `request`, centred also on `files` (may
 * be NULL), as a "## Repository map" section ([context] map_tokens; 0:
 * nothing). A tree that cannot be mapped only loses the map.
 */
void workbench_map(struct workbench *wb, struct buf *out, const char *request,
		   const struct strvec *files);

/** Release what is open; `wb` is left as after workbench_init(). */
void workbench_release(struct workbench *wb);

#endif
