#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/path.h"
#include "llm/transcript.h"

extern char **environ;

#define REDACTED "[REDACTED]"

static int is_token_char(int c)
{
	return isalnum(c) || c == '-' || c == '_';
}

/* Prefixes of provider and forge keys, each followed by >= 16 token bytes. */
static const char *const key_prefixes[] = {
	"sk-", "sk_", "gsk_", "xai-", "ghp_", "gho_", "ghu_", "ghs_", "github_pat_",
	"hf_", "glpat-", "AKIA", "pk_live_", "rk_live_", "AIza",
};

/* Length of the run of token bytes at s[0..len). */
static size_t token_len(const char *s, size_t len)
{
	size_t n = 0;

	while (n < len && is_token_char((unsigned char)s[n]))
		n++;
	return n;
}

/* A key-shaped word starting at s (which starts a word): its length, or 0. */
static size_t key_word(const char *s, size_t len)
{
	size_t i, p, n;

	for (i = 0; i < ARRAY_SIZE(key_prefixes); i++) {
		if (key_prefixes[i][0] != *s)
			continue;
		p = strlen(key_prefixes[i]);
		if (len < p || memcmp(s, key_prefixes[i], p))
			continue;
		n = token_len(s + p, len - p);
		if (n >= 16)
			return p + n;
	}
	/* a JSON Web Token: eyJ<header>.<payload>[.<signature>] */
	if (len > 3 && !memcmp(s, "eyJ", 3)) {
		n = 0;
		while (n < len && (is_token_char((unsigned char)s[n]) || s[n] == '.'))
			n++;
		if (n >= 24 && memchr(s, '.', n))
			return n;
	}
	return 0;
}

static int prefix_ci(const char *s, size_t len, const char *word)
{
	size_t n = strlen(word);

	return len >= n && !strncasecmp(s, word, n);
}

/* Secrets measured once per redact_core() call; few are ever registered. */
#define SECRETS_ON_STACK 16

/*
 * Bytes that could start a key-shaped word, an "Authorization:" header or
 * a bearer token (the first bytes of key_prefixes, "eyJ", "a"/"A" and
 * "b"/"B"). Any other byte that starts no secret is copied without a look.
 */
static const unsigned char word_first[256] = {
	['a'] = 1, ['A'] = 1, ['b'] = 1, ['B'] = 1, ['e'] = 1, ['g'] = 1, ['h'] = 1,
	['p'] = 1, ['r'] = 1, ['s'] = 1, ['x'] = 1,
};

/*
 * The redaction of s[0..len): appended to `out`, or, when `out` is NULL,
 * only whether anything would change (stops at the first redaction).
 * Returns 1 when something was (or would be) redacted, else 0. Bytes that
 * cannot start a redaction are copied in runs.
 */
static int redact_core(struct buf *out, const char *s, size_t len, const struct strvec *secrets)
{
	size_t stack_lens[SECRETS_ON_STACK], *lens = stack_lens;
	unsigned char first[256 / 8] = { 0 };
	size_t i = 0, run = 0, j, n, hit_n;
	const char *hit;
	int changed = 0;

	if (secrets->nr > SECRETS_ON_STACK)
		lens = xcalloc(secrets->nr, sizeof(*lens));
	for (j = 0; j < secrets->nr; j++) {
		lens[j] = strlen(secrets->v[j]);
		if (lens[j])
			first[(unsigned char)secrets->v[j][0] / 8] |=
				(unsigned char)(1u << ((unsigned char)secrets->v[j][0] % 8));
	}
	while (i < len) {
		const char *p = s + i;
		size_t rest = len - i;
		unsigned char c = (unsigned char)*p;
		int word_start;

		if (!word_first[c] && !(first[c / 8] & (1u << (c % 8)))) {
			i++;
			continue;
		}
		hit = NULL;
		hit_n = 0;
		n = 0;
		if (first[c / 8] & (1u << (c % 8))) {
			for (j = 0; j < secrets->nr; j++)
				if (lens[j] && lens[j] <= rest && !memcmp(p, secrets->v[j], lens[j]))
					break;
			if (j < secrets->nr) {
				/* the secret itself is replaced */
				n = lens[j];
				goto redact;
			}
		}
		word_start = !i || !is_token_char((unsigned char)s[i - 1]);
		if (!word_start || !word_first[c]) {
			i++;
			continue;
		}
		if ((c | 0x20) == 'a' && prefix_ci(p, rest, "authorization:")) {
			/* a header: the rest of the line is the credential */
			hit_n = 14;
			while (hit_n < rest && p[hit_n] == ' ')
				hit_n++;
			hit = p;
			n = hit_n;
			while (n < rest && p[n] != '\n' && p[n] != '\r' && p[n] != '"')
				n++;
			goto redact;
		}
		if ((c | 0x20) == 'b' && prefix_ci(p, rest, "bearer ")) {
			hit_n = 7;
			while (hit_n < rest && p[hit_n] == ' ')
				hit_n++;
			j = 0;
			while (hit_n + j < rest && (is_token_char((unsigned char)p[hit_n + j]) ||
						    strchr(".~+/=", p[hit_n + j])))
				j++;
			if (j >= 8) {
				hit = p;
				n = hit_n + j;
				goto redact;
			}
			hit_n = 0;
		}
		if ((n = key_word(p, rest)))
			goto redact;
		i++;
		continue;
redact:
		changed = 1;
		if (!out)
			break;
		buf_add(out, s + run, i - run);
		if (hit)
			buf_add(out, hit, hit_n);
		buf_addstr(out, REDACTED);
		i += n;
		run = i;
	}
	if (out && run < len)
		buf_add(out, s + run, len - run);
	if (lens != stack_lens)
		free(lens);
	return changed;
}

void redact_text(struct buf *out, const char *s, size_t len, const struct strvec *secrets)
{
	redact_core(out, s, len, secrets);
}

static int secret_member(const char *key)
{
	static const char *const names[] = {
		"api_key", "apikey", "api-key", "x-api-key", "authorization", "password",
		"secret", "access_token", "refresh_token", "client_secret",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (!strcasecmp(key, names[i]))
			return 1;
	return 0;
}

/* A copy of the members of `j` before `stop` (unchanged: values shared). */
static json_t *object_prefix(const json_t *j, const char *stop)
{
	json_t *r = json_object(), *v;
	const char *key;

	if (!r)
		die("out of memory");
	json_object_foreach((json_t *)j, key, v) {
		if (key == stop)
			break;
		jsonx_set(r, key, json_incref(v));
	}
	return r;
}

/*
 * The redaction of `j`, or NULL when it would be the same as `j`. A new
 * container shares its unchanged members with `j` (nothing modifies a
 * redacted tree, and strings in a tree are valid UTF-8 already).
 */
static json_t *redact_node(const json_t *j, const struct strvec *secrets)
{
	json_t *r = NULL, *v, *c;
	const char *key;
	size_t i, k;

	switch (json_typeof(j)) {
	case JSON_OBJECT:
		json_object_foreach((json_t *)j, key, v) {
			struct buf kb = BUF_INIT;
			int key_changed;

			k = strlen(key);
			key_changed = redact_core(NULL, key, k, secrets);
			if (secret_member(key) && (json_is_string(v) || json_is_number(v)))
				c = jsonx_string(REDACTED);
			else
				c = redact_node(v, secrets);
			if (!key_changed && !c) {
				if (r)
					jsonx_set(r, key, json_incref(v));
				continue;
			}
			if (!r)
				r = object_prefix(j, key);
			if (key_changed)
				redact_core(&kb, key, k, secrets);
			jsonx_set(r, key_changed ? kb.buf : key, c ? c : json_incref(v));
			buf_release(&kb);
		}
		return r;
	case JSON_ARRAY:
		json_array_foreach(j, i, v) {
			c = redact_node(v, secrets);
			if (!c && !r)
				continue;
			if (!r) {
				r = json_array();
				if (!r)
					die("out of memory");
				for (k = 0; k < i; k++)
					if (json_array_append(r, json_array_get(j, k)) < 0)
						die("out of memory");
			}
			if (json_array_append_new(r, c ? c : json_incref(v)) < 0)
				die("out of memory");
		}
		return r;
	case JSON_STRING: {
		struct buf b = BUF_INIT;

		if (!redact_core(NULL, json_string_value(j), json_string_length(j), secrets))
			return NULL;
		redact_core(&b, json_string_value(j), json_string_length(j), secrets);
		r = jsonx_stringn_lossy(b.buf, b.len);
		buf_release(&b);
		return r;
	}
	default:
		return NULL;
	}
}

json_t *redact_json(const json_t *j, const struct strvec *secrets)
{
	json_t *r = redact_node(j, secrets);

	if (r)
		return r;
	/* a new top-level container, which the caller may change */
	if (json_is_object(j) || json_is_array(j))
		return json_copy((json_t *)j);
	return json_incref((json_t *)j);
}

static int secret_name(const char *name, size_t n)
{
	static const char *const suffixes[] = { "_API_KEY", "_TOKEN", "_ACCESS_KEY" };
	size_t i, s;

	for (i = 0; i < ARRAY_SIZE(suffixes); i++) {
		s = strlen(suffixes[i]);
		if (n >= s && !memcmp(name + n - s, suffixes[i], s))
			return 1;
	}
	return memmem(name, n, "SECRET", 6) || memmem(name, n, "PASSWORD", 8) ||
	       (n == 7 && !memcmp(name, "API_KEY", 7));
}

static void add_secret(struct strvec *secrets, const char *value)
{
	if (!value || strlen(value) < 4 || strvec_find(secrets, value) >= 0)
		return;
	strvec_push(secrets, value);
}

void redact_collect_env(struct strvec *secrets, const char *const *envp)
{
	const char *const *e;

	for (e = envp ? envp : (const char *const *)environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');

		if (eq && secret_name(*e, (size_t)(eq - *e)) && strlen(eq + 1) >= 8)
			add_secret(secrets, eq + 1);
	}
}

int transcript_open(struct transcript **out, const char *path)
{
	struct transcript *t;
	struct buf dir = BUF_INIT;
	int fd;

	path_dirname(&dir, path);
	if (fsutil_mkdir_p(dir.buf, 0700) < 0) {
		buf_release(&dir);
		return err_prefix(FX_EOS, "cannot create the transcript's folder");
	}
	buf_release(&dir);
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0)
		return err_set_errno(FX_EOS, "cannot open the transcript '%s'", path);
	t = xcalloc(1, sizeof(*t));
	t->fd = fd;
	t->path = xstrdup(path);
	strvec_init(&t->secrets);
	redact_collect_env(&t->secrets, NULL);
	*out = t;
	return 0;
}

void transcript_add_secret(struct transcript *t, const char *value)
{
	add_secret(&t->secrets, value);
}

void transcript_free(struct transcript *t)
{
	if (!t)
		return;
	if (t->fd >= 0)
		close(t->fd);
	free(t->path);
	strvec_clear(&t->secrets);
	free(t);
}

static json_t *usage_json(const struct llm_usage *u)
{
	if (!u->present)
		return json_null();
	return json_pack("{s:I, s:I, s:I}", "prompt_tokens", (json_int_t)u->prompt_tokens,
			 "completion_tokens", (json_int_t)u->completion_tokens,
			 "total_tokens", (json_int_t)u->total_tokens);
}

static json_t *str_or_null(const char *s)
{
	return s ? jsonx_string(s) : json_null();
}

/*
 * `red` (an object) as one compact JSON line, the same bytes as
 * jsonx_write_line() would write. A member whose value is `request`
 * itself (redaction left it unchanged, so redact_json() shared it) is
 * written as `request_text` when given: the request was encoded already to
 * be sent, and it is most of the line.
 */
static void encode_line(struct buf *out, const json_t *red, const json_t *request,
			const struct buf *request_text)
{
	const char *key;
	json_t *v;
	int first = 1;

	buf_addch(out, '{');
	json_object_foreach((json_t *)red, key, v) {
		json_t *k = jsonx_string(key);

		if (!first)
			buf_addch(out, ',');
		first = 0;
		jsonx_dump(out, k, JSON_COMPACT);
		json_decref(k);
		buf_addch(out, ':');
		if (request_text && request && v == request)
			buf_addbuf(out, request_text);
		else
			jsonx_dump(out, v, JSON_COMPACT);
	}
	buf_addstr(out, "}\n");
}

int transcript_record(struct transcript *t, const struct transcript_exchange *x)
{
	json_t *j = json_object(), *red;
	struct buf line = BUF_INIT;
	char when[32];
	time_t secs = (time_t)(x->started_ms / 1000);
	struct tm tm;
	int ret;

	if (!j)
		die("out of memory");
	gmtime_r(&secs, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	jsonx_set(j, "type", jsonx_string("exchange"));
	jsonx_set(j, "seq", json_integer((json_int_t)++t->seq));
	jsonx_set(j, "time", jsonx_string(when));
	jsonx_set(j, "provider", str_or_null(x->provider));
	jsonx_set(j, "provider_type", str_or_null(x->provider_type));
	jsonx_set(j, "base_url", str_or_null(x->base_url));
	jsonx_set(j, "model", str_or_null(x->model));
	jsonx_set(j, "stream", json_boolean(x->stream));
	jsonx_set(j, "request", x->request ? json_incref((json_t *)x->request) : json_null());
	if (x->response) {
		jsonx_set(j, "response", llm_response_to_json(x->response));
		jsonx_set(j, "usage", usage_json(&x->response->usage));
	} else {
		jsonx_set(j, "response", json_null());
		jsonx_set(j, "usage", json_null());
	}
	jsonx_set(j, "status", jsonx_string(x->code ? "error" : "ok"));
	if (x->code) {
		jsonx_set(j, "error", jsonx_string(x->error ? x->error : ""));
		jsonx_set(j, "error_code", jsonx_string(err_name(x->code)));
	}
	jsonx_set(j, "http_status", json_integer(x->http_status));
	jsonx_set(j, "retries", json_integer(x->retries));
	if (x->context_window > 0)	/* replay fits its requests to the same window */
		jsonx_set(j, "context_window", json_integer(x->context_window));
	jsonx_set(j, "elapsed_ms", json_integer((json_int_t)(x->elapsed * 1000.0 + 0.5)));
	red = redact_json(j, &t->secrets);
	encode_line(&line, red, x->request, x->request_text);
	ret = fsutil_write_all(t->fd, line.buf, line.len);
	if (ret < 0)
		err_prefix(ret, "cannot write the transcript '%s'", t->path);
	buf_release(&line);
	json_decref(red);
	json_decref(j);
	return ret;
}

int transcript_load(json_t **out, const char *path)
{
	struct buf b = BUF_INIT;
	json_t *arr = NULL;
	size_t pos = 0, line = 0;
	int ret;

	ret = fsutil_read_file(&b, path, 1u << 30);
	if (ret < 0) {
		err_prefix(ret, "cannot read the transcript '%s'", path);
		goto out;
	}
	arr = json_array();
	if (!arr)
		die("out of memory");
	while (pos < b.len) {
		const char *nl = memchr(b.buf + pos, '\n', b.len - pos);
		size_t n = nl ? (size_t)(nl - (b.buf + pos)) : b.len - pos;
		json_t *j = NULL;
		size_t k;

		line++;
		for (k = 0; k < n && isspace((unsigned char)b.buf[pos + k]); k++)
			;
		if (k < n) {
			ret = jsonx_parse(&j, b.buf + pos, n, "transcript line");
			if (ret < 0) {
				err_prefix(ret, "%s:%zu", path, line);
				goto out;
			}
			if (json_is_object(j) && !strcmp(jsonx_str(j, "type") ? jsonx_str(j, "type") : "",
							 "exchange")) {
				if (json_array_append_new(arr, j) < 0)
					die("out of memory");
			} else {
				json_decref(j);
			}
		}
		pos += n + 1;
	}
	*out = arr;
	arr = NULL;
	ret = 0;
out:
	json_decref(arr);
	buf_release(&b);
	return ret;
}
