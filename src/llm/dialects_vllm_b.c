/*
 * Families of vLLM's parser list whose markers no other file reads:
 * Inkling's typed content blocks (<|content_invoke_tool_json|> and its
 * neighbours) and Solar Open2's <|tool_call:start|> sentinels. See
 * textcalls.h for what a call must be.
 */
#include <stdlib.h>
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

/* ---- Solar Open2 ---- */

/*
 * <|tool_call:start|>NAME\n<|tool_arg:start|>K<|tool_arg:value|>V<|tool_arg:end|>\n
 * <|tool_call:end|>. Solar's own parser is built around sentinels the
 * model drops, and so is this one: a call also ends where the next one
 * starts, a value at any sentinel; a call or argument whose name runs
 * into a boundary before it is finished was restarted and is skipped.
 * A value the reply ends inside was cut off: it is never run.
 */
#define SO_CALL "<|tool_call:start|>"
#define SO_CALL_END "<|tool_call:end|>"
#define SO_ARG "<|tool_arg:start|>"
#define SO_VALUE "<|tool_arg:value|>"
#define SO_ARG_END "<|tool_arg:end|>"

/* The first of the sentinels in `stops` (NULL-ended) in [p, end), or `end`. */
static size_t so_first(const char *t, size_t p, size_t end, const char *const *stops)
{
	for (; *stops; stops++) {
		size_t s = tc_find_at(t, p, end, *stops);

		if (s != (size_t)-1)
			end = s;
	}
	return end;
}

/* The arguments of the call whose body is [p, end); NULL after an error about `name`. */
static json_t *so_args(struct scan *sc, size_t p, size_t end, int cut, const char *name)
{
	static const char *const name_stops[] = { SO_VALUE, SO_ARG, NULL };
	static const char *const value_stops[] = { SO_ARG_END, SO_ARG, NULL };
	json_t *args = json_object();
	size_t a;

	while ((a = tc_find_at(sc->text, p, end, SO_ARG)) != (size_t)-1) {
		size_t k0 = a + strlen(SO_ARG), k1 = so_first(sc->text, k0, end, name_stops), v0, v1;
		json_t *key;

		if (k1 == end) {
			tc_call_error(sc, "solar-open2", name, "an argument name is not followed by "
				      "<|tool_arg:value|>");
			json_decref(args);
			return NULL;
		}
		if (!tc_starts(sc, k1, end, SO_VALUE)) {
			p = k1;		/* <|tool_arg:start|> again: the argument was restarted */
			continue;
		}
		v0 = k1 + strlen(SO_VALUE);
		v1 = so_first(sc->text, v0, end, value_stops);
		if (v1 == end && cut) {
			tc_call_error(sc, "solar-open2", name, "the reply ends inside the value of "
				      "an argument: it was cut off");
			json_decref(args);
			return NULL;
		}
		/* a name that is not UTF-8 would make jansson refuse the key */
		key = jsonx_stringn_lossy(sc->text + k0, k1 - k0);
		if (!json_object_get(args, json_string_value(key)))	/* the first value wins */
			jsonx_set(args, json_string_value(key), tc_xml_value(sc->text + v0, v1 - v0));
		json_decref(key);
		p = tc_starts(sc, v1, end, SO_ARG_END) ? v1 + strlen(SO_ARG_END) : v1;
	}
	return args;
}

void tc_scan_solar(struct scan *sc)
{
	static const char *const name_stops[] = { "\n", SO_CALL, SO_CALL_END, NULL };
	static const char *const call_stops[] = { SO_CALL_END, SO_CALL, NULL };
	size_t p = 0, o;

	while ((o = tc_find_at(sc->text, p, sc->len, SO_CALL)) != (size_t)-1) {
		size_t n0 = o + strlen(SO_CALL), n1 = so_first(sc->text, n0, sc->len, name_stops);
		size_t end, b;
		char *name;
		json_t *args;

		if (n1 == sc->len || sc->text[n1] != '\n') {
			/* the name never ended: a restarted call, or the reply cut in its name */
			if (n1 == sc->len)
				tc_call_error(sc, "solar-open2", NULL, "the reply ends inside the "
					      "name of a call: it was cut off");
			tc_add_span(sc, o, n1);
			p = n1;
			continue;
		}
		end = so_first(sc->text, n1, sc->len, call_stops);
		b = tc_starts(sc, end, sc->len, SO_CALL_END) ? end + strlen(SO_CALL_END) : end;
		name = xstrndup(sc->text + n0, n1 - n0);
		if (!tc_known(sc, name)) {
			tc_unknown_error(sc, "solar-open2", name);
		} else if ((args = so_args(sc, n1 + 1, end, end == sc->len, name))) {
			tc_push_call(sc, name, args, "solar-open2", NULL);
			json_decref(args);
		}
		free(name);
		tc_add_span(sc, o, b);
		p = b;
	}
}

/* ---- GigaChat 3.5 ---- */

/*
 * <｜GCML｜tool_calls><｜GCML｜invoke name="f"><｜GCML｜parameter name="k"
 * string="true">v</｜GCML｜parameter></｜GCML｜invoke></｜GCML｜tool_calls>:
 * the invoke pass reads the calls (｜GCML｜ is one more prefix to it). This
 * pass only speaks when the wrapper is there and no invoke is, anywhere:
 * the model opened a call it never wrote (an empty block, a parameter
 * without its invoke), which would otherwise pass as prose.
 */
#define GC_CALLS "<\xef\xbd\x9cGCML\xef\xbd\x9ctool_calls>"

void tc_scan_gigachat35(struct scan *sc)
{
	size_t o = tc_find_at(sc->text, 0, sc->len, GC_CALLS);

	if (o == (size_t)-1 || tc_find_at(sc->text, 0, sc->len, "invoke name=\"") != (size_t)-1)
		return;
	tc_call_error(sc, "gigachat35", NULL, "the <\xef\xbd\x9cGCML\xef\xbd\x9ctool_calls> block "
		      "holds no <\xef\xbd\x9cGCML\xef\xbd\x9cinvoke name=\"NAME\">");
}

/* ---- K2 Horizon (IFM) ---- */

/*
 * <ifm|tool_calls><ifm|tool_call>BODY</ifm|tool_call>...</ifm|tool_calls>,
 * the body one of the three forms the template can ask for: JSON
 * {"name": "f", "arguments": {...}}, or f<ifm|arg_key>k</ifm|arg_key>
 * [<ifm|arg_type>t</ifm|arg_type>]<ifm|arg_value>v</ifm|arg_value>...
 * The reply does not say which was asked, so each body is read as it is
 * written. A closing </ifm|tool_calls> cut by the stop token loses nothing.
 */
#define IFM_CALLS "<ifm|tool_calls>"
#define IFM_CALLS_END "</ifm|tool_calls>"
#define IFM_CALL "<ifm|tool_call>"
#define IFM_CALL_END "</ifm|tool_call>"
#define IFM_KEY "<ifm|arg_key>"
#define IFM_KEY_END "</ifm|arg_key>"
#define IFM_TYPE "<ifm|arg_type>"
#define IFM_TYPE_END "</ifm|arg_type>"
#define IFM_VALUE "<ifm|arg_value>"
#define IFM_VALUE_END "</ifm|arg_value>"

/* [*a, *b) holds `open` TEXT `close` at *p (after white space); on success *p passes it. */
static int ifm_tag(const struct scan *sc, size_t *p, size_t end, const char *open,
		   const char *close, size_t *a, size_t *b)
{
	size_t q = tc_skip_ws(sc, *p, end), c;

	if (!tc_starts(sc, q, end, open))
		return 0;
	*a = q + strlen(open);
	c = tc_find_at(sc->text, *a, end, close);
	if (c == (size_t)-1)
		return 0;
	*b = c;
	*p = c + strlen(close);
	return 1;
}

/* A value by its declared type: a string as written, anything else read as JSON would be. */
static json_t *ifm_value(const struct scan *sc, size_t t0, size_t t1, size_t v0, size_t v1)
{
	if (t1 - t0 == 6 && !memcmp(sc->text + t0, "string", 6))
		return jsonx_stringn_lossy(sc->text + v0, v1 - v0);
	v0 = tc_skip_ws(sc, v0, v1);
	while (v1 > v0 && strchr(" \t\r\n", sc->text[v1 - 1]))
		v1--;
	return tc_xml_value(sc->text + v0, v1 - v0);
}

static void ifm_take_xml(struct scan *sc, size_t p, size_t end)
{
	size_t k = tc_find_at(sc->text, p, end, IFM_KEY), n0 = tc_skip_ws(sc, p, end), n1;
	json_t *args = json_object();
	char *name;

	n1 = k == (size_t)-1 ? end : k;
	while (n1 > n0 && strchr(" \t\r\n", sc->text[n1 - 1]))
		n1--;
	name = xstrndup(sc->text + n0, n1 - n0);
	if (!*name || strpbrk(name, " \t\r\n<>")) {
		tc_call_error(sc, "k2-horizon", NULL, "the call does not start with a tool name");
		goto out;
	}
	if (!tc_known(sc, name)) {
		tc_unknown_error(sc, "k2-horizon", name);
		goto out;
	}
	for (p = n1; tc_skip_ws(sc, p, end) < end;) {
		size_t k0, k1, t0 = 0, t1 = 0, v0, v1;
		json_t *key;

		if (!ifm_tag(sc, &p, end, IFM_KEY, IFM_KEY_END, &k0, &k1)) {
			tc_call_error(sc, "k2-horizon", name, "after its arguments comes something "
				      "that is not <ifm|arg_key>NAME</ifm|arg_key>");
			goto out;
		}
		ifm_tag(sc, &p, end, IFM_TYPE, IFM_TYPE_END, &t0, &t1);
		if (!ifm_tag(sc, &p, end, IFM_VALUE, IFM_VALUE_END, &v0, &v1)) {
			tc_call_error(sc, "k2-horizon", name, "an argument has no <ifm|arg_value>..."
				      "</ifm|arg_value>");
			goto out;
		}
		key = jsonx_stringn_lossy(sc->text + k0, k1 - k0);
		if (json_object_get(args, json_string_value(key))) {
			tc_call_error(sc, "k2-horizon", name, "the argument \"%s\" is given twice",
				      json_string_value(key));
			json_decref(key);
			goto out;
		}
		jsonx_set(args, json_string_value(key), ifm_value(sc, t0, t1, v0, v1));
		json_decref(key);
	}
	tc_push_call(sc, name, args, "k2-horizon", NULL);
out:
	json_decref(args);
	free(name);
}

static void ifm_take_json(struct scan *sc, size_t p, size_t end)
{
	struct buf notes = BUF_INIT;
	size_t used;
	json_t *j = tc_take_json(sc, p, end, "k2-horizon", 1, NULL, &used, &notes);
	const char *name = jsonx_str(j, "name");
	const json_t *args = json_object_get(j, "arguments");

	if (!j)
		goto out;
	if (!json_is_object(j) || !name)
		tc_call_error(sc, "k2-horizon", NULL, "the object has no \"name\" string");
	else if (!tc_known(sc, name))
		tc_unknown_error(sc, "k2-horizon", name);
	else if (args && !json_is_object(args))
		tc_call_error(sc, "k2-horizon", name, "its \"arguments\" is not a JSON object");
	else {
		json_t *none = json_object();

		tc_push_call(sc, name, args ? args : none, "k2-horizon", notes.buf);
		json_decref(none);
	}
out:
	json_decref(j);
	buf_release(&notes);
}

void tc_scan_k2_horizon(struct scan *sc)
{
	size_t p = 0, o, g;

	while ((o = tc_find_at(sc->text, p, sc->len, IFM_CALL)) != (size_t)-1) {
		size_t body = o + strlen(IFM_CALL), c = tc_find_at(sc->text, body, sc->len, IFM_CALL_END);
		size_t next = tc_find_at(sc->text, body, sc->len, IFM_CALL);

		if (c == (size_t)-1 || (next != (size_t)-1 && next < c)) {
			/* a value cut in half would run as if whole: ask again */
			tc_call_error(sc, "k2-horizon", NULL, "the call is not closed with "
				      IFM_CALL_END);
			c = next == (size_t)-1 ? sc->len : next;
			tc_add_span(sc, o, c);
			p = c;
			continue;
		}
		body = tc_skip_ws(sc, body, c);
		if (body < c && sc->text[body] == '{')
			ifm_take_json(sc, body, c);
		else
			ifm_take_xml(sc, body, c);
		tc_add_span(sc, o, c + strlen(IFM_CALL_END));
		p = c + strlen(IFM_CALL_END);
	}
	for (p = 0; (g = tc_find_at(sc->text, p, sc->len, IFM_CALLS)) != (size_t)-1; p = g + 1) {
		size_t e = tc_find_at(sc->text, g, sc->len, IFM_CALLS_END);

		if (tc_find_at(sc->text, g, e == (size_t)-1 ? sc->len : e, IFM_CALL) == (size_t)-1)
			tc_call_error(sc, "k2-horizon", NULL, IFM_CALLS " holds no " IFM_CALL);
		tc_add_span(sc, g, g + strlen(IFM_CALLS));
		if (e != (size_t)-1)
			tc_add_span(sc, e, e + strlen(IFM_CALLS_END));
	}
}
