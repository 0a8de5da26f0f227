/*
 * Reading Universal Ctags' JSON output (see ctags.h).
 *
 * A small reader for exactly what ctags prints: one flat object per line
 * whose values are strings, numbers, true, false or null. Anything else
 * (nesting, a cut line, bad escapes, a NUL) is FX_EPARSE for that line;
 * the index then skips the line.
 */
#include <string.h>

#include "base/err.h"
#include "base/utf8.h"
#include "context/ctags.h"

static const char *const argv_base[] = {
	"ctags",
	"--options=NONE",		/* first: no option file, no environment */
	"--output-format=json",
	"--fields=+n-T-t",		/* line numbers; no epoch, no typeref */
	"--kinds-C=+p",			/* prototypes: what a header declares */
	"--kinds-C++=+p",
	"--links=no",
	"--sort=no",
	"--pattern-length-limit=200",
	"-f", "-",
	NULL,
};

const char *const *ctx_ctags_argv(void)
{
	return argv_base;
}

struct rd {
	const char *p, *end;
};

static void skip_ws(struct rd *r)
{
	while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\r'))
		r->p++;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int read_hex4(struct rd *r, unsigned *out)
{
	unsigned v = 0;
	int i;

	if (r->end - r->p < 4)
		return -1;
	for (i = 0; i < 4; i++) {
		int h = hexval(r->p[i]);

		if (h < 0)
			return -1;
		v = v << 4 | (unsigned)h;
	}
	r->p += 4;
	*out = v;
	return 0;
}

/* A string at r->p (the opening quote), unescaped onto `b` and NUL-terminated; offset out. */
static int read_string(struct rd *r, struct buf *b, size_t *off, size_t *len)
{
	if (r->p >= r->end || *r->p != '"')
		return -1;
	r->p++;
	*off = b->len;
	while (r->p < r->end) {
		const char *q = r->p;
		char c;

		while (q < r->end && *q != '"' && *q != '\\' && *q)
			q++;
		buf_add(b, r->p, (size_t)(q - r->p));
		r->p = q;
		if (q >= r->end || !*q)
			return -1;
		c = *r->p++;
		if (c == '"') {
			*len = b->len - *off;
			buf_addch(b, '\0');
			return 0;
		}
		if (r->p >= r->end)
			return -1;
		c = *r->p++;
		switch (c) {
		case '"': case '\\': case '/': buf_addch(b, c); break;
		case 'b': buf_addch(b, '\b'); break;
		case 'f': buf_addch(b, '\f'); break;
		case 'n': buf_addch(b, '\n'); break;
		case 'r': buf_addch(b, '\r'); break;
		case 't': buf_addch(b, '\t'); break;
		case 'u': {
			unsigned cp, lo;

			if (read_hex4(r, &cp))
				return -1;
			if (cp >= 0xd800 && cp < 0xdc00) {
				if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u')
					return -1;
				r->p += 2;
				if (read_hex4(r, &lo) || lo < 0xdc00 || lo >= 0xe000)
					return -1;
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
			} else if (cp >= 0xdc00 && cp < 0xe000) {
				return -1;
			}
			if (!cp)
				return -1;	/* a NUL would cut the C string */
			utf8_encode(b, cp);
			break;
		}
		default:
			return -1;
		}
	}
	return -1;
}

static int word(struct rd *r, const char *w)
{
	size_t n = strlen(w);

	if ((size_t)(r->end - r->p) < n || memcmp(r->p, w, n))
		return 0;
	r->p += n;
	return 1;
}

/* A JSON number; an integer in [-2^62, 2^62] goes to *out, others give 0. */
static int read_number(struct rd *r, long *out)
{
	const char *s = r->p;
	long v = 0;
	int neg = 0, integral = 1, digits = 0;

	if (r->p < r->end && *r->p == '-') {
		neg = 1;
		r->p++;
	}
	while (r->p < r->end && *r->p >= '0' && *r->p <= '9') {
		if (v < (1L << 50))
			v = v * 10 + (*r->p - '0');
		else
			integral = 0;
		r->p++;
		digits++;
	}
	if (!digits)
		return -1;
	if (r->p < r->end && *r->p == '.') {
		integral = 0;
		r->p++;
		if (r->p >= r->end || *r->p < '0' || *r->p > '9')
			return -1;
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	}
	if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
		integral = 0;
		r->p++;
		if (r->p < r->end && (*r->p == '+' || *r->p == '-'))
			r->p++;
		if (r->p >= r->end || *r->p < '0' || *r->p > '9')
			return -1;
		while (r->p < r->end && *r->p >= '0' && *r->p <= '9')
			r->p++;
	}
	(void)s;
	*out = integral ? (neg ? -v : v) : 0;
	return 0;
}

int ctx_ctags_parse_line(struct ctx_tag *out, struct buf *scratch, const char *line, size_t len)
{
	struct rd r = { line, line + len };
	size_t key_off, key_len, val_off = 0, val_len = 0;
	size_t off[5] = { 0 }, lens[5] = { 0 };
	int have[5] = { 0 }, is_tag = 0, have_type = 0;
	enum { K_NAME, K_PATH, K_KIND, K_PATTERN, K_SCOPE };

	memset(out, 0, sizeof(*out));
	buf_reset(scratch);
	skip_ws(&r);
	if (r.p >= r.end || *r.p++ != '{')
		return FX_EPARSE;
	skip_ws(&r);
	if (r.p < r.end && *r.p == '}') {
		r.p++;
		goto done;
	}
	for (;;) {
		const char *key;
		int is_str = 0;
		long num = 0;

		skip_ws(&r);
		if (read_string(&r, scratch, &key_off, &key_len))
			return FX_EPARSE;
		skip_ws(&r);
		if (r.p >= r.end || *r.p++ != ':')
			return FX_EPARSE;
		skip_ws(&r);
		if (r.p >= r.end)
			return FX_EPARSE;
		if (*r.p == '"') {
			if (read_string(&r, scratch, &val_off, &val_len))
				return FX_EPARSE;
			is_str = 1;
		} else if (*r.p == '-' || (*r.p >= '0' && *r.p <= '9')) {
			if (read_number(&r, &num))
				return FX_EPARSE;
		} else if (word(&r, "true")) {
			num = 1;
		} else if (word(&r, "false") || word(&r, "null")) {
			num = 0;
		} else {
			return FX_EPARSE;	/* nesting: not what ctags prints */
		}
		key = scratch->buf + key_off;
		if (key_len == 5 && !memcmp(key, "_type", 5)) {
			if (!is_str || have_type)
				return FX_EPARSE;
			have_type = 1;
			is_tag = val_len == 3 && !memcmp(scratch->buf + val_off, "tag", 3);
		} else if (key_len == 4 && !memcmp(key, "line", 4)) {
			if (is_str)
				return FX_EPARSE;
			out->line = num;
		} else if (key_len == 4 && !memcmp(key, "file", 4)) {
			out->file_scope = num != 0;
		} else if (is_str) {
			int k = -1;

			if (key_len == 4 && !memcmp(key, "name", 4))
				k = K_NAME;
			else if (key_len == 4 && !memcmp(key, "path", 4))
				k = K_PATH;
			else if (key_len == 4 && !memcmp(key, "kind", 4))
				k = K_KIND;
			else if (key_len == 7 && !memcmp(key, "pattern", 7))
				k = K_PATTERN;
			else if (key_len == 5 && !memcmp(key, "scope", 5))
				k = K_SCOPE;
			if (k >= 0) {
				if (have[k])
					return FX_EPARSE;
				have[k] = 1;
				off[k] = val_off;
				lens[k] = val_len;
			}
		}
		skip_ws(&r);
		if (r.p >= r.end)
			return FX_EPARSE;
		if (*r.p == ',') {
			r.p++;
			continue;
		}
		if (*r.p++ != '}')
			return FX_EPARSE;
		break;
	}
done:
	skip_ws(&r);
	if (r.p != r.end)
		return FX_EPARSE;
	if (!is_tag || !have[K_NAME] || !have[K_PATH] || !lens[K_NAME] || !lens[K_PATH] ||
	    out->line < 1 || out->line > (1L << 31))
		return 0;
	/* the buffer may have moved while it grew: pointers only now */
	out->name = scratch->buf + off[K_NAME];
	out->name_len = lens[K_NAME];
	out->path = scratch->buf + off[K_PATH];
	out->path_len = lens[K_PATH];
	out->kind = have[K_KIND] ? scratch->buf + off[K_KIND] : "";
	out->kind_len = have[K_KIND] ? lens[K_KIND] : 0;
	out->pattern = have[K_PATTERN] ? scratch->buf + off[K_PATTERN] : "";
	out->pattern_len = have[K_PATTERN] ? lens[K_PATTERN] : 0;
	out->scope = have[K_SCOPE] ? scratch->buf + off[K_SCOPE] : "";
	out->scope_len = have[K_SCOPE] ? lens[K_SCOPE] : 0;
	return 1;
}

void ctx_ctags_pattern_text(struct buf *out, const char *pattern, size_t len, size_t max)
{
	size_t start = out->len, i, keep;

	if (len >= 2 && pattern[0] == '/' && pattern[len - 1] == '/') {
		pattern++;
		len -= 2;
	}
	if (len && pattern[0] == '^') {
		pattern++;
		len--;
	}
	if (len && pattern[len - 1] == '$' && (len < 2 || pattern[len - 2] != '\\')) {
		len--;
	}
	for (i = 0; i < len; i++) {
		char c = pattern[i];

		if (c == '\\' && i + 1 < len && (pattern[i + 1] == '/' || pattern[i + 1] == '\\' ||
						 pattern[i + 1] == '$' || pattern[i + 1] == '^')) {
			c = pattern[++i];
		}
		if (c == '\n' || c == '\r' || c == '\0')
			c = ' ';
		buf_addch(out, c);
	}
	while (out->len > start && (out->buf[out->len - 1] == ' ' || out->buf[out->len - 1] == '\t'))
		out->len--;
	keep = out->len - start;
	if (keep > max)
		keep = utf8_cut(out->buf + start, keep, max);
	buf_setlen(out, start + keep);
}
