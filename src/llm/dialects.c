/*
 * The text-call dialects beyond plain JSON (see textcalls_int.h): the
 * token-marked families (harmony, Kimi K2, Seed-OSS, GLM), the XML
 * <invoke> family, JSON inside a family's own markers, Functionary's
 * <function=...>, each dialect's form for the messages to the model, and
 * the reasoning mask. Calls written as function calls (pythonic, OLMo 3,
 * LFM2, Gemma) are in pycalls.c. Formats were read from the families'
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
	{ "longcat-flash", "<longcat_tool_call>TOOL\n<longcat_arg_key>KEY</longcat_arg_key>\n"
	  "<longcat_arg_value>VALUE</longcat_arg_value>\n</longcat_tool_call>", 0 },
	{ "internlm2", "<|action_start|><|plugin|>\n{\"name\": \"TOOL\", \"parameters\": {...}}"
	  "<|action_end|>", 1 },
	{ "command-r7b", "<|START_ACTION|>[{\"tool_call_id\": \"0\", \"tool_name\": \"TOOL\", "
	  "\"parameters\": {...}}]<|END_ACTION|>", 1 },
	{ "apertus", "<|tools_prefix|>[{\"TOOL\": {...}}]<|tools_suffix|>", 1 },
	{ "phi4", "functools[{\"name\": \"TOOL\", \"arguments\": {...}}]", 1 },
	{ "gigachat3", "function call{\"name\": \"TOOL\", \"arguments\": {...}}", 1 },
	{ "kimi-k3", "<|open|>tools<|sep|><|open|>call tool=\"TOOL\" index=\"1\"<|sep|>"
	  "<|open|>argument key=\"KEY\" type=\"string\"<|sep|>VALUE<|close|>argument<|sep|>"
	  "<|close|>call<|sep|><|close|>tools<|sep|>", 0 },
	{ "functionary-v3.2", ">>>TOOL\n{...}", 1 },
	{ "inkling", "<|content_invoke_tool_json|>{\"name\": \"TOOL\", \"args\": {...}}"
	  "<|end_message|>", 1 },
	{ "solar-open2", "<|tool_call:start|>TOOL\n<|tool_arg:start|>KEY<|tool_arg:value|>VALUE"
	  "<|tool_arg:end|>\n<|tool_call:end|>", 0 },
	{ "gigachat35", "<\xef\xbd\x9cGCML\xef\xbd\x9ctool_calls><\xef\xbd\x9cGCML\xef\xbd\x9cinvoke "
	  "name=\"TOOL\"><\xef\xbd\x9cGCML\xef\xbd\x9cparameter name=\"KEY\" string=\"true\">VALUE"
	  "</\xef\xbd\x9cGCML\xef\xbd\x9cparameter></\xef\xbd\x9cGCML\xef\xbd\x9cinvoke>"
	  "</\xef\xbd\x9cGCML\xef\xbd\x9ctool_calls>", 0 },
	{ "k2-horizon", "<ifm|tool_calls><ifm|tool_call>TOOL<ifm|arg_key>KEY</ifm|arg_key>"
	  "<ifm|arg_value>VALUE</ifm|arg_value></ifm|tool_call></ifm|tool_calls>", 0 },
	{ "minicpm5", "<function name=\"TOOL\"><param name=\"KEY\">VALUE</param></function>", 0 },
	{ "glimmer", "<|start|>assistant to=TOOL<|message|><atem:function_calls>\n<atem:invoke "
	  "name=\"TOOL\">\n<atem:parameter name=\"KEY\">VALUE</atem:parameter>\n</atem:invoke>\n"
	  "</atem:function_calls><|eom|>", 0 },
	{ "solar-open", "<|tool_calls|><|tool_call:begin|>0<|tool_call:name|>TOOL<|tool_call:args|>{...}"
	  "<|tool_call:end|>", 1 },
	{ "hy-v3", "<tool_calls>\n<tool_call>TOOL<tool_sep>\n<arg_key>KEY</arg_key>\n"
	  "<arg_value>VALUE</arg_value>\n</tool_call>\n</tool_calls>", 0 },
	{ "hy-v4", "<tool_calls><tool_call>TOOL<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>"
	  "</tool_call></tool_calls> (each tag with your checkpoint's suffix, as in "
	  "<tool_call:opensource>)", 0 },
	{ "minimax-m3", "]<]minimax[>[<tool_call>\n]<]minimax[>[<invoke name=\"TOOL\">]<]minimax[>["
	  "<KEY>VALUE]<]minimax[>[</KEY>]<]minimax[>[</invoke>\n]<]minimax[>[</tool_call>", 0 },
	{ "dots", "<dots_function_call><invoke name=\"TOOL\"><parameter name=\"KEY\">VALUE"
	  "</parameter></invoke></dots_function_call>", 0 },
	{ "cwm", "<tool: TOOL>\nINPUT\n</tool>", 0 },
	{ "step-audio2", "<tool_call>function\nTOOL\n{...}</tool_call>", 1 },
	{ "plamo3", "<|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>"
	  "<|plamo:begin_tool_name:plamo|>TOOL<|plamo:end_tool_name:plamo|>"
	  "<|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>{...}"
	  "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>"
	  "<|plamo:end_tool_requests:plamo|>", 1 },
	{ "command-r", "Action: ```json\n[{\"tool_name\": \"TOOL\", \"parameters\": {...}}]\n```",
	  1 },
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

size_t tc_find_at(const char *t, size_t from, size_t end, const char *needle)
{
	const char *p;

	if (from >= end)
		return (size_t)-1;
	p = memmem(t + from, end - from, needle, strlen(needle));
	return p ? (size_t)(p - t) : (size_t)-1;
}

int tc_starts(const struct scan *sc, size_t p, size_t end, const char *s)
{
	size_t n = strlen(s);

	return end >= p && end - p >= n && !memcmp(sc->text + p, s, n);
}

int tc_name_char(int c)
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
	{ "<|think:start|>", "<|think:end|>" },		/* Solar Open2 */
	{ "<ifm|think>", "</ifm|think>" },		/* K2 Horizon, by reasoning effort */
	{ "<ifm|think_fast>", "</ifm|think_fast>" },
	{ "<ifm|think_faster>", "</ifm|think_faster>" },
	{ "[THINK]", "[/THINK]" },			/* Magistral */
	{ "<|START_THINKING|>", "<|END_THINKING|>" },	/* Command A, R7B */
	{ "\xe2\x97\x81think\xe2\x96\xb7", "\xe2\x97\x81/think\xe2\x96\xb7" },	/* Kimi: ◁think▷ */
	{ "<|channel>thought", "<channel|>" },		/* Gemma 4 */
	{ "<|open|>think<|sep|>", "<|close|>think<|sep|>" },	/* Kimi K3 */
	{ "<|inner_prefix|>", "<|inner_suffix|>" },	/* Apertus */
	{ "<think:opensource>", "</think:opensource>" },	/* Hy4 checkpoints */
	{ "<mm:think>", "</mm:think>" },		/* MiniMax-M3 */
	{ "Here are my reasoning steps:", "[BEGIN FINAL RESPONSE]" },	/* Apriel 1.6: opened by the prompt */
	{ "<|plamo:begin_think:plamo|>", "<|plamo:end_think:plamo|>" },	/* PLaMo 3 */
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

	while ((o = tc_find_at(t, p, len, ch)) != (size_t)-1) {
		size_t a = o, b, m, s;

		/* the header may name a recipient before the channel: <|start|>assistant to=... */
		for (s = o; s > 0 && o - s < 256; s--)
			if (s + 9 <= o && at(t, len, s, "<|start|>"))
				break;
		if (s + 9 <= o && at(t, len, s, "<|start|>") &&
		    tc_find_at(t, s, o, "<|message|>") == (size_t)-1)
			a = s;
		m = tc_find_at(t, o, len, "<|message|>");
		b = m == (size_t)-1 ? len :
		    min3(tc_find_at(t, m, len, "<|end|>"), tc_find_at(t, m, len, "<|call|>"),
			 tc_find_at(t, m, len, "<|start|>"));
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

void tc_mask_reasoning(char *text, size_t len, int keep_unclosed)
{
	size_t k;

	for (k = 0; k < ARRAY_SIZE(thinks); k++) {
		size_t ol = strlen(thinks[k].open), cl = strlen(thinks[k].close);
		size_t o = tc_find_at(text, 0, len, thinks[k].open), c = tc_find_at(text, 0, len,
									       thinks[k].close);
		size_t p = 0;

		/* the template opened the reasoning in the prompt: only its end is in the reply */
		if (c != (size_t)-1 && (o == (size_t)-1 || c < o)) {
			blank(text, 0, c + cl);
			p = c + cl;
		}
		while ((o = tc_find_at(text, p, len, thinks[k].open)) != (size_t)-1) {
			c = tc_find_at(text, o + ol, len, thinks[k].close);
			if (c == (size_t)-1) {
				/* cut off while thinking, or its end left out */
				blank(text, o, keep_unclosed ? o + ol : len);
				break;
			}
			blank(text, o, c + cl);
			p = c + cl;
		}
	}
	mask_harmony(text, len);
	tc_mask_inkling(text, len);
	tc_mask_more(text, len);
	tc_mask_channels(text, len);
}

/* ---- gpt-oss harmony ---- */

void tc_scan_harmony(struct scan *sc)
{
	static const char to[] = "to=functions.";
	size_t p = 0, q;

	while ((q = tc_find_at(sc->text, p, sc->len, to)) != (size_t)-1) {
		size_t n0 = q + strlen(to), n1, hs, m, e, b, a0, used;
		char *name;

		for (n1 = n0; n1 < sc->len && tc_name_char((unsigned char)sc->text[n1]); n1++)
			;
		/* the header begins at its <|start|> or <|channel|> */
		for (hs = q; hs > 0 && q - hs < 256; hs--)
			if (at(sc->text, q, hs, "<|start|>") || at(sc->text, q, hs, "<|channel|>"))
				break;
		if (!at(sc->text, q, hs, "<|start|>") && !at(sc->text, q, hs, "<|channel|>"))
			hs = q;
		name = xstrndup(sc->text + n0, n1 - n0);
		m = tc_find_at(sc->text, n1, sc->len, "<|message|>");
		e = min3(tc_find_at(sc->text, n1, sc->len, "<|call|>"),
			 tc_find_at(sc->text, n1, sc->len, "<|end|>"),
			 tc_find_at(sc->text, n1, sc->len, "<|start|>"));
		if (m == (size_t)-1 || (e != (size_t)-1 && e < m)) {
			tc_call_error(sc, "harmony", name, "the header has no <|message|>");
			b = e == (size_t)-1 ? sc->len : e;
			tc_add_span(sc, hs, b);
			p = b > q ? b : q + 1;
			free(name);
			continue;
		}
		a0 = m + 11;
		e = min3(tc_find_at(sc->text, a0, sc->len, "<|call|>"),
			 tc_find_at(sc->text, a0, sc->len, "<|end|>"),
			 tc_find_at(sc->text, a0, sc->len, "<|return|>"));
		if (e == (size_t)-1)
			e = tc_find_at(sc->text, a0, sc->len, "<|start|>");
		if (e == (size_t)-1)
			e = sc->len;
		b = e;
		if (tc_starts(sc, e, sc->len, "<|call|>"))
			b += 8;
		else if (tc_starts(sc, e, sc->len, "<|end|>"))
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

	while ((o = tc_find_at(sc->text, p, sc->len, begin)) != (size_t)-1) {
		size_t id0 = tc_skip_ws(sc, o + strlen(begin), sc->len), id1, ab, c, next, end, a0;
		char *id, *name, *colon;

		if (first == (size_t)-1)
			first = o;
		c = tc_find_at(sc->text, id0, sc->len, end_);
		next = tc_find_at(sc->text, id0, sc->len, begin);
		end = c == (size_t)-1 || (next != (size_t)-1 && next < c) ?
		      (next == (size_t)-1 ? sc->len : next) : c;
		p = last = end == c ? c + strlen(end_) : end;
		ab = tc_find_at(sc->text, id0, end, argb);
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
		size_t s0 = tc_find_at(sc->text, 0, first + 1, "<|tool_calls_section_begin|>"), ce;

		if (s0 != (size_t)-1)
			first = s0;
		ce = tc_find_at(sc->text, last, sc->len, "<|tool_calls_section_end|>");
		if (ce != (size_t)-1)
			last = ce + strlen("<|tool_calls_section_end|>");
		tc_add_span(sc, first, last);
	}
}

/* ---- Seed-OSS ---- */

void tc_scan_seed(struct scan *sc)
{
	size_t p = 0, o;

	while ((o = tc_find_at(sc->text, p, sc->len, "<seed:tool_call>")) != (size_t)-1) {
		size_t body = tc_skip_ws(sc, o + 16, sc->len);
		size_t c = tc_find_at(sc->text, body, sc->len, "</seed:tool_call>");
		size_t end = c == (size_t)-1 ? sc->len : c;

		if (tc_starts(sc, body, end, "<function="))
			tc_take_xml_function(sc, body, end, "seed-oss");
		else
			tc_call_error(sc, "seed-oss", NULL, "<seed:tool_call> is not followed by "
				      "<function=NAME>");
		p = c == (size_t)-1 ? sc->len : c + 17;
		tc_add_span(sc, o, p);
	}
}

/* ---- GLM-4.5 / 4.6 / 4.7, inside <tool_call> ---- */

static const struct glm_tags glm_tags = {
	"glm", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>", NULL,
};

void tc_take_glm(struct scan *sc, size_t p, size_t end)
{
	tc_take_glm_tags(sc, p, end, &glm_tags);
}

/* NAME then <KEY>K</KEY><VALUE>V</VALUE> pairs, in the tags `t` names */
void tc_take_glm_tags(struct scan *sc, size_t p, size_t end, const struct glm_tags *t)
{
	size_t kl = strlen(t->key), kcl = strlen(t->key_close);
	size_t vl = strlen(t->value), vcl = strlen(t->value_close);
	size_t n0 = p, n1, used;
	char *name;
	json_t *args;

	while (p < end && (tc_name_char((unsigned char)sc->text[p]) ||
			   (unsigned char)sc->text[p] >= 0x80))
		p++;
	n1 = p;
	p = tc_skip_ws(sc, p, end);
	if (p < end && sc->text[p] != '<' && sc->text[p] != '{') {
		tc_call_error(sc, t->dialect, NULL, "the tool's name is followed by text that is "
			      "neither %s nor a JSON object", t->key);
		return;
	}
	name = xstrndup(sc->text + n0, n1 - n0);
	if (!tc_known(sc, name) && t->ns && !strncmp(name, t->ns, strlen(t->ns)) &&
	    tc_known(sc, name + strlen(t->ns)))
		memmove(name, name + strlen(t->ns), strlen(name + strlen(t->ns)) + 1);
	if (!tc_known(sc, name)) {
		tc_unknown_error(sc, t->dialect, name);
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

		if (!tc_starts(sc, p, end, t->key)) {
			tc_call_error(sc, t->dialect, name, "expected %s where the text has "
				      "something else", t->key);
			goto fail;
		}
		p += kl;
		kc = tc_find_at(sc->text, p, end, t->key_close);
		if (kc == (size_t)-1 || tc_find_at(sc->text, p, kc, "<") != (size_t)-1) {
			tc_call_error(sc, t->dialect, name, "an %s is not closed with %s", t->key,
				      t->key_close);
			goto fail;
		}
		key = xstrndup(sc->text + p, kc - p);
		p = tc_skip_ws(sc, kc + kcl, end);
		if (!tc_starts(sc, p, end, t->value)) {
			tc_call_error(sc, t->dialect, name, "the key \"%s\" is not followed by %s",
				      key, t->value);
			free(key);
			goto fail;
		}
		v0 = p + vl;
		vc = tc_find_at(sc->text, v0, end, t->value_close);
		if (vc == (size_t)-1) {
			tc_call_error(sc, t->dialect, name, "the value of \"%s\" is not closed with "
				      "%s", key, t->value_close);
			free(key);
			goto fail;
		}
		{
			json_t *k = jsonx_stringn_lossy(key, strlen(key));

			jsonx_set(args, json_string_value(k), tc_glm_value(sc->text + v0, vc - v0));
			json_decref(k);
		}
		free(key);
		p = tc_skip_ws(sc, vc + vcl, end);
	}
	tc_push_call(sc, name, args, t->dialect, NULL);
fail:
	json_decref(args);
	free(name);
}

/* ---- the <invoke name="..."> family: MiniMax-M2, DeepSeek V3.2 and V4 DSML, Step-3 ---- */

/* A parameter's value; NULL when it is declared string="false" (JSON) and is not JSON. */
static json_t *invoke_value(const char *attrs, size_t alen, const char *s, size_t n)
{
	if (memmem(attrs, alen, "string=\"true\"", 13))
		return jsonx_stringn_lossy(s, n);
	if (memmem(attrs, alen, "string=\"false\"", 14))
		return json_loadb(s, n, JSON_DECODE_ANY, NULL);
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

	c = tc_find_at(sc->text, n0, sc->len, close);
	end = c == (size_t)-1 ? sc->len : c;
	ret = c == (size_t)-1 ? sc->len : c + strlen(close);
	n1 = tc_find_at(sc->text, n0, end, "\"");
	gt = n1 == (size_t)-1 ? (size_t)-1 : tc_find_at(sc->text, n1, end, ">");
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
	while ((p = tc_find_at(sc->text, p, end, popen)) != (size_t)-1) {
		size_t k0 = p + strlen(popen), k1 = tc_find_at(sc->text, k0, end, "\""), pgt, pc;

		pgt = k1 == (size_t)-1 ? (size_t)-1 : tc_find_at(sc->text, k1, end, ">");
		if (pgt == (size_t)-1) {
			tc_call_error(sc, "invoke", name, "a <parameter name=\"...\"> is not closed");
			goto out;
		}
		pc = tc_find_at(sc->text, pgt + 1, end, pclose);
		if (pc == (size_t)-1) {
			tc_call_error(sc, "invoke", name, "a parameter is not closed with %s",
				      pclose);
			goto out;
		}
		{
			json_t *k = jsonx_stringn_lossy(sc->text + k0, k1 - k0);
			json_t *v = invoke_value(sc->text + k1, pgt - k1, sc->text + pgt + 1,
						 pc - pgt - 1);

			if (!v) {
				tc_call_error(sc, "invoke", name, "parameter \"%s\" is declared "
					      "string=\"false\" but its value is not JSON",
					      json_string_value(k));
				json_decref(k);
				goto out;
			}
			jsonx_set(args, json_string_value(k), v);
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
		"<\xef\xbd\x9c" "DSML\xef\xbd\x9c" "tool_calls>",	/* DeepSeek V4 */
		"</\xef\xbd\x9c" "DSML\xef\xbd\x9c" "tool_calls>",
		"<\xef\xbd\x9cGCML\xef\xbd\x9ctool_calls>", "</\xef\xbd\x9cGCML\xef\xbd\x9ctool_calls>",
		"<\xef\xbd\x9ctool_calls_begin\xef\xbd\x9c>", "<\xef\xbd\x9ctool_calls_end\xef\xbd\x9c>",
		"<\xef\xbd\x9ctool_call_begin\xef\xbd\x9c>", "<\xef\xbd\x9ctool_call_end\xef\xbd\x9c>",
		"function<\xef\xbd\x9ctool_sep\xef\xbd\x9c>",
	};
	size_t p = 0, q, k, found = 0;

	while ((q = tc_find_at(sc->text, p, sc->len, "invoke name=\"")) != (size_t)-1) {
		size_t lt = q;

		/* back to the '<' of <PREFIXinvoke: the prefix has no space, '<' or '>' */
		while (lt > 0 && q - lt < 32 && sc->text[lt - 1] != '<' && sc->text[lt - 1] != '>' &&
		       !isspace((unsigned char)sc->text[lt - 1]))
			lt--;
		/* Glimmer's ATEM markup is its own pass's to read (or leave as text) */
		if (lt == 0 || sc->text[lt - 1] != '<' ||
		    (q - lt == 5 && !memcmp(sc->text + lt, "atem:", 5))) {
			p = q + 1;
			continue;
		}
		p = take_invoke(sc, lt - 1, lt, q);
		found++;
	}
	for (k = 0; found && k < ARRAY_SIZE(wrappers); k++)
		for (p = 0; (q = tc_find_at(sc->text, p, sc->len, wrappers[k])) != (size_t)-1;
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
	{ "function call<|role_sep|>", NULL, "gigachat3", 0 },	/* GigaChat 3 as served */
	{ "<|function_call|>", NULL, "gigachat3", 0 },	/* GigaChat 3.1 */
	{ "function call", NULL, "gigachat3", 1 },	/* GigaChat 3: the words, then the JSON */
};

/*
 * Spark X2.5 as some servers decode its tokens: <|tool_call|>\nNAME
 * <arg_key>K</arg_key><arg_value>V</arg_value>...\n<|/tool_call|>, GLM's
 * body between Granite's marker and a closing bar tag. Granite follows
 * its marker with JSON, so a name there, then <arg_key> or the closing
 * tag, is Spark's. Returns 1 when it was (the end of the block in *after).
 */
static int take_spark_bar(struct scan *sc, size_t q, size_t *after)
{
	static const char end_tag[] = "<|/tool_call|>";
	size_t b = tc_skip_ws(sc, q, sc->len), n = b, r, c, next, end;

	while (n < sc->len && tc_name_char((unsigned char)sc->text[n]))
		n++;
	r = tc_skip_ws(sc, n, sc->len);
	if (n == b || (!tc_starts(sc, r, sc->len, "<arg_key>") &&
		       !tc_starts(sc, r, sc->len, end_tag)))
		return 0;
	c = tc_find_at(sc->text, n, sc->len, end_tag);
	next = tc_find_at(sc->text, n, sc->len, "<|tool_call|>");
	if (c != (size_t)-1 && (next == (size_t)-1 || c < next)) {
		end = c;
		*after = c + strlen(end_tag);
	} else {
		/* cut by the stop token: read as far as it goes, as for GLM */
		end = *after = next != (size_t)-1 ? next : sc->len;
	}
	tc_take_glm(sc, b, end);
	return 1;
}

void tc_scan_tagged_json(struct scan *sc)
{
	size_t k;

	for (k = 0; k < ARRAY_SIZE(tagged) && !sc->out->nr && !sc->out->errors.nr; k++) {
		size_t ol = strlen(tagged[k].open), p = 0, o;

		while ((o = tc_find_at(sc->text, p, sc->len, tagged[k].open)) != (size_t)-1) {
			size_t q = o + ol, c, next, end, used, before = sc->out->nr + sc->out->errors.nr;

			if (!strcmp(tagged[k].dialect, "granite") && take_spark_bar(sc, q, &p)) {
				tc_add_span(sc, o, p);
				continue;
			}
			c = tagged[k].close ? tc_find_at(sc->text, q, sc->len, tagged[k].close) :
			    (size_t)-1;
			next = tc_find_at(sc->text, q, sc->len, tagged[k].open);
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

	while ((o = tc_find_at(sc->text, p, sc->len, "<function=")) != (size_t)-1) {
		size_t c = tc_find_at(sc->text, o + 10, sc->len, "</function>");
		size_t next = tc_find_at(sc->text, o + 10, sc->len, "<function="), end, gt, q;

		end = c == (size_t)-1 || (next != (size_t)-1 && next < c) ?
		      (next == (size_t)-1 ? sc->len : next) : c;
		p = end == c ? c + 11 : end;
		gt = tc_find_at(sc->text, o, end, ">");
		/*
		 * Without <tool_call> around it, "<function=NAME" followed by a
		 * blank before any '>' is a word in prose ("the tag <function=foo
		 * is documented here"), not a call (one the reply's end cut is).
		 */
		for (q = o + 10; q < end && sc->text[q] != '>' &&
		     !isspace((unsigned char)sc->text[q]); q++)
			;
		if (q < end && sc->text[q] != '>')
			continue;
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
