/*
 * Text-call dialects from llama.cpp's parser list that the other files do
 * not cover (see textcalls_int.h): Muse Glimmer's ATEM markup inside
 * addressed messages and Solar Open's <|tool_call:begin|> markers, and the
 * reasoning Glimmer and Solar Open write, for the mask. Formats were read
 * from llama.cpp's common/parsers/ and tests/test-chat.cpp and from
 * SGLang's and vLLM's detector tests; the samples live in
 * tests/fixtures/dialects/.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "llm/textcalls_int.h"

/*
 * A value written as text: a JSON number, literal, object or array when
 * the whole of it is one (these dialects type values by the tool's
 * schema, which the reader has not got), else the text itself.
 */
static json_t *typed_value(const char *s, size_t n)
{
	size_t a = 0, b = n;
	json_t *j;

	while (a < b && isspace((unsigned char)s[a]))
		a++;
	while (b > a && isspace((unsigned char)s[b - 1]))
		b--;
	if (a < b && (s[a] == '{' || s[a] == '[' || s[a] == '-' || isdigit((unsigned char)s[a]) ||
		      !strncmp(s + a, "true", b - a) || !strncmp(s + a, "false", b - a) ||
		      !strncmp(s + a, "null", b - a))) {
		j = json_loadb(s + a, b - a, JSON_DECODE_ANY, NULL);
		if (j)
			return j;
	}
	return jsonx_stringn_lossy(s, n);
}

/* A known tool by `name`, or by its last half when the name is written doubled ("x.x"). */
static char *known_name(const struct scan *sc, const char *name)
{
	size_t n = strlen(name), h = n / 2;

	if (tc_known(sc, name))
		return xstrdup(name);
	if (n % 2 && name[h] == '.' && !strncmp(name, name + h + 1, h)) {
		char *half = xstrndup(name, h);

		if (tc_known(sc, half))
			return half;
		free(half);
	}
	return NULL;
}

/* ---- Muse Glimmer: " to=NAME<|message|>" then ATEM markup ---- */

/*
 * The reply is a series of addressed messages: " to=self<|message|>"
 * (reasoning), " to=user<|message|>" (the answer) or " to=TOOL<|message|>"
 * followed by <atem:function_calls><atem:invoke name="TOOL">
 * <atem:parameter name="K">V</atem:parameter>...; each message ends at
 * <|eom|> or <|eot|>, and the next one starts there with
 * "<|start|>assistant". A header quoted inside a message is its text. Only
 * a message to a tool holds calls: markup in the answer, the reasoning or
 * a reply with no headers is text (the mask blanks it). But a message with
 * no recipient (" <|message|>"), or one to the user, that is nothing but
 * one ATEM block calling offered tools is a call whose header the model
 * fumbled: Ollama's Glimmer parser reads these, a failure it saw the model
 * make. A recipient may be the wrapper's name, "atem:function_calls".
 */
static const char gl_msg[] = "<|message|>";

/*
 * The addressed message at `from` (the reply's start, or just after the
 * previous message's end): its recipient in [*r0, *r1), its body
 * [*b0, *b1), and where the next one starts in *next. 0 when none is there.
 */
static int gl_next(const char *t, size_t len, size_t from, size_t *r0, size_t *r1, size_t *b0,
		   size_t *b1, size_t *next)
{
	static const char start[] = "<|start|>assistant";
	size_t p = from, m, e, o;

	while (p < len && isspace((unsigned char)t[p]))
		p++;
	if (len - p >= strlen(start) && !memcmp(t + p, start, strlen(start)))
		p += strlen(start);
	while (p < len && isspace((unsigned char)t[p]))
		p++;
	if (len - p >= strlen(gl_msg) && !memcmp(t + p, gl_msg, strlen(gl_msg))) {
		*r0 = m = p;	/* no recipient */
	} else {
		if (len - p < 3 || memcmp(t + p, "to=", 3))
			return 0;
		for (m = p + 3; m < len && (tc_name_char((unsigned char)t[m]) || t[m] == ':'); m++)
			;
		if (m == p + 3 || len - m < strlen(gl_msg) || memcmp(t + m, gl_msg, strlen(gl_msg)))
			return 0;
		*r0 = p + 3;
	}
	*r1 = m;
	*b0 = m + strlen(gl_msg);
	e = tc_find_at(t, *b0, len, "<|eom|>");
	o = tc_find_at(t, *b0, len, "<|eot|>");
	if (o < e)
		e = o;
	*b1 = e == (size_t)-1 ? len : e;
	*next = e == (size_t)-1 ? len : e + strlen("<|eom|>");
	return 1;
}

static int gl_is(const char *t, size_t r0, size_t r1, const char *who)
{
	return r1 - r0 == strlen(who) && !memcmp(t + r0, who, r1 - r0);
}

static const char gl_fc[] = "<atem:function_calls>", gl_fcc[] = "</atem:function_calls>";

/* A message to no one or to the user whose body is one ATEM block and nothing else */
static int gl_fumbled(const char *t, size_t r0, size_t r1, size_t b0, size_t b1)
{
	if (r0 != r1 && !gl_is(t, r0, r1, "user"))
		return 0;
	while (b0 < b1 && isspace((unsigned char)t[b0]))
		b0++;
	while (b1 > b0 && isspace((unsigned char)t[b1 - 1]))
		b1--;
	return b1 - b0 > strlen(gl_fc) + strlen(gl_fcc) &&
	       !memcmp(t + b0, gl_fc, strlen(gl_fc)) &&
	       !memcmp(t + b1 - strlen(gl_fcc), gl_fcc, strlen(gl_fcc)) &&
	       tc_find_at(t, b0 + 1, b1, gl_fc) == (size_t)-1;
}

/*
 * The name of the <atem:invoke name="..."> whose name starts at `n0`, as
 * the model meant it; where its parameters may start in *after, or
 * (size_t)-1 when the opening tag is not closed. Glimmer at times fumbles
 * its <|message|> token into the name or in place of its `">`
 * (`name="read<|message|>">`, `name="re<|message|>ad">`,
 * `name="read<|message|><atem:parameter ...`: Ollama's parser recovers
 * them, stress failures it saw): the token is never part of a name, so it
 * is left out, and a name cut by a parameter ends there.
 */
static char *gl_name(const struct scan *sc, size_t n0, size_t end, size_t *after)
{
	static const char par[] = "<atem:parameter name=\"";
	struct buf name = BUF_INIT;
	size_t q = n0;

	*after = (size_t)-1;
	while (q < end) {
		if (tc_starts(sc, q, end, gl_msg)) {
			q += strlen(gl_msg);
			continue;
		}
		if (tc_starts(sc, q, end, "\">")) {
			*after = q + 2;
			break;
		}
		if (q > n0 && tc_starts(sc, q, end, par) && name.len) {
			*after = q;	/* its `">` replaced by the token */
			break;
		}
		if (sc->text[q] == '"' || sc->text[q] == '>' || sc->text[q] == '<')
			break;
		buf_addch(&name, sc->text[q++]);
	}
	return buf_detach(&name, NULL);
}

/*
 * One <atem:invoke name="..."> at `p` in a message ending at `end`, sent to
 * `to` (NULL: the recipient names no tool, a namespace or none).
 */
static size_t gl_invoke(struct scan *sc, size_t p, size_t end, const char *to)
{
	static const char inv[] = "<atem:invoke name=\"", par[] = "<atem:parameter name=\"";
	static const char pclose[] = "</atem:parameter>", iclose[] = "</atem:invoke>";
	size_t n0 = p + strlen(inv), n1, q, c;
	char *raw, *name;
	json_t *args;

	raw = gl_name(sc, n0, end, &n1);
	c = n1 == (size_t)-1 ? (size_t)-1 : tc_find_at(sc->text, n1, end, iclose);
	if (c == (size_t)-1) {
		tc_call_error(sc, "glimmer", raw, "the call is not closed with %s (the reply ends "
			      "inside it)", iclose);
		free(raw);
		return end;
	}
	if (!(name = known_name(sc, raw))) {
		tc_unknown_error(sc, "glimmer", raw);
		free(raw);
		return c + strlen(iclose);
	}
	free(raw);
	if (to && strcmp(to, name)) {
		/* which of the two names the model meant is not for forgex to guess */
		tc_call_error(sc, "glimmer", name, "the call is in a message addressed to %s", to);
		free(name);
		return c + strlen(iclose);
	}
	args = json_object();
	for (q = n1; (q = tc_find_at(sc->text, q, c, par)) != (size_t)-1;) {
		size_t k0 = q + strlen(par), k1, v0, v1;

		for (k1 = k0; k1 < c && sc->text[k1] != '"'; k1++)
			;
		v1 = tc_find_at(sc->text, k1, c, pclose);
		if (!tc_starts(sc, k1, c, "\">") || v1 == (size_t)-1) {
			tc_call_error(sc, "glimmer", name, "a parameter is not written as "
				      "<atem:parameter name=\"KEY\">VALUE%s", pclose);
			goto out;
		}
		v0 = k1 + 2;
		tc_set_key(args, sc->text + k0, k1 - k0, typed_value(sc->text + v0, v1 - v0));
		q = v1 + strlen(pclose);
	}
	tc_push_call(sc, name, args, "glimmer", NULL);
out:
	json_decref(args);
	free(name);
	return c + strlen(iclose);
}

/* Whether every invoke in [b0, b1) names an offered tool (and there is one) */
static int gl_all_known(const struct scan *sc, size_t b0, size_t b1)
{
	static const char inv[] = "<atem:invoke name=\"";
	size_t q = b0, n = 0;

	while ((q = tc_find_at(sc->text, q, b1, inv)) != (size_t)-1) {
		size_t n0 = q + strlen(inv), n1;
		char *raw = gl_name(sc, n0, b1, &n1), *name = known_name(sc, raw);

		free(raw);
		if (!name)
			return 0;
		free(name);
		n++;
		q = n0;
	}
	return n > 0;
}

static void scan_glimmer(struct scan *sc)
{
	size_t p = 0, r0, r1, b0, b1, next;

	while (gl_next(sc->text, sc->len, p, &r0, &r1, &b0, &b1, &next)) {
		size_t q = b0;
		char *rcpt, *to;

		p = next;
		if (gl_is(sc->text, r0, r1, "self"))
			continue;
		if (gl_fumbled(sc->text, r0, r1, b0, b1)) {
			if (!gl_all_known(sc, b0, b1))
				continue;	/* markup naming no tool of ours is text */
		} else if (r0 == r1 || gl_is(sc->text, r0, r1, "user")) {
			continue;
		}
		rcpt = xstrndup(sc->text + r0, r1 - r0);
		to = r0 == r1 ? NULL : known_name(sc, rcpt);
		if (tc_find_at(sc->text, b0, b1, "<atem:") == (size_t)-1) {
			if (to)
				tc_call_error(sc, "glimmer", to, "the message to it holds no %s block",
					      gl_fc);
		} else {
			while ((q = tc_find_at(sc->text, q, b1, "<atem:invoke name=\"")) != (size_t)-1)
				q = gl_invoke(sc, q, b1, to);
		}
		free(rcpt);
		free(to);
		tc_add_span(sc, r0 == r1 ? r0 : r0 - 3, next);
	}
}

/* Blank the reasoning (to=self) and any ATEM markup outside a message to a tool. */
static void mask_glimmer(char *t, size_t len)
{
	static const char *const fc = gl_fc, *const fcc = gl_fcc;
	size_t p = 0, q, s, r0, r1, b0, b1, next;

	while (gl_next(t, len, p, &r0, &r1, &b0, &b1, &next)) {
		p = next;
		if (gl_is(t, r0, r1, "self"))
			memset(t + b0, ' ', b1 - b0);
	}
	for (p = 0; (q = tc_find_at(t, p, len, fc)) != (size_t)-1;) {
		size_t c = tc_find_at(t, q, len, fcc), e = c == (size_t)-1 ? len : c + strlen(fcc);
		int tool = 0;

		for (s = 0; gl_next(t, len, s, &r0, &r1, &b0, &b1, &next); s = next)
			if (b0 <= q && q < b1 && !gl_is(t, r0, r1, "self") &&
			    (gl_fumbled(t, r0, r1, b0, b1) ||
			     (r0 != r1 && !gl_is(t, r0, r1, "user"))))
				tool = 1;
		if (!tool)
			memset(t + q, ' ', e - q);
		p = e;
	}
}

/* ---- Solar Open: <|tool_calls|><|tool_call:begin|>ID<|tool_call:name|>f<|tool_call:args|>{...}<|tool_call:end|> ---- */

static void scan_solar(struct scan *sc)
{
	static const char beg[] = "<|tool_call:begin|>", nm[] = "<|tool_call:name|>";
	static const char ar[] = "<|tool_call:args|>", fin[] = "<|tool_call:end|>";
	static const char *const wrappers[] = { "<|tool_calls|>", "<|calls|>", "<|flush|>" };
	size_t p = 0, o, k, q, found = 0;

	while ((o = tc_find_at(sc->text, p, sc->len, beg)) != (size_t)-1) {
		size_t next = tc_find_at(sc->text, o + strlen(beg), sc->len, beg);
		size_t lim = next == (size_t)-1 ? sc->len : next, c = tc_find_at(sc->text, o, lim, fin);
		size_t end = c == (size_t)-1 ? lim : c, n = tc_find_at(sc->text, o, end, nm), a, used;

		a = n == (size_t)-1 ? (size_t)-1 : tc_find_at(sc->text, n, end, ar);
		found++;
		if (a == (size_t)-1) {
			tc_call_error(sc, "solar-open", NULL, "the call has no %sNAME%s{...}", nm, ar);
		} else {
			char *name = xstrndup(sc->text + n + strlen(nm), a - n - strlen(nm));
			struct buf notes = BUF_INIT;
			json_t *j = NULL;
			size_t b = tc_skip_ws(sc, a + strlen(ar), end);

			if (!tc_known(sc, name))
				tc_unknown_error(sc, "solar-open", name);
			else if (c == (size_t)-1)
				tc_call_error(sc, "solar-open", name, "the call is not closed with %s", fin);
			else if ((j = tc_take_json(sc, b, end, "solar-open", 1, name, &used, &notes)) &&
				 json_is_object(j))
				tc_push_call(sc, name, j, "solar-open", notes.buf);
			else if (j)
				tc_call_error(sc, "solar-open", name, "its arguments are not a JSON object");
			json_decref(j);
			buf_release(&notes);
			free(name);
		}
		p = c == (size_t)-1 ? lim : c + strlen(fin);
		tc_add_span(sc, o, p);
	}
	for (k = 0; found && k < ARRAY_SIZE(wrappers); k++)
		for (p = 0; (q = tc_find_at(sc->text, p, sc->len, wrappers[k])) != (size_t)-1;
		     p = q + strlen(wrappers[k]))
			tc_add_span(sc, q, q + strlen(wrappers[k]));
}

/* ---- Laguna (Poolside): a call written in <user> where <tool_call> belongs ---- */

/*
 * Laguna at times writes its call as <user>NAME\n<arg_key>K</arg_key>...
 * </user>, <user> for <tool_call> (Ollama's Laguna parser reads it so).
 * Only a body that starts with an offered tool's name and GLM's <arg_key>
 * is a call: other text in <user> is prose.
 */
static void scan_laguna_user(struct scan *sc)
{
	size_t p = 0, o;

	while ((o = tc_find_at(sc->text, p, sc->len, "<user>")) != (size_t)-1) {
		size_t body = tc_skip_ws(sc, o + 6, sc->len);
		size_t c = tc_find_at(sc->text, body, sc->len, "</user>");
		size_t end = c == (size_t)-1 ? sc->len : c, n = body;
		char *name;

		p = c == (size_t)-1 ? sc->len : c + 7;
		while (n < end && tc_name_char((unsigned char)sc->text[n]))
			n++;
		if (n == body || !tc_starts(sc, tc_skip_ws(sc, n, end), end, "<arg_key>"))
			continue;
		name = xstrndup(sc->text + body, n - body);
		if (tc_known(sc, name)) {
			tc_take_glm(sc, body, end);
			tc_add_span(sc, o, p);
		}
		free(name);
	}
}

/* ---- LongCat-Flash: <longcat_tool_call>NAME<longcat_arg_key>K</longcat_arg_key>... ---- */

/*
 * GLM's body in LongCat's tags (Ollama's longcatflash parser). The JSON
 * body LongCat also writes in <longcat_tool_call> is the longcat dialect's
 * (tagged JSON): a body here is a name, then <longcat_arg_key> or nothing.
 */
static const struct glm_tags longcat_tags = {
	"longcat-flash", "<longcat_arg_key>", "</longcat_arg_key>", "<longcat_arg_value>",
	"</longcat_arg_value>", "functions.",
};

static void scan_longcat_flash(struct scan *sc)
{
	static const char open[] = "<longcat_tool_call>", close[] = "</longcat_tool_call>";
	size_t p = 0, o;

	while ((o = tc_find_at(sc->text, p, sc->len, open)) != (size_t)-1) {
		size_t body = tc_skip_ws(sc, o + strlen(open), sc->len);
		size_t c = tc_find_at(sc->text, body, sc->len, close);
		size_t next = tc_find_at(sc->text, body, sc->len, open), end, n, r;

		/* cut by the stop token: as far as it goes, as for GLM */
		end = c != (size_t)-1 && (next == (size_t)-1 || c < next) ? c :
		      next != (size_t)-1 ? next : sc->len;
		p = end == c ? c + strlen(close) : end;
		for (n = body; n < end && tc_name_char((unsigned char)sc->text[n]); n++)
			;
		r = tc_skip_ws(sc, n, end);
		if (n == body || !isalpha((unsigned char)sc->text[body]) ||
		    (r < end && !tc_starts(sc, r, end, longcat_tags.key)))
			continue;
		tc_take_glm_tags(sc, body, end, &longcat_tags);
		tc_add_span(sc, o, p);
	}
}

void tc_scan_more(struct scan *sc)
{
	static void (*const scans[])(struct scan *) = {
		scan_glimmer, scan_solar, scan_laguna_user, scan_longcat_flash,
	};
	size_t k;

	for (k = 0; k < ARRAY_SIZE(scans) && !sc->out->nr && !sc->out->errors.nr; k++) {
		sc->spans_nr = 0;
		scans[k](sc);
	}
}

/* ---- the reasoning these families write ---- */

void tc_mask_more(char *text, size_t len)
{
	size_t p, o;

	/* Solar Open: <|think|>... up to <|end|> (only when opened: harmony ends messages with <|end|> too) */
	for (p = 0; (o = tc_find_at(text, p, len, "<|think|>")) != (size_t)-1;) {
		size_t e = tc_find_at(text, o, len, "<|end|>");

		e = e == (size_t)-1 ? len : e + strlen("<|end|>");
		memset(text + o, ' ', e - o);
		p = e;
	}
	/* LongCat-Flash: <longcat_think>...</longcat_think> (one never closed: to the end) */
	for (p = 0; (o = tc_find_at(text, p, len, "<longcat_think>")) != (size_t)-1;) {
		size_t e = tc_find_at(text, o, len, "</longcat_think>");

		e = e == (size_t)-1 ? len : e + strlen("</longcat_think>");
		memset(text + o, ' ', e - o);
		p = e;
	}
	mask_glimmer(text, len);
}
