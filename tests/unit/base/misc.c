/* strvec, err and jsonx: small modules tested together. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "base/strvec.h"

static void test_strvec_push_pop_find(void **state)
{
	struct strvec sv = STRVEC_INIT;
	const char *init[] = { "a", "b", NULL };

	(void)state;
	assert_non_null(sv.v);
	assert_null(sv.v[0]);
	strvec_pushv(&sv, init);
	strvec_pushf(&sv, "%s-%d", "c", 3);
	assert_int_equal(sv.nr, 3);
	assert_string_equal(sv.v[2], "c-3");
	assert_null(sv.v[3]);
	assert_int_equal(strvec_find(&sv, "b"), 1);
	assert_int_equal(strvec_find(&sv, "z"), -1);
	strvec_pop(&sv);
	assert_int_equal(sv.nr, 2);
	assert_null(sv.v[2]);
	strvec_clear(&sv);
	assert_int_equal(sv.nr, 0);
	assert_null(sv.v[0]);
}

static void test_err_set_prefix_errno(void **state)
{
	(void)state;
	err_clear();
	assert_string_equal(err_last(), "");
	assert_int_equal(err_set(FX_ENOTFOUND, "no file '%s'", "x"), FX_ENOTFOUND);
	assert_int_equal(err_prefix(FX_EINVAL, "loading %s", "cfg"), FX_EINVAL);
	assert_string_equal(err_last(), "loading cfg: no file 'x'");
	assert_int_equal(err_last_code(), FX_EINVAL);
	errno = ENOENT;
	err_set_errno(FX_EOS, "open");
	assert_string_equal(err_last(), "open: No such file or directory");
	assert_string_equal(err_name(FX_EOS), "EOS");
}

static void test_jsonx_parse_error_has_position(void **state)
{
	json_t *j = NULL;
	const char *bad = "{\"a\": 1,\n \"b\": }";

	(void)state;
	assert_int_equal(jsonx_parse(&j, bad, strlen(bad), "reply"), FX_EPARSE);
	assert_null(j);
	assert_non_null(strstr(err_last(), "reply: invalid JSON at line 2"));
	assert_int_equal(jsonx_parse(&j, "{\"a\":1,\"a\":2}", 13, "dup"), FX_EPARSE);
}

static void test_jsonx_accessors_and_strvec(void **state)
{
	const char *text = "{\"s\":\"v\",\"i\":42,\"b\":true,\"a\":[\"x\",\"y\"],\"bad\":[1]}";
	struct strvec sv = STRVEC_INIT;
	struct buf out = BUF_INIT;
	json_t *j = NULL, *arr;

	(void)state;
	assert_int_equal(jsonx_parse(&j, text, strlen(text), "t"), 0);
	assert_string_equal(jsonx_str(j, "s"), "v");
	assert_null(jsonx_str(j, "i"));
	assert_int_equal(jsonx_int(j, "i", -1), 42);
	assert_int_equal(jsonx_int(j, "s", -1), -1);
	assert_true(jsonx_bool(j, "b", 0));
	assert_int_equal(jsonx_to_strvec(&sv, json_object_get(j, "a")), 0);
	assert_int_equal(sv.nr, 2);
	assert_int_equal(jsonx_to_strvec(&sv, json_object_get(j, "bad")), FX_EINVAL);
	assert_int_equal(sv.nr, 2);
	arr = jsonx_from_strvec(&sv);
	jsonx_dump(&out, arr, JSON_COMPACT);
	assert_string_equal(out.buf, "[\"x\",\"y\"]");
	json_decref(arr);
	json_decref(j);
	strvec_clear(&sv);
	buf_release(&out);
}

static void test_jsonx_lossy_string(void **state)
{
	json_t *j = jsonx_stringn_lossy("ok\xff\xfe!", 5);

	(void)state;
	assert_string_equal(json_string_value(j), "ok\xef\xbf\xbd\xef\xbf\xbd!");
	json_decref(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strvec_push_pop_find),
		cmocka_unit_test(test_err_set_prefix_errno),
		cmocka_unit_test(test_jsonx_parse_error_has_position),
		cmocka_unit_test(test_jsonx_accessors_and_strvec),
		cmocka_unit_test(test_jsonx_lossy_string),
	};

	return cmocka_run_group_tests_name("base/misc", tests, NULL, NULL);
}
