/*
 * The text-call dialects beyond plain JSON (see textcalls_int.h): the
 * token-marked families (harmony, Kimi K2, Seed-OSS, GLM, LFM2, Gemma),
 * Python-style calls (pythonic lists, OLMo 3, Llama 3's built-in tools,
 * Gemma's tool_code), the XML <invoke> family, JSON inside a family's own
 * markers, and the reasoning mask. Formats were read from the families'
 * chat templates and the servers' parser tests (vLLM, llama.cpp, SGLang,
 * Ollama); the samples live in tests/fixtures/dialects/.
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

/* ---- how each dialect is written, for the message to the model ---- */

static const struct form {
	const char *dialect, *example;
	int json;
} forms[] = {
	{ "hermes", "<tool_call>\n{\"name\": \"TOOL\", \"arguments\": {...}}\n</tool_call>", 1 },
	{ "glm", "<tool_call>TOOL\n<arg_key>KEY</arg_key>\n<arg_value>VALUE</arg_value>\n"
	  "</tool_call>", 0 },
	{ "qwen3-coder", "<tool_call>\n<function=TOOL>\n<parameter=KEY>\nVALUE\n</parameter>\n"
	  "</function>\n</tool_call>", 0 },
	{ "seed-oss", "<seed:tool_call>\n<function=TOOL>\n<parameter=KEY>VALUE</parameter>\n"
	  "</function>\n</seed:tool_call>", 0 },
	{ "harmony", "<|start|>assistant<|channel|>commentary to=functions.TOOL <|constrain|>json"
	  "<|message|>{...}<|call|>", 1 },
	{ "kimi-k2", "<|tool_calls_section_begin|><|tool_call_begin|>functions.TOOL:0"
	  "<|tool_call_argument_begin|>{...}<|tool_call_end|><|tool_calls_section_end|>", 1 },
	{ "lfm2", "<|tool_call_start|>[TOOL(key=\"value\")]<|tool_call_end|>", 0 },
	{ "pythonic", "[TOOL(key=\"value\", other=1)]", 0 },
	{ "olmo3", "<function_calls>TOOL(key=\"value\")</function_calls>", 0 },
	{ "gemma", "```tool_code\nTOOL(key=\"value\")\n```", 0 },
	{ "functiongemma", "<start_function_call>call:TOOL{key:<escape>value<escape>}"
	  "<end_function_call>", 0 },
	{ "gemma4", "<|tool_call>call:TOOL{key:<|\"|>value<|\"|>}<tool_call|>", 0 },
	{ "invoke", "<invoke name=\"TOOL\">\n<parameter name=\"KEY\">VALUE</parameter>\n</invoke>",
	  0 },
	{ "functionary", "<function=TOOL>{...}</function>", 1 },
	{ "llama3", "<|python_tag|>{\"name\": \"TOOL\", \"parameters\": {...}}", 1 },
	{ "mistral", "[TOOL_CALLS][{\"name\": \"TOOL\", \"arguments\": {...}}]", 1 },
	{ "deepseek", "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>TOOL<｜tool▁sep｜>{...}"
	  "<｜tool▁call▁end｜><｜tool▁calls▁end｜>", 1 },
	{ "granite", "<|tool_call|>[{\"name\": \"TOOL\", \"arguments\": {...}}]", 1 },
	{ "granite-20b", "<function_call> {\"name\": \"TOOL\", \"arguments\": {...}}", 1 },
	{ "jamba", "<tool_calls>[{\"name\": \"TOOL\", \"arguments\": {...}}]</tool_calls>", 1 },
	{ "nemotron", "<TOOLCALL>[{\"name\": \"TOOL\", \"arguments\": {...}}]</TOOLCALL>", 1 },
	{ "longcat", "<longcat_tool_call>{\"name\": \"TOOL\", \"arguments\": {...}}"
	  "</longcat_tool_call>", 1 },
	{ "internlm2", "<|action_start|><|plugin|>\n{\"name\": \"TOOL\", \"parameters\": {...}}"
	  "<|action_end|>", 1 },
	{ "command-r7b", "<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": \"TOOL\", "
	  "\"parameters\": {...}}]<|END_ACTION|>", 1 },
	{ "apertus", "<|tools_prefix|>[{\"TOOL\": {...}}]<|tools_suffix|>", 1 },
	{ "phi4", "functools[{\"name\": \"TOOL\", \"arguments\": {...}}]", 1 },
	{ "fenced", "```json\n{\"tool\": \"TOOL\", \"arguments\": {...}}\n```", 1 },
};

static const struct form *form_of(const char *dialect)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(forms); i++)
		if (!strcmp(forms[i].dialect, dialect))
			return &forms[i];
	return NULL;
}

const char *tc_example(const char *dialect)
{
	const struct form *f = form_of(dialect);

	return f ? f->example : "{\"name\": \"TOOL\", \"arguments\": {...}}";
}

int tc_dialect_is_json(const char *dialect)
{
	const struct form *f = form_of(dialect);

	return f ? f->json : 1;
}

/* ---- small text helpers ---- */

static size_t find_at(const char *t, size_t from, size_t end, const char *needle)
{
	const char *p;

	if (from >= end)
		return (size_t)-1;
	p = memmem(t + from, end - from, needle, strlen(needle));
	return p ? (size_t)(p - t) : (size_t)-1;
}

static int starts(const struct scan *sc, size_t p, size_t end, const char *s)
{
	size_t n = strlen(s);

	return end >= p && end - p >= n && !memcmp(sc->text + p, s, n);
}

static int name_char(int c)
{
	return isalnum(c) || c == '_' || c == '-' || c == '.';
}

static size_t min3(size_t a, size_t b, size_t c)
{
	size_t m = a < b ? a : b;

	return m < c ? m : c;
}

/* ---- the reasoning mask ---- */

static const struct {
	const char *open, *close;
} thinks[] = {
	{ "<think>", "</think>" },			/* Qwen3, DeepSeek R1, GLM, MiniMax, OLMo 3 */
	{ "<thinking>", "</thinking>" },
	{ "<seed:think>", "</seed:think>" },		/* Seed-OSS */
	{ "[THINK]", "[/THINK]" },			/* Magistral */
	{ "<|START_THINKING|>", "<|END_THINKING|>" },	/* Command A, R7B */
	{ "\xe2\x97\x81think\xe2\x96\xb7", "\xe2\x97\x81/think\xe2\x96\xb7" },	/* Kimi: ◁think▷ */
	{ "<|channel>thought", "<channel|>" },		/* Gemma 4 */
};

static void blank(char *t, size_t a, size_t b)
{
	memset(t + a, ' ', b - a);
}

static int at(const char *t, size_t len, size_t p, const char *s)
{
	size_t n = strlen(s);

	return p <= len && len - p >= n && !memcmp(t + p, s, n);
}

/* harmony: <|channel|>analysis<|message|>...<|end|>, and its header back to <|start|> */
static void mask_harmony(char *t, size_t len)
{
	static const char ch[] = "<|channel|>analysis";
	size_t p = 0, o;

	while ((o = find_at(t, p, len, ch)) != (size_t)-1) {
		size_t a = o, b, m, s;

		/* the header may name a recipient before the channel: <|start|>assistant to=... */
		for (s = o; s > 0 && o - s < 256; s--)
			if (s + 9 <= o && at(t, len, s, "<|start|>"))
				break;
		if (s + 9 <= o && at(t, len, s, "<|start|>") &&
		    find_at(t, s, o, "<|message|>") == (size_t)-1)
			a = s;
		m = find_at(t, o, len, "<|message|>");
		b = m == (size_t)-1 ? len :
		    min3(find_at(t, m, len, "<|end|>"), find_at(t, m, len, "<|call|>"),
			 find_at(t, m, len, "<|start|>"));
		if (b == (size_t)-1)
			b = len;
		else if (at(t, len, b, "<|end|>"))
			b += 7;
		else if (at(t, len, b, "<|call|>"))
			b += 8;
		blank(t, a, b);
		p = b;
	}
}

void tc_mask_reasoning(char *text, size_t len)
{
	size_t k;

	for (k = 0; k < ARRAY_SIZE(thinks); k++) {
		size_t ol = strlen(thinks[k].open), cl = strlen(thinks[k].close);
		size_t o = find_at(text, 0, len, thinks[k].open), c = find_at(text, 0, len,
									       thinks[k].close);
		size_t p = 0;

		/* the template opened the reasoning in the prompt: only its end is in the reply */
		if (c != (size_t)-1 && (o == (size_t)-1 || c < o)) {
			blank(text, 0, c + cl);
			p = c + cl;
		}
		while ((o = find_at(text, p, len, thinks[k].open)) != (size_t)-1) {
			c = find_at(text, o + ol, len, thinks[k].close);
			if (c == (size_t)-1) {
				blank(text, o, len);	/* cut off while thinking */
				break;
			}
			blank(text, o, c + cl);
			p = c + cl;
		}
	}
	mask_harmony(text, len);
}

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
		    (y->p + n == y->end || !name_char((unsigned char)y->s[y->p + n]))) {
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
	while (y->p < y->end && name_char((unsigned char)y->s[y->p]))
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
	while (p < end && name_char((unsigned char)sc->text[p]))
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

void tc_take_tool_code(struct scan *sc, size_t p, size_t end)
{
	if (looks_pythonic(sc, p, end, 0))
		py_take_list(sc, p, end, "gemma", 0);
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
	if (starts(sc, q, sc->len, "<|python_end|>"))
		q = tc_skip_ws(sc, q + 14, sc->len);
	ok = tmp.nr && !tmp.errors.nr;
	*stop = q;
	textcalls_release(&tmp);
	return ok;
}

/*
 * A list of calls, [NAME(k=v), ...], is a call where a model writes it:
 * the whole reply (or its start), after <|python_start|>, or ending the
 * reply after some prose. In the middle of prose it is only a mention.
 */
void tc_scan_pythonic(struct scan *sc)
{
	size_t p = tc_skip_ws(sc, 0, sc->len), a = p, end = sc->len, used, q, stop, tries = 0;
	size_t tag = find_at(sc->text, 0, sc->len, "<|python_start|>");

	if (tag != (size_t)-1 && looks_pythonic(sc, tag + 16, end, 1)) {
		a = tag;
		p = tc_skip_ws(sc, tag + 16, end);
	} else if (starts(sc, p, end, "<|python_start|>")) {
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
	if (starts(sc, p, end, "<|python_end|>"))
		p += 14;
	tc_add_span(sc, a, p);
}

/* ---- OLMo 3: <function_calls>a(...)\nb(...)</function_calls> ---- */

void tc_scan_olmo3(struct scan *sc)
{
	size_t p = 0, o;

	while ((o = find_at(sc->text, p, sc->len, "<function_calls>")) != (size_t)-1) {
		size_t body = o + 16, c = find_at(sc->text, body, sc->len, "</function_calls>");
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

	while ((o = find_at(sc->text, p, sc->len, "<|tool_call_start|>")) != (size_t)-1) {
		size_t body = tc_skip_ws(sc, o + 19, sc->len);
		size_t c = find_at(sc->text, body, sc->len, "<|tool_call_end|>");
		size_t end = c == (size_t)-1 ? sc->len : c;
		size_t q = tc_skip_ws(sc, body + 1, end);

		if (body < end && (sc->text[body] == '{' ||
				   (sc->text[body] == '[' && q < end && sc->text[q] == '{')))
			tc_take_calls_at(sc, body, end, "lfm2", TC_MARKED, &used);
		else if (looks_pythonic(sc, body, end, 1))
			py_take_list(sc, body, end, "lfm2", 1);
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
	c = find_at(g->s, g->p, g->end, g->q);
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

	while ((o = find_at(sc->text, p, sc->len, open)) != (size_t)-1) {
		size_t body = tc_skip_ws(sc, o + ol, sc->len), n0, c, end;
		struct gv g;
		char *name;
		json_t *args;

		c = find_at(sc->text, body, sc->len, close);
		end = c == (size_t)-1 ? sc->len : c;
		p = c == (size_t)-1 ? sc->len : c + cl;
		tc_add_span(sc, o, p);
		if (!starts(sc, body, end, "call:")) {
			tc_call_error(sc, dialect, NULL, "%s is not followed by call:NAME{...}", open);
			continue;
		}
		n0 = body + 5;
		for (body = n0; body < end && name_char((unsigned char)sc->text[body]); body++)
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

/* ---- gpt-oss harmony ---- */

void tc_scan_harmony(struct scan *sc)
{
	static const char to[] = "to=functions.";
	size_t p = 0, q;

	while ((q = find_at(sc->text, p, sc->len, to)) != (size_t)-1) {
		size_t n0 = q + strlen(to), n1, hs, m, e, b, a0, used;
		char *name;

		for (n1 = n0; n1 < sc->len && name_char((unsigned char)sc->text[n1]); n1++)
			;
		/* the header begins at its <|start|> or <|channel|> */
		for (hs = q; hs > 0 && q - hs < 256; hs--)
			if (at(sc->text, q, hs, "<|start|>") || at(sc->text, q, hs, "<|channel|>"))
				break;
		if (!at(sc->text, q, hs, "<|start|>") && !at(sc->text, q, hs, "<|channel|>"))
			hs = q;
		name = xstrndup(sc->text + n0, n1 - n0);
		m = find_at(sc->text, n1, sc->len, "<|message|>");
		e = min3(find_at(sc->text, n1, sc->len, "<|call|>"),
			 find_at(sc->text, n1, sc->len, "<|end|>"),
			 find_at(sc->text, n1, sc->len, "<|start|>"));
		if (m == (size_t)-1 || (e != (size_t)-1 && e < m)) {
			tc_call_error(sc, "harmony", name, "the header has no <|message|>");
			b = e == (size_t)-1 ? sc->len : e;
			tc_add_span(sc, hs, b);
			p = b > q ? b : q + 1;
			free(name);
			continue;
		}
		a0 = m + 11;
		e = min3(find_at(sc->text, a0, sc->len, "<|call|>"),
			 find_at(sc->text, a0, sc->len, "<|end|>"),
			 find_at(sc->text, a0, sc->len, "<|return|>"));
		if (e == (size_t)-1)
			e = find_at(sc->text, a0, sc->len, "<|start|>");
		if (e == (size_t)-1)
			e = sc->len;
		b = e;
		if (starts(sc, e, sc->len, "<|call|>"))
			b += 8;
		else if (starts(sc, e, sc->len, "<|end|>"))
			b += 7;
		a0 = tc_skip_ws(sc, a0, e);
		if (!tc_known(sc, name)) {
			tc_unknown_error(sc, "harmony", name);
		} else if (a0 == e) {
			json_t *o = json_object();

			tc_push_call(sc, name, o, "harmony", NULL);
			json_decref(o);
		} else {
			struct buf notes = BUF_INIT;
			json_t *j = tc_take_json(sc, a0, e, "harmony", 1, name, &used, &notes);

			if (json_is_object(j))
				tc_push_call(sc, name, j, "harmony", notes.buf);
			else if (j)
				tc_call_error(sc, "harmony", name, "its arguments are not a JSON object");
			json_decref(j);
			buf_release(&notes);
		}
		tc_add_span(sc, hs, b);
		p = b;
		free(name);
	}
}

/* ---- Kimi K2 ---- */

void tc_scan_kimi(struct scan *sc)
{
	static const char begin[] = "<|tool_call_begin|>", argb[] = "<|tool_call_argument_begin|>",
			  end_[] = "<|tool_call_end|>";
	size_t p = 0, o, first = (size_t)-1, last = 0, used;

	while ((o = find_at(sc->text, p, sc->len, begin)) != (size_t)-1) {
		size_t id0 = tc_skip_ws(sc, o + strlen(begin), sc->len), id1, ab, c, next, end, a0;
		char *id, *name, *colon;

		if (first == (size_t)-1)
			first = o;
		c = find_at(sc->text, id0, sc->len, end_);
		next = find_at(sc->text, id0, sc->len, begin);
		end = c == (size_t)-1 || (next != (size_t)-1 && next < c) ?
		      (next == (size_t)-1 ? sc->len : next) : c;
		p = last = end == c ? c + strlen(end_) : end;
		ab = find_at(sc->text, id0, end, argb);
		if (ab == (size_t)-1) {
			tc_call_error(sc, "kimi-k2", NULL, "the call has no "
				      "<|tool_call_argument_begin|>");
			continue;
		}
		for (id1 = ab; id1 > id0 && isspace((unsigned char)sc->text[id1 - 1]); id1--)
			;
		id = xstrndup(sc->text + id0, id1 - id0);
		/* the id is functions.NAME:INDEX */
		name = !strncmp(id, "functions.", 10) ? id + 10 : id;
		if ((colon = strrchr(name, ':')) && colon[1] && strspn(colon + 1, "0123456789") ==
		    strlen(colon + 1))
			*colon = '\0';
		a0 = tc_skip_ws(sc, ab + strlen(argb), end);
		if (!tc_known(sc, name)) {
			tc_unknown_error(sc, "kimi-k2", name);
		} else if (a0 >= end || sc->text[a0] != '{') {
			tc_call_error(sc, "kimi-k2", name, "the arguments object is missing after "
				      "<|tool_call_argument_begin|>");
		} else {
			struct buf notes = BUF_INIT;
			json_t *j = tc_take_json(sc, a0, end, "kimi-k2", 1, name, &used, &notes);

			if (json_is_object(j))
				tc_push_call(sc, name, j, "kimi-k2", notes.buf);
			else if (j)
				tc_call_error(sc, "kimi-k2", name, "its arguments are not a JSON object");
			json_decref(j);
			buf_release(&notes);
		}
		free(id);
	}
	if (first != (size_t)-1) {
		size_t s0 = find_at(sc->text, 0, first + 1, "<|tool_calls_section_begin|>"), ce;

		if (s0 != (size_t)-1)
			first = s0;
		ce = find_at(sc->text, last, sc->len, "<|tool_calls_section_end|>");
		if (ce != (size_t)-1)
			last = ce + strlen("<|tool_calls_section_end|>");
		tc_add_span(sc, first, last);
	}
}

/* ---- Seed-OSS ---- */

void tc_scan_seed(struct scan *sc)
{
	size_t p = 0, o;

	while ((o = find_at(sc->text, p, sc->len, "<seed:tool_call>")) != (size_t)-1) {
		size_t body = tc_skip_ws(sc, o + 16, sc->len);
		size_t c = find_at(sc->text, body, sc->len, "</seed:tool_call>");
		size_t end = c == (size_t)-1 ? sc->len : c;

		if (starts(sc, body, end, "<function="))
			tc_take_xml_function(sc, body, end, "seed-oss");
		else
			tc_call_error(sc, "seed-oss", NULL, "<seed:tool_call> is not followed by "
				      "<function=NAME>");
		p = c == (size_t)-1 ? sc->len : c + 17;
		tc_add_span(sc, o, p);
	}
}

/* ---- GLM-4.5 / 4.6 / 4.7, inside <tool_call> ---- */

void tc_take_glm(struct scan *sc, size_t p, size_t end)
{
	size_t n0 = p, n1, used;
	char *name;
	json_t *args;

	while (p < end && name_char((unsigned char)sc->text[p]))
		p++;
	n1 = p;
	p = tc_skip_ws(sc, p, end);
	if (p < end && sc->text[p] != '<' && sc->text[p] != '{') {
		tc_call_error(sc, "glm", NULL, "the tool's name is followed by text that is neither "
			      "<arg_key> nor a JSON object");
		return;
	}
	name = xstrndup(sc->text + n0, n1 - n0);
	if (!tc_known(sc, name)) {
		tc_unknown_error(sc, "glm", name);
		free(name);
		return;
	}
	if (p < end && sc->text[p] == '{') {
		/* NAME {"k": "v"}: the name outside the JSON */
		struct buf notes = BUF_INIT;
		json_t *j = tc_take_json(sc, p, end, "hermes", 1, name, &used, &notes);

		if (json_is_object(j))
			tc_push_call(sc, name, j, "hermes", notes.buf);
		else if (j)
			tc_call_error(sc, "hermes", name, "its arguments are not a JSON object");
		json_decref(j);
		buf_release(&notes);
		free(name);
		return;
	}
	args = json_object();
	while (p < end) {
		size_t kc, v0, vc;
		char *key;

		if (!starts(sc, p, end, "<arg_key>")) {
			tc_call_error(sc, "glm", name, "expected <arg_key> where the text has "
				      "something else");
			goto fail;
		}
		p += 9;
		kc = find_at(sc->text, p, end, "</arg_key>");
		if (kc == (size_t)-1 || find_at(sc->text, p, kc, "<") != (size_t)-1) {
			tc_call_error(sc, "glm", name, "an <arg_key> is not closed with </arg_key>");
			goto fail;
		}
		key = xstrndup(sc->text + p, kc - p);
		p = tc_skip_ws(sc, kc + 10, end);
		if (!starts(sc, p, end, "<arg_value>")) {
			tc_call_error(sc, "glm", name, "the key \"%s\" is not followed by <arg_value>",
				      key);
			free(key);
			goto fail;
		}
		v0 = p + 11;
		vc = find_at(sc->text, v0, end, "</arg_value>");
		if (vc == (size_t)-1) {
			tc_call_error(sc, "glm", name, "the value of \"%s\" is not closed with "
				      "</arg_value>", key);
			free(key);
			goto fail;
		}
		{
			json_t *k = jsonx_stringn_lossy(key, strlen(key));

			jsonx_set(args, json_string_value(k), tc_xml_value(sc->text + v0, vc - v0));
			json_decref(k);
		}
		free(key);
		p = tc_skip_ws(sc, vc + 12, end);
	}
	tc_push_call(sc, name, args, "glm", NULL);
fail:
	json_decref(args);
	free(name);
}

/* ---- the <invoke name="..."> family: MiniMax-M2, DeepSeek V3.2 DSML, Step-3 ---- */

static json_t *invoke_value(const char *attrs, size_t alen, const char *s, size_t n)
{
	if (memmem(attrs, alen, "string=\"true\"", 13))
		return jsonx_stringn_lossy(s, n);
	if (memmem(attrs, alen, "string=\"false\"", 14)) {
		json_t *j = json_loadb(s, n, JSON_DECODE_ANY, NULL);

		if (j)
			return j;
	}
	return tc_xml_value(s, n);
}

/* One <PREFIXinvoke name="NAME">...</PREFIXinvoke> at `lt`; returns where it ends. */
static size_t take_invoke(struct scan *sc, size_t lt, size_t pre0, size_t pre1)
{
	char *prefix = xstrndup(sc->text + pre0, pre1 - pre0);
	char *close = xstrfmt("</%sinvoke>", prefix), *popen = xstrfmt("<%sparameter name=\"",
									  prefix);
	char *pclose = xstrfmt("</%sparameter>", prefix), *name = NULL;
	size_t n0 = pre1 + strlen("invoke name=\""), n1, gt, c, end, p, ret;
	json_t *args = NULL;

	c = find_at(sc->text, n0, sc->len, close);
	end = c == (size_t)-1 ? sc->len : c;
	ret = c == (size_t)-1 ? sc->len : c + strlen(close);
	n1 = find_at(sc->text, n0, end, "\"");
	gt = n1 == (size_t)-1 ? (size_t)-1 : find_at(sc->text, n1, end, ">");
	if (gt == (size_t)-1) {
		tc_call_error(sc, "invoke", NULL, "<invoke name=\"NAME\"> is not closed");
		goto out;
	}
	name = xstrndup(sc->text + n0, n1 - n0);
	if (!tc_known(sc, name)) {
		tc_unknown_error(sc, "invoke", name);
		goto out;
	}
	if (c == (size_t)-1) {
		tc_call_error(sc, "invoke", name, "the call is not closed with %s", close);
		goto out;
	}
	args = json_object();
	p = gt + 1;	/* other attributes a model echoes (description=...) are passed over */
	while ((p = find_at(sc->text, p, end, popen)) != (size_t)-1) {
		size_t k0 = p + strlen(popen), k1 = find_at(sc->text, k0, end, "\""), pgt, pc;

		pgt = k1 == (size_t)-1 ? (size_t)-1 : find_at(sc->text, k1, end, ">");
		if (pgt == (size_t)-1) {
			tc_call_error(sc, "invoke", name, "a <parameter name=\"...\"> is not closed");
			goto out;
		}
		pc = find_at(sc->text, pgt + 1, end, pclose);
		if (pc == (size_t)-1) {
			tc_call_error(sc, "invoke", name, "a parameter is not closed with %s",
				      pclose);
			goto out;
		}
		{
			json_t *k = jsonx_stringn_lossy(sc->text + k0, k1 - k0);

			jsonx_set(args, json_string_value(k),
				  invoke_value(sc->text + k1, pgt - k1, sc->text + pgt + 1,
					       pc - pgt - 1));
			json_decref(k);
		}
		p = pc + strlen(pclose);
	}
	tc_push_call(sc, name, args, "invoke", NULL);
out:
	tc_add_span(sc, lt, ret);
	json_decref(args);
	free(name);
	free(prefix);
	free(close);
	free(popen);
	free(pclose);
	return ret;
}

void tc_scan_invoke(struct scan *sc)
{
	static const char *const wrappers[] = {
		"<minimax:tool_call>", "</minimax:tool_call>", "<function_calls>", "</function_calls>",
		"<\xef\xbd\x9c" "DSML\xef\xbd\x9c" "function_calls>",
		"</\xef\xbd\x9c" "DSML\xef\xbd\x9c" "function_calls>",
		"<\xef\xbd\x9ctool_calls_begin\xef\xbd\x9c>", "<\xef\xbd\x9ctool_calls_end\xef\xbd\x9c>",
		"<\xef\xbd\x9ctool_call_begin\xef\xbd\x9c>", "<\xef\xbd\x9ctool_call_end\xef\xbd\x9c>",
		"function<\xef\xbd\x9ctool_sep\xef\xbd\x9c>",
	};
	size_t p = 0, q, k, found = 0;

	while ((q = find_at(sc->text, p, sc->len, "invoke name=\"")) != (size_t)-1) {
		size_t lt = q;

		/* back to the '<' of <PREFIXinvoke: the prefix has no space, '<' or '>' */
		while (lt > 0 && q - lt < 32 && sc->text[lt - 1] != '<' && sc->text[lt - 1] != '>' &&
		       !isspace((unsigned char)sc->text[lt - 1]))
			lt--;
		if (lt == 0 || sc->text[lt - 1] != '<') {
			p = q + 1;
			continue;
		}
		p = take_invoke(sc, lt - 1, lt, q);
		found++;
	}
	for (k = 0; found && k < ARRAY_SIZE(wrappers); k++)
		for (p = 0; (q = find_at(sc->text, p, sc->len, wrappers[k])) != (size_t)-1;
		     p = q + strlen(wrappers[k]))
			tc_add_span(sc, q, q + strlen(wrappers[k]));
}

/* ---- JSON inside a family's own markers ---- */

static const struct {
	const char *open, *close, *dialect;
	int need_json;	/* the marker is a common word: only followed by JSON is it a call */
} tagged[] = {
	{ "<|tool_call|>", NULL, "granite", 0 },	/* Granite 3.x */
	{ "<function_call>", NULL, "granite-20b", 0 },	/* Granite 20B FC */
	{ "<tool_calls>", "</tool_calls>", "jamba", 0 },	/* Jamba, Hunyuan, Apriel, MiniMax-01 */
	{ "<TOOLCALL>", "</TOOLCALL>", "nemotron", 0 },	/* Nemotron */
	{ "<longcat_tool_call>", "</longcat_tool_call>", "longcat", 0 },
	{ "<|action_start|><|plugin|>", "<|action_end|>", "internlm2", 0 },
	{ "<|START_ACTION|>", "<|END_ACTION|>", "command-r7b", 0 },
	{ "<|tools_prefix|>", "<|tools_suffix|>", "apertus", 0 },
	{ "functools", NULL, "phi4", 1 },		/* Phi-4-mini, FireFunction v2 */
};

void tc_scan_tagged_json(struct scan *sc)
{
	size_t k;

	for (k = 0; k < ARRAY_SIZE(tagged) && !sc->out->nr && !sc->out->errors.nr; k++) {
		size_t ol = strlen(tagged[k].open), p = 0, o;

		while ((o = find_at(sc->text, p, sc->len, tagged[k].open)) != (size_t)-1) {
			size_t q = o + ol, c, next, end, used, before = sc->out->nr + sc->out->errors.nr;

			c = tagged[k].close ? find_at(sc->text, q, sc->len, tagged[k].close) :
			    (size_t)-1;
			next = find_at(sc->text, q, sc->len, tagged[k].open);
			end = c == (size_t)-1 || (next != (size_t)-1 && next < c) ?
			      (next == (size_t)-1 ? sc->len : next) : c;
			q = tc_skip_ws(sc, q, end);
			if (tagged[k].need_json && (q >= end || (sc->text[q] != '[' &&
								 sc->text[q] != '{'))) {
				p = o + ol;
				continue;
			}
			while (q < end) {
				if (sc->text[q] != '[' && sc->text[q] != '{') {
					/* prose after the calls ends them */
					if (sc->out->nr + sc->out->errors.nr == before)
						tc_call_error(sc, tagged[k].dialect, NULL, "%s is not "
							      "followed by a JSON call", tagged[k].open);
					else
						end = q;
					break;
				}
				if (!tc_take_calls_at(sc, q, end, tagged[k].dialect, TC_MARKED, &used) ||
				    !used)
					break;
				q = tc_skip_ws(sc, q + used, end);
				while (q < end && (sc->text[q] == ',' || sc->text[q] == ';'))
					q = tc_skip_ws(sc, q + 1, end);
			}
			if (sc->out->nr + sc->out->errors.nr == before)
				tc_call_error(sc, tagged[k].dialect, NULL, "%s holds no call",
					      tagged[k].open);
			p = end == c ? c + strlen(tagged[k].close) : end;
			tc_add_span(sc, o, p);
		}
	}
}

/* ---- <function=NAME> without <tool_call>: Functionary v3.1 JSON, or Qwen3-Coder's XML ---- */

void tc_scan_function_tag(struct scan *sc)
{
	size_t p = 0, o, used;

	while ((o = find_at(sc->text, p, sc->len, "<function=")) != (size_t)-1) {
		size_t c = find_at(sc->text, o + 10, sc->len, "</function>");
		size_t next = find_at(sc->text, o + 10, sc->len, "<function="), end, gt, q;

		end = c == (size_t)-1 || (next != (size_t)-1 && next < c) ?
		      (next == (size_t)-1 ? sc->len : next) : c;
		p = end == c ? c + 11 : end;
		gt = find_at(sc->text, o, end, ">");
		q = gt == (size_t)-1 ? end : tc_skip_ws(sc, gt + 1, end);
		if (q < end && sc->text[q] == '{') {
			char *name = xstrndup(sc->text + o + 10, gt - o - 10);
			struct buf notes = BUF_INIT;
			json_t *j = NULL;

			if (!tc_known(sc, name))
				tc_unknown_error(sc, "functionary", name);
			else if ((j = tc_take_json(sc, q, end, "functionary", 1, name, &used, &notes)) &&
				 json_is_object(j))
				tc_push_call(sc, name, j, "functionary", notes.buf);
			else if (j)
				tc_call_error(sc, "functionary", name, "its arguments are not a JSON "
					      "object");
			json_decref(j);
			buf_release(&notes);
			free(name);
		} else {
			tc_take_xml_function(sc, o, end, "qwen3-coder");
		}
		tc_add_span(sc, o, p);
	}
}
