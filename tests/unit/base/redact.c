/* The shared redactor (base/redact.c): the shapes added for issue 10 and the process-wide secrets. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/redact.h"

static void check(const char *in, const char *want)
{
	struct buf b = BUF_INIT;

	redact_text(&b, in, strlen(in), NULL);
	assert_string_equal(b.buf, want);
	buf_release(&b);
}

static void test_redact_new_shapes(void **state)
{
	(void)state;
	/* AWS: access key ids (long-term and temporary) and the secret in context */
	check("id AKIAIOSFODNN7EXAMPLE tmp ASIAY34FZKBOKMUTVV7A", "id [REDACTED] tmp [REDACTED]");
	check("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nregion = x",
	      "aws_secret_access_key = [REDACTED]\nregion = x");
	check("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
	      "AWS_SECRET_ACCESS_KEY=[REDACTED]");
	check("\"aws_secret_access_key\": \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\"",
	      "\"aws_secret_access_key\": \"[REDACTED]\"");
	/* GitHub, OpenAI project keys, Slack */
	check("gho_16C7e42F292c6912E7710c838347Ae178B4a ghs_16C7e42F292c6912E7710c838347Ae178B4a",
	      "[REDACTED] [REDACTED]");
	check("ghu_16C7e42F292c6912E7710c838347Ae178B4a github_pat_11ABCDEFG0123456789_abcdef",
	      "[REDACTED] [REDACTED]");
	check("OPENAI=sk-proj-abcdefghijklmnop0123456789ABCD", "OPENAI=[REDACTED]");
	check("slack xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOp",
	      "slack [REDACTED]");
	check("xoxp-123456789012-123456789012-123456789012-abcdef0123456789", "[REDACTED]");
	/* a private key block, whole, and one cut short */
	check("before\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nAAAA\n"
	      "-----END OPENSSH PRIVATE KEY-----\nafter",
	      "before\n-----BEGIN OPENSSH PRIVATE KEY-----[REDACTED]\nafter");
	check("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA\n",
	      "-----BEGIN RSA PRIVATE KEY-----[REDACTED]");
	/* a public key and a certificate are not secrets */
	check("-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----",
	      "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----");
	/* words that only look close */
	check("aws_secret_access_key = short", "aws_secret_access_key = short");
	check("xoxb- and ASIA", "xoxb- and ASIA");
}

/* A provider key in a variable of any name, registered once, is redacted everywhere. */
static void test_redact_registered_everywhere(void **state)
{
	struct buf b = BUF_INIT;
	json_t *j, *r;

	(void)state;
	check("my key is plainvalue-1234 ok", "my key is plainvalue-1234 ok");
	redact_register("plainvalue-1234");
	redact_register("abc");		/* too short: ignored */
	check("my key is plainvalue-1234 ok", "my key is [REDACTED] ok");
	check("abc abc", "abc abc");
	buf_addstr(&b, "out: plainvalue-1234\n");
	assert_int_equal(redact_buf(&b), 1);
	assert_string_equal(b.buf, "out: [REDACTED]\n");
	assert_int_equal(redact_buf(&b), 0);
	buf_release(&b);
	j = json_pack("{s:[s]}", "output", "x plainvalue-1234 y");
	r = redact_json(j, NULL);
	assert_string_equal(json_string_value(json_array_get(json_object_get(r, "output"), 0)),
			    "x [REDACTED] y");
	json_decref(j);
	json_decref(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_redact_new_shapes),
		cmocka_unit_test(test_redact_registered_everywhere),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
