/*
 * Dialects met on the second round through vLLM's parser list: the value
 * rule of GLM's <arg_value> (which Poolside's models share) and the
 * families with a tag language of their own. See textcalls_int.h for the
 * scan state and textcalls.h for what a call must be.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "llm/textcalls_int.h"

/* ---- GLM / Poolside <arg_value> ---- */

json_t *tc_glm_value(const char *s, size_t n)
{
	size_t a = 0, b = n;
	json_t *j;

	/*
	 * The template writes a string as it is and anything else as JSON, with
	 * nothing around either: a file's content keeps its indent and final
	 * newline, while " 420 " is still the number. HyperCLOVA X writes
	 * every value as JSON: one line that is a JSON string ("Seoul") is
	 * that string (tc_xml_json_string()).
	 */
	j = tc_xml_json_string(s, n);
	if (j)
		return j;
	while (a < b && isspace((unsigned char)s[a]))
		a++;
	while (b > a && isspace((unsigned char)s[b - 1]))
		b--;
	j = tc_xml_value(s + a, b - a);
	if (!json_is_string(j))
		return j;
	json_decref(j);
	return jsonx_stringn_lossy(s, n);
}


/* ---- Hunyuan: Hy3 and Hy4 ---- */

/*
 * Hy3: <tool_calls>\n<tool_call>NAME<tool_sep>\n<arg_key>K</arg_key>\n
 * <arg_value>V</arg_value>\n</tool_call>\n</tool_calls>. Hy4 drops
 * <tool_sep> and its checkpoints put a suffix on every tag
 * (<tool_call:opensource>). Without <tool_sep> or a suffix the call is
 * GLM's, which the hermes pass reads; the family is claimed here only when
 * its own marks are there (a suffix, <tool_sep>, or <tool_call> directly
 * inside <tool_calls>, which Hunyuan-A13B fills with JSON instead).
 */

#define HY_SUFFIX_MAX 32

/* The suffix of the first suffixed <tool_call...> tag into `suf`; 0 when none. */
static int hy_suffix(const struct scan *sc, char *suf)
{
	size_t p = 0, o;

	while ((o = tc_find_at(sc->text, p, sc->len, "<tool_call")) != (size_t)-1) {
		size_t q = o + 10, s;

		if (q < sc->len && sc->text[q] == 's')
			q++;
		s = q;
		while (q < sc->len && q - s <= HY_SUFFIX_MAX && sc->text[q] != '>' &&
		       sc->text[q] != '<' && !isspace((unsigned char)sc->text[q]))
			q++;
		if (q > s + 1 && q - s <= HY_SUFFIX_MAX && q < sc->len && sc->text[q] == '>' &&
		    sc->text[s] == ':') {
			memcpy(suf, sc->text + s, q - s);
			suf[q - s] = '\0';
			return 1;
		}
		p = o + 1;
	}
	return 0;
}

/* Is there a <tool_calls> whose first content is a <tool_call>? */
static int hy_wrapped(const struct scan *sc)
{
	size_t p = 0, o;

	while ((o = tc_find_at(sc->text, p, sc->len, "<tool_calls>")) != (size_t)-1) {
		size_t q = tc_skip_ws(sc, o + 12, sc->len);

		if (tc_starts(sc, q, sc->len, "<tool_call>"))
			return 1;
		p = o + 1;
	}
	return 0;
}

struct hy_tags {
	char call[48], call_end[48], calls[48], calls_end[48];
	char key[48], key_end[48], val[48], val_end[48];
};

/* One call whose body starts at `p` and ends at `end`; `closed` when </tool_call> ends it. */
static void hy_take(struct scan *sc, const struct hy_tags *tg, size_t p, size_t end, int closed,
		    const char *dialect)
{
	size_t n0, n1;
	char *name;
	json_t *args;

	p = tc_skip_ws(sc, p, end);
	for (n0 = p; p < end && tc_name_char((unsigned char)sc->text[p]); p++)
		;
	n1 = p;
	p = tc_skip_ws(sc, p, end);
	if (tc_starts(sc, p, end, "<tool_sep>"))
		p = tc_skip_ws(sc, p + 10, end);
	name = xstrndup(sc->text + n0, n1 - n0);
	if (!closed && !tc_known(sc, name)) {
		/* an open tag before no tool's name: prose that shows the form */
		free(name);
		return;
	}
	if (n1 == n0) {
		tc_call_error(sc, dialect, NULL, "the <tool_call> has no tool name");
		free(name);
		return;
	}
	if (!tc_known(sc, name)) {
		tc_unknown_error(sc, dialect, name);
		free(name);
		return;
	}
	args = json_object();
	while (p < end) {
		size_t k0, kc, v0, vc;

		if (!tc_starts(sc, p, end, tg->key)) {
			tc_call_error(sc, dialect, name, "expected %s where the text has something "
				      "else", tg->key);
			goto out;
		}
		k0 = p + strlen(tg->key);
		kc = tc_find_at(sc->text, k0, end, tg->key_end);
		if (kc == (size_t)-1 || tc_find_at(sc->text, k0, kc, "<") != (size_t)-1) {
			tc_call_error(sc, dialect, name, "an %s is not closed with %s", tg->key,
				      tg->key_end);
			goto out;
		}
		p = tc_skip_ws(sc, kc + strlen(tg->key_end), end);
		if (!tc_starts(sc, p, end, tg->val)) {
			tc_call_error(sc, dialect, name, "the key \"%.*s\" is not followed by %s",
				      (int)(kc - k0), sc->text + k0, tg->val);
			goto out;
		}
		v0 = p + strlen(tg->val);
		vc = tc_find_at(sc->text, v0, end, tg->val_end);
		if (vc == (size_t)-1) {
			tc_call_error(sc, dialect, name, "the value of \"%.*s\" is not closed with %s",
				      (int)(kc - k0), sc->text + k0, tg->val_end);
			goto out;
		}
		tc_set_key(args, sc->text + k0, kc - k0, tc_glm_value(sc->text + v0, vc - v0));
		p = tc_skip_ws(sc, vc + strlen(tg->val_end), end);
	}
	/* a reply cut by the stop token after a whole value is read; a block closed around it is not */
	if (!closed && end < sc->len)
		tc_call_error(sc, dialect, name, "the %s is not closed with %s", tg->call,
			      tg->call_end);
	else
		tc_push_call(sc, name, args, dialect, NULL);
out:
	json_decref(args);
	free(name);
}

void tc_scan_hy(struct scan *sc)
{
	char suf[HY_SUFFIX_MAX + 1] = "";
	const char *dialect, *stops[3];
	struct hy_tags tg;
	size_t p = 0, o, k, at[3];
	int seen[3] = { 0 };

	if (!hy_suffix(sc, suf) && !tc_find(sc, 0, sc->len, "<tool_sep>") && !hy_wrapped(sc))
		return;
	dialect = *suf || !tc_find(sc, 0, sc->len, "<tool_sep>") ? "hy-v4" : "hy-v3";
	snprintf(tg.call, sizeof(tg.call), "<tool_call%s>", suf);
	snprintf(tg.call_end, sizeof(tg.call_end), "</tool_call%s>", suf);
	snprintf(tg.calls, sizeof(tg.calls), "<tool_calls%s>", suf);
	snprintf(tg.calls_end, sizeof(tg.calls_end), "</tool_calls%s>", suf);
	snprintf(tg.key, sizeof(tg.key), "<arg_key%s>", suf);
	snprintf(tg.key_end, sizeof(tg.key_end), "</arg_key%s>", suf);
	snprintf(tg.val, sizeof(tg.val), "<arg_value%s>", suf);
	snprintf(tg.val_end, sizeof(tg.val_end), "</arg_value%s>", suf);
	stops[0] = tg.call_end;
	stops[1] = tg.call;
	stops[2] = tg.calls_end;
	while ((o = tc_find_at(sc->text, p, sc->len, tg.call)) != (size_t)-1) {
		size_t body = o + strlen(tg.call), end = sc->len, c, b;

		/* each stop is looked for again only once the scan has passed it: no rescans */
		for (k = 0; k < ARRAY_SIZE(stops); k++) {
			if (!seen[k] || (at[k] != sc->len && at[k] < body)) {
				c = tc_find_at(sc->text, body, sc->len, stops[k]);
				at[k] = c == (size_t)-1 ? sc->len : c;
				seen[k] = 1;
			}
			if (at[k] < end)
				end = at[k];
		}
		c = at[0];
		hy_take(sc, &tg, body, end, c == end, dialect);
		b = c == end ? end + strlen(tg.call_end) : end;
		tc_add_span(sc, o, b);
		p = b;
	}
	/* the wrapper is markup, not prose for the user */
	for (k = 0; k < 2; k++) {
		const char *w = k ? tg.calls_end : tg.calls;

		for (p = 0; (o = tc_find_at(sc->text, p, sc->len, w)) != (size_t)-1; p = o + strlen(w))
			tc_add_span(sc, o, o + strlen(w));
	}
}

/* ---- MiniMax M3 ---- */

/*
 * Every tag carries MiniMax's namespace mark in front, so only a mark
 * followed by a tag is markup and a value may hold any other text:
 * NS<tool_call>\nNS<invoke name="NAME">NS<KEY>VALUENS</KEY>...NS</invoke>\n
 * NS</tool_call>. A parameter holding tags is an object; one holding only
 * <item> tags is a list; a key given twice collects its values in a list.
 */

#define M3_NS "]<]minimax[>["
#define M3_NS_LEN 13
#define M3_DEPTH 32
#define M3_TAG_MAX 512

struct m3tag {
	size_t at, end;		/* the mark and its tag: [at, end) */
	size_t name, name_len;	/* the tag's name */
	size_t attrs, attrs_end;
	int closing;
};

/* The mark and tag at `p` (within `end`); 0 when `p` holds none. */
static int m3_tag(const struct scan *sc, size_t p, size_t end, struct m3tag *tg)
{
	size_t q = p + M3_NS_LEN, gt;

	if (!tc_starts(sc, p, end, M3_NS))
		return 0;
	while (q < end && strchr(" \t\r\n", sc->text[q]))
		q++;
	if (q >= end || sc->text[q] != '<')
		return 0;
	q++;
	tg->closing = q < end && sc->text[q] == '/';
	q += tg->closing;
	tg->name = q;
	while (q < end && tc_name_char((unsigned char)sc->text[q]))
		q++;
	tg->name_len = q - tg->name;
	/* a tag is short: its name and, for <invoke>, name="TOOL" */
	gt = tc_find_at(sc->text, q, end - q > M3_TAG_MAX ? q + M3_TAG_MAX : end, ">");
	if (!tg->name_len || gt == (size_t)-1 || tc_find_at(sc->text, q, gt, "<") != (size_t)-1)
		return 0;
	tg->at = p;
	tg->attrs = q;
	tg->attrs_end = gt;
	tg->end = gt + 1;
	return 1;
}

static int m3_is(const struct scan *sc, const struct m3tag *tg, const char *name)
{
	return tg->name_len == strlen(name) && !memcmp(sc->text + tg->name, name, tg->name_len);
}

/* Add `v` under the key at [k, k + kn) of `obj`; a second value makes a list of both. */
static void m3_add(const struct scan *sc, json_t *obj, json_t *dups, size_t k, size_t kn,
		   json_t *v)
{
	json_t *key = jsonx_stringn_lossy(sc->text + k, kn);
	const char *ks = json_string_value(key);
	json_t *old = json_object_get(obj, ks);

	if (!old) {
		jsonx_set(obj, ks, v);
	} else if (json_object_get(dups, ks)) {
		json_array_append_new(old, v);
	} else {
		json_t *list = json_array();

		json_array_append(list, old);
		json_array_append_new(list, v);
		jsonx_set(obj, ks, list);
		jsonx_set(dups, ks, json_true());
	}
	json_decref(key);
}

/*
 * The content of the element `tag` from `*pp` up to its closing tag, which
 * it consumes. NULL (with the reason in `why`) when it is not closed, is
 * closed by another tag, or mixes text with tags.
 */
static json_t *m3_content(const struct scan *sc, size_t *pp, size_t end, const struct m3tag *open,
			  int depth, struct buf *why)
{
	size_t p = *pp, text0 = p;
	json_t *obj = NULL, *list = NULL, *dups = json_object(), *v;
	struct m3tag tg;

	if (depth > M3_DEPTH) {
		buf_addf(why, "the arguments nest deeper than %d levels", M3_DEPTH);
		goto fail;
	}
	for (;;) {
		size_t ns = tc_find_at(sc->text, p, end, M3_NS);

		if (ns == (size_t)-1) {
			buf_addf(why, "<%.*s> is not closed", (int)open->name_len, sc->text + open->name);
			goto fail;
		}
		if (!m3_tag(sc, ns, end, &tg)) {
			p = ns + M3_NS_LEN;
			continue;
		}
		if ((obj || list) && tc_skip_ws(sc, text0, ns) < ns) {
			buf_addf(why, "text stands between the tags inside <%.*s>",
				 (int)open->name_len, sc->text + open->name);
			goto fail;
		}
		if (tg.closing) {
			if (tg.name_len != open->name_len ||
			    memcmp(sc->text + tg.name, sc->text + open->name, tg.name_len)) {
				buf_addf(why, "</%.*s> closes <%.*s>", (int)tg.name_len,
					 sc->text + tg.name, (int)open->name_len, sc->text + open->name);
				goto fail;
			}
			*pp = tg.end;
			json_decref(dups);
			if (list)
				return list;
			if (obj)
				return obj;
			return tc_glm_value(sc->text + text0, ns - text0);
		}
		if (!obj && !list && tc_skip_ws(sc, text0, ns) < ns) {
			buf_addf(why, "text stands before <%.*s> inside <%.*s>", (int)tg.name_len,
				 sc->text + tg.name, (int)open->name_len, sc->text + open->name);
			goto fail;
		}
		p = tg.end;
		if (!(v = m3_content(sc, &p, end, &tg, depth + 1, why)))
			goto fail;
		if (m3_is(sc, &tg, "item") && !obj) {
			if (!list)
				list = json_array();
			json_array_append_new(list, v);
		} else {
			if (list) {	/* <item>s then a named key: the items were keys after all */
				obj = json_object();
				jsonx_set(obj, "item", list);
				jsonx_set(dups, "item", json_true());
				list = NULL;
			}
			if (!obj)
				obj = json_object();
			m3_add(sc, obj, dups, tg.name, tg.name_len, v);
		}
		text0 = p;
	}
fail:
	json_decref(obj);
	json_decref(list);
	json_decref(dups);
	return NULL;
}

/* Is `v` the text of an element that holds only blanks? */
static int m3_blank(const json_t *v)
{
	const char *s = json_is_string(v) ? json_string_value(v) : NULL;

	while (s && *s && isspace((unsigned char)*s))
		s++;
	return s && !*s;
}

/* One NS<invoke name="NAME"> at `tg`; returns where it ends, 0 after an error. */
static size_t m3_invoke(struct scan *sc, const struct m3tag *tg, size_t end)
{
	size_t a, p = tg->end, q;
	struct buf why = BUF_INIT;
	char *name;
	json_t *args;

	a = tc_find_at(sc->text, tg->attrs, tg->attrs_end, "name=\"");
	q = a == (size_t)-1 ? (size_t)-1 : tc_find_at(sc->text, a + 6, tg->attrs_end, "\"");
	if (q == (size_t)-1) {
		tc_call_error(sc, "minimax-m3", NULL, "<invoke> has no name=\"...\"");
		return 0;
	}
	name = xstrndup(sc->text + a + 6, q - a - 6);
	args = m3_content(sc, &p, end, tg, 0, &why);
	if (args && m3_blank(args)) {	/* a call without arguments */
		json_decref(args);
		args = json_object();
	}
	if (!args) {
		tc_call_error(sc, "minimax-m3", name, "%s", why.buf);
		p = 0;
	} else if (!json_is_object(args)) {
		tc_call_error(sc, "minimax-m3", name, "<invoke> holds %s, not parameters",
			      json_is_array(args) ? "<item> tags" : "text");
		p = 0;
	} else if (!tc_known(sc, name)) {
		tc_unknown_error(sc, "minimax-m3", name);
	} else {
		tc_push_call(sc, name, args, "minimax-m3", NULL);
	}
	json_decref(args);
	buf_release(&why);
	free(name);
	return p;
}

void tc_scan_minimax3(struct scan *sc)
{
	size_t p = 0, o;
	struct m3tag tg;

	while ((o = tc_find_at(sc->text, p, sc->len, M3_NS)) != (size_t)-1) {
		size_t q, b = sc->len, invokes = 0;

		if (!m3_tag(sc, o, sc->len, &tg) || tg.closing || !m3_is(sc, &tg, "tool_call")) {
			p = o + M3_NS_LEN;
			continue;
		}
		for (q = tg.end;;) {
			size_t ns = tc_find_at(sc->text, q, sc->len, M3_NS);
			struct m3tag in;

			if (ns == (size_t)-1 && tc_skip_ws(sc, q, sc->len) == sc->len) {
				/* cut by the stop token after a whole <invoke> */
				if (!invokes)
					tc_call_error(sc, "minimax-m3", NULL, "the <tool_call> block "
						      "holds no <invoke>");
				break;
			}
			if (ns == (size_t)-1 || tc_skip_ws(sc, q, ns) < ns ||
			    !m3_tag(sc, ns, sc->len, &in)) {
				tc_call_error(sc, "minimax-m3", NULL, "text stands inside <tool_call> "
					      "outside any <invoke>");
				break;
			}
			if (in.closing && m3_is(sc, &in, "tool_call")) {
				if (!invokes)
					tc_call_error(sc, "minimax-m3", NULL, "the <tool_call> block "
						      "holds no <invoke>");
				b = in.end;
				break;
			}
			if (in.closing || !m3_is(sc, &in, "invoke")) {
				tc_call_error(sc, "minimax-m3", NULL, "<tool_call> holds <%s%.*s> where "
					      "an <invoke> belongs", in.closing ? "/" : "",
					      (int)in.name_len, sc->text + in.name);
				break;
			}
			invokes++;
			if (!(q = m3_invoke(sc, &in, sc->len)))
				break;
		}
		tc_add_span(sc, o, b);
		p = b;
	}
}
