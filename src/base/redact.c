/*
 * One redactor for everything forgex sends to a model or records: see
 * redact.h for what it replaces.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/jsonx.h"
#include "base/redact.h"

extern char **environ;

#define REDACTED "[REDACTED]"

static int is_token_char(int c)
{
	return isalnum(c) || c == '-' || c == '_';
}

/* Prefixes of provider and forge keys, each followed by >= 16 token bytes. */
static const char *const key_prefixes[] = {
	"sk-", "sk_", "gsk_", "xai-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
	"hf_", "glpat-", "AKIA", "ASIA", "pk_live_", "rk_live_", "sk_live_", "AIza",
	"xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-", "xoxe-", "xapp-", "npm_",
};

/* Length of the run of token bytes at s[0..len). */
static size_t token_len(const char *s, size_t len)
{
	size_t n = 0;

	while (n < len && is_token_char((unsigned char)s[n]))
		n++;
	return n;
}

/*
 * Whether a key's body looks random: at least two of lower case, upper
 * case and digits. Keys are random (and tool results are redacted too, so
 * the model must still see code): "sk-learn-compatible-estimator" or
 * "hf_transformers_pipeline" are identifiers, not keys.
 */
static int random_looking(const char *s, size_t n)
{
	int lower = 0, upper = 0, digit = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		lower |= c >= 'a' && c <= 'z';
		upper |= c >= 'A' && c <= 'Z';
		digit |= c >= '0' && c <= '9';
	}
	return lower + upper + digit >= 2;
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
		if (n >= 16 && random_looking(s + p, n))
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
	['p'] = 1, ['r'] = 1, ['s'] = 1, ['x'] = 1, ['n'] = 1, ['-'] = 1,
};

/* The process-wide secrets (redact_register()), checked by every redaction. */
static struct strvec global_secrets = STRVEC_INIT;
static pthread_mutex_t global_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * "aws_secret_access_key = VALUE" (any case, = or :, quotes): the length of
 * the text before VALUE in *skip and VALUE's length; 0 when it is not that.
 */
static size_t aws_secret(const char *p, size_t rest, size_t *skip)
{
	static const char word[] = "aws_secret_access_key";
	size_t n = sizeof(word) - 1, v;

	if (!prefix_ci(p, rest, word))
		return 0;
	while (n < rest && strchr(" \t\"':=", p[n]))
		n++;
	for (v = 0; n + v < rest && (isalnum((unsigned char)p[n + v]) || strchr("/+=", p[n + v])); v++)
		;
	if (v < 16)
		return 0;
	*skip = n;
	return v;
}

/*
 * A PEM private key block at p: "-----BEGIN ... PRIVATE KEY-----" up to its
 * END line (or the end of the text, when cut). The BEGIN line's length in
 * *skip; returns the length of the rest to replace, 0 when it is not one.
 */
static size_t pem_block(const char *p, size_t rest, size_t *skip)
{
	const char *eol, *end, *tail;
	size_t line;

	if (rest < 11 || memcmp(p, "-----BEGIN ", 11))
		return 0;
	eol = memchr(p, '\n', rest);
	line = eol ? (size_t)(eol - p) : rest;
	if (!memmem(p, line, "PRIVATE KEY-----", 16))
		return 0;
	*skip = line;
	end = memmem(p + line, rest - line, "-----END ", 9);
	if (!end)
		return rest - line;
	tail = memmem(end, rest - (size_t)(end - p), "-----", 5);
	tail = tail ? memmem(tail + 5, rest - (size_t)(tail + 5 - p), "-----", 5) : NULL;
	if (!tail)
		return rest - line;
	return (size_t)(tail + 5 - p) - line;
}

/*
 * The redaction of s[0..len): appended to `out`, or, when `out` is NULL,
 * only whether anything would change (stops at the first redaction).
 * Returns 1 when something was (or would be) redacted, else 0. Bytes that
 * cannot start a redaction are copied in runs.
 */
/*
 * `secrets` (may be NULL) and the registered ones: `secrets` itself when
 * nothing is registered, else `all`, filled (release it after).
 */
static const struct strvec *with_global(const struct strvec *secrets, struct strvec *all)
{
	static const struct strvec none = STRVEC_INIT;
	size_t i;

	pthread_mutex_lock(&global_lock);
	if (!global_secrets.nr) {
		pthread_mutex_unlock(&global_lock);
		return secrets ? secrets : &none;
	}
	for (i = 0; secrets && i < secrets->nr; i++)
		strvec_push(all, secrets->v[i]);
	for (i = 0; i < global_secrets.nr; i++)
		if (strvec_find(all, global_secrets.v[i]) < 0)
			strvec_push(all, global_secrets.v[i]);
	pthread_mutex_unlock(&global_lock);
	return all;
}

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
		if ((c | 0x20) == 'a' && (n = aws_secret(p, rest, &hit_n))) {
			hit = p;
			n += hit_n;
			goto redact;
		}
		if (c == '-' && (n = pem_block(p, rest, &hit_n))) {
			hit = p;
			n += hit_n;
			goto redact;
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
	struct strvec all = STRVEC_INIT;

	redact_core(out, s, len, with_global(secrets, &all));
	strvec_clear(&all);
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
	struct strvec all = STRVEC_INIT;
	json_t *r = redact_node(j, with_global(secrets, &all));

	strvec_clear(&all);

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

void redact_add(struct strvec *secrets, const char *value)
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
			redact_add(secrets, eq + 1);
	}
}

void redact_register(const char *value)
{
	pthread_mutex_lock(&global_lock);
	redact_add(&global_secrets, value);
	pthread_mutex_unlock(&global_lock);
}

void redact_register_env(const char *const *envp)
{
	pthread_mutex_lock(&global_lock);
	redact_collect_env(&global_secrets, envp);
	pthread_mutex_unlock(&global_lock);
}

int redact_buf(struct buf *b)
{
	struct strvec all = STRVEC_INIT;
	const struct strvec *sv = with_global(NULL, &all);
	struct buf r = BUF_INIT;
	int changed = redact_core(NULL, b->buf, b->len, sv);

	if (changed) {
		redact_core(&r, b->buf, b->len, sv);
		buf_release(b);
		*b = r;
	}
	strvec_clear(&all);
	return changed;
}
