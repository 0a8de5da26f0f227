/*
 * MCP servers' tools as registry tools (see mcp_tools.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "base/path.h"
#include "sandbox/approval.h"
#include "tools/mcp_tools.h"

/* what a person is shown of the arguments, and the model of a description */
#define SHOWN_ARGS_MAX 2000
#define DESCRIPTION_MAX 2000
#define NAME_MAX_LEN 64

struct mcp_binding {
	struct mcp_set *set;
	size_t server;			/* index into set->servers.entries */
	char *tool;			/* the server's name for it */
	char *name;			/* the registry's */
	int gone;			/* the server stopped offering it */
};

void mcp_set_init(struct mcp_set *set)
{
	*set = (struct mcp_set)MCP_SET_INIT;
}

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

char *mcp_tool_registry_name(const char *server, const char *tool)
{
	struct buf b = BUF_INIT;
	const char *p;

	buf_addf(&b, "%s__", server);
	for (p = tool; *p; p++) {
		char ch = *p;

		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '_' || ch == '-'))
			ch = '_';
		buf_addch(&b, ch);
	}
	if (b.len > NAME_MAX_LEN) {
		/* cut, and keep two long names apart by a hash of the whole */
		char *whole = xstrfmt("%s__%s", server, tool);

		buf_setlen(&b, NAME_MAX_LEN - 9);
		buf_addf(&b, "_%08x", fnv1a(whole));
		free(whole);
	}
	return buf_detach(&b, NULL);
}

int mcp_set_start(struct mcp_set *set, const struct config *cfg, const char *log_dir, const char *only,
		  const volatile sig_atomic_t *cancel)
{
	set->cancel = cancel;
	if (approval_mode_parse(&set->mode, cfg->permissions.mode) < 0)
		set->mode = APPROVAL_ASK;
	return mcp_servers_start(&set->servers, cfg, log_dir, only, cancel);
}

static int mcp_tools_call(struct tool_ctx *ctx, const json_t *args, struct buf *result);

static int add_binding(struct tool_registry *reg, struct mcp_set *set, size_t server,
		       const struct mcp_tool *t, struct buf *added)
{
	const struct mcp_server_config *m = set->servers.entries[server].cfg;
	struct mcp_binding *b;
	struct tool_def def;
	struct buf desc = BUF_INIT;
	char *schema;
	unsigned roles = 0;
	size_t i;
	int ret;

	if (!mcp_tool_enabled(m, t->name))
		return 0;
	if (m->roles.nr) {
		for (i = 0; i < m->roles.nr; i++)
			roles |= TOOL_ROLE(config_role_from_name(m->roles.v[i]));
	} else {
		roles = TOOL_ROLE(ROLE_BUILDER) | TOOL_ROLE(ROLE_EXPERT_CODER);
		if (t->read_only)
			roles |= TOOL_ROLE(ROLE_ARCHITECT) | TOOL_ROLE(ROLE_SUPERVISOR);
	}
	b = xcalloc(1, sizeof(*b));
	b->set = set;
	b->server = server;
	b->tool = xstrdup(t->name);
	b->name = mcp_tool_registry_name(m->name, t->name);
	buf_addf(&desc, "[MCP server %s] ", m->name);
	if (*t->description)
		buf_add(&desc, t->description, strlen(t->description) > DESCRIPTION_MAX ?
			DESCRIPTION_MAX : strlen(t->description));
	else
		buf_addstr(&desc, t->title ? t->title : t->name);
	schema = json_dumps(t->input_schema, JSON_COMPACT);
	if (!schema)
		die("out of memory");
	memset(&def, 0, sizeof(def));
	def.name = b->name;
	def.description = desc.buf;
	def.parameters = schema;
	def.needs = 0;
	def.flags = TOOL_OPEN_SCHEMA;
	def.fn = mcp_tools_call;
	def.data = b;
	def.roles = roles;
	ret = registry_add(reg, &def);
	free(schema);
	buf_release(&desc);
	if (ret < 0) {
		/* a clash with a built-in or another server's tool: keep the first */
		free(b->tool);
		free(b->name);
		free(b);
		return ret == FX_EEXISTS ? 0 : ret;
	}
	ALLOC_GROW(set->bindings, set->bindings_nr + 1, set->bindings_alloc);
	set->bindings[set->bindings_nr++] = b;
	if (added)
		buf_addf(added, "%s%s", added->len ? ", " : "", b->name);
	return 0;
}

int tools_register_mcp(struct tool_registry *reg, struct mcp_set *set)
{
	size_t i, j;
	int ret;

	set->reg = reg;
	for (i = 0; i < set->servers.nr; i++) {
		struct mcp_client *c = set->servers.entries[i].client;

		if (!c)
			continue;
		for (j = 0; j < c->tools_nr; j++) {
			ret = add_binding(reg, set, i, &c->tools[j], NULL);
			if (ret < 0)
				return err_prefix(ret, "MCP server '%s'", c->name);
		}
	}
	return 0;
}

static struct mcp_binding *find_binding(struct mcp_set *set, size_t server, const char *tool)
{
	size_t i;

	for (i = 0; i < set->bindings_nr; i++)
		if (set->bindings[i]->server == server && !strcmp(set->bindings[i]->tool, tool))
			return set->bindings[i];
	return NULL;
}

/*
 * The server said its tools changed: fetch the list, mark the tools that
 * went, add the new ones, and tell the model in `note`.
 */
static void sync_tools(struct mcp_set *set, size_t server, struct buf *note)
{
	struct mcp_client *c = set->servers.entries[server].client;
	struct buf added = BUF_INIT, removed = BUF_INIT;
	size_t i;

	if (mcp_client_refresh(c) < 0) {
		buf_addf(note, "\n(the server's tool list changed, but fetching it failed: %s)",
			 err_last());
		return;
	}
	for (i = 0; i < set->bindings_nr; i++) {
		struct mcp_binding *b = set->bindings[i];
		int now = b->server == server && !mcp_client_tool(c, b->tool);

		if (now && !b->gone)
			buf_addf(&removed, "%s%s", removed.len ? ", " : "", b->name);
		if (b->server == server)
			b->gone = now;
	}
	for (i = 0; i < c->tools_nr; i++)
		if (!find_binding(set, server, c->tools[i].name) && set->reg)
			add_binding(set->reg, set, server, &c->tools[i], &added);
	if (added.len || removed.len) {
		buf_addf(note, "\n(MCP server %s changed its tools:", c->name);
		if (added.len)
			buf_addf(note, " new: %s;", added.buf);
		if (removed.len)
			buf_addf(note, " removed: %s;", removed.buf);
		buf_setlen(note, note->len - 1);
		buf_addch(note, ')');
	}
	buf_release(&added);
	buf_release(&removed);
}

static int approve(struct mcp_set *set, const struct mcp_binding *b, const json_t *args)
{
	struct approval_answer a = APPROVAL_ANSWER_INIT;
	struct approval_request rq = { APPROVAL_MCP_TOOL, "every MCP tool call is approved", NULL,
				       0, NULL, 0, b->name, NULL, NULL };
	struct buf shown = BUF_INIT, what = BUF_INIT;
	char *aj;
	int answer;

	aj = json_dumps(args, JSON_COMPACT);
	buf_addf(&what, "the MCP tool %s (server %s)", b->tool,
		 set->servers.entries[b->server].cfg->name);
	buf_addstr(&shown, "arguments: ");
	if (aj && strlen(aj) > SHOWN_ARGS_MAX) {
		buf_add(&shown, aj, SHOWN_ARGS_MAX);
		buf_addf(&shown, "... (%zu bytes in all)", strlen(aj));
	} else {
		buf_addstr(&shown, aj ? aj : "{}");
	}
	free(aj);
	rq.what = what.buf;
	rq.shown = shown.buf;
	answer = approver_decide(set->approver, &a, set->mode, &rq);
	if (!answer && a.reason)
		err_set(FX_EDENIED, "the person said: \"%s\"", a.reason);
	else if (!answer && !*err_last())
		err_set(FX_EDENIED, "the person said no");
	approval_answer_release(&a);
	buf_release(&shown);
	buf_release(&what);
	return answer != 0;
}

static int mcp_tools_call(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	struct mcp_binding *b = tool_ctx_data(ctx);
	struct mcp_set *set = b->set;
	struct mcp_server_entry *e = &set->servers.entries[b->server];
	struct buf note = BUF_INIT;
	json_t *res = NULL;
	int ret, is_error;

	if (b->gone)
		return err_set(FX_ENOTFOUND, "MCP server %s no longer offers the tool %s", e->cfg->name,
			       b->tool);
	if (!e->client)
		return err_set(FX_EOS, "MCP server %s is not running: %s", e->cfg->name,
			       e->error ? e->error : "it did not start");
	err_clear();
	if (!approve(set, b, args)) {
		buf_addf(result, "refused: not approved: %s", err_last());
		return FX_EDENIED;
	}
	ret = mcp_client_call(&res, e->client, b->tool, (json_t *)args, 0, set->cancel);
	if (ret < 0) {
		if (e->client->state == MCP_BROKEN) {
			char *why = xstrdup(err_last());

			err_set(ret, "%s (the server is down for the rest of this run)", why);
			free(why);
		}
		return ret;
	}
	is_error = mcp_result_text(result, res);
	json_decref(res);
	if (e->client->tools_changed)
		sync_tools(set, b->server, &note);
	buf_addbuf(result, &note);
	buf_release(&note);
	return is_error ? FX_ERROR : 0;
}

void mcp_set_release(struct mcp_set *set)
{
	size_t i;

	mcp_servers_release(&set->servers);
	for (i = 0; i < set->bindings_nr; i++) {
		free(set->bindings[i]->tool);
		free(set->bindings[i]->name);
		free(set->bindings[i]);
	}
	free(set->bindings);
	mcp_set_init(set);
}
