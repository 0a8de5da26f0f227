/* The configured MCP servers: start, describe, stop (see servers.h). */
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "mcp/servers.h"

void mcp_servers_init(struct mcp_servers *s)
{
	*s = (struct mcp_servers)MCP_SERVERS_INIT;
}

int mcp_servers_start(struct mcp_servers *s, const struct config *cfg, const char *log_dir,
		      const char *only, const volatile sig_atomic_t *cancel)
{
	size_t i;
	int started = 0;

	s->entries = xcalloc(cfg->mcp_servers_nr ? cfg->mcp_servers_nr : 1, sizeof(*s->entries));
	for (i = 0; i < cfg->mcp_servers_nr; i++) {
		const struct mcp_server_config *m = &cfg->mcp_servers[i];
		struct mcp_server_entry *e;
		struct mcp_start_opts o = { cfg->workspace, NULL, cancel };
		char *log = NULL;

		if (only && strcmp(only, m->name))
			continue;
		e = &s->entries[s->nr++];
		e->cfg = m;
		if (!m->enabled && !only) {
			e->skipped = xstrdup("enabled = false");
			continue;
		}
		if (log_dir && !*m->url) {
			log = xstrfmt("%s/mcp-%s.stderr", log_dir, m->name);
			o.stderr_log = log;
		}
		if (mcp_client_start(&e->client, m, &o) < 0)
			e->error = xstrdup(err_last());
		else
			started++;
		free(log);
	}
	return started;
}

json_t *mcp_servers_json(const struct mcp_servers *s, size_t i)
{
	const struct mcp_server_entry *e = &s->entries[i];
	const struct mcp_client *c = e->client;
	json_t *o = json_object(), *tools = json_array();
	size_t j;

	if (!o || !tools)
		die("out of memory");
	jsonx_set(o, "name", jsonx_string(e->cfg->name));
	jsonx_set(o, "transport", jsonx_string(*e->cfg->url ? "http" : "stdio"));
	jsonx_set(o, "state", jsonx_string(c ? (c->state == MCP_READY ? "ready" : "broken")
					     : e->skipped ? "skipped" : "failed"));
	for (j = 0; c && j < c->tools_nr; j++)
		if (mcp_tool_enabled(e->cfg, c->tools[j].name))
			json_array_append_new(tools, jsonx_string(c->tools[j].name));
	jsonx_set(o, "tools", tools);
	jsonx_set(o, "protocol", c && c->protocol_version ? jsonx_string(c->protocol_version)
							  : json_null());
	jsonx_set(o, "server", c && c->server_name ? jsonx_string(c->server_name) : json_null());
	jsonx_set(o, "handshake_ms", c ? json_real(c->handshake_ms) : json_null());
	jsonx_set(o, "error", e->error ? jsonx_string(e->error) : e->skipped ?
		  jsonx_string(e->skipped) : c && c->error ? jsonx_string(c->error) : json_null());
	return o;
}

void mcp_servers_release(struct mcp_servers *s)
{
	size_t i;

	for (i = 0; i < s->nr; i++) {
		mcp_client_free(s->entries[i].client);
		free(s->entries[i].error);
		free(s->entries[i].skipped);
	}
	free(s->entries);
	mcp_servers_init(s);
}
