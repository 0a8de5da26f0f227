#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"

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

/* Length of the valid UTF-8 sequence at `s` (at most `n` bytes), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t len, i;
	unsigned int cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf) {
		len = 2;
		cp = s[0] & 0x1f;
	} else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		len = 3;
		cp = s[0] & 0x0f;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		len = 4;
		cp = s[0] & 0x07;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
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
		size_t n = utf8_seq(p + i, len - i);

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
