/*
 * The "replay" provider: answers each request from a transcript, in
 * order, without a network.
 *
 * Request N is compared with the request of recorded exchange N after
 * both are redacted the same way; the top-level "model", "stream" and
 * "stream_options" are left out of the comparison, since they say how to
 * talk to a server, not what was asked. In strict mode (the default) a
 * difference fails with FX_EMISMATCH naming the exchange and the first
 * differing JSON path with both values abbreviated; in lenient mode the
 * same text becomes a warning on the response and the recorded answer is
 * given anyway. A recorded failure is replayed as the same failure.
 */
#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "base/path.h"
#include "base/utf8.h"
#include "llm/provider.h"
#include "llm/transcript.h"

#define ABBREV 60

struct replay {
	char *path;
	json_t *exchanges;
	size_t next;
	int lenient;
	struct strvec secrets;
};

static void replay_release(struct provider *p)
{
	struct replay *r = p->impl;

	if (!r)
		return;
	free(r->path);
	json_decref(r->exchanges);
	strvec_clear(&r->secrets);
	free(r);
	p->impl = NULL;
}

static void abbreviate(struct buf *out, const json_t *v)
{
	struct buf t = BUF_INIT;

	if (!v) {
		buf_addstr(out, "(absent)");
		return;
	}
	jsonx_dump(&t, v, JSON_COMPACT);
	if (t.len > ABBREV) {
		buf_setlen(&t, utf8_cut(t.buf, t.len, ABBREV - 3));
		buf_addstr(&t, "...");
	}
	buf_addbuf(out, &t);
	buf_release(&t);
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Sorted keys of `obj` (the array is allocated; the strings borrowed). */
static const char **sorted_keys(const json_t *obj, size_t *nr)
{
	const char **keys = xcalloc(json_object_size(obj) + 1, sizeof(*keys));
	const char *k;
	json_t *v;
	size_t n = 0;

	json_object_foreach((json_t *)obj, k, v)
		keys[n++] = k;
	qsort(keys, n, sizeof(*keys), cmp_str);
	*nr = n;
	return keys;
}

static void path_key(struct buf *path, const char *key)
{
	if (path->len)
		buf_addch(path, '.');
	buf_addstr(path, key);
}

/*
 * Find the first difference between `a` (recorded) and `b` (now). Returns
 * 1 with `path` naming it and *da / *db the values there (NULL: absent),
 * or 0 when equal.
 */
static int json_diff(struct buf *path, const json_t *a, const json_t *b, const json_t **da,
		     const json_t **db)
{
	size_t i, na, nb, len = path->len;
	const char **keys;

	*da = a;
	*db = b;
	if (json_typeof(a) != json_typeof(b))
		return 1;
	if (json_is_object(a)) {
		keys = sorted_keys(a, &na);
		for (i = 0; i < na; i++) {
			const json_t *bv = json_object_get(b, keys[i]);

			path_key(path, keys[i]);
			if (!bv || json_diff(path, json_object_get(a, keys[i]), bv, da, db)) {
				if (!bv) {
					*da = json_object_get(a, keys[i]);
					*db = NULL;
				}
				free(keys);
				return 1;
			}
			buf_setlen(path, len);
		}
		free(keys);
		keys = sorted_keys(b, &nb);
		for (i = 0; i < nb; i++) {
			if (!json_object_get(a, keys[i])) {
				path_key(path, keys[i]);
				*da = NULL;
				*db = json_object_get(b, keys[i]);
				free(keys);
				return 1;
			}
		}
		free(keys);
		return 0;
	}
	if (json_is_array(a)) {
		na = json_array_size(a);
		nb = json_array_size(b);
		for (i = 0; i < na && i < nb; i++) {
			buf_addf(path, "[%zu]", i);
			if (json_diff(path, json_array_get(a, i), json_array_get(b, i), da, db))
				return 1;
			buf_setlen(path, len);
		}
		if (na != nb) {
			buf_addf(path, "[%zu]", i);
			*da = i < na ? json_array_get(a, i) : NULL;
			*db = i < nb ? json_array_get(b, i) : NULL;
			return 1;
		}
		return 0;
	}
	return !json_equal((json_t *)a, (json_t *)b);
}

/* The part of a request body that says what was asked. */
static json_t *comparable(const json_t *body, const struct strvec *secrets)
{
	json_t *c = redact_json(body, secrets);

	if (json_is_object(c)) {
		json_object_del(c, "model");
		json_object_del(c, "stream");
		json_object_del(c, "stream_options");
	}
	return c;
}

static int replay_chat(struct provider *p, struct llm_response *out, const struct llm_request *req,
		       const json_t *body, llm_text_fn on_text, void *cb_data)
{
	struct replay *r = p->impl;
	size_t n = r->next, total = json_array_size(r->exchanges);
	const json_t *x, *rec_req, *da, *db;
	json_t *now = NULL, *then = NULL;
	struct buf path = BUF_INIT, what = BUF_INIT;
	const char *status;
	int ret;

	(void)req;
	if (n >= total)
		return err_set(FX_EMISMATCH, "replay: request %zu has no recorded exchange "
			       "(the transcript '%s' holds %zu)", n + 1, r->path, total);
	r->next++;
	x = json_array_get(r->exchanges, n);
	rec_req = json_object_get(x, "request");
	now = comparable(body, &r->secrets);
	then = comparable(rec_req ? rec_req : json_null(), &r->secrets);
	if (json_diff(&path, then, now, &da, &db)) {
		buf_addf(&what, "replay: exchange %zu differs from the recording at %s: recorded ",
			 n + 1, path.len ? path.buf : "(the whole request)");
		abbreviate(&what, da);
		buf_addstr(&what, ", now ");
		abbreviate(&what, db);
		if (!r->lenient) {
			ret = err_set(FX_EMISMATCH, "%s", what.buf);
			goto out;
		}
		strvec_push(&out->warnings, what.buf);
	}
	status = jsonx_str(x, "status");
	if (status && !strcmp(status, "error")) {
		const char *e = jsonx_str(x, "error");

		ret = err_set(FX_EPROVIDER, "%s", e && *e ? e : "replay: the recorded exchange failed");
		goto out;
	}
	{
		struct llm_response rr = LLM_RESPONSE_INIT;

		ret = llm_response_from_json(&rr, json_object_get(x, "response"));
		if (ret < 0) {
			err_prefix(ret, "replay: %s: exchange %zu", r->path, n + 1);
			goto out;
		}
		/* keep the warnings gathered above */
		strvec_clear(&rr.warnings);
		rr.warnings = out->warnings;
		strvec_init(&out->warnings);
		llm_response_release(out);
		*out = rr;
	}
	if (on_text && *out->content)
		on_text(cb_data, out->content, strlen(out->content));
	ret = 0;
out:
	json_decref(now);
	json_decref(then);
	buf_release(&path);
	buf_release(&what);
	return ret;
}

static const struct provider_ops replay_ops = {
	.type = "replay",
	.chat = replay_chat,
	.release = replay_release,
};

int replay_open(struct provider *p, const struct provider_config *pc, const char *workspace)
{
	struct replay *r;
	const char *key;
	int ret;

	if (!pc->transcript || !*pc->transcript)
		return err_set(FX_EINVAL, "provider '%s': type \"replay\" needs a transcript",
			       p->name);
	if (pc->replay_mode && *pc->replay_mode && strcmp(pc->replay_mode, "strict") &&
	    strcmp(pc->replay_mode, "lenient"))
		return err_set(FX_EINVAL, "provider '%s': replay_mode '%s' is not \"strict\" "
			       "or \"lenient\"", p->name, pc->replay_mode);
	r = xcalloc(1, sizeof(*r));
	p->impl = r;
	p->ops = &replay_ops;
	if (pc->transcript[0] != '/' && workspace) {
		struct buf full = BUF_INIT;

		path_join(&full, workspace, pc->transcript);
		r->path = buf_detach(&full, NULL);
	} else {
		r->path = xstrdup(pc->transcript);
	}
	r->lenient = pc->replay_mode && !strcmp(pc->replay_mode, "lenient");
	strvec_init(&r->secrets);
	redact_collect_env(&r->secrets, NULL);
	key = *p->api_key_env ? getenv(p->api_key_env) : NULL;
	if (key && strlen(key) >= 4 && strvec_find(&r->secrets, key) < 0)
		strvec_push(&r->secrets, key);
	ret = transcript_load(&r->exchanges, r->path);
	if (ret < 0)
		return err_prefix(ret, "provider '%s'", p->name);
	if (!p->config_window) {
		/* the window the recorded run fitted its requests to, so they come out the same */
		const json_t *x;
		size_t i;

		json_array_foreach(r->exchanges, i, x) {
			json_int_t w = jsonx_int(x, "context_window", 0);

			if (w > 0 && w < 100000000) {
				p->context_window = (long)w;
				p->window_source = xstrdup("the transcript");
				p->window_probed = 1;
				break;
			}
		}
	}
	return 0;
}
