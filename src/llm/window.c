/*
 * The model's context window: asked of the server once per provider
 * (vLLM's /v1/models, llama.cpp's /props, Ollama's /api/show), or taken
 * from the configuration. See provider_context_window() in provider.h.
 *
 * A server is taken for one kind only by the shape of its own answer (a
 * proxy that answers 200 to everything is none of them). Only servers on
 * this machine are asked unless probe_window says otherwise, and what an
 * "openai" provider's probe found, or what /api/show said to a provider of
 * type "ollama", is kept a day in the user's cache (forgex/windows.json),
 * per base URL and model, so the next run asks nothing.
 */
#include <time.h>
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/http.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/xdg.h"
#include "llm/provider.h"

/* How long one question may take; a server that does not answer is asked nothing more. */
#define PROBE_TIMEOUT_MS 3000L
#define PROBE_MAX_BODY (8u << 20)
/* How long a probed window is kept in the cache. */
#define CACHE_SECONDS (24L * 3600)
#define CACHE_MAX_BYTES (1u << 20)
#define CACHE_MAX_ENTRIES 64

char *provider_root_url(const char *base_url)
{
	size_t n = strlen(base_url);

	while (n && base_url[n - 1] == '/')
		n--;
	if (n >= 3 && !strncmp(base_url + n - 3, "/v1", 3))
		n -= 3;
	else if (n >= 4 && !strncmp(base_url + n - 4, "/api", 4))
		n -= 4;
	return xstrndup(base_url, n);
}

/*
 * GET (body NULL) or POST `url`; the parsed JSON of a 200 answer, or NULL
 * (any failure: the server is not of that kind, or not there). Sets
 * `*unreachable` when nothing answered at all.
 */
static json_t *ask(const struct provider *p, const char *url, const char *body, int *unreachable)
{
	struct buf reply = BUF_INIT_CAP(PROBE_MAX_BODY);
	struct curl_slist *h = NULL;
	const char *key = *p->api_key_env ? getenv(p->api_key_env) : NULL;
	json_t *j = NULL;
	long status = 0;
	CURLcode res;
	CURL *c;

	if (http_easy_new(&c, url, NULL) < 0) {
		err_clear();
		return NULL;
	}
	http_header_add(&h, "Accept: application/json");
	if (body)
		http_header_add(&h, "Content-Type: application/json");
	http_header_add(&h, "Expect:");
	if (key && *key)
		http_header_bearer(&h, key);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POST, 1L);
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	}
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, http_collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, PROBE_TIMEOUT_MS);
	res = curl_easy_perform(c);
	if (res == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	else if (res == CURLE_COULDNT_CONNECT || res == CURLE_OPERATION_TIMEDOUT ||
		 res == CURLE_COULDNT_RESOLVE_HOST)
		*unreachable = 1;
	if (status == 200 && jsonx_parse(&j, reply.buf, reply.len, url) < 0)
		j = NULL;
	err_clear();
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	buf_release(&reply);
	return j;
}

static long positive(const json_t *v)
{
	if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) < 100000000)
		return (long)json_integer_value(v);
	return 0;
}

/* vLLM: {"data": [{"id": MODEL, "max_model_len": N}, ...]} */
static long from_models(const json_t *j, const char *model)
{
	const json_t *list = json_object_get(j, "data"), *m, *only = NULL;
	size_t i;

	json_array_foreach(list, i, m) {
		const char *id = jsonx_str(m, "id");

		if (id && !strcmp(id, model))
			return positive(json_object_get(m, "max_model_len"));
		only = i == 0 ? m : NULL;
	}
	/* a server with one model answers for it whatever it is called */
	return only && json_array_size(list) == 1 ? positive(json_object_get(only, "max_model_len")) : 0;
}

/* Ollama's "parameters" text: "num_ctx                        4096\nstop ..." */
static long parameters_num_ctx(const char *params)
{
	const char *p = params;

	while (p && *p) {
		while (*p == ' ' || *p == '\n')
			p++;
		if (!strncmp(p, "num_ctx", 7) && (p[7] == ' ' || p[7] == '\t')) {
			long v = strtol(p + 7, NULL, 10);

			return v > 0 ? v : 0;
		}
		p = strchr(p, '\n');
	}
	return 0;
}

/* Ollama /api/show: the model's own window (<arch>.context_length) and the num_ctx in force. */
static void ollama_show(const json_t *j, long *context_length, long *num_ctx)
{
	const json_t *info = json_object_get(j, "model_info");
	const char *arch = jsonx_str(info, "general.architecture"), *k;
	json_t *v;

	*context_length = 0;
	if (arch) {
		char *key = xstrfmt("%s.context_length", arch);

		*context_length = positive(json_object_get(info, key));
		free(key);
	}
	if (!*context_length)
		json_object_foreach((json_t *)info, k, v)
			if (strlen(k) > 15 && !strcmp(k + strlen(k) - 15, ".context_length"))
				*context_length = positive(v);
	*num_ctx = parameters_num_ctx(jsonx_str(j, "parameters"));
}

static void set_window(struct provider *p, long tokens, const char *source)
{
	p->context_window = tokens;
	free(p->window_source);
	p->window_source = xstrdup(source);
}

static void warn(struct provider *p, const char *fmt, ...) FX_PRINTF(2, 3);
static void warn(struct provider *p, const char *fmt, ...)
{
	va_list ap;

	free(p->window_warning);
	va_start(ap, fmt);
	p->window_warning = xstrvfmt(fmt, ap);
	va_end(ap);
}

/*
 * Is this Ollama's own /api/show answer? It always describes the model:
 * "model_info", or its "modelfile", "parameters" or "template" text, or
 * "details". Anything else (an empty object from a proxy that answers
 * every POST) is not Ollama.
 */
static int is_ollama_show(const json_t *j)
{
	return json_is_object(j) && (json_is_object(json_object_get(j, "model_info")) ||
				     json_is_string(json_object_get(j, "modelfile")) ||
				     json_is_string(json_object_get(j, "parameters")) ||
				     json_is_string(json_object_get(j, "template")) ||
				     json_is_object(json_object_get(j, "details")));
}

static json_t *show(struct provider *p, const char *root, int *unreachable)
{
	json_t *req = json_pack("{s:s}", "model", p->model), *j;
	struct buf b = BUF_INIT;
	char *url = xstrfmt("%s/api/show", root);

	jsonx_dump(&b, req, JSON_COMPACT);
	j = ask(p, url, b.buf, unreachable);
	if (j && !is_ollama_show(j)) {
		json_decref(j);
		j = NULL;
	}
	json_decref(req);
	buf_release(&b);
	free(url);
	return j;
}

/*
 * The context of `p->model` as Ollama has it loaded (GET /api/ps, newer
 * versions: models[].context_length), which reflects OLLAMA_CONTEXT_LENGTH
 * and Ollama's own default; 0 when it is not loaded or not said.
 */
static long ollama_loaded_ctx(struct provider *p, const char *root)
{
	char *url = xstrfmt("%s/api/ps", root), *latest = xstrfmt("%s:latest", p->model);
	int unreachable = 0;
	json_t *j = ask(p, url, NULL, &unreachable), *m;
	long n = 0;
	size_t i;

	json_array_foreach(json_object_get(j, "models"), i, m) {
		const char *name = jsonx_str(m, "name"), *model = jsonx_str(m, "model");

		if ((name && (!strcmp(name, p->model) || !strcmp(name, latest))) ||
		    (model && (!strcmp(model, p->model) || !strcmp(model, latest))))
			n = positive(json_object_get(m, "context_length"));
	}
	json_decref(j);
	free(url);
	free(latest);
	return n;
}

static int ollama_cache_get(const struct provider *p, long *ctxlen, long *modelfile);
static void ollama_cache_put(const struct provider *p, long ctxlen, long modelfile);

/*
 * type "ollama": decide the num_ctx every request carries. What /api/show
 * said of this model (its own window, the Modelfile's num_ctx) is kept a
 * day in the same cache as the probe's, so a second run asks nothing;
 * the decision itself is made again each run, since context_window may
 * have changed in the configuration.
 */
static void decide_ollama(struct provider *p, const char *root)
{
	int unreachable = 0;
	json_t *j;
	long ctxlen = 0, modelfile = 0, n;

	if (!ollama_cache_get(p, &ctxlen, &modelfile)) {
		j = show(p, root, &unreachable);
		if (j) {
			ollama_show(j, &ctxlen, &modelfile);
			ollama_cache_put(p, ctxlen, modelfile);
		}
		json_decref(j);
	}
	if (p->config_window) {
		n = p->config_window;
		if (ctxlen && n > ctxlen) {
			warn(p, "provider '%s': context_window = %ld is more than %s's own window of "
			     "%ld tokens; forgex uses %ld", p->name, n, p->model, ctxlen, ctxlen);
			n = ctxlen;
		}
		p->num_ctx = n;
		set_window(p, n, "config");
		return;
	}
	if (modelfile >= LLM_WINDOW_NEEDED)
		n = modelfile;	/* what the model is set up with: no reload */
	else
		n = ctxlen && ctxlen < LLM_OLLAMA_NUM_CTX ? ctxlen : LLM_OLLAMA_NUM_CTX;
	p->num_ctx = n;
	set_window(p, n, "Ollama /api/show");
	if (n < LLM_WINDOW_NEEDED)
		warn(p, "provider '%s': %s's own context window is %ld tokens, less than the %d "
		     "forgex needs for real work; expect frequent compaction, or use a model "
		     "with a larger window", p->name, p->model, n, LLM_WINDOW_NEEDED);
}

/* ---- the cache of probed windows ---- */

static char *cache_path(void)
{
	return xdg_path(XDG_DIR_CACHE, "forgex/windows.json");
}

static json_t *cache_load(const char *path)
{
	struct buf b = BUF_INIT;
	json_t *j = NULL;

	if (path && fsutil_read_file(&b, path, CACHE_MAX_BYTES) == 0)
		j = json_loadb(b.buf, b.len, 0, NULL);
	err_clear();
	buf_release(&b);
	if (!json_is_array(j)) {
		json_decref(j);
		j = json_array();
	}
	return j;
}

/*
 * Entries are of two kinds: a window an "openai" provider's probe found
 * (no "kind"), and what Ollama's /api/show said of a model for a provider
 * of type "ollama" ("kind": "ollama-show"). Each is keyed by base URL and
 * model, and one never stands for the other.
 */
static int cache_entry_is(const json_t *e, const struct provider *p, const char *kind)
{
	const char *u = jsonx_str(e, "base_url"), *m = jsonx_str(e, "model"),
		   *k = jsonx_str(e, "kind");

	return u && m && !strcmp(u, p->base_url ? p->base_url : "") && !strcmp(m, p->model) &&
	       (kind ? k && !strcmp(k, kind) : !k);
}

static int cache_fresh(const json_t *e, long long now)
{
	json_int_t at = json_integer_value(json_object_get(e, "time"));

	return at <= now && now - at < CACHE_SECONDS;
}

/* A window this server told a run of the last day, for this model. */
static int cache_get(struct provider *p)
{
	char *path = cache_path();
	json_t *all = cache_load(path), *e;
	long long now = (long long)time(NULL);
	size_t i;
	int found = 0;

	json_array_foreach(all, i, e) {
		long n = positive(json_object_get(e, "window"));
		const char *src = jsonx_str(e, "source"), *w = jsonx_str(e, "warning");

		if (!cache_entry_is(e, p, NULL) || !n || !src || !cache_fresh(e, now))
			continue;
		set_window(p, n, src);
		if (w)
			warn(p, "%s", w);
		found = 1;
		break;
	}
	json_decref(all);
	free(path);
	return found;
}

/* Store `entry` (taken; its key, kind and time set here) in place of this server's old one. */
static void cache_store(const struct provider *p, const char *kind, json_t *entry)
{
	char *path = cache_path(), *slash;
	json_t *all, *keep = json_array(), *e;
	long long now = (long long)time(NULL);
	struct buf b = BUF_INIT;
	size_t i;

	if (!path) {
		json_decref(keep);
		json_decref(entry);
		return;
	}
	all = cache_load(path);
	json_array_foreach(all, i, e) {
		/* drop this server's old answer, stale ones, and the oldest beyond the cap */
		if (!cache_entry_is(e, p, kind) && cache_fresh(e, now) &&
		    json_array_size(all) - i < CACHE_MAX_ENTRIES)
			json_array_append(keep, e);
	}
	jsonx_set(entry, "base_url", jsonx_string(p->base_url ? p->base_url : ""));
	jsonx_set(entry, "model", jsonx_string(p->model));
	if (kind)
		jsonx_set(entry, "kind", jsonx_string(kind));
	jsonx_set(entry, "time", json_integer((json_int_t)now));
	json_array_append_new(keep, entry);
	jsonx_dump(&b, keep, JSON_COMPACT);
	buf_addch(&b, '\n');
	if ((slash = strrchr(path, '/'))) {
		*slash = '\0';
		fsutil_mkdir_p(path, 0700);
		*slash = '/';
	}
	if (fsutil_write_atomic(path, b.buf, b.len, 0600) < 0)
		log_debug("window cache %s: %s", path, err_last());
	err_clear();
	buf_release(&b);
	json_decref(keep);
	json_decref(all);
	free(path);
}

static void cache_put(const struct provider *p)
{
	json_t *e = json_pack("{s:I, s:s}", "window", (json_int_t)p->context_window, "source",
			      p->window_source);

	if (p->window_warning)
		jsonx_set(e, "warning", jsonx_string(p->window_warning));
	cache_store(p, NULL, e);
}

/* What /api/show told a run of the last day of this model: 1 and the two numbers, or 0. */
static int ollama_cache_get(const struct provider *p, long *ctxlen, long *modelfile)
{
	char *path = cache_path();
	json_t *all = cache_load(path), *e;
	long long now = (long long)time(NULL);
	size_t i;
	int found = 0;

	json_array_foreach(all, i, e) {
		json_t *c = json_object_get(e, "context_length"), *n = json_object_get(e, "num_ctx");

		if (!cache_entry_is(e, p, "ollama-show") || !cache_fresh(e, now) ||
		    !json_is_integer(c) || !json_is_integer(n))
			continue;
		*ctxlen = positive(c);
		*modelfile = positive(n);
		found = 1;
		break;
	}
	json_decref(all);
	free(path);
	return found;
}

static void ollama_cache_put(const struct provider *p, long ctxlen, long modelfile)
{
	cache_store(p, "ollama-show", json_pack("{s:I, s:I}", "context_length", (json_int_t)ctxlen,
						"num_ctx", (json_int_t)modelfile));
}

/* Does probe_window let forgex ask this server? */
static int may_probe(const struct provider *p)
{
	const char *mode = p->probe_window ? p->probe_window : "local";

	if (!strcmp(mode, "never"))
		return 0;
	return !strcmp(mode, "always") || http_url_is_local(p->base_url ? p->base_url : "");
}

long provider_context_window(struct provider *p, const char **source, const char **warning)
{
	const char *type = p->ops && p->ops->type ? p->ops->type : "";
	char *root, *url;
	json_t *j;
	int unreachable = 0;
	long n;

	if (!p->window_probed) {
		p->window_probed = 1;
		root = provider_root_url(p->base_url ? p->base_url : "");
		if (!strcmp(type, "ollama")) {
			decide_ollama(p, root);
		} else if (p->config_window) {
			set_window(p, p->config_window, "config");
		} else if (!strcmp(type, "openai") && may_probe(p) && !cache_get(p)) {
			url = xstrfmt("%s/models", p->base_url);
			j = ask(p, url, NULL, &unreachable);
			free(url);
			if ((n = from_models(j, p->model)))
				set_window(p, n, "vLLM /v1/models");
			json_decref(j);
			if (!p->context_window && !unreachable) {
				url = xstrfmt("%s/props", root);
				j = ask(p, url, NULL, &unreachable);
				free(url);
				if ((n = positive(json_object_get(json_object_get(j,
						"default_generation_settings"), "n_ctx"))))
					set_window(p, n, "llama.cpp /props");
				json_decref(j);
			}
			if (!p->context_window && !unreachable && (j = show(p, root, &unreachable))) {
				long ctxlen, num_ctx, loaded = 0;

				ollama_show(j, &ctxlen, &num_ctx);
				json_decref(j);
				if (!num_ctx)
					loaded = ollama_loaded_ctx(p, root);
				n = num_ctx ? num_ctx : loaded ? loaded : LLM_OLLAMA_DEFAULT_CTX;
				if (ctxlen && n > ctxlen)
					n = ctxlen;
				set_window(p, n, "Ollama /api/show");
				if (n < LLM_WINDOW_NEEDED)
					warn(p, "provider '%s': Ollama runs %s with num_ctx %ld%s and "
					     "silently cuts the front of longer prompts (the system "
					     "prompt first); forgex needs %d tokens. Fix: set type = "
					     "\"ollama\" under [providers.%s] (forgex then sets num_ctx "
					     "on every request), or start Ollama with "
					     "OLLAMA_CONTEXT_LENGTH=%d, or add PARAMETER num_ctx %d to "
					     "the model's Modelfile. Until then forgex keeps every "
					     "request within %ld tokens", p->name, p->model, n,
					     num_ctx || loaded ? "" : " (assumed: its default when "
					     "neither the model nor the server sets one; set "
					     "context_window if yours is larger)",
					     LLM_WINDOW_NEEDED, p->name, LLM_OLLAMA_NUM_CTX,
					     LLM_OLLAMA_NUM_CTX, n);
			}
			if (!unreachable) {
				if (!p->context_window)
					set_window(p, http_url_is_local(p->base_url ? p->base_url
									   : "") ? 32768 : 131072,
						   "default");
				cache_put(p);
			}
		}
		if (!p->context_window)
			set_window(p, http_url_is_local(p->base_url ? p->base_url : "") ? 32768
				   : 131072, "default");
		free(root);
		log_debug("provider '%s': context window %ld tokens (%s)", p->name, p->context_window,
			  p->window_source);
	}
	if (source)
		*source = p->window_source;
	if (warning)
		*warning = p->window_warning;
	return p->context_window;
}
