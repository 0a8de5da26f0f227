#ifndef FX_MCP_H
#define FX_MCP_H

/*
 * A Model Context Protocol client (revision 2025-11-25, and the earlier
 * revisions a server may answer with: 2025-06-18, 2025-03-26, 2024-11-05).
 *
 * One struct mcp_client talks to one server, over one of two transports:
 *   - stdio: the server is a child process; messages are JSON-RPC objects,
 *     one per line, on its standard input and output (a socket pair, so a
 *     server that dies never raises SIGPIPE in forgex); its standard error
 *     is appended (capped) to a log file and its last lines are kept for
 *     error messages;
 *   - Streamable HTTP: every message is a POST to the endpoint; the answer
 *     is one JSON object, or an SSE stream carrying the response and any
 *     notifications and requests before it; `Mcp-Session-Id` and
 *     `MCP-Protocol-Version` are sent back once the server has set them.
 *
 * The caller:
 *   1. mcp_client_start() with the server's configuration: it starts the
 *      process (or checks the URL), runs `initialize`, sends
 *      `notifications/initialized` and fetches the tool list (every page of
 *      `tools/list`), all within startup_timeout_seconds;
 *   2. reads client->tools; before each use, mcp_client_refresh() fetches
 *      the list again if the server sent `notifications/tools/list_changed`;
 *   3. mcp_client_call() for each tool call; it blocks until the answer, the
 *      tool timeout, or `cancel` (then `notifications/cancelled` is sent and
 *      a late answer is ignored);
 *   4. mcp_client_free(): closes the server's input, waits a moment, then
 *      SIGTERM and SIGKILL to its process group.
 *
 * While waiting for an answer the client answers the server's `ping`
 * requests and refuses every other request (sampling, roots, elicitation:
 * -32601). Nothing here prints; errors are err_set() messages naming the
 * server. Every message read is bounded (MCP_MESSAGE_MAX): a server that
 * floods gives an error, never unbounded memory.
 */

#include <signal.h>
#include <stddef.h>
#include <jansson.h>

#include "base/buf.h"
#include "base/strvec.h"
#include "config/config.h"

/** The protocol revision offered in `initialize`. */
#define MCP_PROTOCOL_VERSION "2025-11-25"
/** Largest message accepted from a server, in bytes. */
#define MCP_MESSAGE_MAX (8 * 1024 * 1024)
/** Most tools kept from one server; most `tools/list` pages followed. */
#define MCP_TOOLS_MAX 512
#define MCP_PAGES_MAX 64

enum mcp_state {
	MCP_STOPPED = 0,
	MCP_READY,		/* initialized; calls may be made */
	MCP_BROKEN,		/* the server died or spoke nonsense; see `error` */
};

/** One tool a server offers. */
struct mcp_tool {
	char *name;		/* as the server names it */
	char *title;		/* may be NULL */
	char *description;	/* "" when the server gave none */
	json_t *input_schema;	/* owned; an object schema */
	int read_only;		/* annotations.readOnlyHint */
	int destructive;	/* annotations.destructiveHint (default true per spec) */
};

struct mcp_transport;

struct mcp_client {
	char *name;			/* the server's configured name */
	const struct mcp_server_config *cfg;	/* borrowed */
	enum mcp_state state;
	char *error;			/* why it is broken (NULL otherwise) */

	char *protocol_version;		/* what the server agreed to */
	char *server_name, *server_version;	/* serverInfo */
	char *instructions;		/* may be NULL */
	int tools_changed;		/* notifications/tools/list_changed seen */

	struct mcp_tool *tools;
	size_t tools_nr, tools_alloc;

	struct mcp_transport *tr;	/* private */
	long next_id;
	double handshake_ms;
};

/** Where and how to start a server. */
struct mcp_start_opts {
	const char *workspace;		/* absolute; the stdio server's cwd is relative to it */
	const char *stderr_log;		/* stdio: append the server's stderr here (NULL: keep only the tail) */
	const volatile sig_atomic_t *cancel;	/* non-zero: give up waiting (may be NULL) */
};

/**
 * How stdio servers are started: 1 (the default) through forgex's own
 * `mcp __serve` (/proc/self/exe), which runs the server with the executor
 * in the sandbox, with a profile of its own (docs/internals/mcp.md); 0
 * directly, unconfined, for this folder's unit tests, whose binary is not
 * forgex. Either way the server gets PYTHONSAFEPATH=1.
 */
void mcp_stdio_set_sandboxed(int on);

/**
 * Start the server `cfg` describes and initialize it. On success `*out` is
 * a READY client (caller frees with mcp_client_free()). On failure
 * FX_ETIMEOUT (startup_timeout_seconds passed), FX_ENOTFOUND (the program
 * or its folder), FX_EPARSE (the server's answers), FX_EOS (it exited, or
 * the URL did not answer: the message holds its last stderr lines),
 * FX_EDENIED (HTTP 401/403), FX_EINVAL.
 */
int mcp_client_start(struct mcp_client **out, const struct mcp_server_config *cfg,
		     const struct mcp_start_opts *opts);

/** Fetch the tool list again when the server said it changed; 0 when nothing to do. */
int mcp_client_refresh(struct mcp_client *c);

/**
 * Call `tool` with `arguments` (an object; borrowed). `*out` is the
 * `result` object of the answer (new reference): {content: [...],
 * isError?, structuredContent?}. `timeout_ms` <= 0: the configured tool
 * timeout. FX_ETIMEOUT, FX_EINTR (cancelled), FX_EOS (the server died; the
 * client is BROKEN), FX_EPARSE (malformed answer; BROKEN), and for a
 * JSON-RPC error answer, FX_ERROR (its message in err_last()).
 */
int mcp_client_call(json_t **out, struct mcp_client *c, const char *tool, json_t *arguments,
		    int timeout_ms, const volatile sig_atomic_t *cancel);

/** Send `ping` and wait for the answer (at most `timeout_ms`). */
int mcp_client_ping(struct mcp_client *c, int timeout_ms);

/** The tool called `name`, or NULL. */
const struct mcp_tool *mcp_client_tool(const struct mcp_client *c, const char *name);

/** Whether `cfg`'s enabled_tools / disabled_tools let `tool` through. */
int mcp_tool_enabled(const struct mcp_server_config *cfg, const char *tool);

/**
 * Append the text a model should see for a tools/call `result`: text
 * contents as they are, images, audio and binary resources described (type,
 * MIME type, size), embedded text resources with their URI, resource links,
 * and structuredContent when there is no content. Returns 1 when the result
 * has isError set.
 */
int mcp_result_text(struct buf *out, const json_t *result);

/** Stop the server and free everything (accepts NULL). */
void mcp_client_free(struct mcp_client *c);

#endif
