/* The shadow's loose objects, read with a bounded inflate; see odb.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "vcs/odb.h"

/* An object file larger than this is not read (no checkpoint writes one). */
#define LOOSE_MAX ((size_t)4 << 30)
#define HEADER_MAX 64

struct loose_backend {
	git_odb_backend parent;
	int objfd;
	git_oid *damaged;
	size_t damaged_nr, damaged_alloc;
	git_oid *written;	/* since the last vcs_loose_flush() */
	size_t written_nr, written_alloc;
	int fan[256];		/* the fan-out folders opened so far (-1: not yet) */
	int made_fan;		/* a fan-out folder was made since the last flush */
	int stream_ok;		/* vcs_loose_allow_stream(): a streamed write is wanted */
};

/*
 * The fan-out folder of objects starting with byte `b`, opened once per
 * backend (a first checkpoint writes thousands of objects: opening the
 * folder for each "exists" and each write was two thirds of its system
 * calls); made when `create` and missing. -1 with errno.
 */
static int fan_dir(struct loose_backend *lb, unsigned b, int create)
{
	char sub[3];

	if (lb->fan[b] >= 0)
		return lb->fan[b];
	snprintf(sub, sizeof(sub), "%02x", b);
	lb->fan[b] = openat(lb->objfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (lb->fan[b] < 0 && errno == ENOENT && create) {
		if (mkdirat(lb->objfd, sub, 0755) < 0 && errno != EEXIST)
			return -1;
		lb->made_fan = 1;
		lb->fan[b] = openat(lb->objfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	return lb->fan[b];
}

static void hex_of(char hex[GIT_OID_HEXSZ + 1], const git_oid *oid)
{
	git_oid_tostr(hex, GIT_OID_HEXSZ + 1, oid);
}

static int parse_header(const unsigned char *h, size_t n, git_object_t *type, size_t *size,
			size_t *hlen)
{
	const unsigned char *sp = memchr(h, ' ', n), *nul = memchr(h, '\0', n);
	char tname[16];
	size_t v = 0;
	const unsigned char *p;

	if (!sp || !nul || sp > nul || (size_t)(sp - h) >= sizeof(tname) || nul == sp + 1)
		return -1;
	memcpy(tname, h, (size_t)(sp - h));
	tname[sp - h] = '\0';
	*type = git_object_string2type(tname);
	if (*type != GIT_OBJECT_BLOB && *type != GIT_OBJECT_TREE && *type != GIT_OBJECT_COMMIT &&
	    *type != GIT_OBJECT_TAG)
		return -1;
	for (p = sp + 1; p < nul; p++) {
		if (*p < '0' || *p > '9' || v > (LOOSE_MAX * 64) / 10)
			return -1;
		v = v * 10 + (size_t)(*p - '0');
	}
	*size = v;
	*hlen = (size_t)(nul - h) + 1;
	return 0;
}

int vcs_loose_check(int fd, const git_oid *oid, void **data, size_t *len, git_object_t *type)
{
	struct buf raw = BUF_INIT;
	unsigned char hdr[HEADER_MAX];
	unsigned char *out = NULL;
	z_stream z;
	size_t size = 0, hlen = 0, have;
	git_object_t t = GIT_OBJECT_INVALID;
	git_oid got;
	char hex[GIT_OID_HEXSZ + 1];
	int zr, ret = FX_EPARSE, zinit = 0;

	hex_of(hex, oid);
	if (fsutil_read_fd(&raw, fd, LOOSE_MAX) < 0) {
		ret = err_last_code();
		goto out;
	}
	memset(&z, 0, sizeof(z));
	if (inflateInit(&z) != Z_OK)
		goto bad;
	zinit = 1;
	z.next_in = (unsigned char *)raw.buf;
	z.avail_in = (uInt)raw.len;
	if (raw.len > UINT32_MAX)
		goto bad;
	/* 1. the header, at most HEADER_MAX bytes: one call, no loop */
	z.next_out = hdr;
	z.avail_out = sizeof(hdr);
	zr = inflate(&z, Z_SYNC_FLUSH);
	if (zr != Z_OK && zr != Z_STREAM_END)
		goto bad;
	have = sizeof(hdr) - z.avail_out;
	if (parse_header(hdr, have, &t, &size, &hlen) < 0)
		goto bad;
	/* 2. exactly `size` bytes, then the end of the stream */
	out = malloc(size + 1);
	if (!out)
		goto bad;
	if (have - hlen > size)
		goto bad;
	memcpy(out, hdr + hlen, have - hlen);
	if (zr != Z_STREAM_END) {
		z.next_out = out + (have - hlen);
		z.avail_out = (uInt)(size + 1 - (have - hlen));
		if (size + 1 > UINT32_MAX)
			goto bad;
		/* all input is there: Z_FINISH ends, or fails, without looping */
		zr = inflate(&z, Z_FINISH);
		if (zr != Z_STREAM_END)
			goto bad;
	}
	if (z.total_out != hlen + size || z.avail_in != 0)
		goto bad;
	if (git_odb_hash(&got, out, size, t) < 0 || !git_oid_equal(&got, oid))
		goto bad;
	ret = 0;
	if (data) {
		*data = out;
		*len = size;
		*type = t;
		out = NULL;
	}
	goto out;
bad:
	git_error_clear();
	ret = err_set(FX_EPARSE, "checkpoint object %s is damaged (cut short or corrupt)", hex);
out:
	if (zinit)
		inflateEnd(&z);
	free(out);
	buf_release(&raw);
	return ret;
}

/* Open the file of `oid` read-only, never through a link; -1 with errno. */
static int open_object(struct loose_backend *lb, const git_oid *oid)
{
	char hex[GIT_OID_HEXSZ + 1];
	struct stat st;
	int dfd, fd;

	hex_of(hex, oid);
	if ((dfd = fan_dir(lb, oid->id[0], 0)) < 0)
		return -1;
	fd = openat(dfd, hex + 2, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -1;
	}
	return fd;
}

void vcs_loose_note_damaged(git_odb_backend *b, const git_oid *oid)
{
	struct loose_backend *lb = (struct loose_backend *)b;

	if (vcs_loose_was_damaged(&lb->parent, oid))
		return;
	ALLOC_GROW(lb->damaged, lb->damaged_nr + 1, lb->damaged_alloc);
	git_oid_cpy(&lb->damaged[lb->damaged_nr++], oid);
}

int vcs_loose_was_damaged(git_odb_backend *b, const git_oid *oid)
{
	struct loose_backend *lb = (struct loose_backend *)b;
	size_t i;

	for (i = 0; i < lb->damaged_nr; i++)
		if (git_oid_equal(&lb->damaged[i], oid))
			return 1;
	return 0;
}

/* Read and check `oid`: 0, GIT_ENOTFOUND (absent or damaged: another backend may have it). */
static int loose_get(struct loose_backend *lb, const git_oid *oid, void **data, size_t *len,
		     git_object_t *type)
{
	int fd = open_object(lb, oid), r;

	if (fd < 0)
		return GIT_ENOTFOUND;
	r = vcs_loose_check(fd, oid, data, len, type);
	close(fd);
	if (r < 0) {
		vcs_loose_note_damaged(&lb->parent, oid);
		err_clear();
		return GIT_ENOTFOUND;
	}
	return 0;
}

static int loose_read(void **data, size_t *len, git_object_t *type, git_odb_backend *b,
		      const git_oid *oid)
{
	void *raw = NULL;
	int r = loose_get((struct loose_backend *)b, oid, data ? &raw : NULL, len, type);

	if (r < 0)
		return r;
	*data = git_odb_backend_data_alloc(b, *len ? *len : 1);
	if (!*data) {
		free(raw);
		return GIT_ERROR;
	}
	memcpy(*data, raw, *len);
	free(raw);
	return 0;
}

static int loose_read_header(size_t *len, git_object_t *type, git_odb_backend *b,
			     const git_oid *oid)
{
	void *raw = NULL;
	int r = loose_get((struct loose_backend *)b, oid, &raw, len, type);

	free(raw);
	return r;
}

static int loose_exists(git_odb_backend *b, const git_oid *oid)
{
	return loose_get((struct loose_backend *)b, oid, NULL, NULL, NULL) == 0;
}

/* The one whole object whose id starts with the first `n` hex digits of `short_id`. */
static int loose_exists_prefix(git_oid *out, git_odb_backend *b, const git_oid *short_id,
			       size_t n)
{
	struct loose_backend *lb = (struct loose_backend *)b;
	char want[GIT_OID_HEXSZ + 1];
	git_oid found;
	int nfound = 0;
	unsigned i;

	hex_of(want, short_id);
	if (n < 2 || n > GIT_OID_HEXSZ)
		return GIT_ENOTFOUND;
	for (i = 0; i < 256; i++) {
		char sub[3];
		int dfd;
		DIR *d;
		struct dirent *de;

		snprintf(sub, sizeof(sub), "%02x", i);
		if (strncmp(sub, want, 2))
			continue;
		dfd = openat(lb->objfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0 || !(d = fdopendir(dfd))) {
			if (dfd >= 0)
				close(dfd);
			continue;
		}
		while ((de = readdir(d))) {
			char hex[GIT_OID_HEXSZ + 1];
			git_oid oid;

			if (strlen(de->d_name) != GIT_OID_HEXSZ - 2 ||
			    strncmp(de->d_name, want + 2, n - 2))
				continue;
			snprintf(hex, sizeof(hex), "%.2s%.38s", sub, de->d_name);
			if (git_oid_fromstr(&oid, hex) < 0 || !loose_exists(b, &oid))
				continue;
			if (nfound && !git_oid_equal(&oid, &found)) {
				closedir(d);
				git_error_set_str(GIT_ERROR_ODB, "ambiguous object id prefix");
				return GIT_EAMBIGUOUS;
			}
			git_oid_cpy(&found, &oid);
			nfound = 1;
		}
		closedir(d);
	}
	git_error_clear();
	if (!nfound)
		return GIT_ENOTFOUND;
	git_oid_cpy(out, &found);
	return 0;
}

static int loose_read_prefix(git_oid *out, void **data, size_t *len, git_object_t *type,
			     git_odb_backend *b, const git_oid *short_id, size_t n)
{
	int r = loose_exists_prefix(out, b, short_id, n);

	if (r < 0)
		return r;
	return loose_read(data, len, type, b, out);
}

static int loose_write(git_odb_backend *b, const git_oid *oid, const void *data, size_t len,
		       git_object_t type)
{
	struct loose_backend *lb = (struct loose_backend *)b;
	char hex[GIT_OID_HEXSZ + 1], hdr[HEADER_MAX], tmp[64];
	unsigned char chunk[65536];
	z_stream z;
	int hlen, dfd, fd = -1, zr, ret = GIT_ERROR, tries;
	static unsigned counter;

	hex_of(hex, oid);
	hlen = snprintf(hdr, sizeof(hdr), "%s %zu", git_object_type2string(type), len) + 1;
	if ((dfd = fan_dir(lb, oid->id[0], 1)) < 0)
		goto os_fail;
	for (tries = 0; tries < 100 && fd < 0; tries++) {
		snprintf(tmp, sizeof(tmp), "tmp_obj_%ld_%u", (long)getpid(), counter++);
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
		if (fd < 0 && errno != EEXIST)
			goto os_fail;
	}
	if (fd < 0)
		goto os_fail;
	memset(&z, 0, sizeof(z));
	if (deflateInit(&z, Z_BEST_SPEED) != Z_OK)
		goto fail;
	/* the header, then the data, through one stream */
	{
		const unsigned char *parts[2] = { (const unsigned char *)hdr, data };
		size_t lens[2] = { (size_t)hlen, len };
		int k;

		for (k = 0; k < 2; k++) {
			size_t left = lens[k];
			const unsigned char *p = parts[k];

			do {
				uInt take = left > (1u << 30) ? (1u << 30) : (uInt)left;

				z.next_in = (unsigned char *)p;
				z.avail_in = take;
				do {
					z.next_out = chunk;
					z.avail_out = sizeof(chunk);
					zr = deflate(&z, k == 1 && take == left ? Z_FINISH : Z_NO_FLUSH);
					if (zr == Z_STREAM_ERROR ||
					    fsutil_write_all(fd, chunk, sizeof(chunk) - z.avail_out) < 0) {
						deflateEnd(&z);
						goto fail;
					}
				} while (z.avail_out == 0);
				p += take;
				left -= take;
			} while (left);
		}
		if (zr != Z_STREAM_END) {
			deflateEnd(&z);
			goto fail;
		}
	}
	deflateEnd(&z);
	if (close(fd) < 0) {
		fd = -1;
		goto fail;
	}
	fd = -1;
	/* replaces a damaged copy or a planted link, never writes through one */
	if (renameat(dfd, tmp, dfd, hex + 2) < 0)
		goto fail;
	ALLOC_GROW(lb->written, lb->written_nr + 1, lb->written_alloc);
	git_oid_cpy(&lb->written[lb->written_nr++], oid);
	return 0;
os_fail:
	git_error_set(GIT_ERROR_OS, "cannot write checkpoint object %s: %s", hex, strerror(errno));
	return GIT_ERROR;
fail:
	git_error_set(GIT_ERROR_OS, "cannot write checkpoint object %s: %s", hex,
		      errno ? strerror(errno) : "zlib failed");
	if (fd >= 0)
		close(fd);
	unlinkat(dfd, tmp, 0);
	return ret;
}

/*
 * A streamed write (git_odb_open_wstream(), for files too big to hold in
 * memory): libgit2 hashes what goes through; the bytes are deflated into
 * a temporary file as they come (in fan-out folder 00, where an
 * interrupted batch's leftovers are looked for), renamed to the object's
 * place once its id is known. Memory: one 64 KiB buffer and zlib's state.
 */
struct loose_wstream {
	git_odb_stream parent;
	struct loose_backend *lb;
	z_stream z;
	int zinit, fd, tmpdir;
	char tmp[64];
	unsigned char chunk[65536];
};

static int ws_deflate(struct loose_wstream *s, const void *data, size_t len, int flush)
{
	int zr;

	s->z.next_in = (unsigned char *)data;
	s->z.avail_in = (uInt)len;
	do {
		s->z.next_out = s->chunk;
		s->z.avail_out = sizeof(s->chunk);
		zr = deflate(&s->z, flush);
		if (zr == Z_STREAM_ERROR ||
		    fsutil_write_all(s->fd, s->chunk, sizeof(s->chunk) - s->z.avail_out) < 0)
			return -1;
	} while (s->z.avail_out == 0 || (flush == Z_FINISH && zr != Z_STREAM_END));
	return 0;
}

static int ws_write(git_odb_stream *stream, const char *buffer, size_t len)
{
	struct loose_wstream *s = (struct loose_wstream *)stream;

	while (len) {
		size_t take = len > (1u << 30) ? (1u << 30) : len;

		if (ws_deflate(s, buffer, take, Z_NO_FLUSH) < 0) {
			git_error_set(GIT_ERROR_OS, "cannot write a checkpoint object: %s",
				      errno ? strerror(errno) : "zlib failed");
			return GIT_ERROR;
		}
		buffer += take;
		len -= take;
	}
	return 0;
}

static int ws_finalize(git_odb_stream *stream, const git_oid *oid)
{
	struct loose_wstream *s = (struct loose_wstream *)stream;
	char hex[GIT_OID_HEXSZ + 1];
	int dfd;

	hex_of(hex, oid);
	if (ws_deflate(s, "", 0, Z_FINISH) < 0 || close(s->fd) < 0) {
		s->fd = -1;
		goto fail;
	}
	s->fd = -1;
	if ((dfd = fan_dir(s->lb, oid->id[0], 1)) < 0 || renameat(s->tmpdir, s->tmp, dfd, hex + 2) < 0)
		goto fail;
	s->tmp[0] = '\0';
	ALLOC_GROW(s->lb->written, s->lb->written_nr + 1, s->lb->written_alloc);
	git_oid_cpy(&s->lb->written[s->lb->written_nr++], oid);
	return 0;
fail:
	git_error_set(GIT_ERROR_OS, "cannot write checkpoint object %s: %s", hex,
		      errno ? strerror(errno) : "zlib failed");
	return GIT_ERROR;
}

static void ws_free(git_odb_stream *stream)
{
	struct loose_wstream *s = (struct loose_wstream *)stream;

	if (s->zinit)
		deflateEnd(&s->z);
	if (s->fd >= 0)
		close(s->fd);
	if (s->tmp[0])
		unlinkat(s->tmpdir, s->tmp, 0);
	free(s);
}

/*
 * Not asked for a streamed write: git_odb_write() falls back to a stream
 * when its direct write failed (a full disk), and did so before this
 * backend had streams, through libgit2's buffering stream that calls
 * loose_write() again at the end. The same here: the bytes are kept (they
 * are in memory already) and written whole once more.
 */
struct loose_bstream {
	git_odb_stream parent;
	struct loose_backend *lb;
	git_object_t type;
	struct buf data;
};

static int bs_write(git_odb_stream *stream, const char *buffer, size_t len)
{
	buf_add(&((struct loose_bstream *)stream)->data, buffer, len);
	return 0;
}

static int bs_finalize(git_odb_stream *stream, const git_oid *oid)
{
	struct loose_bstream *s = (struct loose_bstream *)stream;

	return loose_write(&s->lb->parent, oid, s->data.buf, s->data.len, s->type);
}

static void bs_free(git_odb_stream *stream)
{
	buf_release(&((struct loose_bstream *)stream)->data);
	free(stream);
}

static int buffered_stream(git_odb_stream **out, struct loose_backend *lb, git_object_size_t size,
			   git_object_t type)
{
	struct loose_bstream *s = xcalloc(1, sizeof(*s));

	(void)size;
	s->lb = lb;
	s->type = type;
	buf_init(&s->data, 0);
	s->parent.backend = &lb->parent;
	s->parent.mode = GIT_STREAM_WRONLY;
	s->parent.write = bs_write;
	s->parent.finalize_write = bs_finalize;
	s->parent.free = bs_free;
	*out = &s->parent;
	return 0;
}

static int loose_writestream(git_odb_stream **out, git_odb_backend *b, git_object_size_t size,
			     git_object_t type)
{
	struct loose_backend *lb = (struct loose_backend *)b;
	struct loose_wstream *s;
	char hdr[HEADER_MAX];
	int hlen, tries;
	static unsigned counter;

	if (!lb->stream_ok)
		return buffered_stream(out, lb, size, type);
	s = xcalloc(1, sizeof(*s));

	s->lb = lb;
	s->fd = -1;
	s->parent.backend = b;
	s->parent.mode = GIT_STREAM_WRONLY;
	s->parent.write = ws_write;
	s->parent.finalize_write = ws_finalize;
	s->parent.free = ws_free;
	if ((s->tmpdir = fan_dir(lb, 0, 1)) < 0)
		goto os_fail;
	for (tries = 0; tries < 100 && s->fd < 0; tries++) {
		snprintf(s->tmp, sizeof(s->tmp), "tmp_obj_s%ld_%u", (long)getpid(), counter++);
		s->fd = openat(s->tmpdir, s->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			       0444);
		if (s->fd < 0 && errno != EEXIST)
			break;
	}
	if (s->fd < 0) {
		s->tmp[0] = '\0';
		goto os_fail;
	}
	if (deflateInit(&s->z, Z_BEST_SPEED) != Z_OK)
		goto os_fail;
	s->zinit = 1;
	hlen = snprintf(hdr, sizeof(hdr), "%s %llu", git_object_type2string(type),
			(unsigned long long)size) + 1;
	if (ws_deflate(s, hdr, (size_t)hlen, Z_NO_FLUSH) < 0)
		goto os_fail;
	*out = &s->parent;
	return 0;
os_fail:
	git_error_set(GIT_ERROR_OS, "cannot write a checkpoint object: %s",
		      errno ? strerror(errno) : "zlib failed");
	ws_free(&s->parent);
	return GIT_ERROR;
}

int vcs_loose_flush(git_odb_backend *b, size_t max)
{
	struct loose_backend *lb = (struct loose_backend *)b;
	unsigned char dirs[256] = { 0 };
	size_t i;
	int ret = 0;

	if (lb->written_nr > max)
		return 1;
	for (i = 0; i < lb->written_nr && !ret; i++) {
		char hex[GIT_OID_HEXSZ + 1];
		int fd;

		hex_of(hex, &lb->written[i]);
		dirs[lb->written[i].id[0]] = 1;
		fd = open_object(lb, &lb->written[i]);
		if (fd < 0 || fsync(fd) < 0)
			ret = err_set_errno(FX_EOS, "cannot flush checkpoint object %s", hex);
		if (fd >= 0)
			close(fd);
	}
	for (i = 0; i < 256 && !ret; i++) {
		int dfd;

		if (!dirs[i])
			continue;
		dfd = fan_dir(lb, (unsigned)i, 0);
		if (dfd < 0 || fsync(dfd) < 0)
			ret = err_set_errno(FX_EOS, "cannot flush checkpoint objects");
	}
	/* the objects folder itself changed only if a fan-out folder was made */
	if (!ret && lb->made_fan && fsync(lb->objfd) < 0)
		ret = err_set_errno(FX_EOS, "cannot flush checkpoint objects");
	if (!ret)
		lb->written_nr = lb->made_fan = 0;
	return ret;
}

void vcs_loose_allow_stream(git_odb_backend *b, int on)
{
	((struct loose_backend *)b)->stream_ok = on;
}

void vcs_loose_forget_written(git_odb_backend *b)
{
	((struct loose_backend *)b)->written_nr = 0;
	((struct loose_backend *)b)->made_fan = 0;
}

static void loose_free(git_odb_backend *b)
{
	struct loose_backend *lb = (struct loose_backend *)b;
	size_t i;

	for (i = 0; i < 256; i++)
		if (lb->fan[i] >= 0)
			close(lb->fan[i]);
	close(lb->objfd);
	free(lb->written);
	free(lb->damaged);
	free(lb);
}

int vcs_loose_backend(git_odb_backend **out, int objfd)
{
	struct loose_backend *lb = xcalloc(1, sizeof(*lb));
	size_t i;

	for (i = 0; i < 256; i++)
		lb->fan[i] = -1;
	git_odb_init_backend(&lb->parent, GIT_ODB_BACKEND_VERSION);
	lb->objfd = objfd;
	lb->parent.read = loose_read;
	lb->parent.read_prefix = loose_read_prefix;
	lb->parent.read_header = loose_read_header;
	lb->parent.write = loose_write;
	lb->parent.writestream = loose_writestream;
	lb->parent.exists = loose_exists;
	lb->parent.exists_prefix = loose_exists_prefix;
	lb->parent.free = loose_free;
	*out = &lb->parent;
	return 0;
}
