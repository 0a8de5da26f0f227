/*
 * libFuzzer target for tool calls written in a reply's text
 * (llm/textcalls.h): the dialect scanner and the JSON repair.
 *
 * For any bytes (given without a terminating NUL, so an over-read shows):
 *   - every call names one of the tools, and its arguments are a JSON
 *     object;
 *   - nothing is invented: every key of the arguments occurs in the text
 *     (but CWM's "command", the name its one text input is given under),
 *     and so does every string value that needed no escape (no quote of
 *     either kind, no backslash: Python-style dialects unescape \');
 *   - what is left as prose is never longer than the text;
 *   - a repaired value repairs to itself, with nothing more to repair.
 *
 *   make fuzz && build/fuzz/textcalls -max_total_time=300 CORPUS_DIR
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/jsonx.h"
#include "llm/textcalls.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[] = { "read_file", "write_file", "list_dir", "search", "finish",
				     NULL };

static int plain(const char *s)
{
	for (; *s; s++)
		if (*s == '"' || *s == '\'' || *s == '\\' || (unsigned char)*s < 0x20 ||
		    (unsigned char)*s >= 0x7f)
			return 0;
	return 1;
}

static void check_repair(const char *text, size_t size)
{
	struct buf out = BUF_INIT, notes = BUF_INIT, why = BUF_INIT;
	struct buf out2 = BUF_INIT, notes2 = BUF_INIT, why2 = BUF_INIT;
	size_t used = 0, used2 = 0;
	const char *brace = memchr(text, '{', size);

	if (brace && textcalls_repair_json(&out, &notes, &why, brace,
					   size - (size_t)(brace - text), &used) == 0) {
		if (used > size - (size_t)(brace - text))
			abort();
		if (textcalls_repair_json(&out2, &notes2, &why2, out.buf, out.len, &used2) < 0 ||
		    strcmp(out.buf, out2.buf) || notes2.len) {
			fprintf(stderr, "not idempotent: %s -> %s (%s)\n", out.buf, out2.buf,
				notes2.buf);
			abort();
		}
	}
	buf_release(&out);
	buf_release(&notes);
	buf_release(&why);
	buf_release(&out2);
	buf_release(&notes2);
	buf_release(&why2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct strvec tools = STRVEC_INIT;
	struct text_calls tc = TEXT_CALLS_INIT;
	char *text = malloc(size ? size : 1), *z;
	size_t i, k;

	if (!tools.nr)
		for (k = 0; names[k]; k++)
			strvec_push(&tools, names[k]);
	memcpy(text, data, size);
	textcalls_parse(&tc, text, size, &tools);
	z = xstrndup(text, size);	/* for strstr; a NUL in the text ends the search early */
	for (i = 0; i < tc.nr; i++) {
		json_t *a = json_loads(tc.v[i].arguments, JSON_ALLOW_NUL, NULL), *v;
		const char *key;
		int ok = 0;

		for (k = 0; names[k]; k++)
			ok |= !strcmp(names[k], tc.v[i].name);
		if (!ok || !json_is_object(a))
			abort();
		json_object_foreach(a, key, v) {
			/* CWM's input is one text: it is given as "command", the key vLLM names */
			int given = !strcmp(tc.v[i].dialect, "cwm") && !strcmp(key, "command");

			if (strlen(z) == size && plain(key) && !given && !strstr(z, key)) {
				fprintf(stderr, "invented key %s\n", key);
				abort();
			}
			if (strlen(z) == size && json_is_string(v) && plain(json_string_value(v)) &&
			    !strstr(z, json_string_value(v))) {
				fprintf(stderr, "invented value %s\n", json_string_value(v));
				abort();
			}
		}
		json_decref(a);
	}
	if (tc.prose.len > size)
		abort();
	check_repair(text, size);
	textcalls_release(&tc);
	free(z);
	free(text);
	return 0;
}
