#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "llm/wire.h"

static void arr_append(json_t *arr, json_t *v)
{
	if (json_array_append_new(arr, v) < 0)
		die("out of memory");
}

static json_t *message_to_json(const struct llm_message *m)
{
	json_t *j = json_object();
	size_t i;

	if (!j)
		die("out of memory");
	jsonx_set(j, "role", jsonx_string(llm_role_name(m->role)));
	if (m->content)
		jsonx_set(j, "content", jsonx_string(m->content));
	else
		jsonx_set(j, "content", json_null());
	if (m->tool_calls_nr) {
		json_t *calls = json_array();

		for (i = 0; i < m->tool_calls_nr; i++) {
			const struct llm_tool_call *c = &m->tool_calls[i];
			json_t *fn = json_object(), *call = json_object();

			jsonx_set(fn, "name", jsonx_string(c->name ? c->name : ""));
			jsonx_set(fn, "arguments", jsonx_string(c->arguments ? c->arguments : "{}"));
			jsonx_set(call, "id", jsonx_string(c->id ? c->id : ""));
			jsonx_set(call, "type", jsonx_string("function"));
			jsonx_set(call, "function", fn);
			arr_append(calls, call);
		}
		jsonx_set(j, "tool_calls", calls);
	}
	if (m->tool_call_id)
		jsonx_set(j, "tool_call_id", jsonx_string(m->tool_call_id));
	if (m->name)
		jsonx_set(j, "name", jsonx_string(m->name));
	return j;
}

static json_t *tools_json(const struct llm_request *req)
{
	json_t *tools = json_array();
	size_t i;

	for (i = 0; i < req->tools_nr; i++) {
		const struct llm_tool *t = &req->tools[i];
		json_t *fn = json_object(), *tool = json_object();

		jsonx_set(fn, "name", jsonx_string(t->name));
		if (t->description)
			jsonx_set(fn, "description", jsonx_string(t->description));
		if (t->parameters)
			jsonx_set(fn, "parameters", json_incref(t->parameters));
		else
			jsonx_set(fn, "parameters",
				  json_pack("{s:s, s:{}}", "type", "object", "properties"));
		jsonx_set(tool, "type", jsonx_string("function"));
		jsonx_set(tool, "function", fn);
		arr_append(tools, tool);
	}
	return tools;
}

/*
 * Everything that stays the same within a conversation comes first and
 * "messages" last, so each request of an agent loop begins with the bytes
 * of the one before (less its closing "]}"), and prefix caches hit.
 */
json_t *llm_request_to_json(const struct llm_request *req, const char *model, int stream)
{
	json_t *j = json_object(), *msgs = json_array();
	size_t i;

	if (!j || !msgs)
		die("out of memory");
	jsonx_set(j, "model", jsonx_string(req->model && *req->model ? req->model :
					    model ? model : ""));
	if (req->tools_nr)
		jsonx_set(j, "tools", tools_json(req));
	if (req->tool_choice) {
		const char *tc = req->tool_choice;

		if (!strcmp(tc, "auto") || !strcmp(tc, "none") || !strcmp(tc, "required"))
			jsonx_set(j, "tool_choice", jsonx_string(tc));
		else
			jsonx_set(j, "tool_choice", json_pack("{s:s, s:{s:s}}", "type", "function",
							      "function", "name", tc));
	}
	if (req->temperature >= 0)
		jsonx_set(j, "temperature", json_real(req->temperature));
	if (req->max_tokens > 0)
		jsonx_set(j, "max_tokens", json_integer(req->max_tokens));
	if (stream) {
		jsonx_set(j, "stream", json_true());
		jsonx_set(j, "stream_options", json_pack("{s:b}", "include_usage", 1));
	} else {
		jsonx_set(j, "stream", json_false());
	}
	for (i = 0; i < req->messages_nr; i++)
		arr_append(msgs, message_to_json(&req->messages[i]));
	jsonx_set(j, "messages", msgs);
	return j;
}

int llm_request_from_json(struct llm_request *out, const json_t *j)
{
	const json_t *msgs = json_object_get(j, "messages"), *tools = json_object_get(j, "tools");
	const json_t *v, *t;
	size_t i, k;

	llm_request_init(out);
	if (!json_is_object(j) || !json_is_array(msgs))
		return err_set(FX_EPARSE, "not a request: no \"messages\" list");
	json_array_foreach(msgs, i, v) {
		const char *role = jsonx_str(v, "role");
		const json_t *content = json_object_get(v, "content"), *calls;
		struct llm_message *m;
		int r = role ? llm_role_from_name(role) : -1;

		if (!json_is_object(v) || r < 0 || (content && !json_is_string(content) &&
						    !json_is_null(content))) {
			llm_request_release(out);
			return err_set(FX_EPARSE, "message %zu: no known role or a content that is "
				       "not text", i + 1);
		}
		m = llm_request_add(out, (enum llm_role)r, json_string_value(content));
		calls = json_object_get(v, "tool_calls");
		json_array_foreach(calls, k, t) {
			const json_t *fn = json_object_get(t, "function");

			llm_message_add_tool_call(m, jsonx_str(t, "id"), jsonx_str(fn, "name"),
						  jsonx_str(fn, "arguments"));
		}
		if (jsonx_str(v, "tool_call_id"))
			m->tool_call_id = xstrdup(jsonx_str(v, "tool_call_id"));
		if (jsonx_str(v, "name"))
			m->name = xstrdup(jsonx_str(v, "name"));
	}
	json_array_foreach(tools, i, t) {
		const json_t *fn = json_object_get(t, "function");

		if (!jsonx_str(fn, "name"))
			continue;
		llm_request_add_tool(out, jsonx_str(fn, "name"), jsonx_str(fn, "description"),
				     json_object_get(fn, "parameters"));
	}
	if (jsonx_str(j, "model") && *jsonx_str(j, "model"))
		out->model = xstrdup(jsonx_str(j, "model"));
	return 0;
}

/* Ollama's message: arguments are an object, a tool result names its tool. */
static json_t *ollama_message(const struct llm_message *m)
{
	json_t *j = json_object();
	size_t i;

	jsonx_set(j, "role", jsonx_string(llm_role_name(m->role)));
	jsonx_set(j, "content", jsonx_string(m->content ? m->content : ""));
	if (m->tool_calls_nr) {
		json_t *calls = json_array();

		for (i = 0; i < m->tool_calls_nr; i++) {
			const struct llm_tool_call *c = &m->tool_calls[i];
			json_t *args = c->arguments ? json_loads(c->arguments, 0, NULL) : NULL;

			if (!json_is_object(args)) {
				json_decref(args);
				args = json_object();
			}
			arr_append(calls, json_pack("{s:{s:s, s:o}}", "function", "name",
						    c->name ? c->name : "", "arguments", args));
		}
		jsonx_set(j, "tool_calls", calls);
	}
	if (m->role == LLM_TOOL && m->name)
		jsonx_set(j, "tool_name", jsonx_string(m->name));
	return j;
}

json_t *wire_ollama_request(const struct llm_request *req, const char *model, int stream,
			    long num_ctx)
{
	json_t *j = json_object(), *msgs = json_array(), *opts = json_object();
	size_t i;

	jsonx_set(j, "model", jsonx_string(req->model && *req->model ? req->model :
					    model ? model : ""));
	if (req->tools_nr)
		jsonx_set(j, "tools", tools_json(req));
	if (num_ctx > 0)
		jsonx_set(opts, "num_ctx", json_integer(num_ctx));
	if (req->temperature >= 0)
		jsonx_set(opts, "temperature", json_real(req->temperature));
	if (req->max_tokens > 0)
		jsonx_set(opts, "num_predict", json_integer(req->max_tokens));
	jsonx_set(j, "options", opts);
	jsonx_set(j, "stream", json_boolean(stream));
	for (i = 0; i < req->messages_nr; i++)
		arr_append(msgs, ollama_message(&req->messages[i]));
	jsonx_set(j, "messages", msgs);
	return j;
}

void wire_error_text(struct buf *out, const char *body, size_t len)
{
	json_t *j = NULL, *e;
	const char *msg = NULL;
	size_t start = out->len, i, n;

	if (len && !jsonx_parse(&j, body, len, "error body")) {
		e = json_object_get(j, "error");
		if (json_is_object(e))
			msg = jsonx_str(e, "message");
		else if (json_is_string(e))
			msg = json_string_value(e);
		if (!msg)
			msg = jsonx_str(j, "message");
		if (!msg)
			msg = jsonx_str(j, "detail");
	}
	err_clear();
	if (msg) {
		body = msg;
		len = strlen(msg);
	}
	n = len > 500 ? 500 : len;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)body[i];

		buf_addch(out, c < 0x20 || c == 0x7f ? ' ' : c);
	}
	if (n < len)
		buf_addstr(out, "...");
	while (out->len > start && out->buf[out->len - 1] == ' ')
		buf_setlen(out, out->len - 1);
	if (out->len == start)
		buf_addstr(out, "(no error text)");
	json_decref(j);
}

void wire_asm_init(struct wire_asm *a, llm_text_fn on_text, void *cb_data)
{
	memset(a, 0, sizeof(*a));
	a->on_text = on_text;
	a->cb_data = cb_data;
	buf_init(&a->content, 0);
}

static void call_release(struct wire_call *c)
{
	buf_release(&c->id);
	buf_release(&c->name);
	buf_release(&c->arguments);
}

void wire_asm_release(struct wire_asm *a)
{
	size_t i;

	buf_release(&a->content);
	for (i = 0; i < a->calls_nr; i++)
		call_release(&a->calls[i]);
	FREE_AND_NULL(a->calls);
	a->calls_nr = a->calls_alloc = 0;
	FREE_AND_NULL(a->finish_reason);
	FREE_AND_NULL(a->model);
}

static int account(struct wire_asm *a, size_t n)
{
	if (n > WIRE_MAX_REPLY - a->total)
		return err_set(FX_ELIMIT, "the reply is larger than %u bytes", WIRE_MAX_REPLY);
	a->total += n;
	return 0;
}

static void read_usage(struct llm_usage *u, const json_t *usage)
{
	if (!json_is_object(usage))
		return;
	u->present = 1;
	u->prompt_tokens = (long)jsonx_int(usage, "prompt_tokens", 0);
	u->completion_tokens = (long)jsonx_int(usage, "completion_tokens", 0);
	u->total_tokens = (long)jsonx_int(usage, "total_tokens",
					  u->prompt_tokens + u->completion_tokens);
}

/* The call a delta without an "index" belongs to (some servers omit it). */
static struct wire_call *find_call(struct wire_asm *a, const json_t *delta)
{
	json_t *jidx = json_object_get(delta, "index");
	const char *id = jsonx_str(delta, "id");
	struct wire_call *c;
	long idx;
	size_t i;

	if (json_is_integer(jidx)) {
		json_int_t v = json_integer_value(jidx);

		if (v < 0 || v > 1000000) {
			err_set(FX_EPROVIDER, "a tool call delta has the index %lld", (long long)v);
			return NULL;
		}
		idx = (long)v;
		for (i = 0; i < a->calls_nr; i++)
			if (a->calls[i].index == idx)
				return &a->calls[i];
	} else {
		/* no index: a new id starts a new call, else continue the last */
		if (a->calls_nr && (!id || !*id || !strcmp(a->calls[a->calls_nr - 1].id.buf, id) ||
				    !a->calls[a->calls_nr - 1].id.len))
			return &a->calls[a->calls_nr - 1];
		idx = a->calls_nr ? a->calls[a->calls_nr - 1].index + 1 : 0;
	}
	if (a->calls_nr >= WIRE_MAX_CALLS) {
		err_set(FX_ELIMIT, "the reply has more than %d tool calls", WIRE_MAX_CALLS);
		return NULL;
	}
	ALLOC_GROW(a->calls, a->calls_nr + 1, a->calls_alloc);
	c = &a->calls[a->calls_nr++];
	memset(c, 0, sizeof(*c));
	c->index = idx;
	buf_init(&c->id, 0);
	buf_init(&c->name, 0);
	buf_init(&c->arguments, 0);
	return c;
}

static int take_tool_delta(struct wire_asm *a, const json_t *d)
{
	struct wire_call *c;
	const json_t *fn;
	const char *s;
	int ret;

	if (!json_is_object(d))
		return err_set(FX_EPROVIDER, "a tool call delta is not an object");
	c = find_call(a, d);
	if (!c)
		return err_last_code();
	s = jsonx_str(d, "id");
	if (s && *s && !c->id.len) {
		if ((ret = account(a, strlen(s))) < 0)
			return ret;
		buf_addstr(&c->id, s);
	}
	fn = json_object_get(d, "function");
	if (!fn)
		return 0;
	if (!json_is_object(fn))
		return err_set(FX_EPROVIDER, "a tool call's \"function\" is not an object");
	s = jsonx_str(fn, "name");
	/* the name comes whole, once; some servers repeat it in every delta */
	if (s && *s && !c->name.len) {
		if ((ret = account(a, strlen(s))) < 0)
			return ret;
		buf_addstr(&c->name, s);
	}
	fn = json_object_get(fn, "arguments");
	if (json_is_string(fn)) {
		size_t n = json_string_length(fn);

		if ((ret = account(a, n)) < 0)
			return ret;
		buf_add(&c->arguments, json_string_value(fn), n);
	} else if (json_is_object(fn) && !c->arguments.len) {
		/* a server that sends the arguments as an object, whole */
		struct buf tmp = BUF_INIT;

		jsonx_dump(&tmp, fn, JSON_COMPACT);
		ret = account(a, tmp.len);
		if (!ret)
			buf_addbuf(&c->arguments, &tmp);
		buf_release(&tmp);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int wire_asm_chunk(struct wire_asm *a, const json_t *chunk)
{
	const json_t *choices, *choice = NULL, *delta, *v;
	const char *s;
	size_t i;
	int ret;

	if (!json_is_object(chunk))
		return err_set(FX_EPROVIDER, "a streamed chunk is not a JSON object");
	a->chunks++;
	v = json_object_get(chunk, "error");
	if (v && !json_is_null(v)) {
		struct buf d = BUF_INIT, t = BUF_INIT;

		jsonx_dump(&d, chunk, JSON_COMPACT);
		wire_error_text(&t, d.buf, d.len);
		ret = err_set(FX_EPROVIDER, "the server reported an error in the stream: %s", t.buf);
		buf_release(&d);
		buf_release(&t);
		return ret;
	}
	s = jsonx_str(chunk, "model");
	if (s && *s && !a->model)
		a->model = xstrdup(s);
	read_usage(&a->usage, json_object_get(chunk, "usage"));
	choices = json_object_get(chunk, "choices");
	if (!choices || json_is_null(choices))
		return 0;
	if (!json_is_array(choices))
		return err_set(FX_EPROVIDER, "a streamed chunk's \"choices\" is not an array");
	for (i = 0; i < json_array_size(choices); i++) {
		const json_t *c = json_array_get(choices, i);

		if (json_is_object(c) && jsonx_int(c, "index", 0) == 0) {
			choice = c;
			break;
		}
	}
	if (!choice)
		return 0;
	delta = json_object_get(choice, "delta");
	if (json_is_object(delta)) {
		v = json_object_get(delta, "content");
		if (json_is_string(v) && json_string_length(v)) {
			size_t n = json_string_length(v);

			if ((ret = account(a, n)) < 0)
				return ret;
			buf_add(&a->content, json_string_value(v), n);
			if (a->on_text) {
				a->on_text(a->cb_data, json_string_value(v), n);
				a->text_delivered += n;
			}
		}
		v = json_object_get(delta, "tool_calls");
		if (json_is_array(v)) {
			const json_t *d;

			json_array_foreach(v, i, d)
				if ((ret = take_tool_delta(a, d)) < 0)
					return ret;
		} else if (v && !json_is_null(v)) {
			return err_set(FX_EPROVIDER, "a delta's \"tool_calls\" is not an array");
		}
	}
	s = jsonx_str(choice, "finish_reason");
	if (s && *s) {
		free(a->finish_reason);
		a->finish_reason = xstrdup(s);
	}
	return 0;
}

int wire_asm_event(struct wire_asm *a, const char *data, size_t len)
{
	json_t *j = NULL;
	int ret;

	while (len && (data[len - 1] == ' ' || data[len - 1] == '\n'))
		len--;
	if (len == 6 && !memcmp(data, "[DONE]", 6)) {
		a->done = 1;
		return 0;
	}
	if (a->done)
		return err_set(FX_EPROVIDER, "the server sent data after [DONE]");
	ret = jsonx_parse(&j, data, len, "a streamed chunk");
	if (ret < 0)
		return err_prefix(FX_EPROVIDER, "malformed reply");
	ret = wire_asm_chunk(a, j);
	json_decref(j);
	return ret;
}

/* Checks shared by streamed and whole replies. */
static int check_reply(struct llm_response *r)
{
	size_t i;

	if (!*r->content && !r->tool_calls_nr) {
		if (!strcmp(r->finish_reason, "length"))
			return err_set(FX_EPROVIDER, "the reply was cut at the token limit before "
				       "any text (finish_reason \"length\")");
		return err_set(FX_EPROVIDER, "the reply has neither text nor tool calls%s%s%s",
			       *r->finish_reason ? " (finish_reason \"" : "", r->finish_reason,
			       *r->finish_reason ? "\")" : "");
	}
	for (i = 0; i < r->tool_calls_nr; i++) {
		struct llm_tool_call *c = &r->tool_calls[i];

		if (!c->name || !*c->name)
			return err_set(FX_EPROVIDER, "tool call %zu of the reply has no function name",
				       i + 1);
		if (!c->id || !*c->id) {
			free(c->id);
			c->id = xstrfmt("call_%zu", i);
		}
		if (!c->arguments || !*c->arguments) {
			free(c->arguments);
			c->arguments = xstrdup("{}");
		}
	}
	return 0;
}

static int cmp_call_index(const void *x, const void *y)
{
	const struct wire_call *a = x, *b = y;

	return (a->index > b->index) - (a->index < b->index);
}

int wire_asm_finish(struct wire_asm *a, struct llm_response *out)
{
	struct llm_response r = LLM_RESPONSE_INIT;
	size_t i;
	int ret;

	if (!a->finish_reason && !a->done)
		return err_set(FX_EPROVIDER, "the stream ended before the reply was complete "
			       "(no finish_reason and no [DONE] after %zu chunks)", a->chunks);
	if (a->calls_nr > 1)	/* qsort(NULL, 0, ...) is undefined */
		qsort(a->calls, a->calls_nr, sizeof(*a->calls), cmp_call_index);
	r.content = buf_detach(&a->content, NULL);
	r.finish_reason = xstrdup(a->finish_reason ? a->finish_reason : "");
	r.model = xstrdup(a->model ? a->model : "");
	r.usage = a->usage;
	for (i = 0; i < a->calls_nr; i++) {
		struct wire_call *c = &a->calls[i];

		ALLOC_GROW(r.tool_calls, r.tool_calls_nr + 1, r.tool_calls_alloc);
		r.tool_calls[r.tool_calls_nr].id = buf_detach(&c->id, NULL);
		r.tool_calls[r.tool_calls_nr].name = buf_detach(&c->name, NULL);
		r.tool_calls[r.tool_calls_nr].arguments = buf_detach(&c->arguments, NULL);
		r.tool_calls_nr++;
	}
	ret = check_reply(&r);
	if (ret < 0) {
		llm_response_release(&r);
		return ret;
	}
	r.retries = out->retries;
	r.http_status = out->http_status;
	llm_response_release(out);
	*out = r;
	return 0;
}

int wire_parse_reply(struct llm_response *out, const char *body, size_t len)
{
	struct llm_response r = LLM_RESPONSE_INIT;
	json_t *j = NULL, *choice, *msg, *calls, *v;
	const char *s;
	size_t i;
	int ret;

	ret = jsonx_parse(&j, body, len, "the reply");
	if (ret < 0)
		return err_prefix(FX_EPROVIDER, "malformed reply");
	if (!json_is_object(j)) {
		ret = err_set(FX_EPROVIDER, "malformed reply: not a JSON object");
		goto out;
	}
	if (json_object_get(j, "error")) {
		struct buf t = BUF_INIT;

		wire_error_text(&t, body, len);
		ret = err_set(FX_EPROVIDER, "the server reported an error: %s", t.buf);
		buf_release(&t);
		goto out;
	}
	choice = json_array_get(json_object_get(j, "choices"), 0);
	msg = json_object_get(choice, "message");
	if (!json_is_object(msg)) {
		ret = err_set(FX_EPROVIDER, "malformed reply: no choices[0].message");
		goto out;
	}
	v = json_object_get(msg, "content");
	if (v && !json_is_null(v) && !json_is_string(v)) {
		ret = err_set(FX_EPROVIDER, "malformed reply: choices[0].message.content is not a string");
		goto out;
	}
	r.content = xstrdup(json_is_string(v) ? json_string_value(v) : "");
	s = jsonx_str(choice, "finish_reason");
	r.finish_reason = xstrdup(s ? s : "");
	s = jsonx_str(j, "model");
	r.model = xstrdup(s ? s : "");
	read_usage(&r.usage, json_object_get(j, "usage"));
	calls = json_object_get(msg, "tool_calls");
	if (calls && !json_is_null(calls) && !json_is_array(calls)) {
		ret = err_set(FX_EPROVIDER, "malformed reply: tool_calls is not an array");
		goto out;
	}
	json_array_foreach(calls, i, v) {
		json_t *fn = json_object_get(v, "function"), *args;
		struct buf a = BUF_INIT;
		const char *id = jsonx_str(v, "id"), *name = jsonx_str(fn, "name");

		if (i >= WIRE_MAX_CALLS) {
			ret = err_set(FX_ELIMIT, "the reply has more than %d tool calls", WIRE_MAX_CALLS);
			goto out;
		}
		args = json_object_get(fn, "arguments");
		if (json_is_string(args))
			buf_addstr(&a, json_string_value(args));
		else if (json_is_object(args))
			jsonx_dump(&a, args, JSON_COMPACT);
		ALLOC_GROW(r.tool_calls, r.tool_calls_nr + 1, r.tool_calls_alloc);
		r.tool_calls[r.tool_calls_nr].id = xstrdup(id ? id : "");
		r.tool_calls[r.tool_calls_nr].name = xstrdup(name ? name : "");
		r.tool_calls[r.tool_calls_nr].arguments = buf_detach(&a, NULL);
		r.tool_calls_nr++;
	}
	ret = check_reply(&r);
	if (ret < 0)
		goto out;
	r.retries = out->retries;
	r.http_status = out->http_status;
	llm_response_release(out);
	*out = r;
	memset(&r, 0, sizeof(r));
	strvec_init(&r.warnings);
out:
	llm_response_release(&r);
	json_decref(j);
	return ret;
}

int wire_ollama_chunk(struct wire_asm *a, const char *data, size_t len)
{
	json_t *j = NULL, *msg, *v, *c;
	const char *s;
	size_t i;
	int ret;

	while (len && (data[len - 1] == '\r' || data[len - 1] == ' '))
		len--;
	if (!len)
		return 0;
	if (a->done)
		return err_set(FX_EPROVIDER, "the server sent data after its last (\"done\") line");
	ret = jsonx_parse(&j, data, len, "a streamed line");
	if (ret < 0)
		return err_prefix(FX_EPROVIDER, "malformed reply");
	if (!json_is_object(j)) {
		ret = err_set(FX_EPROVIDER, "a streamed line is not a JSON object");
		goto out;
	}
	a->chunks++;
	v = json_object_get(j, "error");
	if (v && !json_is_null(v)) {
		struct buf t = BUF_INIT;

		wire_error_text(&t, data, len);
		ret = err_set(FX_EPROVIDER, "the server reported an error in the stream: %s", t.buf);
		buf_release(&t);
		goto out;
	}
	s = jsonx_str(j, "model");
	if (s && *s && !a->model)
		a->model = xstrdup(s);
	msg = json_object_get(j, "message");
	if (json_is_object(msg)) {
		v = json_object_get(msg, "content");
		if (json_is_string(v) && json_string_length(v)) {
			size_t n = json_string_length(v);

			if ((ret = account(a, n)) < 0)
				goto out;
			buf_add(&a->content, json_string_value(v), n);
			if (a->on_text) {
				a->on_text(a->cb_data, json_string_value(v), n);
				a->text_delivered += n;
			}
		}
		v = json_object_get(msg, "tool_calls");
		if (v && !json_is_null(v) && !json_is_array(v)) {
			ret = err_set(FX_EPROVIDER, "a message's \"tool_calls\" is not an array");
			goto out;
		}
		json_array_foreach(v, i, c) {
			const json_t *fn = json_object_get(c, "function"), *args;
			struct wire_call *w;

			if (!json_is_object(fn)) {
				ret = err_set(FX_EPROVIDER, "a tool call has no \"function\" object");
				goto out;
			}
			if (a->calls_nr >= WIRE_MAX_CALLS) {
				ret = err_set(FX_ELIMIT, "the reply has more than %d tool calls",
					      WIRE_MAX_CALLS);
				goto out;
			}
			ALLOC_GROW(a->calls, a->calls_nr + 1, a->calls_alloc);
			w = &a->calls[a->calls_nr];
			memset(w, 0, sizeof(*w));
			w->index = (long)a->calls_nr;
			a->calls_nr++;
			buf_init(&w->id, 0);
			buf_init(&w->name, 0);
			buf_init(&w->arguments, 0);
			if ((s = jsonx_str(c, "id")))
				buf_addstr(&w->id, s);
			if ((s = jsonx_str(fn, "name")))
				buf_addstr(&w->name, s);
			args = json_object_get(fn, "arguments");
			if (json_is_string(args))
				buf_addstr(&w->arguments, json_string_value(args));
			else if (args)
				jsonx_dump(&w->arguments, args, JSON_COMPACT);
			if ((ret = account(a, w->name.len + w->arguments.len)) < 0)
				goto out;
		}
	}
	if (jsonx_bool(j, "done", 0)) {
		a->done = 1;
		s = jsonx_str(j, "done_reason");
		free(a->finish_reason);
		a->finish_reason = xstrdup(s && *s ? s : "stop");
		if (a->calls_nr && !strcmp(a->finish_reason, "stop")) {
			free(a->finish_reason);
			a->finish_reason = xstrdup("tool_calls");
		}
		if (json_is_integer(json_object_get(j, "prompt_eval_count")) ||
		    json_is_integer(json_object_get(j, "eval_count"))) {
			a->usage.present = 1;
			a->usage.prompt_tokens = (long)jsonx_int(j, "prompt_eval_count", 0);
			a->usage.completion_tokens = (long)jsonx_int(j, "eval_count", 0);
			a->usage.total_tokens = a->usage.prompt_tokens + a->usage.completion_tokens;
		}
	}
	ret = 0;
out:
	json_decref(j);
	return ret;
}
