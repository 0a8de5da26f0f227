/*
 * The ranking and the text of the repository map (see rank.h).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "base/tokens.h"
#include "context/rank.h"
#include "context/tokenize.h"

#define DAMPING 0.85
#define MAX_ITER 100
#define EPSILON 1e-9
#define MENTION_BOOST 10.0
#define PER_FILE 6		/* definitions per file in the first pass */

static const char heading[] =
	"Repository map: the files most relevant here, best first, with their main "
	"definitions (\xe2\x8b\xae marks lines left out).\n";

struct ranker {
	struct ctx_index *idx;
	size_t n;
	/* public definitions of each symbol, grouped by file: CSR */
	uint32_t *sym_start;		/* nsyms + 1 */
	uint32_t *sym_defs;		/* def indices */
	uint32_t *sd_file;		/* the file of each sym_defs[] entry */
	float *sd_kw;			/* and its kind weight */
	uint32_t *def_file;		/* def index -> file */
	uint32_t *ndefiners;		/* files defining each symbol */
	unsigned char *use;		/* per symbol: it makes edges (1 to CTX_DEFINERS_MAX definers) */
	float *kw;			/* kind_weight() of each definition */
	unsigned char *mentioned;	/* per symbol: 1 request, 2 focus */
	double *p;			/* personalisation */
	/* edges: CSR by source file */
	uint32_t *out_start;
	uint32_t *out_to;
	double *out_w;
	double *outw;
	double *r;
	double *score;			/* per definition */
	unsigned char *ref_ok;		/* per reference: it makes edges (usable, not self) */
	struct msym { uint32_t sym; double w; } *msyms;	/* mentioned symbols */
	int focused;			/* the personalisation is not uniform */
	struct pending { uint32_t sym; double def_w, ref_w; int how; } pending[256];
	size_t npending;
	size_t nmsyms, amsyms;
};

/* ---- symbols and definers ---- */

static double kind_weight(const char *kind);

static void build_definers(struct ranker *k)
{
	struct ctx_index *idx = k->idx;
	size_t nsyms = idx->nsyms, f, i;
	uint32_t *last = xmalloc((nsyms ? nsyms : 1) * sizeof(*last));
	uint32_t *fill;

	k->sym_start = xcalloc(nsyms + 1, sizeof(*k->sym_start));
	k->ndefiners = xcalloc(nsyms ? nsyms : 1, sizeof(*k->ndefiners));
	k->def_file = xmalloc((idx->ndefs ? idx->ndefs : 1) * sizeof(*k->def_file));
	k->kw = xmalloc((idx->ndefs ? idx->ndefs : 1) * sizeof(*k->kw));
	memset(last, 0xff, (nsyms ? nsyms : 1) * sizeof(*last));
	{
		/* kinds are interned: a few distinct offsets */
		uint32_t koff[16];
		float kval[16];
		size_t nk = 0, m;

		for (i = 0; i < idx->ndefs; i++) {
			uint32_t off = idx->defs[i].kind;

			for (m = 0; m < nk && koff[m] != off; m++)
				;
			if (m < nk) {
				k->kw[i] = kval[m];
				continue;
			}
			k->kw[i] = (float)kind_weight(ctx_str(idx, off));
			if (nk < ARRAY_SIZE(koff)) {
				koff[nk] = off;
				kval[nk++] = k->kw[i];
			}
		}
	}
	for (f = 0; f < k->n; f++) {
		const struct ctx_file *cf = &idx->files[f];

		for (i = cf->def0; i < cf->def0 + cf->ndefs; i++) {
			const struct ctx_def *d = &idx->defs[i];

			k->def_file[i] = (uint32_t)f;
			if (d->flags & CTX_D_FILE_SCOPE)
				continue;
			k->sym_start[d->sym + 1]++;
			if (last[d->sym] != f) {
				last[d->sym] = (uint32_t)f;
				k->ndefiners[d->sym]++;
			}
		}
	}
	/* a byte per symbol: the test every reference makes stays in the cache */
	k->use = xmalloc(nsyms ? nsyms : 1);
	for (i = 0; i < nsyms; i++) {
		k->sym_start[i + 1] += k->sym_start[i];
		k->use[i] = k->ndefiners[i] >= 1 && k->ndefiners[i] <= CTX_DEFINERS_MAX;
	}
	k->sym_defs = xmalloc((k->sym_start[nsyms] ? k->sym_start[nsyms] : 1) * sizeof(uint32_t));
	k->sd_file = xmalloc((k->sym_start[nsyms] ? k->sym_start[nsyms] : 1) * sizeof(uint32_t));
	k->sd_kw = xmalloc((k->sym_start[nsyms] ? k->sym_start[nsyms] : 1) * sizeof(float));
	fill = xmalloc((nsyms ? nsyms : 1) * sizeof(*fill));
	memcpy(fill, k->sym_start, (nsyms ? nsyms : 1) * sizeof(*fill));
	for (f = 0; f < k->n; f++) {
		const struct ctx_file *cf = &idx->files[f];

		for (i = cf->def0; i < cf->def0 + cf->ndefs; i++)
			if (!(idx->defs[i].flags & CTX_D_FILE_SCOPE)) {
				uint32_t at = fill[idx->defs[i].sym]++;

				k->sym_defs[at] = (uint32_t)i;
				k->sd_file[at] = (uint32_t)f;
				k->sd_kw[at] = k->kw[i];
			}
	}
	free(fill);
	free(last);
}

/* Whether file `f` defines `sym` (publicly). */
static int defines(const struct ranker *k, uint32_t sym, uint32_t f)
{
	uint32_t i;

	for (i = k->sym_start[sym]; i < k->sym_start[sym + 1]; i++)
		if (k->sd_file[i] == f)
			return 1;
	return 0;
}

static double ref_weight(const struct ranker *k, const struct ctx_ref *r)
{
	double d = k->ndefiners[r->sym];
	double w = sqrt((double)r->count) / (d * d);

	if (k->mentioned[r->sym])
		w *= MENTION_BOOST;
	return w;
}


/* ---- the graph ---- */

/*
 * Edge weights are summed as integers (units of 1/QUANTUM): the sum is
 * then the same in whatever order a file's references come, so a file
 * indexed alone and the same file in a cold build give the same map to
 * the last bit. At least one unit, so that no edge vanishes.
 */
#define QUANTUM ((double)(1u << 24))

static uint64_t quantise(double w)
{
	double q = w * QUANTUM;

	return q < 1 ? 1 : (uint64_t)q;
}

/*
 * The edges out of each file, summed per target in a dense accumulator
 * (no sort: each target's sum in PageRank gets one term per source, in
 * source order, whatever the order of a source's edges; outw is summed
 * in the order of first appearance, canonical for the file's content).
 */
static void build_edges(struct ranker *k)
{
	struct ctx_index *idx = k->idx;
	uint64_t *acc = xcalloc(k->n ? k->n : 1, sizeof(*acc));
	uint32_t *touched = xmalloc((k->n ? k->n : 1) * sizeof(*touched));
	size_t nedges = 0, aedges = 0, f, i, j, t;

	k->out_start = xcalloc(k->n + 1, sizeof(*k->out_start));
	k->outw = xcalloc(k->n ? k->n : 1, sizeof(*k->outw));
	k->ref_ok = xcalloc(idx->nrefs ? idx->nrefs : 1, 1);
	for (f = 0; f < k->n; f++) {
		const struct ctx_file *cf = &idx->files[f];
		size_t nt = 0;

		for (i = cf->ref0; i < cf->ref0 + cf->nrefs; i++) {
			const struct ctx_ref *r = &idx->refs[i];
			uint32_t end;
			double w;

			if (!k->use[r->sym] || defines(k, r->sym, (uint32_t)f))
				continue;
			k->ref_ok[i] = 1;
			w = ref_weight(k, r);
			end = k->sym_start[r->sym + 1];
			for (j = k->sym_start[r->sym]; j < end;) {
				uint32_t to = k->sd_file[j];
				double kw = 0;

				/* several definitions in one file: one edge, the strongest kind */
				for (; j < end && k->sd_file[j] == to; j++)
					if (k->sd_kw[j] > kw)
						kw = k->sd_kw[j];
				if (!acc[to])
					touched[nt++] = to;
				acc[to] += quantise(w * kw);
			}
		}
		if (nedges + nt > aedges) {
			aedges = (nedges + nt) * 3 / 2 + 64;
			k->out_to = xrealloc(k->out_to, aedges * sizeof(*k->out_to));
			k->out_w = xrealloc(k->out_w, aedges * sizeof(*k->out_w));
		}
		for (t = 0; t < nt; t++) {
			k->out_to[nedges] = touched[t];
			k->out_w[nedges] = (double)acc[touched[t]] / QUANTUM;
			k->outw[f] += k->out_w[nedges];
			acc[touched[t]] = 0;
			nedges++;
		}
		k->out_start[f + 1] = (uint32_t)nedges;
	}
	free(acc);
	free(touched);
}

/* ---- personalisation ---- */

/*
 * A name the focus mentions: queued, then applied to every file in two
 * passes over the definitions and references whatever their number
 * (apply_mentions()).
 */
#define MENTIONS_MAX 256

static void mention_sym(struct ranker *k, long sym, double def_w, double ref_w, int how)
{
	if (sym < 0 || k->npending >= MENTIONS_MAX)
		return;
	k->pending[k->npending].sym = (uint32_t)sym;
	k->pending[k->npending].def_w = def_w;
	k->pending[k->npending].ref_w = ref_w;
	k->pending[k->npending].how = how;
	k->npending++;
}

static void apply_mentions(struct ranker *k)
{
	struct ctx_index *idx = k->idx;
	int32_t *slot;
	uint32_t nd[MENTIONS_MAX] = { 0 }, nr[MENTIONS_MAX] = { 0 };
	uint32_t mark_def[MENTIONS_MAX], mark_ref[MENTIONS_MAX];
	double best[MENTIONS_MAX];
	size_t f, i, e, pass;

	if (!k->npending)
		return;
	slot = xmalloc((idx->nsyms ? idx->nsyms : 1) * sizeof(*slot));
	memset(slot, 0xff, (idx->nsyms ? idx->nsyms : 1) * sizeof(*slot));
	for (e = 0; e < k->npending; e++)
		if (slot[k->pending[e].sym] < 0)
			slot[k->pending[e].sym] = (int32_t)e;	/* the first entry of the name */
	for (pass = 0; pass < 2; pass++) {
		memset(mark_def, 0, sizeof(mark_def));
		memset(mark_ref, 0, sizeof(mark_ref));
		for (f = 0; f < k->n; f++) {
			const struct ctx_file *cf = &idx->files[f];
			uint32_t tag = (uint32_t)f + 1;

			/* every definition counts here, file-scope ones too */
			for (i = cf->def0; i < cf->def0 + cf->ndefs; i++) {
				int32_t u = slot[idx->defs[i].sym];

				if (u < 0)
					continue;
				if (mark_def[u] != tag) {
					mark_def[u] = tag;
					best[u] = 0;
					nd[u] += !pass;
				}
				if (k->kw[i] > best[u])
					best[u] = k->kw[i];
			}
			for (i = cf->ref0; i < cf->ref0 + cf->nrefs; i++) {
				int32_t u = slot[idx->refs[i].sym];

				if (u < 0 || mark_def[u] == tag || mark_ref[u] == tag)
					continue;
				mark_ref[u] = tag;
				nr[u] += !pass;
			}
			if (!pass)
				continue;
			for (e = 0; e < k->npending; e++) {
				int32_t u = slot[k->pending[e].sym];

				if (!nd[u])
					continue;	/* only referred to: a library's name says nothing of the tree */
				if (mark_def[u] == tag)
					k->p[f] += k->pending[e].def_w * best[u] / (double)nd[u];
				else if (mark_ref[u] == tag)
					k->p[f] += k->pending[e].ref_w / (double)nr[u];
			}
		}
	}
	for (e = 0; e < k->npending; e++) {
		const struct pending *m = &k->pending[e];
		int32_t u = slot[m->sym];

		if (!nd[u])
			continue;
		if (k->mentioned[m->sym] < m->how)
			k->mentioned[m->sym] = (unsigned char)m->how;
		ALLOC_GROW(k->msyms, k->nmsyms + 1, k->amsyms);
		k->msyms[k->nmsyms].sym = m->sym;
		k->msyms[k->nmsyms].w = (m->how == 2 ? 2.0 : 1.0) / (double)nd[u];
		k->nmsyms++;
	}
	free(slot);
}

static double mention_weight(const struct ranker *k, uint32_t sym)
{
	size_t i;

	for (i = 0; i < k->nmsyms; i++)
		if (k->msyms[i].sym == sym)
			return k->msyms[i].w;
	return 0;
}

static const char *file_path(const struct ranker *k, size_t f)
{
	return ctx_str(k->idx, k->idx->files[f].path);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/*
 * A word names files: a path (weight w), a folder ("src/x" or "src/x/":
 * w spread over its files), or a file name ("parser.c": w spread over
 * the files of that name). Returns whether it named any.
 */
static int mention_path(struct ranker *k, const char *word, size_t len, double w)
{
	char *s;
	size_t f, n = 0, wl;
	long hit;

	while (len && word[len - 1] == '/')
		len--;
	while (len > 2 && word[0] == '.' && word[1] == '/') {
		word += 2;
		len -= 2;
	}
	if (!len)
		return 0;
	s = xstrndup(word, len);
	hit = ctx_index_find_file(k->idx, s);
	if (hit >= 0 && !(k->idx->files[hit].flags & CTX_F_SKIP)) {
		k->p[hit] += w;
		free(s);
		return 1;
	}
	wl = strlen(s);
	/* a folder: the files sorted after "s/" share the prefix, contiguous */
	{
		size_t lo = 0, hi = k->n;
		struct buf pre = BUF_INIT;

		buf_addf(&pre, "%s/", s);
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (strcmp(file_path(k, mid), pre.buf) < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (f = lo; f < k->n && !strncmp(file_path(k, f), pre.buf, pre.len); f++)
			n += !(k->idx->files[f].flags & CTX_F_SKIP);
		if (n) {
			for (f = lo; f < k->n && !strncmp(file_path(k, f), pre.buf, pre.len); f++)
				if (!(k->idx->files[f].flags & CTX_F_SKIP))
					k->p[f] += w / (double)n;
			buf_release(&pre);
			free(s);
			return 1;
		}
		buf_release(&pre);
	}
	/* a file name with an extension */
	if (!strchr(s, '/') && strchr(s, '.') && wl >= 3) {
		for (f = 0; f < k->n; f++)
			n += !strcmp(base_name(file_path(k, f)), s) && !(k->idx->files[f].flags & CTX_F_SKIP);
		if (n)
			for (f = 0; f < k->n; f++)
				if (!strcmp(base_name(file_path(k, f)), s) &&
				    !(k->idx->files[f].flags & CTX_F_SKIP))
					k->p[f] += w / (double)n;
	}
	free(s);
	return n > 0;
}

struct req_scan {
	struct ranker *k;
	struct strvec seen;
};

static int req_ident(void *data, const char *s, size_t len, uint64_t h)
{
	struct req_scan *rs = data;
	struct ranker *k = rs->k;
	long sym = ctx_index_find_sym(k->idx, s, len);
	char *name;

	(void)h;
	if (sym < 0)
		return 0;
	name = xstrndup(s, len);
	if (strvec_find(&rs->seen, name) < 0) {
		strvec_push(&rs->seen, name);
		mention_sym(k, sym, 1.0, 0.5, 1);
	}
	free(name);
	return 0;
}

static int word_char(unsigned char c)
{
	return ctx_ident_char(c) || c == '/' || c == '.' || c == '-' || c == '+' || c == '@' ||
	       c == '~' || c == '#';
}

static void personalise(struct ranker *k, const struct ctx_focus *focus)
{
	double sum = 0;
	size_t f, i;

	k->p = xcalloc(k->n ? k->n : 1, sizeof(*k->p));
	k->mentioned = xcalloc(k->idx->nsyms ? k->idx->nsyms : 1, 1);
	if (focus && focus->request) {
		const char *t = focus->request;
		struct req_scan rs = { k, STRVEC_INIT };

		/* paths and file names: words of path characters, trailing dots dropped */
		while (*t) {
			const char *s;
			size_t len;

			while (*t && !word_char((unsigned char)*t))
				t++;
			s = t;
			while (*t && word_char((unsigned char)*t))
				t++;
			len = (size_t)(t - s);
			while (len && (s[len - 1] == '.' || s[len - 1] == '-'))
				len--;
			if (len >= 3 && (memchr(s, '.', len) || memchr(s, '/', len)))
				mention_path(k, s, len, 2.0);
		}
		ctx_tokenize(focus->request, strlen(focus->request), req_ident, &rs);
		strvec_clear(&rs.seen);
	}
	if (focus && focus->files)
		for (i = 0; i < focus->files->nr; i++)
			mention_path(k, focus->files->v[i], strlen(focus->files->v[i]), 1.0);
	if (focus && focus->focus) {
		for (i = 0; i < focus->focus->nr; i++) {
			const char *x = focus->focus->v[i];

			if (mention_path(k, x, strlen(x), 4.0))
				continue;
			mention_sym(k, ctx_index_find_sym(k->idx, x, strlen(x)), 4.0, 2.0, 2);
		}
	}
	apply_mentions(k);
	for (f = 0; f < k->n; f++)
		sum += k->p[f];
	if (sum <= 0) {
		size_t live = 0;

		for (f = 0; f < k->n; f++)
			live += !(k->idx->files[f].flags & CTX_F_SKIP);
		for (f = 0; f < k->n; f++)
			k->p[f] = (k->idx->files[f].flags & CTX_F_SKIP) ? 0 : 1.0 / (double)live;
	} else {
		k->focused = 1;
		for (f = 0; f < k->n; f++)
			k->p[f] /= sum;
	}
}

/* ---- PageRank ---- */

static int pagerank(struct ranker *k)
{
	double *next = xcalloc(k->n ? k->n : 1, sizeof(*next));
	size_t f, e;
	int it;

	k->r = xmalloc((k->n ? k->n : 1) * sizeof(*k->r));
	memcpy(k->r, k->p, k->n * sizeof(*k->r));
	for (it = 1; it <= MAX_ITER; it++) {
		double dangling = 0, diff = 0;

		for (f = 0; f < k->n; f++) {
			double share;

			if (k->outw[f] <= 0) {
				dangling += k->r[f];
				continue;
			}
			share = DAMPING * k->r[f] / k->outw[f];
			for (e = k->out_start[f]; e < k->out_start[f + 1]; e++)
				next[k->out_to[e]] += share * k->out_w[e];
		}
		for (f = 0; f < k->n; f++) {
			next[f] += ((1.0 - DAMPING) + DAMPING * dangling) * k->p[f];
			diff += fabs(next[f] - k->r[f]);
			k->r[f] = next[f];
			next[f] = 0;
		}
		if (diff < EPSILON)
			break;
	}
	free(next);
	return it > MAX_ITER ? MAX_ITER : it;
}

/* The share of its file's rank a definition of this kind gets without any reference. */
static double kind_weight(const char *kind)
{
	static const char *const strong[] = {
		"function", "method", "class", "struct", "interface", "trait", "module",
		"namespace", "type", "typedef", "enum", "union", "macro", "prototype", "func",
		"impl", "subroutine", "procedure", "constructor",
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(strong); i++)
		if (!strcmp(kind, strong[i]))
			return 1.0;
	if (!strcmp(kind, "member") || !strcmp(kind, "field") || !strcmp(kind, "enumerator") ||
	    !strcmp(kind, "local") || !strcmp(kind, "parameter") || !strcmp(kind, "externvar"))
		return 0.1;
	return 0.5;
}

/*
 * The importance of the definitions of the files that may show (the
 * first `consider` of the order): the others are never looked at.
 */
static void score_defs(struct ranker *k, const uint32_t *order, size_t consider)
{
	struct ctx_index *idx = k->idx;
	size_t f, i, c;
	unsigned char *need = xcalloc(idx->nsyms ? idx->nsyms : 1, 1);
	/*
	 * What flows along a name into each of its definers, summed per
	 * name (an edge's weight is the name's, times the definition's kind):
	 * one write per reference rather than one per (reference, definer),
	 * and only for the names those files define.
	 */
	double *symflow = xcalloc(idx->nsyms ? idx->nsyms : 1, sizeof(*symflow));

	k->score = xcalloc(idx->ndefs ? idx->ndefs : 1, sizeof(*k->score));
	for (c = 0; c < consider; c++) {
		const struct ctx_file *cf = &idx->files[order[c]];

		for (i = cf->def0; i < cf->def0 + cf->ndefs; i++)
			need[idx->defs[i].sym] = 1;
	}
	for (f = 0; f < k->n; f++) {
		const struct ctx_file *cf = &idx->files[f];
		double share;

		if (k->outw[f] <= 0)
			continue;
		share = DAMPING * k->r[f] / k->outw[f];
		for (i = cf->ref0; i < cf->ref0 + cf->nrefs; i++)
			if (k->ref_ok[i] && need[idx->refs[i].sym])
				symflow[idx->refs[i].sym] += share * ref_weight(k, &idx->refs[i]);
	}
	for (c = 0; c < consider; c++) {
		const struct ctx_file *cf = &idx->files[order[c]];

		f = order[c];
		for (i = cf->def0; i < cf->def0 + cf->ndefs; i++) {
			const struct ctx_def *d = &idx->defs[i];

			if (!(d->flags & CTX_D_FILE_SCOPE))
				k->score[i] += symflow[d->sym] * k->kw[i];
			k->score[i] += k->r[f] * k->kw[i] / (double)cf->ndefs;
			if (k->mentioned[d->sym])
				k->score[i] += (k->r[f] + 1.0) * mention_weight(k, d->sym) * k->kw[i];
		}
	}
	free(symflow);
	free(need);
}

/* ---- choosing and rendering ---- */

struct cand {
	uint32_t file;			/* index in idx->files */
	uint32_t pos;			/* position of the file in the rank order */
	uint32_t def;			/* UINT32_MAX: the file alone */
	uint32_t line;
	double score;
	int done;
};

/* By the file's place in the order shown, then importance, then line. */
static int cmp_cand_file(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->pos != y->pos)
		return x->pos < y->pos ? -1 : 1;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

/*
 * Sort the files by `key` (>= 0), highest first, ties by index (files
 * are sorted by path): a stable LSD radix sort on the keys' bits (for
 * doubles >= 0 the bit patterns order as the values do), 16 bits a pass.
 */
static void sort_order(uint32_t *order, const double *key, size_t n)
{
	uint64_t *k = xmalloc((n ? n : 1) * sizeof(*k)), *k2 = xmalloc((n ? n : 1) * sizeof(*k2));
	uint32_t *o2 = xmalloc((n ? n : 1) * sizeof(*o2)), *src = order, *dst = o2;
	uint64_t *ks = k, *kd = k2;
	size_t i, pass, *count = xmalloc(65536 * sizeof(*count));

	for (i = 0; i < n; i++) {
		uint64_t bits;
		double v = key[i] > 0 ? key[i] : 0;

		memcpy(&bits, &v, sizeof(bits));
		k[i] = ~bits;	/* highest first */
		order[i] = (uint32_t)i;
	}
	for (pass = 0; pass < 4; pass++) {
		unsigned shift = 16 * (unsigned)pass;
		size_t sum = 0;

		memset(count, 0, 65536 * sizeof(*count));
		for (i = 0; i < n; i++)
			count[(ks[i] >> shift) & 0xffff]++;
		if (count[(ks[0] >> shift) & 0xffff] == n)
			continue;	/* one digit everywhere: nothing moves */
		for (i = 0; i < 65536; i++) {
			size_t c = count[i];

			count[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++) {
			size_t at = count[(ks[i] >> shift) & 0xffff]++;

			kd[at] = ks[i];
			dst[at] = src[i];
		}
		{
			uint64_t *t = ks;
			uint32_t *u = src;

			ks = kd, kd = t;
			src = dst, dst = u;
		}
	}
	if (src != order)
		memcpy(order, src, n * sizeof(*order));
	free(k);
	free(k2);
	free(o2);
	free(count);
}

struct block {
	uint32_t file;
	uint32_t pos;
	uint32_t *defs;			/* chosen, sorted by line (one per line) */
	size_t ndefs, adefs;
	size_t bytes;
};

static const char *def_text(const struct ctx_index *idx, uint32_t d)
{
	const char *t = ctx_str(idx, idx->defs[d].text);

	return *t ? t : ctx_str(idx, idx->syms[idx->defs[d].sym]);
}

/* Bytes of a block: "\n" path ":\n", then lines with "⋮\n" between gaps. */
static size_t block_bytes(const struct ctx_index *idx, const struct block *b)
{
	size_t n = 1 + strlen(ctx_str(idx, idx->files[b->file].path)) + 2, i;

	for (i = 0; i < b->ndefs; i++) {
		if (i && idx->defs[b->defs[i]].line > idx->defs[b->defs[i - 1]].line + 1)
			n += 4;	/* "⋮\n" */
		n += strlen(def_text(idx, b->defs[i])) + 1;
	}
	return n;
}

static void render_block(struct buf *out, const struct ctx_index *idx, const struct block *b)
{
	size_t i;

	buf_addf(out, "\n%s:\n", ctx_str(idx, idx->files[b->file].path));
	for (i = 0; i < b->ndefs; i++) {
		if (i && idx->defs[b->defs[i]].line > idx->defs[b->defs[i - 1]].line + 1)
			buf_addstr(out, "\xe2\x8b\xae\n");
		buf_addstr(out, def_text(idx, b->defs[i]));
		buf_addch(out, '\n');
	}
}

static int cmp_block(const void *a, const void *b)
{
	const struct block *x = a, *y = b;

	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static void choose(struct ctx_map *out, struct ranker *k, size_t budget)
{
	struct ctx_index *idx = k->idx;
	size_t nfiles = k->n, consider, i, j, total, nblocks = 0;
	int pass;
	struct cand *c = NULL;
	size_t nc = 0, ac = 0;
	double *show;
	struct block *blocks;
	uint32_t *block_of;	/* file -> block + 1 */

	/*
	 * The order shown: the files the focus names first, by their share
	 * of it (PageRank alone would put what they use above them), then
	 * the rest by rank. Without a focus, by rank alone.
	 */
	out->order = xmalloc((nfiles ? nfiles : 1) * sizeof(*out->order));
	show = xmalloc((nfiles ? nfiles : 1) * sizeof(*show));
	for (i = 0; i < nfiles; i++)
		show[i] = k->r[i] + (k->focused ? 1e3 * k->p[i] : 0);
	if (nfiles)
		sort_order(out->order, show, nfiles);
	free(show);
	out->nranked = nfiles;

	total = sizeof(heading) - 1;
	if (tokens_estimate(total) > budget || !nfiles)
		return;
	/* a shown file costs at least a few tokens: more than this many cannot show */
	consider = budget / 4 + 32;
	if (consider > nfiles)
		consider = nfiles;
	score_defs(k, out->order, consider);
	for (i = 0; i < consider; i++) {
		uint32_t f = out->order[i];
		const struct ctx_file *cf = &idx->files[f];

		if (cf->flags & CTX_F_SKIP)
			continue;
		if (!cf->ndefs) {
			/* a file without definitions shows when the focus named it */
			if (k->p[f] > 0 && k->r[f] > 0) {
				ALLOC_GROW(c, nc + 1, ac);
				c[nc++] = (struct cand){ f, (uint32_t)i, UINT32_MAX, 0, k->r[f], 0 };
			}
			continue;
		}
		for (j = cf->def0; j < cf->def0 + cf->ndefs; j++) {
			ALLOC_GROW(c, nc + 1, ac);
			c[nc++] = (struct cand){ f, (uint32_t)i, (uint32_t)j, idx->defs[j].line,
						 k->score[j], 0 };
		}
	}
	/* per file: its definitions by importance; files in the order shown */
	if (nc)
		qsort(c, nc, sizeof(*c), cmp_cand_file);
	blocks = xcalloc(consider ? consider : 1, sizeof(*blocks));
	block_of = xcalloc(nfiles, sizeof(*block_of));
	/*
	 * Pass 1 gives each file, best first, up to PER_FILE definitions, so
	 * that the map is broad; pass 2 fills what is left the same way.
	 */
	for (pass = 1; pass <= 2; pass++) {
		size_t taken = 0;

		for (i = 0; i < nc; i++) {
			struct block *b;
			size_t before, after, at;
			int fresh = 0;

			if (i && c[i].file != c[i - 1].file)
				taken = 0;
			if (c[i].done)
				continue;
			if (tokens_estimate(total + 2) > budget)
				break;	/* not even one more short line would fit */
			if (pass == 1 && taken >= PER_FILE)
				continue;
			if (!block_of[c[i].file]) {
				b = &blocks[nblocks];
				memset(b, 0, sizeof(*b));
				b->file = c[i].file;
				b->pos = c[i].pos;
				b->bytes = block_bytes(idx, b);
				fresh = 1;
			} else {
				b = &blocks[block_of[c[i].file] - 1];
			}
			before = fresh ? 0 : b->bytes;
			if (c[i].def == UINT32_MAX) {
				c[i].done = 1;
				if (tokens_estimate(total + b->bytes) <= budget) {
					block_of[c[i].file] = (uint32_t)++nblocks;
					total += b->bytes;
				}
				continue;
			}
			/* one line shows once, whatever number of names it defines */
			for (at = 0; at < b->ndefs && idx->defs[b->defs[at]].line < c[i].line; at++)
				;
			if (at < b->ndefs && idx->defs[b->defs[at]].line == c[i].line) {
				c[i].done = 1;
				continue;
			}
			ALLOC_GROW(b->defs, b->ndefs + 1, b->adefs);
			memmove(b->defs + at + 1, b->defs + at, (b->ndefs - at) * sizeof(*b->defs));
			b->defs[at] = c[i].def;
			b->ndefs++;
			after = block_bytes(idx, b);
			if (tokens_estimate(total - before + after) <= budget) {
				total += after - before;
				b->bytes = after;
				c[i].done = 1;
				taken++;
				if (fresh)
					block_of[c[i].file] = (uint32_t)++nblocks;
			} else {
				memmove(b->defs + at, b->defs + at + 1,
					(b->ndefs - at - 1) * sizeof(*b->defs));
				b->ndefs--;
				if (fresh) {
					free(b->defs);
					b->defs = NULL;
					b->ndefs = b->adefs = 0;
				}
			}
		}
	}
	free(c);
	free(block_of);
	if (nblocks)
		qsort(blocks, nblocks, sizeof(*blocks), cmp_block);
	buf_addstr(&out->text, heading);
	out->files = xcalloc(nblocks ? nblocks : 1, sizeof(*out->files));
	for (i = 0; i < nblocks; i++) {
		render_block(&out->text, idx, &blocks[i]);
		out->files[i].file = blocks[i].file;
		out->files[i].rank = k->r[blocks[i].file];
		out->files[i].defs = blocks[i].defs;
		out->files[i].ndefs = blocks[i].ndefs;
	}
	out->nfiles = nblocks;
	if (out->text.len != total)
		BUG("repository map: %zu bytes rendered, %zu counted", out->text.len, total);
	free(blocks);
}

void ctx_map_release(struct ctx_map *map)
{
	size_t i;

	buf_release(&map->text);
	for (i = 0; i < map->nfiles; i++)
		free(map->files[i].defs);
	free(map->files);
	free(map->order);
	free(map->rank);
	memset(map, 0, sizeof(*map));
	buf_init(&map->text, 0);
}

int ctx_map_build(struct ctx_map *out, struct ctx_index *idx, const struct ctx_focus *focus,
		  size_t budget)
{
	struct ranker k;
	double t0 = clk_mono_s();

	ctx_map_release(out);
	memset(&k, 0, sizeof(k));
	k.idx = idx;
	k.n = idx->nfiles;
	out->budget = budget;
	build_definers(&k);
	personalise(&k, focus);
	build_edges(&k);
	out->graph_seconds = clk_mono_s() - t0;
	out->edges = k.out_start[k.n];
	out->iterations = pagerank(&k);
	out->pagerank_seconds = clk_mono_s() - t0 - out->graph_seconds;
	choose(out, &k, budget);
	out->tokens = tokens_estimate(out->text.len);
	out->rank = k.r;
	k.r = NULL;
	free(k.sym_start);
	free(k.sym_defs);
	free(k.sd_file);
	free(k.sd_kw);
	free(k.def_file);
	free(k.kw);
	free(k.ndefiners);
	free(k.use);
	free(k.mentioned);
	free(k.p);
	free(k.out_start);
	free(k.out_to);
	free(k.out_w);
	free(k.outw);
	free(k.score);
	free(k.ref_ok);
	free(k.msyms);
	out->seconds = clk_mono_s() - t0;
	return 0;
}

json_t *ctx_map_to_json(const struct ctx_map *map, const struct ctx_index *idx)
{
	json_t *j = json_object(), *files = json_array();
	size_t i, d;

	json_object_set_new(j, "budget", json_integer((json_int_t)map->budget));
	json_object_set_new(j, "tokens", json_integer((json_int_t)map->tokens));
	for (i = 0; i < map->nfiles; i++) {
		const struct ctx_map_file *mf = &map->files[i];
		json_t *f = json_object(), *defs = json_array();

		json_object_set_new(f, "path", jsonx_string(ctx_str(idx, idx->files[mf->file].path)));
		json_object_set_new(f, "rank", json_real(mf->rank));
		for (d = 0; d < mf->ndefs; d++) {
			const struct ctx_def *cd = &idx->defs[mf->defs[d]];
			json_t *o = json_object();

			json_object_set_new(o, "name", jsonx_string(ctx_str(idx, idx->syms[cd->sym])));
			json_object_set_new(o, "kind", jsonx_string(ctx_str(idx, cd->kind)));
			json_object_set_new(o, "line", json_integer(cd->line));
			json_object_set_new(o, "text", jsonx_string(ctx_str(idx, cd->text)));
			json_array_append_new(defs, o);
		}
		json_object_set_new(f, "definitions", defs);
		json_array_append_new(files, f);
	}
	json_object_set_new(j, "files", files);
	return j;
}
