#ifndef FX_MCP_SERVERS_H
#define FX_MCP_SERVERS_H

/*
 * The set of MCP servers a configuration names, and their lifecycle:
 * which may start, starting them, what each one is (for a run's events,
 * `forgex mcp list`, `forgex doctor`), stopping them. What the model sees
 * of their tools is tools/mcp_tools.h, on top of this.
 *
 * The caller:
 *   1. mcp_servers_init();
 *   2. mcp_servers_start() with the configuration: it starts every
 *      enabled server (or the one named); one that fails is recorded in
 *      its entry's `error`, not fatal;
 *   3. uses entries[i].client (see mcp/mcp.h);
 *   4. mcp_servers_release() stops them.
 */

#include <signal.h>
#include <jansson.h>

#include "config/config.h"
#include "mcp/mcp.h"

struct mcp_server_entry {
	const struct mcp_server_config *cfg;	/* borrowed from the configuration */
	struct mcp_client *client;	/* NULL when it did not start */
	char *error;			/* why not (NULL when it started or was not tried) */
	char *skipped;			/* why it was not started at all (enabled = false) */
};

struct mcp_servers {
	struct mcp_server_entry *entries;	/* in the configuration's order */
	size_t nr;
};

#define MCP_SERVERS_INIT { NULL, 0 }

void mcp_servers_init(struct mcp_servers *s);

/**
 * Start the servers of `cfg` (enabled ones; `only`: just the server of
 * that name, even when disabled), in cfg->workspace. `log_dir`: where each
 * stdio server's stderr goes (`mcp-NAME.stderr`; NULL: kept only in
 * memory). `cancel` (may be NULL) cuts the handshakes short. Blocks until
 * each has answered or failed (startup_timeout_seconds). Returns the
 * number of servers that started; failures are in the entries.
 */
int mcp_servers_start(struct mcp_servers *s, const struct config *cfg, const char *log_dir,
		      const char *only, const volatile sig_atomic_t *cancel);

/**
 * The event a run records for server `i`: {name, transport ("stdio" |
 * "http"), state ("ready" | "broken" | "failed" | "skipped"), tools
 * [names the configuration lets through], protocol, server,
 * handshake_ms, error}. A new reference.
 */
json_t *mcp_servers_json(const struct mcp_servers *s, size_t i);

/** Stop every server and free the entries; `s` is empty again. */
void mcp_servers_release(struct mcp_servers *s);

#endif
