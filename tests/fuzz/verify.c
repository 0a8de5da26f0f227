/*
 * libFuzzer target for the test-output parsers: any bytes, as standard
 * output and standard error of a test command with any exit status, must
 * parse within the result's bounds, never crash, leak or overflow; the
 * JSON form must read back the same; a result compared with itself must
 * show no change.
 *
 * Input: byte 0 the exit status, byte 1 flags (bit 0 timed out, bit 1
 * truncated), bytes 2-3 where standard output ends (little-endian, modulo
 * the rest's length), the rest the output.
 *
 *   make fuzz
 *   sh tests/fixtures/verify/fuzz-seeds.sh build/fuzz/verify-corpus
 *   build/fuzz/verify -max_total_time=240 build/fuzz/verify-corpus
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "verify/verify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct verify_result *r)
{
	size_t i;

	if (r->passed < 0 || r->failed < 0 || r->skipped < 0 || r->errors < 0)
		abort();
	if (r->tests_nr > VERIFY_TESTS_MAX || !r->tail || strlen(r->tail) > VERIFY_TAIL_MAX)
		abort();
	for (i = 0; i < r->tests_nr; i++) {
		const struct verify_test *t = &r->tests[i];
		size_t k;

		if (!t->name || strlen(t->name) > VERIFY_NAME_MAX || !t->format)
			abort();
		for (k = 0; t->name[k]; k++)
			if ((unsigned char)t->name[k] < 0x20)
				abort();
		if (t->excerpt && strlen(t->excerpt) > VERIFY_EXCERPT_MAX)
			abort();
	}
	/* a failing test or a bad exit status is never a pass */
	if (verify_result_ok(r) && (verify_result_failing(r) || r->exit_code || r->timed_out))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct verify_result r = VERIFY_RESULT_INIT, back = VERIFY_RESULT_INIT;
	struct verify_comparison c = VERIFY_COMPARISON_INIT;
	struct verify_output o;
	size_t split, i;
	json_t *j;

	if (size < 4)
		return 0;
	memset(&o, 0, sizeof(o));
	o.exit_code = data[0];
	o.timed_out = data[1] & 1;
	o.truncated = (data[1] >> 1) & 1;
	split = (size_t)data[2] | (size_t)data[3] << 8;
	data += 4;
	size -= 4;
	split = size ? split % (size + 1) : 0;
	o.out = (const char *)data;
	o.out_len = split;
	o.err = (const char *)data + split;
	o.err_len = size - split;

	verify_parse(&r, &o);
	check(&r);

	j = verify_result_to_json(&r);
	if (verify_result_from_json(&back, j) < 0)
		abort();
	if (back.passed != r.passed || back.failed != r.failed || back.skipped != r.skipped ||
	    back.errors != r.errors || back.tests_nr != r.tests_nr)
		abort();
	for (i = 0; i < r.tests_nr; i++)
		if (back.tests[i].outcome != r.tests[i].outcome)
			abort();
	json_decref(j);

	verify_compare(&c, &r, &r);
	if (c.regressed || c.counts[VERIFY_NEWLY_FAILING] || c.counts[VERIFY_FIXED] ||
	    c.counts[VERIFY_NEW] || c.counts[VERIFY_REMOVED])
		abort();
	verify_comparison_release(&c);
	verify_result_release(&back);
	verify_result_release(&r);
	return 0;
}
