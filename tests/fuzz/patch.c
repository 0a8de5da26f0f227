/*
 * libFuzzer target for apply_patch's parser and chunk matching.
 *
 * Input: "FILE\0PATCH". PATCH goes through patch_parse(); a patch that
 * parses must have what the format promises (a path for every hunk, at
 * least one chunk of at least one line for every update). Every Update
 * hunk is then applied to FILE: a failure leaves no output and says why;
 * a success ends with a line end (as Codex writes an updated file) and,
 * for a CR-free FILE ending with one whose chunks only repeat context that
 * matched exactly, gives FILE back.
 * Any crash, leak, sanitizer report or broken promise is a finding.
 *
 *   make fuzz && build/fuzz/patch -max_len=4096 -max_total_time=300 CORPUS_DIR
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/match.h"
#include "tools/patch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int only_context(const struct patch_hunk *h)
{
	size_t i, j;

	for (i = 0; i < h->chunks_nr; i++) {
		const struct patch_chunk *c = &h->chunks[i];

		if (c->old_lines.nr != c->new_lines.nr || !c->old_lines.nr)
			return 0;
		for (j = 0; j < c->old_lines.nr; j++)
			if (strcmp(c->old_lines.v[j], c->new_lines.v[j]))
				return 0;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data, *z = memchr(s, '\0', size);
	const char *file = z ? s : "", *text = z ? z + 1 : s;
	size_t fl = z ? (size_t)(z - s) : 0, tl = size - (size_t)(text - s), i, j;
	struct patch p = PATCH_INIT;
	struct buf why = BUF_INIT;
	int ret = patch_parse(&p, text, tl, &why);

	if (ret < 0) {
		if (p.nr || !why.len)
			abort();
		goto out;
	}
	if (!p.nr || why.len)
		abort();
	for (i = 0; i < p.nr; i++) {
		const struct patch_hunk *h = &p.hunks[i];
		struct buf out = BUF_INIT, w = BUF_INIT, notes = BUF_INIT;
		int worst = -1;

		if (!h->path || !*h->path)
			abort();
		if (h->op != PATCH_UPDATE)
			continue;
		if (!h->chunks_nr)
			abort();
		for (j = 0; j < h->chunks_nr; j++)
			if (!h->chunks[j].old_lines.nr && !h->chunks[j].new_lines.nr)
				abort();
		ret = patch_apply_update(&out, file, fl, h, "f", &worst, &notes, &w);
		if (ret < 0) {
			if (out.len || notes.len || !w.len)
				abort();
		} else {
			if (w.len || worst < MATCH_EXACT || worst > MATCH_UNICODE)
				abort();
			if (out.len && out.buf[out.len - 1] != '\n')
				abort();
			if (worst == MATCH_EXACT && only_context(h) && !memchr(file, '\r', fl) &&
			    fl && file[fl - 1] == '\n' &&
			    !memchr(file, '\0', fl) && (out.len != fl || memcmp(out.buf, file, fl)))
				abort();
		}
		buf_release(&out);
		buf_release(&w);
		buf_release(&notes);
	}
out:
	patch_release(&p);
	buf_release(&why);
	err_clear();
	return 0;
}
