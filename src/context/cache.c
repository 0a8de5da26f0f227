/*
 * The cache file of the symbol index (see index.h).
 *
 * Layout, all integers little-endian:
 *
 *   "FXMAP01\n"                       8 bytes
 *   u64 hash                          ctx_hash() of everything after the header
 *   u64 params                        ctx_hash() of the ctags arguments and limits:
 *                                     another forgex's cache is rebuilt, not trusted
 *   u64 arena_len, nsyms, nfiles, ndefs, nrefs
 *   arena                             arena_len bytes of NUL-terminated strings
 *   nsyms  x u32                      arena offset of each symbol's name
 *   nfiles x { u32 path, flags, def0, ndefs, ref0, nrefs;
 *              u64 size, ino, hash; i64 mtime_sec; u32 mtime_nsec }   (60 bytes)
 *   ndefs  x { u32 sym, line, kind, text, flags }                      (20 bytes)
 *   nrefs  x { u32 sym, count }                                        (8 bytes)
 *
 * The file lives in the workspace, where anything may have written it:
 * ctx_cache_parse() checks the size against the counts, the hash, that
 * every offset and id is in range, that every range of definitions and
 * references lies inside its array, and that paths are clean, relative
 * and sorted; any failure rejects the whole file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/fsutil.h"
#include "context/ctags.h"
#include "context/index.h"
#include "context/tokenize.h"

#define MAGIC "FXMAP01\n"
#define HEADER (8 + 8 + 8 + 5 * 8)
#define FILE_REC 60
#define DEF_REC 20
#define REF_REC 8

/* What the cached data depends on besides the files. */
static uint64_t params_hash(void)
{
	const char *const *a = ctx_ctags_argv();
	struct buf b = BUF_INIT;
	uint64_t h;

	for (; *a; a++)
		buf_addf(&b, "%s\n", *a);
	buf_addf(&b, "%zu %zu %d %d\n", CTX_FILE_MAX, (size_t)CTX_TEXT_MAX, CTX_IDENT_MIN,
		 CTX_IDENT_MAX);
	h = ctx_hash(b.buf, b.len);
	buf_release(&b);
	return h;
}

static void put32(struct buf *b, uint32_t v)
{
	unsigned char c[4] = { (unsigned char)v, (unsigned char)(v >> 8),
			       (unsigned char)(v >> 16), (unsigned char)(v >> 24) };

	buf_add(b, c, 4);
}

static void put64(struct buf *b, uint64_t v)
{
	put32(b, (uint32_t)v);
	put32(b, (uint32_t)(v >> 32));
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

void ctx_cache_serialize(const struct ctx_index *idx, struct buf *out)
{
	size_t start = out->len, body, i;
	uint64_t h;

	buf_grow(out, HEADER + idx->arena.len + 4 * idx->nsyms + FILE_REC * idx->nfiles +
		 DEF_REC * idx->ndefs + REF_REC * idx->nrefs);
	buf_add(out, MAGIC, 8);
	put64(out, 0);	/* the hash, filled in below */
	put64(out, params_hash());
	put64(out, idx->arena.len);
	put64(out, idx->nsyms);
	put64(out, idx->nfiles);
	put64(out, idx->ndefs);
	put64(out, idx->nrefs);
	body = out->len;
	buf_add(out, idx->arena.buf, idx->arena.len);
	for (i = 0; i < idx->nsyms; i++)
		put32(out, idx->syms[i]);
	for (i = 0; i < idx->nfiles; i++) {
		const struct ctx_file *f = &idx->files[i];

		put32(out, f->path);
		put32(out, f->flags);
		put32(out, f->def0);
		put32(out, f->ndefs);
		put32(out, f->ref0);
		put32(out, f->nrefs);
		put64(out, f->size);
		put64(out, f->ino);
		put64(out, f->hash);
		put64(out, (uint64_t)f->mtime_sec);
		put32(out, f->mtime_nsec);
	}
	for (i = 0; i < idx->ndefs; i++) {
		const struct ctx_def *d = &idx->defs[i];

		put32(out, d->sym);
		put32(out, d->line);
		put32(out, d->kind);
		put32(out, d->text);
		put32(out, d->flags);
	}
	for (i = 0; i < idx->nrefs; i++) {
		put32(out, idx->refs[i].sym);
		put32(out, idx->refs[i].count);
	}
	h = ctx_hash(out->buf + body, out->len - body);
	for (i = 0; i < 8; i++)
		out->buf[start + 8 + i] = (char)(h >> (8 * i));
}

/* A path as the walk makes them: relative, no empty, "." or ".." component. */
static int clean_path(const char *p)
{
	const char *c = p;

	if (!*p || *p == '/')
		return 0;
	for (;;) {
		const char *e = strchrnul(c, '/');
		size_t n = (size_t)(e - c);

		if (!n || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			return 0;
		if (!*e)
			return 1;
		c = e + 1;
	}
}

void ctx_index_clear_data(struct ctx_index *idx)
{
	buf_release(&idx->arena);
	FREE_AND_NULL(idx->syms);
	FREE_AND_NULL(idx->files);
	FREE_AND_NULL(idx->defs);
	FREE_AND_NULL(idx->refs);
	FREE_AND_NULL(idx->symtab);
	FREE_AND_NULL(idx->kindtab);
	idx->nsyms = idx->asyms = idx->nfiles = idx->afiles = 0;
	idx->ndefs = idx->adefs = idx->nrefs = idx->arefs = 0;
	idx->symtab_size = idx->kindtab_size = idx->nkinds = 0;
}

#define BAD(...) do { ret = err_set(FX_EPARSE, "repository map cache: " __VA_ARGS__); goto fail; } while (0)

int ctx_cache_parse(struct ctx_index *idx, const unsigned char *data, size_t len)
{
	uint64_t alen, nsyms, nfiles, ndefs, nrefs, need;
	const unsigned char *p;
	size_t i;
	int ret;

	if (len < HEADER || memcmp(data, MAGIC, 8))
		return err_set(FX_EPARSE, "repository map cache: not a cache file (or another version)");
	if (get64(data + 16) != params_hash())
		return err_set(FX_EPARSE, "repository map cache: made with other ctags options");
	alen = get64(data + 24);
	nsyms = get64(data + 32);
	nfiles = get64(data + 40);
	ndefs = get64(data + 48);
	nrefs = get64(data + 56);
	if (alen > len || nsyms > len || nfiles > len || ndefs > len || nrefs > len ||
	    alen > UINT32_MAX || nsyms > UINT32_MAX || nfiles > UINT32_MAX || ndefs > UINT32_MAX ||
	    nrefs > UINT32_MAX)
		return err_set(FX_EPARSE, "repository map cache: counts larger than the file");
	need = HEADER + alen + 4 * nsyms + FILE_REC * nfiles + DEF_REC * ndefs + REF_REC * nrefs;
	if (need != len)
		return err_set(FX_EPARSE, "repository map cache: %zu bytes, the counts say %llu",
			       len, (unsigned long long)need);
	if (get64(data + 8) != ctx_hash(data + HEADER, len - HEADER))
		return err_set(FX_EPARSE, "repository map cache: checksum mismatch");
	if (!alen || data[HEADER] != 0 || data[HEADER + alen - 1] != 0)
		return err_set(FX_EPARSE, "repository map cache: bad string table");

	p = data + HEADER;
	buf_init(&idx->arena, (size_t)alen + 1);
	buf_add(&idx->arena, p, (size_t)alen);
	p += alen;
	idx->syms = xmalloc((size_t)(nsyms ? nsyms : 1) * sizeof(*idx->syms));
	for (i = 0; i < nsyms; i++, p += 4) {
		idx->syms[i] = get32(p);
		if (idx->syms[i] >= alen || !idx->arena.buf[idx->syms[i]])
			BAD("symbol %zu out of range", i);
	}
	idx->nsyms = idx->asyms = (size_t)nsyms;
	idx->files = xmalloc((size_t)(nfiles ? nfiles : 1) * sizeof(*idx->files));
	for (i = 0; i < nfiles; i++, p += FILE_REC) {
		struct ctx_file *f = &idx->files[i];

		memset(f, 0, sizeof(*f));
		f->path = get32(p);
		f->flags = get32(p + 4);
		f->def0 = get32(p + 8);
		f->ndefs = get32(p + 12);
		f->ref0 = get32(p + 16);
		f->nrefs = get32(p + 20);
		f->size = get64(p + 24);
		f->ino = get64(p + 32);
		f->hash = get64(p + 40);
		f->mtime_sec = (int64_t)get64(p + 48);
		f->mtime_nsec = get32(p + 56);
		if (f->path >= alen || !clean_path(idx->arena.buf + f->path))
			BAD("file %zu: bad path", i);
		if (i && strcmp(idx->arena.buf + idx->files[i - 1].path, idx->arena.buf + f->path) >= 0)
			BAD("files not sorted at %zu", i);
		if ((uint64_t)f->def0 + f->ndefs > ndefs || (uint64_t)f->ref0 + f->nrefs > nrefs)
			BAD("file %zu: ranges out of bounds", i);
		if (f->mtime_nsec >= 1000000000u)
			BAD("file %zu: bad mtime", i);
		if (f->flags & ~(uint32_t)(CTX_F_NOTAGS | CTX_F_SKIP))
			BAD("file %zu: unknown flags", i);
	}
	idx->nfiles = idx->afiles = (size_t)nfiles;
	idx->defs = xmalloc((size_t)(ndefs ? ndefs : 1) * sizeof(*idx->defs));
	for (i = 0; i < ndefs; i++, p += DEF_REC) {
		struct ctx_def *d = &idx->defs[i];

		d->sym = get32(p);
		d->line = get32(p + 4);
		d->kind = get32(p + 8);
		d->text = get32(p + 12);
		d->flags = get32(p + 16);
		if (d->sym >= nsyms || d->kind >= alen || d->text >= alen || !d->line)
			BAD("definition %zu out of range", i);
	}
	idx->ndefs = idx->adefs = (size_t)ndefs;
	idx->refs = xmalloc((size_t)(nrefs ? nrefs : 1) * sizeof(*idx->refs));
	for (i = 0; i < nrefs; i++, p += REF_REC) {
		idx->refs[i].sym = get32(p);
		idx->refs[i].count = get32(p + 4);
		if (idx->refs[i].sym >= nsyms || !idx->refs[i].count)
			BAD("reference %zu out of range", i);
	}
	idx->nrefs = idx->arefs = (size_t)nrefs;
	return 0;
fail:
	ctx_index_clear_data(idx);
	return ret;
}

/* Open `name` in `dirfd` as a folder, refusing a link. */
static int open_dir_at(int dirfd, const char *name, int create)
{
	int fd;

	if (create && mkdirat(dirfd, name, 0755) < 0 && errno != EEXIST)
		return err_set_errno(FX_EOS, "cannot create %s", name);
	fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? FX_ENOTFOUND
				       : err_set_errno(FX_EOS, "cannot open %s (a link is refused)", name);
	return fd;
}

/* The folder .forgex/map of the workspace, or a negative code. */
static int open_map_dir(const struct ctx_index *idx, int create)
{
	int top = open_dir_at(idx->root.fd, ".forgex", create), fd;

	if (top < 0)
		return top;
	fd = open_dir_at(top, "map", create);
	close(top);
	return fd;
}

int ctx_cache_load(struct ctx_index *idx)
{
	struct buf data = BUF_INIT;
	struct stat st;
	int dfd = open_map_dir(idx, 0), fd, ret;

	if (dfd < 0)
		return dfd == FX_ENOTFOUND ? (err_clear(), FX_ENOTFOUND) : dfd;
	fd = openat(dfd, "index", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dfd);
	if (fd < 0) {
		if (errno == ENOENT)
			return FX_ENOTFOUND;
		return err_set_errno(FX_EPARSE, "repository map cache: cannot open (a link is refused)");
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > CTX_CACHE_MAX) {
		close(fd);
		return err_set(FX_EPARSE, "repository map cache: not a regular file of a sane size");
	}
	buf_init(&data, (size_t)st.st_size + 1);
	ret = fsutil_read_fd(&data, fd, CTX_CACHE_MAX);
	close(fd);
	if (ret < 0) {
		buf_release(&data);
		return err_set(FX_EPARSE, "repository map cache: cannot read: %s", err_last());
	}
	ret = ctx_cache_parse(idx, (const unsigned char *)data.buf, data.len);
	buf_release(&data);
	return ret;
}

/* Temporary files of runs that died: a dead pid in the name, or an hour old. */
static void remove_stale(int dfd)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;
	time_t now = time(NULL);

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d))) {
		const char *dot;
		struct stat st;
		long pid;

		if (strncmp(de->d_name, "index.tmp.", 10))
			continue;
		dot = de->d_name + 10;
		pid = strtol(dot, NULL, 10);
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if ((pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) < 0 && errno == ESRCH) ||
		    now - st.st_mtime > 3600)
			unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

int ctx_cache_save(const struct ctx_index *idx)
{
	struct buf img = BUF_INIT;
	char tmp[64];
	int dfd = open_map_dir(idx, 1), fd, ret;
	static unsigned seq;

	if (dfd < 0)
		return dfd;
	remove_stale(dfd);
	ctx_cache_serialize(idx, &img);
	snprintf(tmp, sizeof(tmp), "index.tmp.%ld.%u.%lx", (long)getpid(), seq++,
		 (unsigned long)time(NULL));
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0) {
		ret = err_set_errno(FX_EOS, "cannot create the repository map cache");
		goto out;
	}
	ret = fsutil_write_all(fd, img.buf, img.len);
	if (close(fd) < 0 && !ret)
		ret = err_set_errno(FX_EOS, "cannot write the repository map cache");
	if (ret < 0) {
		unlinkat(dfd, tmp, 0);
		goto out;
	}
	/*
	 * No fsync: the cache can always be rebuilt, and a file cut by a crash
	 * fails the size or checksum test and is rebuilt. The rename is what
	 * matters: a reader sees the old file or the new one.
	 */
	if (renameat(dfd, tmp, dfd, "index") < 0) {
		ret = err_set_errno(FX_EOS, "cannot replace the repository map cache");
		unlinkat(dfd, tmp, 0);
	}
out:
	close(dfd);
	buf_release(&img);
	return ret;
}
