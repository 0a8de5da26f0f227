/* The one tree walker; see walk.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/beneath.h"
#include "base/buf.h"
#include "base/err.h"
#include "ws/walk.h"

#define DENTS_BUF (32u * 1024)

/* The entries of one folder, read whole before any is visited. */
struct ent {
	uint32_t name;		/* offset in the names */
	unsigned char type;	/* DT_*; DT_UNKNOWN resolved */
};

struct ents {
	struct ent *v;
	size_t nr, alloc;
	struct buf names;
};

/* A folder a thread of a threaded walk will read. */
struct job {
	char *path;
	const struct ignore_chain *chain;
	unsigned depth;
	int ignored;
};

struct run;

struct worker {
	struct run *r;
	unsigned id;
	pthread_t thread;
	struct buf path;	/* the path of the entry being visited */
	char *dents;		/* getdents64 buffer */
	size_t unreadable;
};

struct run {
	struct ws_walk *w;
	int topfd;
	int threaded;
	/* the threaded walk: a stack of folders to read */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *jobs;
	size_t njobs, ajobs;
	size_t active;
	int stop;
	int err;			/* the first error, ends the walk */
	/* chain nodes of a threaded walk outlive their folder: freed at the end */
	struct ignore_chain **nodes;
	size_t nnodes, anodes;
};

/* ---- reading a folder ---- */

/* Names compared as their paths compare: a folder as "name/". */
static int cmp_ent(const void *a, const void *b, void *arg)
{
	const struct ent *x = a, *y = b;
	const char *names = arg;
	const unsigned char *p = (const unsigned char *)names + x->name;
	const unsigned char *q = (const unsigned char *)names + y->name;

	for (;; p++, q++) {
		unsigned c = *p ? *p : x->type == DT_DIR ? '/' : 0;
		unsigned d = *q ? *q : y->type == DT_DIR ? '/' : 0;

		if (c != d)
			return c < d ? -1 : 1;
		if (!*p || !*q)
			return 0;
	}
}

static int left_out(const struct ws_walk *w, const char *name, unsigned depth)
{
	if (name[0] == '.' && (!name[1] || (name[1] == '.' && !name[2])))
		return 1;
	if ((w->flags & WS_WALK_GIT_ANYCASE) ? !strcasecmp(name, ".git") : !strcmp(name, ".git"))
		return 1;
	return !depth && (w->flags & WS_WALK_SKIP_FORGEX) && !strcmp(name, ".forgex");
}

/*
 * Read the entries of the folder `fd` (from its start) into `out`: the
 * names the walk reports, with their type. getdents64 on the descriptor
 * itself, so no second descriptor is needed for a folder.
 */
static int read_folder(struct worker *wk, struct ents *out, int fd, unsigned depth)
{
	const struct ws_walk *w = wk->r->w;

	/* a descriptor fresh from open: its position is the folder's start */
	for (;;) {
		ssize_t n = getdents64(fd, wk->dents, DENTS_BUF);
		ssize_t pos;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (!n)
			return 0;
		for (pos = 0; pos < n;) {
			const struct dirent64 *de = (const struct dirent64 *)(void *)(wk->dents + pos);
			unsigned char type = de->d_type;
			struct ent *e;

			pos += de->d_reclen;
			if (left_out(w, de->d_name, depth))
				continue;
			if (type == DT_UNKNOWN) {
				struct stat st;

				if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
					continue;	/* gone; a STAT walk looks again anyway */
				type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG :
				       S_ISLNK(st.st_mode) ? DT_LNK : DT_FIFO;
			}
			if (type != DT_DIR && type != DT_REG && (type != DT_LNK || !(w->flags & WS_WALK_LINKS)))
				continue;	/* devices, pipes, sockets (and links unless asked): never reported */
			ALLOC_GROW(out->v, out->nr + 1, out->alloc);
			e = &out->v[out->nr++];
			e->name = (uint32_t)out->names.len;
			e->type = type;
			buf_add(&out->names, de->d_name, strlen(de->d_name) + 1);
		}
	}
}

static unsigned char type_of(mode_t mode)
{
	return S_ISDIR(mode) ? DT_DIR : S_ISREG(mode) ? DT_REG : S_ISLNK(mode) ? DT_LNK : DT_UNKNOWN;
}

/* A folder or an entry that cannot be read: the end of a STRICT walk, else counted. */
static int unreadable(struct worker *wk, const char *what, const char *path)
{
	if (wk->r->w->flags & WS_WALK_STRICT)
		return err_set_errno(FX_EOS, "cannot %s '%s'", what, *path ? path : ".");
	wk->unreadable++;
	return 0;
}

static const struct ignore_chain *chain_node(struct run *r, struct ignore_chain *local,
					     const struct ignore_chain *next,
					     struct ignore_rules *rules)
{
	struct ignore_chain *node = local;

	if (!rules)
		return next;
	if (r->threaded) {
		node = xmalloc(sizeof(*node));
		pthread_mutex_lock(&r->lock);
		ALLOC_GROW(r->nodes, r->nnodes + 1, r->anodes);
		r->nodes[r->nnodes++] = node;
		pthread_mutex_unlock(&r->lock);
	}
	node->rules = rules;
	node->next = next;
	return node;
}

static int stopped(struct run *r)
{
	return r->threaded && __atomic_load_n(&r->stop, __ATOMIC_RELAXED);
}

static void push_jobs(struct run *r, struct job *jobs, size_t n);

/*
 * Read the folder `*dfd` (at wk->path, `depth` folders below the first)
 * and visit its entries. In this thread's walk a folder entered is read at
 * once; in a threaded walk it becomes a job. `*dfd` stays the caller's; a
 * deep walk may replace it (closed while a child is read, opened again).
 */
static int walk_folder(struct worker *wk, int *dfd, unsigned depth,
		       const struct ignore_chain *parent, int ignored)
{
	struct run *r = wk->r;
	struct ws_walk *w = r->w;
	struct ents ents = { NULL, 0, 0, BUF_INIT };
	struct ignore_chain local = { NULL, NULL };
	struct ignore_rules *rules = NULL;
	const struct ignore_chain *chain = parent;
	struct job *sub = NULL;
	size_t nsub = 0, asub = 0, orig = wk->path.len, base, i;
	int ret = 0;

	if ((w->flags & WS_WALK_IGNORES) && !ignored) {
		if (ignore_rules_load_at(&rules, *dfd, ".gitignore", wk->path.buf) < 0) {
			err_clear();
			rules = NULL;
		}
		chain = chain_node(r, &local, parent, rules);
	}
	if (read_folder(wk, &ents, *dfd, depth) < 0) {
		ret = unreadable(wk, "read folder", wk->path.buf);
		goto out;
	}
	if ((w->flags & WS_WALK_SORTED) && ents.nr > 1)
		qsort_r(ents.v, ents.nr, sizeof(*ents.v), cmp_ent, ents.names.buf);
	if (orig)
		buf_addch(&wk->path, '/');
	base = wk->path.len;
	for (i = 0; i < ents.nr && ret >= 0 && !stopped(r); i++) {
		const char *name = ents.names.buf + ents.v[i].name;
		struct ws_entry e;
		struct stat st;
		int is_dir, child, deep, v;
		struct stat pst, again;

		buf_setlen(&wk->path, base);
		buf_addstr(&wk->path, name);
		e.type = ents.v[i].type;
		e.st = NULL;
		if (w->flags & WS_WALK_STAT) {
			if (fstatat(*dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
				if (errno != ENOENT)
					ret = unreadable(wk, "inspect", wk->path.buf);
				continue;
			}
			e.type = type_of(st.st_mode);
			e.st = &st;
			if (e.type == DT_UNKNOWN || (e.type == DT_LNK && !(w->flags & WS_WALK_LINKS)))
				continue;
		}
		is_dir = e.type == DT_DIR;
		e.ignored = ignored || ((w->flags & WS_WALK_IGNORES) &&
			    ignore_chain_excluded(chain, wk->path.buf, wk->path.len, is_dir));
		if (e.ignored && !(w->flags & WS_WALK_REPORT_IGNORED))
			continue;
		e.dirfd = *dfd;
		e.name = name;
		e.path = wk->path.buf;
		e.len = wk->path.len;
		e.depth = depth;
		e.worker = wk->id;
		v = w->visit(w->arg, &e);
		if (v < 0) {
			ret = v;
			break;
		}
		if (!is_dir || v != WS_WALK_ENTER)
			continue;
		if (r->threaded) {
			ALLOC_GROW(sub, nsub + 1, asub);
			sub[nsub].path = xstrndup(wk->path.buf, wk->path.len);
			sub[nsub].chain = chain;
			sub[nsub].depth = depth + 1;
			sub[nsub].ignored = e.ignored;
			nsub++;
			continue;
		}
		child = openat(*dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (child < 0) {
			/* gone, or no longer a folder: nothing to read there */
			if (errno != ENOENT && errno != ENOTDIR && errno != ELOOP)
				ret = unreadable(wk, "read folder", wk->path.buf);
			continue;
		}
		if (w->flags & WS_WALK_NO_NESTED) {
			struct stat gst;

			if (!fstatat(child, ".git", &gst, AT_SYMLINK_NOFOLLOW)) {
				close(child);
				continue;	/* a nested repository: left alone */
			}
		}
		deep = depth >= WS_WALK_FD_DEPTH;
		if (deep) {
			if (fstat(*dfd, &pst) < 0) {
				close(child);
				ret = unreadable(wk, "read folder", wk->path.buf);
				continue;
			}
			close(*dfd);
			*dfd = -1;
		}
		ret = walk_folder(wk, &child, depth + 1, chain, e.ignored);
		buf_setlen(&wk->path, base);
		buf_addstr(&wk->path, name);
		if (deep && ret >= 0) {
			*dfd = child < 0 ? -1 : openat(child, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (*dfd < 0 || fstat(*dfd, &again) < 0 || again.st_dev != pst.st_dev ||
			    again.st_ino != pst.st_ino)
				ret = err_set(FX_ERROR, "the folder holding '%s' moved while it was read",
					      wk->path.buf);
		}
		if (child >= 0)
			close(child);
		if (ret >= 0 && w->leave) {
			e.dirfd = *dfd;
			e.path = wk->path.buf;
			ret = w->leave(w->arg, &e);
		}
	}
	if (nsub)
		push_jobs(r, sub, nsub);
out:
	for (i = 0; i < nsub; i++)
		free(sub[i].path);
	free(sub);
	buf_setlen(&wk->path, orig);
	if (!r->threaded)
		ignore_rules_free(rules);
	free(ents.v);
	buf_release(&ents.names);
	return ret;
}

/* ---- the threaded walk ---- */

/* Last pushed is taken first: push in reverse so that folders are read in name order. */
static void push_jobs(struct run *r, struct job *jobs, size_t n)
{
	size_t i;

	pthread_mutex_lock(&r->lock);
	for (i = n; i > 0; i--) {
		ALLOC_GROW(r->jobs, r->njobs + 1, r->ajobs);
		r->jobs[r->njobs++] = jobs[i - 1];
		jobs[i - 1].path = NULL;
	}
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

static void *worker_main(void *arg)
{
	struct worker *wk = arg;
	struct run *r = wk->r;

	for (;;) {
		struct job job;
		int fd, ret;

		pthread_mutex_lock(&r->lock);
		while (!r->njobs && r->active && !r->stop)
			pthread_cond_wait(&r->cond, &r->lock);
		if (!r->njobs || r->stop) {
			pthread_cond_broadcast(&r->cond);
			pthread_mutex_unlock(&r->lock);
			break;
		}
		job = r->jobs[--r->njobs];
		r->active++;
		pthread_mutex_unlock(&r->lock);

		buf_reset(&wk->path);
		buf_addstr(&wk->path, job.path);
		fd = beneath_open(r->topfd, job.path, O_RDONLY | O_DIRECTORY, 0);
		if (fd < 0)
			ret = unreadable(wk, "read folder", job.path);
		else
			ret = walk_folder(wk, &fd, job.depth, job.chain, job.ignored);
		if (fd >= 0)
			close(fd);
		free(job.path);

		pthread_mutex_lock(&r->lock);
		r->active--;
		if (ret < 0 && !r->err) {
			r->err = ret;
			r->stop = 1;
		}
		if (!r->njobs && !r->active)
			pthread_cond_broadcast(&r->cond);
		pthread_mutex_unlock(&r->lock);
	}
	return NULL;
}

int ws_walk_run(struct ws_walk *w, int topfd, const char *rel)
{
	struct run r;
	struct worker *wks;
	unsigned n = w->threads > 1 ? w->threads : 1, t;
	size_t i;
	int fd, ret = 0;

	if (w->leave && n > 1)
		BUG("ws_walk: leave is not available in a threaded walk");
	fd = beneath_open(topfd, rel, O_RDONLY | O_DIRECTORY, 0);
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR)
			return err_set(FX_ENOTFOUND, "'%s' is not a folder", *rel ? rel : ".");
		if (errno == ELOOP || errno == EXDEV)
			return err_set(FX_EDENIED, "'%s' is (or passes through) a symbolic link; "
				       "it is not followed", rel);
		return err_set_errno(FX_EOS, "cannot read folder '%s'", *rel ? rel : ".");
	}
	memset(&r, 0, sizeof(r));
	r.w = w;
	r.topfd = topfd;
	r.threaded = n > 1;
	pthread_mutex_init(&r.lock, NULL);
	pthread_cond_init(&r.cond, NULL);
	wks = xcalloc(n, sizeof(*wks));
	for (t = 0; t < n; t++) {
		wks[t].r = &r;
		wks[t].id = t;
		buf_init(&wks[t].path, 0);
		wks[t].dents = xmalloc(DENTS_BUF);
	}
	w->unreadable = 0;
	buf_addstr(&wks[0].path, rel);
	ret = walk_folder(&wks[0], &fd, 0, w->chain, 0);
	if (fd >= 0)
		close(fd);
	if (r.threaded && ret >= 0) {
		for (t = 0; t < n; t++)
			if (pthread_create(&wks[t].thread, NULL, worker_main, &wks[t]))
				die("cannot start a thread to walk the tree");
		for (t = 0; t < n; t++)
			pthread_join(wks[t].thread, NULL);
		ret = r.err;
	}
	for (t = 0; t < n; t++) {
		w->unreadable += wks[t].unreadable;
		buf_release(&wks[t].path);
		free(wks[t].dents);
	}
	free(wks);
	for (i = 0; i < r.njobs; i++)
		free(r.jobs[i].path);
	free(r.jobs);
	for (i = 0; i < r.nnodes; i++) {
		ignore_rules_free((struct ignore_rules *)r.nodes[i]->rules);
		free(r.nodes[i]);
	}
	free(r.nodes);
	pthread_mutex_destroy(&r.lock);
	pthread_cond_destroy(&r.cond);
	return ret;
}
