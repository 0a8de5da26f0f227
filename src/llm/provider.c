#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>

#include "base/clock.h"
#include "base/jsonx.h"
#include "base/redact.h"
#include "llm/provider.h"
#include "llm/transcript.h"

static const char *const role_names[] = { "system", "user", "assistant", "tool" };

const char *llm_role_name(enum llm_role role)
{
	if ((unsigned)role >= ARRAY_SIZE(role_names))
		BUG("bad role %d", (int)role);
	return role_names[role];
}

int llm_role_from_name(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(role_names); i++)
		if (!strcmp(name, role_names[i]))
			return (int)i;
	return -1;
}

void llm_request_init(struct llm_request *req)
{
	struct llm_request blank = LLM_REQUEST_INIT;

	*req = blank;
}

static void tool_calls_free(struct llm_tool_call *calls, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++) {
		free(calls[i].id);
		free(calls[i].name);
		free(calls[i].arguments);
	}
	free(calls);
}

void llm_request_release(struct llm_request *req)
{
	size_t i;

	for (i = 0; i < req->messages_nr; i++) {
		struct llm_message *m = &req->messages[i];

		free(m->content);
		tool_calls_free(m->tool_calls, m->tool_calls_nr);
		free(m->tool_call_id);
		free(m->name);
	}
	free(req->messages);
	for (i = 0; i < req->tools_nr; i++) {
		free(req->tools[i].name);
		free(req->tools[i].description);
		json_decref(req->tools[i].parameters);
	}
	free(req->tools);
	free(req->tool_choice);
	free(req->model);
	llm_request_init(req);
}

struct llm_message *llm_request_add(struct llm_request *req, enum llm_role role,
				    const char *content)
{
	struct llm_message *m;

	ALLOC_GROW(req->messages, req->messages_nr + 1, req->messages_alloc);
	m = &req->messages[req->messages_nr++];
	memset(m, 0, sizeof(*m));
	m->role = role;
	m->content = content ? xstrdup(content) : NULL;
	return m;
}

void llm_message_add_tool_call(struct llm_message *m, const char *id, const char *name,
			       const char *arguments)
{
	struct llm_tool_call *c;

	ALLOC_GROW(m->tool_calls, m->tool_calls_nr + 1, m->tool_calls_alloc);
	c = &m->tool_calls[m->tool_calls_nr++];
	c->id = xstrdup(id ? id : "");
	c->name = xstrdup(name ? name : "");
	c->arguments = xstrdup(arguments ? arguments : "{}");
}

struct llm_message *llm_request_add_reply(struct llm_request *req, const struct llm_response *resp)
{
	struct llm_message *m;
	size_t i;

	m = llm_request_add(req, LLM_ASSISTANT,
			    resp->content && (*resp->content || !resp->tool_calls_nr) ?
			    resp->content : NULL);
	for (i = 0; i < resp->tool_calls_nr; i++)
		llm_message_add_tool_call(m, resp->tool_calls[i].id, resp->tool_calls[i].name,
					  resp->tool_calls[i].arguments);
	return m;
}

struct llm_message *llm_request_add_tool_result(struct llm_request *req, const char *tool_call_id,
						const char *name, const char *content)
{
	struct llm_message *m = llm_request_add(req, LLM_TOOL, content ? content : "");

	m->tool_call_id = xstrdup(tool_call_id);
	if (name)
		m->name = xstrdup(name);
	return m;
}

void llm_request_add_tool(struct llm_request *req, const char *name, const char *description,
			  json_t *parameters)
{
	struct llm_tool *t;

	ALLOC_GROW(req->tools, req->tools_nr + 1, req->tools_alloc);
	t = &req->tools[req->tools_nr++];
	t->name = xstrdup(name);
	t->description = description ? xstrdup(description) : NULL;
	t->parameters = parameters ? json_incref(parameters) : NULL;
}

void llm_response_release(struct llm_response *resp)
{
	struct llm_response blank = LLM_RESPONSE_INIT;

	free(resp->content);
	tool_calls_free(resp->tool_calls, resp->tool_calls_nr);
	free(resp->finish_reason);
	free(resp->model);
	strvec_clear(&resp->warnings);
	*resp = blank;
}

json_t *llm_response_to_json(const struct llm_response *resp)
{
	json_t *j = json_object(), *calls = json_array();
	size_t i;

	if (!j || !calls)
		die("out of memory");
	jsonx_set(j, "content", jsonx_string(resp->content ? resp->content : ""));
	for (i = 0; i < resp->tool_calls_nr; i++) {
		const struct llm_tool_call *c = &resp->tool_calls[i];

		if (json_array_append_new(calls, json_pack("{s:s, s:s, s:s}", "id", c->id,
							   "name", c->name, "arguments",
							   c->arguments)) < 0)
			die("out of memory");
	}
	jsonx_set(j, "tool_calls", calls);
	jsonx_set(j, "finish_reason", jsonx_string(resp->finish_reason ? resp->finish_reason : ""));
	jsonx_set(j, "model", jsonx_string(resp->model ? resp->model : ""));
	if (resp->usage.present)
		jsonx_set(j, "usage", json_pack("{s:I, s:I, s:I}",
						"prompt_tokens", (json_int_t)resp->usage.prompt_tokens,
						"completion_tokens", (json_int_t)resp->usage.completion_tokens,
						"total_tokens", (json_int_t)resp->usage.total_tokens));
	else
		jsonx_set(j, "usage", json_null());
	return j;
}

int llm_response_from_json(struct llm_response *out, const json_t *j)
{
	struct llm_response r = LLM_RESPONSE_INIT;
	const json_t *calls, *c, *u;
	const char *s;
	size_t i;

	if (!json_is_object(j))
		return err_set(FX_EPARSE, "a recorded response is not an object");
	s = jsonx_str(j, "content");
	r.content = xstrdup(s ? s : "");
	s = jsonx_str(j, "finish_reason");
	r.finish_reason = xstrdup(s ? s : "");
	s = jsonx_str(j, "model");
	r.model = xstrdup(s ? s : "");
	calls = json_object_get(j, "tool_calls");
	if (calls && !json_is_array(calls)) {
		llm_response_release(&r);
		return err_set(FX_EPARSE, "a recorded response's tool_calls is not an array");
	}
	json_array_foreach(calls, i, c) {
		const char *id = jsonx_str(c, "id"), *name = jsonx_str(c, "name"),
			   *args = jsonx_str(c, "arguments");

		if (!id || !name || !args) {
			llm_response_release(&r);
			return err_set(FX_EPARSE, "recorded tool call %zu lacks id, name or arguments",
				       i + 1);
		}
		ALLOC_GROW(r.tool_calls, r.tool_calls_nr + 1, r.tool_calls_alloc);
		r.tool_calls[r.tool_calls_nr].id = xstrdup(id);
		r.tool_calls[r.tool_calls_nr].name = xstrdup(name);
		r.tool_calls[r.tool_calls_nr].arguments = xstrdup(args);
		r.tool_calls_nr++;
	}
	u = json_object_get(j, "usage");
	if (json_is_object(u)) {
		r.usage.present = 1;
		r.usage.prompt_tokens = (long)jsonx_int(u, "prompt_tokens", 0);
		r.usage.completion_tokens = (long)jsonx_int(u, "completion_tokens", 0);
		r.usage.total_tokens = (long)jsonx_int(u, "total_tokens", 0);
	}
	*out = r;
	return 0;
}

static const struct provider_config *find_provider(const struct config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->providers_nr; i++)
		if (cfg->providers[i].name && !strcmp(cfg->providers[i].name, name ? name : "default"))
			return &cfg->providers[i];
	if (!name && cfg->providers_nr)
		return &cfg->providers[0];
	return NULL;
}

static char *dup_or_empty(const char *s)
{
	return xstrdup(s ? s : "");
}

int provider_open(struct provider **out, const struct config *cfg, const char *name,
		  struct transcript *tr)
{
	const struct provider_config *pc = find_provider(cfg, name);
	struct provider *p;
	const char *key;
	size_t n;
	int ret;

	if (!pc) {
		if (name)
			return err_set(FX_ENOTFOUND, "no provider '%s' is configured "
				       "(add a [providers.%s] table)", name, name);
		return err_set(FX_ENOTFOUND, "no provider is configured");
	}
	p = xcalloc(1, sizeof(*p));
	p->name = dup_or_empty(pc->name);
	p->base_url = dup_or_empty(pc->base_url);
	n = strlen(p->base_url);
	while (n && p->base_url[n - 1] == '/')
		p->base_url[--n] = '\0';
	p->model = dup_or_empty(pc->model);
	p->api_key_env = dup_or_empty(pc->api_key_env);
	p->stream = pc->stream;
	p->timeout_seconds = pc->timeout_seconds > 0 ? pc->timeout_seconds : 300;
	p->idle_timeout_seconds = pc->idle_timeout_seconds > 0 &&
				  pc->idle_timeout_seconds < p->timeout_seconds ?
				  pc->idle_timeout_seconds : p->timeout_seconds;
	p->max_retries = pc->max_retries >= 0 ? pc->max_retries : 0;
	p->transcript = tr;
	if (tr && *p->api_key_env && (key = getenv(p->api_key_env)) && *key)
		transcript_add_secret(tr, key);
	p->config_window = pc->context_window > 0 ? pc->context_window : 0;
	p->probe_window = xstrdup(pc->probe_window && *pc->probe_window ? pc->probe_window : "local");
	if (!pc->type || !*pc->type || !strcmp(pc->type, "openai")) {
		ret = openai_open(p, pc);
	} else if (!strcmp(pc->type, "ollama")) {
		ret = ollama_open(p, pc);
	} else if (!strcmp(pc->type, "replay")) {
		ret = replay_open(p, pc, cfg->workspace);
	} else {
		ret = err_set(FX_EINVAL, "provider '%s': unknown type '%s' (expected \"openai\", "
			      "\"ollama\" or \"replay\")", p->name, pc->type);
	}
	if (ret < 0) {
		provider_free(p);
		return ret;
	}
	*out = p;
	return 0;
}

void provider_set_cancel(struct provider *p, const volatile sig_atomic_t *flag)
{
	p->cancel = flag;
}

int provider_chat(struct provider *p, struct llm_response *out, const struct llm_request *req,
		  llm_text_fn on_text, void *cb_data)
{
	struct llm_response r = LLM_RESPONSE_INIT;
	struct transcript_exchange x;
	json_t *body = p->ops->body ? p->ops->body(p, req) : llm_request_to_json(req, p->model, p->stream);
	double t0 = clk_mono_s();
	long long started = clk_wall_ms();
	struct buf wire = BUF_INIT;
	char *msg = NULL;
	int ret, rec;

	/*
	 * Nothing secret goes to a model, whatever part of the conversation it
	 * came in (a tool's output, an instruction file, the request): the
	 * body is redacted as a whole before it is sent.
	 */
	{
		json_t *clean = redact_json(body, NULL);

		json_decref(body);
		body = clean;
	}
	/* encoded once, for the wire and the transcript */
	if (p->transcript) {
		jsonx_dump(&wire, body, JSON_COMPACT);
		p->wire = &wire;
	}
	p->exchanges++;
	ret = p->ops->chat(p, &r, req, body, on_text, cb_data);
	p->wire = NULL;
	r.elapsed = clk_mono_s() - t0;
	if (ret < 0)
		msg = xstrdup(err_last());
	if (p->transcript) {
		memset(&x, 0, sizeof(x));
		x.provider = p->name;
		x.provider_type = p->ops->type;
		x.base_url = p->base_url;
		x.model = req->model && *req->model ? req->model : p->model;
		x.stream = p->stream;
		x.request = body;
		x.request_text = p->transcript ? &wire : NULL;
		x.response = ret < 0 ? NULL : &r;
		x.code = ret;
		x.error = msg;
		x.started_ms = started;
		x.elapsed = r.elapsed;
		x.retries = r.retries;
		x.http_status = r.http_status;
		x.context_window = p->window_probed ? p->context_window : 0;
		rec = transcript_record(p->transcript, &x);
		if (rec < 0 && ret >= 0)
			ret = rec;
	}
	if (ret < 0) {
		if (msg)
			err_set(ret, "%s", msg);
		llm_response_release(&r);
	} else {
		llm_response_release(out);
		*out = r;
	}
	free(msg);
	buf_release(&wire);
	json_decref(body);
	return ret;
}

void provider_free(struct provider *p)
{
	if (!p)
		return;
	if (p->ops && p->ops->release)
		p->ops->release(p);
	free(p->name);
	free(p->base_url);
	free(p->model);
	free(p->api_key_env);
	free(p->window_source);
	free(p->window_warning);
	free(p->probe_window);
	free(p);
}

long llm_backoff_ms(int attempt, long retry_after_ms, unsigned int rnd)
{
	long base = 500, half;
	int i;

	if (retry_after_ms >= 0)
		return retry_after_ms;
	for (i = 0; i < attempt && base < 30000; i++)
		base *= 2;
	if (base > 30000)
		base = 30000;
	half = base / 2;
	return half + (long)(rnd % (unsigned int)(half + 1));
}

long llm_parse_retry_after(const char *value, long long now)
{
	const char *p = value;
	long long secs = 0;
	time_t t;

	while (*p == ' ' || *p == '\t')
		p++;
	if (isdigit((unsigned char)*p)) {
		while (isdigit((unsigned char)*p)) {
			secs = secs * 10 + (*p++ - '0');
			if (secs > 86400 * 365)
				return -1;
		}
		while (*p == ' ' || *p == '\t')
			p++;
		return *p ? -1 : (long)(secs * 1000);
	}
	if (!*p)
		return -1;
	t = curl_getdate(p, NULL);
	if (t == (time_t)-1)
		return -1;
	if ((long long)t <= now)
		return 0;
	if ((long long)t - now > 86400 * 365)
		return -1;
	return (long)(((long long)t - now) * 1000);
}
