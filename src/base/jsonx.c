#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/utf8.h"

int jsonx_parse(json_t **out, const char *data, size_t len, const char *what)
{
	json_error_t e;
	json_t *j = json_loadb(data, len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL | JSON_DECODE_ANY, &e);

	if (!j)
		return err_set(FX_EPARSE, "%s: invalid JSON at line %d, column %d: %s",
			       what, e.line, e.column, e.text);
	*out = j;
	return 0;
}

int jsonx_load_file(json_t **out, const char *path, size_t max)
{
	struct buf b = BUF_INIT;
	int ret = fsutil_read_file(&b, path, max);

	if (!ret)
		ret = jsonx_parse(out, b.buf, b.len, path);
	buf_release(&b);
	return ret;
}

static int dump_cb(const char *data, size_t size, void *data_)
{
	buf_add(data_, data, size);
	return 0;
}

void jsonx_dump(struct buf *out, const json_t *j, size_t flags)
{
	if (json_dump_callback(j, dump_cb, out, flags | JSON_ENCODE_ANY) < 0)
		die("cannot encode JSON");
}

int jsonx_write_line(int fd, const json_t *j)
{
	struct buf b = BUF_INIT;
	int ret;

	jsonx_dump(&b, j, JSON_COMPACT);
	buf_addch(&b, '\n');
	ret = fsutil_write_all(fd, b.buf, b.len);
	buf_release(&b);
	return ret;
}

const char *jsonx_str(const json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

json_int_t jsonx_int(const json_t *obj, const char *key, json_int_t def)
{
	json_t *v = json_object_get(obj, key);

	return json_is_integer(v) ? json_integer_value(v) : def;
}

int jsonx_bool(const json_t *obj, const char *key, int def)
{
	json_t *v = json_object_get(obj, key);

	return json_is_boolean(v) ? json_is_true(v) : def;
}

json_t *jsonx_from_strvec(const struct strvec *sv)
{
	json_t *a = json_array();
	size_t i;

	if (!a)
		die("out of memory");
	for (i = 0; i < sv->nr; i++)
		if (json_array_append_new(a, jsonx_string(sv->v[i])) < 0)
			die("out of memory");
	return a;
}

int jsonx_to_strvec(struct strvec *out, const json_t *arr)
{
	size_t i;
	json_t *v;

	if (!json_is_array(arr))
		return err_set(FX_EINVAL, "expected an array of strings");
	json_array_foreach(arr, i, v)
		if (!json_is_string(v))
			return err_set(FX_EINVAL, "expected an array of strings, element %zu is not a string", i);
	json_array_foreach(arr, i, v)
		strvec_push(out, json_string_value(v));
	return 0;
}

json_t *jsonx_string(const char *s)
{
	json_t *j = json_string(s);

	if (!j)
		j = jsonx_stringn_lossy(s, strlen(s));
	return j;
}

json_t *jsonx_stringn_lossy(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	struct buf b = BUF_INIT;
	json_t *j;
	size_t i = 0;

	j = json_stringn(s, len);
	if (j)
		return j;
	while (i < len) {
		uint32_t cp;
		size_t n = utf8_decode(s + i, len - i, &cp);

		if (n) {
			buf_add(&b, p + i, n);
			i += n;
		} else {
			buf_addstr(&b, "\xef\xbf\xbd");
			i++;
		}
	}
	j = json_stringn(b.buf, b.len);
	buf_release(&b);
	if (!j)
		die("out of memory");
	return j;
}

void jsonx_set(json_t *obj, const char *key, json_t *value)
{
	if (json_object_set_new(obj, key, value) < 0)
		die("cannot set JSON member '%s'", key);
}
