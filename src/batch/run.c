/*
 * The scheduler of a batch (see run.h).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/jsonx.h"
#include "batch/mustpass.h"
#include "batch/proc.h"
#include "batch/results.h"
#include "batch/run.h"
#include "batch/worktree.h"

/* how often the scheduler looks at its children, wall times and flags */
#define TICK_NS 50000000L
/* a task's log read back for its refusals, at most */
#define LOG_MAX (64u << 20)

struct slot {
	const struct batch_task *t;
	struct proc proc;	/* the task's `forgex run`; proc.pid 0: the slot is free */
	char *wt, *mirror, *log, *errlog;
	double started, term_at;
	double setup;		/* seconds of mirror and worktree before the run started */
	int term_sent, killed, timed_out, interrupted;
};

struct sched {
	const struct batch_opts *o;
	char *results_path, *logs, *runs, *work;
	json_t *results;	/* this shard's finished lines */
	struct slot *slots;
	size_t running, ran;
	double cost;		/* of every finished task of the shard */
	double began;
	int abort_sent;
};

static void emit(struct sched *s, json_t *ev)
{
	if (s->o->on_event)
		s->o->on_event(s->o->data, ev);
	json_decref(ev);
}

static void warn(struct sched *s, const char *what)
{
	emit(s, json_pack("{s:s, s:s}", "type", "warning", "message", what));
}

char *batch_memory_share(const char *limit, unsigned jobs)
{
	char *end;
	double v;

	if (!limit || !*limit || !jobs)
		return NULL;
	errno = 0;
	v = strtod(limit, &end);
	if (end == limit || errno || v <= 0)
		return NULL;
	switch (tolower((unsigned char)*end)) {
	case '\0': break;
	case 'k': v *= 1024; end++; break;
	case 'm': v *= 1024.0 * 1024; end++; break;
	case 'g': v *= 1024.0 * 1024 * 1024; end++; break;
	case 't': v *= 1024.0 * 1024 * 1024 * 1024; end++; break;
	case 'b': break;
	default: return NULL;
	}
	if (*end == 'i')
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	if (*end)
		return NULL;
	return xstrfmt("%.0f", v / jobs);
}

static int in_shard(const struct batch_opts *o, const struct batch_task *t)
{
	return !o->shard_n || batch_shard_of(t->id, o->shard_n) == o->shard_k;
}

static const struct batch_task *task_of(const struct batch_opts *o, const char *id)
{
	size_t i;

	for (i = 0; i < o->tasks->nr; i++)
		if (!strcmp(o->tasks->v[i].id, id))
			return &o->tasks->v[i];
	return NULL;
}

static int has_result(const json_t *results, const char *id)
{
	size_t i;
	const json_t *l;

	json_array_foreach(results, i, l)
		if (!strcmp(jsonx_str(l, "id"), id))
			return 1;
	return 0;
}

/* The one run folder a task's fresh worktree holds (caller frees), or NULL. */
static char *run_folder(const char *wt, char **id)
{
	char *runs = xstrfmt("%s/.forgex/runs", wt), *found = NULL;
	DIR *d = opendir(runs);
	struct dirent *e;

	*id = NULL;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		free(found);
		free(*id);
		found = xstrfmt("%s/%s", runs, e->d_name);
		*id = xstrdup(e->d_name);
	}
	if (d)
		closedir(d);
	free(runs);
	return found;
}

static json_int_t count_refused(const char *log)
{
	struct buf b = BUF_INIT;
	size_t pos = 0;
	json_int_t n = 0;

	if (fsutil_read_file(&b, log, LOG_MAX) < 0) {
		err_clear();
		buf_release(&b);
		return 0;
	}
	while (pos < b.len) {
		const char *s = b.buf + pos, *nl = memchr(s, '\n', b.len - pos);
		size_t len = nl ? (size_t)(nl - s) : b.len - pos;
		json_t *ev = NULL;

		pos += len + 1;
		if (!memmem(s, len, "\"refused\"", 9) || jsonx_parse(&ev, s, len, "event") < 0) {
			err_clear();
			continue;
		}
		n += jsonx_str(ev, "type") && !strcmp(jsonx_str(ev, "type"), "tool_result") &&
		     jsonx_str(ev, "status") && !strcmp(jsonx_str(ev, "status"), "refused");
		json_decref(ev);
	}
	buf_release(&b);
	return n;
}

/* The last line of the task's stderr, for a task that ended without a summary. */
static char *last_error_line(const char *path)
{
	struct buf b = BUF_INIT;
	const char *l;
	char *out;

	if (fsutil_read_file(&b, path, 1 << 20) < 0) {
		err_clear();
		buf_release(&b);
		return NULL;
	}
	buf_rtrim(&b);
	l = strrchr(b.buf, '\n');
	out = b.len ? xstrdup(l ? l + 1 : b.buf) : NULL;
	buf_release(&b);
	return out;
}

static json_t *result_line(const struct batch_task *t, const char *status)
{
	return json_pack("{s:s, s:s, s:s, s:s, s:n, s:n, s:n, s:n, s:n, s:[], s:s, s:I, s:f, s:f, "
			 "s:I, s:n}", "id", t->id, "status", status, "repo", t->repo, "commit",
			 t->commit, "run_id", "exit_code", "tests_before", "tests_after", "tests",
			 "files_changed", "diffstat", "", "tokens", (json_int_t)0, "cost_usd", 0.0,
			 "seconds", 0.0, "refused", (json_int_t)0, "error");
}

/* Write `line` (taken) for task `t`: to results.jsonl, then to the shard's set. */
static int record(struct sched *s, json_t *line)
{
	json_t *ev;
	int ret = batch_results_append(s->results_path, line);

	if (ret < 0) {
		json_decref(line);
		return ret;
	}
	s->cost += json_number_value(json_object_get(line, "cost_usd"));
	s->ran++;
	json_array_append(s->results, line);
	ev = json_deep_copy(line);
	json_object_del(ev, "model_patch");
	emit(s, json_pack("{s:s, s:o, s:I, s:I}", "type", "task_end", "result", ev, "running",
			  (json_int_t)s->running, "done", (json_int_t)json_array_size(s->results)));
	json_decref(line);
	return 0;
}

static void slot_release(struct slot *sl)
{
	proc_release(&sl->proc);
	free(sl->wt);
	free(sl->mirror);
	free(sl->log);
	free(sl->errlog);
	memset(sl, 0, sizeof(*sl));
	proc_init(&sl->proc);
}

static void remove_tree(struct sched *s, struct slot *sl)
{
	if (s->o->keep || !sl->mirror)
		return;
	if (batch_worktree_remove(sl->mirror, sl->wt) < 0) {
		char *w = xstrfmt("task %s: %s", sl->t->id, err_last());

		warn(s, w);
		free(w);
		err_clear();
	}
}

/* A task's child ended with `code` (as proc_finish() has it): make its line and clean up. */
static int finish(struct sched *s, struct slot *sl, int code)
{
	int ret = 0;
	double ended = clk_mono_s(), patch_s = 0;
	char *rid = NULL, *dir = run_folder(sl->wt, &rid), *sum_path;
	json_t *sum = NULL, *line;
	const char *status;

	if (sl->timed_out)
		status = "TIMEOUT";
	else if (sl->interrupted && (code == 130 || code == 128 + SIGINT))
		status = NULL;	/* stopped by the user: not finished, run again next time */
	else
		status = code == 0 ? "PASS" : code == 1 ? "FAIL" : "ERROR";
	if (!status) {
		remove_tree(s, sl);
		free(dir);
		free(rid);
		return 0;
	}
	line = result_line(sl->t, status);
	jsonx_set(line, "exit_code", json_integer(code));
	jsonx_set(line, "seconds", json_real(ended - sl->started));
	jsonx_set(line, "refused", json_integer(count_refused(sl->log)));
	if (sl->t->must_pass.nr)
		jsonx_set(line, "must_pass", batch_must_pass(sl->t, sl->log));
	if (dir) {
		sum_path = xstrfmt("%s/summary.json", dir);
		if (jsonx_load_file(&sum, sum_path, 1 << 24) < 0)
			err_clear();
		free(sum_path);
		jsonx_set(line, "run_id", jsonx_string(rid));
	}
	if (sum) {
		static const char *const copied[] = { "tests_before", "tests_after", "tests", "tokens",
						      "cost_usd" };
		size_t i;

		for (i = 0; i < sizeof(copied) / sizeof(copied[0]); i++)
			if (json_object_get(sum, copied[i]))
				jsonx_set(line, copied[i], json_incref(json_object_get(sum, copied[i])));
		if (json_is_array(json_object_get(sum, "paths")))
			jsonx_set(line, "files_changed", json_incref(json_object_get(sum, "paths")));
		if (jsonx_str(sum, "files_changed"))
			jsonx_set(line, "diffstat", jsonx_string(jsonx_str(sum, "files_changed")));
		if (strcmp(status, "PASS") && jsonx_str(sum, "reason") && *jsonx_str(sum, "reason"))
			jsonx_set(line, "error", jsonx_string(jsonx_str(sum, "reason")));
	}
	if (sl->timed_out) {
		char *why = xstrfmt("still running after its wall time of %lds", s->o->wall_seconds);

		jsonx_set(line, "error", jsonx_string(why));
		free(why);
	} else if (strcmp(status, "PASS") && json_is_null(json_object_get(line, "error"))) {
		char *e = last_error_line(sl->errlog);

		if (!e)
			e = xstrfmt("forgex run exited with status %d", code);
		jsonx_set(line, "error", jsonx_string(e));
		free(e);
	}
	if (!strcmp(status, "PASS")) {
		struct buf patch = BUF_INIT;
		double t0 = clk_mono_s();

		if (batch_worktree_diff(&patch, sl->wt, sl->t->commit) == 0)
			jsonx_set(line, "model_patch", jsonx_stringn_lossy(patch.buf, patch.len));
		else
			err_clear();
		buf_release(&patch);
		patch_s = clk_mono_s() - t0;
		jsonx_set(line, "patch_seconds", json_real(patch_s));
	}
	if (dir && !s->o->keep) {
		char *dst = xstrfmt("%s/%s", s->runs, sl->t->key);

		fsutil_remove_tree(dst);
		if (rename(dir, dst) < 0) {
			const char *cp[] = { "cp", "-a", "--", dir, dst, NULL };

			if (batch_command(NULL, cp) < 0)
				err_clear();
		}
		jsonx_set(line, "run_dir", jsonx_string(dst));
		free(dst);
	} else if (dir) {
		jsonx_set(line, "run_dir", jsonx_string(dir));
	}
	json_decref(sum);
	free(dir);
	free(rid);
	remove_tree(s, sl);
	/* forgex's own cost of the task's tree, the run and the patch excluded (bench/batch.sh) */
	jsonx_set(line, "overhead_seconds", json_real(sl->setup + clk_mono_s() - ended - patch_s));
	if (record(s, line) < 0)
		ret = FX_EOS;
	return ret;
}

static void add_flag(struct strvec *argv, const char *key, const char *value)
{
	strvec_push(argv, "-c");
	strvec_pushf(argv, "%s=%s", key, value);
}

/* Set up task `t`'s worktree and start its run in slot `sl`. */
static int start(struct sched *s, struct slot *sl, const struct batch_task *t)
{
	const struct batch_opts *o = s->o;
	struct strvec argv = STRVEC_INIT;
	char *share = NULL;
	size_t i;
	int ret;

	memset(sl, 0, sizeof(*sl));
	proc_init(&sl->proc);
	sl->t = t;
	sl->started = clk_mono_s();
	sl->wt = xstrfmt("%s/%s", s->work, t->key);
	sl->log = xstrfmt("%s/%s.jsonl", s->logs, t->key);
	sl->errlog = xstrfmt("%s/%s.stderr", s->logs, t->key);
	/* the commit is looked for (and fetched) only when the worktree cannot be made */
	ret = batch_mirror(&sl->mirror, o->cache, t->url, NULL);
	if (!ret && batch_worktree_add(sl->mirror, sl->wt, t->commit) < 0) {
		char *again = NULL;

		err_clear();
		ret = batch_mirror(&again, o->cache, t->url, t->commit);
		free(again);
		if (!ret)
			ret = batch_worktree_add(sl->mirror, sl->wt, t->commit);
	}
	sl->setup = clk_mono_s() - sl->started;
	if (ret < 0) {
		json_t *line = result_line(t, "ERROR");

		jsonx_set(line, "error", jsonx_string(err_last()));
		jsonx_set(line, "exit_code", json_integer(-1));
		err_clear();
		/* a worktree half made, or none: nothing of it stays */
		if (sl->mirror)
			batch_worktree_remove(sl->mirror, sl->wt);
		err_clear();
		slot_release(sl);
		return record(s, line);
	}
	strvec_push(&argv, o->forgex);
	strvec_push(&argv, "-C");
	strvec_push(&argv, sl->wt);
	strvec_push(&argv, "-q");
	for (i = 0; o->flags && i < o->flags->nr; i++) {
		strvec_push(&argv, "-c");
		strvec_push(&argv, o->flags->v[i]);
	}
	if (!t->config || !json_object_get(t->config, "sandbox.memory_limit"))
		share = batch_memory_share(o->memory_limit, o->jobs);
	if (share)
		add_flag(&argv, "sandbox.memory_limit", share);
	if (o->max_tokens > 0)
		strvec_push(&argv, "-c"), strvec_pushf(&argv, "budget.max_tokens=%ld", o->max_tokens);
	if (o->max_cost > 0)
		strvec_push(&argv, "-c"), strvec_pushf(&argv, "budget.max_cost_usd=%g", o->max_cost);
	if (t->test_command) {
		char *tc = batch_config_text(t->test_command);

		add_flag(&argv, "pipeline.test_command", tc);
		free(tc);
	}
	if (t->must_pass.nr) {
		json_t *ids = jsonx_from_strvec(&t->must_pass);
		char *text = batch_config_text(ids);

		/* the run's gate narrows its tests to these and requires every one to pass */
		add_flag(&argv, "pipeline.must_pass", text);
		free(text);
		json_decref(ids);
	}
	if (t->config) {
		const char *k;
		json_t *v;

		json_object_foreach(t->config, k, v) {
			char *text = batch_config_text(v);

			add_flag(&argv, k, text);
			free(text);
		}
	}
	strvec_push(&argv, "run");
	strvec_push(&argv, "--json");
	strvec_push(&argv, "--no-wait");
	strvec_push(&argv, "--");
	strvec_push(&argv, t->request);
	ret = batch_spawn(&sl->proc, (const char *const *)argv.v, sl->log, sl->errlog);
	strvec_clear(&argv);
	free(share);
	if (ret < 0) {
		json_t *line = result_line(t, "ERROR");

		jsonx_set(line, "error", jsonx_string(err_last()));
		err_clear();
		remove_tree(s, sl);
		slot_release(sl);
		return record(s, line);
	}
	s->running++;
	emit(s, json_pack("{s:s, s:s, s:I}", "type", "task_start", "id", t->id, "running",
			  (json_int_t)s->running));
	return 0;
}

/* Wall times, Ctrl-C twice: signals to the running tasks' groups. */
static void police(struct sched *s)
{
	const struct batch_opts *o = s->o;
	double t = clk_mono_s();
	size_t i;
	int abort = o->abort && *o->abort;

	for (i = 0; i < o->jobs; i++) {
		struct slot *sl = &s->slots[i];

		if (!sl->proc.pid)
			continue;
		if (abort && !s->abort_sent && !sl->timed_out) {
			proc_kill(&sl->proc, SIGINT);
			sl->interrupted = 1;
		}
		if (!sl->term_sent && o->wall_seconds > 0 && t - sl->started > (double)o->wall_seconds) {
			/* forgex run ends on SIGTERM as on Ctrl-C: the tree is put back */
			proc_kill(&sl->proc, SIGTERM);
			sl->term_sent = 1;
			sl->timed_out = 1;
			sl->term_at = t;
		} else if (sl->term_sent && !sl->killed && t - sl->term_at > (double)o->grace_seconds) {
			proc_kill(&sl->proc, SIGKILL);
			sl->killed = 1;
		}
	}
	if (abort)
		s->abort_sent = 1;
}

/* Reap every child that ended; < 0 when a result could not be written. */
static int reap(struct sched *s)
{
	size_t i;
	int ret = 0;

	for (i = 0; i < s->o->jobs; i++) {
		struct slot *sl = &s->slots[i];
		int code;

		if (!sl->proc.pid || !proc_wait(&sl->proc, 0))
			continue;
		/* reaped: its status at once */
		code = proc_finish(&sl->proc);
		/* whatever the run started in its group goes with it, before its tree does */
		proc_release(&sl->proc);
		s->running--;
		if (finish(s, sl, code) < 0 && !ret)
			ret = FX_EOS;
		slot_release(sl);
	}
	return ret;
}

static struct slot *free_slot(struct sched *s)
{
	size_t i;

	for (i = 0; i < s->o->jobs; i++)
		if (!s->slots[i].proc.pid)
			return &s->slots[i];
	return NULL;
}

static char *make_abs(const char *dir)
{
	char *abs;

	if (fsutil_mkdir_p(dir, 0755) < 0) {
		err_prefix(FX_EOS, "making %s", dir);
		return NULL;
	}
	abs = realpath(dir, NULL);
	if (!abs)
		err_set_errno(FX_EOS, "%s", dir);
	return abs;
}

static int absolute_dirs(struct sched *s)
{
	char *out = make_abs(s->o->out_dir);

	if (!out)
		return FX_EOS;
	s->results_path = xstrfmt("%s/results.jsonl", out);
	s->logs = xstrfmt("%s/logs", out);
	s->runs = xstrfmt("%s/runs", out);
	s->work = s->o->work_dir ? make_abs(s->o->work_dir) : xstrfmt("%s/work", out);
	free(out);
	if (!s->work)
		return FX_EOS;
	if (fsutil_mkdir_p(s->logs, 0755) < 0 || fsutil_mkdir_p(s->runs, 0755) < 0 ||
	    fsutil_mkdir_p(s->work, 0755) < 0)
		return err_prefix(FX_EOS, "making the folders of %s", s->o->out_dir);
	return 0;
}

void batch_report_release(struct batch_report *r)
{
	json_decref(r->results);
	json_decref(r->summary);
	memset(r, 0, sizeof(*r));
}

int batch_run(struct batch_report *out, const struct batch_opts *o)
{
	struct sched s;
	json_t *loaded = NULL, *l;
	const struct batch_task **todo;
	size_t i, n_todo = 0, next = 0, total = 0, removed = 0;
	int rewrote = 0, ret = 0, spent = 0;

	memset(&s, 0, sizeof(s));
	s.o = o;
	s.began = clk_mono_s();
	s.results = json_array();
	s.slots = xcalloc(o->jobs ? o->jobs : 1, sizeof(*s.slots));
	todo = xcalloc(o->tasks->nr + 1, sizeof(*todo));
	/* absolute: git and each task's forgex run in other folders */
	if ((ret = absolute_dirs(&s)) < 0)
		goto out;
	if ((ret = batch_results_load(&loaded, s.results_path, o->retry, &rewrote)) < 0)
		goto out;
	if (rewrote)
		warn(&s, "results.jsonl had lines of tasks to run again (cut by a kill, skipped, "
		     "or of a status to retry): dropped, those tasks run again");
	{
		struct strvec finished = STRVEC_INIT;

		/* a finished task's worktree is there only when kept (--keep): it stays */
		json_array_foreach(loaded, i, l) {
			const struct batch_task *t = task_of(o, jsonx_str(l, "id"));

			if (t)
				strvec_push(&finished, t->key);
		}
		if (batch_worktree_sweep(s.work, &finished, &removed) < 0) {
			warn(&s, err_last());
			err_clear();
		}
		strvec_clear(&finished);
	}
	if (removed) {
		char *w = xstrfmt("removed %zu worktree%s a stopped batch left behind; %s run again",
				  removed, removed == 1 ? "" : "s", removed == 1 ? "its task is" :
				  "their tasks are");

		warn(&s, w);
		free(w);
	}
	json_array_foreach(loaded, i, l) {
		const struct batch_task *t = task_of(o, jsonx_str(l, "id"));

		if (t && in_shard(o, t)) {
			json_array_append(s.results, l);
			s.cost += json_number_value(json_object_get(l, "cost_usd"));
		}
	}
	for (i = 0; i < o->tasks->nr; i++) {
		const struct batch_task *t = &o->tasks->v[i];

		if (!in_shard(o, t))
			continue;
		total++;
		if (!has_result(s.results, t->id))
			todo[n_todo++] = t;
	}
	{
		json_t *ev = json_pack("{s:s, s:I, s:I, s:I, s:I}", "type", "batch_start", "tasks",
				       (json_int_t)total, "todo", (json_int_t)n_todo, "done",
				       (json_int_t)(total - n_todo), "jobs", (json_int_t)o->jobs);

		if (o->shard_n)
			jsonx_set(ev, "shard", json_pack("{s:I, s:I}", "k", (json_int_t)o->shard_k,
							  "n", (json_int_t)o->shard_n));
		emit(&s, ev);
	}
	while (!ret && (s.running || next < n_todo)) {
		struct slot *sl;
		int stopping = (o->stop && *o->stop) || (o->abort && *o->abort);

		spent = o->max_cost_total > 0 && s.cost >= o->max_cost_total;
		if (!stopping && !spent && next < n_todo && (sl = free_slot(&s))) {
			ret = start(&s, sl, todo[next++]);
			continue;
		}
		if (!s.running && (stopping || spent))
			break;
		{
			struct timespec ts = { 0, TICK_NS };

			nanosleep(&ts, NULL);
		}
		police(&s);
		ret = reap(&s);
	}
	/* a result could not be written: stop the others as Ctrl-C would */
	if (ret < 0) {
		size_t k;

		for (k = 0; k < o->jobs; k++) {
			struct slot *sl = &s.slots[k];

			if (!sl->proc.pid)
				continue;
			proc_kill(&sl->proc, SIGINT);
			proc_wait(&sl->proc, 1);
			/* SIGKILL to what is left of its group, before its tree goes */
			proc_release(&sl->proc);
			if (sl->mirror && !o->keep)
				batch_worktree_remove(sl->mirror, sl->wt);
			slot_release(sl);
		}
		goto out;
	}
	if (spent && !((o->stop && *o->stop) || (o->abort && *o->abort))) {
		for (; next < n_todo; next++) {
			json_t *line = result_line(todo[next], "SKIPPED");

			jsonx_set(line, "error", jsonx_string("the batch's max_cost was spent"));
			if ((ret = record(&s, line)) < 0)
				goto out;
		}
	}
	out->interrupted = next < n_todo || (o->abort && *o->abort);
	out->total = total;
	out->ran = s.ran;
	out->summary = batch_summary(s.results, total, clk_mono_s() - s.began);
	out->left = (size_t)jsonx_int(out->summary, "left", 0);
	{
		struct buf b = BUF_INIT;
		char *p = xstrfmt("%s/summary.json", o->out_dir);

		jsonx_dump(&b, out->summary, JSON_INDENT(2));
		buf_addch(&b, '\n');
		if (fsutil_write_atomic(p, b.buf, b.len, 0644) < 0)
			ret = err_prefix(FX_EOS, "writing %s", p);
		buf_release(&b);
		free(p);
	}
	out->results = json_incref(s.results);
	emit(&s, json_pack("{s:s, s:O, s:b}", "type", "batch_end", "summary", out->summary,
			   "interrupted", out->interrupted));
out:
	json_decref(loaded);
	json_decref(s.results);
	free(s.results_path);
	free(s.logs);
	free(s.runs);
	free(s.work);
	free(s.slots);
	free(todo);
	return ret;
}
