/*
 * libFuzzer target for the reader of ctags' JSON output
 * (context/ctags.h): whatever the child prints is untrusted. Each line of
 * the input is parsed; besides not crashing, a tag has a name, a path and
 * a line >= 1, its strings hold no NUL, and where jansson also reads the
 * line as an object the strings are the same. The pattern text is never
 * longer than asked and never ends inside a UTF-8 sequence it was given
 * whole.
 *
 *   make fuzz && build/fuzz/ctx_ctags -max_len=4096 CORPUS_DIR
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "context/ctags.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const json_t *o, const char *key, const char *s, size_t len)
{
	const json_t *v = json_object_get(o, key);

	if (json_is_string(v) && (json_string_length(v) != len || memcmp(json_string_value(v), s, len)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	struct buf scratch = BUF_INIT, text = BUF_INIT;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct ctx_tag t;
		int ret = ctx_ctags_parse_line(&t, &scratch, p, len);

		if (ret != 1 && ret != 0 && ret != FX_EPARSE)
			abort();
		if (ret == 1) {
			json_t *j;

			if (!t.name || !t.path || t.line < 1 || strlen(t.name) != t.name_len ||
			    strlen(t.path) != t.path_len || strlen(t.kind) != t.kind_len ||
			    strlen(t.pattern) != t.pattern_len || !t.name_len || !t.path_len)
				abort();
			j = json_loadb(p, len, 0, NULL);
			if (json_is_object(j)) {
				same(j, "name", t.name, t.name_len);
				same(j, "path", t.path, t.path_len);
				same(j, "kind", t.kind, t.kind_len);
				same(j, "pattern", t.pattern, t.pattern_len);
			}
			json_decref(j);
			buf_reset(&text);
			ctx_ctags_pattern_text(&text, t.pattern, t.pattern_len, 40);
			if (text.len > 40 || strlen(text.buf) != text.len)
				abort();
		}
		err_clear();
		p += len + 1;
	}
	buf_release(&scratch);
	buf_release(&text);
	return 0;
}
