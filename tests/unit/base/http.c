#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "base/err.h"
#include "base/http.h"

static void test_http_url_is_local(void **state)
{
	(void)state;
	assert_true(http_url_is_local("http://127.0.0.1:11434/v1"));
	assert_true(http_url_is_local("http://localhost:8080/v1"));
	assert_true(http_url_is_local("http://LOCALHOST/v1"));
	assert_true(http_url_is_local("http://[::1]:8000/v1"));
	assert_true(http_url_is_local("http://127.1.2.3/v1"));
	assert_true(http_url_is_local("http://user:pw@127.0.0.1/v1"));
	assert_false(http_url_is_local("https://api.openai.com/v1"));
	assert_false(http_url_is_local("https://api.groq.com/openai/v1"));
	assert_false(http_url_is_local("http://localhost.evil.com/v1"));
	assert_false(http_url_is_local("http://127.0.0.1.nip.io/v1"));
	assert_false(http_url_is_local("http://[::2]/v1"));
	assert_false(http_url_is_local("http://10.0.0.1/v1"));
}

static void test_http_easy_new(void **state)
{
	char errbuf[CURL_ERROR_SIZE] = "stale";
	CURL *h = NULL;
	char *url = NULL;

	(void)state;
	assert_int_equal(http_global_init(), 0);
	assert_int_equal(http_global_init(), 0);	/* once, then the same answer */
	assert_int_equal(http_easy_new(&h, "http://127.0.0.1:9/x", errbuf), 0);
	assert_non_null(h);
	assert_string_equal(errbuf, "");
	assert_int_equal(curl_easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &url), CURLE_OK);
	assert_string_equal(url, "http://127.0.0.1:9/x");
	/* only http and https: a file:// URL is refused before anything is read */
	curl_easy_setopt(h, CURLOPT_URL, "file:///etc/passwd");
	assert_int_equal(curl_easy_perform(h), CURLE_UNSUPPORTED_PROTOCOL);
	assert_string_not_equal(http_strerror(CURLE_UNSUPPORTED_PROTOCOL, errbuf), "");
	curl_easy_cleanup(h);
	assert_string_equal(http_strerror(CURLE_OK, NULL), curl_easy_strerror(CURLE_OK));
	assert_string_equal(http_strerror(CURLE_COULDNT_CONNECT, "mine"), "mine");
}

static void test_http_headers(void **state)
{
	struct curl_slist *h = NULL;

	(void)state;
	http_header_add(&h, "Accept: application/json");
	http_header_bearer(&h, "tok");
	assert_string_equal(h->data, "Accept: application/json");
	assert_string_equal(h->next->data, "Authorization: Bearer tok");
	assert_null(h->next->next);
	curl_slist_free_all(h);
}

static void test_http_collect_capped(void **state)
{
	struct buf b = BUF_INIT_CAP(8);
	char data[6] = "abcdef";

	(void)state;
	assert_int_equal(http_collect(data, 1, 6, &b), 6);
	/* over the cap: curl is told to stop (a short count) */
	assert_int_equal(http_collect(data, 1, 6, &b), 0);
	assert_true(b.len <= 8);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_http_url_is_local),
		cmocka_unit_test(test_http_easy_new),
		cmocka_unit_test(test_http_headers),
		cmocka_unit_test(test_http_collect_capped),
	};

	return cmocka_run_group_tests_name("base/http", tests, NULL, NULL);
}
