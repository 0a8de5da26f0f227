/*
 * Dialects of vLLM parsers kept outside its registered list: dots.llm's
 * <dots_function_call>, CWM's <tool: function> block and PLaMo 3's
 * <|plamo:...:plamo|> tags; and the value rule HyperCLOVA X SEED Think
 * needs in its GLM-shaped calls. Each scanner reads only the masked text
 * (reasoning blanked), takes a call only for an offered tool, and answers
 * a block it cannot read with a message naming the format.
 */

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "base/buf.h"
#include "base/jsonx.h"
#include "base/err.h"
#include "llm/textcalls_int.h"

#define NPOS ((size_t)-1)

json_t *tc_xml_json_string(const char *s, size_t n)
{
	json_t *j;

	tc_xml_trim(&s, &n);
	/* a text of several lines (a file's content) is taken as written, quotes and all */
	if (n < 2 || s[0] != '"' || s[n - 1] != '"' || memchr(s, '\n', n))
		return NULL;
	j = json_loadb(s, n, JSON_DECODE_ANY, NULL);
	if (j && !json_is_string(j)) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

/* An attribute's value: the text from `p` to its closing quote, or NULL. */
static char *attr_value(const struct scan *sc, size_t p, size_t end, size_t *after)
{
	size_t q = tc_find_at(sc->text, p, end, "\"");

	if (q == NPOS || tc_find_at(sc->text, p, q, "<") != NPOS ||
	    tc_find_at(sc->text, p, q, ">") != NPOS)
		return NULL;
	*after = q + 1;
	return xstrndup(sc->text + p, q - p);
}

/* ---- dots.llm: <dots_function_call><invoke name="f"><parameter name="k">v</parameter>... ---- */

#define DOTS_OPEN "<dots_function_call>"
#define DOTS_CLOSE "</dots_function_call>"
#define DOTS_INVOKE "<invoke name=\""
#define DOTS_PARAM "<parameter name=\""

/* One <invoke> at `p` (inside a block ending at `end`); returns where the next may start. */
static size_t dots_invoke(struct scan *sc, size_t p, size_t end)
{
	size_t q, close;
	char *name = attr_value(sc, p + strlen(DOTS_INVOKE), end, &q);
	json_t *args;

	if (!name || !tc_starts(sc, q, end, ">")) {
		tc_call_error(sc, "dots", NULL, "the <invoke name=\"TOOL\"> tag is not whole");
		free(name);
		return end;
	}
	close = tc_find_at(sc->text, q, end, "</invoke>");
	if (!tc_known(sc, name)) {
		tc_unknown_error(sc, "dots", name);
		free(name);
		return close == NPOS ? end : close + strlen("</invoke>");
	}
	args = json_object();
	p = tc_skip_ws(sc, q + 1, end);
	while (tc_starts(sc, p, end, DOTS_PARAM)) {
		size_t v0, vc;
		char *key = attr_value(sc, p + strlen(DOTS_PARAM), end, &v0);

		if (!key || !tc_starts(sc, v0, end, ">"))
			vc = NPOS;
		else
			vc = tc_find_at(sc->text, v0 + 1, end, "</parameter>");
		if (vc == NPOS) {
			free(key);
			break;
		}
		{
			/* a key that is not UTF-8 still makes a JSON key (the bytes made valid) */
			json_t *k = jsonx_stringn_lossy(key, strlen(key));

			jsonx_set(args, json_string_value(k),
				  tc_xml_value(sc->text + v0 + 1, vc - v0 - 1));
			json_decref(k);
		}
		free(key);
		p = tc_skip_ws(sc, vc + strlen("</parameter>"), end);
	}
	if (tc_starts(sc, p, end, "</invoke>")) {
		tc_push_call(sc, name, args, "dots", NULL);
		p += strlen("</invoke>");
	} else {
		tc_call_error(sc, "dots", name, "a <parameter name=\"KEY\">VALUE</parameter> is not "
			      "whole, or the call is not closed with </invoke>");
		p = close == NPOS ? end : close + strlen("</invoke>");
	}
	json_decref(args);
	free(name);
	return p;
}

void tc_scan_dots(struct scan *sc)
{
	size_t p = 0, o, used;

	while ((o = tc_find_at(sc->text, p, sc->len, DOTS_OPEN)) != NPOS) {
		size_t body = tc_skip_ws(sc, o + strlen(DOTS_OPEN), sc->len);
		size_t c = tc_find_at(sc->text, body, sc->len, DOTS_CLOSE);
		size_t end = c == NPOS ? sc->len : c;

		if (body < end && (sc->text[body] == '{' || sc->text[body] == '['))
			tc_take_calls_at(sc, body, end, "dots", TC_MARKED, &used);
		else if (tc_starts(sc, body, end, DOTS_INVOKE))
			for (p = body; tc_starts(sc, p, end, DOTS_INVOKE); p = tc_skip_ws(sc, p, end))
				p = dots_invoke(sc, p, end);
		else
			tc_call_error(sc, "dots", NULL, DOTS_OPEN " holds neither an <invoke "
				      "name=\"TOOL\"> nor a JSON call");
		p = c == NPOS ? sc->len : c + strlen(DOTS_CLOSE);
		tc_add_span(sc, o, p);
	}
}

/*
 * ---- CWM: <tool: NAME>\nINPUT\n</tool>, the tool's input one text (Meta's own form);
 * vLLM's parser reads <tool: function>\nNAME INPUT\n</tool>, the label only a word ----
 */

/* Where `needle` (lower case) starts in t[from, end) ignoring case, or NPOS. */
static size_t find_nocase(const char *t, size_t from, size_t end, const char *needle)
{
	size_t n = strlen(needle), i, k;

	for (i = from; i + n <= end; i++) {
		for (k = 0; k < n && tolower((unsigned char)t[i + k]) == needle[k]; k++)
			;
		if (k == n)
			return i;
	}
	return NPOS;
}

/* The arguments of input t[a, b): a JSON object as written, else {"command": the text}. */
static json_t *cwm_args(const struct scan *sc, size_t a, size_t b)
{
	json_t *args = NULL;

	if (a < b && sc->text[a] == '{')
		args = json_loadb(sc->text + a, b - a, 0, NULL);
	if (json_is_object(args))
		return args;
	json_decref(args);
	args = json_object();
	jsonx_set(args, "command", jsonx_stringn_lossy(sc->text + a, b - a));
	return args;
}

/*
 * The block with label t[l0, l1) and body t[a, b). The label names the tool
 * (CWM's own form), except "function", where the body's first word does
 * (vLLM's form).
 */
static void cwm_block(struct scan *sc, size_t l0, size_t l1, size_t a, size_t b)
{
	char *label = xstrndup(sc->text + l0, l1 - l0), *name;
	json_t *args;
	size_t n0, n1;

	/* the input sits between the line breaks after the tag and before </tool> */
	if (a < b && sc->text[a] == '\n')
		a++;
	if (b > a && sc->text[b - 1] == '\n')
		b--;
	if (strcasecmp(label, "function")) {
		name = label;
		label = NULL;
	} else {
		n0 = tc_skip_ws(sc, a, b);
		for (n1 = n0; n1 < b && !isspace((unsigned char)sc->text[n1]); n1++)
			;
		name = xstrndup(sc->text + n0, n1 - n0);
		a = tc_skip_ws(sc, n1, b);
		while (b > a && isspace((unsigned char)sc->text[b - 1]))
			b--;
	}
	if (!*name) {
		tc_call_error(sc, "cwm", NULL, "the block does not name its tool");
	} else if (!tc_known(sc, name)) {
		tc_unknown_error(sc, "cwm", name);
	} else {
		args = cwm_args(sc, a, b);
		tc_push_call(sc, name, args, "cwm", NULL);
		json_decref(args);
	}
	free(name);
	free(label);
}

/* Is t[l0, l1) the label of an offered tool? */
static int cwm_known_label(const struct scan *sc, size_t l0, size_t l1)
{
	char *label = xstrndup(sc->text + l0, l1 - l0);
	int ok = tc_known(sc, label);

	free(label);
	return ok;
}

void tc_scan_cwm(struct scan *sc)
{
	size_t p = 0, o;

	while ((o = find_nocase(sc->text, p, sc->len, "<tool:")) != NPOS) {
		size_t l0, l1, q, c, a, b;
		int shorthand = 0;

		for (l0 = o + 6; l0 < sc->len && sc->text[l0] == ' '; l0++)
			;
		for (l1 = l0; l1 < sc->len && tc_name_char((unsigned char)sc->text[l1]); l1++)
			;
		for (q = l1; q < sc->len && sc->text[q] == ' '; q++)
			;
		p = o + 6;
		if (l1 == l0 || q >= sc->len)
			continue;
		if (sc->text[q] == '>') {
			a = q + 1;
		} else if (q > l1 && cwm_known_label(sc, l0, l1)) {
			/* vLLM's shorthand, the '>' left out: <tool: python print(1) </tool> */
			a = q;
			shorthand = 1;
		} else {
			continue;	/* "<tool:" in a sentence is no tag */
		}
		c = find_nocase(sc->text, a, sc->len, "</tool>");
		if (c == NPOS) {
			/* a command cut by the stop token must not run half of it */
			tc_call_error(sc, "cwm", NULL, "the block is not closed with </tool>");
			tc_add_span(sc, o, sc->len);
			return;
		}
		for (b = c; shorthand && b > a && isspace((unsigned char)sc->text[b - 1]); b--)
			;
		cwm_block(sc, l0, l1, a, b);
		p = c + strlen("</tool>");
		tc_add_span(sc, o, p);
	}
}

/* ---- PLaMo 3: <|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>... ---- */

#define PL_REQS "<|plamo:begin_tool_requests:plamo|>"
#define PL_REQS_END "<|plamo:end_tool_requests:plamo|>"
#define PL_REQ "<|plamo:begin_tool_request:plamo|>"
#define PL_REQ_END "<|plamo:end_tool_request:plamo|>"
#define PL_NAME "<|plamo:begin_tool_name:plamo|>"
#define PL_NAME_END "<|plamo:end_tool_name:plamo|>"
#define PL_ARGS "<|plamo:begin_tool_arguments:plamo|>"
#define PL_CONSTRAIN "<|plamo:constrain|>json"
#define PL_MSG "<|plamo:msg|>"
#define PL_ARGS_END "<|plamo:end_tool_arguments:plamo|>"
#define PL_EOT "<|plamo:tag|>"

/*
 * One request at `p` (just past PL_REQ). Returns where it ends, or NPOS when
 * the requests cannot go on. The stop token may cut the reply after whole
 * JSON arguments (vLLM's engine parser reads those): the closers left out at
 * the very end are forgiven, nowhere else.
 */
static size_t plamo_request(struct scan *sc, size_t p, size_t end)
{
	size_t ne, ae, used, q;
	char *name;
	struct buf notes = BUF_INIT;
	json_t *args;

	p = tc_skip_ws(sc, p, end);
	if (!tc_starts(sc, p, end, PL_NAME) ||
	    (ne = tc_find_at(sc->text, p + strlen(PL_NAME), end, PL_NAME_END)) == NPOS) {
		tc_call_error(sc, "plamo3", NULL, "a request has no whole tool name");
		return NPOS;
	}
	p += strlen(PL_NAME);
	name = xstrndup(sc->text + p, ne - p);
	p = tc_skip_ws(sc, ne + strlen(PL_NAME_END), end);
	if (!tc_starts(sc, p, end, PL_ARGS)) {
		tc_call_error(sc, "plamo3", name, "its name is not followed by " PL_ARGS);
		free(name);
		return NPOS;
	}
	p += strlen(PL_ARGS);
	if (tc_starts(sc, p, end, PL_CONSTRAIN))
		p += strlen(PL_CONSTRAIN);
	if (tc_starts(sc, p, end, PL_MSG))
		p += strlen(PL_MSG);
	ae = tc_find_at(sc->text, p, end, PL_ARGS_END);
	if (!tc_known(sc, name)) {
		tc_unknown_error(sc, "plamo3", name);
		free(name);
		return NPOS;
	}
	args = tc_take_json(sc, p, ae == NPOS ? end : ae, "plamo3", 1, name, &used, &notes);
	q = tc_skip_ws(sc, ae == NPOS ? p + used : ae + strlen(PL_ARGS_END), end);
	if (args && !json_is_object(args)) {
		tc_call_error(sc, "plamo3", name, "its arguments are not a JSON object");
		q = NPOS;
	} else if (args && q < end && !tc_starts(sc, q, end, PL_REQ_END)) {
		tc_call_error(sc, "plamo3", name, "the request is not closed with " PL_REQ_END);
		q = NPOS;
	} else if (args) {
		tc_push_call(sc, name, args, "plamo3", notes.buf);
		if (q < end)
			q += strlen(PL_REQ_END);
	} else {
		q = NPOS;
	}
	json_decref(args);
	buf_release(&notes);
	free(name);
	return q;
}

void tc_scan_plamo3(struct scan *sc)
{
	size_t o = tc_find_at(sc->text, 0, sc->len, PL_REQS), end, p, n = 0;

	if (o == NPOS)
		return;
	/* vLLM reads nothing after the end-of-turn tag */
	end = tc_find_at(sc->text, o, sc->len, PL_EOT);
	end = end == NPOS ? sc->len : end;
	p = tc_skip_ws(sc, o + strlen(PL_REQS), end);
	while (tc_starts(sc, p, end, PL_REQ)) {
		p = plamo_request(sc, p + strlen(PL_REQ), end);
		if (p == NPOS)
			break;
		p = tc_skip_ws(sc, p, end);
		n++;
	}
	if (p != NPOS && !n)
		tc_call_error(sc, "plamo3", NULL, PL_REQS " is not followed by a request");
	else if (p != NPOS && p < end && !tc_starts(sc, p, end, PL_REQS_END))
		tc_call_error(sc, "plamo3", NULL, "the requests are not closed with " PL_REQS_END);
	tc_add_span(sc, o, sc->len);
}

/* ---- Step-Audio 2: <tool_call>function\nNAME\n{...}</tool_call> ---- */

#define SA_OPEN "<tool_call>"
#define SA_CLOSE "</tool_call>"

/* Does the <tool_call> whose body starts at `p` open with the word "function" on its own line? */
static int sa_form(const struct scan *sc, size_t p)
{
	p = tc_skip_ws(sc, p, sc->len);
	if (!tc_starts(sc, p, sc->len, "function"))
		return 0;
	p += strlen("function");
	while (p < sc->len && (sc->text[p] == ' ' || sc->text[p] == '\t' || sc->text[p] == '\r'))
		p++;
	return p < sc->len && sc->text[p] == '\n';
}

void tc_scan_step_audio2(struct scan *sc)
{
	size_t p = 0, o;

	while ((o = tc_find_at(sc->text, p, sc->len, SA_OPEN)) != NPOS) {
		size_t body = o + strlen(SA_OPEN), c, end, nl, n0, n1, used;
		struct buf notes = BUF_INIT;
		char *name;
		json_t *args;

		if (!sa_form(sc, body)) {
			p = body;
			continue;
		}
		c = tc_find_at(sc->text, body, sc->len, SA_CLOSE);
		/* a block the stop token cut is read, as Hermes' is */
		end = c == NPOS ? sc->len : c;
		nl = tc_find_at(sc->text, body, end, "\n");
		n0 = tc_skip_ws(sc, nl == NPOS ? end : nl, end);
		for (n1 = n0; n1 < end && sc->text[n1] != '\n'; n1++)
			;
		while (n1 > n0 && isspace((unsigned char)sc->text[n1 - 1]))
			n1--;
		p = c == NPOS ? sc->len : c + strlen(SA_CLOSE);
		tc_add_span(sc, o, p);
		name = xstrndup(sc->text + n0, n1 - n0);
		if (!*name) {
			tc_call_error(sc, "step-audio2", NULL, "no tool name follows the line "
				      "\"function\"");
			free(name);
			continue;
		}
		if (!tc_known(sc, name)) {
			tc_unknown_error(sc, "step-audio2", name);
			free(name);
			continue;
		}
		n1 = tc_skip_ws(sc, n1, end);
		args = n1 < end ? tc_take_json(sc, n1, end, "step-audio2", 1, name, &used, &notes) :
		       json_object();
		if (json_is_object(args))
			tc_push_call(sc, name, args, "step-audio2", notes.buf);
		else if (args)
			tc_call_error(sc, "step-audio2", name, "its arguments are not a JSON object");
		json_decref(args);
		buf_release(&notes);
		free(name);
	}
}

/* ---- IQuest Coder V2: <iquestcoder_tool_call>NAME<arg_key>k</arg_key><arg_value>v... ---- */

#define IQ_OPEN "<iquestcoder_tool_call>"
#define IQ_CLOSE "</iquestcoder_tool_call>"

void tc_scan_iquest2(struct scan *sc)
{
	size_t p = 0, o;

	while ((o = tc_find_at(sc->text, p, sc->len, IQ_OPEN)) != NPOS) {
		size_t body = tc_skip_ws(sc, o + strlen(IQ_OPEN), sc->len);
		size_t c = tc_find_at(sc->text, body, sc->len, IQ_CLOSE);
		size_t end = c == NPOS ? sc->len : c;

		/* the body is GLM's; its messages name that form, which forgex reads too */
		tc_take_glm(sc, body, end);
		p = c == NPOS ? sc->len : c + strlen(IQ_CLOSE);
		tc_add_span(sc, o, p);
	}
}

/*
 * ---- Reasoning channels closed by a marker other families use too ----
 * Muse Glimmer: [<|start|>assistant ]to=self<|message|>...<|eom|>;
 * HyperCLOVA X SEED Think 14B: [<|im_start|>]assistant/think\n...<|im_end|>.
 * Only from the opening on: an <|eom|> or <|im_end|> alone ends no reasoning.
 */

static void mask_channel(char *t, size_t len, const char *open, const char *before,
			 const char *close)
{
	size_t p = 0, o, bl = strlen(before);

	while ((o = tc_find_at(t, p, len, open)) != NPOS) {
		size_t a = o, e = tc_find_at(t, o, len, close);

		if (o >= bl && !memcmp(t + o - bl, before, bl))
			a = o - bl;
		/* a channel never closed is reasoning to the end, as a <think> never closed */
		p = e == NPOS ? len : e + strlen(close);
		memset(t + a, ' ', p - a);
	}
}

void tc_mask_channels(char *t, size_t len)
{
	/* Muse Glimmer's to=self channel is dialects_more.c's (mask_glimmer()) */
	mask_channel(t, len, "assistant/think\n", "<|im_start|>", "<|im_end|>");
}

/*
 * ---- Granite 3.3 / 4.0 pythonic: NAME(k="v") lines ending the reply, without a list ----
 * Only the run of lines that close the reply counts, each wholly a call to an
 * offered tool: the same line in the middle of prose is a mention.
 */

/* Is t[a, b) (one line, blanks trimmed) NAME(...) for an offered tool? */
static int call_line(const struct scan *sc, size_t a, size_t b)
{
	size_t n;
	char *name;
	int ok;

	if (a >= b || !(isalpha((unsigned char)sc->text[a]) || sc->text[a] == '_') ||
	    sc->text[b - 1] != ')')
		return 0;
	for (n = a; n < b && (isalnum((unsigned char)sc->text[n]) || sc->text[n] == '_'); n++)
		;
	if (n >= b || sc->text[n] != '(')
		return 0;
	name = xstrndup(sc->text + a, n - a);
	ok = tc_known(sc, name);
	free(name);
	return ok;
}

void tc_scan_line_calls(struct scan *sc)
{
	size_t b = sc->len, first = NPOS;

	for (;;) {
		size_t e = b, a;

		while (e > 0 && isspace((unsigned char)sc->text[e - 1]))
			e--;
		if (!e)
			break;
		for (a = e; a > 0 && sc->text[a - 1] != '\n'; a--)
			;
		b = a;
		while (a < e && isspace((unsigned char)sc->text[a]))
			a++;
		if (!call_line(sc, a, e))
			break;
		first = a;
		if (!b)
			break;
	}
	if (first == NPOS)
		return;
	tc_take_py_calls(sc, first, sc->len, "pythonic");
	tc_add_span(sc, first, sc->len);
}
