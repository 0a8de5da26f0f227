/*
 * The "openai" provider: POST {base_url}/chat/completions over libcurl.
 *
 * One request is one "attempt" driven through a curl multi handle, so the
 * cancel flag is looked at every 100 ms however quiet the server is.
 * The body is parsed as it arrives: an event stream goes through the SSE
 * parser into the delta assembler (text reaches the caller's callback at
 * once); anything else (an error, or a server that ignored "stream") is
 * collected up to a cap and parsed whole at the end.
 *
 * Attempts that fail for a transient reason (429, 408, 5xx, a refused or
 * broken connection, a stall: no data for idle_timeout_seconds) are retried up to
 * max_retries times after llm_backoff_ms(), honouring Retry-After. A
 * reply whose text already reached the caller is never retried: the
 * caller would see it twice.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include <curl/curl.h>

#include "base/clock.h"
#include "base/http.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "llm/provider.h"
#include "base/sse.h"
#include "llm/transcript.h"
#include "llm/wire.h"

/* The longest Retry-After we wait for; beyond it the attempt fails. */
#define MAX_RETRY_AFTER_MS 120000L
/* Cap on a body that is not an event stream (errors, whole replies). */
#define MAX_BODY (WIRE_MAX_REPLY + (1u << 20))

struct openai {
	CURLM *multi;
	CURL *easy;
	char *url;
	char *key;		/* NULL: no Authorization header */
	struct curl_slist *headers;
	char errbuf[CURL_ERROR_SIZE];
	int ollama;		/* Ollama's /api/chat: NDJSON lines, its own shapes */
	double deadline;	/* the whole call ends by then (monotonic s; 0: none) */
	int past_deadline;	/* the last attempt ended at the deadline */
};

struct attempt {
	struct provider *p;
	struct openai *o;
	int want_stream;
	long status;
	struct buf ctype;
	struct buf retry_after;
	struct buf body;
	int decided, streaming;
	struct sse_parser sse;
	struct buf line;	/* ollama: the NDJSON line being received */
	struct wire_asm as;
	int cb_code;		/* failure inside a callback */
	char *cb_msg;
	double last_rx;		/* when the server last sent something (monotonic s) */
};

static int cancelled(const struct provider *p)
{
	return p->cancel && *p->cancel;
}

/* Headers every request carries. The key is in here, so never log it. */
static int build_headers(struct curl_slist **out, const char *key, const struct strvec *extra,
			 const char *accept, const char *provider_name)
{
	struct curl_slist *h = NULL;
	size_t i;
	char *line;

	http_header_add(&h, "Content-Type: application/json");
	line = xstrfmt("Accept: %s", accept);
	http_header_add(&h, line);
	free(line);
	http_header_add(&h, "Expect:");
	if (key && *key)
		http_header_bearer(&h, key);
	for (i = 0; i < extra->nr; i++) {
		const char *hv = extra->v[i], *colon = strchr(hv, ':');

		if (!colon || colon == hv || strpbrk(hv, "\r\n")) {
			curl_slist_free_all(h);
			return err_set(FX_EINVAL, "provider '%s': header %zu is not \"Name: value\"",
				       provider_name, i + 1);
		}
		http_header_add(&h, hv);
	}
	*out = h;
	return 0;
}

static void openai_release(struct provider *p)
{
	struct openai *o = p->impl;

	if (!o)
		return;
	if (o->easy)
		curl_easy_cleanup(o->easy);
	if (o->multi)
		curl_multi_cleanup(o->multi);
	curl_slist_free_all(o->headers);
	free(o->url);
	if (o->key) {
		explicit_bzero(o->key, strlen(o->key));
		free(o->key);
	}
	free(o);
	p->impl = NULL;
}

/* Curl's header callback: keep the status line's reset, Content-Type, Retry-After. */
static size_t on_header(char *ptr, size_t size, size_t nmemb, void *data)
{
	struct attempt *a = data;
	size_t n = size * nmemb, vlen;
	const char *v;

	a->last_rx = clk_mono_s();
	if (n >= 5 && !memcmp(ptr, "HTTP/", 5)) {
		buf_reset(&a->ctype);
		buf_reset(&a->retry_after);
		return n;
	}
	v = memchr(ptr, ':', n);
	if (!v)
		return n;
	vlen = n - (size_t)(v + 1 - ptr);
	if ((size_t)(v - ptr) == 12 && !strncasecmp(ptr, "content-type", 12)) {
		buf_reset(&a->ctype);
		buf_add(&a->ctype, v + 1, vlen < 256 ? vlen : 256);
		buf_trim(&a->ctype);
	} else if ((size_t)(v - ptr) == 11 && !strncasecmp(ptr, "retry-after", 11)) {
		buf_reset(&a->retry_after);
		buf_add(&a->retry_after, v + 1, vlen < 256 ? vlen : 256);
		buf_trim(&a->retry_after);
	}
	return n;
}

static int on_event(void *data, const char *event, const char *payload, size_t len)
{
	struct attempt *a = data;

	if (!strcmp(event, "error")) {
		struct buf t = BUF_INIT;
		int ret;

		wire_error_text(&t, payload, len);
		ret = err_set(FX_EPROVIDER, "the server reported an error in the stream: %s", t.buf);
		buf_release(&t);
		return ret;
	}
	return wire_asm_event(&a->as, payload, len);
}

/* Ollama streams one JSON object a line. */
static int ndjson_feed(struct attempt *a, const char *p, size_t n)
{
	while (n) {
		const char *nl = memchr(p, '\n', n);
		size_t k = nl ? (size_t)(nl - p) : n;
		int ret;

		if (a->line.len + k > WIRE_MAX_REPLY)
			return err_set(FX_ELIMIT, "a streamed line is longer than %u bytes",
				       WIRE_MAX_REPLY);
		buf_add(&a->line, p, k);
		if (!nl)
			break;
		ret = wire_ollama_chunk(&a->as, a->line.buf, a->line.len);
		buf_reset(&a->line);
		if (ret < 0)
			return ret;
		p += k + 1;
		n -= k + 1;
	}
	return 0;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *data)
{
	struct attempt *a = data;
	size_t n = size * nmemb;
	int ret;

	a->last_rx = clk_mono_s();
	if (!a->decided) {
		curl_easy_getinfo(a->o->easy, CURLINFO_RESPONSE_CODE, &a->status);
		a->streaming = a->want_stream && a->status >= 200 && a->status < 300 &&
			       (a->o->ollama || !strncasecmp(a->ctype.buf, "text/event-stream", 17));
		a->decided = 1;
	}
	if (a->streaming && a->o->ollama)
		ret = ndjson_feed(a, ptr, n);
	else if (a->streaming)
		ret = sse_feed(&a->sse, ptr, n);
	else
		ret = buf_add_capped(&a->body, ptr, n);
	if (ret < 0) {
		a->cb_code = ret;
		a->cb_msg = xstrdup(err_last());
		return 0;	/* makes curl stop with CURLE_WRITE_ERROR */
	}
	return n;
}

static int on_progress(void *data, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct attempt *a = data;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return cancelled(a->p);
}

static void attempt_init(struct attempt *a, struct provider *p, llm_text_fn on_text,
			 void *cb_data)
{
	memset(a, 0, sizeof(*a));
	a->p = p;
	a->o = p->impl;
	a->want_stream = p->stream;
	buf_init(&a->ctype, 0);
	buf_init(&a->retry_after, 0);
	buf_init(&a->body, 0);
	a->body.max = MAX_BODY;
	sse_init(&a->sse, on_event, a, 0);
	buf_init(&a->line, 0);
	wire_asm_init(&a->as, on_text, cb_data);
}

static void attempt_release(struct attempt *a)
{
	buf_release(&a->ctype);
	buf_release(&a->retry_after);
	buf_release(&a->body);
	sse_release(&a->sse);
	buf_release(&a->line);
	wire_asm_release(&a->as);
	free(a->cb_msg);
}

/*
 * Run one transfer on the multi handle. Returns 0 with curl's result in
 * `*res`, -1 when cancelled. Nothing received for idle_timeout_seconds (a
 * stalled stream), or the whole call's timeout_seconds passing, ends the
 * transfer as CURLE_OPERATION_TIMEDOUT (curl's own low-speed check takes
 * several seconds longer to notice).
 */
static int perform(struct attempt *a, CURLcode *res)
{
	struct openai *o = a->o;
	int running = 1, ret = 0;
	CURLMsg *msg;
	int left;

	*res = CURLE_OK;
	a->last_rx = clk_mono_s();
	if (curl_multi_add_handle(o->multi, o->easy) != CURLM_OK)
		return err_set(FX_EPROVIDER, "libcurl refused the transfer");
	for (;;) {
		CURLMcode mc = curl_multi_perform(o->multi, &running);

		if (mc != CURLM_OK) {
			ret = err_set(FX_EPROVIDER, "libcurl: %s", curl_multi_strerror(mc));
			break;
		}
		if (!running)
			break;
		if (cancelled(a->p)) {
			ret = -1;
			break;
		}
		if (clk_mono_s() - a->last_rx >= (double)a->p->idle_timeout_seconds ||
		    (o->deadline > 0 && clk_mono_s() >= o->deadline)) {
			o->past_deadline = o->deadline > 0 && clk_mono_s() >= o->deadline;
			curl_multi_remove_handle(o->multi, o->easy);
			*res = CURLE_OPERATION_TIMEDOUT;
			return 0;
		}
		mc = curl_multi_poll(o->multi, NULL, 0, 100, NULL);
		if (mc != CURLM_OK) {
			ret = err_set(FX_EPROVIDER, "libcurl: %s", curl_multi_strerror(mc));
			break;
		}
	}
	while ((msg = curl_multi_info_read(o->multi, &left)))
		if (msg->msg == CURLMSG_DONE && msg->easy_handle == o->easy)
			*res = msg->data.result;
	curl_multi_remove_handle(o->multi, o->easy);
	if (!ret && cancelled(a->p))
		ret = -1;
	return ret;
}

static int transient_curl_error(CURLcode c)
{
	switch (c) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
		return 1;
	default:
		return 0;
	}
}

enum outcome {
	OUT_OK,
	OUT_RETRY,	/* transient: another attempt may succeed */
	OUT_FAIL,
};

/* Say what went wrong with an HTTP error status. */
static void describe_status(struct buf *msg, struct attempt *a)
{
	struct provider *p = a->p;
	const char *key;

	buf_addf(msg, "HTTP %ld: ", a->status);
	wire_error_text(msg, a->body.buf, a->body.len);
	if (a->status == 401 || a->status == 403) {
		if (!*p->api_key_env)
			buf_addstr(msg, "; no key variable is configured (set api_key_env)");
		else if (!(key = getenv(p->api_key_env)) || !*key)
			buf_addf(msg, "; the key is read from $%s, which is not set", p->api_key_env);
		else
			buf_addf(msg, "; check the key in $%s", p->api_key_env);
	} else if (a->status == 404) {
		buf_addf(msg, "; check base_url (POST %s) and the model name", a->o->url);
	}
}

/*
 * One attempt. On OUT_OK `out` holds the reply; otherwise `msg` says why
 * and `*code` is the error code, `*retry_after_ms` what the server asked.
 */
static enum outcome attempt_run(struct attempt *a, struct llm_response *out, struct buf *msg,
				int *code, long *retry_after_ms)
{
	CURLcode res;
	int ret;

	*retry_after_ms = -1;
	*code = FX_EPROVIDER;
	a->o->errbuf[0] = '\0';
	ret = perform(a, &res);
	curl_easy_getinfo(a->o->easy, CURLINFO_RESPONSE_CODE, &a->status);
	out->http_status = a->status;
	if (ret == -1 || res == CURLE_ABORTED_BY_CALLBACK) {
		*code = FX_EINTR;
		buf_addstr(msg, "interrupted");
		return OUT_FAIL;
	}
	if (ret < 0) {
		buf_addstr(msg, err_last());
		return OUT_FAIL;
	}
	if (a->cb_code) {
		*code = a->cb_code == FX_ELIMIT ? FX_ELIMIT : FX_EPROVIDER;
		buf_addstr(msg, a->cb_msg);
		return OUT_FAIL;
	}
	if (res != CURLE_OK && a->streaming && (a->as.done || a->as.finish_reason) &&
	    (res == CURLE_PARTIAL_FILE || res == CURLE_RECV_ERROR)) {
		/* the reply was whole; only the end of the HTTP framing was lost */
		res = CURLE_OK;
	}
	if (res != CURLE_OK) {
		if (res == CURLE_OPERATION_TIMEDOUT && a->o->past_deadline)
			buf_addf(msg, "no answer within %ld seconds (timeout_seconds bounds the whole "
				 "call, retries included)", a->p->timeout_seconds);
		else if (res == CURLE_OPERATION_TIMEDOUT)
			buf_addf(msg, "no data from the server for %ld seconds (idle_timeout_seconds)",
				 a->p->idle_timeout_seconds);
		else
			buf_addf(msg, "%s%s%s", curl_easy_strerror(res), a->o->errbuf[0] ? ": " : "",
				 a->o->errbuf);
		if (a->as.text_delivered) {
			buf_addstr(msg, " (the connection broke in the middle of the reply)");
			return OUT_FAIL;
		}
		return transient_curl_error(res) ? OUT_RETRY : OUT_FAIL;
	}
	if (a->status < 200 || a->status >= 300) {
		if (a->retry_after.len)
			*retry_after_ms = llm_parse_retry_after(a->retry_after.buf, (long long)time(NULL));
		describe_status(msg, a);
		if (a->status == 429 || a->status == 408 || a->status >= 500)
			return OUT_RETRY;
		return OUT_FAIL;
	}
	if (a->streaming) {
		if (a->o->ollama)
			ret = a->line.len ? wire_ollama_chunk(&a->as, a->line.buf, a->line.len) : 0;
		else
			ret = sse_finish(&a->sse);
		if (ret < 0) {
			buf_addstr(msg, err_last());
			return OUT_FAIL;
		}
		if (!a->as.finish_reason && !a->as.done && !a->as.text_delivered &&
		    !a->as.calls_nr) {
			buf_addstr(msg, "the stream ended before the reply began");
			return OUT_RETRY;
		}
		ret = wire_asm_finish(&a->as, out);
	} else {
		if (!a->body.len) {
			buf_addstr(msg, "the server sent an empty reply");
			return OUT_RETRY;
		}
		if (a->o->ollama) {
			ret = wire_ollama_chunk(&a->as, a->body.buf, a->body.len);
			if (!ret)
				ret = wire_asm_finish(&a->as, out);
		} else {
			ret = wire_parse_reply(out, a->body.buf, a->body.len);
		}
	}
	if (ret < 0) {
		*code = ret == FX_ELIMIT ? FX_ELIMIT : FX_EPROVIDER;
		buf_addstr(msg, err_last());
		return OUT_FAIL;
	}
	return OUT_OK;
}

/* Sleep `ms`, waking early when cancelled. Returns -1 when cancelled. */
static int wait_ms(const struct provider *p, long ms)
{
	while (ms > 0) {
		long step = ms < 50 ? ms : 50;
		struct timespec ts = { step / 1000, (step % 1000) * 1000000L };

		if (cancelled(p))
			return -1;
		nanosleep(&ts, NULL);
		ms -= step;
	}
	return cancelled(p) ? -1 : 0;
}

static void setup_transfer(struct provider *p, struct attempt *a, const char *body, size_t len)
{
	struct openai *o = p->impl;
	CURL *h = o->easy;
	long connect = p->timeout_seconds < 30 ? p->timeout_seconds : 30;

	/* the URL and forgex's defaults were set by http_easy_new() */
	curl_easy_setopt(h, CURLOPT_POST, 1L);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, o->headers);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, a);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, a);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT, connect);
}

static int openai_chat(struct provider *p, struct llm_response *out, const struct llm_request *req,
		       const json_t *body, llm_text_fn on_text, void *cb_data)
{
	struct buf wire = BUF_INIT, msg = BUF_INIT;
	int attempt_nr, code = 0, ret;
	const char *model = req->model && *req->model ? req->model : p->model;
	const struct buf *send = p->wire;

	if (!send) {
		jsonx_dump(&wire, body, JSON_COMPACT);
		send = &wire;
	}
	/* timeout_seconds bounds the whole call: every attempt and every wait between */
	((struct openai *)p->impl)->deadline = clk_mono_s() + (double)p->timeout_seconds;
	((struct openai *)p->impl)->past_deadline = 0;
	for (attempt_nr = 0;; attempt_nr++) {
		struct attempt a;
		enum outcome oc;
		long ra, delay;
		unsigned int rnd = 0;

		buf_reset(&msg);
		attempt_init(&a, p, on_text, cb_data);
		setup_transfer(p, &a, send->buf, send->len);
		oc = attempt_run(&a, out, &msg, &code, &ra);
		attempt_release(&a);
		out->retries = attempt_nr;
		if (oc == OUT_OK) {
			ret = 0;
			goto out;
		}
		if (oc == OUT_FAIL || attempt_nr >= p->max_retries ||
		    ((struct openai *)p->impl)->past_deadline)
			break;
		if (ra > MAX_RETRY_AFTER_MS) {
			buf_addf(&msg, " (the server asks to wait %ld s before retrying; giving up)",
				 ra / 1000);
			break;
		}
		if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != sizeof(rnd))
			rnd = (unsigned int)time(NULL) * 2654435761u + (unsigned int)attempt_nr;
		delay = llm_backoff_ms(attempt_nr, ra, rnd);
		{
			double left = ((struct openai *)p->impl)->deadline - clk_mono_s();

			if (left * 1000.0 < (double)delay) {
				buf_addf(&msg, " (no time left for a retry within timeout_seconds = %ld)",
					 p->timeout_seconds);
				break;
			}
		}
		log_debug("provider '%s': HTTP %ld, retry %d in %ld ms", p->name, out->http_status,
			  attempt_nr + 1, delay);
		if (wait_ms(p, delay) < 0) {
			code = FX_EINTR;
			buf_reset(&msg);
			buf_addstr(&msg, "interrupted");
			break;
		}
	}
	if (code == FX_EINTR) {
		ret = err_set(FX_EINTR, "provider '%s': interrupted", p->name);
		goto out;
	}
	if (out->retries)
		buf_addf(&msg, " (gave up after %d %s)", out->retries,
			 out->retries == 1 ? "retry" : "retries");
	{
		/* a server may echo the key in its error text: never pass it on */
		struct strvec secrets = STRVEC_INIT;
		struct buf clean = BUF_INIT;
		struct openai *o = p->impl;

		if (o->key)
			strvec_push(&secrets, o->key);
		redact_text(&clean, msg.buf, msg.len, &secrets);
		ret = err_set(code, "provider '%s' (%s, model %s): %s", p->name, p->base_url,
			      *model ? model : "(none)", clean.buf);
		strvec_clear(&secrets);
		buf_release(&clean);
	}
out:
	buf_release(&wire);
	buf_release(&msg);
	return ret;
}

static const struct provider_ops openai_ops = {
	.type = "openai",
	.chat = openai_chat,
	.release = openai_release,
};

static json_t *ollama_body(struct provider *p, const struct llm_request *req)
{
	provider_context_window(p, NULL, NULL);	/* decides num_ctx, once */
	return wire_ollama_request(req, p->model, p->stream, p->num_ctx);
}

static const struct provider_ops ollama_ops = {
	.type = "ollama",
	.chat = openai_chat,
	.release = openai_release,
	.body = ollama_body,
};

static int open_common(struct provider *p, const struct provider_config *pc, int ollama);

int openai_open(struct provider *p, const struct provider_config *pc)
{
	return open_common(p, pc, 0);
}

int ollama_open(struct provider *p, const struct provider_config *pc)
{
	return open_common(p, pc, 1);
}

static int open_common(struct provider *p, const struct provider_config *pc, int ollama)
{
	struct openai *o;
	const char *key;
	int ret;

	if (!*p->base_url)
		return err_set(FX_EINVAL, "provider '%s': base_url is empty", p->name);
	if (strncmp(p->base_url, "http://", 7) && strncmp(p->base_url, "https://", 8))
		return err_set(FX_EINVAL, "provider '%s': base_url '%s' is not an http:// or "
			       "https:// URL", p->name, p->base_url);
	o = xcalloc(1, sizeof(*o));
	p->impl = o;
	p->ops = ollama ? &ollama_ops : &openai_ops;
	o->ollama = ollama;
	if (ollama) {
		char *root = provider_root_url(p->base_url);

		o->url = xstrfmt("%s/api/chat", root);
		free(root);
	} else {
		o->url = xstrfmt("%s/chat/completions", p->base_url);
	}
	key = *p->api_key_env ? getenv(p->api_key_env) : NULL;
	if (key && *key)
		o->key = xstrdup(key);
	ret = build_headers(&o->headers, o->key, &pc->headers,
			    p->stream && !ollama ? "text/event-stream" : ollama && p->stream ?
			    "application/x-ndjson" : "application/json", p->name);
	if (ret < 0)
		return ret;
	/* one handle for every attempt: the connection is kept between them */
	if (http_easy_new(&o->easy, o->url, o->errbuf) < 0)
		return err_prefix(FX_EPROVIDER, "provider '%s'", p->name);
	o->multi = curl_multi_init();
	if (!o->multi)
		return err_set(FX_EPROVIDER, "libcurl could not create a handle");
	return 0;
}

int provider_list_models(struct strvec *out, const struct provider_config *pc, long timeout_ms)
{
	struct buf body = BUF_INIT_CAP(4u << 20), url = BUF_INIT;
	struct curl_slist *headers = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	const char *key = pc->api_key_env && *pc->api_key_env ? getenv(pc->api_key_env) : NULL;
	json_t *j = NULL, *list, *m;
	CURL *h = NULL;
	CURLcode res;
	long status = 0;
	size_t i;
	int ret;

	if (pc->type && !strcmp(pc->type, "ollama")) {
		/* Ollama's own list: {"models": [{"name": ...}]} */
		char *root = provider_root_url(pc->base_url ? pc->base_url : "");

		buf_addf(&url, "%s/api/tags", root);
		free(root);
	} else {
		buf_addstr(&url, pc->base_url ? pc->base_url : "");
		while (url.len && url.buf[url.len - 1] == '/')
			buf_setlen(&url, url.len - 1);
		buf_addstr(&url, "/models");
	}
	ret = build_headers(&headers, key, &pc->headers, "application/json",
			    pc->name ? pc->name : "");
	if (ret < 0)
		goto out;
	if (http_easy_new(&h, url.buf, errbuf) < 0) {
		ret = err_prefix(FX_EPROVIDER, "GET %s", url.buf);
		goto out;
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, http_collect);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, timeout_ms);
	res = curl_easy_perform(h);
	if (res != CURLE_OK) {
		ret = err_set(FX_EPROVIDER, "cannot reach %s: %s", url.buf,
			      http_strerror(res, errbuf));
		goto out;
	}
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		struct buf t = BUF_INIT;

		wire_error_text(&t, body.buf, body.len);
		ret = err_set(FX_EPROVIDER, "GET %s: HTTP %ld: %s", url.buf, status, t.buf);
		buf_release(&t);
		goto out;
	}
	ret = jsonx_parse(&j, body.buf, body.len, url.buf);
	if (ret < 0) {
		ret = err_prefix(FX_EPROVIDER, "GET %s: malformed list of models", url.buf);
		goto out;
	}
	list = json_object_get(j, "data");
	if (!json_is_array(list))
		list = json_object_get(j, "models");
	if (!json_is_array(list)) {
		ret = err_set(FX_EPROVIDER, "GET %s: the reply has no \"data\" list", url.buf);
		goto out;
	}
	json_array_foreach(list, i, m) {
		const char *id = jsonx_str(m, "id");

		if (!id)
			id = jsonx_str(m, "name");
		if (id)
			strvec_push(out, id);
	}
	ret = 0;
out:
	if (h)
		curl_easy_cleanup(h);
	curl_slist_free_all(headers);
	json_decref(j);
	buf_release(&body);
	buf_release(&url);
	return ret;
}
