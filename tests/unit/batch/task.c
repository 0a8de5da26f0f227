/*
 * Reading task sets, shards, the -c text of a task's config, memory shares.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "batch/run.h"
#include "batch/task.h"
#include "helpers/testutil.h"

static char *load_err(struct batch_tasks *t, const char *dir, const char *text)
{
	char *path = xstrfmt("%s/tasks.jsonl", dir);

	tu_write(dir, "tasks.jsonl", text);
	if (batch_tasks_load(t, path, NULL) == 0) {
		free(path);
		return NULL;
	}
	free(path);
	return xstrdup(err_last());
}

static void test_native_tasks(void **state)
{
	char *dir = tu_mkdtemp(), *repo = xstrfmt("%s/r", dir), *e;
	struct batch_tasks t = BATCH_TASKS_INIT;

	(void)state;
	tu_write(dir, "r/x", "x");
	e = load_err(&t, dir,
		     "# a comment, then a blank line\n\n"
		     "{\"id\": \"a\", \"repo\": \"r\", \"commit\": \"abc\", \"request\": \"do it\","
		     " \"test_command\": \"make check\", \"config\": {\"pipeline.max_iterations\": 2,"
		     " \"sandbox.network\": false}}\n"
		     "{\"id\": \"b/c\", \"repo\": \"https://example.org/x.git\", \"commit\": \"main\","
		     " \"request\": \"more\", \"test_command\": [\"pytest\", \"-q\"]}\n");
	assert_null(e);
	assert_int_equal(t.nr, 2);
	assert_string_equal(t.v[0].id, "a");
	assert_string_equal(t.v[0].key, "a");
	{
		char *want = realpath(repo, NULL);

		assert_string_equal(t.v[0].url, want);
		free(want);
	}
	assert_string_equal(t.v[0].repo, "r");
	assert_int_equal(t.v[0].line, 3);
	{
		char *tc = batch_config_text(t.v[0].test_command);

		assert_string_equal(tc, "[\"sh\",\"-c\",\"make check\"]");
		free(tc);
		tc = batch_config_text(json_object_get(t.v[0].config, "pipeline.max_iterations"));
		assert_string_equal(tc, "2");
		free(tc);
		tc = batch_config_text(json_object_get(t.v[0].config, "sandbox.network"));
		assert_string_equal(tc, "false");
		free(tc);
	}
	assert_string_equal(t.v[1].url, "https://example.org/x.git");
	/* a changed id gets its hash: "b/c" and "b_c" stay two folders */
	assert_int_equal(strncmp(t.v[1].key, "b_c-", 4), 0);
	assert_int_equal(strlen(t.v[1].key), 12);
	assert_false(t.v[1].swebench);
	batch_tasks_release(&t);
	free(repo);
	tu_rmtree(dir);
}

static void test_swebench_instances(void **state)
{
	char *dir = tu_mkdtemp(), *path = xstrfmt("%s/swe.jsonl", dir);
	struct batch_tasks t = BATCH_TASKS_INIT;

	(void)state;
	tu_write(dir, "swe.jsonl",
		 "{\"instance_id\": \"astropy__astropy-12907\", \"repo\": \"astropy/astropy\","
		 " \"base_commit\": \"d16bfe05a744909de4b27f5875fe0d4ed41ce607\","
		 " \"problem_statement\": \"Modeling's separability_matrix is wrong\","
		 " \"FAIL_TO_PASS\": \"[\\\"test_separable[compound_model6]\\\"]\","
		 " \"PASS_TO_PASS\": [\"test_coord_matrix\"], \"version\": \"4.3\"}\n");
	assert_int_equal(batch_tasks_load(&t, path, "/mirrors/{repo}.git"), 0);
	assert_int_equal(t.nr, 1);
	assert_true(t.v[0].swebench);
	assert_string_equal(t.v[0].id, "astropy__astropy-12907");
	assert_string_equal(t.v[0].url, "/mirrors/astropy/astropy.git");
	assert_string_equal(t.v[0].commit, "d16bfe05a744909de4b27f5875fe0d4ed41ce607");
	assert_int_equal(t.v[0].must_pass.nr, 2);
	assert_string_equal(t.v[0].must_pass.v[0], "test_separable[compound_model6]");
	assert_non_null(strstr(t.v[0].request, "separability_matrix is wrong\n\nThe change is done "
			       "when these tests pass:\n- test_separable[compound_model6]\n"
			       "- test_coord_matrix\n"));
	batch_tasks_release(&t);
	/* the default template is GitHub's */
	assert_int_equal(batch_tasks_load(&t, path, NULL), 0);
	assert_string_equal(t.v[0].url, "https://github.com/astropy/astropy.git");
	batch_tasks_release(&t);
	free(path);
	tu_rmtree(dir);
}

static void test_bad_task_files(void **state)
{
	char *dir = tu_mkdtemp(), *e;
	struct batch_tasks t = BATCH_TASKS_INIT;

	(void)state;
	tu_write(dir, "r/x", "x");
	e = load_err(&t, dir, "{\"id\": \"a\", \"repo\": \"r\", \"commit\": \"c\"}\n");
	assert_non_null(strstr(e, "tasks.jsonl:1"));
	assert_non_null(strstr(e, "no \"request\""));
	free(e);
	batch_tasks_release(&t);
	e = load_err(&t, dir, "\n{\"id\": \"a\", \"repo\": \"r\", \"commit\": \"c\", \"request\": \"x\"}\n"
		     "{\"id\": \"a\", \"repo\": \"r\", \"commit\": \"d\", \"request\": \"y\"}\n");
	assert_non_null(strstr(e, "tasks.jsonl:3"));
	assert_non_null(strstr(e, "repeats line 2"));
	free(e);
	batch_tasks_release(&t);
	e = load_err(&t, dir, "[1, 2]\n");
	assert_non_null(strstr(e, "expected a JSON object"));
	free(e);
	batch_tasks_release(&t);
	e = load_err(&t, dir, "{\"id\": \"a\", \"repo\": \"nowhere\", \"commit\": \"c\", \"request\": \"x\"}\n");
	assert_non_null(strstr(e, "repo"));
	free(e);
	batch_tasks_release(&t);
	e = load_err(&t, dir, "{\"id\": \"a\", \"repo\": \"r\", \"commit\": \"--output=x\", \"request\": \"x\"}\n");
	assert_non_null(strstr(e, "bad commit"));
	free(e);
	batch_tasks_release(&t);
	e = load_err(&t, dir, "{\"id\": \"a\", \"repo\": \"r\", \"commit\": \"c\", \"request\": \"x\","
		     " \"config\": {\"nodot\": 1}}\n");
	assert_non_null(strstr(e, "section.key"));
	free(e);
	batch_tasks_release(&t);
	{
		char *missing = xstrfmt("%s/none.jsonl", dir);

		assert_int_equal(batch_tasks_load(&t, missing, NULL), FX_ENOTFOUND);
		free(missing);
	}
	tu_rmtree(dir);
}

static void test_shards(void **state)
{
	unsigned k, n, counts[7] = { 0 };
	int i;

	(void)state;
	/* a task's shard depends on its id alone */
	assert_int_equal(batch_shard_of("django__django-11099", 7),
			 batch_shard_of("django__django-11099", 7));
	assert_int_equal(batch_shard_of("anything", 1), 0);
	for (i = 0; i < 700; i++) {
		char id[32];

		snprintf(id, sizeof(id), "task-%d", i);
		k = batch_shard_of(id, 7);
		assert_true(k < 7);
		counts[k]++;
	}
	for (i = 0; i < 7; i++)
		assert_true(counts[i] > 50 && counts[i] < 150);
	assert_int_equal(batch_shard_parse(&k, &n, "2/4"), 0);
	assert_int_equal(k, 2);
	assert_int_equal(n, 4);
	assert_int_equal(batch_shard_parse(&k, &n, "4/4"), FX_EINVAL);
	assert_int_equal(batch_shard_parse(&k, &n, "1/0"), FX_EINVAL);
	assert_int_equal(batch_shard_parse(&k, &n, "x"), FX_EINVAL);
	assert_int_equal(batch_shard_parse(&k, &n, "1/2x"), FX_EINVAL);
}

static void test_memory_share(void **state)
{
	char *s;

	(void)state;
	s = batch_memory_share("4g", 4);
	assert_string_equal(s, "1073741824");
	free(s);
	s = batch_memory_share("3000", 2);
	assert_string_equal(s, "1500");
	free(s);
	s = batch_memory_share("512MiB", 2);
	assert_string_equal(s, "268435456");
	free(s);
	assert_null(batch_memory_share("", 4));
	assert_null(batch_memory_share(NULL, 4));
	assert_null(batch_memory_share("lots", 4));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_native_tasks),
		cmocka_unit_test(test_swebench_instances),
		cmocka_unit_test(test_bad_task_files),
		cmocka_unit_test(test_shards),
		cmocka_unit_test(test_memory_share),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
