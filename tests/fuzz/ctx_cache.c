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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctx_index idx;
	struct buf in = BUF_INIT, out = BUF_INIT;
	size_t i;

	if (!size)
		return 0;
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
		struct ctx_map m = CTX_MAP_INIT;
		struct buf req = BUF_INIT;
		struct ctx_focus f;

		for (i = 0; i < idx.nfiles; i++) {
			const struct ctx_file *cf = &idx.files[i];

			if ((uint64_t)cf->def0 + cf->ndefs > idx.ndefs ||
			    (uint64_t)cf->ref0 + cf->nrefs > idx.nrefs || cf->path >= idx.arena.len)
				abort();
		}
		for (i = 0; i < idx.nsyms && i < 8; i++)
			buf_addf(&req, "%s %s ", ctx_str(&idx, idx.syms[i]),
				 i < idx.nfiles ? ctx_str(&idx, idx.files[i].path) : "");
		f.request = req.buf;
		f.files = NULL;
		f.focus = NULL;
		ctx_map_build(&m, &idx, &f, 256);
		if (m.tokens > 256)
			abort();
		ctx_map_release(&m);
		buf_release(&req);
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
