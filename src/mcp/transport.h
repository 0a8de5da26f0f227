#ifndef FX_MCP_TRANSPORT_H
#define FX_MCP_TRANSPORT_H

/*
 * What the MCP client needs of a transport (private to src/mcp/). A
 * transport moves whole JSON-RPC messages; the client matches answers to
 * requests. Deadlines are CLOCK_MONOTONIC milliseconds (clk_mono_ms() of base/clock.h).
 *
 *   open()  -> send() / recv() ... -> close()
 *
 * send() hands one message to the server. For HTTP it is the whole POST:
 * the messages of the answer (a JSON body or an SSE stream) are queued for
 * recv(). recv() returns the next message: 1 and the text in `msg`, 0 when
 * nothing more can arrive for now (HTTP: the queue is empty), FX_ETIMEOUT,
 * FX_EINTR (cancelled), FX_EOS (the server is gone), FX_ELIMIT (a message
 * over MCP_MESSAGE_MAX).
 */

#include <signal.h>
#include <stdint.h>

#include "base/buf.h"
#include "config/config.h"
#include "mcp/mcp.h"

struct mcp_transport_ops {
	int (*send)(struct mcp_transport *t, const char *msg, size_t len, int64_t deadline,
		    const volatile sig_atomic_t *cancel);
	int (*recv)(struct mcp_transport *t, struct buf *msg, int64_t deadline,
		    const volatile sig_atomic_t *cancel);
	/* the negotiated protocol version, for transports that send it back */
	void (*set_version)(struct mcp_transport *t, const char *version);
	/* the server's recent stderr, for messages (may append nothing) */
	void (*describe_exit)(struct mcp_transport *t, struct buf *out);
	void (*close)(struct mcp_transport *t);
};

struct mcp_transport {
	const struct mcp_transport_ops *ops;
	const char *server;		/* for messages */
};

/** A stdio transport: start cfg->command in the workspace. */
int mcp_stdio_open(struct mcp_transport **out, const struct mcp_server_config *cfg,
		   const struct mcp_start_opts *opts);

/** A Streamable HTTP transport for cfg->url. */
int mcp_http_open(struct mcp_transport **out, const struct mcp_server_config *cfg);

#endif
