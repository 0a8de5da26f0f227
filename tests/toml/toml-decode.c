/*
 * The toml-test decoder for our parser: TOML on standard input; on success
 * the document as tagged JSON on standard output and exit 0; on error the
 * message (naming the line and column) on standard error and exit 1.
 *
 *   ../shared/tools/toml-test-run -- build/toml-decode
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/jsonx.h"
#include "config/toml.h"

static json_t *tagged(const char *type, const char *value, size_t len)
{
	json_t *o = json_object();
	json_t *s = json_stringn(value, len);

	if (!o)
		die("out of memory");
	if (!s)
		s = jsonx_stringn_lossy(value, len);
	jsonx_set(o, "type", jsonx_string(type));
	jsonx_set(o, "value", s);
	return o;
}

/* The shortest "%.Ng" that reads back as the same double. */
static void format_double(char *out, size_t n, double d)
{
	int prec;

	if (isnan(d)) {
		snprintf(out, n, "nan");
		return;
	}
	if (isinf(d)) {
		snprintf(out, n, "%s", d < 0 ? "-inf" : "inf");
		return;
	}
	for (prec = 15; prec < 17; prec++) {
		snprintf(out, n, "%.*g", prec, d);
		if (strtod(out, NULL) == d)
			return;
	}
	snprintf(out, n, "%.17g", d);
}

static const char *datetime_tag(enum toml_type t)
{
	switch (t) {
	case TOML_DATETIME: return "datetime";
	case TOML_DATETIME_LOCAL: return "datetime-local";
	case TOML_DATE_LOCAL: return "date-local";
	default: return "time-local";
	}
}

static json_t *to_json(const struct toml_value *v)
{
	char num[64];
	json_t *j;
	size_t i;

	switch (v->type) {
	case TOML_STRING:
		return tagged("string", v->u.str.ptr, v->u.str.len);
	case TOML_INTEGER:
		snprintf(num, sizeof(num), "%" PRId64, v->u.i);
		return tagged("integer", num, strlen(num));
	case TOML_FLOAT:
		format_double(num, sizeof(num), v->u.f);
		return tagged("float", num, strlen(num));
	case TOML_BOOL:
		return tagged("bool", v->u.b ? "true" : "false", v->u.b ? 4 : 5);
	case TOML_DATETIME:
	case TOML_DATETIME_LOCAL:
	case TOML_DATE_LOCAL:
	case TOML_TIME_LOCAL:
		return tagged(datetime_tag(v->type), v->u.str.ptr, v->u.str.len);
	case TOML_ARRAY:
		if (!(j = json_array()))
			die("out of memory");
		for (i = 0; i < v->u.arr.nr; i++)
			if (json_array_append_new(j, to_json(v->u.arr.items[i])))
				die("out of memory");
		return j;
	case TOML_TABLE:
		if (!(j = json_object()))
			die("out of memory");
		for (i = 0; i < v->u.tab.nr; i++) {
			const struct toml_kv *kv = &v->u.tab.items[i];

			if (json_object_setn_new(j, kv->key, kv->keylen, to_json(kv->value)))
				die("cannot add key '%s'", kv->key);
		}
		return j;
	}
	BUG("unknown TOML type %d", (int)v->type);
}

int main(void)
{
	struct buf in = BUF_INIT, out = BUF_INIT;
	struct toml_value *doc = NULL;
	json_t *j;
	char chunk[65536];
	size_t n;

	while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0)
		buf_add(&in, chunk, n);
	if (ferror(stdin)) {
		fprintf(stderr, "toml-decode: cannot read standard input\n");
		return 2;
	}
	if (toml_parse(&doc, in.buf, in.len, "<stdin>") < 0) {
		fprintf(stderr, "%s\n", err_last());
		buf_release(&in);
		return 1;
	}
	j = to_json(doc);
	jsonx_dump(&out, j, JSON_COMPACT);
	buf_addch(&out, '\n');
	fwrite(out.buf, 1, out.len, stdout);
	json_decref(j);
	toml_free(doc);
	buf_release(&in);
	buf_release(&out);
	return fflush(stdout) ? 2 : 0;
}
