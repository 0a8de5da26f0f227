/*
 * Families without markers of the kinds the other files share: Kimi K3's
 * tag language ("xtml": <|open|>WORD ATTRS<|sep|> ... <|close|>WORD<|sep|>),
 * Functionary v3.2's recipients (>>>NAME then the content for it), and
 * MiniCPM 5's <function name="..."><param name="...">. See textcalls.h for what a call must be.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "llm/textcalls_int.h"

#define K3_OPEN "<|open|>"
#define K3_CLOSE "<|close|>"
#define K3_SEP "<|sep|>"

/* ---- Kimi K3 ---- */

struct k3tag {
	size_t at, end;		/* the marker: [at, end) */
	const char *word;	/* into the text, `wlen` bytes */
	size_t wlen;
	size_t attrs, attrs_end;	/* its attributes (open markers) */
};

/*
 * The marker at `p`: `lead` (K3_OPEN or K3_CLOSE), blanks, a word, for an
 * open marker attributes, then K3_SEP. Blanks around the word are allowed
 * (the tokens are sometimes decoded with spaces between them). 0 when
 * there is none.
 */
static int k3_tag(const struct scan *sc, size_t p, const char *lead, struct k3tag *tg)
{
	size_t q = p + strlen(lead), w, sep;

	if (!tc_starts(sc, p, sc->len, lead))
		return 0;
	while (q < sc->len && sc->text[q] == ' ')
		q++;
	for (w = q; q < sc->len && islower((unsigned char)sc->text[q]); q++)
		;
	if (q == w)
		return 0;
	sep = tc_find_at(sc->text, q, sc->len, K3_SEP);
	if (sep == (size_t)-1 || tc_find_at(sc->text, q, sep, "<|") != (size_t)-1)
		return 0;
	tg->at = p;
	tg->end = sep + strlen(K3_SEP);
	tg->word = sc->text + w;
	tg->wlen = q - w;
	tg->attrs = q;
	tg->attrs_end = sep;
	return 1;
}

static int k3_is(const struct k3tag *tg, const char *word)
{
	return tg->wlen == strlen(word) && !memcmp(tg->word, word, tg->wlen);
}

/* The next `lead` marker named `word` at or after `from`; its tag in *tg. */
static int k3_next(const struct scan *sc, size_t from, const char *lead, const char *word,
		   struct k3tag *tg)
{
	size_t p = from;

	while ((p = tc_find_at(sc->text, p, sc->len, lead)) != (size_t)-1) {
		if (k3_tag(sc, p, lead, tg) && k3_is(tg, word))
			return 1;
		p++;
	}
	return 0;
}

/* Attribute `key`'s value (quotes removed, &amp; &quot; &lt; &gt; &apos; undone), or NULL. */
static char *k3_attr(const struct scan *sc, const struct k3tag *tg, const char *key)
{
	size_t p = tg->attrs, kl = strlen(key);
	struct buf v = BUF_INIT;
	static const struct {
		const char *ent, *ch;
	} ents[] = { { "&amp;", "&" }, { "&quot;", "\"" }, { "&lt;", "<" }, { "&gt;", ">" },
		     { "&apos;", "'" } };

	while (p < tg->attrs_end) {
		const char *t = sc->text;
		size_t q, e, i;

		while (p < tg->attrs_end && t[p] == ' ')
			p++;
		q = p;
		while (q < tg->attrs_end && t[q] != '=' && t[q] != ' ')
			q++;
		if (q >= tg->attrs_end || t[q] != '=' || q + 1 >= tg->attrs_end || t[q + 1] != '"')
			return NULL;
		e = q + 2;
		while (e < tg->attrs_end && t[e] != '"')
			e++;
		if (e >= tg->attrs_end)
			return NULL;
		if (q - p == kl && !memcmp(t + p, key, kl)) {
			for (i = q + 2; i < e;) {
				size_t k;

				for (k = 0; k < ARRAY_SIZE(ents); k++)
					if (tc_starts(sc, i, e, ents[k].ent))
						break;
				if (k < ARRAY_SIZE(ents)) {
					buf_addstr(&v, ents[k].ch);
					i += strlen(ents[k].ent);
				} else {
					buf_addch(&v, t[i++]);
				}
			}
			return buf_detach(&v, NULL);
		}
		p = e + 1;
	}
	return NULL;
}

/* An argument's value by its declared type; NULL (with *why) when it is not of that type. */
static json_t *k3_value(const char *s, size_t n, const char *type, const char **why)
{
	json_t *j;

	if (!type || !strcmp(type, "string"))
		return jsonx_stringn_lossy(s, n);
	j = json_loadb(s, n, JSON_DECODE_ANY, NULL);
	if ((!strcmp(type, "number") && json_is_number(j)) ||
	    (!strcmp(type, "integer") && json_is_integer(j)) ||
	    (!strcmp(type, "boolean") && json_is_boolean(j)) ||
	    (!strcmp(type, "null") && json_is_null(j)) ||
	    (!strcmp(type, "object") && json_is_object(j)) ||
	    (!strcmp(type, "array") && json_is_array(j)))
		return j;
	if (strcmp(type, "number") && strcmp(type, "integer") && strcmp(type, "boolean") &&
	    strcmp(type, "null") && strcmp(type, "object") && strcmp(type, "array")) {
		json_decref(j);
		return jsonx_stringn_lossy(s, n);	/* a type of its own: the text */
	}
	json_decref(j);
	*why = type;
	return NULL;
}

/* One call: [body, end) between its open marker `tg` and <|close|>call<|sep|>. */
static void k3_call(struct scan *sc, const struct k3tag *tg, size_t body, size_t end, int closed)
{
	char *name = k3_attr(sc, tg, "tool");
	json_t *args = json_object();
	struct k3tag a, ac;
	size_t p = body;
	const char *bad = NULL;
	char *key = NULL;

	if (!name || !*name) {
		tc_call_error(sc, "kimi-k3", NULL, "the call has no tool=\"NAME\" attribute");
		goto out;
	}
	if (!tc_known(sc, name)) {
		tc_unknown_error(sc, "kimi-k3", name);
		goto out;
	}
	if (!closed) {
		tc_call_error(sc, "kimi-k3", name, "the call ends before its %s%s",
			      K3_CLOSE "call", K3_SEP);
		goto out;
	}
	/* the arguments as one raw JSON block: <|open|>json type="object"<|sep|>{...}<|close|>json<|sep|> */
	if (k3_next(sc, p, K3_OPEN, "json", &a) && a.at < end &&
	    (!k3_next(sc, p, K3_OPEN, "argument", &ac) || ac.at > a.at)) {
		json_t *j;

		if (!k3_next(sc, a.end, K3_CLOSE, "json", &ac) || ac.at > end) {
			tc_call_error(sc, "kimi-k3", name, "the json block is not closed with "
				      "%sjson%s", K3_CLOSE, K3_SEP);
			goto out;
		}
		j = json_loadb(sc->text + a.end, ac.at - a.end, 0, NULL);
		if (!json_is_object(j)) {
			json_decref(j);
			tc_call_error(sc, "kimi-k3", name, "the json block is not a JSON object");
			goto out;
		}
		json_decref(args);
		args = j;
		p = ac.end;
	}
	while (k3_next(sc, p, K3_OPEN, "argument", &a) && a.at < end) {
		char *type;
		json_t *v;

		free(key);
		key = k3_attr(sc, &a, "key");
		if (!key || !k3_next(sc, a.end, K3_CLOSE, "argument", &ac) || ac.at > end) {
			tc_call_error(sc, "kimi-k3", name, "an argument has no key=\"KEY\" or is not "
				      "closed with %sargument%s", K3_CLOSE, K3_SEP);
			goto out;
		}
		type = k3_attr(sc, &a, "type");
		v = k3_value(sc->text + a.end, ac.at - a.end, type, &bad);
		if (!v)
			tc_call_error(sc, "kimi-k3", name, "argument \"%s\" is declared %s but its "
				      "value is not one", key, bad);
		free(type);
		if (!v)
			goto out;
		tc_set_key(args, key, strlen(key), v);
		p = ac.end;
	}
	tc_push_call(sc, name, args, "kimi-k3", NULL);
out:
	free(key);
	free(name);
	json_decref(args);
}

void tc_scan_kimi3(struct scan *sc)
{
	struct k3tag tg, cl;
	size_t p = 0, first = (size_t)-1, last = 0;

	while (k3_next(sc, p, K3_OPEN, "call", &tg)) {
		int closed = k3_next(sc, tg.end, K3_CLOSE, "call", &cl);
		struct k3tag nx;
		size_t end;

		/* a call cut off runs to the next call, or to the end */
		if (closed && k3_next(sc, tg.end, K3_OPEN, "call", &nx) && nx.at < cl.at)
			closed = 0;
		end = closed ? cl.at : (k3_next(sc, tg.end, K3_OPEN, "call", &nx) ? nx.at : sc->len);
		if (first == (size_t)-1)
			first = tg.at;
		k3_call(sc, &tg, tg.end, end, closed);
		p = last = closed ? cl.end : end;
	}
	if (first == (size_t)-1) {
		size_t t = tc_find_at(sc->text, 0, sc->len, K3_OPEN "tools" K3_SEP);

		/* the section opened but no whole call marker in it: the reply was cut */
		if (t != (size_t)-1) {
			tc_call_error(sc, "kimi-k3", NULL, "the tools section holds no whole call "
				      "(the reply ends inside it)");
			tc_add_span(sc, t, sc->len);
		}
		return;
	}
	/* the tools section around the calls, and the response markers, are no prose */
	if (k3_next(sc, 0, K3_OPEN, "tools", &tg) && tg.at < first)
		first = tg.at;
	if (k3_next(sc, last, K3_CLOSE, "tools", &tg))
		last = tg.end;
	tc_add_span(sc, first, last);
	for (p = 0; k3_next(sc, p, K3_OPEN, "response", &tg); p = tg.end)
		tc_add_span(sc, tg.at, tg.end);
	for (p = 0; k3_next(sc, p, K3_CLOSE, "response", &tg); p = tg.end)
		tc_add_span(sc, tg.at, tg.end);
}

/* ---- Functionary v3.2: >>>RECIPIENT\nCONTENT ---- */

/*
 * The reply is a sequence of messages, each to a recipient: ">>>all\n"
 * (or "all\n" when the prompt's own ">>>" came first) for text to the
 * user, ">>>NAME\n{...}" for a call. A recipient counts only when it is a
 * known tool and its JSON object follows on the next line, so a Python
 * prompt (">>> print(x)") or a quoted reply is never one. The first
 * message may lack the ">>>" (the template ends the prompt with it).
 */
static size_t rc_name(const struct scan *sc, size_t p, size_t *name_end)
{
	size_t q = p;

	while (q < sc->len && tc_name_char((unsigned char)sc->text[q]))
		q++;
	*name_end = q;
	if (q == p || q >= sc->len || sc->text[q] != '\n')
		return 0;
	return q + 1;
}

void tc_scan_recipient(struct scan *sc)
{
	size_t p = 0, from, body, ne, at;
	int first = 1;

	for (;;) {
		char *name;

		if (first) {
			at = from = tc_skip_ws(sc, 0, sc->len);
			if (tc_starts(sc, from, sc->len, ">>>"))
				from += 3;
			first = 0;
		} else {
			at = tc_find_at(sc->text, p, sc->len, ">>>");
			if (at == (size_t)-1)
				break;
			from = at + 3;
		}
		p = from;
		if (!(body = rc_name(sc, from, &ne)))
			continue;
		p = body;
		name = xstrndup(sc->text + from, ne - from);
		if (strcmp(name, "all")) {
			size_t q = tc_skip_ws(sc, body, sc->len), used = 0;

			if (q < sc->len && sc->text[q] == '{' && !tc_known(sc, name)) {
				tc_unknown_error(sc, "functionary-v3.2", name);
				tc_add_span(sc, at, q);
			} else if (q < sc->len && sc->text[q] == '{') {
				struct buf notes = BUF_INIT;
				json_t *j = tc_take_json(sc, q, sc->len, "functionary-v3.2", 1, name,
							 &used, &notes);

				if (json_is_object(j))
					tc_push_call(sc, name, j, "functionary-v3.2", notes.buf);
				else if (j)
					tc_call_error(sc, "functionary-v3.2", name, "its arguments are "
						      "not a JSON object");
				json_decref(j);
				buf_release(&notes);
				tc_add_span(sc, at, q + used);
				p = q + used;
			}
		}
		free(name);
	}
}

/* ---- MiniCPM 5: <function name="NAME"><param name="KEY">VALUE</param></function> ---- */

#define MC_OPEN "<function name=\""
#define MC_POPEN "<param name=\""
#define MC_PCLOSE "</param>"
#define MC_CLOSE "</function>"
#define MC_CDATA "<![CDATA["

/* One call at `lt`; returns where it ends. A value may be CDATA, so that it can hold "</param>". */
static size_t mc_call(struct scan *sc, size_t lt)
{
	size_t n0 = lt + strlen(MC_OPEN), n1, gt, c, end, p, ret;
	json_t *args = NULL;
	char *name = NULL;

	n1 = tc_find_at(sc->text, n0, sc->len, "\"");
	gt = n1 == (size_t)-1 ? (size_t)-1 : tc_find_at(sc->text, n1, sc->len, ">");
	if (gt == (size_t)-1) {
		tc_call_error(sc, "minicpm5", NULL, "<function name=\"NAME\"> is not closed");
		tc_add_span(sc, lt, sc->len);
		return sc->len;
	}
	for (p = n0, c = 0; p < n1 && tc_name_char((unsigned char)sc->text[p]); p++)
		c += isalnum((unsigned char)sc->text[p]) != 0;
	if (!c || p < n1)
		return n1;	/* `<function name="...">` in prose names no tool: no call */
	name = xstrndup(sc->text + n0, n1 - n0);
	p = tc_skip_ws(sc, gt + 1, sc->len);
	if (p < sc->len && sc->text[p] == '{') {
		/* <function name="NAME">{JSON}</function>, as Hermes 2 Pro also writes it */
		size_t used = 0;
		struct buf notes = BUF_INIT;

		c = tc_find_at(sc->text, p, sc->len, MC_CLOSE);
		args = tc_take_json(sc, p, c == (size_t)-1 ? sc->len : c, "functionary", 1, name,
				    &used, &notes);
		ret = c == (size_t)-1 ? sc->len : c + strlen(MC_CLOSE);
		if (!tc_known(sc, name))
			tc_unknown_error(sc, "functionary", name);
		else if (json_is_object(args))
			tc_push_call(sc, name, args, "functionary", notes.buf);
		else if (args)
			tc_call_error(sc, "functionary", name, "its arguments are not a JSON object");
		buf_release(&notes);
		tc_add_span(sc, lt, ret);
		json_decref(args);
		free(name);
		return ret;
	}
	args = json_object();
	if (tc_starts(sc, p, sc->len, "<arguments>"))
		p += strlen("<arguments>");	/* the params may come wrapped (Ollama's tests) */
	for (;;) {
		size_t q = tc_skip_ws(sc, p, sc->len), k1, pgt, v0, v1;

		if (!tc_starts(sc, q, sc->len, MC_POPEN))
			break;
		k1 = tc_find_at(sc->text, q + strlen(MC_POPEN), sc->len, "\"");
		pgt = k1 == (size_t)-1 ? (size_t)-1 : tc_find_at(sc->text, k1, sc->len, ">");
		if (pgt == (size_t)-1)
			break;
		v0 = pgt + 1;
		if (tc_starts(sc, v0, sc->len, MC_CDATA)) {
			size_t ce = tc_find_at(sc->text, v0, sc->len, "]]>");

			if (ce == (size_t)-1 || !tc_starts(sc, ce + 3, sc->len, MC_PCLOSE))
				break;
			v1 = ce + 3;
			tc_set_key(args, sc->text + q + strlen(MC_POPEN), k1 - q - strlen(MC_POPEN),
				   jsonx_stringn_lossy(sc->text + v0 + strlen(MC_CDATA),
						       ce - v0 - strlen(MC_CDATA)));
			p = v1 + strlen(MC_PCLOSE);
			continue;
		}
		v1 = tc_find_at(sc->text, v0, sc->len, MC_PCLOSE);
		if (v1 == (size_t)-1)
			break;
		tc_set_key(args, sc->text + q + strlen(MC_POPEN), k1 - q - strlen(MC_POPEN),
			   tc_xml_value(sc->text + v0, v1 - v0));
		p = v1 + strlen(MC_PCLOSE);
	}
	p = tc_skip_ws(sc, p, sc->len);
	if (tc_starts(sc, p, sc->len, "</arguments>"))
		p = tc_skip_ws(sc, p + strlen("</arguments>"), sc->len);
	c = tc_starts(sc, p, sc->len, MC_CLOSE) ? p : (size_t)-1;
	end = c == (size_t)-1 ? tc_find_at(sc->text, p, sc->len, MC_CLOSE) : c;
	ret = end == (size_t)-1 ? sc->len : end + strlen(MC_CLOSE);
	if (!tc_known(sc, name))
		tc_unknown_error(sc, "minicpm5", name);
	else if (c == (size_t)-1)
		tc_call_error(sc, "minicpm5", name, "a <param name=\"KEY\">VALUE</param> is not "
			      "whole, or the call is not closed with </function>");
	else
		tc_push_call(sc, name, args, "minicpm5", NULL);
	tc_add_span(sc, lt, ret);
	json_decref(args);
	free(name);
	return ret;
}

void tc_scan_minicpm5(struct scan *sc)
{
	size_t p = 0, lt;

	while ((lt = tc_find_at(sc->text, p, sc->len, MC_OPEN)) != (size_t)-1)
		p = mc_call(sc, lt);
}
