/*
 * The deterministic test gate, and the tests' outcome as text for a model
 * (see pipeline.h and docs/internals/pipeline.md, "The gate").
 */
#include "pipeline/pipeline.h"

int pipeline_gate(struct buf *why, int ran, const struct verify_result *current,
		  const struct verify_comparison *cmp)
{
	size_t i, named = 0;
	int blocked = 0;

	if (!ran) {
		buf_addstr(why, "the tests could not run");
		return 1;
	}
	if (current && current->timed_out) {
		buf_addstr(why, "the tests could not run to the end (timed out)");
		return 1;
	}
	if (!cmp)
		return 0;
	for (i = 0; i < cmp->entries_nr; i++) {
		const struct verify_change_entry *e = &cmp->entries[i];

		if (!verify_is_regression(cmp, e))
			continue;
		buf_addstr(why, named ? ", " : cmp->baseline_complete ?
			   "tests that did not fail at baseline now fail: " :
			   "tests that passed at baseline now fail: ");
		buf_addstr(why, e->name);
		named++;
	}
	blocked = named > 0;
	if (cmp->passed_drop > 0) {
		buf_addf(why, "%s%ld fewer test%s pass than at baseline with the fixes counted "
			 "(%ld passed, was %ld)", blocked ? "; " : "", cmp->passed_drop,
			 cmp->passed_drop == 1 ? "" : "s", cmp->passed_after, cmp->passed_before);
		blocked = 1;
	}
	if (!blocked && !cmp->entries_nr && cmp->failing_after > cmp->failing_before) {
		buf_addf(why, "more tests fail than at baseline (%ld, was %ld)", cmp->failing_after,
			 cmp->failing_before);
		blocked = 1;
	}
	if (blocked && cmp->ran_after < cmp->ran_before)
		buf_addf(why, "; %ld test%s ran, %ld at baseline", cmp->ran_after,
			 cmp->ran_after == 1 ? "" : "s", cmp->ran_before);
	return blocked;
}

void pipeline_describe_tests(struct buf *out, const struct verify_result *r,
			     const struct verify_comparison *cmp, size_t max)
{
	size_t start = out->len, i;

	buf_addf(out, "passed %ld, failed %ld, errors %ld, skipped %ld, exit status %d%s\n",
		 r->passed, r->failed, r->errors, r->skipped, r->exit_code,
		 r->timed_out ? " (timed out)" : "");
	if (cmp) {
		buf_addf(out, "compared with the baseline: %zu newly failing, %zu fixed, "
			 "%zu still failing, %zu new\n", cmp->counts[VERIFY_NEWLY_FAILING],
			 cmp->counts[VERIFY_FIXED], cmp->counts[VERIFY_STILL_FAILING],
			 cmp->counts[VERIFY_NEW]);
		if (cmp->ran_after < cmp->ran_before)
			buf_addf(out, "fewer tests ran than at baseline: %ld, was %ld\n",
				 cmp->ran_after, cmp->ran_before);
	}
	for (i = 0; i < r->tests_nr && out->len - start < max; i++) {
		const struct verify_test *t = &r->tests[i];

		if (t->outcome != VERIFY_FAIL && t->outcome != VERIFY_ERROR)
			continue;
		buf_addf(out, "- %s: %s\n", t->name, verify_outcome_name(t->outcome));
		if (t->excerpt && *t->excerpt)
			buf_addf(out, "%s\n", t->excerpt);
	}
	if (!verify_result_ok(r) && !verify_result_failing(r) && r->tail && *r->tail)
		buf_addf(out, "output tail:\n%s\n", r->tail);
	if (out->len - start > max) {
		buf_setlen(out, start + max);
		buf_addstr(out, "\n[... cut ...]\n");
	}
}
