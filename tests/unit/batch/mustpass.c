/*
 * An SWE-bench task's must-pass tests: read from the task file (the
 * FAIL_TO_PASS / PASS_TO_PASS split, ids that would be options refused),
 * and their outcomes before and after read back from a run's events log.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "batch/mustpass.h"
#include "batch/task.h"
#include "helpers/testutil.h"

static int load(struct batch_tasks *t, const char *dir, const char *text)
{
	char *path = xstrfmt("%s/tasks.jsonl", dir);
	int ret;

	tu_write(dir, "tasks.jsonl", text);
	ret = batch_tasks_load(t, path, "/srv/git/{repo}");
	free(path);
	return ret;
}

static void test_must_pass_sets(void **state)
{
	char *dir = tu_mkdtemp();
	struct batch_tasks t = BATCH_TASKS_INIT;

	(void)state;
	assert_int_equal(load(&t, dir,
			      "{\"instance_id\": \"a__b-1\", \"repo\": \"a/b\", \"base_commit\": \"c1\", "
			      "\"problem_statement\": \"p\", \"FAIL_TO_PASS\": \"[\\\"t.py::test_x\\\"]\", "
			      "\"PASS_TO_PASS\": [\"t.py::test_y\", \"test_z (m.C)\"]}\n"
			      "{\"instance_id\": \"a__b-2\", \"repo\": \"a/b\", \"base_commit\": \"c1\", "
			      "\"problem_statement\": \"p\", \"PASS_TO_PASS\": [\"t.py::test_y\"]}\n"), 0);
	assert_int_equal(t.v[0].must_pass.nr, 3);
	assert_int_equal(t.v[0].fail_to_pass, 1);
	assert_string_equal(t.v[0].must_pass.v[0], "t.py::test_x");
	assert_string_equal(t.v[0].must_pass.v[2], "test_z (m.C)");
	assert_string_equal(t.v[0].url, "/srv/git/a/b");
	assert_int_equal(t.v[1].fail_to_pass, 0);
	assert_int_equal(t.v[1].must_pass.nr, 1);
	batch_tasks_release(&t);

	/* an id that is an option, empty, or two lines: the file's line is named */
	assert_true(load(&t, dir, "\n{\"instance_id\": \"x\", \"repo\": \"a/b\", \"base_commit\": \"c\", "
			 "\"problem_statement\": \"p\", \"PASS_TO_PASS\": [\"-p\", \"evil\"]}\n") < 0);
	assert_non_null(strstr(err_last(), "tasks.jsonl:2"));
	assert_non_null(strstr(err_last(), "PASS_TO_PASS: '-p' is not a test id"));
	batch_tasks_release(&t);
	assert_true(load(&t, dir, "{\"instance_id\": \"x\", \"repo\": \"a/b\", \"base_commit\": \"c\", "
			 "\"problem_statement\": \"p\", \"FAIL_TO_PASS\": [\"\"]}\n") < 0);
	assert_non_null(strstr(err_last(), "is not a test id"));
	batch_tasks_release(&t);
	assert_true(load(&t, dir, "{\"instance_id\": \"x\", \"repo\": \"a/b\", \"base_commit\": \"c\", "
			 "\"problem_statement\": \"p\", \"FAIL_TO_PASS\": [\"a\\nb\"]}\n") < 0);
	assert_non_null(strstr(err_last(), "is not a test id"));
	batch_tasks_release(&t);
	err_clear();
	tu_rmtree(dir);
}

/* A test_result event of `what` naming add (and sub with `sub`), as `forgex run --json` writes it. */
static const char *const log_text =
	"{\"type\": \"run_start\", \"run_id\": \"r1\"}\n"
	"{\"type\": \"test_result\", \"what\": \"baseline\", \"ran\": true, \"ok\": false, \"result\": "
	"{\"passed\": 1, \"failed\": 1, \"skipped\": 0, \"errors\": 0, \"exit_code\": 1, \"tests\": ["
	"{\"name\": \"m.C.test_add\", \"outcome\": \"fail\"}, {\"name\": \"m.C.test_sub\", \"outcome\": \"pass\"}]}}\n"
	"a torn line {\"type\": \"test_result\"\n"
	"{\"type\": \"test_result\", \"what\": \"after\", \"ran\": true, \"ok\": false, \"result\": "
	"{\"passed\": 0, \"failed\": 2, \"skipped\": 0, \"errors\": 0, \"exit_code\": 1, \"tests\": ["
	"{\"name\": \"m.C.test_add\", \"outcome\": \"fail\"}, {\"name\": \"m.C.test_sub\", \"outcome\": \"fail\"}]}}\n"
	"{\"type\": \"test_result\", \"what\": \"after\", \"ran\": true, \"ok\": false, \"result\": "
	"{\"passed\": 1, \"failed\": 1, \"skipped\": 0, \"errors\": 0, \"exit_code\": 1, \"tests\": ["
	"{\"name\": \"m.C.test_add\", \"outcome\": \"pass\"}, {\"name\": \"m.C.test_sub\", \"outcome\": \"fail\"}]}}\n";

static void assert_entry(const json_t *a, size_t i, const char *test, const char *set,
			 const char *before, const char *after)
{
	const json_t *e = json_array_get(a, i);

	assert_non_null(e);
	assert_string_equal(jsonx_str(e, "test"), test);
	assert_string_equal(jsonx_str(e, "set"), set);
	if (before)
		assert_string_equal(jsonx_str(e, "before"), before);
	else
		assert_true(json_is_null(json_object_get(e, "before")));
	if (after)
		assert_string_equal(jsonx_str(e, "after"), after);
	else
		assert_true(json_is_null(json_object_get(e, "after")));
}

static void test_must_pass_outcomes(void **state)
{
	char *dir = tu_mkdtemp(), *log = xstrfmt("%s/task.jsonl", dir);
	struct batch_task t;
	json_t *a;

	(void)state;
	memset(&t, 0, sizeof(t));
	strvec_init(&t.must_pass);
	/* no must-pass tests: nothing to record */
	assert_null(batch_must_pass(&t, log));
	strvec_push(&t.must_pass, "test_add (m.C)");
	strvec_push(&t.must_pass, "m.C.test_sub");
	strvec_push(&t.must_pass, "test_div (m.C)");
	t.fail_to_pass = 1;

	/* no log (the run never started): every outcome unknown */
	a = batch_must_pass(&t, log);
	assert_int_equal(json_array_size(a), 3);
	assert_entry(a, 0, "test_add (m.C)", "FAIL_TO_PASS", NULL, NULL);
	json_decref(a);

	/* the last "after" counts: the repair's, not the first attempt's */
	tu_write(dir, "task.jsonl", log_text);
	a = batch_must_pass(&t, log);
	assert_int_equal(json_array_size(a), 3);
	assert_entry(a, 0, "test_add (m.C)", "FAIL_TO_PASS", "fail", "pass");
	assert_entry(a, 1, "m.C.test_sub", "PASS_TO_PASS", "pass", "fail");
	assert_entry(a, 2, "test_div (m.C)", "PASS_TO_PASS", NULL, NULL);
	json_decref(a);
	strvec_clear(&t.must_pass);
	free(log);
	tu_rmtree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_must_pass_sets),
		cmocka_unit_test(test_must_pass_outcomes),
	};

	return cmocka_run_group_tests_name("batch/mustpass", tests, NULL, NULL);
}
