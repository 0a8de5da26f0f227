#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/sha256.h"

/* FIPS 180-4 examples (NIST CSRC) and the long-message vector. */
static void test_sha256_vectors(void **state)
{
	char hex[SHA256_HEX_LEN + 1];
	char *million;

	(void)state;
	sha256_hex(hex, "", 0);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	sha256_hex(hex, "abc", 3);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	sha256_hex(hex, "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56);
	assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	million = malloc(1000000);
	memset(million, 'a', 1000000);
	sha256_hex(hex, million, 1000000);
	assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(million);
}

/* Feeding in pieces of every size gives the same hash as one call. */
static void test_sha256_pieces(void **state)
{
	unsigned char d1[SHA256_LEN], d2[SHA256_LEN];
	unsigned char data[300];
	struct sha256 c;
	size_t i, step;

	(void)state;
	for (i = 0; i < sizeof(data); i++)
		data[i] = (unsigned char)(i * 7 + 3);
	sha256_init(&c);
	sha256_update(&c, data, sizeof(data));
	sha256_final(&c, d1);
	for (step = 1; step < 130; step++) {
		sha256_init(&c);
		for (i = 0; i < sizeof(data); i += step)
			sha256_update(&c, data + i, i + step > sizeof(data) ? sizeof(data) - i : step);
		sha256_final(&c, d2);
		assert_memory_equal(d1, d2, SHA256_LEN);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sha256_vectors),
		cmocka_unit_test(test_sha256_pieces),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
