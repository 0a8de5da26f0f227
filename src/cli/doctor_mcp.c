/*
 * forgex doctor: the "MCP servers" section. Each enabled server is
 * started, the handshake is run, and what it offers is shown; then it is
 * stopped. A server that does not start is a warning (the run goes on
 * without its tools), not a failure of the machine.
 */
#include "cli/doctor.h"
#include "mcp/servers.h"

void doctor_mcp(struct doctor *d, const struct config *cfg)
{
	struct mcp_servers set;
	size_t i;

	if (!cfg || !cfg->mcp_servers_nr)
		return;
	doctor_section(d, "MCP servers");
	mcp_servers_init(&set);
	mcp_servers_start(&set, cfg, NULL, NULL, NULL);
	for (i = 0; i < set.nr; i++) {
		const struct mcp_server_entry *e = &set.entries[i];
		const struct mcp_client *c = e->client;

		if (c)
			doctor_item(d, DOCTOR_OK, e->cfg->name, "%s: protocol %s, %zu tools, "
				    "handshake %.0f ms", *e->cfg->url ? e->cfg->url : e->cfg->command,
				    c->protocol_version, c->tools_nr, c->handshake_ms);
		else if (e->skipped)
			doctor_item(d, DOCTOR_INFO, e->cfg->name, "not started: %s", e->skipped);
		else
			doctor_item(d, DOCTOR_WARN, e->cfg->name, "%s", e->error ? e->error : "did not start");
	}
	mcp_servers_release(&set);
}
