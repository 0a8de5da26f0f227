/*
 * Text-call dialects written as function calls (see textcalls_int.h):
 * Python's NAME(key=value) in pythonic lists (vLLM, SGLang, Llama 3.2 /
 * 4), OLMo 3's <function_calls>, LFM2's <|tool_call_start|>, Llama 3's
 * built-in NAME.call(...) and Gemma's ```tool_code, read as Python
 * literals; and FunctionGemma's / Gemma 4's call:NAME{key:<escape>v<escape>}.
 * Formats read from the families' templates and the servers' parser
 * tests; the samples are in tests/fixtures/dialects/.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "llm/textcalls_int.h"

/* Deepest nesting a Python or Gemma value may have. */
#define VALUE_DEPTH 64

/* ---- Python literals and calls ---- */

struct py {
	const char *s;
	size_t p, end;
	struct buf why;
};

static void py_ws(struct py *y)
{
	while (y->p < y->end && isspace((unsigned char)y->s[y->p]))
		y->p++;
}

static json_t *py_fail(struct py *y, const char *what)
{
	if (!y->why.len)
		buf_addstr(&y->why, what);
	return NULL;
}

static json_t *py_string(struct py *y)
{
	char q = y->s[y->p];
	int triple = y->end - y->p >= 3 && y->s[y->p + 1] == q && y->s[y->p + 2] == q;
	struct buf b = BUF_INIT;
	json_t *j;

	y->p += triple ? 3 : 1;
	for (;;) {
		char c;

		if (y->p >= y->end) {
			buf_release(&b);
			return py_fail(y, "a string is not closed");
		}
		c = y->s[y->p];
		if (c == q && (!triple || (y->end - y->p >= 3 && y->s[y->p + 1] == q &&
					   y->s[y->p + 2] == q))) {
			y->p += triple ? 3 : 1;
			break;
		}
		if (c == '\n' && !triple) {
			buf_release(&b);
			return py_fail(y, "a string runs past the end of its line");
		}
		if (c == '\\' && y->p + 1 < y->end) {
			char e = y->s[++y->p];

			/* as Python reads them: an escape it does not know keeps its backslash */
			if (!strchr("ntr\\'\"", e))
				buf_addch(&b, '\\');
			buf_addch(&b, e == 'n' ? '\n' : e == 't' ? '\t' : e == 'r' ? '\r' : e);
			y->p++;
			continue;
		}
		buf_addch(&b, c);
		y->p++;
	}
	j = jsonx_stringn_lossy(b.buf, b.len);
	buf_release(&b);
	return j;
}

static json_t *py_value(struct py *y, int depth);

/* [a, b], (a, b) or {k: v}, with `close` the closing bracket */
static json_t *py_container(struct py *y, char close, int depth)
{
	json_t *c = close == '}' ? json_object() : json_array();

	y->p++;
	for (;;) {
		json_t *k = NULL, *v;

		py_ws(y);
		if (y->p < y->end && y->s[y->p] == close) {
			y->p++;
			return c;
		}
		if (close == '}') {
			if (y->p >= y->end || (y->s[y->p] != '\'' && y->s[y->p] != '"')) {
				json_decref(c);
				return py_fail(y, "a dictionary key is not a quoted string");
			}
			if (!(k = py_string(y))) {
				json_decref(c);
				return NULL;
			}
			py_ws(y);
			if (y->p >= y->end || y->s[y->p] != ':') {
				json_decref(k);
				json_decref(c);
				return py_fail(y, "a dictionary key is not followed by ':'");
			}
			y->p++;
		}
		if (!(v = py_value(y, depth + 1))) {
			json_decref(k);
			json_decref(c);
			return NULL;
		}
		if (k) {
			jsonx_set(c, json_string_value(k), v);
			json_decref(k);
		} else {
			json_array_append_new(c, v);
		}
		py_ws(y);
		if (y->p < y->end && y->s[y->p] == ',') {
			y->p++;
			continue;
		}
		if (y->p < y->end && y->s[y->p] == close) {
			y->p++;
			return c;
		}
		json_decref(c);
		return py_fail(y, "a list or dictionary is missing a ',' or its closing bracket");
	}
}

static json_t *py_value(struct py *y, int depth)
{
	static const struct {
		const char *word;
		int kind;	/* 0 null, 1 true, 2 false */
	} words[] = {
		{ "None", 0 }, { "null", 0 }, { "True", 1 }, { "true", 1 }, { "False", 2 },
		{ "false", 2 },
	};
	size_t i, n0;
	char c;

	py_ws(y);
	if (depth > VALUE_DEPTH)
		return py_fail(y, "the value is nested too deeply");
	if (y->p >= y->end)
		return py_fail(y, "a value is missing");
	c = y->s[y->p];
	if (c == '\'' || c == '"')
		return py_string(y);
	if (c == '[')
		return py_container(y, ']', depth);
	if (c == '(')
		return py_container(y, ')', depth);
	if (c == '{')
		return py_container(y, '}', depth);
	for (i = 0; i < ARRAY_SIZE(words); i++) {
		size_t n = strlen(words[i].word);

		if (y->end - y->p >= n && !memcmp(y->s + y->p, words[i].word, n) &&
		    (y->p + n == y->end || !tc_name_char((unsigned char)y->s[y->p + n]))) {
			y->p += n;
			return words[i].kind == 0 ? json_null() : json_boolean(words[i].kind == 1);
		}
	}
	n0 = y->p;
	if (c == '-' || c == '+')
		y->p++;
	while (y->p < y->end && (isdigit((unsigned char)y->s[y->p]) || y->s[y->p] == '.' ||
				 y->s[y->p] == 'e' || y->s[y->p] == 'E' ||
				 ((y->s[y->p] == '-' || y->s[y->p] == '+') &&
				  (y->s[y->p - 1] == 'e' || y->s[y->p - 1] == 'E'))))
		y->p++;
	if (y->p > n0 && isdigit((unsigned char)y->s[y->p - 1])) {
		char *num = xstrndup(y->s + n0 + (c == '+'), y->p - n0 - (c == '+')), *e;
		json_t *j = NULL;

		if (!strpbrk(num, ".eE")) {
			long long v = strtoll(num, &e, 10);

			if (!*e)
				j = json_integer(v);
		} else {
			double d = strtod(num, &e);

			if (!*e)
				j = json_real(d);
		}
		free(num);
		if (j)
			return j;
	}
	y->p = n0;
	return py_fail(y, "a value is not a quoted string, number, True/False/None, list or "
		       "dictionary");
}

/*
 * NAME(key=value, ...) at y->p. On success stores the name (with a
 * trailing ".call" removed when `builtin`) and the arguments.
 */
static int py_call(struct py *y, char **name, json_t **args, int builtin)
{
	size_t n0, n1;
	int pos = 0;

	*name = NULL;
	*args = NULL;
	py_ws(y);
	n0 = y->p;
	while (y->p < y->end && tc_name_char((unsigned char)y->s[y->p]))
		y->p++;
	n1 = y->p;
	if (n1 == n0) {
		py_fail(y, "a call must start with the tool's name");
		return -1;
	}
	if (builtin) {
		if (n1 - n0 <= 5 || memcmp(y->s + n1 - 5, ".call", 5)) {
			py_fail(y, "a built-in call is written NAME.call(...)");
			return -1;
		}
		n1 -= 5;
	}
	*name = xstrndup(y->s + n0, n1 - n0);
	py_ws(y);
	if (y->p >= y->end || y->s[y->p] != '(') {
		py_fail(y, "the tool's name is not followed by '('");
		return -1;
	}
	y->p++;
	*args = json_object();
	for (;;) {
		size_t k0, k1;
		char *key;
		json_t *v;

		py_ws(y);
		if (y->p < y->end && y->s[y->p] == ')') {
			y->p++;
			return 0;
		}
		k0 = y->p;
		while (y->p < y->end && (isalnum((unsigned char)y->s[y->p]) || y->s[y->p] == '_'))
			y->p++;
		k1 = y->p;
		py_ws(y);
		if (k1 == k0 || y->p >= y->end || y->s[y->p] != '=') {
			buf_addf(&y->why, "argument %d has no name: write each as KEY=VALUE", pos + 1);
			return -1;
		}
		y->p++;
		if (!(v = py_value(y, 1)))
			return -1;
		key = xstrndup(y->s + k0, k1 - k0);
		jsonx_set(*args, key, v);
		free(key);
		pos++;
		py_ws(y);
		if (y->p < y->end && y->s[y->p] == ',') {
			y->p++;
			continue;
		}
		if (y->p < y->end && y->s[y->p] == ')') {
			y->p++;
			return 0;
		}
		py_fail(y, "the arguments are missing a ',' or the closing ')'");
		return -1;
	}
}

/* Take one parsed Python call; returns 0, or -1 after recording the error. */
static int py_take(struct scan *sc, struct py *y, const char *dialect, int builtin)
{
	char *name;
	json_t *args;
	int ret = py_call(y, &name, &args, builtin);

	if (ret < 0)
		tc_call_error(sc, dialect, name && *name ? name : NULL, "%s", y->why.buf);
	else if (!tc_known(sc, name))
		tc_unknown_error(sc, dialect, name);
	else
		tc_push_call(sc, name, args, dialect, NULL);
	free(name);
	json_decref(args);
	return ret;
}

/*
 * A list of calls in [p, end): `[a(...), b(...)]` when `bracket`, else one
 * call per line (or separated by ','). Returns the bytes used.
 */
static size_t py_take_list(struct scan *sc, size_t p, size_t end, const char *dialect,
			   int bracket)
{
	struct py y = { sc->text, p, end, BUF_INIT };
	size_t used, first = sc->out->nr;

	if (bracket) {
		py_ws(&y);
		y.p++;	/* the '[' the caller saw */
	}
	for (;;) {
		py_ws(&y);
		if (bracket && y.p < end && y.s[y.p] == ']') {
			y.p++;
			break;
		}
		if (!bracket && y.p >= end)
			break;
		if (py_take(sc, &y, dialect, 0) < 0) {
			y.p = end;
			break;
		}
		py_ws(&y);
		if (y.p < end && (y.s[y.p] == ',' || y.s[y.p] == ';'))
			y.p++;
		else if (bracket && (y.p >= end || y.s[y.p] != ']')) {
			tc_call_error(sc, dialect, NULL, "the list of calls is missing a ',' or its "
				      "closing ']'");
			/* a list that cannot be read whole runs none of its calls */
			while (sc->out->nr > first) {
				struct text_call *c = &sc->out->v[--sc->out->nr];

				free(c->name);
				free(c->arguments);
				free(c->repaired);
			}
			y.p = end;
			break;
		}
	}
	used = y.p - p;
	buf_release(&y.why);
	return used;
}

/* Does [p, end) start a pythonic call, `NAME(` (after `[` when `bracket`)? */
static int looks_pythonic(const struct scan *sc, size_t p, size_t end, int bracket)
{
	p = tc_skip_ws(sc, p, end);
	if (bracket) {
		if (p >= end || sc->text[p] != '[')
			return 0;
		p = tc_skip_ws(sc, p + 1, end);
	}
	if (p >= end || !(isalpha((unsigned char)sc->text[p]) || sc->text[p] == '_'))
		return 0;
	while (p < end && tc_name_char((unsigned char)sc->text[p]))
		p++;
	p = tc_skip_ws(sc, p, end);
	return p < end && sc->text[p] == '(';
}

size_t tc_take_llama_builtin(struct scan *sc, size_t p, size_t end)
{
	struct py y = { sc->text, p, end, BUF_INIT };
	size_t used;

	if (!looks_pythonic(sc, p, end, 0)) {
		buf_release(&y.why);
		return 0;
	}
	py_take(sc, &y, "llama3", 1);
	used = y.p > p ? y.p - p : end - p;
	buf_release(&y.why);
	return used;
}

size_t tc_take_py_calls(struct scan *sc, size_t p, size_t end, const char *dialect)
{
	return py_take_list(sc, p, end, dialect, 0);
}

/* The end of the Python name at `p` (`p` itself when there is none). */
static size_t py_ident_end(const struct scan *sc, size_t p, size_t end)
{
	size_t q = p;

	if (q < end && (isalpha((unsigned char)sc->text[q]) || sc->text[q] == '_'))
		while (q < end && (isalnum((unsigned char)sc->text[q]) || sc->text[q] == '_'))
			q++;
	return q;
}

static size_t py_blank(const struct scan *sc, size_t p, size_t end)
{
	while (p < end && (sc->text[p] == ' ' || sc->text[p] == '\t'))
		p++;
	return p;
}

/*
 * Gemma is told its tools are Python functions it may call, and writes a
 * call as Python would use one: NAME(k=v), print(NAME(k=v)), or
 * x = NAME(k=v) and then print(x) (Google's Gemma 3 notebooks show all
 * three). The call inside is the call; print() of a name only shows a
 * result, and a fence whose first line is no call holds none.
 */
void tc_take_tool_code(struct scan *sc, size_t p, size_t end)
{
	struct py y = { sc->text, p, end, BUF_INIT };
	int first = 1;

	for (;; first = 0) {
		size_t s, q, r;
		int wrapped = 0;

		py_ws(&y);
		if (y.p >= end)
			break;
		s = y.p;
		q = py_ident_end(sc, s, end);
		r = py_blank(sc, q, end);
		if (q > s && r + 1 < end && sc->text[r] == '=' && sc->text[r + 1] != '=') {
			y.p = r + 1;	/* x = NAME(...): the value is the call */
		} else if (q - s == 5 && !memcmp(sc->text + s, "print", 5) && r < end &&
			   sc->text[r] == '(') {
			size_t in = tc_skip_ws(sc, r + 1, end), ie = py_ident_end(sc, in, end);
			size_t c = tc_skip_ws(sc, ie, end);

			if (ie > in && c < end && sc->text[c] == ')') {
				y.p = c + 1;	/* print(x): nothing to run */
				continue;
			}
			y.p = r + 1;
			wrapped = 1;
		}
		if (first && !looks_pythonic(sc, y.p, end, 0))
			break;
		if (py_take(sc, &y, "gemma", 0) < 0)
			break;
		py_ws(&y);
		if (wrapped && y.p < end && sc->text[y.p] == ')')
			y.p++;
		py_ws(&y);
		if (y.p < end && (sc->text[y.p] == ',' || sc->text[y.p] == ';'))
			y.p++;
	}
	buf_release(&y.why);
}

/* ---- pythonic lists (vLLM pythonic, Llama 3.2 / 4, SGLang) ---- */

/* Would the list at `p` be read whole, naming only known tools, with nothing but `tail` after? */
static int pythonic_whole(struct scan *sc, size_t p, size_t *stop)
{
	struct text_calls tmp = TEXT_CALLS_INIT;
	struct scan t = *sc;
	size_t used, q;
	int ok;

	t.out = &tmp;
	t.spans = NULL;
	t.spans_nr = t.spans_alloc = 0;
	used = py_take_list(&t, p, sc->len, "pythonic", 1);
	q = tc_skip_ws(sc, p + used, sc->len);
	if (tc_starts(sc, q, sc->len, "<|python_end|>"))
		q = tc_skip_ws(sc, q + 14, sc->len);
	ok = tmp.nr && !tmp.errors.nr;
	*stop = q;
	textcalls_release(&tmp);
	return ok;
}

/*
 * The whole reply is one call without its list, NAME(k=v) (Gemma 4 through
 * LiteRT-LM writes them so): read when it names a known tool and nothing
 * but blanks follows. Returns 1 when it was taken.
 */
static int lone_call(struct scan *sc, size_t p)
{
	struct py y = { sc->text, p, sc->len, BUF_INIT };
	char *name = NULL;
	json_t *args = NULL;
	int ok;

	if (!looks_pythonic(sc, p, sc->len, 0))
		return 0;
	ok = py_call(&y, &name, &args, 0) == 0 && tc_known(sc, name) &&
	     tc_skip_ws(sc, y.p, sc->len) == sc->len;
	if (ok) {
		tc_push_call(sc, name, args, "pythonic", NULL);
		tc_add_span(sc, p, sc->len);
	}
	free(name);
	json_decref(args);
	buf_release(&y.why);
	return ok;
}

/*
 * A list of calls, [NAME(k=v), ...], is a call where a model writes it:
 * the whole reply (or its start), after <|python_start|>, or ending the
 * reply after some prose. In the middle of prose it is only a mention. So
 * is one call without its list, unless it is the whole reply (lone_call()).
 */
void tc_scan_pythonic(struct scan *sc)
{
	size_t p = tc_skip_ws(sc, 0, sc->len), a = p, end = sc->len, used, q, stop, tries = 0;
	size_t tag = tc_find_at(sc->text, 0, sc->len, "<|python_start|>");

	if (lone_call(sc, p))
		return;

	if (tag != (size_t)-1 && looks_pythonic(sc, tag + 16, end, 1)) {
		a = tag;
		p = tc_skip_ws(sc, tag + 16, end);
	} else if (tc_starts(sc, p, end, "<|python_start|>")) {
		p = tc_skip_ws(sc, p + 16, end);
	} else if (!looks_pythonic(sc, p, end, 1)) {
		/* prose, then the list to the end of the reply */
		for (q = sc->len; q > 0; q--) {
			if (sc->text[q - 1] != '[' || !looks_pythonic(sc, q - 1, end, 1))
				continue;
			if (pythonic_whole(sc, q - 1, &stop) && stop == sc->len)
				break;
			if (++tries >= 16)
				return;
		}
		if (!q)
			return;
		a = p = q - 1;
	}
	if (!looks_pythonic(sc, p, end, 1))
		return;
	used = py_take_list(sc, p, end, "pythonic", 1);
	p += used;
	if (tc_starts(sc, p, end, "<|python_end|>"))
		p += 14;
	tc_add_span(sc, a, p);
}

/* ---- OLMo 3: <function_calls>a(...)\nb(...)</function_calls> ---- */

void tc_scan_olmo3(struct scan *sc)
{
	size_t p = 0, o;

	while ((o = tc_find_at(sc->text, p, sc->len, "<function_calls>")) != (size_t)-1) {
		size_t body = o + 16, c = tc_find_at(sc->text, body, sc->len, "</function_calls>");
		size_t end = c == (size_t)-1 ? sc->len : c;

		if (looks_pythonic(sc, body, end, 0))
			py_take_list(sc, body, end, "olmo3", 0);
		else
			tc_call_error(sc, "olmo3", NULL, "<function_calls> does not hold NAME(...) "
				      "calls");
		p = c == (size_t)-1 ? sc->len : c + 17;
		tc_add_span(sc, o, p);
	}
}

/* ---- LFM2: <|tool_call_start|>[f(a="x")]<|tool_call_end|> ---- */

void tc_scan_lfm2(struct scan *sc)
{
	size_t p = 0, o, used;

	while ((o = tc_find_at(sc->text, p, sc->len, "<|tool_call_start|>")) != (size_t)-1) {
		size_t body = tc_skip_ws(sc, o + 19, sc->len);
		size_t c = tc_find_at(sc->text, body, sc->len, "<|tool_call_end|>");
		size_t end = c == (size_t)-1 ? sc->len : c;
		size_t q = tc_skip_ws(sc, body + 1, end);

		if (body < end && (sc->text[body] == '{' ||
				   (sc->text[body] == '[' && q < end && sc->text[q] == '{')))
			tc_take_calls_at(sc, body, end, "lfm2", TC_MARKED, &used);
		else if (looks_pythonic(sc, body, end, 1))
			py_take_list(sc, body, end, "lfm2", 1);
		else if (looks_pythonic(sc, body, end, 0))
			/* one call without its list, as Ollama's LFM2 parser also takes */
			py_take_list(sc, body, end, "lfm2", 0);
		else
			tc_call_error(sc, "lfm2", NULL, "<|tool_call_start|> is not followed by a "
				      "list of calls");
		p = c == (size_t)-1 ? sc->len : c + 17;
		tc_add_span(sc, o, p);
	}
}

/* ---- FunctionGemma and Gemma 4: call:NAME{key:<escape>v<escape>,n:1} ---- */

struct gv {
	const char *s;
	size_t p, end;
	const char *q;	/* the string delimiter */
	struct buf why;
};

static json_t *gv_value(struct gv *g, int depth);

static json_t *gv_fail(struct gv *g, const char *what)
{
	if (!g->why.len)
		buf_addstr(&g->why, what);
	return NULL;
}

static void gv_ws(struct gv *g)
{
	while (g->p < g->end && isspace((unsigned char)g->s[g->p]))
		g->p++;
}

static int gv_at(const struct gv *g, const char *w)
{
	size_t n = strlen(w);

	return g->end - g->p >= n && !memcmp(g->s + g->p, w, n);
}

static json_t *gv_string(struct gv *g)
{
	size_t ql = strlen(g->q), c;

	g->p += ql;
	c = tc_find_at(g->s, g->p, g->end, g->q);
	if (c == (size_t)-1)
		return gv_fail(g, "a string is not closed with its delimiter");
	{
		json_t *j = jsonx_stringn_lossy(g->s + g->p, c - g->p);

		g->p = c + ql;
		return j;
	}
}

static json_t *gv_container(struct gv *g, char close, int depth)
{
	json_t *c = close == '}' ? json_object() : json_array();

	g->p++;
	for (;;) {
		char *key = NULL;
		json_t *v;

		gv_ws(g);
		if (g->p < g->end && g->s[g->p] == close) {
			g->p++;
			return c;
		}
		if (close == '}') {
			if (gv_at(g, g->q)) {
				json_t *k = gv_string(g);

				if (!k) {
					json_decref(c);
					return NULL;
				}
				key = xstrdup(json_string_value(k));
				json_decref(k);
			} else {
				size_t k0 = g->p;

				while (g->p < g->end && g->s[g->p] != ':' && g->s[g->p] != ',' &&
				       g->s[g->p] != close)
					g->p++;
				while (g->p > k0 && isspace((unsigned char)g->s[g->p - 1]))
					g->p--;
				key = xstrndup(g->s + k0, g->p - k0);
				gv_ws(g);
			}
			if (!*key || g->p >= g->end || g->s[g->p] != ':') {
				free(key);
				json_decref(c);
				return gv_fail(g, "an argument is not written KEY:VALUE");
			}
			g->p++;
		}
		if (!(v = gv_value(g, depth + 1))) {
			free(key);
			json_decref(c);
			return NULL;
		}
		if (key) {
			json_t *k = jsonx_stringn_lossy(key, strlen(key));

			jsonx_set(c, json_string_value(k), v);
			json_decref(k);
			free(key);
		} else {
			json_array_append_new(c, v);
		}
		gv_ws(g);
		if (g->p < g->end && g->s[g->p] == ',') {
			g->p++;
			continue;
		}
		if (g->p < g->end && g->s[g->p] == close) {
			g->p++;
			return c;
		}
		json_decref(c);
		return gv_fail(g, "the arguments are missing a ',' or the closing bracket");
	}
}

static json_t *gv_value(struct gv *g, int depth)
{
	size_t v0;
	json_t *j;

	gv_ws(g);
	if (depth > VALUE_DEPTH)
		return gv_fail(g, "the value is nested too deeply");
	if (g->p >= g->end)
		return gv_fail(g, "a value is missing");
	if (gv_at(g, g->q))
		return gv_string(g);
	if (g->s[g->p] == '{')
		return gv_container(g, '}', depth);
	if (g->s[g->p] == '[')
		return gv_container(g, ']', depth);
	v0 = g->p;
	while (g->p < g->end && g->s[g->p] != ',' && g->s[g->p] != '}' && g->s[g->p] != ']')
		g->p++;
	while (g->p > v0 && isspace((unsigned char)g->s[g->p - 1]))
		g->p--;
	/* numbers, true/false/null as themselves; any other bare word is text */
	j = json_loadb(g->s + v0, g->p - v0, JSON_DECODE_ANY, NULL);
	if (j && !json_is_object(j) && !json_is_array(j))
		return j;
	json_decref(j);
	return jsonx_stringn_lossy(g->s + v0, g->p - v0);
}

static void scan_gemma_family(struct scan *sc, const char *open, const char *close,
			      const char *quote, const char *dialect)
{
	size_t p = 0, o, ol = strlen(open), cl = strlen(close);

	while ((o = tc_find_at(sc->text, p, sc->len, open)) != (size_t)-1) {
		size_t body = tc_skip_ws(sc, o + ol, sc->len), n0, c, end;
		struct gv g;
		char *name;
		json_t *args;

		c = tc_find_at(sc->text, body, sc->len, close);
		end = c == (size_t)-1 ? sc->len : c;
		p = c == (size_t)-1 ? sc->len : c + cl;
		tc_add_span(sc, o, p);
		if (!tc_starts(sc, body, end, "call:")) {
			tc_call_error(sc, dialect, NULL, "%s is not followed by call:NAME{...}", open);
			continue;
		}
		n0 = body + 5;
		for (body = n0; body < end && tc_name_char((unsigned char)sc->text[body]); body++)
			;
		name = xstrndup(sc->text + n0, body - n0);
		if (body >= end || sc->text[body] != '{') {
			tc_call_error(sc, dialect, *name ? name : NULL, "the name is not followed by "
				      "its arguments in {...}");
			free(name);
			continue;
		}
		g.s = sc->text;
		g.p = body;
		g.end = end;
		g.q = quote;
		buf_init(&g.why, 0);
		args = gv_container(&g, '}', 0);
		if (!args)
			tc_call_error(sc, dialect, name, "%s", g.why.buf);
		else if (!tc_known(sc, name))
			tc_unknown_error(sc, dialect, name);
		else
			tc_push_call(sc, name, args, dialect, NULL);
		json_decref(args);
		buf_release(&g.why);
		free(name);
	}
}

void tc_scan_function_gemma(struct scan *sc)
{
	scan_gemma_family(sc, "<start_function_call>", "<end_function_call>", "<escape>",
			  "functiongemma");
	if (!sc->out->nr && !sc->out->errors.nr)
		scan_gemma_family(sc, "<|tool_call>", "<tool_call|>", "<|\"|>", "gemma4");
}
