/*
 * Families of vLLM's parser list whose markers no other file reads:
 * Inkling's typed content blocks (<|content_invoke_tool_json|> and its
 * neighbours). See textcalls.h for what a call must be.
 */
#include <string.h>

#include "base/jsonx.h"
#include "llm/textcalls_int.h"

/* ---- Inkling ---- */

/*
 * An Inkling reply is a run of blocks, each opened by a kind token and
 * closed by <|end_message|> (the last may end at <|content_model_end_sampling|>
 * or be cut by the stop token); <|message_model|> starts the next message,
 * and the tool's name may stand as a header between it and the block.
 */
#define INK_MSG "<|message_model|>"
#define INK_TOOL "<|content_invoke_tool_json|>"
#define INK_THINK "<|content_thinking|>"
#define INK_END "<|end_message|>"
#define INK_END_SAMPLING "<|content_model_end_sampling|>"

/* Where the block whose body starts at `p` ends (before its closing token). */
static size_t ink_block_end(const char *t, size_t p, size_t len)
{
	static const char *const stops[] = { INK_END, INK_END_SAMPLING, INK_MSG };
	size_t k, end = len;

	for (k = 0; k < sizeof(stops) / sizeof(stops[0]); k++) {
		size_t s = tc_find_at(t, p, end, stops[k]);

		if (s != (size_t)-1)
			end = s;
	}
	return end;
}

void tc_mask_inkling(char *text, size_t len)
{
	size_t p = 0, o;

	while ((o = tc_find_at(text, p, len, INK_THINK)) != (size_t)-1) {
		size_t b = ink_block_end(text, o + strlen(INK_THINK), len);

		/* a thinking block never closed was cut off while thinking: blank to the end */
		if (b < len && !strncmp(text + b, INK_END, strlen(INK_END)))
			b += strlen(INK_END);
		memset(text + o, ' ', b - o);
		p = b;
	}
}

/* The header naming the tool just before the block at `a`: its start, or `a`. */
static size_t ink_header(const struct scan *sc, size_t a, const char *name)
{
	size_t n = strlen(name), h;

	if (a < n || memcmp(sc->text + a - n, name, n))
		return a;
	h = a - n;
	if (h == 0)
		return h;
	if (h >= strlen(INK_MSG) && tc_starts(sc, h - strlen(INK_MSG), h, INK_MSG))
		return h;
	return a;
}

static void ink_take(struct scan *sc, size_t body, size_t end, size_t *start)
{
	struct buf notes = BUF_INIT;
	size_t used;
	json_t *j = tc_take_json(sc, body, end, "inkling", 1, NULL, &used, &notes);
	const json_t *args;
	const char *name;

	if (!j)
		goto out;
	name = jsonx_str(j, "name");
	args = json_object_get(j, "args");
	if (!json_is_object(j) || !name) {
		tc_call_error(sc, "inkling", NULL, "the block does not hold an object with a "
			      "\"name\" string");
	} else if (!tc_known(sc, name)) {
		tc_unknown_error(sc, "inkling", name);
	} else if (args && !json_is_object(args)) {
		tc_call_error(sc, "inkling", name, "its \"args\" is not a JSON object");
	} else {
		json_t *none = json_object();

		tc_push_call(sc, name, args ? args : none, "inkling", notes.buf);
		json_decref(none);
		*start = ink_header(sc, *start, name);
	}
	json_decref(j);
out:
	buf_release(&notes);
}

void tc_scan_inkling(struct scan *sc)
{
	size_t p = 0, o;

	while ((o = tc_find_at(sc->text, p, sc->len, INK_TOOL)) != (size_t)-1) {
		size_t body = o + strlen(INK_TOOL), end = ink_block_end(sc->text, body, sc->len), b = end;

		ink_take(sc, tc_skip_ws(sc, body, end), end, &o);
		if (tc_starts(sc, b, sc->len, INK_END))
			b += strlen(INK_END);
		tc_add_span(sc, o, b);
		p = b;
	}
}
