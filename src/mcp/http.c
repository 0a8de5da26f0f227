/*
 * The Streamable HTTP transport: every message the client sends is one
 * POST to the endpoint, with `Accept: application/json, text/event-stream`.
 * The server answers a request with one JSON object (or a batch array), or
 * with an SSE stream whose `message` events carry JSON-RPC messages: the
 * response, and before it any notifications and requests of the server's.
 * A notification or response we send is answered 202 with no body.
 *
 * The `Mcp-Session-Id` a server sets on the initialize answer is sent on
 * every later request, as is `MCP-Protocol-Version` once negotiated. A 404
 * on a request carrying a session means the session is gone. The optional
 * GET stream for unsolicited server messages is not opened: everything
 * forgex needs arrives on the POST streams.
 *
 * Bodies are bounded: a JSON answer or one SSE event over MCP_MESSAGE_MAX
 * fails with FX_ELIMIT, as does a whole stream over STREAM_MAX.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/http.h"
#include "base/sse.h"
#include "base/strvec.h"
#include "mcp/transport.h"

#define STREAM_MAX (4 * (size_t)MCP_MESSAGE_MAX)
#define CONNECT_TIMEOUT_MS 10000

struct http_transport {
	struct mcp_transport base;
	char *url;
	char *token;			/* bearer_token_env's value, or NULL */
	char *session;			/* Mcp-Session-Id */
	char *version;			/* MCP-Protocol-Version */
	struct strvec queue;		/* messages received, not yet handed out */
	size_t next;			/* first message of `queue` not handed out */
};

/* One POST in flight. */
struct post {
	struct http_transport *t;
	struct buf body;		/* a JSON answer */
	struct sse_parser sse;
	int is_sse, kind_known;
	size_t total;
	char *session;			/* from the answer's headers */
	char content_type[128];
	const volatile sig_atomic_t *cancel;
	int failed;			/* an error was recorded in a callback */
};

static int queue_json(struct http_transport *t, const char *data, size_t len)
{
	json_error_t jerr;
	json_t *j = json_loadb(data, len, 0, &jerr);
	size_t i;

	if (!j)
		return err_set(FX_EPARSE, "MCP server '%s' sent malformed JSON: %s (line %d)",
			       t->base.server, jerr.text, jerr.line);
	if (json_is_array(j)) {
		json_t *e;

		json_array_foreach(j, i, e) {
			char *s = json_dumps(e, JSON_COMPACT);

			if (!s)
				die("out of memory");
			strvec_push(&t->queue, s);
			free(s);
		}
	} else {
		char *s = json_dumps(j, JSON_COMPACT);

		if (!s)
			die("out of memory");
		strvec_push(&t->queue, s);
		free(s);
	}
	json_decref(j);
	return 0;
}

static int on_event(void *data, const char *event, const char *payload, size_t len)
{
	struct post *p = data;

	/* the default event type is "message"; others are not JSON-RPC */
	if (*event && strcmp(event, "message"))
		return 0;
	if (!len)
		return 0;	/* a priming event with an id and no data */
	return queue_json(p->t, payload, len);
}

static size_t on_header(char *line, size_t size, size_t n, void *data)
{
	struct post *p = data;
	size_t len = size * n, k;

	if (len > 15 && !strncasecmp(line, "mcp-session-id:", 15)) {
		const char *v = line + 15;
		size_t vl = len - 15;

		while (vl && (*v == ' ' || *v == '\t'))
			v++, vl--;
		while (vl && isspace((unsigned char)v[vl - 1]))
			vl--;
		/* visible ASCII only, as the spec requires */
		for (k = 0; k < vl; k++)
			if (v[k] < 0x21 || v[k] > 0x7e)
				return len;
		free(p->session);
		p->session = vl ? xstrndup(v, vl) : NULL;
	} else if (len > 13 && !strncasecmp(line, "content-type:", 13)) {
		const char *v = line + 13;
		size_t vl = len - 13;

		while (vl && (*v == ' ' || *v == '\t'))
			v++, vl--;
		while (vl && isspace((unsigned char)v[vl - 1]))
			vl--;
		if (vl >= sizeof(p->content_type))
			vl = sizeof(p->content_type) - 1;
		memcpy(p->content_type, v, vl);
		p->content_type[vl] = '\0';
	}
	return len;
}

static size_t on_body(char *bytes, size_t size, size_t n, void *data)
{
	struct post *p = data;
	size_t len = size * n;

	if (!p->kind_known) {
		p->kind_known = 1;
		p->is_sse = !strncasecmp(p->content_type, "text/event-stream", 17);
		if (p->is_sse)
			sse_init(&p->sse, on_event, p, MCP_MESSAGE_MAX);
	}
	p->total += len;
	if (p->total > STREAM_MAX || (!p->is_sse && p->body.len + len > MCP_MESSAGE_MAX)) {
		err_set(FX_ELIMIT, "MCP server '%s' sent more than %zu MiB", p->t->base.server,
			(p->is_sse ? STREAM_MAX : MCP_MESSAGE_MAX) >> 20);
		p->failed = 1;
		return 0;
	}
	if (p->is_sse) {
		if (sse_feed(&p->sse, bytes, len) < 0) {
			p->failed = 1;
			return 0;
		}
	} else {
		buf_add(&p->body, bytes, len);
	}
	return len;
}

static int on_progress(void *data, curl_off_t dlt, curl_off_t dln, curl_off_t ult, curl_off_t uln)
{
	struct post *p = data;

	(void)dlt, (void)dln, (void)ult, (void)uln;
	return p->cancel && *p->cancel;
}

static int http_send(struct mcp_transport *base, const char *msg, size_t len, int64_t deadline,
		     const volatile sig_atomic_t *cancel)
{
	struct http_transport *t = (struct http_transport *)base;
	struct post p = { t, BUF_INIT, { 0 }, 0, 0, 0, NULL, "", cancel, 0 };
	struct curl_slist *h = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	char *hdr;
	CURL *c;
	CURLcode rc;
	long status = 0;
	int64_t left = deadline - clk_mono_ms();
	int ret = 0;

	if (left <= 0)
		return err_set(FX_ETIMEOUT, "MCP server '%s' did not answer in time", t->base.server);
	ret = http_easy_new(&c, t->url, errbuf);
	if (ret < 0)
		return err_prefix(ret, "MCP server '%s'", t->base.server);
	http_header_add(&h, "Content-Type: application/json");
	http_header_add(&h, "Accept: application/json, text/event-stream");
	if (t->session) {
		hdr = xstrfmt("Mcp-Session-Id: %s", t->session);
		http_header_add(&h, hdr);
		free(hdr);
	}
	if (t->version) {
		hdr = xstrfmt("MCP-Protocol-Version: %s", t->version);
		http_header_add(&h, hdr);
		free(hdr);
	}
	if (t->token)
		http_header_bearer(&h, t->token);
	http_header_add(&h, "Expect:");
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, msg);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &p);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &p);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, &p);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)left);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
			 (long)(left < CONNECT_TIMEOUT_MS ? left : CONNECT_TIMEOUT_MS));

	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (p.failed) {
		ret = err_last_code() < 0 ? err_last_code() : FX_EPARSE;
	} else if (rc == CURLE_ABORTED_BY_CALLBACK) {
		ret = err_set(FX_EINTR, "interrupted");
	} else if (rc == CURLE_OPERATION_TIMEDOUT) {
		ret = err_set(FX_ETIMEOUT, "MCP server '%s' did not answer in time", t->base.server);
	} else if (rc != CURLE_OK) {
		ret = err_set(FX_EOS, "MCP server '%s' at %s: %s", t->base.server, t->url,
			      http_strerror(rc, errbuf));
	} else if (status == 404 && t->session) {
		ret = err_set(FX_EOS, "MCP server '%s' ended the session (HTTP 404)", t->base.server);
	} else if (status == 401 || status == 403) {
		ret = err_set(FX_EDENIED, "MCP server '%s' refused the request (HTTP %ld)%s",
			      t->base.server, status,
			      t->token ? "" : "; set bearer_token_env if it needs a token");
	} else if (status < 200 || status >= 300) {
		struct buf snip = BUF_INIT;
		size_t i;

		for (i = 0; i < p.body.len && i < 200; i++)
			buf_addch(&snip, (unsigned char)p.body.buf[i] < 0x20 ? ' ' : p.body.buf[i]);
		ret = err_set(FX_EOS, "MCP server '%s' answered HTTP %ld%s%s", t->base.server, status,
			      snip.len ? ": " : "", snip.buf);
		buf_release(&snip);
	} else if (p.is_sse) {
		ret = sse_finish(&p.sse);
	} else if (p.body.len) {
		ret = queue_json(t, p.body.buf, p.body.len);
	}
	if (!ret && p.session && (!t->session || strcmp(t->session, p.session))) {
		free(t->session);
		t->session = p.session;
		p.session = NULL;
	}
	if (p.kind_known && p.is_sse)
		sse_release(&p.sse);
	buf_release(&p.body);
	free(p.session);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	return ret;
}

static int http_recv(struct mcp_transport *base, struct buf *msg, int64_t deadline,
		     const volatile sig_atomic_t *cancel)
{
	struct http_transport *t = (struct http_transport *)base;

	(void)deadline;
	(void)cancel;
	if (t->next >= t->queue.nr) {
		strvec_clear(&t->queue);
		t->next = 0;
		return 0;
	}
	buf_reset(msg);
	buf_addstr(msg, t->queue.v[t->next++]);
	return 1;
}

static void http_set_version(struct mcp_transport *base, const char *version)
{
	struct http_transport *t = (struct http_transport *)base;

	free(t->version);
	t->version = version ? xstrdup(version) : NULL;
}

static void http_describe_exit(struct mcp_transport *base, struct buf *out)
{
	(void)base;
	(void)out;
}

static void http_close(struct mcp_transport *base)
{
	struct http_transport *t = (struct http_transport *)base;

	/* A DELETE would end the session politely; servers expire it anyway. */
	free(t->url);
	if (t->token)
		explicit_bzero(t->token, strlen(t->token));
	free(t->token);
	free(t->session);
	free(t->version);
	strvec_clear(&t->queue);
	free(t);
}

static const struct mcp_transport_ops http_ops = {
	http_send, http_recv, http_set_version, http_describe_exit, http_close,
};

int mcp_http_open(struct mcp_transport **out, const struct mcp_server_config *cfg)
{
	struct http_transport *t;
	const char *token = NULL;

	if (cfg->bearer_token_env && *cfg->bearer_token_env) {
		token = getenv(cfg->bearer_token_env);
		if (!token || !*token)
			return err_set(FX_EINVAL, "MCP server '%s': $%s (bearer_token_env) is not set",
				       cfg->name, cfg->bearer_token_env);
	}
	if (http_global_init() < 0)
		return err_prefix(FX_EOS, "MCP server '%s'", cfg->name);
	t = xcalloc(1, sizeof(*t));
	t->base.ops = &http_ops;
	t->base.server = cfg->name;
	t->url = xstrdup(cfg->url);
	t->token = token ? xstrdup(token) : NULL;
	strvec_init(&t->queue);
	*out = &t->base;
	return 0;
}
