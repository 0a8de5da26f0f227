#ifndef FX_TOOLS_MCP_TOOLS_H
#define FX_TOOLS_MCP_TOOLS_H

/*
 * MCP servers' tools in the tool registry: each tool TOOL of the server
 * NAME is the registry's tool NAME__TOOL (characters outside
 * [A-Za-z0-9_-] become '_'; a name over 64 characters is cut and given a
 * hash), with the server's JSON Schema as it is (TOOL_OPEN_SCHEMA), seen
 * by the roles [mcp_servers.NAME] roles names (default: builder and
 * expert_coder; every role for a tool marked readOnlyHint).
 *
 * Every call passes the approval mode of [permissions] mode, as a command
 * that needs approval does: safe refuses, auto runs, ask asks a person
 * through the set's approver (sandbox/approval.h) showing the server, the
 * tool and the arguments (y: this call, a: every call of this tool for the
 * rest of the run or session, n: no). The call is
 * bounded by tool_timeout_seconds and by the interrupt flag; the result
 * goes back as text (see mcp_result_text()); a server that crashed, hung
 * or spoke nonsense is a tool error, and the run goes on.
 *
 * The servers themselves (starting, describing, stopping) are
 * mcp/servers.h; a set holds them and adds what the registry needs.
 *
 * The caller:
 *   1. mcp_set_init(), sets `approver`, then mcp_set_start() with the configuration: it
 *      takes the approval mode and starts the servers (mcp_servers_start():
 *      one that fails is recorded in `servers.entries[i].error`, not
 *      fatal); mcp_servers_json() describes each for the run's events;
 *   2. tools_register_mcp() into the registry the agents use;
 *   3. ... agents run; a `notifications/tools/list_changed` from a server
 *      is honoured after the call that brought it: new tools are added to
 *      the registry (the result of that call names them), removed ones
 *      refuse;
 *   4. mcp_set_release() stops the servers.
 */

#include <signal.h>

#include "base/strvec.h"
#include "config/config.h"
#include "mcp/mcp.h"
#include "mcp/servers.h"
#include "sandbox/policy.h"
#include "tools/registry.h"

struct approver;
struct mcp_binding;

struct mcp_set {
	struct mcp_servers servers;	/* started by mcp_set_start() */
	enum approval_mode mode;
	struct approver *approver;	/* decides about each call (borrowed; NULL: nobody to ask) */
	const volatile sig_atomic_t *cancel;
	struct tool_registry *reg;	/* where tools_register_mcp() put the tools */
	struct mcp_binding **bindings;
	size_t bindings_nr, bindings_alloc;
};

#define MCP_SET_INIT { MCP_SERVERS_INIT, APPROVAL_ASK, NULL, NULL, NULL, NULL, 0, 0 }

void mcp_set_init(struct mcp_set *set);

/**
 * Take the approval mode of `cfg` ([permissions] mode) for the tool calls,
 * and start its servers into `set->servers` (see mcp_servers_start(): the
 * same `log_dir`, `only` and `cancel`; `cancel` also cuts tool calls
 * short). Returns the number of servers that started.
 */
int mcp_set_start(struct mcp_set *set, const struct config *cfg, const char *log_dir, const char *only,
		  const volatile sig_atomic_t *cancel);

/** Register the tools of every started server. */
int tools_register_mcp(struct tool_registry *reg, struct mcp_set *set);

/** The registry name of `tool` of `server` ("server__tool", sanitized). Caller frees. */
char *mcp_tool_registry_name(const char *server, const char *tool);

/** Forget the tools and stop the servers (mcp_servers_release()). */
void mcp_set_release(struct mcp_set *set);

#endif
