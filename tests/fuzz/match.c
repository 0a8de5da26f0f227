/*
 * libFuzzer target for edit_file's matcher chain (match_apply()).
 *
 * Input: one byte of flags (bit 0 replace_all, the rest start_line),
 * then "FILE\0OLD\0NEW". A failure leaves no text and says why; a success
 * made at least one replacement, at a line of the new text. An exact,
 * unique, single-line-ended match that does not reach the file's end gives
 * the file with old_string replaced, byte for byte.
 * Any crash, leak, sanitizer report or broken promise is a finding.
 *
 *   make fuzz && build/fuzz/match -max_len=4096 -max_total_time=300 CORPUS_DIR
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tools/match.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Where `old` occurs in `text` when it occurs exactly once; else -1. */
static long only_place(const char *text, size_t len, const char *old, size_t n)
{
	const char *p = memmem(text, len, old, n);

	if (!p)
		return -1;
	if (memmem(p + 1, len - (size_t)(p + 1 - text), old, n))
		return -1;
	return p - text;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data + 1, *z1, *z2, *text, *old, *new_text;
	size_t n, tl, ol, nl;
	struct match_result r = MATCH_RESULT_INIT;
	struct buf why = BUF_INIT, want = BUF_INIT;
	int replace_all, ret;
	size_t start_line;
	long at;

	if (size < 3)
		return 0;
	n = size - 1;
	replace_all = data[0] & 1;
	start_line = data[0] >> 1;
	z1 = memchr(s, '\0', n);
	if (!z1)
		return 0;
	z2 = memchr(z1 + 1, '\0', n - (size_t)(z1 + 1 - s));
	if (!z2)
		return 0;
	text = s;
	tl = (size_t)(z1 - s);
	old = z1 + 1;
	ol = (size_t)(z2 - old);
	new_text = z2 + 1;
	nl = n - (size_t)(new_text - s);
	if (!ol)
		return 0;
	ret = match_apply_at(&r, text, tl, old, ol, new_text, nl, replace_all, start_line, "f",
			     &why);
	if (ret < 0) {
		if (r.text.len || !why.len)
			abort();
		goto out;
	}
	if (!r.count || !r.lines[0] || r.pass > MATCH_NOSPACE)
		abort();
	at = only_place(text, tl, old, ol);
	if (r.pass == MATCH_EXACT && !replace_all && at >= 0 && (size_t)at + ol < tl &&
	    !memchr(text, '\r', tl) && !memchr(old, '\r', ol) && !memchr(new_text, '\r', nl)) {
		buf_add(&want, text, (size_t)at);
		buf_add(&want, new_text, nl);
		buf_add(&want, text + at + ol, tl - (size_t)at - ol);
		if (want.len != r.text.len || memcmp(want.buf, r.text.buf, want.len))
			abort();
	}
out:
	match_result_release(&r);
	buf_release(&why);
	buf_release(&want);
	err_clear();
	return 0;
}
