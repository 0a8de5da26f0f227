#define PCRE2_CODE_UNIT_WIDTH 8

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pcre2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/utf8.h"
#include "sandbox/permissions.h"
#include "tools/fs.h"
#include "ws/ignore.h"
#include "ws/walk.h"
#include "tools/registry.h"
#include "tools/search.h"

#define RG_BUFFER (64u * 1024)		/* ripgrep's read buffer: where its binary check looks */
#define FILE_MAX ((size_t)256 << 20)	/* larger files are skipped */
#define MAX_THREADS 8
#define MAX_GLOBS 64

/* ---- the shared state of one search ---- */

struct hit {
	size_t path;			/* offset of the NUL-terminated path in the arena */
	size_t line;
	size_t text;			/* offset of the line in the arena */
	size_t len;			/* bytes of the line kept */
	size_t cut;			/* bytes of the line not kept */
};

struct search;

struct worker {
	struct search *s;
	pcre2_match_data *md;
	pcre2_match_context *mc;
	pcre2_jit_stack *jit_stack;
	struct buf file;		/* the file being searched */
	struct buf arena;		/* paths and lines of the hits */
	struct hit *hits;
	size_t nr, alloc;
	struct search_stats stats;
	int err;			/* a match error that ends the search */
	char *err_msg;
};

struct search {
	const struct wspath_root *root;
	pcre2_code *code;
	int jit;
	struct ignore_rules **globs;	/* alternatives of the glob; NULL: every file */
	size_t nglobs;
	int glob_negated;
	size_t max_results, max_line;
	struct worker *workers;		/* one per thread of the walk */
	/* chain nodes and rules of the folders above the one searched */
	struct ignore_chain **nodes;
	size_t nnodes, anodes;
};

/* ---- ripgrep's binary cut-off ---- */

/*
 * How many leading bytes ripgrep searches of a file holding a NUL byte:
 * it reads into a 64 KiB buffer (doubled while a read ends no line),
 * searches the complete lines of each fill, and stops without searching
 * the fill in which the NUL appears.
 */
static size_t rg_searched(const char *d, size_t len)
{
	const char *nul = memchr(d, '\0', len);
	size_t z, cap = RG_BUFFER, start = 0, have = 0, searched = 0;

	if (!nul)
		return len;
	z = (size_t)(nul - d);
	for (;;) {
		size_t lastterm;

		for (;;) {
			size_t from = start + have, n;
			const char *lt;

			if (have == cap)
				cap *= 2;
			n = cap - have;
			if (n > len - from)
				n = len - from;
			if (!n || (z >= from && z < from + n))
				return searched;
			have += n;
			lt = memrchr(d + from, '\n', n);
			if (lt) {
				lastterm = (size_t)(lt - d) + 1;
				break;
			}
		}
		searched = lastterm;
		have = start + have - lastterm;
		start = lastterm;
	}
}

/* ---- hits ---- */

static int cmp_hit_local(const void *a, const void *b, void *arg)
{
	const struct hit *x = a, *y = b;
	const char *arena = arg;
	int c = strcmp(arena + x->path, arena + y->path);

	if (c)
		return c;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Keep the first max_results hits of this worker (in output order): the rest cannot show. */
static void prune(struct worker *w)
{
	struct buf arena = BUF_INIT;
	size_t i, keep = w->s->max_results;
	const char *last = NULL;
	size_t last_off = 0;

	qsort_r(w->hits, w->nr, sizeof(*w->hits), cmp_hit_local, w->arena.buf);
	if (w->nr > keep)
		w->nr = keep;
	for (i = 0; i < w->nr; i++) {
		struct hit *h = &w->hits[i];
		const char *p = w->arena.buf + h->path;

		if (!last || strcmp(last, p)) {
			last = p;
			last_off = arena.len;
			buf_add(&arena, p, strlen(p) + 1);
		}
		h->path = last_off;
		buf_add(&arena, w->arena.buf + h->text, h->len);
		h->text = arena.len - h->len;
	}
	buf_release(&w->arena);
	w->arena = arena;
}

static void add_hit(struct worker *w, size_t path_off, size_t line, const char *text, size_t len)
{
	struct hit *h;
	size_t keep = len;

	if (w->s->max_line != SIZE_MAX && len > w->s->max_line)
		keep = utf8_cut(text, len, w->s->max_line);
	ALLOC_GROW(w->hits, w->nr + 1, w->alloc);
	h = &w->hits[w->nr++];
	h->path = path_off;
	h->line = line;
	h->text = w->arena.len;
	h->len = keep;
	h->cut = len - keep;
	buf_add(&w->arena, text, keep);
	w->stats.hits++;
}

/* ---- matching one file ---- */

static int match_at(struct worker *w, const char *d, size_t len, size_t from)
{
	if (w->s->jit)
		return pcre2_jit_match(w->s->code, (PCRE2_SPTR)d, len, from, 0, w->md, w->mc);
	return pcre2_match(w->s->code, (PCRE2_SPTR)d, len, from, 0, w->md, w->mc);
}

/* A match error (the match limit, a JIT stack too small) ends the whole search. */
static int match_failed(struct worker *w, const char *rel, int rc)
{
	PCRE2_UCHAR msg[256];

	pcre2_get_error_message(rc, msg, sizeof(msg));
	if (!w->err_msg)
		w->err_msg = xstrfmt("matching in '%s' failed: %s; simplify the pattern", rel,
				     (char *)msg);
	w->err = FX_ELIMIT;
	return FX_ELIMIT;
}

static int search_buffer(struct worker *w, const char *rel, const char *d, size_t len)
{
	size_t pos = 0, line = 1, counted = 0, path_off = SIZE_MAX;

	while (pos < len) {
		PCRE2_SIZE *ov;
		size_t ls, le;
		const char *p;
		int rc = match_at(w, d, len, pos);

		if (rc == PCRE2_ERROR_NOMATCH)
			break;
		if (rc < 0)
			return match_failed(w, rel, rc);
		ov = pcre2_get_ovector_pointer(w->md);
		p = ov[0] > pos ? memrchr(d + pos, '\n', ov[0] - pos) : NULL;
		ls = p ? (size_t)(p - d) + 1 : pos;
		p = memchr(d + ov[0], '\n', len - ov[0]);
		le = p ? (size_t)(p - d) : len;
		if (ls >= len)
			break;	/* an empty match after the last newline is no line */
		if (ov[1] > le || ov[0] == le) {
			/* The match ran past the end of its line: try the line on its own. */
			rc = match_at(w, d, le, ls);
			if (rc == PCRE2_ERROR_NOMATCH) {
				pos = le + 1;
				continue;
			}
			if (rc < 0)
				return match_failed(w, rel, rc);
			ov = pcre2_get_ovector_pointer(w->md);
			if (ov[0] > le || ov[1] > le) {
				pos = le + 1;
				continue;
			}
		}
		for (p = d + counted; p < d + ls && (p = memchr(p, '\n', (size_t)(d + ls - p))); p++)
			line++;
		counted = ls;
		if (path_off == SIZE_MAX) {
			path_off = w->arena.len;
			buf_add(&w->arena, rel, strlen(rel) + 1);
			w->stats.files_matched++;
		}
		add_hit(w, path_off, line, d + ls, le - ls);
		pos = le + 1;
	}
	if (w->nr > 2 * w->s->max_results + 1024 && w->s->max_results < SIZE_MAX / 4)
		prune(w);
	return 0;
}

#define READ_CHUNK ((size_t)1 << 20)

/*
 * Read `fd` (a regular file of about `size` bytes) into `b`, replacing its
 * contents, READ_CHUNK at a time, up to the end or the first read that
 * brings a NUL byte: rg_searched() gives the same answer on what is read
 * as on the whole (nothing past the fill holding the first NUL is
 * searched), so a sparse file (a command makes one for nothing) costs one
 * chunk, not its size.
 */
static int read_whole(struct buf *b, int fd, size_t size)
{
	buf_reset(b);
	for (;;) {
		size_t want = size > b->len ? size - b->len : 0;
		ssize_t n;

		buf_grow(b, (want < READ_CHUNK ? want : READ_CHUNK) + 1);
		want = b->alloc - b->len - 1;
		if (want > READ_CHUNK)
			want = READ_CHUNK;
		n = read(fd, b->buf + b->len, want);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return FX_EOS;
		}
		buf_setlen(b, b->len + (size_t)n);
		/* A short read of a regular file is its end. */
		if (!n || (size_t)n < want || memchr(b->buf + b->len - n, '\0', (size_t)n))
			return 0;
		if (b->len > FILE_MAX)
			return FX_ELIMIT;
	}
}

static void search_file(struct worker *w, int dirfd, const char *name, const char *rel)
{
	struct stat st;
	size_t n, skip = 0;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0) {
		w->stats.unreadable++;
		return;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return;
	}
	if ((size_t)st.st_size > FILE_MAX) {
		close(fd);
		w->stats.too_large++;
		return;
	}
	if (read_whole(&w->file, fd, (size_t)st.st_size) < 0) {
		close(fd);
		w->stats.unreadable++;
		return;
	}
	close(fd);
	w->stats.files++;
	/* A UTF-8 byte order mark is not text: ripgrep drops it too. */
	if (w->file.len >= 3 && !memcmp(w->file.buf, "\xef\xbb\xbf", 3))
		skip = 3;
	n = rg_searched(w->file.buf + skip, w->file.len - skip);
	if (n < w->file.len - skip)
		w->stats.binary++;
	if (n)
		search_buffer(w, rel, w->file.buf + skip, n);
}

/* ---- walking ---- */

static int glob_wants(const struct search *s, const char *rel, size_t len, int is_dir)
{
	size_t i;
	int any = 0;

	if (!s->nglobs)
		return 1;
	for (i = 0; i < s->nglobs; i++)
		any |= ignore_rules_match(s->globs[i], rel, len, is_dir) != IGNORE_NONE;
	if (s->glob_negated)
		return !any;
	return is_dir || any;	/* folders are entered whatever a positive glob says */
}

static const struct ignore_chain *chain_push(struct search *s, const struct ignore_chain *next,
					     struct ignore_rules *rules)
{
	struct ignore_chain *node;

	if (!rules)
		return next;
	node = xmalloc(sizeof(*node));
	node->rules = rules;
	node->next = next;
	ALLOC_GROW(s->nodes, s->nnodes + 1, s->anodes);
	s->nodes[s->nnodes++] = node;
	return node;
}

/*
 * An entry of the walk (ws/walk.h; from any of its threads): a folder the
 * glob does not exclude is entered, a file searched by the thread's worker.
 * A match error ends the walk.
 */
static int search_visit(void *arg, const struct ws_entry *e)
{
	struct search *s = arg;
	struct worker *w = &s->workers[e->worker];
	int is_dir = e->type == DT_DIR;

	if (!glob_wants(s, e->path, e->len, is_dir))
		return WS_WALK_CONTINUE;
	if (is_dir)
		return WS_WALK_ENTER;
	search_file(w, e->dirfd, e->name, e->path);
	return w->err ? w->err : WS_WALK_CONTINUE;
}

static void worker_init(struct worker *w, struct search *s)
{
	memset(w, 0, sizeof(*w));
	w->s = s;
	w->md = pcre2_match_data_create_from_pattern(s->code, NULL);
	w->mc = pcre2_match_context_create(NULL);
	if (!w->md || !w->mc)
		die("out of memory");
	if (s->jit) {
		w->jit_stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, NULL);
		if (!w->jit_stack)
			die("out of memory");
		pcre2_jit_stack_assign(w->mc, NULL, w->jit_stack);
	}
	buf_init(&w->file, 0);
	buf_init(&w->arena, 0);
}

static void worker_release(struct worker *w)
{
	pcre2_match_data_free(w->md);
	pcre2_match_context_free(w->mc);
	if (w->jit_stack)
		pcre2_jit_stack_free(w->jit_stack);
	buf_release(&w->file);
	buf_release(&w->arena);
	free(w->hits);
	free(w->err_msg);
}

/* ---- set-up ---- */

static int compile(struct search *s, const char *pattern)
{
	uint32_t opts = PCRE2_UTF | PCRE2_UCP | PCRE2_MULTILINE;
	pcre2_compile_context *cc = pcre2_compile_context_create(NULL);
	PCRE2_SIZE where;
	uint32_t have_jit = 0;
	int code;

	if (!cc)
		die("out of memory");
	pcre2_set_newline(cc, PCRE2_NEWLINE_LF);
#ifdef PCRE2_MATCH_INVALID_UTF
	opts |= PCRE2_MATCH_INVALID_UTF;
#endif
	s->code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, opts, &code, &where, cc);
	if (!s->code) {
		/* A pattern that is not valid UTF-8 itself: byte mode. */
		int code2;

		s->code = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED,
					PCRE2_MULTILINE, &code2, &where, cc);
		if (!s->code) {
			PCRE2_UCHAR msg[256];

			pcre2_get_error_message(code, msg, sizeof(msg));
			pcre2_compile_context_free(cc);
			return err_set(FX_EINVAL, "invalid regular expression at offset %zu: %s",
				       (size_t)where, (char *)msg);
		}
	}
	pcre2_compile_context_free(cc);
	pcre2_config(PCRE2_CONFIG_JIT, &have_jit);
	s->jit = have_jit && pcre2_jit_compile(s->code, PCRE2_JIT_COMPLETE) == 0;
	return 0;
}

/* Expand one level of "{a,b}" (possibly several groups) into `out`; NULL-free strvec. */
static int expand_braces(struct strvec *out, const char *glob)
{
	const char *open = strchr(glob, '{'), *close, *p, *start;
	struct buf b = BUF_INIT;
	int ret = 0;

	if (!open) {
		strvec_push(out, glob);
		return 0;
	}
	close = strchr(open, '}');
	if (!close)
		return err_set(FX_EINVAL, "glob '%s': '{' without '}'", glob);
	start = open + 1;
	for (p = start;; p++) {
		if (p == close || *p == ',') {
			buf_reset(&b);
			buf_add(&b, glob, (size_t)(open - glob));
			buf_add(&b, start, (size_t)(p - start));
			buf_addstr(&b, close + 1);
			ret = expand_braces(out, b.buf);
			if (ret < 0 || out->nr > MAX_GLOBS) {
				if (!ret)
					ret = err_set(FX_EINVAL, "glob '%s' expands to too many patterns", glob);
				break;
			}
			if (p == close)
				break;
			start = p + 1;
		}
	}
	buf_release(&b);
	return ret;
}

static int parse_glob(struct search *s, const char *glob)
{
	struct strvec alts = STRVEC_INIT;
	size_t i;
	int ret;

	if (*glob == '!') {
		s->glob_negated = 1;
		glob++;
	}
	if (!*glob)
		return err_set(FX_EINVAL, "the glob is empty");
	ret = expand_braces(&alts, glob);
	if (ret < 0) {
		strvec_clear(&alts);
		return ret;
	}
	s->globs = xcalloc(alts.nr, sizeof(*s->globs));
	for (i = 0; i < alts.nr; i++) {
		s->globs[i] = ignore_rules_parse("", alts.v[i], strlen(alts.v[i]));
		if (!ignore_rules_count(s->globs[i])) {
			ret = err_set(FX_EINVAL, "glob '%s' matches nothing", alts.v[i]);
			s->nglobs = i + 1;
			strvec_clear(&alts);
			return ret;
		}
	}
	s->nglobs = alts.nr;
	strvec_clear(&alts);
	return 0;
}

static unsigned default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		n = 1;
	return n > MAX_THREADS ? MAX_THREADS : (unsigned)n;
}

struct flat_hit {
	const char *path;
	size_t line;
	const char *text;
	size_t len, cut;
};

static int cmp_flat(const void *a, const void *b)
{
	const struct flat_hit *x = a, *y = b;
	/* Hits of one file share their path string: skip strcmp for them. */
	int c = x->path == y->path ? 0 : strcmp(x->path, y->path);

	if (c)
		return c;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* Append the decimal digits of `n`. */
static void add_number(struct buf *out, size_t n)
{
	char digits[24];
	size_t i = sizeof(digits);

	do
		digits[--i] = (char)('0' + n % 10);
	while ((n /= 10));
	buf_add(out, digits + i, sizeof(digits) - i);
}

/* The chain of rules from the workspace down to the folder `rel` (excluded). */
static int chain_to(struct search *s, const struct ignore_chain **out, const char *rel)
{
	const struct ignore_chain *chain = NULL;
	struct ignore_rules *rules = NULL;
	struct buf dir = BUF_INIT;
	const char *p = rel;
	int ret;

	ret = ignore_load_exclude(&rules, s->root);
	if (ret < 0)
		return ret;
	chain = chain_push(s, chain, rules);
	while (*p) {
		const char *e = strchrnul(p, '/');
		int fd = wspath_open_dir(s->root, dir.buf);

		if (fd >= 0) {
			rules = NULL;
			ignore_rules_load_at(&rules, fd, ".gitignore", dir.buf);
			close(fd);
			chain = chain_push(s, chain, rules);
		}
		if (dir.len)
			buf_addch(&dir, '/');
		buf_add(&dir, p, (size_t)(e - p));
		p = *e ? e + 1 : e;
	}
	buf_release(&dir);
	*out = chain;
	return 0;
}

int search_run(struct buf *out, const struct wspath_root *root, const struct search_opts *opts,
	       struct search_stats *stats)
{
	struct search s;
	struct wspath_loc loc = WSPATH_LOC_INIT;
	struct worker *workers = NULL;
	struct flat_hit *flat = NULL;
	size_t nflat = 0, i, j;
	unsigned nthreads = opts->threads ? opts->threads : default_threads(), t, ninit = 0;
	struct search_stats total;
	int ret;

	memset(&s, 0, sizeof(s));
	memset(&total, 0, sizeof(total));
	s.root = root;
	s.max_results = opts->max_results ? opts->max_results : 200;
	s.max_line = opts->max_line ? opts->max_line : 300;
	if (nthreads > MAX_THREADS)
		nthreads = MAX_THREADS;

	ret = compile(&s, opts->pattern);
	if (ret < 0)
		goto out;
	if (opts->glob) {
		ret = parse_glob(&s, opts->glob);
		if (ret < 0)
			goto out;
	}
	ret = wspath_locate(&loc, root, opts->path && *opts->path ? opts->path : ".", WSPATH_FOLLOW);
	if (ret < 0)
		goto out;

	workers = xcalloc(nthreads, sizeof(*workers));
	for (t = 0; t < nthreads; t++)
		worker_init(&workers[t], &s);
	ninit = nthreads;
	s.workers = workers;
	if (loc.type == S_IFREG) {
		/* One file named on purpose: searched even if ignored or not matching the glob. */
		search_file(&workers[0], loc.dirfd, loc.name, loc.rel);
		nthreads = 1;
	} else if (loc.type == S_IFDIR) {
		struct ws_walk walk = WS_WALK_INIT;
		const struct ignore_chain *chain;

		ret = chain_to(&s, &chain, loc.rel);
		if (ret < 0)
			goto out_workers;
		/* hidden files too, never .git in any letter case, no link followed */
		walk.flags = WS_WALK_IGNORES | WS_WALK_GIT_ANYCASE;
		walk.visit = search_visit;
		walk.arg = &s;
		walk.chain = chain;
		walk.threads = nthreads;
		ret = ws_walk_run(&walk, root->fd, loc.rel);
		total.unreadable += walk.unreadable;
		if (ret < 0 && ret != FX_ELIMIT) {
			err_clear();	/* the folder went away or cannot be read */
			total.unreadable++;
		}
		ret = 0;	/* a match error (FX_ELIMIT): the worker's message says it below */
	} else {
		ret = err_set(FX_EINVAL, "'%s' is neither a file nor a folder", opts->path);
		goto out_workers;
	}

	for (t = 0; t < nthreads; t++) {
		struct worker *w = &workers[t];

		if (w->err && !ret)
			ret = err_set(w->err, "%s", w->err_msg);
		total.files += w->stats.files;
		total.files_matched += w->stats.files_matched;
		total.hits += w->stats.hits;
		total.binary += w->stats.binary;
		total.unreadable += w->stats.unreadable;
		total.too_large += w->stats.too_large;
		nflat += w->nr;
	}
	if (ret < 0)
		goto out_workers;
	flat = xmalloc((nflat ? nflat : 1) * sizeof(*flat));
	for (t = 0, j = 0; t < nthreads; t++) {
		struct worker *w = &workers[t];

		for (i = 0; i < w->nr; i++, j++) {
			flat[j].path = w->arena.buf + w->hits[i].path;
			flat[j].line = w->hits[i].line;
			flat[j].text = w->arena.buf + w->hits[i].text;
			flat[j].len = w->hits[i].len;
			flat[j].cut = w->hits[i].cut;
		}
	}
	qsort(flat, nflat, sizeof(*flat), cmp_flat);
	for (i = 0; i < nflat && i < s.max_results; i++) {
		buf_addstr(out, flat[i].path);
		buf_addch(out, ':');
		add_number(out, flat[i].line);
		buf_addch(out, ':');
		buf_add(out, flat[i].text, flat[i].len);
		if (flat[i].cut)
			buf_addf(out, " [... %zu more bytes]", flat[i].cut);
		buf_addch(out, '\n');
		total.shown++;
	}
out_workers:
	for (t = 0; t < ninit; t++)
		worker_release(&workers[t]);
out:
	if (stats)
		*stats = total;
	free(flat);
	free(workers);
	for (i = 0; i < s.nnodes; i++) {
		ignore_rules_free((struct ignore_rules *)s.nodes[i]->rules);
		free(s.nodes[i]);
	}
	free(s.nodes);
	for (i = 0; i < s.nglobs; i++)
		ignore_rules_free(s.globs[i]);
	free(s.globs);
	if (s.code)
		pcre2_code_free(s.code);
	wspath_loc_release(&loc);
	return ret;
}

/* ---- the tool ---- */

static int tool_search(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	struct search_opts o;
	struct search_stats st;
	size_t start = result->len;
	int ret;

	memset(&o, 0, sizeof(o));
	o.pattern = tool_arg_str(args, "pattern");
	o.path = tool_arg_str(args, "path");
	o.glob = tool_arg_str(args, "glob");
	o.max_results = (size_t)tool_arg_int(args, "max_results",
					     (long long)ctx->limits.search_results);
	o.max_line = ctx->limits.search_line;
	ret = search_run(result, &ctx->root, &o, &st);
	if (ret < 0)
		return ret;
	if (result->len == start)
		buf_addf(result, "no matches in %zu file%s searched\n", st.files,
			 st.files == 1 ? "" : "s");
	else if (st.shown < st.hits)
		buf_addf(result, "[forgex: showing the first %zu of %zu matching lines (in %zu files); "
			 "narrow the pattern, path or glob, or raise max_results]\n",
			 st.shown, st.hits, st.files_matched);
	if (st.binary || st.unreadable || st.too_large) {
		buf_addstr(result, "[forgex: not searched:");
		if (st.binary)
			buf_addf(result, " %zu binary file%s (or the part after a NUL byte);",
				 st.binary, st.binary == 1 ? "" : "s");
		if (st.unreadable)
			buf_addf(result, " %zu unreadable;", st.unreadable);
		if (st.too_large)
			buf_addf(result, " %zu larger than 256 MiB;", st.too_large);
		buf_setlen(result, result->len - 1);
		buf_addstr(result, "]\n");
	}
	return 0;
}

int tools_register_search(struct tool_registry *reg)
{
	static const struct tool_def def = {
		"search",
		"Search file contents with a regular expression (PCRE2 syntax, case-sensitive; "
		"use (?i) for case-insensitive). Prints matching lines as path:line:text, sorted "
		"by path and line. Skips .git, binary files and files ignored by .gitignore. "
		"glob filters file paths like .gitignore patterns: '*.c' (any folder), "
		"'src/**/*.h', '*.{c,h}', '!*_test.go' (exclude).",
		"{\"type\":\"object\",\"properties\":{"
		"\"pattern\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Regular expression\"},"
		"\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":\"File or folder to search, relative to the workspace (default: all of it)\"},"
		"\"glob\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Only files whose path matches this pattern\"},"
		"\"max_results\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":5000,\"description\":\"Most lines to show (default 200)\"}"
		"},\"required\":[\"pattern\"],\"additionalProperties\":false}",
		PERM_READ, 0, tool_search, NULL,
	};

	return registry_add(reg, &def);
}
