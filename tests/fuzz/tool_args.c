/*
 * libFuzzer target for what a model controls in a tool call: the name,
 * the argument text, and the strings edit_file matches.
 *
 * The first byte picks a mode:
 *   - argument validation: the rest is "NAME\nJSON" dispatched to a
 *     registry holding the built-in tools' schemas with a handler that
 *     checks, independently of the validator, that it only ever receives
 *     arguments the schema allows (known properties, required ones present,
 *     the declared types, minimums) — every refusal must say "refused:";
 *   - confinement: the rest is a path given to read_file and list_dir in a
 *     small workspace; nothing outside it may ever be shown;
 *   - edit matching: the rest is "TEXT\0OLD\0NEW" for match_apply_at()
 *     (the first byte's upper six bits the start_line hint), whose
 *     result must agree with a plain replacement whenever OLD occurs
 *     exactly once (or with replace_all), and must leave nothing behind
 *     when it fails.
 *
 *   make fuzz && build/fuzz/tool_args -max_len=4096 CORPUS_DIR
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "sandbox/permissions.h"
#include "tools/match.h"
#include "tools/registry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct tool_registry builtin, checked;
static struct tool_ctx ctx, real_ctx;
static char ws_template[] = "/tmp/forgex-fuzz-XXXXXX";
static char *ws;

static int check_type(const json_t *schema, const json_t *v)
{
	const char *t = jsonx_str(schema, "type");

	if (!t)
		return 1;
	if (!strcmp(t, "string"))
		return json_is_string(v) && strlen(json_string_value(v)) == json_string_length(v);
	if (!strcmp(t, "integer"))
		return json_is_integer(v) ||
		       (json_is_real(v) && json_real_value(v) == (double)(long long)json_real_value(v));
	if (!strcmp(t, "boolean"))
		return json_is_boolean(v);
	if (!strcmp(t, "object"))
		return json_is_object(v);
	return 1;
}

/* The handler of every checked tool: what it gets must match the schema. */
static int handler(struct tool_ctx *c, const json_t *args, struct buf *result)
{
	const json_t *schema = c->current->schema;
	json_t *props = json_object_get(schema, "properties"), *req = json_object_get(schema, "required");
	const char *key;
	json_t *v;
	size_t i;

	if (!json_is_object(args))
		abort();
	json_object_foreach((json_t *)args, key, v) {
		json_t *ps = json_object_get(props, key), *min;

		if (!ps || !check_type(ps, v))
			abort();
		min = json_object_get(ps, "minimum");
		if (min && json_is_number(v) && json_number_value(v) < json_number_value(min))
			abort();
	}
	json_array_foreach(req, i, v)
		if (!json_object_get(args, json_string_value(v)))
			abort();
	buf_addstr(result, "checked");
	return 0;
}

static void cleanup(void)
{
	if (ws)
		fsutil_remove_tree(ws);
}

static void setup(void)
{
	size_t i;

	registry_init(&builtin);
	registry_init(&checked);
	if (tools_register_builtin(&builtin) < 0)
		abort();
	for (i = 0; i < builtin.nr; i++) {
		struct buf schema = BUF_INIT;
		struct tool_def def;

		jsonx_dump(&schema, builtin.tools[i].schema, JSON_COMPACT);
		memset(&def, 0, sizeof(def));
		def.name = builtin.tools[i].name;
		def.description = builtin.tools[i].description;
		def.parameters = schema.buf;
		def.needs = builtin.tools[i].needs;
		def.fn = handler;
		if (registry_add(&checked, &def) < 0)
			abort();
		buf_release(&schema);
	}
	ws = mkdtemp(ws_template);
	if (!ws)
		abort();
	atexit(cleanup);
	{
		struct buf p = BUF_INIT;

		buf_addf(&p, "%s/a.txt", ws);
		fsutil_write_atomic(p.buf, "inside\n", 7, 0644);
		buf_reset(&p);
		buf_addf(&p, "%s/out", ws);
		if (symlink("/etc", p.buf) < 0)
			abort();
		buf_release(&p);
	}
	if (tool_ctx_init(&ctx, &checked, ws) < 0 || tool_ctx_init(&real_ctx, &builtin, ws) < 0)
		abort();
}

static void fuzz_args(const char *s, size_t n)
{
	const char *nl = memchr(s, '\n', n);
	char *name, *args;
	struct buf out = BUF_INIT;
	int st;

	if (!nl)
		return;
	name = xstrndup(s, (size_t)(nl - s));
	args = xstrndup(nl + 1, n - (size_t)(nl - s) - 1);
	st = tool_dispatch(&ctx, PERM_ALL, name, args, &out);
	if (st == TOOL_REFUSED ? strncmp(out.buf, "refused: ", 9) : st != TOOL_OK ||
	    strcmp(out.buf, "checked"))
		abort();
	free(name);
	free(args);
	buf_release(&out);
}

static void fuzz_path(const char *s, size_t n)
{
	json_t *args = json_object();
	struct buf text = BUF_INIT, out = BUF_INIT;

	jsonx_set(args, "path", jsonx_stringn_lossy(s, n));
	jsonx_dump(&text, args, JSON_COMPACT);
	tool_dispatch(&real_ctx, permissions_for_role("architect"), "read_file", text.buf, &out);
	/* /etc/passwd and the like must never show (messages may echo the path itself). */
	if (strstr(out.buf, "root:x:0:0") && !memmem(s, n, "root:x:0:0", 10))
		abort();
	buf_reset(&out);
	tool_dispatch(&real_ctx, permissions_for_role("architect"), "list_dir", text.buf, &out);
	if (strstr(out.buf, "passwd\n") && !memmem(s, n, "passwd", 6))
		abort();
	json_decref(args);
	buf_release(&text);
	buf_release(&out);
}

static size_t count_occurrences(const char *t, size_t n, const char *o, size_t m)
{
	size_t c = 0, pos = 0;
	const char *p;

	while (pos + m <= n && (p = memmem(t + pos, n - pos, o, m))) {
		c++;
		pos = (size_t)(p - t) + m;
	}
	return c;
}

static void fuzz_edit(const char *s, size_t n, int all, size_t start_line)
{
	const char *z1 = memchr(s, '\0', n), *z2;
	const char *text, *old, *new_text;
	size_t tl, ol, nl, occ;
	struct match_result r = MATCH_RESULT_INIT;
	struct buf why = BUF_INIT;
	int ret;

	if (!z1)
		return;
	z2 = memchr(z1 + 1, '\0', n - (size_t)(z1 + 1 - s));
	if (!z2)
		return;
	text = s;
	tl = (size_t)(z1 - s);
	old = z1 + 1;
	ol = (size_t)(z2 - old);
	new_text = z2 + 1;
	nl = n - (size_t)(new_text - s);
	if (!ol)
		return;
	occ = count_occurrences(text, tl, old, ol);
	ret = match_apply_at(&r, text, tl, old, ol, new_text, nl, all, start_line, "f", &why);
	if (ret < 0) {
		if (r.text.len || !why.len || r.count)
			abort();
	} else {
		if (!r.count || why.len)
			abort();
		/* The final-newline state of the text is kept. */
		if (tl && r.text.len && (text[tl - 1] == '\n') != (r.text.buf[r.text.len - 1] == '\n'))
			abort();
		if (occ && r.pass != MATCH_EXACT)
			abort();	/* an exact occurrence is always found first */
	}
	if (occ == 1 || (all && occ)) {
		int plain = !memchr(text, '\r', tl) && !memchr(old, '\r', ol) && !memchr(new_text, '\r', nl);
		struct buf want = BUF_INIT;
		size_t pos = 0;

		/* Exact, without CR anywhere: plain replacement, then the final-newline rule. */
		while (plain && pos <= tl) {
			const char *p = pos + ol <= tl ? memmem(text + pos, tl - pos, old, ol) : NULL;

			if (!p) {
				buf_add(&want, text + pos, tl - pos);
				break;
			}
			buf_add(&want, text + pos, (size_t)(p - text) - pos);
			buf_add(&want, new_text, nl);
			pos = (size_t)(p - text) + ol;
		}
		if (plain && tl && want.len) {
			if (text[tl - 1] == '\n' && want.buf[want.len - 1] != '\n')
				buf_addch(&want, '\n');
			while (text[tl - 1] != '\n' && want.len && want.buf[want.len - 1] == '\n')
				buf_setlen(&want, want.len - 1);
		}
		if (plain) {
			int same = want.len == tl && !memcmp(want.buf, text, tl);

			if (same ? ret >= 0 : (ret < 0 || r.count != occ || r.text.len != want.len ||
					       memcmp(r.text.buf, want.buf, want.len)))
				abort();
		}
		buf_release(&want);
	}
	match_result_release(&r);
	buf_release(&why);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	const char *s = (const char *)data + 1;

	if (!ready) {
		setup();
		ready = 1;
	}
	if (!size)
		return 0;
	switch (data[0] % 4) {
	case 0:
		fuzz_args(s, size - 1);
		break;
	case 1:
		fuzz_path(s, size - 1);
		break;
	default:
		fuzz_edit(s, size - 1, data[0] % 4 == 3, data[0] >> 2);
		break;
	}
	err_clear();
	return 0;
}
