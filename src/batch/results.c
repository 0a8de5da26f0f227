/*
 * results.jsonl, summary.json, predictions and the merge of shards (see results.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/err.h"
#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/strvec.h"
#include "batch/results.h"

#define RESULTS_MAX (1u << 30)

static const char *const statuses[] = { "PASS", "FAIL", "ERROR", "TIMEOUT", "SKIPPED" };

/* Index of the line of `id` in `arr`, or -1. */
static long find_id(const json_t *arr, const char *id)
{
	size_t i;
	const json_t *l;

	json_array_foreach(arr, i, l)
		if (jsonx_str(l, "id") && !strcmp(jsonx_str(l, "id"), id))
			return (long)i;
	return -1;
}

static int is_skipped(const json_t *l)
{
	const char *s = jsonx_str(l, "status");

	return !s || !strcmp(s, "SKIPPED");
}

/* The lines of `path` into `arr` (each id once); `*dropped` counts what was not kept. */
static int read_lines(json_t *arr, const char *path, size_t *dropped, int keep_skipped,
		      const struct strvec *retry)
{
	struct buf b = BUF_INIT;
	size_t pos = 0;

	if (fsutil_read_file(&b, path, RESULTS_MAX) < 0) {
		int missing = !fsutil_exists(path);

		buf_release(&b);
		if (missing) {
			err_clear();
			return 0;
		}
		return err_prefix(FX_EOS, "results %s", path);
	}
	while (pos < b.len) {
		const char *s = b.buf + pos, *nl = memchr(s, '\n', b.len - pos);
		size_t n = nl ? (size_t)(nl - s) : b.len - pos;
		json_t *l = NULL;
		long at;

		pos += n + 1;
		/* a line without its newline was cut by a kill: never trusted */
		if (!nl || jsonx_parse(&l, s, n, "result") < 0 || !jsonx_str(l, "id") ||
		    (!keep_skipped && is_skipped(l)) ||
		    (retry && strvec_find(retry, jsonx_str(l, "status")) >= 0)) {
			err_clear();
			json_decref(l);
			if (n || !nl)
				(*dropped)++;
			continue;
		}
		at = find_id(arr, jsonx_str(l, "id"));
		if (at >= 0) {
			(*dropped)++;
			json_array_set_new(arr, (size_t)at, l);
		} else {
			json_array_append_new(arr, l);
		}
	}
	buf_release(&b);
	return 0;
}

int batch_results_write(const char *path, const json_t *results)
{
	struct buf b = BUF_INIT;
	const json_t *l;
	size_t i;
	int ret;

	json_array_foreach(results, i, l) {
		jsonx_dump(&b, l, JSON_COMPACT);
		buf_addch(&b, '\n');
	}
	ret = fsutil_write_atomic(path, b.buf, b.len, 0644);
	buf_release(&b);
	return ret < 0 ? err_prefix(ret, "writing %s", path) : 0;
}

int batch_results_load(json_t **out, const char *path, const struct strvec *retry, int *rewrote)
{
	json_t *arr = json_array();
	size_t dropped = 0;
	int ret = read_lines(arr, path, &dropped, 0, retry);

	*rewrote = 0;
	if (!ret && dropped) {
		ret = batch_results_write(path, arr);
		*rewrote = !ret;
	}
	if (ret) {
		json_decref(arr);
		return ret;
	}
	*out = arr;
	return 0;
}

int batch_results_append(const char *path, const json_t *line)
{
	struct buf b = BUF_INIT;
	int fd, ret = 0;

	jsonx_dump(&b, line, JSON_COMPACT);
	buf_addch(&b, '\n');
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		buf_release(&b);
		return err_set_errno(FX_EOS, "open %s", path);
	}
	/* one write: the line is in the file whole or not at all (a torn tail is dropped on load) */
	if (fsutil_write_all(fd, b.buf, b.len) < 0)
		ret = err_prefix(FX_EOS, "writing %s", path);
	else if (fsync(fd) < 0)
		ret = err_set_errno(FX_EOS, "fsync %s", path);
	close(fd);
	buf_release(&b);
	return ret;
}

/* The `n` lines of `results` with the largest `key`, as [{"id", key}]. */
static json_t *top(const json_t *results, const char *key, size_t n)
{
	json_t *out = json_array();
	size_t i, k, len = json_array_size(results);
	char *taken = xcalloc(len + 1, 1);

	for (k = 0; k < n; k++) {
		long best = -1;
		double bv = 0;

		for (i = 0; i < len; i++) {
			double v = json_number_value(json_object_get(json_array_get(results, i), key));

			if (!taken[i] && v > 0 && (best < 0 || v > bv)) {
				best = (long)i;
				bv = v;
			}
		}
		if (best < 0)
			break;
		taken[best] = 1;
		json_array_append_new(out, json_pack("{s:s, s:f}", "id",
						     jsonx_str(json_array_get(results, (size_t)best), "id"),
						     key, bv));
	}
	free(taken);
	return out;
}

json_t *batch_summary(const json_t *results, size_t total, double wall)
{
	json_t *s = json_object(), *counts = json_object();
	double cost = 0, secs = 0;
	json_int_t tokens = 0, pass = 0, finished = 0;
	const json_t *l;
	size_t i, k;

	for (k = 0; k < sizeof(statuses) / sizeof(statuses[0]); k++)
		jsonx_set(counts, statuses[k], json_integer(0));
	json_array_foreach(results, i, l) {
		const char *st = jsonx_str(l, "status");
		json_t *c = st ? json_object_get(counts, st) : NULL;

		if (c)
			json_integer_set(c, json_integer_value(c) + 1);
		if (st && strcmp(st, "SKIPPED"))
			finished++;
		pass += st && !strcmp(st, "PASS");
		tokens += jsonx_int(l, "tokens", 0);
		cost += json_number_value(json_object_get(l, "cost_usd"));
		secs += json_number_value(json_object_get(l, "seconds"));
	}
	jsonx_set(s, "tasks", json_integer((json_int_t)total));
	jsonx_set(s, "finished", json_integer(finished));
	jsonx_set(s, "left", json_integer((json_int_t)total > finished ? (json_int_t)total - finished : 0));
	jsonx_set(s, "status", counts);
	jsonx_set(s, "pass_rate", json_real(finished ? (double)pass / (double)finished : 0));
	jsonx_set(s, "tokens", json_integer(tokens));
	jsonx_set(s, "cost_usd", json_real(cost));
	jsonx_set(s, "task_seconds", json_real(secs));
	jsonx_set(s, "wall_seconds", json_real(wall));
	jsonx_set(s, "slowest", top(results, "seconds", 3));
	jsonx_set(s, "most_expensive", top(results, cost > 0 ? "cost_usd" : "tokens", 3));
	return s;
}

static void add_duration(struct buf *b, double s)
{
	if (s >= 3600)
		buf_addf(b, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
	else if (s >= 60)
		buf_addf(b, "%dm%02ds", (int)(s / 60), (int)s % 60);
	else
		buf_addf(b, "%.1fs", s);
}

static void add_tests(struct buf *b, const json_t *t)
{
	if (json_is_object(t))
		buf_addf(b, "%lld/%lld", (long long)jsonx_int(t, "passed", 0),
			 (long long)(jsonx_int(t, "passed", 0) + jsonx_int(t, "failed", 0) +
				     jsonx_int(t, "errors", 0)));
	else
		buf_addch(b, '-');
}

static void add_top(struct buf *b, const char *label, const json_t *arr, const char *key)
{
	const json_t *e;
	size_t i;

	if (!json_array_size(arr))
		return;
	buf_addf(b, "  %s:", label);
	json_array_foreach(arr, i, e) {
		double v = json_number_value(json_object_get(e, key));

		buf_addf(b, "%s %s (", i ? "," : "", jsonx_str(e, "id"));
		if (!strcmp(key, "seconds"))
			add_duration(b, v);
		else if (!strcmp(key, "cost_usd"))
			buf_addf(b, "$%.4f", v);
		else
			buf_addf(b, "%.0f tokens", v);
		buf_addch(b, ')');
	}
	buf_addch(b, '\n');
}

void batch_summary_table(struct buf *out, const json_t *results, const json_t *summary)
{
	const json_t *l, *counts = json_object_get(summary, "status");
	size_t i, k, w = 4;

	json_array_foreach(results, i, l)
		if (strlen(jsonx_str(l, "id")) > w)
			w = strlen(jsonx_str(l, "id"));
	if (w > 40)
		w = 40;
	buf_addf(out, "%-*s  %-7s  %-9s  %-9s  %5s  %8s  %9s  %s\n", (int)w, "TASK", "STATUS",
		 "TESTS<", "TESTS>", "FILES", "TOKENS", "COST", "TIME");
	json_array_foreach(results, i, l) {
		struct buf a = BUF_INIT, b = BUF_INIT, t = BUF_INIT;

		add_tests(&a, json_object_get(l, "tests_before"));
		add_tests(&b, json_object_get(l, "tests_after"));
		add_duration(&t, json_number_value(json_object_get(l, "seconds")));
		buf_addf(out, "%-*.*s  %-7s  %-9s  %-9s  %5zu  %8lld  %9.4f  %s\n", (int)w, (int)w,
			 jsonx_str(l, "id"), jsonx_str(l, "status") ? jsonx_str(l, "status") : "?",
			 a.buf, b.buf, json_array_size(json_object_get(l, "files_changed")),
			 (long long)jsonx_int(l, "tokens", 0),
			 json_number_value(json_object_get(l, "cost_usd")), t.buf);
		buf_release(&a);
		buf_release(&b);
		buf_release(&t);
	}
	buf_addf(out, "\n%lld of %lld tasks finished:", (long long)jsonx_int(summary, "finished", 0),
		 (long long)jsonx_int(summary, "tasks", 0));
	for (k = 0; k < sizeof(statuses) / sizeof(statuses[0]); k++)
		buf_addf(out, "%s %lld %s", k ? "," : "",
			 (long long)jsonx_int(counts, statuses[k], 0), statuses[k]);
	buf_addf(out, "\n  pass rate %.1f%%, tokens %lld, cost $%.4f, time ",
		 100.0 * json_number_value(json_object_get(summary, "pass_rate")),
		 (long long)jsonx_int(summary, "tokens", 0),
		 json_number_value(json_object_get(summary, "cost_usd")));
	add_duration(out, json_number_value(json_object_get(summary, "wall_seconds")));
	buf_addstr(out, " (tasks ");
	add_duration(out, json_number_value(json_object_get(summary, "task_seconds")));
	buf_addstr(out, ")\n");
	add_top(out, "slowest", json_object_get(summary, "slowest"), "seconds");
	{
		const json_t *me = json_object_get(summary, "most_expensive");
		const json_t *first = json_array_get(me, 0);

		add_top(out, "most expensive", me,
			first && json_object_get(first, "cost_usd") ? "cost_usd" : "tokens");
	}
}

/* A results file, or a folder's results.jsonl and those of its shard-K folders. */
static void results_files(struct strvec *out, const char *dir)
{
	struct dirent **names;
	char *p;
	int n, i;

	if (!fsutil_is_dir(dir)) {
		if (fsutil_exists(dir))
			strvec_push(out, dir);
		return;
	}
	p = xstrfmt("%s/results.jsonl", dir);
	if (fsutil_exists(p))
		strvec_push(out, p);
	free(p);
	n = scandir(dir, &names, NULL, alphasort);
	for (i = 0; i < n; i++) {
		if (!strncmp(names[i]->d_name, "shard-", 6)) {
			p = xstrfmt("%s/%s/results.jsonl", dir, names[i]->d_name);
			if (fsutil_exists(p))
				strvec_push(out, p);
			free(p);
		}
		free(names[i]);
	}
	if (n >= 0)
		free(names);
}

static int by_id(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;

	return strcmp(jsonx_str(x, "id"), jsonx_str(y, "id"));
}

int batch_collect(json_t **out, const char *const *dirs, size_t n)
{
	json_t *all = json_array(), *sorted;
	json_t **v;
	size_t i, nr;

	for (i = 0; i < n; i++) {
		json_t *arr = json_array(), *l;
		struct strvec files = STRVEC_INIT;
		size_t dropped = 0, k;
		int ret = 0;

		results_files(&files, dirs[i]);
		if (!files.nr)
			ret = err_set(FX_ENOTFOUND, "no results.jsonl in %s (nor in its shard-K folders)",
				      dirs[i]);
		for (k = 0; !ret && k < files.nr; k++)
			ret = read_lines(arr, files.v[k], &dropped, 1, NULL);
		strvec_clear(&files);
		if (ret) {
			json_decref(arr);
			json_decref(all);
			return ret;
		}
		json_array_foreach(arr, k, l) {
			long at = find_id(all, jsonx_str(l, "id"));

			if (at < 0)
				json_array_append(all, l);
			else if (!is_skipped(l) || is_skipped(json_array_get(all, (size_t)at)))
				json_array_set(all, (size_t)at, l);
		}
		json_decref(arr);
	}
	nr = json_array_size(all);
	v = xcalloc(nr + 1, sizeof(*v));
	for (i = 0; i < nr; i++)
		v[i] = json_array_get(all, i);
	qsort(v, nr, sizeof(*v), by_id);
	sorted = json_array();
	for (i = 0; i < nr; i++)
		json_array_append(sorted, v[i]);
	free(v);
	json_decref(all);
	*out = sorted;
	return 0;
}

int batch_predictions_write(const char *path, const json_t *results, const char *model)
{
	json_t *arr = json_array();
	const json_t *l;
	struct buf b = BUF_INIT;
	size_t i, n = strlen(path);
	int lines = n > 6 && !strcmp(path + n - 6, ".jsonl"), ret;

	json_array_foreach(results, i, l) {
		const char *st = jsonx_str(l, "status"), *patch = jsonx_str(l, "model_patch");
		json_t *p;

		if (st && !strcmp(st, "SKIPPED"))
			continue;
		p = json_pack("{s:s, s:s, s:s}", "instance_id", jsonx_str(l, "id"),
			      "model_name_or_path", model,
			      "model_patch", st && !strcmp(st, "PASS") && patch ? patch : "");
		if (lines) {
			jsonx_dump(&b, p, JSON_COMPACT);
			buf_addch(&b, '\n');
			json_decref(p);
		} else {
			json_array_append_new(arr, p);
		}
	}
	if (!lines) {
		jsonx_dump(&b, arr, JSON_INDENT(2));
		buf_addch(&b, '\n');
	}
	ret = fsutil_write_atomic(path, b.buf, b.len, 0644);
	json_decref(arr);
	buf_release(&b);
	return ret < 0 ? err_prefix(ret, "writing %s", path) : 0;
}
