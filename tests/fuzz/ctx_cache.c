/*
 * libFuzzer target for the repository map's cache reader
 * (context/index.h: ctx_cache_parse), the file anyone with write access
 * to the workspace may have made. With the first byte odd, the header's
 * checksum and parameters are set right before parsing, so that the
 * fuzzer gets past them to the structural checks. A cache that is
 * accepted must hold only in-range offsets and ranges, rank and render
 * without a fault (the map is built from it with a request naming some of
 * its symbols), and serialize back to the bytes it was read from.
 *
 * With the first byte's bit 1 set, the input is a delta file instead
 * (ctx_cache_apply_delta), over a small base made in memory; bit 0 then
 * sets its magic, base fields and checksum right. A delta that is
 * accepted must leave an index with in-range ranges that ranks and
 * renders; a refused one leaves the base as it was.
 *
 *   make fuzz && build/fuzz/ctx_cache -max_len=65536 CORPUS_DIR
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "context/index.h"
#include "context/rank.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define HEADER 64

static void check_and_rank(struct ctx_index *idx)
{
	struct ctx_map m = CTX_MAP_INIT;
	struct buf req = BUF_INIT;
	struct ctx_focus f;
	size_t i;

	for (i = 0; i < idx->nfiles; i++) {
		const struct ctx_file *cf = &idx->files[i];

		if ((uint64_t)cf->def0 + cf->ndefs > idx->ndefs ||
		    (uint64_t)cf->ref0 + cf->nrefs > idx->nrefs || cf->path >= idx->arena.len)
			abort();
	}
	for (i = 0; i < idx->nsyms && i < 8; i++)
		buf_addf(&req, "%s %s ", ctx_str(idx, idx->syms[i]),
			 i < idx->nfiles ? ctx_str(idx, idx->files[i].path) : "");
	f.request = req.buf;
	f.files = NULL;
	f.focus = NULL;
	ctx_map_build(&m, idx, &f, 256);
	if (m.tokens > 256)
		abort();
	ctx_map_release(&m);
	buf_release(&req);
}

/* A base of two files with a definition and references each. */
static const char base_src[] =
	"a.c\0b.c\0fa\0fb\0function\0int fa(void)\0int fb(void)\0";

static void put32(unsigned char *p, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static int fuzz_delta(const uint8_t *data, size_t size)
{
	struct ctx_index idx;
	struct buf img = BUF_INIT, in = BUF_INIT;
	struct ctx_file files[2];
	struct ctx_def defs[2];
	struct ctx_ref refs[2];
	uint32_t syms[2] = { 9, 12 };
	unsigned nfiles0;

	memset(&idx, 0, sizeof(idx));
	idx.root.fd = -1;
	buf_init(&idx.arena, 0);
	buf_addch(&idx.arena, '\0');
	buf_add(&idx.arena, base_src, sizeof(base_src) - 1);
	memset(files, 0, sizeof(files));
	files[0].path = 1, files[0].def0 = 0, files[0].ndefs = 1, files[0].ref0 = 0, files[0].nrefs = 1;
	files[1].path = 5, files[1].def0 = 1, files[1].ndefs = 1, files[1].ref0 = 1, files[1].nrefs = 1;
	defs[0] = (struct ctx_def){ 0, 1, 15, 24, 0 };
	defs[1] = (struct ctx_def){ 1, 1, 15, 37, 0 };
	refs[0] = (struct ctx_ref){ 1, 2 };
	refs[1] = (struct ctx_ref){ 0, 1 };
	idx.syms = syms, idx.nsyms = 2;
	idx.files = files, idx.nfiles = 2;
	idx.defs = defs, idx.ndefs = 2;
	idx.refs = refs, idx.nrefs = 2;
	ctx_cache_serialize(&idx, &img);
	buf_release(&idx.arena);
	memset(&idx, 0, sizeof(idx));
	idx.root.fd = -1;
	if (ctx_cache_parse(&idx, (const unsigned char *)img.buf, img.len) < 0)
		abort();
	nfiles0 = (unsigned)idx.nfiles;
	buf_add(&in, data + 1, size - 1);
	if ((data[0] & 1) && in.len >= 112) {
		unsigned char *h = (unsigned char *)in.buf;

		memcpy(h, "FXMAPD1\n", 8);
		memcpy(h + 16, img.buf + 8, 8);			/* the base's checksum */
		put32(h + 24, (uint32_t)idx.base_alen), memset(h + 28, 0, 4);
		put32(h + 32, 2), memset(h + 36, 0, 4);
		put32(h + 40, 2), memset(h + 44, 0, 4);
		put32(h + 48, 2), memset(h + 52, 0, 4);
		put32(h + 56, 2), memset(h + 60, 0, 4);
		ctx_cache_delta_checksum(h, in.len);
	}
	if (ctx_cache_apply_delta(&idx, (const unsigned char *)in.buf, in.len) == 0)
		check_and_rank(&idx);
	else if (idx.nfiles != nfiles0 || idx.arena.len != idx.base_alen || idx.nsyms != 2)
		abort();	/* a refused delta leaves the base as it was */
	ctx_index_clear_data(&idx);
	err_clear();
	buf_release(&in);
	buf_release(&img);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx_index idx;
	struct buf in = BUF_INIT, out = BUF_INIT;

	if (!size)
		return 0;
	if (data[0] & 2)
		return fuzz_delta(data, size);
	buf_add(&in, data + 1, size - 1);
	if ((data[0] & 1) && in.len >= HEADER) {
		struct ctx_index empty;
		struct buf hdr = BUF_INIT;

		memset(&empty, 0, sizeof(empty));
		buf_init(&empty.arena, 0);
		buf_addch(&empty.arena, '\0');
		ctx_cache_serialize(&empty, &hdr);
		memcpy(in.buf, hdr.buf, 8);
		memcpy(in.buf + 16, hdr.buf + 16, 8);	/* the parameters */
		ctx_cache_checksum((unsigned char *)in.buf, in.len);
		buf_release(&hdr);
		buf_release(&empty.arena);
	}
	memset(&idx, 0, sizeof(idx));
	idx.root.fd = -1;
	if (ctx_cache_parse(&idx, (const unsigned char *)in.buf, in.len) == 0) {
		check_and_rank(&idx);
		ctx_cache_serialize(&idx, &out);
		if (out.len != in.len || memcmp(out.buf, in.buf, in.len))
			abort();
		ctx_index_clear_data(&idx);
	} else if (idx.files || idx.defs || idx.refs || idx.syms) {
		abort();	/* a refused cache leaves nothing behind */
	}
	err_clear();
	buf_release(&in);
	buf_release(&out);
	return 0;
}
