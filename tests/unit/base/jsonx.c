#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"

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
		cmocka_unit_test(test_jsonx_parse_error_has_position),
		cmocka_unit_test(test_jsonx_accessors_and_strvec),
		cmocka_unit_test(test_jsonx_lossy_string),
	};

	return cmocka_run_group_tests_name("base/jsonx", tests, NULL, NULL);
}
