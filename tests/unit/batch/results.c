/*
 * results.jsonl (durable lines, torn tails, resuming), summaries, the merge
 * of shards, SWE-bench predictions, and the Kubernetes Job's checks.
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
#include "batch/k8s.h"
#include "batch/results.h"
#include "helpers/testutil.h"

static json_t *line(const char *id, const char *status, double secs, json_int_t tokens)
{
	return json_pack("{s:s, s:s, s:f, s:I, s:f, s:s}", "id", id, "status", status, "seconds",
			 secs, "tokens", tokens, "cost_usd", 0.0, "model_patch",
			 strcmp(status, "PASS") ? "" : "diff --git a/x b/x\n");
}

static void append(const char *path, json_t *l)
{
	assert_int_equal(batch_results_append(path, l), 0);
	json_decref(l);
}

static void test_append_load_and_torn_tail(void **state)
{
	char *dir = tu_mkdtemp(), *path = xstrfmt("%s/results.jsonl", dir), *text;
	json_t *res = NULL;
	int rewrote = 1;

	(void)state;
	/* no file: nothing finished */
	assert_int_equal(batch_results_load(&res, path, NULL, &rewrote), 0);
	assert_int_equal(json_array_size(res), 0);
	assert_false(rewrote);
	json_decref(res);
	append(path, line("a", "PASS", 1, 10));
	append(path, line("b", "FAIL", 2, 20));
	append(path, line("c", "SKIPPED", 0, 0));
	/* a kill in the middle of a write: the last line has no newline */
	text = tu_read(dir, "results.jsonl");
	{
		char *torn = xstrfmt("%s{\"id\": \"d\", \"status\": \"PA", text);

		tu_write(dir, "results.jsonl", torn);
		free(torn);
	}
	free(text);
	assert_int_equal(batch_results_load(&res, path, NULL, &rewrote), 0);
	assert_true(rewrote);
	assert_int_equal(json_array_size(res), 2);
	assert_string_equal(jsonx_str(json_array_get(res, 0), "id"), "a");
	assert_string_equal(jsonx_str(json_array_get(res, 1), "id"), "b");
	json_decref(res);
	/* rewritten without the torn line and the skipped task, whole lines only */
	text = tu_read(dir, "results.jsonl");
	assert_null(strstr(text, "\"d\""));
	assert_null(strstr(text, "SKIPPED"));
	assert_int_equal(text[strlen(text) - 1], '\n');
	free(text);
	/* loaded again: nothing to drop */
	assert_int_equal(batch_results_load(&res, path, NULL, &rewrote), 0);
	assert_false(rewrote);
	json_decref(res);
	/* --retry FAIL: b runs again */
	{
		struct strvec retry = STRVEC_INIT;

		strvec_push(&retry, "FAIL");
		assert_int_equal(batch_results_load(&res, path, &retry, &rewrote), 0);
		assert_true(rewrote);
		assert_int_equal(json_array_size(res), 1);
		assert_string_equal(jsonx_str(json_array_get(res, 0), "id"), "a");
		json_decref(res);
		strvec_clear(&retry);
	}
	free(path);
	tu_rmtree(dir);
}

static void test_summary_and_table(void **state)
{
	json_t *res = json_array(), *s;
	struct buf b = BUF_INIT;

	(void)state;
	json_array_append_new(res, line("fast", "PASS", 1, 100));
	json_array_append_new(res, line("slow", "FAIL", 30, 50));
	json_array_append_new(res, line("stuck", "TIMEOUT", 60, 0));
	json_array_append_new(res, line("later", "SKIPPED", 0, 0));
	s = batch_summary(res, 5, 61);
	assert_int_equal(jsonx_int(s, "tasks", 0), 5);
	assert_int_equal(jsonx_int(s, "finished", 0), 3);
	assert_int_equal(jsonx_int(s, "left", 0), 2);
	assert_int_equal(jsonx_int(json_object_get(s, "status"), "PASS", 0), 1);
	assert_int_equal(jsonx_int(json_object_get(s, "status"), "SKIPPED", 0), 1);
	assert_true(json_number_value(json_object_get(s, "pass_rate")) > 0.33 &&
		    json_number_value(json_object_get(s, "pass_rate")) < 0.34);
	assert_int_equal(jsonx_int(s, "tokens", 0), 150);
	assert_string_equal(jsonx_str(json_array_get(json_object_get(s, "slowest"), 0), "id"), "stuck");
	/* no prices: the most expensive by tokens */
	assert_string_equal(jsonx_str(json_array_get(json_object_get(s, "most_expensive"), 0), "id"),
			    "fast");
	batch_summary_table(&b, res, s);
	assert_non_null(strstr(b.buf, "TASK "));
	assert_non_null(strstr(b.buf, "3 of 5 tasks finished: 1 PASS, 1 FAIL, 0 ERROR, 1 TIMEOUT, 1 SKIPPED"));
	assert_non_null(strstr(b.buf, "pass rate 33.3%"));
	assert_non_null(strstr(b.buf, "slowest: stuck (1m00s), slow (30.0s), fast (1.0s)"));
	buf_release(&b);
	json_decref(s);
	json_decref(res);
}

static void test_collect_shards_and_predictions(void **state)
{
	char *dir = tu_mkdtemp(), *p;
	const char *dirs[2];
	json_t *all = NULL, *pred = NULL;
	char *d1, *d2;

	(void)state;
	p = xstrfmt("%s/a/shard-0", dir);
	tu_write(p, "results.jsonl", "");
	free(p);
	p = xstrfmt("%s/a/shard-0/results.jsonl", dir);
	append(p, line("t3", "PASS", 1, 1));
	append(p, line("t1", "SKIPPED", 0, 0));
	free(p);
	p = xstrfmt("%s/a/shard-1/results.jsonl", dir);
	tu_write(dir, "a/shard-1/results.jsonl", "");
	append(p, line("t2", "FAIL", 1, 1));
	free(p);
	p = xstrfmt("%s/b/results.jsonl", dir);
	tu_write(dir, "b/results.jsonl", "");
	append(p, line("t1", "PASS", 1, 1));
	free(p);
	d1 = xstrfmt("%s/a", dir);
	d2 = xstrfmt("%s/b", dir);
	dirs[0] = d1;
	dirs[1] = d2;
	assert_int_equal(batch_collect(&all, dirs, 2), 0);
	assert_int_equal(json_array_size(all), 3);
	assert_string_equal(jsonx_str(json_array_get(all, 0), "id"), "t1");
	/* a finished line wins over SKIPPED */
	assert_string_equal(jsonx_str(json_array_get(all, 0), "status"), "PASS");
	assert_string_equal(jsonx_str(json_array_get(all, 2), "id"), "t3");
	p = xstrfmt("%s/preds.json", dir);
	assert_int_equal(batch_predictions_write(p, all, "forgex-test"), 0);
	assert_int_equal(jsonx_load_file(&pred, p, 1 << 20), 0);
	assert_int_equal(json_array_size(pred), 3);
	assert_string_equal(jsonx_str(json_array_get(pred, 0), "instance_id"), "t1");
	assert_string_equal(jsonx_str(json_array_get(pred, 0), "model_name_or_path"), "forgex-test");
	assert_string_equal(jsonx_str(json_array_get(pred, 0), "model_patch"), "diff --git a/x b/x\n");
	assert_string_equal(jsonx_str(json_array_get(pred, 1), "model_patch"), "");
	json_decref(pred);
	free(p);
	/* .jsonl: one object a line */
	p = xstrfmt("%s/preds.jsonl", dir);
	assert_int_equal(batch_predictions_write(p, all, "m"), 0);
	{
		char *text = tu_read(dir, "preds.jsonl");

		assert_int_equal(text[0], '{');
		assert_non_null(strstr(text, "}\n{"));
		free(text);
	}
	free(p);
	json_decref(all);
	/* a folder without results is an error, not an empty merge */
	p = xstrfmt("%s/none", dir);
	tu_write(dir, "none/x", "");
	dirs[0] = p;
	assert_int_equal(batch_collect(&all, dirs, 1), FX_ENOTFOUND);
	free(p);
	free(d1);
	free(d2);
	tu_rmtree(dir);
}

static void test_k8s_job_options(void **state)
{
	struct batch_k8s_opts o;
	json_t *job = NULL;
	const char *extra[] = { "--wall-time", "600", NULL };
	const char *env[] = { "A=b", NULL }, *bad_env[] = { "=x", NULL };

	(void)state;
	memset(&o, 0, sizeof(o));
	o.name = "swe-eval";
	o.image = "forgex:0.1";
	o.tasks = "/data/tasks.jsonl";
	o.pvc = "results";
	o.cpu = "2";
	o.memory = "8Gi";
	o.sandbox = "native";
	o.batch_args = extra;
	o.env = env;
	o.shards = 10;
	o.parallelism = 4;
	o.jobs = 2;
	assert_int_equal(batch_k8s_job(&job, &o), 0);
	{
		json_t *c = json_array_get(json_object_get(json_object_get(json_object_get(
			json_object_get(job, "spec"), "template"), "spec"), "containers"), 0);
		struct buf b = BUF_INIT;

		jsonx_dump(&b, c, JSON_COMPACT);
		/* no ConfigMap: the tasks at their path in the image, no tasks volume */
		assert_non_null(strstr(b.buf, "\"batch\",\"/data/tasks.jsonl\""));
		assert_null(strstr(b.buf, "\"/tasks\""));
		assert_non_null(strstr(b.buf, "sandbox.backend=native"));
		assert_non_null(strstr(b.buf, "\"--wall-time\",\"600\""));
		assert_non_null(strstr(b.buf, "{\"name\":\"A\",\"value\":\"b\"}"));
		/* no secret named: no key variable */
		assert_null(strstr(b.buf, "secretKeyRef"));
		buf_release(&b);
	}
	json_decref(job);
	o.env = bad_env;
	assert_int_equal(batch_k8s_job(&job, &o), FX_EINVAL);
	o.env = NULL;
	o.name = "-bad";
	assert_int_equal(batch_k8s_job(&job, &o), FX_EINVAL);
	o.name = "ok";
	o.sandbox = "docker";
	assert_int_equal(batch_k8s_job(&job, &o), FX_EINVAL);
	o.sandbox = "none";
	o.shards = 0;
	assert_int_equal(batch_k8s_job(&job, &o), FX_EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_append_load_and_torn_tail),
		cmocka_unit_test(test_summary_and_table),
		cmocka_unit_test(test_collect_shards_and_predictions),
		cmocka_unit_test(test_k8s_job_options),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
