/*
 * The cache file of the symbol index (see index.h).
 *
 * Layout, all integers little-endian:
 *
 *   "FXMAP03\n"                       8 bytes
 *   u64 hash                          sum_hash() of the sum_hash() of the five sections
 *   u64 params                        ctx_hash() of the ctags arguments and limits:
 *                                     another forgex's cache is rebuilt, not trusted
 *   u64 arena_len, nsyms, nfiles, ndefs, nrefs
 *   arena                             arena_len bytes of NUL-terminated strings
 *   nsyms  x u32                      arena offset of each symbol's name
 *   nfiles x { u32 path, flags, def0, ndefs, ref0, nrefs;
 *              u64 size, ino, hash; i64 mtime_sec; u32 mtime_nsec, 0 } (64 bytes)
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
#include <sys/uio.h>
#include <unistd.h>

#include "base/err.h"
#include "base/fsutil.h"
#include "context/ctags.h"
#include "context/index.h"
#include "context/tokenize.h"

#define MAGIC "FXMAP03\n"
#define HEADER (8 + 8 + 8 + 5 * 8)
#define FILE_REC 64
#define DEF_REC 20
#define REF_REC 8

/*
 * The records on disk are the structs in memory on a little-endian
 * machine, so the arrays are read and written whole; a big-endian one
 * swaps them.
 */
_Static_assert(sizeof(struct ctx_file) == FILE_REC, "ctx_file is the file record");
_Static_assert(sizeof(struct ctx_def) == DEF_REC, "ctx_def is the definition record");
_Static_assert(sizeof(struct ctx_ref) == REF_REC, "ctx_ref is the reference record");

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define CACHE_SWAP 1
#else
#define CACHE_SWAP 0
#endif

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

static void put64_at(unsigned char *p, uint64_t v)
{
	int i;

	for (i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static inline uint64_t get64(const unsigned char *p)
{
	uint64_t v = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy(&v, p, 8);
#else
	int i;

	for (i = 0; i < 8; i++)
		v |= (uint64_t)p[i] << (8 * i);
#endif
	return v;
}

/* Swap every 4-byte word (a big-endian machine; the 8-byte fields are two words swapped back). */
static void swap_words(void *data, size_t bytes)
{
	uint32_t *w = data;
	size_t i;

	for (i = 0; i < bytes / 4; i++)
		w[i] = __builtin_bswap32(w[i]);
}

static void swap_files(struct ctx_file *f, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		f[i].path = __builtin_bswap32(f[i].path);
		f[i].flags = __builtin_bswap32(f[i].flags);
		f[i].def0 = __builtin_bswap32(f[i].def0);
		f[i].ndefs = __builtin_bswap32(f[i].ndefs);
		f[i].ref0 = __builtin_bswap32(f[i].ref0);
		f[i].nrefs = __builtin_bswap32(f[i].nrefs);
		f[i].size = __builtin_bswap64(f[i].size);
		f[i].ino = __builtin_bswap64(f[i].ino);
		f[i].hash = __builtin_bswap64(f[i].hash);
		f[i].mtime_sec = (int64_t)__builtin_bswap64((uint64_t)f[i].mtime_sec);
		f[i].mtime_nsec = __builtin_bswap32(f[i].mtime_nsec);
		f[i].pad = 0;
	}
}

/*
 * The checksum of a section: four independent multiply-xorshift lanes over
 * 32-byte blocks, so that the multiplications overlap (about four times
 * ctx_hash()'s speed, which chains every word on the one before): 75 MB
 * of cache in a few milliseconds. Not a defence against a forger (the
 * checks behind it are); it catches a file cut or damaged by a crash.
 */
static inline uint64_t lane(uint64_t h, uint64_t w)
{
	h = (h ^ (w * 0x9fb21c651e98df25ull)) * 0xc2b2ae3d27d4eb4full;
	return h ^ (h >> 29);
}

static uint64_t sum_hash(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t a = 0x9e3779b97f4a7c15ull ^ len, b = 0xbf58476d1ce4e5b9ull, c = 0x94d049bb133111ebull,
		 d = 0x2545f4914f6cdd1dull;
	size_t i;

	for (i = 0; i + 32 <= len; i += 32) {
		a = lane(a, get64(p + i));
		b = lane(b, get64(p + i + 8));
		c = lane(c, get64(p + i + 16));
		d = lane(d, get64(p + i + 24));
	}
	for (; i + 8 <= len; i += 8)
		a = lane(a, get64(p + i));
	if (i < len) {
		unsigned char tail[8] = { 0 };

		memcpy(tail, p + i, len - i);
		b = lane(b, get64(tail));
	}
	a = lane(a, b);
	a = lane(a, c);
	a = lane(a, d);
	return ctx_hash(&a, sizeof(a));
}

/* The checksum: sum_hash() of the five sections' sum_hash(). */
static uint64_t body_hash(const void *arena, size_t alen, const void *syms, size_t nsyms,
			  const void *files, size_t nfiles, const void *defs, size_t ndefs,
			  const void *refs, size_t nrefs)
{
	unsigned char h[40];

	put64_at(h, sum_hash(arena, alen));
	put64_at(h + 8, sum_hash(syms, 4 * nsyms));
	put64_at(h + 16, sum_hash(files, FILE_REC * nfiles));
	put64_at(h + 24, sum_hash(defs, DEF_REC * ndefs));
	put64_at(h + 32, sum_hash(refs, REF_REC * nrefs));
	return sum_hash(h, sizeof(h));
}

/* Append `n` bytes of little-endian records; a big-endian machine swaps a copy. */
static void add_le(struct buf *out, const void *data, size_t n, int files)
{
	size_t at = out->len;

	if (!n)
		return;
	buf_add(out, data, n);
	if (CACHE_SWAP) {
		if (files)
			swap_files((struct ctx_file *)(void *)(out->buf + at), n / FILE_REC);
		else
			swap_words(out->buf + at, n);
	}
}

void ctx_cache_serialize(const struct ctx_index *idx, struct buf *out)
{
	size_t start = out->len, body, i;
	unsigned char hdr[HEADER];
	const char *b;

	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, MAGIC, 8);
	put64_at(hdr + 16, params_hash());
	put64_at(hdr + 24, idx->arena.len);
	put64_at(hdr + 32, idx->nsyms);
	put64_at(hdr + 40, idx->nfiles);
	put64_at(hdr + 48, idx->ndefs);
	put64_at(hdr + 56, idx->nrefs);
	buf_grow(out, HEADER + idx->arena.len + 4 * idx->nsyms + FILE_REC * idx->nfiles +
		 DEF_REC * idx->ndefs + REF_REC * idx->nrefs);
	buf_add(out, hdr, HEADER);
	body = out->len;
	buf_add(out, idx->arena.buf, idx->arena.len);
	add_le(out, idx->syms, 4 * idx->nsyms, 0);
	i = out->len;
	add_le(out, idx->files, FILE_REC * idx->nfiles, 1);
	for (; i < out->len; i += FILE_REC)
		memset(out->buf + i + 60, 0, 4);	/* the in-memory pad is nobody's business */
	add_le(out, idx->defs, DEF_REC * idx->ndefs, 0);
	add_le(out, idx->refs, REF_REC * idx->nrefs, 0);
	b = out->buf + body;
	put64_at((unsigned char *)out->buf + start + 8,
		 body_hash(b, idx->arena.len, b + idx->arena.len, idx->nsyms,
			   b + idx->arena.len + 4 * idx->nsyms, idx->nfiles,
			   b + idx->arena.len + 4 * idx->nsyms + FILE_REC * idx->nfiles, idx->ndefs,
			   b + idx->arena.len + 4 * idx->nsyms + FILE_REC * idx->nfiles +
			   DEF_REC * idx->ndefs, idx->nrefs));
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
	FREE_AND_NULL(idx->in_base);
	idx->have_base = 0;
	idx->base_hash = 0;
	idx->base_alen = idx->base_nsyms = idx->base_nfiles = 0;
	idx->base_ndefs = idx->base_nrefs = idx->base_bytes = 0;
	idx->nsyms = idx->asyms = idx->nfiles = idx->afiles = 0;
	idx->ndefs = idx->adefs = idx->nrefs = idx->arefs = 0;
	idx->symtab_size = idx->kindtab_size = idx->nkinds = 0;
}

/* What `idx` holds now is the base: the file it was read from or written to whole. */
static void set_base(struct ctx_index *idx, uint64_t hash, size_t bytes)
{
	size_t i;

	free(idx->in_base);
	idx->in_base = xmalloc((idx->nfiles ? idx->nfiles : 1) * sizeof(*idx->in_base));
	for (i = 0; i < idx->nfiles; i++)
		idx->in_base[i] = (uint32_t)(i + 1);
	idx->have_base = !CACHE_SWAP;	/* deltas on little-endian machines only */
	idx->base_hash = hash;
	idx->base_alen = idx->arena.len;
	idx->base_nsyms = idx->nsyms;
	idx->base_nfiles = idx->nfiles;
	idx->base_ndefs = idx->ndefs;
	idx->base_nrefs = idx->nrefs;
	idx->base_bytes = bytes;
}

#define BAD(...) do { ret = err_set(FX_EPARSE, "repository map cache: " __VA_ARGS__); goto fail; } while (0)

/* Where the sections come from: memory, or a file read straight into the arrays. */
struct src {
	const unsigned char *p;
	size_t left;
	int fd;
};

static int src_read(struct src *s, void *dst, size_t n)
{
	if (s->fd < 0) {
		if (n > s->left)
			return -1;
		memcpy(dst, s->p, n);
		s->p += n;
		s->left -= n;
		return 0;
	}
	while (n) {
		ssize_t r = read(s->fd, dst, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		dst = (char *)dst + r;
		n -= (size_t)r;
	}
	return 0;
}

static int parse_from(struct ctx_index *idx, struct src *src, size_t len)
{
	unsigned char hdr[HEADER];
	uint64_t alen, nsyms, nfiles, ndefs, nrefs, need;
	size_t i;
	int ret;

	if (len < HEADER || src_read(src, hdr, HEADER) || memcmp(hdr, MAGIC, 8))
		return err_set(FX_EPARSE, "repository map cache: not a cache file (or another version)");
	if (get64(hdr + 16) != params_hash())
		return err_set(FX_EPARSE, "repository map cache: made with other ctags options");
	alen = get64(hdr + 24);
	nsyms = get64(hdr + 32);
	nfiles = get64(hdr + 40);
	ndefs = get64(hdr + 48);
	nrefs = get64(hdr + 56);
	if (alen > len || nsyms > len || nfiles > len || ndefs > len || nrefs > len ||
	    alen > UINT32_MAX || nsyms > UINT32_MAX || nfiles > UINT32_MAX || ndefs > UINT32_MAX ||
	    nrefs > UINT32_MAX)
		return err_set(FX_EPARSE, "repository map cache: counts larger than the file");
	need = HEADER + alen + 4 * nsyms + FILE_REC * nfiles + DEF_REC * ndefs + REF_REC * nrefs;
	if (need != len)
		return err_set(FX_EPARSE, "repository map cache: %zu bytes, the counts say %llu",
			       len, (unsigned long long)need);
	if (!alen)
		return err_set(FX_EPARSE, "repository map cache: bad string table");

	buf_init(&idx->arena, (size_t)alen + 1);
	idx->syms = xmalloc((size_t)(nsyms ? nsyms : 1) * sizeof(*idx->syms));
	idx->files = xmalloc((size_t)(nfiles ? nfiles : 1) * sizeof(*idx->files));
	idx->defs = xmalloc((size_t)(ndefs ? ndefs : 1) * sizeof(*idx->defs));
	idx->refs = xmalloc((size_t)(nrefs ? nrefs : 1) * sizeof(*idx->refs));
	if (src_read(src, idx->arena.buf, (size_t)alen) ||
	    src_read(src, idx->syms, (size_t)(4 * nsyms)) ||
	    src_read(src, idx->files, (size_t)(FILE_REC * nfiles)) ||
	    src_read(src, idx->defs, (size_t)(DEF_REC * ndefs)) ||
	    src_read(src, idx->refs, (size_t)(REF_REC * nrefs)))
		BAD("cut short while reading");
	buf_setlen(&idx->arena, (size_t)alen);
	if (get64(hdr + 8) != body_hash(idx->arena.buf, (size_t)alen, idx->syms, (size_t)nsyms,
					 idx->files, (size_t)nfiles, idx->defs, (size_t)ndefs,
					 idx->refs, (size_t)nrefs))
		BAD("checksum mismatch");
	if (CACHE_SWAP) {
		swap_words(idx->syms, 4 * nsyms);
		swap_files(idx->files, nfiles);
		swap_words(idx->defs, DEF_REC * ndefs);
		swap_words(idx->refs, REF_REC * nrefs);
	}
	if (idx->arena.buf[0] != 0 || idx->arena.buf[alen - 1] != 0)
		BAD("bad string table");
	idx->nsyms = idx->asyms = (size_t)nsyms;
	idx->nfiles = idx->afiles = (size_t)nfiles;
	idx->ndefs = idx->adefs = (size_t)ndefs;
	idx->nrefs = idx->arefs = (size_t)nrefs;
	for (i = 0; i < nsyms; i++)
		if (idx->syms[i] >= alen)
			BAD("symbol %zu out of range", i);
	for (i = 0; i < nfiles; i++) {
		struct ctx_file *f = &idx->files[i];

		if (f->pad)
			BAD("file %zu: padding not zero", i);
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
	for (i = 0; i < ndefs; i++) {
		const struct ctx_def *d = &idx->defs[i];

		if (d->sym >= nsyms || d->kind >= alen || d->text >= alen || !d->line)
			BAD("definition %zu out of range", i);
	}
	for (i = 0; i < nrefs; i++)
		if (idx->refs[i].sym >= nsyms || !idx->refs[i].count)
			BAD("reference %zu out of range", i);
	set_base(idx, get64(hdr + 8), len);
	return 0;
fail:
	ctx_index_clear_data(idx);
	return ret;
}

void ctx_cache_checksum(unsigned char *data, size_t len)
{
	uint64_t alen, nsyms, nfiles, ndefs, nrefs;
	const unsigned char *b = data + HEADER;

	if (len < HEADER)
		return;
	alen = get64(data + 24);
	nsyms = get64(data + 32);
	nfiles = get64(data + 40);
	ndefs = get64(data + 48);
	nrefs = get64(data + 56);
	if (alen > len || nsyms > len || nfiles > len || ndefs > len || nrefs > len ||
	    HEADER + alen + 4 * nsyms + FILE_REC * nfiles + DEF_REC * ndefs + REF_REC * nrefs != len)
		return;
	put64_at(data + 8, body_hash(b, alen, b + alen, nsyms, b + alen + 4 * nsyms, nfiles,
				     b + alen + 4 * nsyms + FILE_REC * nfiles, ndefs,
				     b + alen + 4 * nsyms + FILE_REC * nfiles + DEF_REC * ndefs, nrefs));
}

int ctx_cache_parse(struct ctx_index *idx, const unsigned char *data, size_t len)
{
	struct src src = { data, len, -1 };

	return parse_from(idx, &src, len);
}

/*
 * The delta file, .forgex/map/delta: what an index differs by from its
 * base, so that one file changed among 100,000 writes a few kilobytes, not
 * the whole cache again. All integers little-endian, records as in the
 * base:
 *
 *   "FXMAPD1\n"                       8 bytes
 *   u64 hash                          sum_hash() of the sections' sum_hash()
 *   u64 base_hash                     the checksum of the base it extends
 *   u64 base arena_len, nsyms, nfiles, ndefs, nrefs
 *   u64 arena_len, nsyms, ndropped, nfiles, ndefs, nrefs
 *   arena                             strings appended to the base's (offsets
 *                                     in the records count from the base's start)
 *   nsyms    x u32                    symbols appended to the base's
 *   ndropped x u32                    base files that are gone or replaced, ascending
 *   nfiles   x file record            the files not taken from the base as they
 *                                     were, sorted; ranges in the delta's arrays
 *   ndefs    x definition record
 *   nrefs    x reference record
 *
 * It counts only over the base whose checksum and counts it names (a run
 * that wrote a new base removes it; one of another base is ignored), and
 * is checked like the base: any failure and the base alone is used.
 */
#define DMAGIC "FXMAPD1\n"
#define DHEADER (8 + 8 + 8 + 5 * 8 + 6 * 8)

static uint64_t delta_hash(const unsigned char *b, const uint64_t *n)
{
	unsigned char h[48];
	size_t at = 0, k;
	static const size_t rec[6] = { 1, 4, 4, FILE_REC, DEF_REC, REF_REC };

	for (k = 0; k < 6; k++) {
		put64_at(h + 8 * k, sum_hash(b + at, (size_t)(rec[k] * n[k])));
		at += (size_t)(rec[k] * n[k]);
	}
	return sum_hash(h, sizeof(h));
}

void ctx_cache_delta_checksum(unsigned char *data, size_t len)
{
	uint64_t n[6], need;
	size_t k;

	if (len < DHEADER)
		return;
	for (k = 0; k < 6; k++) {
		n[k] = get64(data + 64 + 8 * k);
		if (n[k] > len)
			return;
	}
	need = DHEADER + n[0] + 4 * (n[1] + n[2]) + FILE_REC * n[3] + DEF_REC * n[4] +
	       REF_REC * n[5];
	if (need == len)
		put64_at(data + 8, delta_hash(data + DHEADER, n));
}

int ctx_cache_delta(const struct ctx_index *idx, struct buf *out)
{
	unsigned char hdr[DHEADER];
	unsigned char *kept;
	uint64_t n[6];
	size_t i, start = out->len, nd = 0, nr = 0, body;

	if (!idx->have_base || CACHE_SWAP || idx->arena.len < idx->base_alen ||
	    idx->nsyms < idx->base_nsyms)
		return err_set(FX_EINVAL, "repository map cache: no base for a delta");
	kept = xcalloc(idx->base_nfiles ? idx->base_nfiles : 1, 1);
	n[0] = idx->arena.len - idx->base_alen;
	n[1] = idx->nsyms - idx->base_nsyms;
	n[2] = n[3] = n[4] = n[5] = 0;
	for (i = 0; i < idx->nfiles; i++) {
		uint32_t b = idx->in_base ? idx->in_base[i] : 0;

		if (b && b <= idx->base_nfiles) {
			kept[b - 1] = 1;
			continue;
		}
		n[3]++;
		n[4] += idx->files[i].ndefs;
		n[5] += idx->files[i].nrefs;
	}
	for (i = 0; i < idx->base_nfiles; i++)
		n[2] += !kept[i];
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, DMAGIC, 8);
	put64_at(hdr + 16, idx->base_hash);
	put64_at(hdr + 24, idx->base_alen);
	put64_at(hdr + 32, idx->base_nsyms);
	put64_at(hdr + 40, idx->base_nfiles);
	put64_at(hdr + 48, idx->base_ndefs);
	put64_at(hdr + 56, idx->base_nrefs);
	for (i = 0; i < 6; i++)
		put64_at(hdr + 64 + 8 * i, n[i]);
	buf_grow(out, DHEADER + n[0] + 4 * (n[1] + n[2]) + FILE_REC * n[3] + DEF_REC * n[4] +
		 REF_REC * n[5]);
	buf_add(out, hdr, DHEADER);
	body = out->len;
	buf_add(out, idx->arena.buf + idx->base_alen, (size_t)n[0]);
	buf_add(out, idx->syms + idx->base_nsyms, (size_t)(4 * n[1]));
	for (i = 0; i < idx->base_nfiles; i++)
		if (!kept[i]) {
			uint32_t v = (uint32_t)i;

			buf_add(out, &v, 4);
		}
	for (i = 0; i < idx->nfiles; i++) {
		struct ctx_file f = idx->files[i];
		uint32_t b = idx->in_base ? idx->in_base[i] : 0;

		if (b && b <= idx->base_nfiles)
			continue;
		f.def0 = (uint32_t)nd;
		f.ref0 = (uint32_t)nr;
		f.pad = 0;
		nd += f.ndefs;
		nr += f.nrefs;
		buf_add(out, &f, FILE_REC);
	}
	for (i = 0; i < idx->nfiles; i++) {
		const struct ctx_file *f = &idx->files[i];
		uint32_t b = idx->in_base ? idx->in_base[i] : 0;

		if (!(b && b <= idx->base_nfiles) && f->ndefs)
			buf_add(out, idx->defs + f->def0, DEF_REC * (size_t)f->ndefs);
	}
	for (i = 0; i < idx->nfiles; i++) {
		const struct ctx_file *f = &idx->files[i];
		uint32_t b = idx->in_base ? idx->in_base[i] : 0;

		if (!(b && b <= idx->base_nfiles) && f->nrefs)
			buf_add(out, idx->refs + f->ref0, REF_REC * (size_t)f->nrefs);
	}
	put64_at((unsigned char *)out->buf + start + 8,
		 delta_hash((const unsigned char *)out->buf + body, n));
	free(kept);
	return 0;
}

#undef BAD
#define BAD(...) do { ret = err_set(FX_EPARSE, "repository map delta: " __VA_ARGS__); goto fail; } while (0)

int ctx_cache_apply_delta(struct ctx_index *idx, const unsigned char *data, size_t len)
{
	uint64_t n[6], need;
	const unsigned char *p;
	const uint32_t *dropped;
	const struct ctx_file *dfiles;
	struct ctx_file *files = NULL;
	uint32_t *in_base = NULL;
	size_t i, k, alen, nsyms, nf = 0, bi, di, xi, old_ndefs = idx->ndefs;
	int ret;

	if (CACHE_SWAP || !idx->have_base)
		return err_set(FX_EPARSE, "repository map delta: no base");
	if (len < DHEADER || memcmp(data, DMAGIC, 8))
		return err_set(FX_EPARSE, "repository map delta: not a delta file (or another version)");
	if (get64(data + 16) != idx->base_hash || get64(data + 24) != idx->base_alen ||
	    get64(data + 32) != idx->base_nsyms || get64(data + 40) != idx->base_nfiles ||
	    get64(data + 48) != idx->base_ndefs || get64(data + 56) != idx->base_nrefs)
		return err_set(FX_EPARSE, "repository map delta: made for another base");
	/* the index must be the base as read, untouched */
	if (idx->arena.len != idx->base_alen || idx->nsyms != idx->base_nsyms ||
	    idx->nfiles != idx->base_nfiles || idx->ndefs != idx->base_ndefs ||
	    idx->nrefs != idx->base_nrefs)
		return err_set(FX_EPARSE, "repository map delta: the index is not its base");
	for (k = 0; k < 6; k++) {
		n[k] = get64(data + 64 + 8 * k);
		if (n[k] > len)
			return err_set(FX_EPARSE, "repository map delta: counts larger than the file");
	}
	need = DHEADER + n[0] + 4 * (n[1] + n[2]) + FILE_REC * n[3] + DEF_REC * n[4] +
	       REF_REC * n[5];
	if (need != len)
		return err_set(FX_EPARSE, "repository map delta: %zu bytes, the counts say %llu", len,
			       (unsigned long long)need);
	p = data + DHEADER;
	if (get64(data + 8) != delta_hash(p, n))
		return err_set(FX_EPARSE, "repository map delta: checksum mismatch");
	if (idx->base_alen + n[0] > UINT32_MAX || idx->base_nsyms + n[1] > UINT32_MAX ||
	    idx->ndefs + n[4] > UINT32_MAX || idx->nrefs + n[5] > UINT32_MAX ||
	    n[2] > idx->base_nfiles)
		return err_set(FX_EPARSE, "repository map delta: counts out of range");
	if (n[0] && p[n[0] - 1])
		return err_set(FX_EPARSE, "repository map delta: bad string table");

	/* the strings and symbols go after the base's; taken back on failure */
	buf_add(&idx->arena, p, (size_t)n[0]);
	p += n[0];
	ALLOC_GROW(idx->syms, idx->nsyms + (size_t)n[1], idx->asyms);
	memcpy(idx->syms + idx->nsyms, p, (size_t)(4 * n[1]));
	idx->nsyms += (size_t)n[1];
	p += 4 * n[1];
	alen = idx->arena.len;
	nsyms = idx->nsyms;
	{
		/* the image may sit anywhere in memory: read the records from aligned copies */
		uint32_t *dcopy = xmalloc((size_t)(n[2] ? 4 * n[2] : 1));
		struct ctx_file *fcopy = xmalloc((size_t)(n[3] ? FILE_REC * n[3] : 1));

		memcpy(dcopy, p, (size_t)(4 * n[2]));
		memcpy(fcopy, p + 4 * n[2], (size_t)(FILE_REC * n[3]));
		dropped = dcopy;
		dfiles = fcopy;
	}
	p += 4 * n[2] + FILE_REC * n[3];
	for (i = idx->base_nsyms; i < nsyms; i++)
		if (idx->syms[i] >= alen)
			BAD("symbol %zu out of range", i);
	for (i = 0; i < n[2]; i++)
		if (dropped[i] >= idx->base_nfiles || (i && dropped[i] <= dropped[i - 1]))
			BAD("dropped file %zu out of order", i);
	for (i = 0; i < n[3]; i++) {
		const struct ctx_file *f = &dfiles[i];

		if (f->pad)
			BAD("file %zu: padding not zero", i);
		if (f->path >= alen || !clean_path(idx->arena.buf + f->path))
			BAD("file %zu: bad path", i);
		if (i && strcmp(idx->arena.buf + dfiles[i - 1].path, idx->arena.buf + f->path) >= 0)
			BAD("files not sorted at %zu", i);
		if ((uint64_t)f->def0 + f->ndefs > n[4] || (uint64_t)f->ref0 + f->nrefs > n[5])
			BAD("file %zu: ranges out of bounds", i);
		if (f->mtime_nsec >= 1000000000u)
			BAD("file %zu: bad mtime", i);
		if (f->flags & ~(uint32_t)(CTX_F_NOTAGS | CTX_F_SKIP))
			BAD("file %zu: unknown flags", i);
	}
	for (i = 0; i < n[4]; i++) {
		struct ctx_def d;

		memcpy(&d, p + DEF_REC * i, DEF_REC);
		if (d.sym >= nsyms || d.kind >= alen || d.text >= alen || !d.line)
			BAD("definition %zu out of range", i);
	}
	for (i = 0; i < n[5]; i++) {
		struct ctx_ref r;

		memcpy(&r, p + DEF_REC * n[4] + REF_REC * i, REF_REC);
		if (r.sym >= nsyms || !r.count)
			BAD("reference %zu out of range", i);
	}
	/* the base's files less the dropped ones, merged with the delta's, in path order */
	files = xmalloc((idx->base_nfiles - n[2] + n[3] + 1) * sizeof(*files));
	in_base = xmalloc((idx->base_nfiles - n[2] + n[3] + 1) * sizeof(*in_base));
	for (bi = di = xi = 0; bi < idx->base_nfiles || xi < n[3];) {
		int c;

		if (bi < idx->base_nfiles && di < n[2] && dropped[di] == bi) {
			bi++, di++;
			continue;
		}
		if (bi >= idx->base_nfiles)
			c = 1;
		else if (xi >= n[3])
			c = -1;
		else
			c = strcmp(idx->arena.buf + idx->files[bi].path,
				   idx->arena.buf + dfiles[xi].path);
		if (!c)
			BAD("file '%s' both kept and replaced", idx->arena.buf + dfiles[xi].path);
		if (c < 0) {
			files[nf] = idx->files[bi];
			in_base[nf++] = (uint32_t)(bi + 1);
			bi++;
		} else {
			files[nf] = dfiles[xi++];
			files[nf].def0 += (uint32_t)old_ndefs;
			files[nf].ref0 += (uint32_t)idx->nrefs;
			in_base[nf++] = 0;
		}
	}
	ALLOC_GROW(idx->defs, idx->ndefs + (size_t)n[4], idx->adefs);
	memcpy(idx->defs + idx->ndefs, p, (size_t)(DEF_REC * n[4]));
	idx->ndefs += (size_t)n[4];
	ALLOC_GROW(idx->refs, idx->nrefs + (size_t)n[5], idx->arefs);
	memcpy(idx->refs + idx->nrefs, p + DEF_REC * n[4], (size_t)(REF_REC * n[5]));
	idx->nrefs += (size_t)n[5];
	free(idx->files);
	idx->files = files;
	idx->nfiles = idx->afiles = nf;
	free(idx->in_base);
	idx->in_base = in_base;
	free((void *)dropped);
	free((void *)dfiles);
	return 0;
fail:
	free(files);
	free(in_base);
	free((void *)dropped);
	free((void *)dfiles);
	buf_setlen(&idx->arena, idx->base_alen);
	idx->nsyms = idx->base_nsyms;
	return ret;
}

#undef BAD

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

/* Read .forgex/map/delta whole, the same way as the base, and apply it if it is good. */
static void load_delta(struct ctx_index *idx)
{
	struct stat st;
	struct buf b = BUF_INIT;
	int dfd = open_map_dir(idx, 0), fd;

	if (dfd < 0) {
		err_clear();
		return;
	}
	fd = openat(dfd, "delta", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size <= CTX_CACHE_MAX &&
	    (uint64_t)st.st_size <= idx->base_bytes + DHEADER) {
		struct src src = { NULL, 0, fd };

		buf_grow(&b, (size_t)st.st_size + 1);
		if (src_read(&src, b.buf, (size_t)st.st_size) == 0 &&
		    ctx_cache_apply_delta(idx, (unsigned char *)b.buf, (size_t)st.st_size) == 0)
			idx->stats.delta_loaded = 1;
	}
	err_clear();	/* a bad delta: the base alone, and the files it missed are read again */
	close(fd);
	buf_release(&b);
}

int ctx_cache_load(struct ctx_index *idx)
{
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
	{
		/* straight into the arrays: no second copy of a large cache */
		struct src src = { NULL, 0, fd };

		ret = parse_from(idx, &src, (size_t)st.st_size);
	}
	close(fd);
	if (ret == 0)
		load_delta(idx);
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

		if (strncmp(de->d_name, "index.tmp.", 10) && strncmp(de->d_name, "delta.tmp.", 10))
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

/* Write the iovecs whole (writev may stop short, and takes at most IOV_MAX). */
static int writev_all(int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		ssize_t w = writev(fd, iov, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return err_set_errno(FX_EOS, "cannot write the repository map cache");
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= (ssize_t)iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= (size_t)w;
		}
	}
	return 0;
}

/*
 * Whether the arrays in memory are the records on disk as they are (a
 * little-endian machine, every pad zero): then they are written straight
 * from where they are, with no image built (75 MB at 100,000 files).
 */
static int direct_ok(const struct ctx_index *idx)
{
	size_t i;

	if (CACHE_SWAP)
		return 0;
	for (i = 0; i < idx->nfiles; i++)
		if (idx->files[i].pad)
			return 0;
	return 1;
}

/* Write `iov` to a new temporary file in `dfd` and rename it over `name`. */
static int write_replace(int dfd, const char *name, struct iovec *iov, int niov)
{
	static unsigned seq;
	char tmp[64];
	int fd, ret;

	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld.%u.%lx", name, (long)getpid(),
		 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED), (unsigned long)time(NULL));
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return err_set_errno(FX_EOS, "cannot create the repository map cache");
	ret = writev_all(fd, iov, niov);
	if (close(fd) < 0 && !ret)
		ret = err_set_errno(FX_EOS, "cannot write the repository map cache");
	if (ret < 0) {
		unlinkat(dfd, tmp, 0);
		return ret;
	}
	/*
	 * No fsync: the cache can always be rebuilt, and a file cut by a crash
	 * fails the size or checksum test and is rebuilt. The rename is what
	 * matters: a reader sees the old file or the new one.
	 */
	if (renameat(dfd, tmp, dfd, name) < 0) {
		ret = err_set_errno(FX_EOS, "cannot replace the repository map cache");
		unlinkat(dfd, tmp, 0);
	}
	return ret;
}

/* A delta is written instead of the whole cache while it is at most this share of the base. */
#define DELTA_SHARE 8

int ctx_cache_save(struct ctx_index *idx)
{
	struct buf img = BUF_INIT;
	unsigned char hdr[HEADER];
	struct iovec iov[6];
	int dfd = open_map_dir(idx, 1), ret, niov = 0;
	uint64_t hash = 0;

	if (dfd < 0)
		return dfd;
	remove_stale(dfd);
	if (idx->have_base && ctx_cache_delta(idx, &img) == 0 &&
	    img.len <= idx->base_bytes / DELTA_SHARE) {
		iov[0] = (struct iovec){ img.buf, img.len };
		ret = write_replace(dfd, "delta", iov, 1);
		if (ret == 0)
			idx->stats.delta_saved = 1;
		goto out;
	}
	err_clear();
	buf_reset(&img);
	if (direct_ok(idx)) {
		memset(hdr, 0, sizeof(hdr));
		memcpy(hdr, MAGIC, 8);
		hash = body_hash(idx->arena.buf, idx->arena.len, idx->syms, idx->nsyms, idx->files,
				 idx->nfiles, idx->defs, idx->ndefs, idx->refs, idx->nrefs);
		put64_at(hdr + 8, hash);
		put64_at(hdr + 16, params_hash());
		put64_at(hdr + 24, idx->arena.len);
		put64_at(hdr + 32, idx->nsyms);
		put64_at(hdr + 40, idx->nfiles);
		put64_at(hdr + 48, idx->ndefs);
		put64_at(hdr + 56, idx->nrefs);
		iov[niov++] = (struct iovec){ hdr, HEADER };
		iov[niov++] = (struct iovec){ idx->arena.buf, idx->arena.len };
		iov[niov++] = (struct iovec){ idx->syms, 4 * idx->nsyms };
		iov[niov++] = (struct iovec){ idx->files, FILE_REC * idx->nfiles };
		iov[niov++] = (struct iovec){ idx->defs, DEF_REC * idx->ndefs };
		iov[niov++] = (struct iovec){ idx->refs, REF_REC * idx->nrefs };
	} else {
		ctx_cache_serialize(idx, &img);
		hash = get64((unsigned char *)img.buf + 8);
		iov[niov++] = (struct iovec){ img.buf, img.len };
	}
	ret = write_replace(dfd, "index", iov, niov);
	if (ret == 0) {
		size_t bytes = 0;
		int k;

		/* the old delta was made for the old base (and is ignored): gone */
		if (unlinkat(dfd, "delta", 0) < 0 && errno != ENOENT)
			err_clear();
		for (k = 0; k < niov; k++)
			bytes += iov[k].iov_len;
		set_base(idx, hash, bytes);
	}
out:
	close(dfd);
	buf_release(&img);
	return ret;
}
