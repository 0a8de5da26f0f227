/*
 * Tool calls written in a reply's text (see textcalls.h): the dialects of
 * local models' chat templates, and a JSON repair that never invents.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/jsonx.h"
#include "llm/textcalls.h"
#include "base/err.h"
#include "llm/textcalls_int.h"

/* Deepest nesting the repair follows. */
#define REPAIR_DEPTH 512
/* Bare JSON is looked for only in replies up to this size, at most this many candidates. */
#define BARE_MAX_TEXT (1u << 20)
#define BARE_MAX_TRIES 256

/* ---- JSON repair ---- */

enum { ST_KEY, ST_COLON, ST_VALUE, ST_AFTER };	/* object states; arrays use VALUE/AFTER */

static void note(struct buf *notes, const char *what)
{
	if (strstr(notes->buf, what))
		return;
	if (notes->len)
		buf_addstr(notes, "; ");
	buf_addstr(notes, what);
}

int textcalls_repair_json(struct buf *out, struct buf *notes, struct buf *why, const char *s,
			  size_t len, size_t *used)
{
	char stack[REPAIR_DEPTH];
	unsigned char state[REPAIR_DEPTH];
	size_t depth = 0, i, start = out->len, comma = (size_t)-1;
	int in_str = 0, esc = 0, closed = 0, literal = 0;

	for (i = 0; i < len && !closed; i++) {
		unsigned char c = (unsigned char)s[i];

		if (in_str) {
			if (esc) {
				esc = 0;
				buf_addch(out, c);
			} else if (c == '\\') {
				esc = 1;
				buf_addch(out, c);
			} else if (c == '"') {
				in_str = 0;
				buf_addch(out, c);
				if (depth && stack[depth - 1] == '{')
					state[depth - 1] = state[depth - 1] == ST_KEY ? ST_COLON : ST_AFTER;
				else if (depth)
					state[depth - 1] = ST_AFTER;
				else
					closed = 1;
			} else if (c < 0x20) {
				if (c == '\n')
					buf_addstr(out, "\\n");
				else if (c == '\r')
					buf_addstr(out, "\\r");
				else if (c == '\t')
					buf_addstr(out, "\\t");
				else
					buf_addf(out, "\\u%04x", c);
				note(notes, "escaped raw control characters (line breaks) inside strings");
			} else {
				buf_addch(out, c);
			}
			continue;
		}
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
			if (literal && depth)
				literal = 0;
			else if (literal && !depth)
				break;	/* a top-level literal ended */
			buf_addch(out, c);
			continue;
		}
		if (c == '"') {
			if (depth && stack[depth - 1] == '{' && state[depth - 1] != ST_KEY &&
			    state[depth - 1] != ST_VALUE) {
				buf_addf(why, "a comma is missing before the string at byte %zu", i + 1);
				goto fail;
			}
			if (depth && stack[depth - 1] == '[' && state[depth - 1] == ST_AFTER) {
				buf_addf(why, "a comma is missing between two values of a list at byte %zu",
					 i + 1);
				goto fail;
			}
			in_str = 1;
			comma = (size_t)-1;
			buf_addch(out, c);
			continue;
		}
		if (c == '{' || c == '[') {
			if (depth && state[depth - 1] != ST_VALUE) {
				buf_addf(why, "a '%c' at byte %zu where %s", c, i + 1,
					 state[depth - 1] == ST_AFTER ? "a comma is missing before it"
					 : "a key (a string) is expected");
				goto fail;
			}
			if (depth >= REPAIR_DEPTH) {
				buf_addf(why, "it nests deeper than %d levels", REPAIR_DEPTH);
				goto fail;
			}
			if (depth)
				state[depth - 1] = ST_AFTER;
			stack[depth] = (char)c;
			state[depth] = c == '{' ? ST_KEY : ST_VALUE;
			depth++;
			comma = (size_t)-1;
			literal = 0;
			buf_addch(out, c);
			continue;
		}
		if (c == '}' || c == ']') {
			char want = c == '}' ? '{' : '[';

			if (!depth) {
				buf_addf(why, "an unexpected '%c' at byte %zu", c, i + 1);
				goto fail;
			}
			if (stack[depth - 1] != want) {
				buf_addf(why, "a '%c' at byte %zu closes a '%c'", c, i + 1,
					 stack[depth - 1]);
				goto fail;
			}
			if (want == '{' && (state[depth - 1] == ST_COLON ||
					    (state[depth - 1] == ST_VALUE && comma == (size_t)-1))) {
				buf_addf(why, "a key has no value before the '}' at byte %zu", i + 1);
				goto fail;
			}
			if (comma != (size_t)-1) {
				/* drop the trailing comma, keep the whitespace after it */
				memmove(out->buf + comma, out->buf + comma + 1, out->len - comma - 1);
				buf_setlen(out, out->len - 1);
				note(notes, "removed a trailing comma");
				comma = (size_t)-1;
			}
			depth--;
			literal = 0;
			buf_addch(out, c);
			if (!depth)
				closed = 1;
			continue;
		}
		if (!depth && !literal && out->len > start) {
			break;
		}
		if (c == ',') {
			if (!depth || state[depth - 1] != ST_AFTER) {
				buf_addf(why, "an unexpected ',' at byte %zu", i + 1);
				goto fail;
			}
			state[depth - 1] = stack[depth - 1] == '{' ? ST_KEY : ST_VALUE;
			comma = out->len;
			literal = 0;
			buf_addch(out, c);
			continue;
		}
		if (c == ':') {
			if (!depth || stack[depth - 1] != '{' || state[depth - 1] != ST_COLON) {
				buf_addf(why, "an unexpected ':' at byte %zu", i + 1);
				goto fail;
			}
			state[depth - 1] = ST_VALUE;
			literal = 0;
			buf_addch(out, c);
			continue;
		}
		if (c == '\'') {
			buf_addf(why, "a single quote at byte %zu: JSON strings and keys take double "
				 "quotes", i + 1);
			goto fail;
		}
		/* a number or a literal (true, false, null), checked by the parser */
		if (depth && stack[depth - 1] == '{' && state[depth - 1] != ST_VALUE && !literal) {
			buf_addf(why, "keys must be strings in double quotes (byte %zu)", i + 1);
			goto fail;
		}
		if (depth && !literal)
			state[depth - 1] = ST_AFTER;
		comma = (size_t)-1;
		literal = 1;
		buf_addch(out, c);
	}
	*used = i;
	if (in_str) {
		buf_addstr(why, "the text ends inside a string: a closing '\"' is missing");
		goto fail;
	}
	if (!depth) {
		if (out->len == start) {
			buf_addstr(why, "there is no JSON value");
			goto fail;
		}
		return 0;
	}
	/* the value was cut short: close what is open, if nothing is missing but brackets */
	if (stack[depth - 1] == '{' && (state[depth - 1] == ST_COLON ||
					(state[depth - 1] == ST_VALUE && comma == (size_t)-1))) {
		buf_addstr(why, "the text ends after a key that has no value");
		goto fail;
	}
	if (comma != (size_t)-1) {
		/* `{"a": 1,` at the end: the next value was cut off, not a slip */
		buf_addstr(why, "the text ends after a ',': what was to follow it was cut off");
		goto fail;
	}
	while (out->len > start && memchr(" \t\n\r", out->buf[out->len - 1], 4))
		buf_setlen(out, out->len - 1);	/* JSON's own whitespace only */
	if (depth > 1 && (out->buf[out->len - 1] == '{' || out->buf[out->len - 1] == '[')) {
		/* `"arguments": {` and nothing after: what it was to hold is lost, not empty */
		buf_addf(why, "the text ends right after the '%c' that opens a value: the call was "
			 "cut off", out->buf[out->len - 1]);
		goto fail;
	}
	note(notes, depth == 1 ? "added a missing closing bracket at the end"
			       : "added missing closing brackets at the end");
	while (depth)
		buf_addch(out, stack[--depth] == '{' ? '}' : ']');
	return 0;
fail:
	buf_setlen(out, start);
	return -1;
}

/* ---- the scan ---- */

int tc_known(const struct scan *sc, const char *name)
{
	size_t i;

	for (i = 0; i < sc->tools->nr; i++)
		if (!strcmp(sc->tools->v[i], name))
			return 1;
	return 0;
}

void tc_add_span(struct scan *sc, size_t a, size_t b)
{
	ALLOC_GROW(sc->spans, sc->spans_nr + 1, sc->spans_alloc);
	sc->spans[sc->spans_nr].a = a;
	sc->spans[sc->spans_nr].b = b;
	sc->spans_nr++;
}

void tc_call_error(struct scan *sc, const char *dialect, const char *name, const char *fmt, ...)
{
	struct buf m = BUF_INIT, what = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(&what, fmt, ap);
	va_end(ap);
	buf_addstr(&m, "Your tool call");
	if (name && *name)
		buf_addf(&m, " to %s", name);
	buf_addf(&m, " (%s format) could not be read, so nothing was run: %s. Send the call "
		 "again, whole, as %s", dialect, what.buf, tc_example(dialect));
	if (tc_dialect_is_json(dialect))
		buf_addstr(&m, " — keys and strings in double quotes, line breaks inside strings "
			   "written as \\n, quotes inside strings as \\\", no comments.");
	else
		buf_addstr(&m, ".");
	strvec_push(&sc->out->errors, m.buf);
	buf_release(&m);
	buf_release(&what);
}

void tc_unknown_error(struct scan *sc, const char *dialect, const char *name)
{
	struct buf list = BUF_INIT;
	size_t i;

	for (i = 0; i < sc->tools->nr; i++)
		buf_addf(&list, "%s%s", i ? ", " : "", sc->tools->v[i]);
	tc_call_error(sc, dialect, NULL, "there is no tool called \"%s\"; the tools are: %s", name,
		   list.buf);
	sc->out->unknown++;
	buf_release(&list);
}

void tc_push_call(struct scan *sc, const char *name, const json_t *args, const char *dialect,
		      const char *notes)
{
	struct text_call *c;
	struct buf a = BUF_INIT;

	if (sc->out->nr >= TEXTCALLS_MAX) {
		if (sc->out->nr == TEXTCALLS_MAX)
			tc_call_error(sc, dialect, name, "a reply may hold at most %d calls",
				   TEXTCALLS_MAX);
		return;
	}
	jsonx_dump(&a, args, JSON_COMPACT);
	ALLOC_GROW(sc->out->v, sc->out->nr + 1, sc->out->alloc);
	c = &sc->out->v[sc->out->nr++];
	c->name = xstrdup(name);
	c->arguments = buf_detach(&a, NULL);
	c->dialect = dialect;
	c->repaired = notes && *notes ? xstrdup(notes) : NULL;
}

/* Does the raw text name a known tool as a call would ("name": "X")? */
static const char *named_tool(const struct scan *sc, const char *s, size_t len)
{
	static const char *const keys[] = { "\"name\"", "\"tool\"", "\"function\"",
					     "\"tool_name\"" };
	size_t k, i;

	for (k = 0; k < ARRAY_SIZE(keys); k++) {
		const char *p = memmem(s, len, keys[k], strlen(keys[k]));

		while (p) {
			const char *q = p + strlen(keys[k]), *end = s + len;

			while (q < end && isspace((unsigned char)*q))
				q++;
			if (q < end && *q == ':') {
				q++;
				while (q < end && isspace((unsigned char)*q))
					q++;
				if (q < end && *q == '"')
					for (i = 0; i < sc->tools->nr; i++) {
						size_t n = strlen(sc->tools->v[i]);

						if ((size_t)(end - q) > n + 1 &&
						    !memcmp(q + 1, sc->tools->v[i], n) && q[n + 1] == '"')
							return sc->tools->v[i];
					}
			}
			p = memmem(p + 1, (size_t)(end - p - 1), keys[k], strlen(keys[k]));
		}
	}
	return NULL;
}

/*
 * Read (and repair) the JSON value at `pos`, within [pos, end). Returns
 * the value or NULL; `*used` is the bytes it took. On failure, an error is
 * recorded when `strict`, or when the text names a known tool.
 */
json_t *tc_take_json(struct scan *sc, size_t pos, size_t end, const char *dialect, int strict,
			 const char *name, size_t *used, struct buf *notes)
{
	struct buf fixed = BUF_INIT, why = BUF_INIT;
	json_error_t je;
	json_t *j = NULL;

	*used = 0;
	if (textcalls_repair_json(&fixed, notes, &why, sc->text + pos, end - pos, used) < 0) {
		const char *n = name ? name : named_tool(sc, sc->text + pos, end - pos);

		if (strict || n)
			tc_call_error(sc, dialect, n, "its JSON is malformed: %s", why.buf);
		*used = 0;
		goto out;
	}
	j = json_loadb(fixed.buf, fixed.len, JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &je);
	if (!j) {
		const char *n = name ? name : named_tool(sc, sc->text + pos, end - pos);

		if (strict || n)
			tc_call_error(sc, dialect, n, "its JSON is malformed at line %d, column %d: %s",
				   je.line, je.column, je.text);
		*used = 0;
	}
out:
	buf_release(&fixed);
	buf_release(&why);
	return j;
}

/* The arguments member of a call object: an object, or JSON text holding one. */
static json_t *call_args(const json_t *obj, int *present)
{
	static const char *const keys[] = { "arguments", "parameters", "args", "input" };
	size_t k;

	*present = 0;
	for (k = 0; k < ARRAY_SIZE(keys); k++) {
		json_t *a = json_object_get(obj, keys[k]);

		if (!a)
			continue;
		*present = 1;
		if (json_is_object(a))
			return json_incref(a);
		if (json_is_string(a)) {
			const char *s = json_string_value(a);

			while (isspace((unsigned char)*s))
				s++;
			if (!*s)
				return json_object();
			a = json_loads(s, 0, NULL);
			if (json_is_object(a))
				return a;
			json_decref(a);
		}
		return NULL;
	}
	return json_object();
}

/*
 * Take one call object. `how`: 0 markers (strict), 1 fenced, 2 bare.
 * Returns 1 when it was a call (or an error was recorded about it).
 */
int tc_take_call_obj(struct scan *sc, const json_t *obj, const char *dialect, int how,
			 const char *notes)
{
	const char *name = jsonx_str(obj, "name"), *tool = jsonx_str(obj, "tool");
	const json_t *fn = json_object_get(obj, "function"), *wrap, *e;
	json_t *args;
	int present, took = 0;
	size_t i;

	if (!json_is_object(obj))
		return 0;
	/* llama.cpp's generic format: {"tool_call": {...}} or {"tool_calls": [...]} */
	if (json_object_size(obj) == 1 && json_is_object(wrap = json_object_get(obj, "tool_call")))
		return tc_take_call_obj(sc, wrap, dialect, how, notes);
	if (json_object_size(obj) == 1 && json_is_array(wrap = json_object_get(obj, "tool_calls"))) {
		json_array_foreach(wrap, i, e)
			took |= tc_take_call_obj(sc, e, dialect, how, notes);
		return took;
	}
	if (!tool)
		tool = jsonx_str(obj, "tool_name");	/* Cohere Command R / R7B */
	if (!name && !tool && how == TC_MARKED && json_object_size(obj) == 1) {
		/* Apertus: {"NAME": {arguments}} */
		const char *k = json_object_iter_key(json_object_iter((json_t *)obj));
		json_t *v = json_object_iter_value(json_object_iter((json_t *)obj));

		if (json_is_object(v) && tc_known(sc, k)) {
			tc_push_call(sc, k, v, dialect, notes);
			return 1;
		}
	}
	if (json_is_object(fn)) {	/* {"type": "function", "function": {"name", "arguments"}} */
		obj = fn;
		name = jsonx_str(fn, "name");
	} else if (!name && json_is_string(fn)) {
		name = json_string_value(fn);
	}
	if (!name)
		name = tool;
	if (name && !tc_known(sc, name) &&
	    (!strcmp(name, "directly-answer") || !strcmp(name, "directly_answer")))
		return 1;	/* Command R's "no tool: I answer" pseudo-call: no call, no message */
	if (!name) {
		if (how == 0)
			tc_call_error(sc, dialect, NULL, "the object has no \"name\" member");
		return how == 0;
	}
	if (!tc_known(sc, name)) {
		/* prose that mentions JSON is not a call; an explicit marker is */
		if (how == 0 || (how == 1 && tool)) {
			tc_unknown_error(sc, dialect, name);
			return 1;
		}
		return 0;
	}
	args = call_args(obj, &present);
	if (!present && how == 2 && !tool) {
		json_decref(args);
		if (notes && *notes) {
			/* its brackets had to be closed: a call cut off before its arguments */
			tc_call_error(sc, dialect, name, "the call ends before its arguments: the "
				      "reply was cut off");
			return 1;
		}
		return 0;	/* {"name": "read_file"} alone in prose */
	}
	if (!args) {
		tc_call_error(sc, dialect, name, "its arguments are not a JSON object");
		return 1;
	}
	tc_push_call(sc, name, args, dialect, notes);
	json_decref(args);
	return 1;
}

/* Take a call object or a list of them at `pos`. Returns 1 when something was taken. */
int tc_take_calls_at(struct scan *sc, size_t pos, size_t end, const char *dialect, int how,
			 size_t *used)
{
	struct buf notes = BUF_INIT;
	json_t *j = tc_take_json(sc, pos, end, dialect, how == 0, NULL, used, &notes), *e;
	size_t i, before = sc->out->nr + sc->out->errors.nr;
	int took = 0;

	if (!j) {
		buf_release(&notes);
		return sc->out->nr + sc->out->errors.nr > before;
	}
	if (json_is_array(j)) {
		json_array_foreach(j, i, e)
			took |= tc_take_call_obj(sc, e, dialect, how, notes.buf);
	} else if (json_is_object(j)) {
		took = tc_take_call_obj(sc, j, dialect, how, notes.buf);
	} else if (how == 0) {
		tc_call_error(sc, dialect, NULL, "it is not a JSON object");
		took = 1;
	}
	json_decref(j);
	buf_release(&notes);
	return took;
}

const char *tc_find(const struct scan *sc, size_t from, size_t end, const char *needle)
{
	if (from >= end)
		return NULL;
	return memmem(sc->text + from, end - from, needle, strlen(needle));
}

size_t tc_skip_ws(const struct scan *sc, size_t p, size_t end)
{
	while (p < end && isspace((unsigned char)sc->text[p]))
		p++;
	return p;
}

/* ---- Hermes / Qwen ---- */

void tc_set_key(json_t *obj, const char *s, size_t n, json_t *value)
{
	json_t *k = jsonx_stringn_lossy(s, n);

	jsonx_set(obj, json_string_value(k), value);
	json_decref(k);
}

void tc_xml_trim(const char **s, size_t *n)
{
	if (*n && (*s)[0] == '\n') {
		(*s)++;
		(*n)--;
	}
	if (*n && (*s)[*n - 1] == '\n')
		(*n)--;
}

/* A Qwen3-Coder parameter value: JSON when it is clearly JSON, else the text. */
json_t *tc_xml_value(const char *s, size_t n)
{
	size_t i;
	json_t *j;

	tc_xml_trim(&s, &n);
	if (n && (s[0] == '{' || s[0] == '[' || (n == 4 && !memcmp(s, "true", 4)) ||
		  (n == 5 && !memcmp(s, "false", 5)) || (n == 4 && !memcmp(s, "null", 4)))) {
		j = json_loadb(s, n, JSON_DECODE_ANY, NULL);
		if (j)
			return j;
	}
	for (i = s[0] == '-' ? 1 : 0; i < n && isdigit((unsigned char)s[i]); i++)
		;
	if (n && i == n && n < 16 && (s[0] != '-' || n > 1) && (s[0] != '0' || n == 1))
		return json_integer(strtoll(s, NULL, 10));
	return jsonx_stringn_lossy(s, n);
}

void tc_take_xml_function(struct scan *sc, size_t p, size_t end, const char *dialect)
{
	const char *t = sc->text, *q, *close;
	size_t name_end;
	char *name;
	json_t *args;

	p += strlen("<function=");
	q = memchr(t + p, '>', end - p);
	if (!q) {
		tc_call_error(sc, dialect, NULL, "<function=NAME> is not closed with '>'");
		return;
	}
	name_end = (size_t)(q - t);
	name = xstrndup(t + p, name_end - p);
	if (!tc_known(sc, name)) {
		tc_unknown_error(sc, dialect, name);
		free(name);
		return;
	}
	args = json_object();
	p = name_end + 1;
	for (;;) {
		const char *pe = tc_find(sc, p, end, "<parameter="), *gt;
		char *key;

		if (!pe)
			break;
		p = (size_t)(pe - t) + strlen("<parameter=");
		gt = memchr(t + p, '>', end - p);
		if (!gt)
			break;
		key = xstrndup(t + p, (size_t)(gt - t) - p);
		p = (size_t)(gt - t) + 1;
		close = tc_find(sc, p, end, "</parameter>");
		/* a value running into the next <parameter= lost its closing tag: no guess */
		pe = tc_find(sc, p, end, "<parameter=");
		if (!close || (pe && pe < close)) {
			tc_call_error(sc, dialect, name, "the parameter \"%s\" is not closed with "
				   "</parameter>", key);
			free(key);
			json_decref(args);
			free(name);
			return;
		}
		{
			/* a name that is not UTF-8 would make jansson refuse the key */
			json_t *k = jsonx_stringn_lossy(key, strlen(key));

			jsonx_set(args, json_string_value(k), tc_xml_value(t + p, (size_t)(close - t) - p));
			json_decref(k);
		}
		free(key);
		p = (size_t)(close - t) + strlen("</parameter>");
	}
	tc_push_call(sc, name, args, dialect, NULL);
	json_decref(args);
	free(name);
}

/*
 * How much of `close` a reply cut by the stop token ends with ("...</tool_"
 * for "</tool_call>"): at least "</", never the whole tag.
 */
static size_t cut_close_len(const struct scan *sc, size_t body, size_t end, const char *close)
{
	size_t k;

	for (k = strlen(close) - 1; k >= 2; k--)
		if (end - body >= k && !memcmp(sc->text + end - k, close, k))
			return k;
	return 0;
}

/* A GLM tool name may be any UTF-8 text (Ollama's GLM-4.6 tests call 获取天气) */
static int glm_name_start(int c)
{
	return isalpha(c) || c == '_' || c >= 0x80;
}

/*
 * Whether the block at `body`, cut short by another <tool_call> at `next`,
 * is written again whole in that one: Laguna restarts a call so, and the
 * call is one (Ollama's parser reads it once).
 */
static int restarted_block(const struct scan *sc, size_t body, size_t end, size_t next)
{
	size_t b2 = next + strlen("<tool_call>"), e2;
	const char *c2 = tc_find(sc, b2, sc->len, "</tool_call>"),
		   *n2 = tc_find(sc, b2, sc->len, "<tool_call>");

	e2 = c2 ? (size_t)(c2 - sc->text) : sc->len;
	if (n2 && (size_t)(n2 - sc->text) < e2)
		e2 = (size_t)(n2 - sc->text);
	body = tc_skip_ws(sc, body, end);
	b2 = tc_skip_ws(sc, b2, e2);
	while (end > body && isspace((unsigned char)sc->text[end - 1]))
		end--;
	while (e2 > b2 && isspace((unsigned char)sc->text[e2 - 1]))
		e2--;
	return end > body && end - body == e2 - b2 &&
	       !memcmp(sc->text + body, sc->text + b2, e2 - b2);
}

static void scan_hermes(struct scan *sc)
{
	size_t p = 0, used;
	const char *o;

	while ((o = tc_find(sc, p, sc->len, "<tool_call>"))) {
		size_t a = (size_t)(o - sc->text), body = a + strlen("<tool_call>"), end, b, fend;
		size_t cut = 0;
		const char *c = tc_find(sc, body, sc->len, "</tool_call>"),
			   *next = tc_find(sc, body, sc->len, "<tool_call>");

		end = c ? (size_t)(c - sc->text) : sc->len;
		if (next && (size_t)(next - sc->text) < end)
			end = (size_t)(next - sc->text);
		else if (!c)
			end -= (cut = cut_close_len(sc, body, end, "</tool_call>"));
		b = c && (size_t)(c - sc->text) == end ? end + strlen("</tool_call>") : end + cut;
		fend = end;
		if (next && (size_t)(next - sc->text) == end && restarted_block(sc, body, end, end)) {
			tc_add_span(sc, a, b);
			p = b;
			continue;
		}
		body = tc_skip_ws(sc, body, end);
		/* EXAONE MoE may fence the JSON inside the tags: ```json\n{...}\n``` */
		if (end - body >= 3 && !memcmp(sc->text + body, "```", 3)) {
			const char *nl = memchr(sc->text + body, '\n', end - body), *f;

			body = nl ? (size_t)(nl - sc->text) + 1 : end;
			f = tc_find(sc, body, end, "```");
			fend = f ? (size_t)(f - sc->text) : end;
		}
		if (end - body >= 10 && !memcmp(sc->text + body, "<function=", 10))
			tc_take_xml_function(sc, body, end, "hermes");
		else if (body < end && glm_name_start((unsigned char)sc->text[body]))
			tc_take_glm(sc, body, end);
		else if (end - body >= 9 && !memcmp(sc->text + body, "<arg_key>", 9))
			tc_call_error(sc, "glm", NULL, "the tool's name is missing before <arg_key>");
		else if (body < end)
			tc_take_calls_at(sc, body, fend, "hermes", 0, &used);
		else
			tc_call_error(sc, "hermes", NULL, "the <tool_call> block is empty");
		tc_add_span(sc, a, b);
		p = b;
	}
}

/* ---- Llama 3 ---- */

static void scan_llama3(struct scan *sc)
{
	const char *tag = tc_find(sc, 0, sc->len, "<|python_tag|>"), *stop;
	size_t p, end = sc->len, used, a, before = sc->out->nr + sc->out->errors.nr;

	if (!tag)
		return;
	a = (size_t)(tag - sc->text);
	p = a + strlen("<|python_tag|>");
	if ((stop = tc_find(sc, p, sc->len, "<|eom_id|>")) || (stop = tc_find(sc, p, sc->len, "<|eot_id|>")))
		end = (size_t)(stop - sc->text);
	for (;;) {
		p = tc_skip_ws(sc, p, end);
		if (p < end && sc->text[p] != '{' && sc->text[p] != '[') {
			/* the built-in tools: brave_search.call(query="..."), python.call(code="...") */
			if (!(used = tc_take_llama_builtin(sc, p, end)))
				break;
			p = tc_skip_ws(sc, p + used, end);
			if (p < end && sc->text[p] == ';')
				p++;
			continue;
		}
		if (p >= end)
			break;
		if (!tc_take_calls_at(sc, p, end, "llama3", 0, &used) || !used)
			break;
		p = tc_skip_ws(sc, p + used, end);
		if (p < end && sc->text[p] == ';')
			p++;
	}
	if (sc->out->nr + sc->out->errors.nr == before)
		tc_call_error(sc, "llama3", NULL, "<|python_tag|> is not followed by a JSON call");
	tc_add_span(sc, a, stop ? end + strlen("<|eom_id|>") : end);
}

/* ---- Mistral ---- */

static void scan_mistral(struct scan *sc)
{
	static const char marker[] = "[TOOL_CALLS]";
	size_t p = 0, used;
	const char *o;

	while ((o = tc_find(sc, p, sc->len, marker))) {
		size_t a = (size_t)(o - sc->text), q = a + strlen(marker), end, n0;
		const char *next = tc_find(sc, q, sc->len, marker);
		char *name;

		end = next ? (size_t)(next - sc->text) : sc->len;
		q = tc_skip_ws(sc, q, end);
		if (q < end && (sc->text[q] == '[' || sc->text[q] == '{')) {
			/* pre-v11: a JSON list of {"name", "arguments"} */
			tc_take_calls_at(sc, q, end, "mistral", 0, &used);
			tc_add_span(sc, a, q + used);
			p = q + (used ? used : 1);
			continue;
		}
		n0 = q;
		while (q < end && (isalnum((unsigned char)sc->text[q]) || sc->text[q] == '_' ||
				   sc->text[q] == '-' || sc->text[q] == '.'))
			q++;
		if (q == n0) {
			tc_call_error(sc, "mistral", NULL, "[TOOL_CALLS] is followed by neither a JSON "
				   "list nor a tool name");
			tc_add_span(sc, a, q);
			p = q;
			continue;
		}
		name = xstrndup(sc->text + n0, q - n0);
		if (end - q >= 9 && !memcmp(sc->text + q, "[CALL_ID]", 9)) {
			const char *args = tc_find(sc, q, end, "[ARGS]");

			q = args ? (size_t)(args - sc->text) : q + 9;
		}
		if (end - q >= 6 && !memcmp(sc->text + q, "[ARGS]", 6))
			q += 6;
		q = tc_skip_ws(sc, q, end);
		if (!tc_known(sc, name)) {
			tc_unknown_error(sc, "mistral", name);
			used = 0;
		} else if (q >= end || sc->text[q] != '{') {
			tc_call_error(sc, "mistral", name, "the arguments object is missing after the "
				   "tool name");
			used = 0;
		} else {
			struct buf notes = BUF_INIT;
			json_t *j = tc_take_json(sc, q, end, "mistral", 1, name, &used, &notes);

			if (json_is_object(j))
				tc_push_call(sc, name, j, "mistral", notes.buf);
			else if (j)
				tc_call_error(sc, "mistral", name, "its arguments are not a JSON object");
			json_decref(j);
			buf_release(&notes);
		}
		free(name);
		tc_add_span(sc, a, q + used);
		p = q + (used ? used : 1);
	}
}

/* ---- DeepSeek ---- */

/*
 * The length of the DeepSeek marker `words` ("tool call begin") at `p`:
 * "<｜tool▁call▁begin｜>", with ▁, space or _ between the words and ｜ or |
 * as the bars (llama.cpp accepts the same variants). 0 when absent.
 */
static size_t ds_marker(const char *p, const char *end, const char *words)
{
	const char *s = p;

	if (s >= end || *s != '<')
		return 0;
	s++;
	if (end - s >= 3 && !memcmp(s, "\xef\xbd\x9c", 3))
		s += 3;
	else if (s < end && *s == '|')
		s++;
	else
		return 0;
	while (*words) {
		if (*words == ' ') {
			if (end - s >= 3 && !memcmp(s, "\xe2\x96\x81", 3))
				s += 3;
			else if (s < end && (*s == ' ' || *s == '_'))
				s++;
			else
				return 0;
		} else {
			if (s >= end || *s != *words)
				return 0;
			s++;
		}
		words++;
	}
	if (end - s >= 3 && !memcmp(s, "\xef\xbd\x9c", 3))
		s += 3;
	else if (s < end && *s == '|')
		s++;
	else
		return 0;
	if (s >= end || *s != '>')
		return 0;
	return (size_t)(s + 1 - p);
}

/* The next DeepSeek marker `words` in [from, end): its offset, and its length in `*mlen`. */
static size_t ds_find(const struct scan *sc, size_t from, size_t end, const char *words,
		      size_t *mlen)
{
	const char *t = sc->text;
	size_t p;

	for (p = from; p < end; p++) {
		const char *lt = memchr(t + p, '<', end - p);

		if (!lt)
			break;
		p = (size_t)(lt - t);
		if ((*mlen = ds_marker(t + p, t + end, words)))
			return p;
	}
	*mlen = 0;
	return (size_t)-1;
}

static void scan_deepseek(struct scan *sc)
{
	size_t p = 0, ml, used, first = (size_t)-1, last = 0;

	for (;;) {
		size_t a = ds_find(sc, p, sc->len, "tool call begin", &ml), q, end, sep, sl, el, nb, ne;
		size_t nx, nl;
		char *before, *name;

		if (a == (size_t)-1)
			break;
		if (first == (size_t)-1)
			first = a;
		q = a + ml;
		end = ds_find(sc, q, sc->len, "tool call end", &el);
		nx = ds_find(sc, q, sc->len, "tool call begin", &nl);
		if (end == (size_t)-1 || (nx != (size_t)-1 && nx < end)) {
			end = nx != (size_t)-1 ? nx : sc->len;
			el = 0;
		}
		sep = ds_find(sc, q, end, "tool sep", &sl);
		if (sep == (size_t)-1) {
			tc_call_error(sc, "deepseek", NULL, "the call has no <｜tool▁sep｜> marker");
			p = last = end + el;
			continue;
		}
		nb = tc_skip_ws(sc, q, sep);
		ne = sep;
		while (ne > nb && isspace((unsigned char)sc->text[ne - 1]))
			ne--;
		before = xstrndup(sc->text + nb, ne - nb);
		q = sep + sl;
		if (!strcmp(before, "function")) {
			/* V3 and R1: function<｜tool▁sep｜>NAME\n```json\n{...}\n``` */
			size_t n0 = q;

			while (q < end && sc->text[q] != '\n' && sc->text[q] != '`' && sc->text[q] != '{')
				q++;
			nb = n0;
			ne = q;
			while (nb < ne && isspace((unsigned char)sc->text[nb]))
				nb++;
			while (ne > nb && isspace((unsigned char)sc->text[ne - 1]))
				ne--;
			name = xstrndup(sc->text + nb, ne - nb);
		} else {
			name = before;	/* V3.1: NAME<｜tool▁sep｜>{...} */
			before = NULL;
		}
		q = tc_skip_ws(sc, q, end);
		if (end - q >= 3 && !memcmp(sc->text + q, "```", 3)) {
			const char *nlp = memchr(sc->text + q, '\n', end - q);
			const char *fence;

			q = nlp ? (size_t)(nlp - sc->text) + 1 : end;
			fence = tc_find(sc, q, end, "```");
			if (fence)
				end = (size_t)(fence - sc->text);
		}
		q = tc_skip_ws(sc, q, end);
		if (!tc_known(sc, name)) {
			tc_unknown_error(sc, "deepseek", name);
		} else if (q >= end || sc->text[q] != '{') {
			tc_call_error(sc, "deepseek", name, "the arguments object is missing after "
				   "<｜tool▁sep｜>");
		} else {
			struct buf notes = BUF_INIT;
			json_t *j = tc_take_json(sc, q, end, "deepseek", 1, name, &used, &notes);

			if (json_is_object(j))
				tc_push_call(sc, name, j, "deepseek", notes.buf);
			else if (j)
				tc_call_error(sc, "deepseek", name, "its arguments are not a JSON object");
			json_decref(j);
			buf_release(&notes);
		}
		free(before);
		free(name);
		{
			size_t ce = ds_find(sc, q, sc->len, "tool call end", &el);

			p = last = ce != (size_t)-1 && (nx == (size_t)-1 || ce < nx) ? ce + el
				   : (nx != (size_t)-1 ? nx : sc->len);
		}
	}
	if (first != (size_t)-1) {
		size_t s0 = ds_find(sc, 0, first + 1, "tool calls begin", &ml), ce;

		if (s0 != (size_t)-1 && s0 < first)
			first = s0;
		ce = ds_find(sc, last, sc->len, "tool calls end", &ml);
		if (ce != (size_t)-1)
			last = ce + ml;
		tc_add_span(sc, first, last);
	} else if ((first = ds_find(sc, 0, sc->len, "tool calls begin", &ml)) != (size_t)-1) {
		/* the section opened, but no call in it begins: a call written half right */
		size_t ce = ds_find(sc, first + ml, sc->len, "tool calls end", &used);

		tc_call_error(sc, "deepseek", NULL, "<｜tool▁calls▁begin｜> holds no "
			      "<｜tool▁call▁begin｜> marker");
		tc_add_span(sc, first, ce != (size_t)-1 ? ce + used : sc->len);
	}
}

/* ---- fenced and bare JSON ---- */

/*
 * Command R writes its calls as "Action: ```json" and a list: a fence
 * after "Action:" (on its line or the one before) is that family's, so a
 * call it gets wrong is answered in its own form, not in forgex's. Returns
 * where "Action:" starts (the label is part of the call, not prose), or
 * (size_t)-1.
 */
static size_t action_label(const struct scan *sc, size_t a)
{
	size_t b = a;

	while (b > 0 && (sc->text[b - 1] == ' ' || sc->text[b - 1] == '\t'))
		b--;
	if (b > 0 && sc->text[b - 1] == '\n')
		b--;
	if (b > 0 && sc->text[b - 1] == '\r')
		b--;
	while (b > 0 && (sc->text[b - 1] == ' ' || sc->text[b - 1] == '\t'))
		b--;
	return b >= 7 && !memcmp(sc->text + b - 7, "Action:", 7) ? b - 7 : (size_t)-1;
}

static void scan_fenced(struct scan *sc)
{
	size_t p = 0, used;
	const char *o;

	while ((o = tc_find(sc, p, sc->len, "```"))) {
		size_t a = (size_t)(o - sc->text), body = a + 3, end, label;
		const char *nl = memchr(sc->text + body, '\n', sc->len - body), *c;

		if (!nl)
			break;
		body = (size_t)(nl - sc->text) + 1;
		c = tc_find(sc, body, sc->len, "```");
		end = c ? (size_t)(c - sc->text) : sc->len;
		if (body - a == 3 + 10 && !memcmp(sc->text + a + 3, "tool_code\n", 10)) {
			/* Gemma: ```tool_code\nNAME(k="v")\n``` */
			size_t before = sc->out->nr + sc->out->errors.nr;

			tc_take_tool_code(sc, body, end);
			if (sc->out->nr + sc->out->errors.nr > before)
				tc_add_span(sc, a, c ? end + 3 : end);
			p = c ? end + 3 : sc->len;
			continue;
		}
		body = tc_skip_ws(sc, body, end);
		label = action_label(sc, a);
		if (body < end && (sc->text[body] == '{' || sc->text[body] == '[') &&
		    tc_take_calls_at(sc, body, end, label != (size_t)-1 ? "command-r" : "fenced", 1,
				     &used))
			tc_add_span(sc, label != (size_t)-1 ? label : a, c ? end + 3 : end);
		p = c ? end + 3 : sc->len;
	}
}

static int starts_call_object(const struct scan *sc, size_t p)
{
	/* the arguments may come first: JSON's keys have no order (Laguna writes them so) */
	static const char *const keys[] = { "\"name\"", "\"tool\"", "\"function\"", "\"type\"",
					     "\"tool_name\"", "\"tool_call\"", "\"tool_calls\"",
					     "\"arguments\"", "\"parameters\"" };
	size_t k;

	p = tc_skip_ws(sc, p + 1, sc->len);
	for (k = 0; k < ARRAY_SIZE(keys); k++)
		if (sc->len - p >= strlen(keys[k]) && !memcmp(sc->text + p, keys[k], strlen(keys[k])))
			return 1;
	return 0;
}

/*
 * Command R's action item ({"tool_name": ..., "parameters": ...}) stands
 * bare only in its list ([{...}, ...]); one alone in prose is an example
 * shown to the reader, not a call. (Llama 3's bare {"name": ...} is its
 * call form, and is read wherever it is.)
 */
static int lone_action_item(const struct scan *sc, size_t a)
{
	size_t p = tc_skip_ws(sc, a + 1, sc->len), b = a;

	if (sc->len - p < 11 || memcmp(sc->text + p, "\"tool_name\"", 11))
		return 0;
	while (b > 0 && isspace((unsigned char)sc->text[b - 1]))
		b--;
	return !b || (sc->text[b - 1] != '[' && sc->text[b - 1] != ',');
}

static void scan_bare(struct scan *sc)
{
	size_t p = 0, used, tries = 0;
	const char *o;

	if (sc->len > BARE_MAX_TEXT)
		return;
	while ((o = memchr(sc->text + p, '{', sc->len - p)) && tries < BARE_MAX_TRIES) {
		size_t a = (size_t)(o - sc->text);

		p = a + 1;
		if (!starts_call_object(sc, a) || lone_action_item(sc, a))
			continue;
		tries++;
		if (tc_take_calls_at(sc, a, sc->len, "bare", 2, &used) && used) {
			tc_add_span(sc, a, a + used);
			p = a + used;
		}
	}
}

static int cmp_span(const void *x, const void *y)
{
	const struct span *a = x, *b = y;

	return (a->a > b->a) - (a->a < b->a);
}

/*
 * Most specific first: a dialect with its own tokens before the ones whose
 * markers others reuse (<tool_call>, <function=...>), pythonic and JSON
 * without markers last. The first that finds anything wins; its index is
 * returned (-1: none did).
 */
static void (*const passes[])(struct scan *) = {
		tc_scan_plamo3, tc_scan_cwm, tc_scan_dots, tc_scan_step_audio2, tc_scan_iquest2,
		tc_scan_harmony, tc_scan_kimi, tc_scan_kimi3, tc_scan_seed, tc_scan_minimax3,
		tc_scan_more, tc_scan_hy, tc_scan_inkling, tc_scan_solar, tc_scan_gigachat35,
		tc_scan_k2_horizon, scan_hermes,
		tc_scan_function_gemma, tc_scan_lfm2, tc_scan_invoke, tc_scan_minicpm5,
		tc_scan_tagged_json,
		tc_scan_function_tag, scan_llama3, scan_mistral, scan_deepseek, tc_scan_olmo3,
		tc_scan_recipient, tc_scan_pythonic, tc_scan_line_calls, scan_fenced, scan_bare,
};

static long run_passes(struct scan *sc)
{
	size_t k;

	for (k = 0; k < ARRAY_SIZE(passes); k++) {
		sc->spans_nr = 0;
		passes[k](sc);
		if (sc->out->nr || sc->out->errors.nr)
			return (long)k;
	}
	return -1;
}

/*
 * The calls were found with reasoning blanked out, and their arguments
 * read from that text: a value holding what looks like reasoning (a
 * prompt template written to a file, "Reply as <think>...</think>") lost
 * it to spaces. The same pass reads the calls' own stretches again, from
 * the reply as sent (everything else blanked); when it finds the same
 * calls, by name and in order, and as many it could not read, their
 * arguments are taken from there. A stretch that held real reasoning
 * between calls reads differently and keeps the first reading.
 */
/* A scan of the same reply and tools as `sc`, over `text`, into `out`. */
static void sub_scan(struct scan *sub, const struct scan *sc, const char *text,
		     struct text_calls *out)
{
	memset(sub, 0, sizeof(*sub));
	sub->orig = sc->orig;
	sub->len = sc->len;
	sub->text = text;
	sub->tools = sc->tools;
	sub->out = out;
}

/*
 * Whether a string in `v` is in the blanked text but not in the reply as
 * sent: a value the first reading made of blanked reasoning.
 */
static int made_of_blanks(const json_t *v, const struct scan *sc)
{
	const char *key;
	json_t *x;
	size_t i, n;

	if (json_is_string(v)) {
		n = json_string_length(v);
		return n && memmem(sc->text, sc->len, json_string_value(v), n) &&
		       !memmem(sc->orig, sc->len, json_string_value(v), n);
	}
	if (json_is_object(v)) {
		json_object_foreach((json_t *)v, key, x)
			if (made_of_blanks(x, sc))
				return 1;
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, x)
			if (made_of_blanks(x, sc))
				return 1;
	}
	return 0;
}

/*
 * The stretches read differently from the reply as sent: a call whose
 * value was made of blanked text (reasoning markers inside it, with bytes
 * that are not text, so the reply as sent does not read) would write
 * spaces where the model wrote something. It is not run; the model is told.
 */
static void drop_blanked(struct scan *sc)
{
	size_t i, j = 0;

	for (i = 0; i < sc->out->nr; i++) {
		struct text_call *c = &sc->out->v[i];
		json_t *a = json_loads(c->arguments, JSON_ALLOW_NUL, NULL);
		int bad = a && made_of_blanks(a, sc);

		json_decref(a);
		if (!bad) {
			sc->out->v[j++] = *c;
			continue;
		}
		strvec_pushf(&sc->out->errors, "Your tool call to %s (%s format) could not be read "
			     "as written, so nothing was run: a value in it holds what reads as "
			     "reasoning markers (such as <think>) next to bytes that are not text. "
			     "Send the call again, whole, as %s, with such text escaped or left out.",
			     c->name, c->dialect, tc_example(c->dialect));
		free(c->name);
		free(c->arguments);
		free(c->repaired);
	}
	sc->out->nr = j;
}

static void reread_unmasked(struct scan *sc, long k)
{
	struct text_calls again = TEXT_CALLS_INIT;
	struct scan sub;
	char *text;
	size_t i;

	if (k < 0 || !sc->spans_nr || !memcmp(sc->text, sc->orig, sc->len))
		return;
	text = xmalloc(sc->len + 1);
	memset(text, ' ', sc->len);
	text[sc->len] = '\0';
	for (i = 0; i < sc->spans_nr; i++)
		if (sc->spans[i].a < sc->spans[i].b && sc->spans[i].b <= sc->len)
			memcpy(text + sc->spans[i].a, sc->orig + sc->spans[i].a,
			       sc->spans[i].b - sc->spans[i].a);
	sub_scan(&sub, sc, text, &again);
	passes[k](&sub);
	if (again.nr == sc->out->nr && again.errors.nr == sc->out->errors.nr) {
		for (i = 0; i < again.nr && !strcmp(again.v[i].name, sc->out->v[i].name); i++)
			;
		if (i == again.nr)
			for (i = 0; i < again.nr; i++) {
				free(sc->out->v[i].arguments);
				free(sc->out->v[i].repaired);
				sc->out->v[i].arguments = again.v[i].arguments;
				sc->out->v[i].repaired = again.v[i].repaired;
				again.v[i].arguments = again.v[i].repaired = NULL;
			}
		else
			drop_blanked(sc);
	} else {
		drop_blanked(sc);
	}
	free(sub.spans);
	textcalls_release(&again);
	free(text);
}

/*
 * Nothing was found once reasoning was blanked out. When reasoning was
 * opened and never closed, the calls written after its opening are looked
 * for as if it had ended there (vLLM's GLM-4.7 and Ling 3 parsers, and
 * llama.cpp's Kimi K2 Thinking, take <tool_call> as the end of an unclosed
 * <think> and run them). They are never run: each is told to the model,
 * which may send it again after its reasoning, so a model that forgot its
 * </think> loses one round trip rather than its turn, and one that was
 * only thinking about a call decides again in the open.
 */
static void nudge_unclosed(struct scan *sc)
{
	struct text_calls found = TEXT_CALLS_INIT;
	struct scan sub;
	char *open;
	size_t i;

	open = xmalloc(sc->len + 1);
	memcpy(open, sc->orig, sc->len);
	open[sc->len] = '\0';
	tc_mask_reasoning(open, sc->len, 1);
	if (memcmp(open, sc->text, sc->len)) {
		sub_scan(&sub, sc, open, &found);
		run_passes(&sub);
		for (i = 0; i < found.nr; i++)
			strvec_pushf(&sc->out->errors, "Your tool call to %s (%s format) was written "
				     "inside reasoning that was never closed (its end, such as "
				     "</think>, is not in the reply), so nothing was run. If you mean "
				     "to make the call, end the reasoning first. Send the call again "
				     "after it, whole, as %s.", found.v[i].name, found.v[i].dialect,
				     tc_example(found.v[i].dialect));
		free(sub.spans);
		textcalls_release(&found);
	}
	free(open);
}

size_t textcalls_parse(struct text_calls *out, const char *text, size_t len,
		       const struct strvec *tools)
{
	struct scan sc;
	size_t i, pos = 0;
	char *masked;
	long k;

	memset(&sc, 0, sizeof(sc));
	sc.orig = text ? text : "";
	sc.len = text ? len : 0;
	/* a call the model only thought about is never run: its reasoning is blanked out */
	masked = xmalloc(sc.len + 1);
	memcpy(masked, sc.orig, sc.len);
	masked[sc.len] = '\0';
	tc_mask_reasoning(masked, sc.len, 0);
	sc.text = masked;
	sc.tools = tools;
	sc.out = out;
	k = run_passes(&sc);
	if (!out->nr && !out->errors.nr)
		nudge_unclosed(&sc);
	else if (out->nr)
		reread_unmasked(&sc, k);
	if (sc.spans_nr > 1)
		qsort(sc.spans, sc.spans_nr, sizeof(*sc.spans), cmp_span);
	for (i = 0; i < sc.spans_nr; i++) {
		if (sc.spans[i].a > pos)
			buf_add(&out->prose, sc.orig + pos, sc.spans[i].a - pos);
		if (sc.spans[i].b > pos)
			pos = sc.spans[i].b;
	}
	if (pos < sc.len)
		buf_add(&out->prose, sc.orig + pos, sc.len - pos);
	buf_trim(&out->prose);
	free(sc.spans);
	free(masked);
	return out->nr;
}

void textcalls_release(struct text_calls *tc)
{
	size_t i;

	for (i = 0; i < tc->nr; i++) {
		free(tc->v[i].name);
		free(tc->v[i].arguments);
		free(tc->v[i].repaired);
	}
	free(tc->v);
	strvec_clear(&tc->errors);
	buf_release(&tc->prose);
	tc->v = NULL;
	tc->nr = tc->alloc = 0;
	tc->unknown = 0;
	buf_init(&tc->prose, 0);
}
