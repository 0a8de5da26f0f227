/*
 * The record of the last capture on disk (forgex-statcache); see
 * statcache.h. A local cache, read only by the forgex that wrote it: the
 * structures are stored as they are in memory, guarded by a magic number
 * that also tells byte order and structure sizes apart, and a crc32.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "vcs/statcache.h"

#define SC_MAGIC 0x46585343u	/* "FXSC" */
#define SC_VERSION (1u | (uint32_t)sizeof(struct sc_file) << 8 | (uint32_t)sizeof(struct sc_dir) << 20)
#define REC_FILE 0x52454346u
#define REC_TREE 0x52454354u
#define REC_INPUT 0x52454349u
#define REC_DIR 0x52454344u
#define SC_TMP STATCACHE_FILE ".tmp"
#define SC_MAX ((size_t)1 << 31)

struct sc_head {
	uint32_t magic, version;
	uint64_t ndirs, nfiles, names_len, strings_len, recorded, nempty, nlarge;
	struct sc_stamp inputs[3];
	unsigned char root[GIT_OID_RAWSZ];
	unsigned char tracked[GIT_OID_RAWSZ];
	uint32_t crc;		/* of everything after the head up to base_len, then the head */
	uint64_t base_len;
};

/*
 * One appended record: a file's new stamp and id, a folder's new stamp
 * (REC_DIR), an input's stamp (REC_INPUT, `index` 0-2), or (REC_TREE) the
 * tree ending a group.
 */
struct sc_rec {
	uint32_t magic, index, gitmode, pad;
	struct sc_stamp st;
	unsigned char oid[GIT_OID_RAWSZ];
	uint32_t crc;
};

_Static_assert(sizeof(struct sc_stamp) == 64, "stamp has no padding");
_Static_assert(sizeof(struct sc_file) == 96, "file has no padding");
_Static_assert(sizeof(struct sc_dir) == 168, "folder has no padding");
_Static_assert(sizeof(struct sc_rec) == 104, "record has no padding");
_Static_assert(sizeof(struct sc_head) % 8 == 0, "head keeps alignment");

void statcache_release(struct statcache *sc)
{
	if (sc->adirs)
		free(sc->dirs);
	if (sc->afiles)
		free(sc->files);
	free(sc->key);
	free(sc->perms);
	strvec_clear(&sc->empty_dirs);
	strvec_clear(&sc->too_large);
	buf_release(&sc->names);
	free(sc->raw);
	memset(sc, 0, sizeof(*sc));
	buf_init(&sc->names, 0);
}

char *statcache_key(struct checkpoints *cps, const char *uindex, const char *exclude)
{
	return xstrfmt("1\n%s\n%s\n%s\n%s\n%s\n%llu", cps->workspace,
		       cps->user_prefix ? cps->user_prefix : "", uindex ? uindex : "",
		       exclude ? exclude : "", cps->excludes_file ? cps->excludes_file : "",
		       (unsigned long long)cps->max_file_bytes);
}

static uint32_t crc_of(const void *p, size_t n)
{
	uLong c = crc32(0L, Z_NULL, 0);

	while (n) {
		uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;

		c = crc32(c, p, k);
		p = (const char *)p + k;
		n -= k;
	}
	return (uint32_t)c;
}

static uint32_t rec_crc(const struct sc_rec *r)
{
	return crc_of(r, offsetof(struct sc_rec, crc));
}

/* The next NUL-terminated string of [*p, end), or NULL when there is none. */
static const char *next_string(const char **p, const char *end)
{
	const char *s = *p, *nul = memchr(s, '\0', (size_t)(end - s));

	if (!nul)
		return NULL;
	*p = nul + 1;
	return s;
}

/* Apply the whole groups of records in [p, end); the count, SIZE_MAX when the tail is bad. */
static size_t apply_records(struct statcache *sc, const char *p, const char *end)
{
	struct sc_rec r;
	size_t applied = 0, pending = 0, i;
	const char *group = p;

	while (end - p >= (ptrdiff_t)sizeof(r)) {
		memcpy(&r, p, sizeof(r));
		if (rec_crc(&r) != r.crc ||
		    (r.magic != REC_FILE && r.magic != REC_TREE && r.magic != REC_INPUT &&
		     r.magic != REC_DIR) ||
		    (r.magic == REC_FILE && r.index >= sc->nfiles) ||
		    (r.magic == REC_DIR && r.index >= sc->ndirs) ||
		    (r.magic == REC_INPUT && r.index >= ARRAY_SIZE(sc->inputs)))
			return SIZE_MAX;
		p += sizeof(r);
		if (r.magic != REC_TREE) {
			pending++;
			continue;
		}
		/* the group is whole: its files and inputs (contiguous from `group`), then its tree */
		for (i = 0; i < pending; i++) {
			struct sc_rec f;
			struct sc_file *sf;

			memcpy(&f, group + i * sizeof(f), sizeof(f));
			if (f.magic == REC_INPUT) {
				sc->inputs[f.index] = f.st;
				continue;
			}
			if (f.magic == REC_DIR) {
				sc->dirs[f.index].st = f.st;
				continue;
			}
			sf = &sc->files[f.index];
			sf->st = f.st;
			sf->gitmode = f.gitmode;
			memcpy(sf->oid, f.oid, sizeof(sf->oid));
		}
		memcpy(sc->root, r.oid, sizeof(sc->root));
		applied += pending + 1;
		pending = 0;
		group = p;
	}
	/* a group cut short (or a partial record) is ignored, and the next write starts afresh */
	return p == end && !pending ? applied : SIZE_MAX;
}

int statcache_load(struct statcache *sc, int shadow_fd)
{
	struct buf raw = BUF_INIT;
	struct sc_head h;
	struct stat st;
	const char *p, *end, *s;
	size_t off, i;
	uint32_t crc;
	int fd = openat(shadow_fd, STATCACHE_FILE, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT ? FX_ENOTFOUND : FX_EPARSE;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > SC_MAX ||
	    (size_t)st.st_size < sizeof(h)) {
		close(fd);
		return FX_EPARSE;
	}
	buf_grow(&raw, (size_t)st.st_size + 1);
	if (fsutil_read_fd(&raw, fd, SC_MAX) < 0) {
		close(fd);
		buf_release(&raw);
		err_clear();
		return FX_EPARSE;
	}
	close(fd);
	if (raw.len < sizeof(h))
		goto bad;
	memcpy(&h, raw.buf, sizeof(h));
	if (h.magic != SC_MAGIC || h.version != SC_VERSION || h.base_len > raw.len ||
	    h.ndirs > SC_MAX / sizeof(struct sc_dir) || h.nfiles > SC_MAX / sizeof(struct sc_file) ||
	    h.names_len > SC_MAX || h.strings_len > SC_MAX)
		goto bad;
	off = sizeof(h) + h.ndirs * sizeof(struct sc_dir) + h.nfiles * sizeof(struct sc_file);
	if (off + h.names_len + h.strings_len != h.base_len)
		goto bad;
	crc = h.crc;
	h.crc = 0;
	if (crc32(crc_of(raw.buf + sizeof(h), h.base_len - sizeof(h)), (const Bytef *)&h,
		  sizeof(h)) != crc)
		goto bad;
	sc->raw = raw.buf;
	sc->dirs = (struct sc_dir *)(void *)(raw.buf + sizeof(h));
	sc->ndirs = h.ndirs;
	sc->files = (struct sc_file *)(void *)(raw.buf + sizeof(h) + h.ndirs * sizeof(struct sc_dir));
	sc->nfiles = h.nfiles;
	sc->namep = raw.buf + off;
	for (i = 0; i < sc->ndirs; i++) {
		const struct sc_dir *d = &sc->dirs[i];

		if ((uint64_t)d->path + d->path_len >= h.names_len || sc->namep[d->path + d->path_len] ||
		    (uint64_t)d->first + d->nfiles > h.nfiles)
			goto bad_parsed;
	}
	for (i = 0; i < sc->nfiles; i++) {
		const struct sc_file *f = &sc->files[i];

		if (!f->name_len || (uint64_t)f->name + f->name_len >= h.names_len ||
		    sc->namep[f->name + f->name_len])
			goto bad_parsed;
	}
	p = sc->namep + h.names_len;
	end = p + h.strings_len;
	if (!(s = next_string(&p, end)))
		goto bad_parsed;
	sc->key = xstrdup(s);
	if (!(s = next_string(&p, end)))
		goto bad_parsed;
	sc->perms = xstrdup(s);
	for (i = 0; i < h.nempty + h.nlarge; i++) {
		if (!(s = next_string(&p, end)))
			goto bad_parsed;
		strvec_push(i < h.nempty ? &sc->empty_dirs : &sc->too_large, s);
	}
	memcpy(sc->root, h.root, sizeof(sc->root));
	memcpy(sc->tracked, h.tracked, sizeof(sc->tracked));
	memcpy(sc->inputs, h.inputs, sizeof(sc->inputs));
	sc->recorded = h.recorded;
	sc->records = apply_records(sc, raw.buf + h.base_len, raw.buf + raw.len);
	return 0;
bad_parsed:
	statcache_release(sc);
	return FX_EPARSE;
bad:
	buf_release(&raw);
	return FX_EPARSE;
}

/* Write all of `data` to `fd`. */
static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int statcache_save(struct statcache *sc, int shadow_fd)
{
	struct buf out = BUF_INIT, strings = BUF_INIT;
	struct sc_head h;
	size_t names_len = sc->names.len, i;
	int fd, ret = 0;

	if (sc->namep && sc->namep != sc->names.buf) {
		/* loaded: the names run from the first to the strings */
		const struct sc_head *oh = sc->raw;

		names_len = oh->names_len;
	}
	buf_addstr(&strings, sc->key ? sc->key : "");
	buf_addch(&strings, '\0');
	buf_addstr(&strings, sc->perms ? sc->perms : "");
	buf_addch(&strings, '\0');
	for (i = 0; i < sc->empty_dirs.nr; i++)
		buf_add(&strings, sc->empty_dirs.v[i], strlen(sc->empty_dirs.v[i]) + 1);
	for (i = 0; i < sc->too_large.nr; i++)
		buf_add(&strings, sc->too_large.v[i], strlen(sc->too_large.v[i]) + 1);
	memset(&h, 0, sizeof(h));
	h.magic = SC_MAGIC;
	h.version = SC_VERSION;
	h.ndirs = sc->ndirs;
	h.nfiles = sc->nfiles;
	h.names_len = names_len;
	h.strings_len = strings.len;
	h.recorded = sc->recorded;
	h.nempty = sc->empty_dirs.nr;
	h.nlarge = sc->too_large.nr;
	memcpy(h.inputs, sc->inputs, sizeof(h.inputs));
	memcpy(h.root, sc->root, sizeof(h.root));
	memcpy(h.tracked, sc->tracked, sizeof(h.tracked));
	h.base_len = sizeof(h) + sc->ndirs * sizeof(struct sc_dir) +
		     sc->nfiles * sizeof(struct sc_file) + names_len + strings.len;
	buf_grow(&out, h.base_len);
	buf_add(&out, &h, sizeof(h));
	buf_add(&out, sc->dirs, sc->ndirs * sizeof(struct sc_dir));
	buf_add(&out, sc->files, sc->nfiles * sizeof(struct sc_file));
	buf_add(&out, sc->namep, names_len);
	buf_add(&out, strings.buf, strings.len);
	h.crc = (uint32_t)crc32(crc_of(out.buf + sizeof(h), out.len - sizeof(h)), (const Bytef *)&h,
				sizeof(h));
	memcpy(out.buf, &h, sizeof(h));
	/* no fsync here: shadow_batch_end() flushes it with the objects it names */
	fd = openat(shadow_fd, SC_TMP, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0 || write_all(fd, out.buf, out.len) < 0 ||
	    renameat(shadow_fd, SC_TMP, shadow_fd, STATCACHE_FILE) < 0) {
		ret = err_set_errno(FX_EOS, "cannot save the checkpoint stat cache");
		unlinkat(shadow_fd, SC_TMP, 0);
	} else {
		sc->records = 0;
	}
	if (fd >= 0)
		close(fd);
	buf_release(&out);
	buf_release(&strings);
	return ret;
}

int statcache_append(struct statcache *sc, int shadow_fd, const uint32_t *idx, size_t n,
		     const uint32_t *dirs, size_t ndirs)
{
	struct buf out = BUF_INIT;
	struct sc_rec r;
	size_t i;
	int fd, ret = 0;

	/* many records already (or a bad tail): one base is cheaper to read than a long log */
	if (sc->records == SIZE_MAX || sc->records + n + ndirs + 4 > sc->nfiles / 8 + 64)
		return statcache_save(sc, shadow_fd);
	for (i = 0; i < ndirs; i++) {
		memset(&r, 0, sizeof(r));
		r.magic = REC_DIR;
		r.index = dirs[i];
		r.st = sc->dirs[dirs[i]].st;
		r.crc = rec_crc(&r);
		buf_add(&out, &r, sizeof(r));
	}
	for (i = 0; i < n + ARRAY_SIZE(sc->inputs) + 1; i++) {
		memset(&r, 0, sizeof(r));
		if (i < n) {
			const struct sc_file *f = &sc->files[idx[i]];

			r.magic = REC_FILE;
			r.index = idx[i];
			r.gitmode = f->gitmode;
			r.st = f->st;
			memcpy(r.oid, f->oid, sizeof(r.oid));
		} else if (i < n + ARRAY_SIZE(sc->inputs)) {
			r.magic = REC_INPUT;
			r.index = (uint32_t)(i - n);
			r.st = sc->inputs[i - n];
		} else {
			r.magic = REC_TREE;
			memcpy(r.oid, sc->root, sizeof(r.oid));
		}
		r.crc = rec_crc(&r);
		buf_add(&out, &r, sizeof(r));
	}
	fd = openat(shadow_fd, STATCACHE_FILE, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK |
		    O_CLOEXEC);
	if (fd < 0 || write_all(fd, out.buf, out.len) < 0)
		ret = err_set_errno(FX_EOS, "cannot save the checkpoint stat cache");
	else
		sc->records += ndirs + n + ARRAY_SIZE(sc->inputs) + 1;
	if (fd >= 0)
		close(fd);
	buf_release(&out);
	return ret;
}
