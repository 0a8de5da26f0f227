/*
 * mockllm: a scripted OpenAI-compatible HTTP/1.1 server for tests.
 *
 *   mockllm --script FILE [--port-file FILE] [--log FILE] [--port N]
 *
 * Listens on 127.0.0.1 (port 0: a free one), prints the port on stdout
 * and writes it to --port-file (atomically), then answers each
 * POST .../chat/completions with the next step of the script and each
 * GET .../models with the script's model list. Every request is appended
 * to --log as one JSON line. See README.md beside this file for the
 * script format. One thread per connection; keep-alive is honoured.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"

#define MAX_HEAD (64u << 10)
#define MAX_BODY (64u << 20)

static json_t *script_steps;	/* array */
static json_t *script_models;	/* array of strings */
static json_t *script_server;	/* the script object: "server", "n_ctx", "num_ctx", ... */
static const char *server_kind = "openai";	/* "openai", "ollama", "llamacpp", "vllm", "proxy" */

static long server_int(const char *key, long def);
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static size_t step_pos;		/* index of the current step */
static long step_used;		/* requests the current step has answered */
static unsigned long request_seq;
static int log_fd = -1;

struct request {
	char method[16];
	struct buf path;
	json_t *headers;	/* lower-case name -> value */
	struct buf body;
	int close;
};

static void msleep(long ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int send_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read until `conn` holds a whole request head; parse it and read the body. */
static int read_request(int fd, struct buf *conn, struct request *rq)
{
	char chunk[16384];
	char *end, *line, *eol;
	size_t head_len, clen = 0;
	const char *v;

	while (!(end = memmem(conn->buf, conn->len, "\r\n\r\n", 4))) {
		ssize_t n;

		if (conn->len > MAX_HEAD)
			return -1;
		n = recv(fd, chunk, sizeof(chunk), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf_add(conn, chunk, (size_t)n);
	}
	head_len = (size_t)(end - conn->buf) + 4;
	*end = '\0';
	line = conn->buf;
	eol = strstr(line, "\r\n");
	if (eol)
		*eol = '\0';
	{
		char *sp = strchr(line, ' '), *sp2;

		if (!sp || (size_t)(sp - line) >= sizeof(rq->method))
			return -1;
		memcpy(rq->method, line, (size_t)(sp - line));
		rq->method[sp - line] = '\0';
		sp2 = strchr(sp + 1, ' ');
		buf_add(&rq->path, sp + 1, sp2 ? (size_t)(sp2 - sp - 1) : strlen(sp + 1));
		rq->close = sp2 && !strcmp(sp2 + 1, "HTTP/1.0");
	}
	rq->headers = json_object();
	for (line = eol ? eol + 2 : end; line < end; line = eol + 2) {
		char *colon, *val, *p;

		eol = strstr(line, "\r\n");
		if (!eol)
			eol = end;
		*eol = '\0';
		colon = strchr(line, ':');
		if (!colon)
			continue;
		*colon = '\0';
		for (p = line; *p; p++)
			if (*p >= 'A' && *p <= 'Z')
				*p = (char)(*p - 'A' + 'a');
		val = colon + 1;
		while (*val == ' ' || *val == '\t')
			val++;
		jsonx_set(rq->headers, line, jsonx_string(val));
		if (eol == end)
			break;
	}
	v = jsonx_str(rq->headers, "content-length");
	if (v)
		clen = strtoul(v, NULL, 10);
	if (clen > MAX_BODY)
		return -1;
	v = jsonx_str(rq->headers, "connection");
	if (v && !strcasecmp(v, "close"))
		rq->close = 1;
	v = jsonx_str(rq->headers, "expect");
	if (v && !strcasecmp(v, "100-continue") &&
	    send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0)
		return -1;
	/* drop the head, keep what followed it */
	memmove(conn->buf, conn->buf + head_len, conn->len - head_len);
	buf_setlen(conn, conn->len - head_len);
	while (conn->len < clen) {
		ssize_t n = recv(fd, chunk, sizeof(chunk), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf_add(conn, chunk, (size_t)n);
	}
	buf_add(&rq->body, conn->buf, clen);
	memmove(conn->buf, conn->buf + clen, conn->len - clen);
	buf_setlen(conn, conn->len - clen);
	return 0;
}

static void log_request(const struct request *rq, json_t *body, long step)
{
	json_t *j;

	pthread_mutex_lock(&lock);
	j = json_pack("{s:I, s:s, s:s, s:O, s:O, s:I}", "seq", (json_int_t)++request_seq,
		      "method", rq->method, "path", rq->path.buf, "headers", rq->headers,
		      "body", body ? body : json_null(), "step", (json_int_t)step);
	if (!body)
		jsonx_set(j, "body", jsonx_stringn_lossy(rq->body.buf, rq->body.len));
	/* the bytes as received, for tests that compare requests byte for byte */
	jsonx_set(j, "raw", jsonx_stringn_lossy(rq->body.buf, rq->body.len));
	if (log_fd >= 0 && jsonx_write_line(log_fd, j) < 0)
		fprintf(stderr, "mockllm: cannot write the log: %s\n", err_last());
	pthread_mutex_unlock(&lock);
	json_decref(j);
}

/*
 * A step of the script's "on_match" list whose "body_contains" occurs in
 * the request body (a new reference), or NULL. Such steps answer every
 * request they match and take no turn from "steps".
 */
static json_t *match_step(const struct request *rq, long *index)
{
	json_t *list = json_object_get(script_server, "on_match"), *m;
	size_t i;

	json_array_foreach(list, i, m) {
		const char *needle = jsonx_str(m, "body_contains");

		if (needle && *needle && memmem(rq->body.buf, rq->body.len, needle, strlen(needle))) {
			*index = -2 - (long)i;
			return json_incref(m);
		}
	}
	return NULL;
}

/* Take the next step (a new reference), or NULL when the script is exhausted. */
static json_t *next_step(long *index)
{
	json_t *step = NULL;

	pthread_mutex_lock(&lock);
	while (step_pos < json_array_size(script_steps)) {
		json_t *s = json_array_get(script_steps, step_pos);
		json_int_t repeat = jsonx_int(s, "repeat", 1);

		if (repeat < 0 || step_used < repeat) {
			step_used++;
			step = json_incref(s);
			*index = (long)step_pos;
			break;
		}
		step_pos++;
		step_used = 0;
	}
	pthread_mutex_unlock(&lock);
	return step;
}

static void add_header_lines(struct buf *h, const json_t *step)
{
	const char *k;
	json_t *v;

	json_object_foreach(json_object_get(step, "headers"), k, v)
		if (json_is_string(v))
			buf_addf(h, "%s: %s\r\n", k, json_string_value(v));
}

static const char *reason(long status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 408: return "Request Timeout";
	case 429: return "Too Many Requests";
	case 500: return "Internal Server Error";
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	default: return "Status";
	}
}

/* A whole (Content-Length) response. Returns -1 when the connection must close. */
static int send_whole(int fd, long status, const char *ctype, const json_t *step,
		      const char *body, size_t len, int close_after)
{
	struct buf h = BUF_INIT;
	json_int_t drop = jsonx_int(step, "drop_after_bytes", -1);
	int ret;

	buf_addf(&h, "HTTP/1.1 %ld %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n", status,
		 reason(status), ctype, len);
	add_header_lines(&h, step);
	if (close_after)
		buf_addstr(&h, "Connection: close\r\n");
	buf_addstr(&h, "\r\n");
	if (drop >= 0 && (size_t)drop < len) {
		buf_add(&h, body, (size_t)drop);
		send_all(fd, h.buf, h.len);
		buf_release(&h);
		return -1;
	}
	buf_add(&h, body, len);
	ret = send_all(fd, h.buf, h.len);
	buf_release(&h);
	return ret < 0 || close_after ? -1 : 0;
}

/* Split `s` into pieces of about `n` bytes without cutting UTF-8 sequences. */
static size_t piece_len(const char *s, size_t len, size_t n)
{
	size_t k;

	if (n == 0 || n >= len)
		return len;
	k = n;
	while (k < len && ((unsigned char)s[k] & 0xc0) == 0x80)
		k++;
	return k;
}

static json_t *chunk_obj(const char *model, json_t *delta, const char *finish)
{
	return json_pack("{s:s, s:s, s:i, s:s, s:[{s:i, s:o, s:o}]}", "id", "chatcmpl-mock",
			 "object", "chat.completion.chunk", "created", 0, "model", model,
			 "choices", "index", 0, "delta", delta, "finish_reason",
			 finish ? json_string(finish) : json_null());
}

static void add_event(json_t *events, json_t *obj)
{
	struct buf b = BUF_INIT;

	jsonx_dump(&b, obj, JSON_COMPACT);
	json_array_append_new(events, jsonx_string(b.buf));
	buf_release(&b);
	json_decref(obj);
}

static char *args_text(const json_t *call)
{
	const json_t *a = json_object_get(call, "arguments");
	struct buf b = BUF_INIT;

	if (json_is_string(a))
		buf_addstr(&b, json_string_value(a));
	else if (a)
		jsonx_dump(&b, a, JSON_COMPACT);
	else
		buf_addstr(&b, "{}");
	return buf_detach(&b, NULL);
}

static json_t *usage_for(const json_t *step, size_t request_len)
{
	const json_t *u = json_object_get(step, "usage");
	const char *text = jsonx_str(step, "text");
	size_t out_len = text ? strlen(text) : 0, i;
	const json_t *c;
	long p, q;

	if (json_is_false(u) || json_is_null(u))
		return NULL;
	if (json_is_object(u))
		return json_incref((json_t *)u);
	json_array_foreach(json_object_get(step, "tool_calls"), i, c) {
		char *a = args_text(c);

		out_len += strlen(a);
		free(a);
	}
	p = (long)(request_len / 4);
	q = (long)(out_len / 4 + 1);
	return json_pack("{s:i, s:i, s:i}", "prompt_tokens", (int)p, "completion_tokens", (int)q,
			 "total_tokens", (int)(p + q));
}

static const char *finish_for(const json_t *step, int *omit)
{
	const json_t *f = json_object_get(step, "finish_reason");

	*omit = f && json_is_null(f);
	if (json_is_string(f))
		return json_string_value(f);
	return json_array_size(json_object_get(step, "tool_calls")) ? "tool_calls" : "stop";
}

/* The data of each event of a generated stream, as a JSON array of strings. */
static json_t *generate_events(const json_t *step, const char *model, size_t request_len,
			       int want_usage)
{
	json_t *events = json_array(), *calls = json_object_get(step, "tool_calls"), *u;
	const char *text = jsonx_str(step, "text"), *finish;
	size_t n = (size_t)jsonx_int(step, "delta_chars", 16), i, pos, ncalls = json_array_size(calls);
	char **args = xcalloc(ncalls + 1, sizeof(*args));
	size_t *apos = xcalloc(ncalls + 1, sizeof(*apos));
	int omit, left;

	add_event(events, chunk_obj(model, json_pack("{s:s, s:s}", "role", "assistant",
						     "content", ""), NULL));
	for (pos = 0; text && text[pos];) {
		size_t k = piece_len(text + pos, strlen(text + pos), n);

		add_event(events, chunk_obj(model, json_pack("{s:s%}", "content", text + pos, k),
					    NULL));
		pos += k;
	}
	for (i = 0; i < ncalls; i++) {
		const json_t *c = json_array_get(calls, i);
		const char *id = jsonx_str(c, "id"), *name = jsonx_str(c, "name");

		args[i] = args_text(c);
		add_event(events, chunk_obj(model, json_pack("{s:[{s:i, s:s, s:s, s:{s:s, s:s}}]}",
			"tool_calls", "index", (int)i, "id", id ? id : "", "type", "function",
			"function", "name", name ? name : "", "arguments", ""), NULL));
	}
	/* argument pieces, interleaved between the calls when asked */
	do {
		left = 0;
		for (i = 0; i < ncalls; i++) {
			size_t rest = strlen(args[i] + apos[i]), k;

			if (!rest)
				continue;
			k = piece_len(args[i] + apos[i], rest, n);
			add_event(events, chunk_obj(model, json_pack("{s:[{s:i, s:{s:s%}}]}",
				"tool_calls", "index", (int)i, "function", "arguments",
				args[i] + apos[i], k), NULL));
			apos[i] += k;
			if (!jsonx_bool(step, "interleave", 0)) {
				/* finish this call first */
				while (args[i][apos[i]]) {
					rest = strlen(args[i] + apos[i]);
					k = piece_len(args[i] + apos[i], rest, n);
					add_event(events, chunk_obj(model,
						json_pack("{s:[{s:i, s:{s:s%}}]}", "tool_calls", "index",
							  (int)i, "function", "arguments",
							  args[i] + apos[i], k), NULL));
					apos[i] += k;
				}
			}
			left |= args[i][apos[i]] != '\0';
		}
	} while (left);
	finish = finish_for(step, &omit);
	if (!omit)
		add_event(events, chunk_obj(model, json_object(), finish));
	u = want_usage || json_is_object(json_object_get(step, "usage")) ?
	    usage_for(step, request_len) : NULL;
	if (u)
		add_event(events, json_pack("{s:s, s:s, s:i, s:s, s:[], s:o}", "id", "chatcmpl-mock",
					    "object", "chat.completion.chunk", "created", 0,
					    "model", model, "choices", "usage", u));
	if (jsonx_bool(step, "done", 1))
		json_array_append_new(events, jsonx_string("[DONE]"));
	for (i = 0; i < ncalls; i++)
		free(args[i]);
	free(args);
	free(apos);
	return events;
}

static char *generate_whole(const json_t *step, const char *model, size_t request_len)
{
	json_t *calls = json_object_get(step, "tool_calls"), *msg, *wire_calls = json_array(), *j, *u;
	const char *text = jsonx_str(step, "text"), *finish;
	struct buf b = BUF_INIT;
	size_t i;
	int omit;

	for (i = 0; i < json_array_size(calls); i++) {
		const json_t *c = json_array_get(calls, i);
		char *a = args_text(c);
		const char *id = jsonx_str(c, "id"), *name = jsonx_str(c, "name");

		json_array_append_new(wire_calls, json_pack("{s:s, s:s, s:{s:s, s:s}}",
			"id", id ? id : "", "type", "function", "function", "name",
			name ? name : "", "arguments", a));
		free(a);
	}
	msg = json_pack("{s:s, s:o}", "role", "assistant", "content",
			text ? json_string(text) : json_null());
	if (json_array_size(wire_calls))
		jsonx_set(msg, "tool_calls", wire_calls);
	else
		json_decref(wire_calls);
	finish = finish_for(step, &omit);
	j = json_pack("{s:s, s:s, s:i, s:s, s:[{s:i, s:o, s:o}]}", "id", "chatcmpl-mock",
		      "object", "chat.completion", "created", 0, "model", model, "choices",
		      "index", 0, "message", msg, "finish_reason",
		      omit ? json_null() : json_string(finish));
	u = usage_for(step, request_len);
	if (u)
		jsonx_set(j, "usage", u);
	jsonx_dump(&b, j, JSON_COMPACT);
	json_decref(j);
	return buf_detach(&b, NULL);
}

/* Send one body piece as an HTTP chunk. */
static int send_chunk(int fd, const char *data, size_t len)
{
	char head[32];
	int n;

	if (!len)
		return 0;
	n = snprintf(head, sizeof(head), "%zx\r\n", len);
	if (send_all(fd, head, (size_t)n) < 0 || send_all(fd, data, len) < 0 ||
	    send_all(fd, "\r\n", 2) < 0)
		return -1;
	return 0;
}

/* What a streamed response writes: pieces of bytes, each after a delay. */
struct piece {
	char *data;
	size_t len;
	long delay_ms;
};

struct wlist {
	struct piece *v;
	size_t nr, alloc;
};

static void wlist_add(struct wlist *w, const char *data, size_t len, long delay_ms)
{
	ALLOC_GROW(w->v, w->nr + 1, w->alloc);
	w->v[w->nr].data = xmalloc(len + 1);
	memcpy(w->v[w->nr].data, data, len);
	w->v[w->nr].len = len;
	w->v[w->nr].delay_ms = delay_ms;
	w->nr++;
}

static void wlist_clear(struct wlist *w)
{
	size_t i;

	for (i = 0; i < w->nr; i++)
		free(w->v[i].data);
	free(w->v);
	memset(w, 0, sizeof(*w));
}

/*
 * A streamed response: the pieces of `writes` as HTTP chunks. Returns -1
 * when the connection must close.
 */
static int send_stream_as(int fd, const json_t *step, const struct wlist *writes, int close_after,
			  const char *ctype)
{
	struct buf h = BUF_INIT;
	json_int_t drop = jsonx_int(step, "drop_after_bytes", -1);
	long status = (long)jsonx_int(step, "status", 200);
	size_t i, sent = 0;

	buf_addf(&h, "HTTP/1.1 %ld %s\r\nContent-Type: %s\r\n"
		 "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n", status, reason(status),
		 ctype);
	add_header_lines(&h, step);
	if (close_after)
		buf_addstr(&h, "Connection: close\r\n");
	buf_addstr(&h, "\r\n");
	if (send_all(fd, h.buf, h.len) < 0) {
		buf_release(&h);
		return -1;
	}
	buf_release(&h);
	for (i = 0; i < writes->nr; i++) {
		const char *s = writes->v[i].data;
		size_t len = writes->v[i].len;

		msleep(writes->v[i].delay_ms);
		if (drop >= 0 && sent + len >= (size_t)drop) {
			send_chunk(fd, s, (size_t)drop - sent);
			msleep(50);
			return -1;	/* cut mid-stream: no final chunk */
		}
		if (send_chunk(fd, s, len) < 0)
			return -1;
		sent += len;
	}
	if (drop >= 0)
		return -1;
	if (send_all(fd, "0\r\n\r\n", 5) < 0)
		return -1;
	return close_after ? -1 : 0;
}

static int send_stream(int fd, const json_t *step, const struct wlist *writes, int close_after)
{
	return send_stream_as(fd, step, writes, close_after, "text/event-stream");
}

/* Turn the step's events into the list of writes, with delays and splits. */
static void plan_writes(struct wlist *writes, const json_t *step, const json_t *events)
{
	const char *le = jsonx_str(step, "line_end");
	json_t *delays = json_object_get(step, "delays_ms");
	long every = (long)jsonx_int(step, "event_delay_ms", 0);
	size_t wb = (size_t)jsonx_int(step, "write_bytes", 0), i;
	long wdelay = (long)jsonx_int(step, "write_delay_ms", 0);
	struct buf all = BUF_INIT;
	const json_t *e;

	if (!le)
		le = "\n";
	json_array_foreach(events, i, e) {
		struct buf ev = BUF_INIT;
		long d = i ? every : 0;

		if (json_is_array(delays) && i < json_array_size(delays))
			d = (long)json_integer_value(json_array_get(delays, i));
		if (json_is_object(e)) {	/* {"comment": "..."} or {"raw": "..."} */
			const char *c = jsonx_str(e, "comment"), *r = jsonx_str(e, "raw");

			if (c)
				buf_addf(&ev, ":%s%s", c, le);
			if (r)
				buf_addstr(&ev, r);
		} else if (json_is_string(e)) {
			/* multi-line data becomes several data: lines */
			const char *s = json_string_value(e), *nl;

			for (;;) {
				nl = strchr(s, '\n');
				buf_addstr(&ev, "data: ");
				buf_add(&ev, s, nl ? (size_t)(nl - s) : strlen(s));
				buf_addstr(&ev, le);
				if (!nl)
					break;
				s = nl + 1;
			}
			buf_addstr(&ev, le);
		}
		if (wb)
			buf_addbuf(&all, &ev);
		else
			wlist_add(writes, ev.buf, ev.len, d);
		buf_release(&ev);
	}
	if (wb) {
		size_t pos;

		for (pos = 0; pos < all.len; pos += wb) {
			size_t k = all.len - pos < wb ? all.len - pos : wb;

			wlist_add(writes, all.buf + pos, k, pos ? wdelay : 0);
		}
	}
	buf_release(&all);
}

/* A step's "raw" list: strings written as they are, {"delay_ms": N} between. */
static void raw_writes(struct wlist *writes, const json_t *raw)
{
	const json_t *w;
	long delay = 0;
	size_t i;

	json_array_foreach(raw, i, w) {
		if (json_is_object(w)) {
			delay += (long)jsonx_int(w, "delay_ms", 0);
		} else if (json_is_string(w)) {
			wlist_add(writes, json_string_value(w), json_string_length(w), delay);
			delay = 0;
		}
	}
}

static void wait_for_close(int fd)
{
	char c[4096];

	for (;;) {
		ssize_t n = recv(fd, c, sizeof(c), 0);

		if (n == 0 || (n < 0 && errno != EINTR))
			return;
	}
}

/* Answer a chat request. Returns -1 when the connection must close. */
static int answer_chat(int fd, struct request *rq, json_t *body)
{
	long index = -1, status;
	json_t *step = match_step(rq, &index);

	if (!step)
		step = next_step(&index);
	int want_stream, close_after = rq->close, ret;
	const char *model, *raw;

	log_request(rq, body, index);
	if (!step) {
		char *msg = xstrfmt("{\"error\":{\"message\":\"mockllm: no script step left for "
				    "request %lu\",\"type\":\"mockllm\"}}", request_seq);

		ret = send_whole(fd, 500, "application/json", NULL, msg, strlen(msg), close_after);
		free(msg);
		return ret;
	}
	msleep((long)jsonx_int(step, "delay_ms", 0));
	if (jsonx_bool(step, "hang", 0)) {
		wait_for_close(fd);
		json_decref(step);
		return -1;
	}
	close_after |= jsonx_bool(step, "close", 0);
	status = (long)jsonx_int(step, "status", 200);
	model = jsonx_str(step, "model");
	if (!model)
		model = jsonx_str(body, "model");
	if (!model || !*model)
		model = "mock-model";
	want_stream = jsonx_bool(step, "stream", jsonx_bool(body, "stream", 0));
	raw = jsonx_str(step, "body");
	if (raw) {
		const char *ct = jsonx_str(json_object_get(step, "headers"), "Content-Type");

		ret = send_whole(fd, status, ct ? ct : "application/json", step, raw, strlen(raw),
				 close_after);
	} else if (json_is_array(json_object_get(step, "raw"))) {
		struct wlist w = { 0 };

		raw_writes(&w, json_object_get(step, "raw"));
		ret = send_stream(fd, step, &w, close_after);
		wlist_clear(&w);
	} else if (status != 200) {
		char *msg = xstrfmt("{\"error\":{\"message\":\"mock error %ld\",\"type\":\"mock\"}}",
				    status);

		ret = send_whole(fd, status, "application/json", step, msg, strlen(msg), close_after);
		free(msg);
	} else if (want_stream) {
		json_t *events = json_object_get(step, "events");
		json_t *gen = NULL;
		struct wlist writes = { 0 };
		json_t *so = json_object_get(body, "stream_options");

		if (!json_is_array(events))
			events = gen = generate_events(step, model, rq->body.len,
						       jsonx_bool(so, "include_usage", 0));
		plan_writes(&writes, step, events);
		ret = send_stream(fd, step, &writes, close_after);
		wlist_clear(&writes);
		json_decref(gen);
	} else {
		char *whole = generate_whole(step, model, rq->body.len);

		ret = send_whole(fd, 200, "application/json", step, whole, strlen(whole), close_after);
		free(whole);
	}
	json_decref(step);
	return ret;
}

static int answer_models(int fd, struct request *rq)
{
	json_t *j = json_pack("{s:s, s:[]}", "object", "list", "data");
	struct buf b = BUF_INIT;
	const json_t *m;
	size_t i;
	int ret;

	log_request(rq, NULL, -1);
	json_array_foreach(script_models, i, m) {
		json_t *e = json_pack("{s:O, s:s, s:s}", "id", m, "object", "model", "owned_by",
				      !strcmp(server_kind, "vllm") ? "vllm" :
				      !strcmp(server_kind, "llamacpp") ? "llamacpp" :
				      !strcmp(server_kind, "ollama") ? "library" : "mockllm");

		if (!strcmp(server_kind, "vllm")) {
			jsonx_set(e, "root", json_incref((json_t *)m));
			jsonx_set(e, "max_model_len", json_integer(server_int("max_model_len", 32768)));
		} else if (!strcmp(server_kind, "llamacpp")) {
			jsonx_set(e, "meta", json_pack("{s:i, s:i}", "n_ctx_train", 131072,
						       "n_vocab", 151936));
		}
		json_array_append_new(json_object_get(j, "data"), e);
	}
	jsonx_dump(&b, j, JSON_COMPACT);
	ret = send_whole(fd, 200, "application/json", NULL, b.buf, b.len, rq->close);
	buf_release(&b);
	json_decref(j);
	return ret;
}

/* ---- playing Ollama, llama.cpp and vLLM ---- */

static long server_int(const char *key, long def)
{
	return (long)jsonx_int(script_server, key, def);
}

static int send_json(int fd, struct request *rq, json_t *j)
{
	struct buf b = BUF_INIT;
	int ret;

	jsonx_dump(&b, j, JSON_COMPACT);
	ret = send_whole(fd, 200, "application/json", NULL, b.buf, b.len, rq->close);
	buf_release(&b);
	json_decref(j);
	return ret;
}

static int not_found(int fd, struct request *rq, json_t *body)
{
	const char *nf = "{\"error\":{\"message\":\"mockllm: no such endpoint\"}}";

	log_request(rq, body, -1);
	return send_whole(fd, 404, "application/json", NULL, nf, strlen(nf), rq->close);
}

/* "proxy": a server that answers any other POST with 200 and an object of its own */
static int answer_any_post(int fd, struct request *rq, json_t *body)
{
	const char *ok = "{\"ok\":true}";

	log_request(rq, body, -1);
	return send_whole(fd, 200, "application/json", NULL, ok, strlen(ok), rq->close);
}

/* llama.cpp: GET /props */
static int answer_props(int fd, struct request *rq)
{
	log_request(rq, NULL, -1);
	return send_json(fd, rq, json_pack("{s:{s:i, s:i, s:b, s:{s:i, s:f}}, s:i, s:s, s:s, s:s}",
		"default_generation_settings", "id", 0, "n_ctx", (int)server_int("n_ctx", 4096),
		"is_processing", 0, "params", "n_predict", -1, "temperature", 0.8,
		"total_slots", 1, "model_path", "/models/mock-model-Q4_K_M.gguf",
		"chat_template", "{{ messages }}", "build_info", "b0-mockllm"));
}

/* Ollama: POST /api/show {"model": NAME} */
static int answer_show(int fd, struct request *rq, json_t *body)
{
	const char *arch = jsonx_str(script_server, "architecture");
	long num_ctx = server_int("num_ctx", 0);
	struct buf params = BUF_INIT;
	char *key;
	json_t *info, *j;

	log_request(rq, body, -1);
	if (!arch)
		arch = "llama";
	if (num_ctx)
		buf_addf(&params, "num_ctx                        %ld\n", num_ctx);
	buf_addstr(&params, "stop                           \"<|im_start|>\"\n"
		   "stop                           \"<|im_end|>\"");
	info = json_pack("{s:s, s:i, s:I}", "general.architecture", arch, "general.file_type", 15,
			 "general.parameter_count", (json_int_t)7615616512LL);
	key = xstrfmt("%s.context_length", arch);
	jsonx_set(info, key, json_integer(server_int("context_length", 32768)));
	free(key);
	j = json_pack("{s:s, s:s, s:s, s:{s:s, s:s, s:s, s:[s], s:s, s:s}, s:o, s:[s,s]}",
		      "modelfile", "# Modelfile generated by \"ollama show\"\nFROM mock\n",
		      "parameters", params.buf, "template", "{{ .Prompt }}",
		      "details", "parent_model", "", "format", "gguf", "family", arch, "families",
		      arch, "parameter_size", "7.6B", "quantization_level", "Q4_K_M",
		      "model_info", info, "capabilities", "completion", "tools");
	buf_release(&params);
	return send_json(fd, rq, j);
}

/* Ollama: GET /api/ps, the loaded models (with "loaded_context": one, with that context) */
static int answer_ps(int fd, struct request *rq)
{
	json_t *j = json_pack("{s:[]}", "models");
	long ctx = server_int("loaded_context", 0);

	log_request(rq, NULL, -1);
	if (ctx && json_array_size(script_models))
		json_array_append_new(json_object_get(j, "models"), json_pack("{s:O, s:O, s:I, s:s, s:I}",
			"name", json_array_get(script_models, 0), "model", json_array_get(script_models, 0),
			"size", (json_int_t)5137025024LL, "expires_at", "2024-06-04T14:38:31.83753-07:00",
			"context_length", (json_int_t)ctx));
	return send_json(fd, rq, j);
}

/* Ollama: GET /api/tags */
static int answer_tags(int fd, struct request *rq)
{
	json_t *j = json_pack("{s:[]}", "models");
	const json_t *m;
	size_t i;

	log_request(rq, NULL, -1);
	json_array_foreach(script_models, i, m)
		json_array_append_new(json_object_get(j, "models"), json_pack("{s:O, s:O, s:s, s:i}",
			"name", m, "model", m, "modified_at", "2024-09-12T21:17:29.110811Z",
			"size", 4683087332));
	return send_json(fd, rq, j);
}

static json_t *ollama_line(const char *model, json_t *message, int done)
{
	json_t *j = json_pack("{s:s, s:s, s:o, s:b}", "model", model, "created_at",
			      "2024-07-22T20:33:28.123648Z", "message", message, "done", done);

	return j;
}

static void add_line(struct wlist *w, json_t *j, long delay)
{
	struct buf b = BUF_INIT;

	jsonx_dump(&b, j, JSON_COMPACT);
	buf_addch(&b, '\n');
	wlist_add(w, b.buf, b.len, delay);
	buf_release(&b);
	json_decref(j);
}

/* Ollama: POST /api/chat, a stream of NDJSON lines (or one object with "stream": false). */
static int answer_ollama_chat(int fd, struct request *rq, json_t *body)
{
	long index = -1, every;
	json_t *step = match_step(rq, &index), *calls, *final, *u, *tc;
	const char *model = jsonx_str(body, "model"), *text;
	struct wlist w = { 0 };
	size_t n, pos, i;
	int ret, stream = jsonx_bool(body, "stream", 1);

	if (!step)
		step = next_step(&index);
	log_request(rq, body, index);
	if (!step) {
		const char *e = "{\"error\":\"mockllm: no script step left\"}";

		return send_whole(fd, 500, "application/json", NULL, e, strlen(e), rq->close);
	}
	if (!model || !*model)
		model = "mock-model";
	if (jsonx_int(step, "status", 200) != 200) {
		char *e = xstrfmt("{\"error\":\"mock error %ld\"}", (long)jsonx_int(step, "status", 0));

		ret = send_whole(fd, (long)jsonx_int(step, "status", 500), "application/json", step, e,
				 strlen(e), rq->close);
		free(e);
		json_decref(step);
		return ret;
	}
	text = jsonx_str(step, "text");
	calls = json_object_get(step, "tool_calls");
	n = (size_t)jsonx_int(step, "delta_chars", 16);
	every = (long)jsonx_int(step, "event_delay_ms", 0);
	tc = json_array();
	json_array_foreach(calls, i, u) {
		json_t *a = json_object_get(u, "arguments");

		json_array_append_new(tc, json_pack("{s:{s:i, s:s, s:O}}", "function", "index",
			(int)i, "name", jsonx_str(u, "name") ? jsonx_str(u, "name") : "",
			"arguments", json_is_object(a) ? a : json_object()));
	}
	u = usage_for(step, rq->body.len);
	final = json_pack("{s:s, s:s, s:{s:s, s:s}, s:s, s:b, s:I, s:I, s:I}", "model", model,
			  "created_at", "2024-07-22T20:33:28.123648Z", "message", "role", "assistant",
			  "content", "", "done_reason", jsonx_str(step, "finish_reason") ?
			  jsonx_str(step, "finish_reason") : "stop", "done", 1,
			  "total_duration", (json_int_t)885095291,
			  "prompt_eval_count", (json_int_t)jsonx_int(u, "prompt_tokens", 0),
			  "eval_count", (json_int_t)jsonx_int(u, "completion_tokens", 0));
	json_decref(u);
	if (!stream) {
		json_t *msg = json_object_get(final, "message");

		jsonx_set(msg, "content", jsonx_string(text ? text : ""));
		if (json_array_size(tc))
			jsonx_set(msg, "tool_calls", json_incref(tc));
		json_decref(tc);
		json_decref(step);
		return send_json(fd, rq, final);
	}
	for (pos = 0; text && text[pos];) {
		size_t k = piece_len(text + pos, strlen(text + pos), n);

		add_line(&w, ollama_line(model, json_pack("{s:s, s:s%}", "role", "assistant", "content",
							  text + pos, k), 0), pos ? every : 0);
		pos += k;
	}
	if (json_array_size(tc))
		add_line(&w, ollama_line(model, json_pack("{s:s, s:s, s:O}", "role", "assistant",
							  "content", "", "tool_calls", tc), 0), every);
	add_line(&w, final, every);
	json_decref(tc);
	ret = send_stream_as(fd, step, &w, rq->close, "application/x-ndjson");
	wlist_clear(&w);
	json_decref(step);
	return ret;
}

static int ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg, one = 1;
	struct buf conn = BUF_INIT;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (;;) {
		struct request rq;
		json_t *body = NULL;
		int ret;

		memset(&rq, 0, sizeof(rq));
		buf_init(&rq.path, 0);
		buf_init(&rq.body, 0);
		if (read_request(fd, &conn, &rq) < 0) {
			buf_release(&rq.path);
			buf_release(&rq.body);
			json_decref(rq.headers);
			break;
		}
		/* strip a query string */
		rq.path.len = strcspn(rq.path.buf, "?");
		rq.path.buf[rq.path.len] = '\0';
		if (rq.body.len)
			jsonx_parse(&body, rq.body.buf, rq.body.len, "request");
		if (!strcmp(rq.method, "POST") && ends_with(rq.path.buf, "/chat/completions")) {
			ret = answer_chat(fd, &rq, body);
		} else if (!strcmp(rq.method, "GET") && ends_with(rq.path.buf, "/models")) {
			ret = answer_models(fd, &rq);
		} else if (!strcmp(server_kind, "llamacpp") && !strcmp(rq.method, "GET") &&
			   !strcmp(rq.path.buf, "/props")) {
			ret = answer_props(fd, &rq);
		} else if (!strcmp(server_kind, "ollama") && !strcmp(rq.method, "POST") &&
			   !strcmp(rq.path.buf, "/api/show")) {
			ret = answer_show(fd, &rq, body);
		} else if (!strcmp(server_kind, "ollama") && !strcmp(rq.method, "GET") &&
			   !strcmp(rq.path.buf, "/api/tags")) {
			ret = answer_tags(fd, &rq);
		} else if (!strcmp(server_kind, "ollama") && !strcmp(rq.method, "GET") &&
			   !strcmp(rq.path.buf, "/api/ps")) {
			ret = answer_ps(fd, &rq);
		} else if (!strcmp(server_kind, "ollama") && !strcmp(rq.method, "POST") &&
			   !strcmp(rq.path.buf, "/api/chat")) {
			ret = answer_ollama_chat(fd, &rq, body);
		} else if (!strcmp(server_kind, "proxy") && !strcmp(rq.method, "POST")) {
			ret = answer_any_post(fd, &rq, body);
		} else {
			ret = not_found(fd, &rq, body);
		}
		json_decref(body);
		json_decref(rq.headers);
		buf_release(&rq.path);
		buf_release(&rq.body);
		if (ret < 0)
			break;
	}
	buf_release(&conn);
	close(fd);
	return NULL;
}

static void usage(void)
{
	fputs("usage: mockllm --script FILE [--port-file FILE] [--log FILE] [--port N]\n", stderr);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *script = NULL, *port_file = NULL, *log_path = NULL;
	struct sockaddr_in sa;
	socklen_t sl = sizeof(sa);
	json_t *j = NULL;
	int i, lfd, one = 1, port = 0;

	for (i = 1; i < argc; i++) {
		if (i + 1 >= argc)
			usage();
		if (!strcmp(argv[i], "--script"))
			script = argv[++i];
		else if (!strcmp(argv[i], "--port-file"))
			port_file = argv[++i];
		else if (!strcmp(argv[i], "--log"))
			log_path = argv[++i];
		else if (!strcmp(argv[i], "--port"))
			port = atoi(argv[++i]);
		else
			usage();
	}
	if (!script)
		usage();
	signal(SIGPIPE, SIG_IGN);
	if (jsonx_load_file(&j, script, 0) < 0) {
		fprintf(stderr, "mockllm: %s\n", err_last());
		return 2;
	}
	if (json_is_array(j)) {
		script_steps = json_incref(j);
		script_models = json_pack("[s]", "mock-model");
	} else if (json_is_object(j)) {
		script_steps = json_incref(json_object_get(j, "steps"));
		if (!script_steps)
			script_steps = json_array();
		script_models = json_incref(json_object_get(j, "models"));
		script_server = json_incref(j);
		if (jsonx_str(j, "server"))
			server_kind = jsonx_str(j, "server");
		if (!json_is_array(script_models)) {
			json_decref(script_models);
			script_models = json_pack("[s]", "mock-model");
		}
	} else {
		fprintf(stderr, "mockllm: %s: expected a list of steps or {\"steps\": [...]}\n",
			script);
		return 2;
	}
	if (!script_server)
		json_decref(j);
	if (!json_is_array(script_steps)) {
		fprintf(stderr, "mockllm: %s: \"steps\" is not a list\n", script);
		return 2;
	}
	if (log_path) {
		log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (log_fd < 0) {
			perror(log_path);
			return 2;
		}
	}
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0) {
		perror("socket");
		return 1;
	}
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 64) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0) {
		perror("bind");
		return 1;
	}
	port = ntohs(sa.sin_port);
	printf("%d\n", port);
	fflush(stdout);
	if (port_file) {
		char text[16];
		int n = snprintf(text, sizeof(text), "%d\n", port);

		if (fsutil_write_atomic(port_file, text, (size_t)n, 0644) < 0) {
			fprintf(stderr, "mockllm: %s\n", err_last());
			return 1;
		}
	}
	for (;;) {
		pthread_t t;
		pthread_attr_t attr;
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			perror("accept");
			return 1;
		}
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &attr, serve, (void *)(intptr_t)fd))
			close(fd);
		pthread_attr_destroy(&attr);
	}
}
