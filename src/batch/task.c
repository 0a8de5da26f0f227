/*
 * Reading a task set (see task.h).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/path.h"
#include "batch/task.h"

/* a tasks file bigger than this is refused rather than read whole */
#define TASKS_MAX (256u << 20)

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return h;
}

unsigned batch_shard_of(const char *id, unsigned n)
{
	return n ? (unsigned)(fnv1a(id) % n) : 0;
}

int batch_shard_parse(unsigned *k, unsigned *n, const char *s)
{
	const char *text = s;
	char *end;
	unsigned long a, b;

	errno = 0;
	a = strtoul(s, &end, 10);
	if (end == s || *end != '/' || errno || *s == '-')
		return err_set(FX_EINVAL, "shard '%s': expected K/N", text);
	s = end + 1;
	b = strtoul(s, &end, 10);
	if (end == s || *end || errno || *s == '-' || !b || a >= b || b > 100000)
		return err_set(FX_EINVAL, "shard '%s': expected K/N with 0 <= K < N", text);
	*k = (unsigned)a;
	*n = (unsigned)b;
	return 0;
}

char *batch_config_text(const json_t *value)
{
	struct buf b = BUF_INIT;

	if (json_is_string(value))
		return xstrdup(json_string_value(value));
	/* a JSON array of strings, a number or a boolean is TOML as it is */
	jsonx_dump(&b, value, JSON_COMPACT | JSON_ENCODE_ANY);
	return buf_detach(&b, NULL);
}

static void task_release(struct batch_task *t)
{
	free(t->id);
	free(t->key);
	free(t->repo);
	free(t->url);
	free(t->commit);
	free(t->request);
	json_decref(t->test_command);
	json_decref(t->config);
	strvec_clear(&t->must_pass);
}

void batch_tasks_release(struct batch_tasks *t)
{
	size_t i;

	for (i = 0; i < t->nr; i++)
		task_release(&t->v[i]);
	free(t->v);
	t->v = NULL;
	t->nr = t->alloc = 0;
}

/*
 * The id as a file name. Ids that had to change get their hash added, so
 * "a/b" and "a_b" stay two folders.
 */
static char *task_key(const char *id)
{
	struct buf b = BUF_INIT;
	const char *p;
	int changed = 0;

	for (p = id; *p && b.len < 100; p++) {
		unsigned char c = (unsigned char)*p;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || (c == '.' && p != id)) {
			buf_addch(&b, c);
		} else {
			buf_addch(&b, '_');
			changed = 1;
		}
	}
	if (changed || *p)
		buf_addf(&b, "-%08llx", (unsigned long long)(fnv1a(id) & 0xffffffffULL));
	return buf_detach(&b, NULL);
}

/* FAIL_TO_PASS: an array of names, or a string holding one (SWE-bench's data sets). */
static int add_tests(struct strvec *out, const json_t *v, const char *what)
{
	json_t *parsed = NULL, *t;
	size_t i;
	int ret = 0;

	if (!v || json_is_null(v))
		return 0;
	if (json_is_string(v)) {
		const char *s = json_string_value(v);

		if (!*s)
			return 0;
		if (jsonx_parse(&parsed, s, strlen(s), what) < 0)
			return FX_EPARSE;
		v = parsed;
	}
	if (!json_is_array(v)) {
		ret = err_set(FX_EPARSE, "%s: expected a list of test names", what);
		goto out;
	}
	json_array_foreach(v, i, t) {
		if (!json_is_string(t)) {
			ret = err_set(FX_EPARSE, "%s: expected a list of test names", what);
			goto out;
		}
		if (!*json_string_value(t) || *json_string_value(t) == '-' ||
		    strchr(json_string_value(t), '\n')) {
			ret = err_set(FX_EPARSE, "%s: '%s' is not a test id", what,
				      json_string_value(t));
			goto out;
		}
		strvec_push(out, json_string_value(t));
	}
out:
	json_decref(parsed);
	return ret;
}

static int is_url(const char *s)
{
	return strstr(s, "://") || !strncmp(s, "git@", 4) || !strncmp(s, "file:", 5);
}

static char *swebench_url(const char *tmpl, const char *repo)
{
	struct buf b = BUF_INIT;
	const char *p = tmpl, *q;

	while ((q = strstr(p, "{repo}"))) {
		buf_add(&b, p, (size_t)(q - p));
		buf_addstr(&b, repo);
		p = q + 6;
	}
	buf_addstr(&b, p);
	return buf_detach(&b, NULL);
}

static int parse_line(struct batch_task *t, const json_t *o, const char *base_dir,
		      const char *tmpl)
{
	const char *id, *repo, *commit, *request;
	const json_t *tc;

	t->swebench = json_object_get(o, "instance_id") != NULL;
	id = jsonx_str(o, t->swebench ? "instance_id" : "id");
	repo = jsonx_str(o, "repo");
	commit = jsonx_str(o, t->swebench ? "base_commit" : "commit");
	request = jsonx_str(o, t->swebench ? "problem_statement" : "request");
	if (!id || !*id)
		return err_set(FX_EPARSE, "no \"%s\"", t->swebench ? "instance_id" : "id");
	if (!repo || !*repo)
		return err_set(FX_EPARSE, "task %s: no \"repo\"", id);
	if (!commit || !*commit)
		return err_set(FX_EPARSE, "task %s: no \"%s\"", id, t->swebench ? "base_commit" : "commit");
	if (!request || !*request)
		return err_set(FX_EPARSE, "task %s: no \"%s\"", id,
			       t->swebench ? "problem_statement" : "request");
	if (commit[0] == '-')
		return err_set(FX_EPARSE, "task %s: bad commit '%s'", id, commit);
	t->id = xstrdup(id);
	t->key = task_key(id);
	t->repo = xstrdup(repo);
	t->commit = xstrdup(commit);
	if (t->swebench) {
		if (add_tests(&t->must_pass, json_object_get(o, "FAIL_TO_PASS"), "FAIL_TO_PASS") < 0)
			return err_prefix(FX_EPARSE, "task %s", id);
		t->fail_to_pass = t->must_pass.nr;
		if (add_tests(&t->must_pass, json_object_get(o, "PASS_TO_PASS"), "PASS_TO_PASS") < 0)
			return err_prefix(FX_EPARSE, "task %s", id);
		t->url = swebench_url(tmpl, repo);
	} else if (is_url(repo)) {
		t->url = xstrdup(repo);
	} else {
		struct buf p = BUF_INIT;
		char *abs;

		if (repo[0] == '/')
			buf_addstr(&p, repo);
		else
			path_join(&p, base_dir, repo);
		abs = realpath(p.buf, NULL);
		if (!abs) {
			err_set_errno(FX_EPARSE, "task %s: repo '%s'", id, p.buf);
			buf_release(&p);
			return FX_EPARSE;
		}
		buf_release(&p);
		t->url = abs;
	}
	if (t->url[0] == '-')
		return err_set(FX_EPARSE, "task %s: bad repo '%s'", id, t->url);
	if (t->must_pass.nr) {
		struct buf r = BUF_INIT;
		size_t i;

		buf_addstr(&r, request);
		buf_addstr(&r, "\n\nThe change is done when these tests pass:\n");
		for (i = 0; i < t->must_pass.nr; i++)
			buf_addf(&r, "- %s\n", t->must_pass.v[i]);
		t->request = buf_detach(&r, NULL);
	} else {
		t->request = xstrdup(request);
	}
	tc = json_object_get(o, "test_command");
	if (json_is_string(tc)) {
		t->test_command = json_pack("[s, s, s]", "sh", "-c", json_string_value(tc));
	} else if (json_is_array(tc) && json_array_size(tc)) {
		size_t i;
		const json_t *a;

		json_array_foreach(tc, i, a)
			if (!json_is_string(a))
				return err_set(FX_EPARSE, "task %s: test_command: expected strings", id);
		t->test_command = json_incref((json_t *)tc);
	} else if (tc && !json_is_null(tc)) {
		return err_set(FX_EPARSE, "task %s: test_command: expected an argv array or a string", id);
	}
	if (json_is_object(json_object_get(o, "config"))) {
		const char *k;
		const json_t *v;

		json_object_foreach((json_t *)json_object_get(o, "config"), k, v)
			if (!strchr(k, '.') || json_is_object(v) || json_is_null(v))
				return err_set(FX_EPARSE, "task %s: config: '%s' is not a "
					       "\"section.key\": value", id, k);
		t->config = json_incref(json_object_get(o, "config"));
	} else if (json_object_get(o, "config") && !json_is_null(json_object_get(o, "config"))) {
		return err_set(FX_EPARSE, "task %s: config: expected an object", id);
	}
	return 0;
}

int batch_tasks_load(struct batch_tasks *out, const char *path, const char *url_template)
{
	struct buf data = BUF_INIT, dir = BUF_INIT;
	size_t pos = 0, line = 0, first = out->nr;
	char *abs;
	int ret = 0;

	if (fsutil_read_file(&data, path, TASKS_MAX) < 0) {
		buf_release(&data);
		return err_prefix(FX_ENOTFOUND, "tasks file %s", path);
	}
	abs = realpath(path, NULL);
	path_dirname(&dir, abs ? abs : path);
	free(abs);
	while (pos < data.len && !ret) {
		const char *s = data.buf + pos, *nl = memchr(s, '\n', data.len - pos);
		size_t n = nl ? (size_t)(nl - s) : data.len - pos, skip = strspn(s, " \t\r");
		json_t *o = NULL;
		struct batch_task t;
		size_t i;

		pos += n + 1;
		line++;
		if (skip >= n || s[skip] == '#')
			continue;
		if (jsonx_parse(&o, s, n, "task") < 0 || !json_is_object(o)) {
			if (o)
				err_set(FX_EPARSE, "expected a JSON object");
			ret = err_prefix(FX_EPARSE, "%s:%zu", path, line);
			json_decref(o);
			break;
		}
		memset(&t, 0, sizeof(t));
		strvec_init(&t.must_pass);
		t.line = line;
		ret = parse_line(&t, o, dir.buf, url_template ? url_template : BATCH_URL_TEMPLATE);
		json_decref(o);
		for (i = first; !ret && i < out->nr; i++)
			if (!strcmp(out->v[i].id, t.id) || !strcmp(out->v[i].key, t.key))
				ret = err_set(FX_EPARSE, "task id '%s' repeats line %zu", t.id,
					      out->v[i].line);
		if (ret) {
			task_release(&t);
			err_prefix(ret, "%s:%zu", path, line);
			break;
		}
		if (out->nr == out->alloc) {
			out->alloc = out->alloc ? 2 * out->alloc : 16;
			out->v = xrealloc(out->v, out->alloc * sizeof(*out->v));
		}
		out->v[out->nr++] = t;
	}
	buf_release(&data);
	buf_release(&dir);
	return ret;
}
