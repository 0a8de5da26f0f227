/*
 * The MCP client: the lifecycle (initialize, notifications/initialized),
 * tools/list with pagination, tools/call with timeouts and cancellation,
 * and the server's own messages while we wait (see mcp.h).
 */
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "mcp/mcp.h"
#include "mcp/transport.h"

/* Revisions whose tools API is the one used here, newest first. */
static const char *const known_versions[] = {
	"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", NULL,
};

/* JSON-RPC: method not found */
#define RPC_METHOD_NOT_FOUND -32601
/* time given to a notification (cancelled, initialized) */
#define NOTIFY_MS 2000

static void set_broken(struct mcp_client *c)
{
	c->state = MCP_BROKEN;
	free(c->error);
	c->error = xstrdup(err_last());
}

static int send_json(struct mcp_client *c, json_t *msg, int64_t deadline,
		     const volatile sig_atomic_t *cancel)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	int ret;

	if (!s)
		die("out of memory");
	ret = c->tr->ops->send(c->tr, s, strlen(s), deadline, cancel);
	free(s);
	return ret;
}

static int notify(struct mcp_client *c, const char *method, json_t *params, int64_t deadline)
{
	json_t *msg = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method);
	int ret;

	if (!msg)
		die("out of memory");
	if (params)
		json_object_set_new(msg, "params", params);
	ret = send_json(c, msg, deadline, NULL);
	json_decref(msg);
	return ret;
}

/* Answer a request the server sent us while we wait. */
static int answer_server(struct mcp_client *c, json_t *req, int64_t deadline)
{
	const char *method = jsonx_str(req, "method");
	json_t *id = json_object_get(req, "id"), *msg;
	int ret;

	if (method && !strcmp(method, "ping")) {
		msg = json_pack("{s:s, s:O, s:{}}", "jsonrpc", "2.0", "id", id, "result");
	} else {
		/* no sampling, roots or elicitation: the model is forgex's to drive */
		msg = json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error",
				"code", RPC_METHOD_NOT_FOUND, "message",
				"forgex does not offer this to MCP servers");
	}
	if (!msg)
		die("out of memory");
	ret = send_json(c, msg, deadline, NULL);
	json_decref(msg);
	return ret;
}

static int same_id(const json_t *a, long want)
{
	return json_is_integer(a) && json_integer_value(a) == want;
}

/*
 * Send the request `method`(`params`, stolen) and wait for its answer
 * until `deadline`. On success `*out` is the `result` (new reference).
 */
static int request(json_t **out, struct mcp_client *c, const char *method, json_t *params,
		   int64_t deadline, const volatile sig_atomic_t *cancel)
{
	long id = ++c->next_id;
	json_t *msg = json_pack("{s:s, s:I, s:s}", "jsonrpc", "2.0", "id", (json_int_t)id,
				"method", method);
	struct buf line = BUF_INIT;
	int ret;

	if (!msg)
		die("out of memory");
	if (params)
		json_object_set_new(msg, "params", params);
	ret = send_json(c, msg, deadline, cancel);
	json_decref(msg);
	if (ret < 0)
		goto fail;
	for (;;) {
		json_error_t jerr;
		json_t *in, *rid;

		ret = c->tr->ops->recv(c->tr, &line, deadline, cancel);
		if (ret < 0)
			goto fail;
		if (ret == 0) {
			ret = err_set(FX_EPARSE, "MCP server '%s' sent no answer to %s", c->name, method);
			goto fail;
		}
		in = json_loadb(line.buf, line.len, 0, &jerr);
		if (!in || !json_is_object(in)) {
			struct buf shown = BUF_INIT;
			size_t i;

			for (i = 0; i < line.len && i < 120; i++)
				buf_addch(&shown, (unsigned char)line.buf[i] < 0x20 ? '?' : line.buf[i]);
			ret = err_set(FX_EPARSE, "MCP server '%s' sent malformed JSON-RPC (%s): %s%s",
				      c->name, in ? "not an object" : jerr.text, shown.buf,
				      line.len > 120 ? "..." : "");
			buf_release(&shown);
			json_decref(in);
			goto fail;
		}
		rid = json_object_get(in, "id");
		if (json_is_string(json_object_get(in, "method"))) {
			const char *m = jsonx_str(in, "method");

			if (rid && !json_is_null(rid))
				ret = answer_server(c, in, deadline);
			else if (!strcmp(m, "notifications/tools/list_changed"))
				c->tools_changed = 1;
			json_decref(in);
			if (ret < 0)
				goto fail;
			continue;
		}
		if (!json_object_get(in, "result") && !json_object_get(in, "error")) {
			json_decref(in);
			ret = err_set(FX_EPARSE, "MCP server '%s' sent a message that is neither a "
				      "request, a notification nor an answer", c->name);
			goto fail;
		}
		if (!same_id(rid, id)) {
			json_decref(in);	/* a late answer to a request we gave up on */
			continue;
		}
		if (json_object_get(in, "error")) {
			json_t *e = json_object_get(in, "error");
			const char *m = jsonx_str(e, "message");

			ret = err_set(FX_ERROR, "MCP server '%s': %s failed: %s (code %lld)", c->name,
				      method, m ? m : "no message",
				      (long long)jsonx_int(e, "code", 0));
			json_decref(in);
			buf_release(&line);
			return ret;
		}
		*out = json_incref(json_object_get(in, "result"));
		json_decref(in);
		buf_release(&line);
		return 0;
	}
fail:
	if ((ret == FX_ETIMEOUT || ret == FX_EINTR) && strcmp(method, "initialize")) {
		/* tell the server to stop; its late answer will be ignored */
		char *saved = xstrdup(err_last());
		json_t *p = json_pack("{s:I, s:s}", "requestId", (json_int_t)id, "reason",
				      ret == FX_ETIMEOUT ? "timed out" : "cancelled by the user");

		if (notify(c, "notifications/cancelled", p, clk_mono_ms() + NOTIFY_MS) < 0 &&
		    err_last_code() == FX_EOS)
			set_broken(c);
		err_set(ret, "%s", saved);
		free(saved);
	} else if (ret == FX_EOS || ret == FX_EPARSE || ret == FX_ELIMIT) {
		set_broken(c);
	}
	buf_release(&line);
	return ret;
}

static void tools_clear(struct mcp_client *c)
{
	size_t i;

	for (i = 0; i < c->tools_nr; i++) {
		free(c->tools[i].name);
		free(c->tools[i].title);
		free(c->tools[i].description);
		json_decref(c->tools[i].input_schema);
	}
	c->tools_nr = 0;
}

static void add_tool(struct mcp_client *c, const json_t *t)
{
	const char *name = jsonx_str(t, "name"), *desc = jsonx_str(t, "description");
	const char *title = jsonx_str(t, "title");
	json_t *schema = json_object_get(t, "inputSchema"), *ann = json_object_get(t, "annotations");
	struct mcp_tool *m;
	size_t i;

	if (!name || !*name || c->tools_nr >= MCP_TOOLS_MAX)
		return;
	for (i = 0; i < c->tools_nr; i++)
		if (!strcmp(c->tools[i].name, name))
			return;	/* the first of two with one name wins */
	ALLOC_GROW(c->tools, c->tools_nr + 1, c->tools_alloc);
	m = &c->tools[c->tools_nr++];
	m->name = xstrdup(name);
	m->title = title ? xstrdup(title) : NULL;
	m->description = xstrdup(desc ? desc : "");
	m->input_schema = json_is_object(schema) ? json_deep_copy(schema)
						 : json_pack("{s:s}", "type", "object");
	if (!m->input_schema)
		die("out of memory");
	m->read_only = json_is_object(ann) && jsonx_bool(ann, "readOnlyHint", 0);
	m->destructive = !json_is_object(ann) || jsonx_bool(ann, "destructiveHint", 1);
}

static int list_tools(struct mcp_client *c, int64_t deadline)
{
	char *cursor = NULL;
	int pages, ret = 0;

	tools_clear(c);
	c->tools_changed = 0;
	for (pages = 0; pages < MCP_PAGES_MAX; pages++) {
		json_t *params = cursor ? json_pack("{s:s}", "cursor", cursor) : NULL, *res = NULL;
		json_t *list, *t;
		const char *next;
		size_t i;

		ret = request(&res, c, "tools/list", params, deadline, NULL);
		if (ret < 0)
			break;
		list = json_object_get(res, "tools");
		if (!json_is_array(list)) {
			json_decref(res);
			ret = err_set(FX_EPARSE, "MCP server '%s': tools/list answer has no tools array",
				      c->name);
			set_broken(c);
			break;
		}
		json_array_foreach(list, i, t)
			add_tool(c, t);
		next = jsonx_str(res, "nextCursor");
		free(cursor);
		cursor = next && *next ? xstrdup(next) : NULL;
		json_decref(res);
		if (!cursor)
			break;
	}
	free(cursor);
	return ret;
}

int mcp_client_refresh(struct mcp_client *c)
{
	if (c->state != MCP_READY)
		return err_set(FX_EOS, "MCP server '%s' is not running: %s", c->name,
			       c->error ? c->error : "stopped");
	if (!c->tools_changed)
		return 0;
	return list_tools(c, clk_mono_ms() + c->cfg->startup_timeout_seconds * 1000);
}

int mcp_client_start(struct mcp_client **out, const struct mcp_server_config *cfg,
		     const struct mcp_start_opts *opts)
{
	struct mcp_client *c = xcalloc(1, sizeof(*c));
	int64_t t0 = clk_mono_ms(), deadline = t0 + cfg->startup_timeout_seconds * 1000;
	json_t *params, *res = NULL, *info, *caps;
	const char *version;
	int ret, i;

	c->name = xstrdup(cfg->name);
	c->cfg = cfg;
	ret = *cfg->url ? mcp_http_open(&c->tr, cfg) : mcp_stdio_open(&c->tr, cfg, opts);
	if (ret < 0)
		goto fail;
	params = json_pack("{s:s, s:{}, s:{s:s, s:s}}", "protocolVersion", MCP_PROTOCOL_VERSION,
			   "capabilities", "clientInfo", "name", "forgex", "version", FX_VERSION);
	if (!params)
		die("out of memory");
	ret = request(&res, c, "initialize", params, deadline, opts->cancel);
	if (ret == FX_ETIMEOUT)
		err_set(FX_ETIMEOUT, "MCP server '%s' did not finish the initialize handshake in %ld s",
			cfg->name, cfg->startup_timeout_seconds);
	if (ret < 0)
		goto fail;
	version = jsonx_str(res, "protocolVersion");
	for (i = 0; version && known_versions[i]; i++)
		if (!strcmp(version, known_versions[i]))
			break;
	if (!version || !known_versions[i]) {
		ret = err_set(FX_EPARSE, "MCP server '%s' speaks protocol revision %s; forgex speaks %s "
			      "to 2024-11-05", cfg->name, version ? version : "(none given)",
			      MCP_PROTOCOL_VERSION);
		goto fail;
	}
	c->protocol_version = xstrdup(version);
	c->tr->ops->set_version(c->tr, version);
	info = json_object_get(res, "serverInfo");
	c->server_name = jsonx_str(info, "name") ? xstrdup(jsonx_str(info, "name")) : NULL;
	c->server_version = jsonx_str(info, "version") ? xstrdup(jsonx_str(info, "version")) : NULL;
	c->instructions = jsonx_str(res, "instructions") ? xstrdup(jsonx_str(res, "instructions")) : NULL;
	caps = json_object_get(res, "capabilities");
	ret = notify(c, "notifications/initialized", NULL, deadline);
	if (ret < 0)
		goto fail;
	c->state = MCP_READY;
	if (json_is_object(json_object_get(caps, "tools"))) {
		ret = list_tools(c, deadline);
		if (ret == FX_ETIMEOUT)
			err_set(FX_ETIMEOUT, "MCP server '%s' did not list its tools within %ld s",
				cfg->name, cfg->startup_timeout_seconds);
		if (ret < 0)
			goto fail;
	}
	c->handshake_ms = (double)(clk_mono_ms() - t0);
	json_decref(res);
	*out = c;
	return 0;
fail:
	json_decref(res);
	{
		char *saved = xstrdup(err_last());

		mcp_client_free(c);
		err_set(ret, "%s", saved);
		free(saved);
	}
	return ret;
}

int mcp_client_call(json_t **out, struct mcp_client *c, const char *tool, json_t *arguments,
		    int timeout_ms, const volatile sig_atomic_t *cancel)
{
	json_t *params, *res = NULL;
	int ret;

	if (c->state != MCP_READY)
		return err_set(FX_EOS, "MCP server '%s' is not running: %s", c->name,
			       c->error ? c->error : "stopped");
	if (timeout_ms <= 0)
		timeout_ms = (int)(c->cfg->tool_timeout_seconds * 1000);
	params = json_pack("{s:s, s:o}", "name", tool, "arguments",
			   arguments ? json_incref(arguments) : json_object());
	if (!params)
		die("out of memory");
	ret = request(&res, c, "tools/call", params, clk_mono_ms() + timeout_ms, cancel);
	if (ret == FX_ETIMEOUT)
		return err_set(FX_ETIMEOUT, "MCP tool %s of server '%s' did not answer within %d s "
			       "(tool_timeout_seconds); the call was cancelled", tool, c->name,
			       (timeout_ms + 999) / 1000);
	if (ret < 0)
		return ret;
	if (!json_is_object(res)) {
		json_decref(res);
		return err_set(FX_EPARSE, "MCP server '%s': tools/call answer is not an object", c->name);
	}
	*out = res;
	return 0;
}

int mcp_client_ping(struct mcp_client *c, int timeout_ms)
{
	json_t *res = NULL;
	int ret;

	if (c->state != MCP_READY)
		return err_set(FX_EOS, "MCP server '%s' is not running", c->name);
	ret = request(&res, c, "ping", NULL, clk_mono_ms() + timeout_ms, NULL);
	json_decref(res);
	return ret;
}

const struct mcp_tool *mcp_client_tool(const struct mcp_client *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->tools_nr; i++)
		if (!strcmp(c->tools[i].name, name))
			return &c->tools[i];
	return NULL;
}

int mcp_tool_enabled(const struct mcp_server_config *cfg, const char *tool)
{
	if (cfg->enabled_tools.nr && strvec_find(&cfg->enabled_tools, tool) < 0)
		return 0;
	return strvec_find(&cfg->disabled_tools, tool) < 0;
}

static void describe_size(struct buf *out, const char *b64)
{
	size_t n = b64 ? strlen(b64) : 0;

	buf_addf(out, "%zu bytes", n / 4 * 3);
}

int mcp_result_text(struct buf *out, const json_t *result)
{
	json_t *content = json_object_get(result, "content"), *item;
	json_t *structured = json_object_get(result, "structuredContent");
	size_t i, start = out->len;

	json_array_foreach(content, i, item) {
		const char *type = jsonx_str(item, "type"), *mime = jsonx_str(item, "mimeType");

		if (out->len > start && out->buf[out->len - 1] != '\n')
			buf_addch(out, '\n');
		if (!type) {
			buf_addstr(out, "[content without a type]");
		} else if (!strcmp(type, "text")) {
			const char *t = jsonx_str(item, "text");

			buf_addstr(out, t ? t : "");
		} else if (!strcmp(type, "image") || !strcmp(type, "audio")) {
			buf_addf(out, "[%s: %s, ", type, mime ? mime : "unknown type");
			describe_size(out, jsonx_str(item, "data"));
			buf_addstr(out, "; not shown to the model]");
		} else if (!strcmp(type, "resource")) {
			json_t *r = json_object_get(item, "resource");
			const char *uri = jsonx_str(r, "uri"), *text = jsonx_str(r, "text");
			const char *rm = jsonx_str(r, "mimeType");

			buf_addf(out, "[resource %s%s%s%s]", uri ? uri : "(no uri)", rm ? " (" : "",
				 rm ? rm : "", rm ? ")" : "");
			if (text) {
				buf_addch(out, '\n');
				buf_addstr(out, text);
			} else {
				buf_addstr(out, " binary, ");
				describe_size(out, jsonx_str(r, "blob"));
			}
		} else if (!strcmp(type, "resource_link")) {
			const char *uri = jsonx_str(item, "uri"), *name = jsonx_str(item, "name");

			buf_addf(out, "[resource link: %s%s%s]", uri ? uri : "(no uri)",
				 name ? " " : "", name ? name : "");
		} else {
			buf_addf(out, "[content of type %s, not shown]", type);
		}
	}
	if (out->len == start && structured) {
		char *s = json_dumps(structured, JSON_COMPACT);

		if (s)
			buf_addstr(out, s);
		free(s);
	}
	if (out->len == start)
		buf_addstr(out, "(no content)");
	return jsonx_bool(result, "isError", 0);
}

void mcp_client_free(struct mcp_client *c)
{
	if (!c)
		return;
	if (c->tr)
		c->tr->ops->close(c->tr);
	tools_clear(c);
	free(c->tools);
	free(c->name);
	free(c->error);
	free(c->protocol_version);
	free(c->server_name);
	free(c->server_version);
	free(c->instructions);
	free(c);
}
