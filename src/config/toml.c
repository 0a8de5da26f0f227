/*
 * A TOML 1.0.0 parser: one pass over the document with a cursor, building
 * the tree as it goes.
 *
 * Redefinition rules are kept with a `kind` per table and array. Tables
 * and arrays are allocated as a `struct node` whose first member is the
 * public `struct toml_value`, so toml_free() frees them with free() like
 * any other value; the kind is only read while parsing.
 *
 *   implicit  created as a step of a [header] path ("a" in [a.b]): a later
 *             [a] may define it once; dotted keys may add to it (it then
 *             becomes "dotted");
 *   header    defined by [a] or an element of [[a]]: never defined again,
 *             dotted keys from other sections may not reach into it;
 *   dotted    created by a dotted key (a.b = 1): [a] may not define it,
 *             but [a.c] may add sub-tables under it;
 *   inline    { ... }: closed once written;
 *   static    an array value [ ... ]: closed;
 *   tables    the array of [[a]]: [a.b] continues its last element.
 *
 * Key lookup during the parse goes through one hash map for the whole
 * document keyed by (table, key), so a flat table of a million keys parses
 * in linear time. After the parse, toml_table_get() scans the table.
 *
 * Recursion (arrays, inline tables, toml_free()) is bounded by
 * TOML_MAX_DEPTH, counted over every table and array on the path from the
 * root, including those that [a.b.c] headers and dotted keys create.
 */
#include <errno.h>
#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/utf8.h"
#include "config/toml.h"

enum node_kind {
	KIND_TABLE_IMPLICIT,
	KIND_TABLE_HEADER,
	KIND_TABLE_DOTTED,
	KIND_TABLE_INLINE,
	KIND_ARRAY_STATIC,
	KIND_ARRAY_TABLES,
};

struct node {
	struct toml_value v;	/* first: free(&node->v) frees the node */
	enum node_kind kind;
	int depth;		/* the root is 0 */
};

#define NODE(val) ((struct node *)(val))

/* One part of a dotted key, owned until it moves into a table. */
struct keypart {
	char *str;
	size_t len;
	int line, col;
};

/* A slot of the (table, key) -> index map; `tab` NULL when empty. */
struct slot {
	struct toml_value *tab;
	size_t idx;
	uint64_t hash;
};

struct parser {
	const char *name;
	const char *s;
	size_t len, pos;
	int line;
	size_t bol;		/* offset where the current line begins */
	struct toml_value *root, *cur;
	struct slot *slots;
	size_t slots_nr, slots_cap;
	struct keypart *keys;
	size_t keys_nr, keys_alloc;
	struct buf str;		/* the string being decoded */
	struct buf tmp;		/* scratch for numbers and messages */
};

static int fail_at(struct parser *p, int line, int col, const char *fmt, ...) FX_PRINTF(4, 5);

static int fail_at(struct parser *p, int line, int col, const char *fmt, ...)
{
	struct buf msg = BUF_INIT;
	va_list ap;

	buf_addf(&msg, "%s:%d:%d: ", p->name, line, col);
	va_start(ap, fmt);
	buf_vaddf(&msg, fmt, ap);
	va_end(ap);
	err_set(FX_EPARSE, "%s", msg.buf);
	buf_release(&msg);
	return FX_EPARSE;
}

static int col_at(const struct parser *p, size_t pos)
{
	return (int)(pos - p->bol + 1);
}

/* An error at the cursor. */
#define fail(p, ...) fail_at((p), (p)->line, col_at((p), (p)->pos), __VA_ARGS__)

static int peek_at(const struct parser *p, size_t off)
{
	if (off >= p->len - p->pos)
		return -1;
	return (unsigned char)p->s[p->pos + off];
}

static int peek(const struct parser *p)
{
	return peek_at(p, 0);
}

static int is_control(int c)
{
	return (c >= 0 && c < 0x20 && c != '\t') || c == 0x7f;
}

static int is_bare(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '-';
}

static int is_digit(int c)
{
	return c >= '0' && c <= '9';
}

/* What sits at `pos`, for messages; `tmp` holds it when it is built. */
static const char *describe(const struct parser *p, size_t pos, char tmp[32])
{
	unsigned char c;
	int n = 1;

	if (pos >= p->len)
		return "end of file";
	c = (unsigned char)p->s[pos];
	if (c == '\n' || (c == '\r' && pos + 1 < p->len && p->s[pos + 1] == '\n'))
		return "end of line";
	if (c == '\r')
		return "a carriage return without a line feed";
	if (c == '\t')
		return "a tab";
	if (is_control(c)) {
		snprintf(tmp, 32, "control character 0x%02x", c);
		return tmp;
	}
	/* The document is valid UTF-8: print the whole character. */
	if (c >= 0xf0)
		n = 4;
	else if (c >= 0xe0)
		n = 3;
	else if (c >= 0xc0)
		n = 2;
	if ((size_t)n > p->len - pos)
		n = (int)(p->len - pos);
	snprintf(tmp, 32, "'%.*s'", n, p->s + pos);
	return tmp;
}

#define DESCRIBE(p) describe((p), (p)->pos, (char[32]){ 0 })

/* Append a key for a message: bare when it can be, else quoted. */
static void add_key(struct buf *b, const char *k, size_t len)
{
	size_t i;
	int bare = len > 0;

	for (i = 0; i < len && bare; i++)
		if (!is_bare((unsigned char)k[i]))
			bare = 0;
	if (bare) {
		buf_add(b, k, len);
		return;
	}
	buf_addch(b, '"');
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)k[i];

		if (c == '"' || c == '\\')
			buf_addf(b, "\\%c", c);
		else if (is_control(c))
			buf_addf(b, "\\u%04x", c);
		else
			buf_addch(b, c);
	}
	buf_addch(b, '"');
}

/* "a.b.c" for the first `n` parts of the current key, in p->tmp. */
static const char *key_path(struct parser *p, size_t n)
{
	size_t i;

	buf_reset(&p->tmp);
	for (i = 0; i < n; i++) {
		if (i)
			buf_addch(&p->tmp, '.');
		add_key(&p->tmp, p->keys[i].str, p->keys[i].len);
	}
	return p->tmp.buf;
}

/* "an integer", "a string", ... for messages. */
static const char *a_type(enum toml_type t)
{
	switch (t) {
	case TOML_STRING: return "a string";
	case TOML_INTEGER: return "an integer";
	case TOML_FLOAT: return "a float";
	case TOML_BOOL: return "a boolean";
	case TOML_DATETIME: return "an offset date-time";
	case TOML_DATETIME_LOCAL: return "a local date-time";
	case TOML_DATE_LOCAL: return "a local date";
	case TOML_TIME_LOCAL: return "a local time";
	case TOML_ARRAY: return "an array";
	case TOML_TABLE: return "a table";
	}
	return "a value";
}

static char *dup_bytes(const char *s, size_t len)
{
	char *d = xmalloc(len + 1);

	memcpy(d, s, len);
	d[len] = '\0';
	return d;
}

static struct toml_value *new_scalar(enum toml_type type, int line, int col)
{
	struct toml_value *v = xcalloc(1, sizeof(*v));

	v->type = type;
	v->line = line;
	v->col = col;
	return v;
}

/* A table or array `depth` levels below the root; NULL when too deep. */
static struct toml_value *new_node(struct parser *p, enum toml_type type,
				   enum node_kind kind, int depth, int line, int col)
{
	struct node *n;

	if (depth > TOML_MAX_DEPTH) {
		fail_at(p, line, col, "nesting deeper than %d tables and arrays", TOML_MAX_DEPTH);
		return NULL;
	}
	n = xcalloc(1, sizeof(*n));
	n->v.type = type;
	n->v.line = line;
	n->v.col = col;
	n->kind = kind;
	n->depth = depth;
	return &n->v;
}

/* ---- the (table, key) map ---- */

static uint64_t key_hash(const struct toml_value *tab, const char *k, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ULL ^ ((uint64_t)(uintptr_t)tab * 0x9e3779b97f4a7c15ULL);
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (unsigned char)k[i];
		h *= 0x100000001b3ULL;
	}
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 29;
	return h;
}

static void map_put(struct slot *slots, size_t cap, struct toml_value *tab,
		    size_t idx, uint64_t hash)
{
	size_t i = (size_t)hash & (cap - 1);

	while (slots[i].tab)
		i = (i + 1) & (cap - 1);
	slots[i].tab = tab;
	slots[i].idx = idx;
	slots[i].hash = hash;
}

static void map_grow(struct parser *p)
{
	size_t cap = p->slots_cap ? p->slots_cap * 2 : 64, i;
	struct slot *slots = xcalloc(cap, sizeof(*slots));

	for (i = 0; i < p->slots_cap; i++)
		if (p->slots[i].tab)
			map_put(slots, cap, p->slots[i].tab, p->slots[i].idx, p->slots[i].hash);
	free(p->slots);
	p->slots = slots;
	p->slots_cap = cap;
}

static struct toml_kv *table_find(struct parser *p, struct toml_value *tab,
				  const char *k, size_t len)
{
	uint64_t h;
	size_t i;

	if (!p->slots_cap)
		return NULL;
	h = key_hash(tab, k, len);
	for (i = (size_t)h & (p->slots_cap - 1); p->slots[i].tab;
	     i = (i + 1) & (p->slots_cap - 1)) {
		struct slot *s = &p->slots[i];
		struct toml_kv *kv;

		if (s->hash != h || s->tab != tab)
			continue;
		kv = &tab->u.tab.items[s->idx];
		if (kv->keylen == len && !memcmp(kv->key, k, len))
			return kv;
	}
	return NULL;
}

/* Add `k` = `v` to `tab`; the key's string moves into the table. */
static void table_add(struct parser *p, struct toml_value *tab,
		      struct keypart *k, struct toml_value *v)
{
	struct toml_kv *kv;

	ALLOC_GROW(tab->u.tab.items, tab->u.tab.nr + 1, tab->u.tab.alloc);
	kv = &tab->u.tab.items[tab->u.tab.nr];
	kv->key = k->str;
	kv->keylen = k->len;
	kv->line = k->line;
	kv->col = k->col;
	kv->value = v;
	k->str = NULL;
	if ((p->slots_nr + 1) * 2 > p->slots_cap)
		map_grow(p);
	map_put(p->slots, p->slots_cap, tab, tab->u.tab.nr, key_hash(tab, kv->key, kv->keylen));
	p->slots_nr++;
	tab->u.tab.nr++;
}

static void array_add(struct toml_value *arr, struct toml_value *v)
{
	ALLOC_GROW(arr->u.arr.items, arr->u.arr.nr + 1, arr->u.arr.alloc);
	arr->u.arr.items[arr->u.arr.nr++] = v;
}

/* ---- whitespace, newlines, comments ---- */

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t'))
		p->pos++;
}

/* Consume a LF or CRLF and count the line; 0 when not at one. */
static int eat_newline(struct parser *p)
{
	if (peek(p) == '\n')
		p->pos++;
	else if (peek(p) == '\r' && peek_at(p, 1) == '\n')
		p->pos += 2;
	else
		return 0;
	p->line++;
	p->bol = p->pos;
	return 1;
}

/* At '#': skip to the end of the line, refusing control characters. */
static int skip_comment(struct parser *p)
{
	p->pos++;
	while (p->pos < p->len) {
		int c = (unsigned char)p->s[p->pos];

		if (c == '\n' || (c == '\r' && peek_at(p, 1) == '\n'))
			break;
		if (is_control(c))
			return fail(p, "%s in a comment", DESCRIBE(p));
		p->pos++;
	}
	return 0;
}

/* Whitespace, newlines and comments, as between array elements. */
static int skip_blank(struct parser *p)
{
	int r;

	for (;;) {
		skip_ws(p);
		if (peek(p) == '#') {
			if ((r = skip_comment(p)) < 0)
				return r;
		} else if (!eat_newline(p)) {
			return 0;
		}
	}
}

/* ---- strings ---- */

static int hex_value(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* At a backslash in a basic string: decode one escape into p->str. */
static int parse_escape(struct parser *p)
{
	int line = p->line, col = col_at(p, p->pos);
	int c = peek_at(p, 1), n, i, d;
	uint32_t cp = 0;

	switch (c) {
	case 'b': buf_addch(&p->str, '\b'); break;
	case 't': buf_addch(&p->str, '\t'); break;
	case 'n': buf_addch(&p->str, '\n'); break;
	case 'f': buf_addch(&p->str, '\f'); break;
	case 'r': buf_addch(&p->str, '\r'); break;
	case '"': buf_addch(&p->str, '"'); break;
	case '\\': buf_addch(&p->str, '\\'); break;
	case 'u':
	case 'U':
		n = c == 'u' ? 4 : 8;
		for (i = 0; i < n; i++) {
			if ((d = hex_value(peek_at(p, 2 + (size_t)i))) < 0)
				return fail_at(p, line, col, "\\%c needs %d hexadecimal digits", c, n);
			cp = cp << 4 | (uint32_t)d;
		}
		if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return fail_at(p, line, col, "\\%c%0*X is not a Unicode scalar value",
				       c, n, (unsigned)cp);
		utf8_encode(&p->str, cp);
		p->pos += 2 + (size_t)n;
		return 0;
	default:
		p->pos++;
		return fail_at(p, line, col, "invalid escape sequence: backslash followed by %s",
			       DESCRIBE(p));
	}
	p->pos += 2;
	return 0;
}

/*
 * In a multi-line string at a run of quote characters: up to two of them
 * before the closing three belong to the string. Returns 1 at the end of
 * the string, 0 when the quotes were content.
 */
static int ml_quotes(struct parser *p, char q)
{
	size_t n = 0;

	while (peek_at(p, n) == q)
		n++;
	if (n < 3) {
		buf_add(&p->str, p->s + p->pos, n);
		p->pos += n;
		return 0;
	}
	if (n > 5)
		n = 5;
	buf_add(&p->str, p->s + p->pos, n - 3);
	p->pos += n;
	return 1;
}

/* A string of any of the four kinds at the cursor, into p->str. */
static int parse_string(struct parser *p, int is_key)
{
	int line = p->line, col = col_at(p, p->pos);
	char q = p->s[p->pos];
	int multi = peek_at(p, 1) == q && peek_at(p, 2) == q;
	const char *what = q == '"' ? "string" : "literal string";
	int r;

	buf_reset(&p->str);
	if (multi) {
		if (is_key)
			return fail(p, "a multi-line string cannot be a key");
		p->pos += 3;
		/* A newline right after the opening quotes is not content. */
		eat_newline(p);
	} else {
		p->pos++;
	}
	for (;;) {
		size_t start;
		int c = peek(p);

		if (c < 0)
			return fail_at(p, line, col, "unterminated %s%s", multi ? "multi-line " : "", what);
		if (c == q) {
			if (!multi) {
				p->pos++;
				return 0;
			}
			if (ml_quotes(p, q))
				return 0;
			continue;
		}
		if (c == '\\' && q == '"') {
			if (multi) {
				/* A backslash ending a line trims all whitespace after it. */
				size_t save = p->pos;

				p->pos++;
				skip_ws(p);
				if (eat_newline(p)) {
					do
						skip_ws(p);
					while (eat_newline(p));
					continue;
				}
				p->pos = save;
			}
			if ((r = parse_escape(p)) < 0)
				return r;
			continue;
		}
		if (c == '\n' || (c == '\r' && peek_at(p, 1) == '\n')) {
			if (!multi)
				return fail(p, "end of line in a single-line %s", what);
			eat_newline(p);
			buf_addch(&p->str, '\n');
			continue;
		}
		if (is_control(c))
			return fail(p, "%s in a %s", DESCRIBE(p), what);
		start = p->pos;
		while (p->pos < p->len) {
			c = (unsigned char)p->s[p->pos];
			if (c == q || (c == '\\' && q == '"') || is_control(c))
				break;
			p->pos++;
		}
		buf_add(&p->str, p->s + start, p->pos - start);
	}
}

/* ---- keys ---- */

static void keys_clear(struct parser *p)
{
	size_t i;

	for (i = 0; i < p->keys_nr; i++)
		FREE_AND_NULL(p->keys[i].str);
	p->keys_nr = 0;
}

/* A dotted key at the cursor into p->keys; stops after the whitespace following it. */
static int parse_key(struct parser *p)
{
	int r;

	keys_clear(p);
	for (;;) {
		struct keypart *k;
		int c = peek(p);

		if (p->keys_nr > TOML_MAX_DEPTH)
			return fail(p, "a key of more than %d parts", TOML_MAX_DEPTH + 1);
		ALLOC_GROW(p->keys, p->keys_nr + 1, p->keys_alloc);
		k = &p->keys[p->keys_nr];
		k->line = p->line;
		k->col = col_at(p, p->pos);
		if (c == '"' || c == '\'') {
			if ((r = parse_string(p, 1)) < 0)
				return r;
			k->str = dup_bytes(p->str.buf, p->str.len);
			k->len = p->str.len;
		} else {
			size_t start = p->pos;

			while (p->pos < p->len && is_bare((unsigned char)p->s[p->pos]))
				p->pos++;
			if (p->pos == start)
				return fail(p, "expected a key, found %s", DESCRIBE(p));
			k->str = dup_bytes(p->s + start, p->pos - start);
			k->len = p->pos - start;
		}
		p->keys_nr++;
		skip_ws(p);
		if (peek(p) != '.')
			return 0;
		p->pos++;
		skip_ws(p);
	}
}

/* ---- numbers, dates and times ---- */

static int digit_value(int c)
{
	int d = hex_value(c);

	return d < 0 ? 99 : d;
}

/*
 * Digits of `base` from t[*i], with single underscores only between two
 * digits. Sets *ndigits; returns -1 for a misplaced underscore.
 */
static int scan_digits(const char *t, size_t n, size_t *i, int base, size_t *ndigits)
{
	size_t k = *i, count = 0;
	int prev_digit = 0;

	while (k < n) {
		if (digit_value((unsigned char)t[k]) < base) {
			count++;
			prev_digit = 1;
		} else if (t[k] == '_') {
			if (!prev_digit || k + 1 >= n || digit_value((unsigned char)t[k + 1]) >= base)
				return -1;
			prev_digit = 0;
		} else {
			break;
		}
		k++;
	}
	*i = k;
	*ndigits = count;
	return 0;
}

static int is_number_char(int c)
{
	return is_bare(c) || c == '+' || c == '.';
}

static int parse_float_text(struct parser *p, struct toml_value **out,
			    const char *t, size_t n, int line, int col)
{
	const char *dp = localeconv()->decimal_point;
	struct toml_value *v;
	char *end;
	double d;
	size_t i;

	/* strtod() follows LC_NUMERIC; TOML always uses '.'. */
	buf_reset(&p->tmp);
	for (i = 0; i < n; i++) {
		if (t[i] == '_')
			continue;
		if (t[i] == '.' && dp && *dp)
			buf_addstr(&p->tmp, dp);
		else
			buf_addch(&p->tmp, t[i]);
	}
	errno = 0;
	d = strtod(p->tmp.buf, &end);
	if (end != p->tmp.buf + p->tmp.len)
		return fail_at(p, line, col, "invalid float '%.*s'", n < 64 ? (int)n : 64, t);
	if (errno == ERANGE && isinf(d))
		return fail_at(p, line, col, "float '%.*s' is out of range", n < 64 ? (int)n : 64, t);
	v = new_scalar(TOML_FLOAT, line, col);
	v->u.f = d;
	*out = v;
	return 0;
}

static int parse_number(struct parser *p, struct toml_value **out)
{
	int line = p->line, col = col_at(p, p->pos);
	const char *t = p->s + p->pos;
	size_t n = 0, i = 0, nd, int_start;
	int neg = 0, sign = 0, is_float = 0, base = 10;
	uint64_t u = 0, limit;
	struct toml_value *v;
	int shown;

	while (n < p->len - p->pos && is_number_char((unsigned char)t[n]))
		n++;
	/* Messages quote at most this much of a bad number. */
	shown = n < 64 ? (int)n : 64;
	if (t[0] == '+' || t[0] == '-') {
		sign = 1;
		neg = t[0] == '-';
		i = 1;
	}
	if (n - i == 3 && (!memcmp(t + i, "inf", 3) || !memcmp(t + i, "nan", 3))) {
		v = new_scalar(TOML_FLOAT, line, col);
		if (t[i] == 'i')
			v->u.f = neg ? -INFINITY : INFINITY;
		else
			v->u.f = neg ? -NAN : NAN;
		p->pos += n;
		*out = v;
		return 0;
	}
	if (n - i >= 2 && t[i] == '0' && (t[i + 1] == 'x' || t[i + 1] == 'o' || t[i + 1] == 'b')) {
		if (sign)
			return fail_at(p, line, col, "a sign is not allowed before '0%c'", t[i + 1]);
		base = t[i + 1] == 'x' ? 16 : t[i + 1] == 'o' ? 8 : 2;
		i += 2;
	}
	int_start = i;
	if (scan_digits(t, n, &i, base, &nd) < 0)
		return fail_at(p, line, col, "misplaced underscore in number '%.*s'", shown, t);
	if (!nd)
		return fail_at(p, line, col, "invalid number '%.*s'", shown, t);
	if (base == 10) {
		if (t[int_start] == '0' && nd > 1)
			return fail_at(p, line, col, "leading zeros are not allowed in '%.*s'", shown, t);
		if (i < n && t[i] == '.') {
			i++;
			if (scan_digits(t, n, &i, 10, &nd) < 0)
				return fail_at(p, line, col, "misplaced underscore in number '%.*s'", shown, t);
			if (!nd)
				return fail_at(p, line, col, "a decimal point must be followed by digits in '%.*s'",
					       shown, t);
			is_float = 1;
		}
		if (i < n && (t[i] == 'e' || t[i] == 'E')) {
			i++;
			if (i < n && (t[i] == '+' || t[i] == '-'))
				i++;
			if (scan_digits(t, n, &i, 10, &nd) < 0)
				return fail_at(p, line, col, "misplaced underscore in number '%.*s'", shown, t);
			if (!nd)
				return fail_at(p, line, col, "an exponent must have digits in '%.*s'", shown, t);
			is_float = 1;
		}
	}
	if (i != n)
		return fail_at(p, line, col, "invalid number '%.*s'", shown, t);
	if (is_float) {
		int r = parse_float_text(p, out, t, n, line, col);

		if (r == 0)
			p->pos += n;
		return r;
	}
	limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (i = int_start; i < n; i++) {
		unsigned d;

		if (t[i] == '_')
			continue;
		d = (unsigned)digit_value((unsigned char)t[i]);
		if (u > (limit - d) / (unsigned)base)
			return fail_at(p, line, col, "integer '%.*s' does not fit in 64 bits", shown, t);
		u = u * (unsigned)base + d;
	}
	v = new_scalar(TOML_INTEGER, line, col);
	if (neg)
		v->u.i = u > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)u;
	else
		v->u.i = (int64_t)u;
	p->pos += n;
	*out = v;
	return 0;
}

/* `n` digits at s[*i] into *val. */
static int read_digits(const struct parser *p, size_t *i, int n, int *val)
{
	int k;

	*val = 0;
	for (k = 0; k < n; k++) {
		if (*i >= p->len || !is_digit((unsigned char)p->s[*i]))
			return -1;
		*val = *val * 10 + (p->s[*i] - '0');
		(*i)++;
	}
	return 0;
}

static int expect_char(const struct parser *p, size_t *i, char c)
{
	if (*i >= p->len || p->s[*i] != c)
		return -1;
	(*i)++;
	return 0;
}

static int days_in_month(int year, int month)
{
	static const int days[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	if (month == 2 && year % 4 == 0 && (year % 100 != 0 || year % 400 == 0))
		return 29;
	return days[month - 1];
}

/* HH:MM:SS[.fraction] at s[*i]. */
static int scan_time(struct parser *p, size_t *i)
{
	size_t at = *i;
	int h, m, s;

	if (read_digits(p, i, 2, &h) || expect_char(p, i, ':') ||
	    read_digits(p, i, 2, &m) || expect_char(p, i, ':') ||
	    read_digits(p, i, 2, &s))
		return fail_at(p, p->line, col_at(p, at), "malformed time, expected HH:MM:SS");
	if (h > 23)
		return fail_at(p, p->line, col_at(p, at), "hour %02d is out of range", h);
	if (m > 59)
		return fail_at(p, p->line, col_at(p, at + 3), "minute %02d is out of range", m);
	if (s > 60)
		return fail_at(p, p->line, col_at(p, at + 6), "second %02d is out of range", s);
	if (*i < p->len && p->s[*i] == '.') {
		size_t start = ++(*i);

		while (*i < p->len && is_digit((unsigned char)p->s[*i]))
			(*i)++;
		if (*i == start)
			return fail_at(p, p->line, col_at(p, start), "a decimal point in a time must be followed by digits");
	}
	return 0;
}

static int finish_datetime(struct parser *p, struct toml_value **out,
			   enum toml_type type, size_t end)
{
	struct toml_value *v = new_scalar(type, p->line, col_at(p, p->pos));

	v->u.str.ptr = dup_bytes(p->s + p->pos, end - p->pos);
	v->u.str.len = end - p->pos;
	p->pos = end;
	*out = v;
	return 0;
}

/* A local date, a date-time of either kind, at the cursor. */
static int parse_date(struct parser *p, struct toml_value **out)
{
	size_t i = p->pos;
	int y, mo, d, r;
	enum toml_type type = TOML_DATE_LOCAL;

	if (read_digits(p, &i, 4, &y) || expect_char(p, &i, '-') ||
	    read_digits(p, &i, 2, &mo) || expect_char(p, &i, '-') ||
	    read_digits(p, &i, 2, &d))
		return fail(p, "malformed date, expected YYYY-MM-DD");
	if (mo < 1 || mo > 12)
		return fail_at(p, p->line, col_at(p, p->pos + 5), "month %02d is out of range", mo);
	if (d < 1 || d > days_in_month(y, mo))
		return fail_at(p, p->line, col_at(p, p->pos + 8), "day %02d is out of range for %04d-%02d",
			       d, y, mo);
	if (i < p->len && (p->s[i] == 'T' || p->s[i] == 't' ||
			   (p->s[i] == ' ' && i + 1 < p->len && is_digit((unsigned char)p->s[i + 1])))) {
		i++;
		if ((r = scan_time(p, &i)) < 0)
			return r;
		type = TOML_DATETIME_LOCAL;
		if (i < p->len && (p->s[i] == 'Z' || p->s[i] == 'z')) {
			i++;
			type = TOML_DATETIME;
		} else if (i < p->len && (p->s[i] == '+' || p->s[i] == '-')) {
			size_t at = i++;
			int oh, om;

			if (read_digits(p, &i, 2, &oh) || expect_char(p, &i, ':') ||
			    read_digits(p, &i, 2, &om))
				return fail_at(p, p->line, col_at(p, at), "malformed time offset, expected +HH:MM");
			if (oh > 23 || om > 59)
				return fail_at(p, p->line, col_at(p, at), "time offset %.6s is out of range",
					       p->s + at);
			type = TOML_DATETIME;
		}
	}
	return finish_datetime(p, out, type, i);
}

static int parse_time(struct parser *p, struct toml_value **out)
{
	size_t i = p->pos;
	int r;

	if ((r = scan_time(p, &i)) < 0)
		return r;
	return finish_datetime(p, out, TOML_TIME_LOCAL, i);
}

/* ---- values ---- */

static int parse_value(struct parser *p, struct toml_value **out, int depth);
static int parse_keyval(struct parser *p, struct toml_value *tab);

static int parse_array(struct parser *p, struct toml_value **out, int depth)
{
	struct toml_value *arr, *item;
	int r;

	arr = new_node(p, TOML_ARRAY, KIND_ARRAY_STATIC, depth, p->line, col_at(p, p->pos));
	if (!arr)
		return FX_EPARSE;
	p->pos++;
	for (;;) {
		if ((r = skip_blank(p)) < 0)
			goto out;
		if (peek(p) == ']')
			break;
		if ((r = parse_value(p, &item, depth + 1)) < 0)
			goto out;
		array_add(arr, item);
		if ((r = skip_blank(p)) < 0)
			goto out;
		if (peek(p) == ',') {
			p->pos++;
			continue;
		}
		if (peek(p) == ']')
			break;
		r = fail(p, "expected ',' or ']' after an array element, found %s", DESCRIBE(p));
		goto out;
	}
	p->pos++;
	*out = arr;
	r = 0;
out:
	if (r < 0)
		toml_free(arr);
	return r;
}

static int parse_inline_table(struct parser *p, struct toml_value **out, int depth)
{
	struct toml_value *tab;
	int r;

	tab = new_node(p, TOML_TABLE, KIND_TABLE_DOTTED, depth, p->line, col_at(p, p->pos));
	if (!tab)
		return FX_EPARSE;
	p->pos++;
	skip_ws(p);
	if (peek(p) != '}') {
		for (;;) {
			if ((r = parse_keyval(p, tab)) < 0)
				goto out;
			skip_ws(p);
			if (peek(p) == '}')
				break;
			if (peek(p) != ',') {
				r = fail(p, "expected ',' or '}' in an inline table, found %s", DESCRIBE(p));
				goto out;
			}
			p->pos++;
			skip_ws(p);
			if (peek(p) == '}') {
				r = fail(p, "a trailing comma is not allowed in an inline table");
				goto out;
			}
		}
	}
	p->pos++;
	NODE(tab)->kind = KIND_TABLE_INLINE;
	*out = tab;
	r = 0;
out:
	if (r < 0)
		toml_free(tab);
	return r;
}

static int match_word(const struct parser *p, const char *w)
{
	size_t n = strlen(w);

	return p->len - p->pos >= n && !memcmp(p->s + p->pos, w, n);
}

/* A value at the cursor; containers will be `depth` levels below the root. */
static int parse_value(struct parser *p, struct toml_value **out, int depth)
{
	int c = peek(p), line = p->line, col = col_at(p, p->pos), r;
	struct toml_value *v;
	size_t left = p->len - p->pos;

	switch (c) {
	case '"':
	case '\'':
		if ((r = parse_string(p, 0)) < 0)
			return r;
		v = new_scalar(TOML_STRING, line, col);
		v->u.str.ptr = dup_bytes(p->str.buf, p->str.len);
		v->u.str.len = p->str.len;
		*out = v;
		return 0;
	case '[':
		return parse_array(p, out, depth);
	case '{':
		return parse_inline_table(p, out, depth);
	case 't':
	case 'f':
		if (match_word(p, c == 't' ? "true" : "false")) {
			v = new_scalar(TOML_BOOL, line, col);
			v->u.b = c == 't';
			p->pos += c == 't' ? 4 : 5;
			*out = v;
			return 0;
		}
		break;
	default:
		if (left >= 5 && is_digit(c) && is_digit(peek_at(p, 1)) && is_digit(peek_at(p, 2)) &&
		    is_digit(peek_at(p, 3)) && peek_at(p, 4) == '-')
			return parse_date(p, out);
		if (left >= 3 && is_digit(c) && is_digit(peek_at(p, 1)) && peek_at(p, 2) == ':')
			return parse_time(p, out);
		if (is_digit(c) || c == '+' || c == '-' || c == 'i' || c == 'n')
			return parse_number(p, out);
		break;
	}
	if (c < 0 || c == '\n' || c == '\r' || c == '#')
		return fail(p, "missing value");
	return fail(p, "expected a value, found %s", DESCRIBE(p));
}

/* key = value at the cursor, into `tab` (a [table] section or an inline table). */
static int parse_keyval(struct parser *p, struct toml_value *tab)
{
	struct keypart last = { 0 };
	struct toml_value *t = tab, *v;
	struct toml_kv *kv;
	size_t i;
	int r;

	if ((r = parse_key(p)) < 0)
		goto out;
	if (peek(p) != '=') {
		r = fail(p, "expected '=' after the key %s, found %s", key_path(p, p->keys_nr), DESCRIBE(p));
		goto out;
	}
	p->pos++;
	skip_ws(p);

	for (i = 0; i + 1 < p->keys_nr; i++) {
		struct keypart *k = &p->keys[i];

		kv = table_find(p, t, k->str, k->len);
		if (!kv) {
			v = new_node(p, TOML_TABLE, KIND_TABLE_DOTTED, NODE(t)->depth + 1, k->line, k->col);
			if (!v) {
				r = FX_EPARSE;
				goto out;
			}
			table_add(p, t, k, v);
			t = v;
			continue;
		}
		v = kv->value;
		if (v->type == TOML_TABLE && (NODE(v)->kind == KIND_TABLE_IMPLICIT ||
					      NODE(v)->kind == KIND_TABLE_DOTTED)) {
			NODE(v)->kind = KIND_TABLE_DOTTED;
			t = v;
			continue;
		}
		if (v->type == TOML_TABLE && NODE(v)->kind == KIND_TABLE_HEADER)
			r = fail_at(p, k->line, k->col,
				    "dotted key cannot add to table %s, defined by the header at %d:%d",
				    key_path(p, i + 1), v->line, v->col);
		else if (v->type == TOML_TABLE)
			r = fail_at(p, k->line, k->col, "cannot add to inline table %s, written at %d:%d",
				    key_path(p, i + 1), v->line, v->col);
		else
			r = fail_at(p, k->line, k->col, "key %s is already %s (at %d:%d), not a table",
				    key_path(p, i + 1), a_type(v->type), kv->line, kv->col);
		goto out;
	}
	last = p->keys[p->keys_nr - 1];
	kv = table_find(p, t, last.str, last.len);
	if (kv) {
		r = fail_at(p, last.line, last.col, "duplicate key %s (first defined at %d:%d)",
			    key_path(p, p->keys_nr), kv->line, kv->col);
		last.str = NULL;
		goto out;
	}
	/* Parsing the value reuses p->keys: keep the last part aside. */
	p->keys[p->keys_nr - 1].str = NULL;
	if ((r = parse_value(p, &v, NODE(t)->depth + 1)) < 0)
		goto out;
	table_add(p, t, &last, v);
out:
	free(last.str);
	return r;
}

/* [a.b] or [[a.b]] at the cursor: makes it the current table. */
static int parse_header(struct parser *p)
{
	int line = p->line, col = col_at(p, p->pos), aot = 0, r;
	struct toml_value *t = p->root, *v, *arr;
	struct toml_kv *kv;
	struct keypart *k;
	size_t i;

	p->pos++;
	if (peek(p) == '[') {
		aot = 1;
		p->pos++;
	}
	skip_ws(p);
	if ((r = parse_key(p)) < 0)
		return r;
	if (peek(p) != ']' || (aot && peek_at(p, 1) != ']')) {
		if (peek(p) == ']')
			p->pos++;
		return fail(p, "expected '%s' to close the table header, found %s",
			    aot ? "]]" : "]", DESCRIBE(p));
	}
	p->pos += aot ? 2 : 1;

	for (i = 0; i + 1 < p->keys_nr; i++) {
		k = &p->keys[i];
		kv = table_find(p, t, k->str, k->len);
		if (!kv) {
			v = new_node(p, TOML_TABLE, KIND_TABLE_IMPLICIT, NODE(t)->depth + 1, line, col);
			if (!v)
				return FX_EPARSE;
			table_add(p, t, k, v);
			t = v;
			continue;
		}
		v = kv->value;
		if (v->type == TOML_TABLE && NODE(v)->kind != KIND_TABLE_INLINE) {
			t = v;
			continue;
		}
		if (v->type == TOML_ARRAY && NODE(v)->kind == KIND_ARRAY_TABLES) {
			t = v->u.arr.items[v->u.arr.nr - 1];
			continue;
		}
		if (v->type == TOML_TABLE)
			return fail_at(p, k->line, k->col, "cannot add to inline table %s, written at %d:%d",
				       key_path(p, i + 1), v->line, v->col);
		return fail_at(p, k->line, k->col, "key %s is already %s (at %d:%d), not a table",
			       key_path(p, i + 1), a_type(v->type), kv->line, kv->col);
	}

	k = &p->keys[p->keys_nr - 1];
	kv = table_find(p, t, k->str, k->len);
	if (aot) {
		if (!kv) {
			arr = new_node(p, TOML_ARRAY, KIND_ARRAY_TABLES, NODE(t)->depth + 1, line, col);
			if (!arr)
				return FX_EPARSE;
			table_add(p, t, k, arr);
		} else if (kv->value->type == TOML_ARRAY && NODE(kv->value)->kind == KIND_ARRAY_TABLES) {
			arr = kv->value;
		} else if (kv->value->type == TOML_ARRAY) {
			return fail_at(p, line, col, "cannot append to %s with [[...]]: it is an array value (at %d:%d)",
				       key_path(p, p->keys_nr), kv->line, kv->col);
		} else {
			return fail_at(p, line, col, "cannot make %s an array of tables: it is already %s (at %d:%d)",
				       key_path(p, p->keys_nr), a_type(kv->value->type), kv->line, kv->col);
		}
		v = new_node(p, TOML_TABLE, KIND_TABLE_HEADER, NODE(arr)->depth + 1, line, col);
		if (!v)
			return FX_EPARSE;
		array_add(arr, v);
	} else if (!kv) {
		v = new_node(p, TOML_TABLE, KIND_TABLE_HEADER, NODE(t)->depth + 1, line, col);
		if (!v)
			return FX_EPARSE;
		table_add(p, t, k, v);
	} else {
		v = kv->value;
		if (v->type != TOML_TABLE)
			return fail_at(p, line, col, "cannot define table %s: it is already %s (at %d:%d)",
				       key_path(p, p->keys_nr), a_type(v->type), kv->line, kv->col);
		switch (NODE(v)->kind) {
		case KIND_TABLE_IMPLICIT:
			break;
		case KIND_TABLE_HEADER:
			return fail_at(p, line, col, "table %s is already defined at %d:%d",
				       key_path(p, p->keys_nr), v->line, v->col);
		case KIND_TABLE_DOTTED:
			return fail_at(p, line, col, "table %s is already defined by dotted keys at %d:%d",
				       key_path(p, p->keys_nr), kv->line, kv->col);
		default:
			return fail_at(p, line, col, "table %s is already defined as an inline table at %d:%d",
				       key_path(p, p->keys_nr), v->line, v->col);
		}
		NODE(v)->kind = KIND_TABLE_HEADER;
		v->line = line;
		v->col = col;
	}
	p->cur = v;
	return 0;
}

static int check_utf8(struct parser *p)
{
	const unsigned char *s = (const unsigned char *)p->s;
	size_t i = 0, n = p->len, bol = 0, k;
	int line = 1;

	while (i < n) {
		uint32_t c;

		if (s[i] < 0x80) {
			if (s[i] == '\n') {
				line++;
				bol = i + 1;
			}
			i++;
			continue;
		}
		k = utf8_decode(p->s + i, n - i, &c);
		if (!k)
			goto bad;
		i += k;
	}
	return 0;
bad:
	return fail_at(p, line, (int)(i - bol + 1), "invalid UTF-8 (byte 0x%02x)", s[i]);
}

static int parse_document(struct parser *p)
{
	int r;

	while (p->pos < p->len) {
		skip_ws(p);
		if (peek(p) == '[') {
			if ((r = parse_header(p)) < 0)
				return r;
		} else if (peek(p) >= 0 && peek(p) != '#' && peek(p) != '\n' && peek(p) != '\r') {
			if ((r = parse_keyval(p, p->cur)) < 0)
				return r;
		}
		skip_ws(p);
		if (peek(p) == '#' && (r = skip_comment(p)) < 0)
			return r;
		if (p->pos < p->len && !eat_newline(p))
			return fail(p, "expected the end of the line, found %s", DESCRIBE(p));
	}
	return 0;
}

int toml_parse(struct toml_value **out, const char *data, size_t len, const char *name)
{
	struct parser p = { 0 };
	int r;

	p.name = name ? name : "<toml>";
	if (len > INT_MAX)
		return err_set(FX_ELIMIT, "%s: document of %zu bytes is too large", p.name, len);
	p.s = data ? data : "";
	p.len = data ? len : 0;
	p.line = 1;
	buf_init(&p.str, 0);
	buf_init(&p.tmp, 0);
	p.root = new_node(&p, TOML_TABLE, KIND_TABLE_HEADER, 0, 1, 1);
	p.cur = p.root;
	if ((r = check_utf8(&p)) < 0)
		goto out;
	if (p.len >= 3 && !memcmp(p.s, "\xef\xbb\xbf", 3))
		p.pos = p.bol = 3;
	r = parse_document(&p);
out:
	keys_clear(&p);
	free(p.keys);
	free(p.slots);
	buf_release(&p.str);
	buf_release(&p.tmp);
	if (r < 0) {
		toml_free(p.root);
		return r;
	}
	*out = p.root;
	return 0;
}

void toml_free(struct toml_value *v)
{
	size_t i;

	if (!v)
		return;
	switch (v->type) {
	case TOML_STRING:
	case TOML_DATETIME:
	case TOML_DATETIME_LOCAL:
	case TOML_DATE_LOCAL:
	case TOML_TIME_LOCAL:
		free(v->u.str.ptr);
		break;
	case TOML_ARRAY:
		for (i = 0; i < v->u.arr.nr; i++)
			toml_free(v->u.arr.items[i]);
		free(v->u.arr.items);
		break;
	case TOML_TABLE:
		for (i = 0; i < v->u.tab.nr; i++) {
			free(v->u.tab.items[i].key);
			toml_free(v->u.tab.items[i].value);
		}
		free(v->u.tab.items);
		break;
	default:
		break;
	}
	free(v);
}

const struct toml_kv *toml_table_entry(const struct toml_value *table, const char *key)
{
	size_t i, len;

	if (!table || table->type != TOML_TABLE || !key)
		return NULL;
	len = strlen(key);
	for (i = 0; i < table->u.tab.nr; i++) {
		const struct toml_kv *kv = &table->u.tab.items[i];

		if (kv->keylen == len && !memcmp(kv->key, key, len))
			return kv;
	}
	return NULL;
}

const struct toml_value *toml_table_get(const struct toml_value *table, const char *key)
{
	const struct toml_kv *kv = toml_table_entry(table, key);

	return kv ? kv->value : NULL;
}

const char *toml_type_name(enum toml_type t)
{
	switch (t) {
	case TOML_STRING: return "string";
	case TOML_INTEGER: return "integer";
	case TOML_FLOAT: return "float";
	case TOML_BOOL: return "boolean";
	case TOML_DATETIME: return "offset date-time";
	case TOML_DATETIME_LOCAL: return "local date-time";
	case TOML_DATE_LOCAL: return "local date";
	case TOML_TIME_LOCAL: return "local time";
	case TOML_ARRAY: return "array";
	case TOML_TABLE: return "table";
	}
	return "unknown";
}
