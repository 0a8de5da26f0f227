/*
 * The symbol index: the walk, the refresh from the cache, the identifier
 * scan and the ctags runs (see index.h and docs/internals/context.md).
 *
 * One update, three kinds of threads:
 *   - this one walks the tree (ws/walk.h) with the rules of `search`:
 *     folders read, sorted, matched against the ignore rules; the paths
 *     of the regular files go, in batches, to
 *   - the indexer, which first loads the cache (meanwhile), then takes the
 *     paths in walk order, stats each through its folder's descriptor and
 *     matches it with the cache: path, size, mtime and inode equal, it is
 *     taken as it was. Otherwise it is opened (O_NOFOLLOW, O_NONBLOCK),
 *     read and hashed; the same hash as cached means only its key changed.
 *     A file to index is scanned for identifiers at once and queued for
 *   - the ctags threads (one, two for a large tree), which run ctags on
 *     batches of files ("./path" arguments, never a list file) while the
 *     walk goes on, and parse the output.
 * At the end the definitions are merged, the files are in path order, and
 * the cache is saved when anything changed (a delta when little did).
 *
 * The file is long (about 1,200 lines) because the three kinds of threads
 * (sections below: the ctags thread, the walk, the indexer) share one
 * state struct, its queues and its locking; cut apart, each piece would
 * have to restate that state's invariants.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "context/ctags.h"
#include "context/index.h"
#include "context/tokenize.h"
#include "sandbox/executor.h"
#include "ws/ignore.h"
#include "ws/walk.h"

#define BINARY_WINDOW (64u * 1024)	/* a NUL here makes the file binary, as for search */
#define BATCH_FILES 1500		/* files per ctags run */
#define BATCH_BYTES ((size_t)6 << 20)	/* source bytes per ctags run */
#define IDLE_BATCH 32			/* files handed to an idle ctags thread */
#define SECOND_WORKER_FILES 2000	/* files to index before a second ctags thread starts */
#define FIRST_BATCH_S 0.05		/* the first small batch goes no sooner */
#define BATCH_ARGS ((size_t)256 << 10)	/* bytes of arguments per ctags run */
#define CTAGS_OUTPUT_MAX ((size_t)256 << 20)
#define CTAGS_TIMEOUT_MS 0		/* [terminal] timeout_seconds, as for any command */

/* ---- strings and symbols ---- */

static uint32_t arena_add(struct ctx_index *idx, const char *s, size_t len)
{
	size_t off = idx->arena.len;

	if (off + len + 1 > UINT32_MAX)
		die("repository map: string table over 4 GiB");
	buf_add(&idx->arena, s, len);
	buf_addch(&idx->arena, '\0');
	return (uint32_t)off;
}

static int sym_equal(const struct ctx_index *idx, uint32_t id, const char *s, size_t len)
{
	const char *n = idx->arena.buf + idx->syms[id];

	return !memcmp(n, s, len) && !n[len];
}

/* The table holds id + 1 in the low 32 bits and the hash's top 32 bits above. */
static void symtab_insert(struct ctx_index *idx, uint32_t id, uint64_t h)
{
	size_t mask = idx->symtab_size - 1, i = (size_t)h & mask;

	while (idx->symtab[i])
		i = (i + 1) & mask;
	idx->symtab[i] = (uint64_t)(id + 1) | (h & 0xffffffff00000000ull);
}

static void symtab_build(struct ctx_index *idx, size_t want)
{
	size_t size = 1024, i;

	while (size < 2 * want)
		size *= 2;
	free(idx->symtab);
	idx->symtab = xcalloc(size, sizeof(*idx->symtab));
	idx->symtab_size = size;
	for (i = 0; i < idx->nsyms; i++) {
		const char *n = idx->arena.buf + idx->syms[i];

		symtab_insert(idx, (uint32_t)i, ctx_ident_hash(n, strlen(n)));
	}
}

/* The id of `s`, added when `add` (else -1 when absent). */
static long sym_lookup(struct ctx_index *idx, const char *s, size_t len, uint64_t h, int add)
{
	size_t mask, i;

	if (!idx->symtab || 2 * (idx->nsyms + 1) > idx->symtab_size) {
		if (!add && !idx->symtab && !idx->nsyms)
			return -1;
		symtab_build(idx, idx->nsyms + 1 > 4096 ? 2 * idx->nsyms : 4096);
	}
	mask = idx->symtab_size - 1;
	for (i = (size_t)h & mask; idx->symtab[i]; i = (i + 1) & mask) {
		uint64_t e = idx->symtab[i];

		if ((e >> 32) == (h >> 32) && sym_equal(idx, (uint32_t)e - 1, s, len))
			return (long)(uint32_t)e - 1;
	}
	if (!add)
		return -1;
	if (idx->nsyms >= UINT32_MAX - 1)
		die("repository map: too many symbols");
	ALLOC_GROW(idx->syms, idx->nsyms + 1, idx->asyms);
	idx->syms[idx->nsyms] = arena_add(idx, s, len);
	idx->symtab[i] = (uint64_t)(idx->nsyms + 1) | (h & 0xffffffff00000000ull);
	return (long)idx->nsyms++;
}

long ctx_index_find_sym(struct ctx_index *idx, const char *name, size_t len)
{
	return sym_lookup(idx, name, len, ctx_ident_hash(name, len), 0);
}

/* The kinds of the loaded definitions (interned, so distinct offsets), found once. */
static void kinds_prefill(struct ctx_index *idx)
{
	size_t i, k;

	for (i = 0; i < idx->ndefs && idx->nkinds < 64; i++) {
		uint32_t off = idx->defs[i].kind;

		for (k = 0; k < idx->nkinds && idx->kindtab[k] != off; k++)
			;
		if (k == idx->nkinds && off) {
			ALLOC_GROW(idx->kindtab, idx->nkinds + 1, idx->kindtab_size);
			idx->kindtab[idx->nkinds++] = off;
		}
	}
}

static uint32_t kind_intern(struct ctx_index *idx, const char *s, size_t len)
{
	size_t i;

	if (!idx->kindtab)
		kinds_prefill(idx);

	for (i = 0; i < idx->nkinds; i++) {
		const char *k = idx->arena.buf + idx->kindtab[i];

		if (!strncmp(k, s, len) && !k[len])
			return idx->kindtab[i];
	}
	if (idx->nkinds >= 256)
		return arena_add(idx, s, len);	/* a hostile ctags: stop interning */
	ALLOC_GROW(idx->kindtab, idx->nkinds + 1, idx->kindtab_size);
	idx->kindtab[idx->nkinds] = arena_add(idx, s, len);
	return idx->kindtab[idx->nkinds++];
}

long ctx_index_find_file(const struct ctx_index *idx, const char *path)
{
	size_t lo = 0, hi = idx->nfiles;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(idx->arena.buf + idx->files[mid].path, path);

		if (!c)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* ---- the ctags thread ---- */

struct tag_rec {
	uint32_t slot;			/* index in the new files array */
	uint32_t line;
	uint32_t flags;
	uint32_t name, kind, text;	/* offsets in the batch's strings */
	uint32_t name_len, kind_len;
};

struct batch {
	struct strvec paths;		/* relative paths */
	uint32_t *slots;
	size_t nslots, aslots, bytes, argbytes;
	struct buf strs;		/* strings of the tags */
	struct tag_rec *tags;
	size_t ntags, atags;
	int failed;
	struct batch *next;
};

struct runner;

/* One ctags thread and the executor it runs ctags with. */
struct worker {
	struct runner *ru;
	struct executor *ex;
	pthread_t thread;
};

struct runner {
	struct ctx_index *idx;
	struct worker workers[2];
	size_t nworkers, started;
	size_t submitted;		/* batches so far */
	size_t submitted_files;		/* and their files */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct batch *queue, **tail;	/* waiting for ctags */
	struct batch *done;		/* run (in any order) */
	size_t busy;			/* workers running a batch */
	int closing;
	int dead;			/* ctags cannot run: no more attempts */
	char *error;
	size_t runs;
};

static void batch_free(struct batch *b)
{
	strvec_clear(&b->paths);
	free(b->slots);
	buf_release(&b->strs);
	free(b->tags);
	free(b);
}

static uint32_t batch_str(struct batch *b, const char *s, size_t len)
{
	size_t off = b->strs.len;

	buf_add(&b->strs, s, len);
	buf_addch(&b->strs, '\0');
	return (uint32_t)off;
}

/* Path -> slot for one batch: a sorted copy searched by bisection. */
struct path_slot {
	const char *path;
	uint32_t slot;
};

static int cmp_path_slot(const void *a, const void *b)
{
	return strcmp(((const struct path_slot *)a)->path, ((const struct path_slot *)b)->path);
}

static void parse_output(struct batch *b, const struct buf *out)
{
	struct path_slot *ps = xmalloc((b->paths.nr ? b->paths.nr : 1) * sizeof(*ps));
	struct buf scratch = BUF_INIT, text = BUF_INIT;
	const char *p = out->buf, *end = out->buf + out->len;
	size_t i;

	for (i = 0; i < b->paths.nr; i++) {
		ps[i].path = b->paths.v[i];
		ps[i].slot = b->slots[i];
	}
	if (b->paths.nr)
		qsort(ps, b->paths.nr, sizeof(*ps), cmp_path_slot);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct ctx_tag t;
		struct path_slot key, *hit;
		struct tag_rec *r;

		if (ctx_ctags_parse_line(&t, &scratch, p, len) == 1) {
			key.path = t.path;
			if (t.path_len > 2 && t.path[0] == '.' && t.path[1] == '/')
				key.path = t.path + 2;
			hit = bsearch(&key, ps, b->paths.nr, sizeof(*ps), cmp_path_slot);
			if (hit && t.name_len <= CTX_IDENT_MAX * 2 && !memchr(t.name, '\n', t.name_len)) {
				ALLOC_GROW(b->tags, b->ntags + 1, b->atags);
				r = &b->tags[b->ntags++];
				r->slot = hit->slot;
				r->line = (uint32_t)t.line;
				r->flags = t.file_scope ? CTX_D_FILE_SCOPE : 0;
				r->name = batch_str(b, t.name, t.name_len);
				r->name_len = (uint32_t)t.name_len;
				r->kind_len = (uint32_t)(t.kind_len > 32 ? 32 : t.kind_len);
				r->kind = batch_str(b, t.kind, r->kind_len);
				buf_reset(&text);
				ctx_ctags_pattern_text(&text, t.pattern, t.pattern_len, CTX_TEXT_MAX);
				r->text = batch_str(b, text.buf, text.len);
			}
		}
		p += len + 1;
	}
	buf_release(&scratch);
	buf_release(&text);
	free(ps);
}

static void run_batch(struct runner *ru, struct executor *ex, struct batch *b)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct exec_request req;
	struct strvec argv = STRVEC_INIT;
	size_t i, saved;
	int ret;

	pthread_mutex_lock(&ru->lock);
	if (ru->dead || !ex) {
		pthread_mutex_unlock(&ru->lock);
		b->failed = 1;
		return;
	}
	pthread_mutex_unlock(&ru->lock);
	/*
	 * The files as "./path": ctags has no "--", and a name starting with
	 * "./" can never be taken for an option.
	 */
	strvec_pushv(&argv, ctx_ctags_argv());
	for (i = 0; i < b->paths.nr; i++)
		strvec_pushf(&argv, "./%s", b->paths.v[i]);
	memset(&req, 0, sizeof(req));
	req.argv = argv.v;
	req.argc = argv.nr;
	req.cwd = ".";
	req.timeout_ms = CTAGS_TIMEOUT_MS;
	saved = ex->max_output_bytes;
	ex->max_output_bytes = CTAGS_OUTPUT_MAX;
	ret = executor_run(&r, ex, &req);
	ex->max_output_bytes = saved;
	if (ret >= 0 && !r.timed_out && !r.truncated && r.exit_code != 127 && r.exit_code != 126 &&
	    (!r.exit_code || r.out.len)) {
		parse_output(b, &r.out);	/* outside the lock: the other thread runs on */
		pthread_mutex_lock(&ru->lock);
		ru->runs++;
		pthread_mutex_unlock(&ru->lock);
		exec_result_release(&r);
		strvec_clear(&argv);
		return;
	}
	pthread_mutex_lock(&ru->lock);
	ru->runs++;
	if (ret < 0) {
		ru->dead = 1;
		b->failed = 1;
		if (!ru->error)
			ru->error = xstrfmt("ctags could not run: %s", err_last());
		err_clear();
	} else if (r.exit_code == 127 || r.exit_code == 126) {
		ru->dead = 1;
		b->failed = 1;
		if (!ru->error)
			ru->error = xstrdup("ctags not found in the sandbox (apt-get install universal-ctags)");
	} else if (r.timed_out || r.truncated || (r.exit_code && !r.out.len)) {
		b->failed = 1;
		if (!ru->error)
			ru->error = xstrfmt("ctags failed (exit status %d%s)", r.exit_code,
					    r.timed_out ? ", timed out" : r.truncated ? ", output cut" : "");
	}
	pthread_mutex_unlock(&ru->lock);
	exec_result_release(&r);
	strvec_clear(&argv);
}

static void *runner_main(void *arg)
{
	struct worker *w = arg;
	struct runner *ru = w->ru;

	for (;;) {
		struct batch *b;

		pthread_mutex_lock(&ru->lock);
		while (!ru->queue && !ru->closing)
			pthread_cond_wait(&ru->cond, &ru->lock);
		b = ru->queue;
		if (!b) {
			pthread_mutex_unlock(&ru->lock);
			break;
		}
		ru->queue = b->next;
		if (!ru->queue)
			ru->tail = &ru->queue;
		ru->busy++;
		pthread_mutex_unlock(&ru->lock);

		run_batch(ru, w->ex, b);

		pthread_mutex_lock(&ru->lock);
		ru->busy--;
		b->next = ru->done;
		ru->done = b;
		pthread_mutex_unlock(&ru->lock);
	}
	return NULL;
}

static void runner_submit(struct runner *ru, struct batch *b)
{
	/*
	 * The first thread with the first batch; a second one (and its own
	 * ctags, with a second executor) only once the work is large: each
	 * executor's first command pays the sandbox's set-up, which a few
	 * hundred files do not repay.
	 */
	if (ru->started < ru->nworkers &&
	    (!ru->started || ru->submitted_files + b->paths.nr > SECOND_WORKER_FILES)) {
		struct worker *w = &ru->workers[ru->started];

		if (pthread_create(&w->thread, NULL, runner_main, w))
			die("cannot start a ctags thread");
		ru->started++;
	}
	ru->submitted++;
	ru->submitted_files += b->paths.nr;
	pthread_mutex_lock(&ru->lock);
	b->next = NULL;
	*ru->tail = b;
	ru->tail = &b->next;
	pthread_cond_signal(&ru->cond);
	pthread_mutex_unlock(&ru->lock);
}

/* ---- the walk ---- */

/* Files the walk found, with what fstatat() said, in walk order. */
struct wentry {
	uint32_t path, len;		/* in the batch's paths */
	int stated;			/* the walk stat'ed it (the indexer was still loading) */
	int regular;
	uint64_t size, ino;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
};

struct wbatch {
	struct wentry *e;
	size_t n, a;
	struct buf paths;
	struct wbatch *next;
};

#define WBATCH 512			/* files per hand-over from the walk to the indexer */

#define IN_OLD 1	/* ctx_file.pad during an update: ranges in the old arrays */

struct update {
	struct ctx_index *idx;
	struct ctx_file *old_files;
	size_t old_n;
	struct ctx_def *old_defs;
	struct ctx_ref *old_refs;
	size_t old_cursor;		/* the next old file not yet matched */

	struct ctx_file *files;		/* the new files, in walk order */
	size_t nfiles, afiles;
	uint32_t *in_base;		/* and which of them are the base's as they were */
	size_t ain_base;
	struct ctx_def *defs;
	size_t ndefs, adefs;
	struct ctx_ref *refs;
	size_t nrefs, arefs;

	struct buf content;
	struct buf path;
	/* the identifiers of one file: open addressing, reset per file */
	struct local { uint64_t hash; const char *s; uint32_t len, count; } *local;
	size_t local_size, local_n;
	uint32_t *used;			/* the slots taken in `local`, in order */
	size_t aused;

	struct runner ru;
	struct batch *cur;
	int changed;
	double t0;			/* when the update began */

	/* the walk (this thread) hands the files it found to the indexer (another) */
	pthread_mutex_t wlock;
	pthread_cond_t wcond;
	struct wbatch *wq, **wtail;	/* found, not yet indexed */
	struct wbatch *wcur;		/* being filled by the walk */
	int walk_done;
	int cache_ready;		/* the indexer has loaded the cache (atomic) */
	double walk_end;
	/* the indexer's folder: the last one a changed file was opened in */
	int dir_fd;
	struct buf dir;
};

/*
 * The walk yields paths in bytewise order (see walk()), as the old files
 * are sorted: a cursor finds each one's old record.
 */
static const struct ctx_file *old_find(struct update *u, const char *rel)
{
	while (u->old_cursor < u->old_n) {
		const struct ctx_file *f = &u->old_files[u->old_cursor];
		int c = strcmp(u->idx->arena.buf + f->path, rel);

		if (c > 0)
			return NULL;
		u->old_cursor++;
		if (!c)
			return f;
		u->changed = 1;	/* an old file that is gone */
	}
	return NULL;
}

static int local_add(void *data, const char *s, size_t len, uint64_t h)
{
	struct update *u = data;
	size_t mask, i;

	if (2 * (u->local_n + 1) > u->local_size) {
		size_t nsize = u->local_size ? 2 * u->local_size : 1024, k;
		struct local *nl = xcalloc(nsize, sizeof(*nl));

		/* move the entries in the order they were seen, noting their new slots */
		for (k = 0; k < u->local_n; k++) {
			const struct local *o = &u->local[u->used[k]];
			size_t j;

			for (j = (size_t)o->hash & (nsize - 1); nl[j].s; j = (j + 1) & (nsize - 1))
				;
			nl[j] = *o;
			u->used[k] = (uint32_t)j;
		}
		free(u->local);
		u->local = nl;
		u->local_size = nsize;
	}
	mask = u->local_size - 1;
	for (i = (size_t)h & mask; u->local[i].s; i = (i + 1) & mask) {
		if (u->local[i].hash == h && u->local[i].len == len && !memcmp(u->local[i].s, s, len)) {
			u->local[i].count++;
			return 0;
		}
	}
	u->local[i].hash = h;
	u->local[i].s = s;
	u->local[i].len = (uint32_t)len;
	u->local[i].count = 1;
	ALLOC_GROW(u->used, u->local_n + 1, u->aused);
	u->used[u->local_n++] = (uint32_t)i;
	return 0;
}

/*
 * Scan the identifiers of the content and append them to the new
 * references of `f`, in the order they first appear in the file.
 */
static void scan_refs(struct update *u, struct ctx_file *f)
{
	size_t i;

	u->local_n = 0;
	ctx_tokenize(u->content.buf, u->content.len, local_add, u);
	f->ref0 = (uint32_t)u->nrefs;
	f->nrefs = (uint32_t)u->local_n;
	ALLOC_GROW(u->refs, u->nrefs + u->local_n, u->arefs);
	/* in first-seen order, whatever the table's size; then only those slots are cleared */
	for (i = 0; i < u->local_n; i++) {
		struct local *l = &u->local[u->used[i]];

		u->refs[u->nrefs].sym = (uint32_t)sym_lookup(u->idx, l->s, l->len, l->hash, 1);
		u->refs[u->nrefs].count = l->count;
		u->nrefs++;
		memset(l, 0, sizeof(*l));
	}
	u->local_n = 0;
}

static int read_fd_whole(struct buf *b, int fd, size_t size)
{
	buf_reset(b);
	buf_grow(b, size + 1);
	for (;;) {
		ssize_t n = read(fd, b->buf + b->len, b->alloc - b->len - 1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return FX_EOS;
		}
		if (!n)
			return 0;
		buf_setlen(b, b->len + (size_t)n);
		if (b->len > CTX_FILE_MAX)
			return FX_ELIMIT;
		if (b->alloc - b->len - 1 == 0)
			buf_grow(b, 4096);
	}
}

/* Whether a ctags thread has nothing to do (or is not started yet). */
static int runner_idle(struct runner *ru)
{
	int idle;

	if (ru->started < ru->nworkers)
		return 1;
	pthread_mutex_lock(&ru->lock);
	idle = !ru->queue && ru->busy < ru->started;
	pthread_mutex_unlock(&ru->lock);
	return idle;
}

static void queue_ctags(struct update *u, const char *rel, uint32_t slot, size_t bytes)
{
	struct batch *b = u->cur;
	unsigned max = u->idx->batch_files ? u->idx->batch_files : BATCH_FILES;
	/*
	 * Small batches first, so that ctags starts early on a large tree;
	 * then larger ones. Not before FIRST_BATCH_S into the update, though:
	 * a tree read faster than that goes in one run (each run is a
	 * sandboxed process, some milliseconds of set-up).
	 */
	if (!u->idx->batch_files && u->ru.submitted < 3 && max > (200u << u->ru.submitted)) {
		if (u->ru.submitted || clk_mono_s() - u->t0 >= FIRST_BATCH_S)
			max = 200u << u->ru.submitted;	/* 200, 400, 800, then BATCH_FILES */
	}

	if (!b) {
		b = u->cur = xcalloc(1, sizeof(*b));
		strvec_init(&b->paths);
		buf_init(&b->strs, 0);
	}
	strvec_push(&b->paths, rel);
	ALLOC_GROW(b->slots, b->nslots + 1, b->aslots);
	b->slots[b->nslots++] = slot;
	b->bytes += bytes;
	b->argbytes += strlen(rel) + 3 + sizeof(char *);
	/* the argument list stays far below ARG_MAX (2 MiB with the usual 8 MiB stack) */
	/*
	 * A full batch goes; and in an update over a cache, so does a batch
	 * when the ctags thread is idle: the first changed file at once (ctags,
	 * and the sandbox's first set-up, which looks at the whole tree, then
	 * run while the walk goes on: one file changed among 100,000 costs
	 * the walk, not the walk plus ctags), later ones from IDLE_BATCH files
	 * on (not a process per file). A cold build batches as it always did.
	 */
	if (b->paths.nr >= max || b->bytes >= BATCH_BYTES || b->argbytes >= BATCH_ARGS ||
	    (u->old_n && !u->idx->batch_files &&
	     (!u->ru.submitted || b->paths.nr >= IDLE_BATCH) && runner_idle(&u->ru))) {
		runner_submit(&u->ru, b);
		u->cur = NULL;
	}
}

/* The folder of `rel` (its parent), opened like the walk opens folders; kept for the next file. */
static int parent_fd(struct update *u, const char *rel, size_t rel_len, const char **name)
{
	const char *slash = memrchr(rel, '/', rel_len);
	size_t dlen = slash ? (size_t)(slash - rel) : 0;

	*name = slash ? slash + 1 : rel;
	if (u->dir_fd >= 0 && u->dir.len == dlen && !memcmp(u->dir.buf, rel, dlen))
		return u->dir_fd;
	if (u->dir_fd >= 0)
		close(u->dir_fd);
	buf_reset(&u->dir);
	buf_add(&u->dir, rel, dlen);
	u->dir_fd = wspath_open_dir(&u->idx->root, u->dir.buf);
	if (u->dir_fd < 0) {
		err_clear();
		buf_reset(&u->dir);
	}
	return u->dir_fd;
}

static void add_file(struct update *u, const struct wentry *we, const char *rel, size_t rel_len)
{
	struct ctx_index *idx = u->idx;
	const struct ctx_file *of;
	struct ctx_file *nf;
	struct stat st;
	const char *name;
	int fd, dirfd = -1;
	struct wentry key = *we;

	if (!key.stated) {
		dirfd = parent_fd(u, rel, rel_len, &name);
		if (dirfd >= 0 && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode)) {
			key.regular = 1;
			key.size = (uint64_t)st.st_size;
			key.ino = (uint64_t)st.st_ino;
			key.mtime_sec = (int64_t)st.st_mtim.tv_sec;
			key.mtime_nsec = (uint32_t)st.st_mtim.tv_nsec;
		}
	}
	if (!key.regular) {
		idx->stats.skipped++;
		return;
	}
	of = old_find(u, rel);
	if (of && of->size == key.size && of->ino == key.ino && of->mtime_sec == key.mtime_sec &&
	    of->mtime_nsec == key.mtime_nsec && !(of->flags & CTX_F_NOTAGS)) {
		ALLOC_GROW(u->files, u->nfiles + 1, u->afiles);
		ALLOC_GROW(u->in_base, u->nfiles + 1, u->ain_base);
		u->in_base[u->nfiles] = idx->in_base ? idx->in_base[of - u->old_files] : 0;
		nf = &u->files[u->nfiles++];
		*nf = *of;
		nf->pad = IN_OLD;	/* its ranges are the old arrays' */
		idx->stats.cache_hits++;
		return;
	}
	u->changed = 1;
	if (dirfd < 0)
		dirfd = parent_fd(u, rel, rel_len, &name);
	fd = dirfd < 0 ? -1 : openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		idx->stats.skipped++;
		return;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		idx->stats.skipped++;
		return;
	}
	ALLOC_GROW(u->files, u->nfiles + 1, u->afiles);
	ALLOC_GROW(u->in_base, u->nfiles + 1, u->ain_base);
	u->in_base[u->nfiles] = 0;	/* its key (at least) differs from the base's */
	nf = &u->files[u->nfiles];
	memset(nf, 0, sizeof(*nf));
	nf->size = (uint64_t)st.st_size;
	nf->ino = (uint64_t)st.st_ino;
	nf->mtime_sec = (int64_t)st.st_mtim.tv_sec;
	nf->mtime_nsec = (uint32_t)st.st_mtim.tv_nsec;
	if ((size_t)st.st_size > CTX_FILE_MAX || read_fd_whole(&u->content, fd, (size_t)st.st_size) < 0) {
		close(fd);
		nf->flags = CTX_F_SKIP;
		nf->path = arena_add(idx, rel, rel_len);
		u->nfiles++;
		idx->stats.skipped++;
		return;
	}
	close(fd);
	nf->hash = ctx_hash(u->content.buf, u->content.len);
	if (memchr(u->content.buf, '\0', u->content.len < BINARY_WINDOW ? u->content.len
									  : BINARY_WINDOW)) {
		nf->flags = CTX_F_SKIP;
		nf->path = of ? of->path : arena_add(idx, rel, rel_len);
		u->nfiles++;
		idx->stats.skipped++;
		return;
	}
	if (of && of->hash == nf->hash && !(of->flags & (CTX_F_NOTAGS | CTX_F_SKIP)) &&
	    of->size == nf->size) {
		nf->path = of->path;
		nf->def0 = of->def0;
		nf->ndefs = of->ndefs;
		nf->ref0 = of->ref0;
		nf->nrefs = of->nrefs;
		nf->pad = IN_OLD;
		u->nfiles++;
		idx->stats.same_content++;
		return;
	}
	nf->path = of ? of->path : arena_add(idx, rel, rel_len);
	scan_refs(u, nf);
	u->nfiles++;
	idx->stats.indexed++;
	if (!idx->ex)
		nf->flags |= CTX_F_NOTAGS;	/* definitions when an executor is there */
	else
		queue_ctags(u, rel, (uint32_t)(u->nfiles - 1), u->content.len);
}

static void walk_push(struct update *u)
{
	struct wbatch *b = u->wcur;

	u->wcur = NULL;
	pthread_mutex_lock(&u->wlock);
	if (b) {
		b->next = NULL;
		*u->wtail = b;
		u->wtail = &b->next;
	}
	pthread_cond_signal(&u->wcond);
	pthread_mutex_unlock(&u->wlock);
}

/*
 * A file of the walk, handed to the indexer in batches: the indexer
 * stats it (through its folder), so that the walk (folders read, sorted,
 * matched with the ignore rules) and the stats (most of the system's
 * time) run on two cores.
 */
static void walk_found(struct update *u, int dirfd, const char *name, const char *rel,
		       size_t rel_len)
{
	struct wbatch *b = u->wcur;
	struct wentry *e;

	if (!b) {
		b = u->wcur = xcalloc(1, sizeof(*b));
		buf_init(&b->paths, 0);
	}
	ALLOC_GROW(b->e, b->n + 1, b->a);
	e = &b->e[b->n++];
	memset(e, 0, sizeof(*e));
	e->path = (uint32_t)b->paths.len;
	e->len = (uint32_t)rel_len;
	buf_add(&b->paths, rel, rel_len);
	buf_addch(&b->paths, '\0');
	/* while the indexer reads the cache, the walk stats the files itself */
	if (!__atomic_load_n(&u->cache_ready, __ATOMIC_ACQUIRE)) {
		struct stat st;

		e->stated = 1;
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode)) {
			e->regular = 1;
			e->size = (uint64_t)st.st_size;
			e->ino = (uint64_t)st.st_ino;
			e->mtime_sec = (int64_t)st.st_mtim.tv_sec;
			e->mtime_nsec = (uint32_t)st.st_mtim.tv_nsec;
		}
	}
	if (b->n >= WBATCH)
		walk_push(u);
}

/* The walk (ws/walk.h) in path order: files go to the indexer, every folder is entered. */
static int walk_visit(void *arg, const struct ws_entry *e)
{
	if (e->type == DT_DIR)
		return WS_WALK_ENTER;
	walk_found(arg, e->dirfd, e->name, e->path, e->len);
	return WS_WALK_CONTINUE;
}

/* ---- merging ---- */

static int cmp_tag(const void *a, const void *b)
{
	const struct tag_rec *x = a, *y = b;

	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

static void merge_batch(struct update *u, struct batch *b)
{
	struct ctx_index *idx = u->idx;
	size_t i, j;

	if (b->failed) {
		for (i = 0; i < b->nslots; i++)
			u->files[b->slots[i]].flags |= CTX_F_NOTAGS;
		return;
	}
	if (b->ntags)	/* qsort(NULL, 0, ...) is undefined */
		qsort(b->tags, b->ntags, sizeof(*b->tags), cmp_tag);
	for (i = 0; i < b->ntags; i = j) {
		struct ctx_file *f = &u->files[b->tags[i].slot];

		f->def0 = (uint32_t)u->ndefs;
		for (j = i; j < b->ntags && b->tags[j].slot == b->tags[i].slot; j++) {
			const struct tag_rec *t = &b->tags[j];
			const char *name = b->strs.buf + t->name;
			struct ctx_def *d;
			long sym = sym_lookup(idx, name, t->name_len, ctx_ident_hash(name, t->name_len), 1);

			if (j > i && t->line == b->tags[j - 1].line &&
			    u->defs[u->ndefs - 1].sym == (uint32_t)sym)
				continue;	/* the same name twice on a line */
			ALLOC_GROW(u->defs, u->ndefs + 1, u->adefs);
			d = &u->defs[u->ndefs++];
			d->sym = (uint32_t)sym;
			d->line = t->line;
			d->flags = t->flags;
			d->kind = kind_intern(idx, b->strs.buf + t->kind, t->kind_len);
			d->text = arena_add(idx, b->strs.buf + t->text, strlen(b->strs.buf + t->text));
		}
		f->ndefs = (uint32_t)(u->ndefs - f->def0);
	}
}

/* ---- the indexer thread ---- */

static void load_cache(struct ctx_index *idx)
{
	double tl = clk_mono_s();
	int ret;

	ctx_index_clear_data(idx);
	ret = ctx_cache_load(idx);
	if (ret == 0) {
		idx->stats.cache_loaded = 1;
	} else {
		if (ret != FX_ENOTFOUND)
			idx->stats.cache_rejected = 1;
		err_clear();
		ctx_index_clear_data(idx);
	}
	if (!idx->arena.len)
		buf_addch(&idx->arena, '\0');	/* offset 0 is "" */
	idx->loaded = 1;
	idx->stats.load_seconds = clk_mono_s() - tl;
}

static void *indexer_main(void *arg)
{
	struct update *u = arg;
	struct ctx_index *idx = u->idx;

	if (!idx->loaded)
		load_cache(idx);
	__atomic_store_n(&u->cache_ready, 1, __ATOMIC_RELEASE);
	u->old_files = idx->files;
	u->old_n = idx->nfiles;
	u->old_defs = idx->defs;
	u->old_refs = idx->refs;
	for (;;) {
		struct wbatch *b;
		size_t i;

		pthread_mutex_lock(&u->wlock);
		while (!u->wq && !u->walk_done)
			pthread_cond_wait(&u->wcond, &u->wlock);
		b = u->wq;
		if (b) {
			u->wq = b->next;
			if (!u->wq)
				u->wtail = &u->wq;
		}
		pthread_mutex_unlock(&u->wlock);
		if (!b)
			break;
		for (i = 0; i < b->n; i++)
			add_file(u, &b->e[i], b->paths.buf + b->e[i].path, b->e[i].len);
		free(b->e);
		buf_release(&b->paths);
		free(b);
	}
	if (u->dir_fd >= 0)
		close(u->dir_fd);
	u->dir_fd = -1;
	return NULL;
}

/* ---- the public side ---- */

int ctx_index_init(struct ctx_index *idx, const char *workspace, struct executor *ex)
{
	int ret;

	memset(idx, 0, sizeof(*idx));
	idx->root.fd = -1;
	buf_init(&idx->arena, 0);
	ret = wspath_root_open(&idx->root, workspace);
	if (ret < 0)
		return ret;
	idx->ex = ex;
	return 0;
}

void ctx_index_release(struct ctx_index *idx)
{
	ctx_index_clear_data(idx);
	free(idx->stats.ctags_error);
	wspath_root_release(&idx->root);
	memset(idx, 0, sizeof(*idx));
	idx->root.fd = -1;
}

int ctx_index_update(struct ctx_index *idx)
{
	struct update u;
	struct ws_walk walk = WS_WALK_INIT;
	struct ignore_rules *exclude = NULL;
	struct ignore_chain top = { NULL, NULL };
	pthread_t indexer;
	double t0 = clk_mono_s(), tw;
	size_t i;

	free(idx->stats.ctags_error);
	memset(&idx->stats, 0, sizeof(idx->stats));

	memset(&u, 0, sizeof(u));
	u.idx = idx;
	u.t0 = t0;
	buf_init(&u.content, 0);
	buf_init(&u.path, 0);
	buf_init(&u.dir, 0);
	u.dir_fd = -1;
	pthread_mutex_init(&u.ru.lock, NULL);
	pthread_cond_init(&u.ru.cond, NULL);
	u.ru.idx = idx;
	u.ru.tail = &u.ru.queue;
	u.ru.workers[0].ru = &u.ru;
	u.ru.workers[0].ex = idx->ex;
	u.ru.nworkers = 1;
	if (idx->ex && idx->ex2) {
		u.ru.workers[1].ru = &u.ru;
		u.ru.workers[1].ex = idx->ex2;
		u.ru.nworkers = 2;
	}
	pthread_mutex_init(&u.wlock, NULL);
	pthread_cond_init(&u.wcond, NULL);
	u.wtail = &u.wq;

	/*
	 * Two threads: this one walks the tree and stats each file (system
	 * calls, most of a warm update); the indexer loads the cache meanwhile,
	 * then takes the files in walk order, matches them with the cache and
	 * reads, scans and queues for ctags those that changed. So the load,
	 * the walk and a changed file's ctags overlap.
	 */
	if (pthread_create(&indexer, NULL, indexer_main, &u))
		die("cannot start the repository map's indexer");
	if (ignore_load_exclude(&exclude, &idx->root) < 0)
		err_clear();
	top.rules = exclude;
	/* the rules of `search`, .forgex/ left out, paths in bytewise order (the cache's) */
	walk.flags = WS_WALK_IGNORES | WS_WALK_SORTED | WS_WALK_SKIP_FORGEX;
	walk.visit = walk_visit;
	walk.arg = &u;
	walk.chain = exclude ? &top : NULL;
	tw = clk_mono_s();
	if (ws_walk_run(&walk, idx->root.fd, "") < 0)
		err_clear();	/* a workspace that cannot be read has no files */
	walk_push(&u);
	pthread_mutex_lock(&u.wlock);
	u.walk_done = 1;
	pthread_cond_signal(&u.wcond);
	pthread_mutex_unlock(&u.wlock);
	pthread_join(indexer, NULL);
	idx->stats.walk_seconds = clk_mono_s() - tw;
	tw = clk_mono_s();
	if (u.cur) {
		runner_submit(&u.ru, u.cur);
		u.cur = NULL;
	}
	if (u.ru.started) {
		pthread_mutex_lock(&u.ru.lock);
		u.ru.closing = 1;
		pthread_cond_broadcast(&u.ru.cond);
		pthread_mutex_unlock(&u.ru.lock);
		for (i = 0; i < u.ru.started; i++)
			pthread_join(u.ru.workers[i].thread, NULL);
	}
	/* merge in the order the batches were made (slots ascending), for one result */
	{
		struct batch **all = NULL, *b;
		size_t nb = 0, ab = 0, k;

		for (b = u.ru.done; b; b = b->next) {
			ALLOC_GROW(all, nb + 1, ab);
			all[nb++] = b;
		}
		for (k = 0; k < nb; k++) {
			size_t m;

			for (m = k + 1; m < nb; m++)
				if (all[m]->slots[0] < all[k]->slots[0]) {
					b = all[k];
					all[k] = all[m];
					all[m] = b;
				}
			merge_batch(&u, all[k]);
		}
		for (k = 0; k < nb; k++)
			batch_free(all[k]);
		free(all);
	}
	idx->stats.ctags_seconds = clk_mono_s() - tw;
	idx->stats.ctags_runs = u.ru.runs;
	idx->stats.ctags_error = u.ru.error;
	pthread_mutex_destroy(&u.ru.lock);
	pthread_cond_destroy(&u.ru.cond);

	if (u.nfiles != u.old_n || u.old_cursor != u.old_n)
		u.changed = 1;
	for (i = 1; i < u.nfiles; i++)
		if (strcmp(idx->arena.buf + u.files[i - 1].path, idx->arena.buf + u.files[i].path) >= 0)
			BUG("repository map: the walk left path order at %zu", i);
	if (!u.changed) {
		/* the old arrays hold everything already: keep them, drop the copies */
		for (i = 0; i < u.nfiles; i++)
			u.files[i].pad = 0;
		free(idx->files);
		idx->files = u.files;
		idx->afiles = u.afiles;
		free(idx->in_base);
		idx->in_base = u.in_base;
		free(u.defs);
		free(u.refs);
	} else {
		struct ctx_def *defs;
		struct ctx_ref *refs;
		size_t nd = 0, nr = 0;

		for (i = 0; i < u.nfiles; i++) {
			nd += u.files[i].ndefs;
			nr += u.files[i].nrefs;
		}
		/*
		 * A few files changed: their new records go after the old
		 * arrays, whose other ranges stay as they are (no copy of tens
		 * of MB for one file). The records nobody points at any more
		 * are dropped once they are a fifth of the arrays.
		 */
		if (5 * (idx->ndefs + u.ndefs) <= 6 * nd && 5 * (idx->nrefs + u.nrefs) <= 6 * nr &&
		    idx->ndefs + u.ndefs < UINT32_MAX && idx->nrefs + u.nrefs < UINT32_MAX) {
			ALLOC_GROW(idx->defs, idx->ndefs + u.ndefs, idx->adefs);
			if (u.ndefs)
				memcpy(idx->defs + idx->ndefs, u.defs, u.ndefs * sizeof(*u.defs));
			ALLOC_GROW(idx->refs, idx->nrefs + u.nrefs, idx->arefs);
			if (u.nrefs)
				memcpy(idx->refs + idx->nrefs, u.refs, u.nrefs * sizeof(*u.refs));
			for (i = 0; i < u.nfiles; i++) {
				struct ctx_file *f = &u.files[i];

				if (f->pad != IN_OLD) {
					f->def0 += (uint32_t)idx->ndefs;
					f->ref0 += (uint32_t)idx->nrefs;
				}
				f->pad = 0;
			}
			idx->ndefs += u.ndefs;
			idx->nrefs += u.nrefs;
			free(idx->files);
			free(u.defs);
			free(u.refs);
			idx->files = u.files;
			idx->nfiles = u.nfiles;
			idx->afiles = u.afiles;
			free(idx->in_base);
			idx->in_base = u.in_base;
			goto arrays_done;
		}
		defs = xmalloc((nd ? nd : 1) * sizeof(*defs));
		refs = xmalloc((nr ? nr : 1) * sizeof(*refs));
		nd = nr = 0;
		for (i = 0; i < u.nfiles; i++) {
			struct ctx_file *f = &u.files[i];
			int old = f->pad == IN_OLD;

			if (f->ndefs)
				memcpy(defs + nd, (old ? u.old_defs : u.defs) + f->def0,
				       f->ndefs * sizeof(*defs));
			if (f->nrefs)
				memcpy(refs + nr, (old ? u.old_refs : u.refs) + f->ref0,
				       f->nrefs * sizeof(*refs));
			f->def0 = (uint32_t)nd;
			f->ref0 = (uint32_t)nr;
			nd += f->ndefs;
			nr += f->nrefs;
			f->pad = 0;
		}
		free(idx->files);
		free(idx->defs);
		free(idx->refs);
		free(u.defs);
		free(u.refs);
		idx->files = u.files;
		idx->nfiles = u.nfiles;
		idx->afiles = u.afiles;
		free(idx->in_base);
		idx->in_base = u.in_base;
		idx->defs = defs;
		idx->ndefs = idx->adefs = nd;
		idx->refs = refs;
		idx->nrefs = idx->arefs = nr;
	}
arrays_done:
	if (u.changed && !idx->no_save) {
		tw = clk_mono_s();
		if (ctx_cache_save(idx) == 0)
			idx->stats.saved = 1;
		else
			err_clear();
		idx->stats.save_seconds = clk_mono_s() - tw;
	}
	idx->stats.files = idx->nfiles;
	/* what the files hold: records a change left behind in the arrays do not count */
	idx->stats.defs = idx->stats.refs = 0;
	for (i = 0; i < idx->nfiles; i++) {
		idx->stats.defs += idx->files[i].ndefs;
		idx->stats.refs += idx->files[i].nrefs;
	}
	idx->stats.symbols = idx->nsyms;
	idx->stats.seconds = clk_mono_s() - t0;

	ignore_rules_free(exclude);
	free(u.local);
	free(u.used);
	buf_release(&u.content);
	buf_release(&u.path);
	buf_release(&u.dir);
	pthread_mutex_destroy(&u.wlock);
	pthread_cond_destroy(&u.wcond);
	return 0;
}
