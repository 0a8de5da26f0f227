/* Verdicts, quorums and the ensemble. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "agents/review.h"
#include "base/jsonx.h"

static void test_review_quorum_rules(void **state)
{
	(void)state;
	assert_int_equal(review_quorum_from_name("majority"), QUORUM_MAJORITY);
	assert_int_equal(review_quorum_from_name("unanimous"), QUORUM_UNANIMOUS);
	assert_int_equal(review_quorum_from_name("any"), QUORUM_ANY);
	assert_int_equal(review_quorum_from_name("most"), -1);
	/* majority: more than half */
	assert_true(review_quorum_met(QUORUM_MAJORITY, 2, 3));
	assert_false(review_quorum_met(QUORUM_MAJORITY, 1, 3));
	assert_false(review_quorum_met(QUORUM_MAJORITY, 1, 2));
	assert_true(review_quorum_met(QUORUM_MAJORITY, 1, 1));
	assert_true(review_quorum_met(QUORUM_UNANIMOUS, 3, 3));
	assert_false(review_quorum_met(QUORUM_UNANIMOUS, 2, 3));
	assert_true(review_quorum_met(QUORUM_ANY, 1, 3));
	assert_false(review_quorum_met(QUORUM_ANY, 0, 3));
	/* no votes never pass */
	assert_false(review_quorum_met(QUORUM_ANY, 0, 0));
	assert_false(review_quorum_met(QUORUM_MAJORITY, 0, 0));
}

static void test_review_parse_verdict(void **state)
{
	struct buf s = BUF_INIT;
	struct strvec fixes = STRVEC_INIT;
	json_t *a;
	int pass = -1;

	(void)state;
	a = json_pack("{s:s, s:[s, s], s:[s]}", "verdict", "fail", "reasons", "wrong sign",
		      "no test", "required_fixes", "use a - b");
	assert_int_equal(review_parse_verdict(&pass, &s, &fixes, a), 0);
	assert_int_equal(pass, 0);
	assert_string_equal(s.buf, "wrong sign; no test");
	assert_int_equal(fixes.nr, 1);
	assert_string_equal(fixes.v[0], "use a - b");
	json_decref(a);
	a = json_pack("{s:s}", "verdict", "maybe");
	pass = -1;
	assert_int_equal(review_parse_verdict(&pass, &s, &fixes, a), FX_EPARSE);
	assert_int_equal(pass, -1);
	json_decref(a);
	a = json_pack("{s:s, s:s}", "verdict", "PASS", "summary", "good");
	buf_reset(&s);
	assert_int_equal(review_parse_verdict(&pass, &s, NULL, a), 0);
	assert_int_equal(pass, 1);
	assert_string_equal(s.buf, "good");
	json_decref(a);
	buf_release(&s);
	strvec_clear(&fixes);
}

/* Voters answer from a table: "supervisor" PASS, "a:m1" FAIL, "b:m2" errors... */
struct table {
	const char *voter;
	int rc;
	int pass;
};

static int table_vote(struct review_vote *out, const char *voter, void *data)
{
	const struct table *t;

	for (t = data; t->voter; t++) {
		if (strcmp(t->voter, voter))
			continue;
		if (t->rc < 0)
			return err_set(t->rc, "%s broke", voter);
		out->pass = t->pass;
		out->summary = xstrdup(t->pass ? "fine" : "not fine");
		if (!t->pass)
			strvec_push(&out->fixes, "fix it");
		return 0;
	}
	return err_set(FX_ENOTFOUND, "unknown voter");
}

static void test_review_ensemble_two_of_three(void **state)
{
	const struct table t[] = {
		{ "supervisor", 0, 1 }, { "a:m1", 0, 0 }, { "b:m2", 0, 1 }, { NULL, 0, 0 },
	};
	struct strvec voters = STRVEC_INIT;
	struct review r;
	json_t *j;

	(void)state;
	strvec_push(&voters, "a:m1");
	strvec_push(&voters, "b:m2");
	review_init(&r, QUORUM_MAJORITY);
	assert_int_equal(review_ensemble(&r, &voters, table_vote, (void *)t), 0);
	assert_int_equal(r.nr, 3);
	assert_int_equal(r.passes, 2);
	assert_true(r.pass);
	j = review_to_json(&r);
	assert_int_equal(json_array_size(json_object_get(j, "votes")), 3);
	assert_string_equal(jsonx_str(json_array_get(json_object_get(j, "votes"), 1), "verdict"),
			    "FAIL");
	json_decref(j);
	review_release(&r);
	/* the same votes under unanimous fail */
	review_init(&r, QUORUM_UNANIMOUS);
	review_ensemble(&r, &voters, table_vote, (void *)t);
	assert_false(r.pass);
	review_release(&r);
	strvec_clear(&voters);
}

static void test_review_failed_voter_counts_as_fail(void **state)
{
	const struct table t[] = {
		{ "supervisor", 0, 1 }, { "a:m1", FX_EPROVIDER, 0 }, { NULL, 0, 0 },
	};
	const struct table intr[] = {
		{ "supervisor", FX_EINTR, 0 }, { NULL, 0, 0 },
	};
	struct strvec voters = STRVEC_INIT;
	struct review r;

	(void)state;
	strvec_push(&voters, "a:m1");
	review_init(&r, QUORUM_MAJORITY);
	assert_int_equal(review_ensemble(&r, &voters, table_vote, (void *)t), 0);
	assert_int_equal(r.nr, 2);
	assert_true(r.votes[1].failed);
	assert_non_null(strstr(r.votes[1].summary, "a:m1 broke"));
	/* 1 of 2 is not a majority */
	assert_false(r.pass);
	review_release(&r);
	review_init(&r, QUORUM_ANY);
	assert_int_equal(review_ensemble(&r, &voters, table_vote, (void *)intr), FX_EINTR);
	assert_int_equal(r.nr, 0);
	assert_false(r.pass);
	review_release(&r);
	strvec_clear(&voters);
}

static void test_review_split_voter(void **state)
{
	char *p = NULL, *m = NULL;

	(void)state;
	assert_int_equal(review_split_voter(&p, &m, "groq:llama-3:70b"), 0);
	assert_string_equal(p, "groq");
	assert_string_equal(m, "llama-3:70b");
	free(p);
	free(m);
	assert_int_equal(review_split_voter(&p, &m, "local"), 0);
	assert_string_equal(p, "local");
	assert_string_equal(m, "");
	free(p);
	free(m);
	assert_int_equal(review_split_voter(&p, &m, ":model"), FX_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_review_quorum_rules),
		cmocka_unit_test(test_review_parse_verdict),
		cmocka_unit_test(test_review_ensemble_two_of_three),
		cmocka_unit_test(test_review_failed_voter_counts_as_fail),
		cmocka_unit_test(test_review_split_voter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
