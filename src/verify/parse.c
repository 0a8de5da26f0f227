/*
 * verify_parse(): cleaning the output, the parser table, claims, sinks and
 * the exit status rules. The formats themselves live in parse_<name>.c.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "verify/parse.h"

static const struct verify_parser *const parsers[] = {
	/* Order matters only for the order of tests and formats in the
	 * result: what each parser may read is settled by the claims. */
	&verify_parser_pytest,
	&verify_parser_unittest,
	&verify_parser_gojson,
	&verify_parser_go,
	&verify_parser_cargo,
	&verify_parser_jest,
	&verify_parser_vitest,
	&verify_parser_node,
	&verify_parser_mocha,
	&verify_parser_ctest,
	&verify_parser_meson,
	&verify_parser_cmocka,
	&verify_parser_tap,
	&verify_parser_automake,
	&verify_parser_summary,
};

static const char *format_names[ARRAY_SIZE(parsers) + 1];

const char *const *verify_formats(void)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(parsers); i++)
		format_names[i] = parsers[i]->name;
	format_names[i] = NULL;
	return format_names;
}

const char *verify_outcome_name(enum verify_outcome o)
{
	switch (o) {
	case VERIFY_PASS: return "pass";
	case VERIFY_FAIL: return "fail";
	case VERIFY_ERROR: return "error";
	case VERIFY_SKIP: return "skip";
	}
	return "unknown";
}

void verify_result_release(struct verify_result *r)
{
	size_t i;

	for (i = 0; i < r->tests_nr; i++) {
		free(r->tests[i].name);
		free(r->tests[i].excerpt);
	}
	free(r->tests);
	strvec_clear(&r->formats);
	strvec_clear(&r->disagreements);
	free(r->tail);
	free(r->fresh_note);
	*r = (struct verify_result)VERIFY_RESULT_INIT;
}

int verify_result_ok(const struct verify_result *r)
{
	return r->exit_code == 0 && !r->timed_out && r->failed == 0 && r->errors == 0;
}

size_t verify_result_failing(const struct verify_result *r)
{
	size_t i, n = 0;

	for (i = 0; i < r->tests_nr; i++)
		if (r->tests[i].outcome == VERIFY_FAIL || r->tests[i].outcome == VERIFY_ERROR)
			n++;
	return n;
}

/* ---- views ---- */

size_t sv_ltrim(struct sv *v)
{
	size_t n = 0;

	while (n < v->n && (v->p[n] == ' ' || v->p[n] == '\t'))
		n++;
	v->p += n;
	v->n -= n;
	return n;
}

void sv_rtrim(struct sv *v)
{
	while (v->n && (v->p[v->n - 1] == ' ' || v->p[v->n - 1] == '\t' ||
			v->p[v->n - 1] == '\r' || v->p[v->n - 1] == '\n'))
		v->n--;
}

void sv_trim(struct sv *v)
{
	sv_ltrim(v);
	sv_rtrim(v);
}

int sv_starts(struct sv v, const char *prefix)
{
	size_t n = strlen(prefix);

	return v.n >= n && !memcmp(v.p, prefix, n);
}

int sv_eat(struct sv *v, const char *prefix)
{
	size_t n = strlen(prefix);

	if (v->n < n || memcmp(v->p, prefix, n))
		return 0;
	v->p += n;
	v->n -= n;
	return 1;
}

int sv_ends(struct sv v, const char *suffix)
{
	size_t n = strlen(suffix);

	return v.n >= n && !memcmp(v.p + v.n - n, suffix, n);
}

int sv_eq(struct sv v, const char *s)
{
	return v.n == strlen(s) && !memcmp(v.p, s, v.n);
}

int sv_eat_num(struct sv *v, long *out)
{
	size_t i = 0;
	long n = 0;

	while (i < v->n && v->p[i] >= '0' && v->p[i] <= '9') {
		if (n < LONG_MAX / 40)
			n = n * 10 + (v->p[i] - '0');
		i++;
	}
	if (!i)
		return 0;
	v->p += i;
	v->n -= i;
	*out = n;
	return 1;
}

long sv_find(struct sv v, const char *needle)
{
	size_t n = strlen(needle);
	const char *p;

	if (!n || n > v.n)
		return -1;
	p = memmem(v.p, v.n, needle, n);
	return p ? (long)(p - v.p) : -1;
}

long sv_rfind(struct sv v, const char *needle)
{
	size_t n = strlen(needle), i;

	if (!n || n > v.n)
		return -1;
	for (i = v.n - n + 1; i-- > 0;)
		if (v.p[i] == needle[0] && !memcmp(v.p + i, needle, n))
			return (long)i;
	return -1;
}

struct sv sv_token(struct sv *v)
{
	struct sv t;
	size_t i = 0;

	while (i < v->n && v->p[i] != ' ' && v->p[i] != '\t')
		i++;
	t = sv_make(v->p, i);
	v->p += i;
	v->n -= i;
	return t;
}

int sv_all(struct sv v, char c, size_t min)
{
	size_t i;

	if (v.n < min)
		return 0;
	for (i = 0; i < v.n; i++)
		if (v.p[i] != c)
			return 0;
	return 1;
}

size_t vl_indent(struct vline l)
{
	size_t i, col = 0;

	for (i = 0; i < l.len; i++) {
		if (l.s[i] == ' ')
			col++;
		else if (l.s[i] == '\t')
			col = (col / 8 + 1) * 8;
		else
			break;
	}
	return col;
}

/* ---- vmap: open addressing, FNV-1a ---- */

struct vmap_slot {
	char *key;
	size_t len;
	size_t val;
	uint64_t hash;
};

static uint64_t hash_bytes(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ULL;
	}
	return h;
}

static struct vmap_slot *vmap_slot(const struct vmap *m, const char *key, size_t len,
				   uint64_t h)
{
	size_t i = (size_t)h & (m->alloc - 1);

	for (;;) {
		struct vmap_slot *s = &m->slots[i];

		if (!s->key || (s->hash == h && s->len == len && !memcmp(s->key, key, len)))
			return s;
		i = (i + 1) & (m->alloc - 1);
	}
}

void vmap_put(struct vmap *m, const char *key, size_t len, size_t val)
{
	uint64_t h = hash_bytes(key, len);
	struct vmap_slot *s;

	if ((m->nr + 1) * 2 > m->alloc) {
		struct vmap old = *m;
		size_t i;

		m->alloc = old.alloc ? old.alloc * 2 : 64;
		m->slots = xcalloc(m->alloc, sizeof(*m->slots));
		for (i = 0; i < old.alloc; i++)
			if (old.slots[i].key)
				*vmap_slot(m, old.slots[i].key, old.slots[i].len,
					   old.slots[i].hash) = old.slots[i];
		free(old.slots);
	}
	s = vmap_slot(m, key, len, h);
	if (!s->key) {
		/* keys may hold NUL bytes: copy them whole */
		s->key = xmalloc(len + 1);
		memcpy(s->key, key, len);
		s->key[len] = '\0';
		s->len = len;
		s->hash = h;
		m->nr++;
	}
	s->val = val;
}

size_t vmap_get(const struct vmap *m, const char *key, size_t len)
{
	struct vmap_slot *s;

	if (!m->alloc)
		return (size_t)-1;
	s = vmap_slot(m, key, len, hash_bytes(key, len));
	return s->key ? s->val : (size_t)-1;
}

void vmap_release(struct vmap *m)
{
	size_t i;

	for (i = 0; i < m->alloc; i++)
		free(m->slots[i].key);
	free(m->slots);
	*m = (struct vmap)VMAP_INIT;
}

/* ---- claims ---- */

struct vclaim {
	size_t first, end;
	unsigned char owner;
};

struct vclaims {
	struct vclaim *v;
	size_t nr, alloc;
};

void vs_claim(struct vscan *s, size_t first, size_t end)
{
	struct vclaims *c = s->claims;

	if (!c || first >= end || first >= s->nr)
		return;
	if (end > s->nr)
		end = s->nr;
	ALLOC_GROW(c->v, c->nr + 1, c->alloc);
	c->v[c->nr].first = first;
	c->v[c->nr].end = end;
	c->v[c->nr].owner = s->self;
	c->nr++;
}

static int claim_cmp(const void *a, const void *b)
{
	const struct vclaim *x = a, *y = b;

	if (x->first != y->first)
		return x->first < y->first ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;	/* longer first */
	return (int)x->owner - (int)y->owner;
}

/*
 * Settle the claims: the outermost claim owns its lines. A claim that
 * starts inside a claim of another parser loses the overlap. The sweep
 * remembers how far lines are owned, so the work is linear in the lines
 * plus the claims.
 */
static void apply_claims(unsigned char *owner, struct vclaims *c)
{
	size_t i, covered = 0;

	if (!c->nr)
		return;
	qsort(c->v, c->nr, sizeof(*c->v), claim_cmp);
	for (i = 0; i < c->nr; i++) {
		size_t j = c->v[i].first;

		if (j < covered)
			j = covered;
		for (; j < c->v[i].end; j++)
			owner[j] = c->v[i].owner;
		if (c->v[i].end > covered)
			covered = c->v[i].end;
	}
}

/* ---- sinks ---- */

struct vsink {
	struct verify_test *tests;
	size_t nr, alloc;
	size_t dropped;
	struct vmap names;
	long counted[4];	/* per outcome, including dropped tests */
	long p, f, sk, e;
	int have_counts;
	int recognised;
	int lists_all;		/* the test lines name every test the counts count */
};

static int severity(enum verify_outcome o)
{
	switch (o) {
	case VERIFY_SKIP: return 0;
	case VERIFY_PASS: return 1;
	case VERIFY_FAIL: return 2;
	case VERIFY_ERROR: return 3;
	}
	return 0;
}

/*
 * Copy `n` bytes, turning control characters (and NUL) into '?' so the
 * copy is one printable string; newlines and tabs stay when `multiline`.
 */
static char *dup_clean(const char *src, size_t n, int multiline)
{
	char *s = xmalloc(n + 1);
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)src[i];

		if ((c < 0x20 || c == 0x7f) && !(multiline && (c == '\n' || c == '\t')))
			c = '?';
		s[i] = (char)c;
	}
	s[n] = '\0';
	return s;
}

static char *clean_name(const char *name, size_t len)
{
	return dup_clean(name, len > VERIFY_NAME_MAX ? VERIFY_NAME_MAX : len, 0);
}

size_t vs_find(struct vscan *s, const char *name, size_t len)
{
	if (len > VERIFY_NAME_MAX)
		len = VERIFY_NAME_MAX;
	return vmap_get(&s->sink->names, name, len);
}

size_t vs_test(struct vscan *s, const char *name, size_t len, enum verify_outcome o)
{
	struct vsink *k = s->sink;
	size_t h;

	if (len > VERIFY_NAME_MAX)
		len = VERIFY_NAME_MAX;
	k->recognised = 1;
	h = vmap_get(&k->names, name, len);
	if (h != (size_t)-1) {
		struct verify_test *t = &k->tests[h];

		if (severity(o) > severity(t->outcome)) {
			k->counted[t->outcome]--;
			k->counted[o]++;
			t->outcome = o;
		}
		return h;
	}
	k->counted[o]++;
	if (k->nr >= VERIFY_TESTS_MAX) {
		k->dropped++;
		return (size_t)-1;
	}
	ALLOC_GROW(k->tests, k->nr + 1, k->alloc);
	h = k->nr++;
	k->tests[h].name = clean_name(name, len);
	k->tests[h].outcome = o;
	k->tests[h].excerpt = NULL;
	k->tests[h].format = s->format;
	vmap_put(&k->names, name, len, h);
	return h;
}

size_t vs_test_new(struct vscan *s, const char *name, size_t len, enum verify_outcome o)
{
	struct vsink *k = s->sink;
	size_t h;

	if (len > VERIFY_NAME_MAX)
		len = VERIFY_NAME_MAX;
	k->recognised = 1;
	k->counted[o]++;
	if (k->nr >= VERIFY_TESTS_MAX) {
		k->dropped++;
		return (size_t)-1;
	}
	ALLOC_GROW(k->tests, k->nr + 1, k->alloc);
	h = k->nr++;
	k->tests[h].name = clean_name(name, len);
	k->tests[h].outcome = o;
	k->tests[h].excerpt = NULL;
	k->tests[h].format = s->format;
	vmap_put(&k->names, name, len, h);	/* vs_find() finds the latest */
	return h;
}

void vs_lists_all(struct vscan *s)
{
	s->sink->lists_all = 1;
}

enum verify_outcome vs_outcome(struct vscan *s, size_t h)
{
	if (h >= s->sink->nr)
		return VERIFY_PASS;
	return s->sink->tests[h].outcome;
}

long vs_count(struct vscan *s, enum verify_outcome o)
{
	return s->sink->counted[o];
}

size_t vs_nr(struct vscan *s)
{
	return s->sink->nr;
}

const char *vs_name(struct vscan *s, size_t h)
{
	return h < s->sink->nr ? s->sink->tests[h].name : "";
}

const char *vs_excerpt_of(struct vscan *s, size_t h)
{
	return h < s->sink->nr && s->sink->tests[h].excerpt ? s->sink->tests[h].excerpt : "";
}

int vs_has_excerpt(struct vscan *s, size_t h)
{
	return h < s->sink->nr && s->sink->tests[h].excerpt;
}

void vs_excerpt_text(struct vscan *s, size_t h, const char *text, size_t len, int replace)
{
	struct verify_test *t;
	struct sv v = sv_make(text, len);

	if (h >= s->sink->nr)
		return;
	t = &s->sink->tests[h];
	if (t->excerpt && !replace)
		return;
	sv_rtrim(&v);
	while (v.n && (v.p[0] == '\n' || v.p[0] == '\r'))
		v.p++, v.n--;
	if (!v.n)
		return;
	free(t->excerpt);
	if (v.n <= VERIFY_EXCERPT_MAX) {
		t->excerpt = dup_clean(v.p, v.n, 1);
	} else {
		static const char mark[] = "\n[...]\n";
		size_t head = VERIFY_EXCERPT_MAX / 4;
		size_t tail = VERIFY_EXCERPT_MAX - head - (sizeof(mark) - 1);
		struct buf b = BUF_INIT;

		buf_add(&b, v.p, head);
		buf_add(&b, mark, sizeof(mark) - 1);
		buf_add(&b, v.p + v.n - tail, tail);
		t->excerpt = dup_clean(b.buf, b.len, 1);
		buf_release(&b);
	}
}

/* Append line `l` without its first `cut` columns of spaces. */
static void add_dedented(struct buf *b, const struct vline *l, size_t cut)
{
	size_t k = 0;

	while (k < cut && k < l->len && l->s[k] == ' ')
		k++;
	buf_add(b, l->s + k, l->len - k);
	buf_addch(b, '\n');
}

void vs_excerpt(struct vscan *s, size_t h, size_t first, size_t end, int replace)
{
	struct buf b = BUF_INIT;
	size_t i, cut, budget = VERIFY_EXCERPT_MAX * 2;

	if (h >= s->sink->nr || (s->sink->tests[h].excerpt && !replace))
		return;
	if (end > s->nr)
		end = s->nr;
	/* Skip blank lines at both ends. */
	while (first < end && (!vs_visible(s, first) || !s->lines[first].len))
		first++;
	while (end > first && (!vs_visible(s, end - 1) || !s->lines[end - 1].len))
		end--;
	/* The indentation all lines share is dropped (within the budget). */
	for (i = first, cut = (size_t)-1; i < end && i - first < 4 * budget; i++) {
		size_t k = 0;

		if (!vs_visible(s, i) || !s->lines[i].len)
			continue;
		while (k < s->lines[i].len && s->lines[i].s[k] == ' ')
			k++;
		if (k < cut)
			cut = k;
	}
	if (cut == (size_t)-1)
		cut = 0;
	/* Gather the head, then jump to the tail when too long. */
	for (i = first; i < end && b.len < budget; i++) {
		if (!vs_visible(s, i))
			continue;
		add_dedented(&b, &s->lines[i], cut);
	}
	if (i < end) {
		size_t j = end, tail = 0;

		while (j > i && tail < VERIFY_EXCERPT_MAX) {
			j--;
			if (vs_visible(s, j))
				tail += s->lines[j].len + 1;
		}
		buf_addstr(&b, "[...]\n");
		for (; j < end; j++) {
			if (!vs_visible(s, j))
				continue;
			add_dedented(&b, &s->lines[j], cut);
		}
	}
	vs_excerpt_text(s, h, b.buf, b.len, replace);
	buf_release(&b);
}

void vs_counts(struct vscan *s, long passed, long failed, long skipped, long errors)
{
	struct vsink *k = s->sink;

	k->recognised = 1;
	k->have_counts = 1;
	k->p += passed > 0 ? passed : 0;
	k->f += failed > 0 ? failed : 0;
	k->sk += skipped > 0 ? skipped : 0;
	k->e += errors > 0 ? errors : 0;
}

void vs_recognised(struct vscan *s)
{
	s->sink->recognised = 1;
}

static void sink_release(struct vsink *k)
{
	size_t i;

	for (i = 0; i < k->nr; i++) {
		free(k->tests[i].name);
		free(k->tests[i].excerpt);
	}
	free(k->tests);
	vmap_release(&k->names);
}

/* ---- cleaning ---- */

/* Length of the escape sequence at s (s[0] == ESC), at most n. */
static size_t escape_len(const char *s, size_t n)
{
	size_t i;

	if (n < 2)
		return n;
	if (s[1] == '[') {	/* CSI: parameters, intermediates, final byte */
		for (i = 2; i < n; i++)
			if ((unsigned char)s[i] >= 0x40 && (unsigned char)s[i] <= 0x7e)
				return i + 1;
		return n;
	}
	if (s[1] == ']') {	/* OSC: up to BEL or ESC \ */
		for (i = 2; i < n; i++) {
			if (s[i] == '\a')
				return i + 1;
			if (s[i] == 0x1b && i + 1 < n && s[i + 1] == '\\')
				return i + 2;
		}
		return n;
	}
	return 2;
}

struct vtext {
	struct buf mem;
	struct vline *lines;
	size_t nr, alloc;
};

/* Append one raw line (without "\n"), cleaned. */
static void add_line(struct vtext *t, size_t *offs, const char *s, size_t n)
{
	const char *cr;
	size_t i, start = t->mem.len;

	while (n && s[n - 1] == '\r')
		n--;
	/* A carriage return redraws the line: keep what was drawn last. */
	cr = memrchr(s, '\r', n);
	if (cr) {
		n -= (size_t)(cr + 1 - s);
		s = cr + 1;
	}
	for (i = 0; i < n;) {
		if (s[i] == 0x1b) {
			i += escape_len(s + i, n - i);
			continue;
		}
		buf_addch(&t->mem, s[i]);
		i++;
	}
	ALLOC_GROW(t->lines, t->nr + 1, t->alloc);
	t->lines[t->nr].s = NULL;
	t->lines[t->nr].len = t->mem.len - start;
	offs[t->nr] = start;	/* pointers fixed once mem stops moving */
	t->nr++;
}

static void add_text(struct vtext *t, size_t **offs, size_t *offs_alloc, const char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		const char *nl = memchr(s + i, '\n', n - i);
		size_t len = nl ? (size_t)(nl - (s + i)) : n - i;

		if (t->nr + 1 > *offs_alloc) {
			*offs_alloc = (t->nr + 1) * 2;
			*offs = xrealloc(*offs, *offs_alloc * sizeof(**offs));
		}
		add_line(t, *offs, s + i, len);
		i += len + (nl ? 1 : 0);
	}
}

static void text_build(struct vtext *t, const struct verify_output *o)
{
	size_t *offs = NULL, offs_alloc = 0, i;

	if (o->out && o->out_len)
		add_text(t, &offs, &offs_alloc, o->out, o->out_len);
	if (o->err && o->err_len)
		add_text(t, &offs, &offs_alloc, o->err, o->err_len);
	for (i = 0; i < t->nr; i++)
		t->lines[i].s = t->mem.buf + offs[i];
	free(offs);
}

static void text_release(struct vtext *t)
{
	buf_release(&t->mem);
	free(t->lines);
}

/* ---- the result ---- */

static void add_result_test(struct verify_result *r, struct verify_test *t)
{
	if (r->tests_nr >= VERIFY_TESTS_MAX) {
		r->tests_dropped++;
		free(t->name);
		free(t->excerpt);
		return;
	}
	ALLOC_GROW(r->tests, r->tests_nr + 1, r->tests_alloc);
	r->tests[r->tests_nr++] = *t;
}

static void set_tail(struct verify_result *r, const struct vtext *t)
{
	struct buf b = BUF_INIT;
	size_t end = t->nr, i, len = 0;

	while (end > 0 && !t->lines[end - 1].len)
		end--;
	/* the last lines that fit in VERIFY_TAIL_MAX */
	for (i = end; i > 0 && len + t->lines[i - 1].len + 1 <= VERIFY_TAIL_MAX; i--)
		len += t->lines[i - 1].len + 1;
	if (i == end && end > 0) {	/* the last line alone is too long: its end */
		const struct vline *l = &t->lines[end - 1];

		buf_add(&b, l->s + l->len - (VERIFY_TAIL_MAX - 1), VERIFY_TAIL_MAX - 1);
	}
	for (; i < end; i++) {
		buf_add(&b, t->lines[i].s, t->lines[i].len);
		buf_addch(&b, '\n');
	}
	buf_rtrim(&b);
	r->tail = dup_clean(b.buf, b.len, 1);
	buf_release(&b);
}

static void add_synthetic(struct verify_result *r, const char *name)
{
	struct verify_test t;

	t.name = xstrdup(name);
	t.outcome = VERIFY_ERROR;
	t.excerpt = NULL;
	if (r->tail && r->tail[0]) {
		size_t n = strlen(r->tail);

		/* the end of the output says most about why it stopped */
		t.excerpt = xstrdup(n > VERIFY_EXCERPT_MAX ? r->tail + n - VERIFY_EXCERPT_MAX
				    : r->tail);
	}
	t.format = "exit-status";
	add_result_test(r, &t);
	r->errors++;
}

static void disagree(struct verify_result *r, const char *format, const char *what,
		     long stated, long named)
{
	strvec_pushf(&r->disagreements, "%s: the summary says %ld %s, the test lines %ld",
		     format, stated, what, named);
}

/*
 * A format that states its counts and names its tests: do the two agree?
 * When the lines name every test, each count is checked; otherwise only
 * the failures, which every format names.
 */
static void cross_check(struct verify_result *r, const char *format, const struct vsink *k)
{
	long cf = k->counted[VERIFY_FAIL], ce = k->counted[VERIFY_ERROR];

	if (k->lists_all) {
		if (k->p != k->counted[VERIFY_PASS])
			disagree(r, format, "passed", k->p, k->counted[VERIFY_PASS]);
		if (k->f != cf)
			disagree(r, format, "failed", k->f, cf);
		if (k->sk != k->counted[VERIFY_SKIP])
			disagree(r, format, "skipped", k->sk, k->counted[VERIFY_SKIP]);
		if (k->e != ce)
			disagree(r, format, "errors", k->e, ce);
	} else if (k->f + k->e != cf + ce && (cf + ce || k->nr)) {
		disagree(r, format, "failed or errored", k->f + k->e, cf + ce);
	}
}

void verify_parse(struct verify_result *out, const struct verify_output *o)
{
	struct vtext t = { BUF_INIT, NULL, 0, 0 };
	struct vclaims claims = { NULL, 0, 0 };
	unsigned char *owner;
	size_t i, j;

	out->exit_code = o->exit_code;
	out->timed_out = o->timed_out;
	out->truncated = o->truncated;
	out->duration_ms = o->duration_ms;

	text_build(&t, o);
	owner = xcalloc(t.nr ? t.nr : 1, 1);
	for (i = 0; i < ARRAY_SIZE(parsers); i++) {
		struct vscan s = { t.lines, t.nr, owner, (unsigned char)(i + 1),
				   parsers[i]->name, &claims, NULL };

		if (parsers[i]->claim)
			parsers[i]->claim(&s);
	}
	apply_claims(owner, &claims);
	free(claims.v);

	for (i = 0; i < ARRAY_SIZE(parsers); i++) {
		struct vsink k = { 0 };
		struct vscan s = { t.lines, t.nr, owner, (unsigned char)(i + 1),
				   parsers[i]->name, NULL, &k };

		parsers[i]->parse(&s);
		if (k.recognised) {
			strvec_push(&out->formats, parsers[i]->name);
			if (k.have_counts && !o->truncated)
				cross_check(out, parsers[i]->name, &k);
			if (k.have_counts) {
				/* a failure the output names is never outvoted by a
				 * summary that says fewer failed (mixed or mangled output) */
				out->passed += k.p;
				out->failed += k.f > k.counted[VERIFY_FAIL] ? k.f : k.counted[VERIFY_FAIL];
				out->skipped += k.sk;
				out->errors += k.e > k.counted[VERIFY_ERROR] ? k.e
					       : k.counted[VERIFY_ERROR];
			} else {
				out->passed += k.counted[VERIFY_PASS];
				out->failed += k.counted[VERIFY_FAIL];
				out->skipped += k.counted[VERIFY_SKIP];
				out->errors += k.counted[VERIFY_ERROR];
			}
			for (j = 0; j < k.nr; j++)
				add_result_test(out, &k.tests[j]);
			out->tests_dropped += k.dropped;
			k.nr = 0;	/* moved */
		}
		sink_release(&k);
	}
	set_tail(out, &t);

	if (o->timed_out) {
		char *n = xstrfmt("(timed out after %ld ms)", o->duration_ms);

		add_synthetic(out, n);
		free(n);
	} else if (o->exit_code != 0 && out->failed == 0 && out->errors == 0) {
		/* The command failed and no test says why: a build error, a
		 * crash between tests, or output we do not know. */
		char *n = o->exit_code < 0 ? xstrdup("(no exit status)")
			: xstrfmt("(exit status %d)", o->exit_code);

		add_synthetic(out, n);
		free(n);
	}
	free(owner);
	text_release(&t);
}
