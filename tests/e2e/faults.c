/*
 * Faults at every journal step of a scripted run (issue 24): the real
 * forgex against build/mockllm, with the shim build/tests/faults/
 * killshim.so preloaded into forgex-core (tests/faults/killshim.c). A
 * first run counts the steps — each write, create, rename, unlink, mkdir
 * and symlink in the workspace, the journal's records and saved copies
 * among them — of a run that goes through the Architect, the Builder, the
 * Expert, a review that fails, the repair, a second failing review and
 * the rollback. Then for each step N and each fault:
 *
 *   kill   SIGKILL before step N (after step N-1);
 *   full   the disk is filled before step N (a tmpfs of its own), and
 *          room is made again once forgex has ended;
 *   rofs   from step N on the workspace cannot be changed (EROFS).
 *
 * and, once with `forgex resume` then `forgex undo`, once with `forgex
 * undo` alone, the tree must be byte for byte what it was before the run:
 * contents, modes, links, the folder the run removed, none of the
 * folders and files it made, nothing of forgex's outside .forgex.
 *
 * `make test` runs a spread of the steps; `make faults` (FX_FAULTS=all)
 * runs every one; FX_FAULTS=N,M those steps, FX_FAULTS_ONLY=kill (full,
 * rofs) that fault only, FX_FAULTS_SHOW=1 prints each case.
 *
 * Also the two cases of issue 24 on real file systems: a disk filled by
 * another program mid-run (the rollback renames the saved copies back, so
 * the tree is restored without new space, and says so) and a folder made
 * read-only mid-run (every path left is listed with the reason and the
 * command, `forgex log RUN` says the same, and that undo works once the
 * folder is writable).
 *
 * The tmpfs are mounted in a mount namespace of this program's own
 * (as root; otherwise in a user namespace as well), gone with it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "helpers/faultfs.h"
#include "helpers/scripted.h"
#include "mockllm/mockctl.h"

#define PLAN "{\"summary\": \"Fix add\", \"steps\": [{\"id\": \"1\", \"title\": \"Fix\"," \
	" \"description\": \"fix add\", \"files\": [\"calc.py\"]}], \"acceptance\": [\"tests pass\"]}"
#define FIX_ADD "{\"path\": \"calc.py\", \"old_string\": \"return a - b\", \"new_string\": " \
	"\"return a + b\"}"
#define FIX_MORE "{\"path\": \"calc.py\", \"old_string\": \"return a + b\", \"new_string\": " \
	"\"return b + a\"}"
#define FINISH "{\"summary\": \"done\"}"
#define FAIL "{\"verdict\": \"FAIL\", \"reasons\": [\"not right\"], \"required_fixes\": [\"again\"]}"
#define CONFIG "[pipeline]\ntest_command = [\"python3\", \"-B\", \"-m\", \"unittest\"]\n" \
	"max_iterations = 2\n"

static int have_ns;		/* a mount namespace of our own: tmpfs can be mounted */

/* The script of the run (then errors, for whatever a resume asks). */
static char *script(int builder_delay_ms)
{
	json_t *steps = json_array();

	sc_call(steps, "submit_plan", PLAN);
	/* the Builder */
	sc_call(steps, "write_file", "{\"path\": \".env\", \"content\": \"BROKEN=1\\n\"}");
	sc_call(steps, "edit_file", FIX_ADD);
	sc_call(steps, "write_file", "{\"path\": \"sub/new.txt\", \"content\": \"new\\n\"}");
	if (builder_delay_ms)
		json_array_append_new(steps, json_pack("{s:i, s:[{s:s, s:s, s:{s:s}}]}", "delay_ms",
						       builder_delay_ms, "tool_calls", "id", "slow",
						       "name", "finish", "arguments", "summary", "done"));
	else
		sc_call(steps, "finish", FINISH);
	/* the Expert */
	sc_call(steps, "write_file", "{\"path\": \"run.sh\", \"content\": \"#!/bin/sh\\necho changed\\n\"}");
	sc_call(steps, "delete_file", "{\"path\": \"link\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", FAIL);
	/* the repair */
	sc_call(steps, "run_command", "{\"argv\": [\"python3\", \"-c\", \"import os, shutil; "
		"shutil.rmtree('olddir'); os.symlink('test_calc.py', 'link2'); "
		"open('made.txt', 'w').write('x')\"]}");
	sc_call(steps, "edit_file", FIX_MORE);
	sc_call(steps, "write_file", "{\"path\": \"sub/deeper/x.txt\", \"content\": \"x\\n\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", FAIL);
	json_array_append_new(steps, json_pack("{s:i, s:i}", "status", 500, "repeat", -1));
	return sc_script(steps);
}

static char *shim(void)
{
	char *bin = realpath(tu_forgex(), NULL), *slash, *p;

	assert_non_null(bin);
	slash = strrchr(bin, '/');
	*slash = '\0';
	p = xstrfmt("%s/tests/faults/killshim.so", bin);
	free(bin);
	if (access(p, R_OK))
		fail_msg("%s is missing: make builds it", p);
	return p;
}

/* Run forgex `args` in the project; with `fault`, under the shim. */
static void forgex(struct tu_result *r, const struct sc_proj *p, const char *const *args,
		   const char *fault, long step, const char *log, const char *fill)
{
	struct strvec argv = STRVEC_INIT, env = STRVEC_INIT;
	struct tu_watch w = { .deadline = 120 };
	char *abs = realpath(tu_forgex(), NULL);

	strvec_push(&argv, abs);
	free(abs);
	strvec_pushv(&argv, args);
	strvec_push(&env, p->env_home);
	strvec_push(&env, p->env_xdg);
	if (fault) {
		char *so = shim();
		const char *asan = getenv("ASAN_OPTIONS");

		strvec_pushf(&env, "LD_PRELOAD=%s", so);
		strvec_pushf(&env, "FX_SHIM_MODE=%s", fault);
		strvec_pushf(&env, "FX_SHIM_ROOT=%s", p->dir);
		strvec_pushf(&env, "FX_SHIM_STEP=%ld", step);
		strvec_pushf(&env, "FX_SHIM_LOG=%s", log);
		if (fill)
			strvec_pushf(&env, "FX_SHIM_FILL=%s", fill);
		/* a sanitizer build: its runtime need not come first for the shim */
		strvec_pushf(&env, "ASAN_OPTIONS=%s%sverify_asan_link_order=0", asan ? asan : "",
			     asan ? ":" : "");
		free(so);
	}
	tu_run_watched(r, (const char *const *)argv.v, p->dir, (const char *const *)env.v, &w);
	if (w.killed)
		fail_msg("forgex %s did not end within %.0f s", args[0], w.deadline);
	strvec_clear(&argv);
	strvec_clear(&env);
}

/* The steps a fault-free run makes, "N OP PATH" each. */
static void count_steps(struct strvec *out)
{
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	const char *run[] = { "run", "fix add", NULL };
	char *s = script(0), *base = ff_small_fs(64), *log, *text;

	mock_start(&m, s);
	ff_project(&p, base, &m, CONFIG);
	log = xstrfmt("%s/steps.log", base);
	forgex(&r, &p, run, "count", 0, log, NULL);
	if (!strstr(r.out.buf, "FAIL") || !strstr(r.out.buf, "The tree was restored"))
		fail_msg("the scripted run did not fail and roll back:\n%s%s", r.out.buf, r.err.buf);
	tu_result_release(&r);
	text = tu_read(base, "steps.log");
	assert_non_null(text);
	ff_split_lines(out, text);
	free(text);
	free(log);
	mock_release(&m);
	free(s);
	sc_proj_release(&p);
	ff_small_release(base);
}

/* One case of the suite: a fault at a step, then (resume and) undo. */
struct fcase {
	const char *kind;	/* kill, full, rofs */
	long step;
	const char *what;	/* "OP PATH" of the step */
	int resume;
	char *name;		/* "kill@87/undo", "full@12/resume": what FX_FAULTS_CASES matches */
};

struct outcome {
	unsigned cases, failed;
	FILE *list;		/* one line a failure: name, kind, step, what differed */
	FILE *log;		/* each failure in full: the difference and what forgex said */
};

/* The folder of the forgex under test: where the suite's reports go. */
static char *build_dir(void)
{
	char *bin = realpath(tu_forgex(), NULL), *slash;

	assert_non_null(bin);
	slash = strrchr(bin, '/');
	*slash = '\0';
	return bin;
}

/* The difference `d` (ff_difference()) on one line, cut to about `max` bytes. */
static void one_line(struct buf *out, const char *d, size_t max)
{
	size_t start = out->len;

	while (*d && out->len - start < max) {
		size_t n = strcspn(d, "\n");

		while (n && *d == ' ') {
			d++;
			n--;
		}
		if (out->len > start)
			buf_addstr(out, "; ");
		buf_add(out, d, n);
		d += n + (d[n] == '\n');
	}
	if (*d)
		buf_addstr(out, "; ...");
}

/*
 * `leftovers` (ff_forgex_leftovers()) but those in the folder of a run
 * that `said` (undo's output) passed over as not the user's: a run killed
 * before the user's record of it was written (its first steps make the
 * folder and request.txt) is, to forgex, planted, and it acts on no file
 * of it by design (see docs/internals/journal.md, the limits).
 */
static char *not_passed_over(char *leftovers, const char *said)
{
	const char *at = strstr(said, "passed over run ");
	struct strvec all = STRVEC_INIT;
	struct buf out = BUF_INIT;
	char *prefix;
	size_t i;

	if (!at)
		return leftovers;
	at += strlen("passed over run ");
	prefix = xstrfmt(".forgex/runs/%.*s/", (int)strcspn(at, ":\n"), at);
	ff_split_lines(&all, leftovers);
	for (i = 0; i < all.nr; i++) {
		const char *q = all.v[i];

		while (*q) {
			size_t n = strcspn(q, " ");

			if (strncmp(q, prefix, strlen(prefix)))
				buf_addf(&out, "%s%.*s", out.len ? " " : "", (int)n, q);
			q += n + (q[n] == ' ');
		}
	}
	buf_addstr(&out, "");
	strvec_clear(&all);
	free(prefix);
	free(leftovers);
	return buf_detach(&out, NULL);
}

/* One case: the fault at its step, then (resume and) undo; the tree must be as before. */
static void one_case(struct outcome *o, const struct fcase *c)
{
	struct sc_proj p;
	struct mock m;
	struct tu_result r, u;
	const char *run[] = { "run", "fix add", NULL }, *res[] = { "resume", NULL };
	const char *undo[] = { "undo", NULL };
	char *s = script(0), *base = ff_small_fs(!strcmp(c->kind, "full") ? 24 : 64), *log, *fill;
	char *before, *after, *leftovers;
	struct buf said = BUF_INIT;
	double t0 = tu_now();
	int killed, failed;

	mock_start(&m, s);
	ff_project(&p, base, &m, CONFIG);
	log = xstrfmt("%s/steps.log", base);
	fill = xstrfmt("%s/fill", base);
	before = ff_snapshot(p.dir);
	forgex(&r, &p, run, c->kind, c->step, log, fill);
	killed = r.status == 128 + SIGKILL;
	buf_addf(&said, "--- run (exit %d)\n%s%s", r.status, r.out.buf, r.err.buf);
	tu_result_release(&r);
	unlink(fill);	/* room again */
	if (c->resume) {
		forgex(&r, &p, res, NULL, 0, NULL, NULL);
		buf_addf(&said, "--- resume (exit %d)\n%s%s", r.status, r.out.buf, r.err.buf);
		tu_result_release(&r);
	}
	forgex(&u, &p, undo, NULL, 0, NULL, NULL);
	buf_addf(&said, "--- undo (exit %d)\n%s%s", u.status, u.out.buf, u.err.buf);
	after = ff_snapshot(p.dir);
	leftovers = not_passed_over(ff_forgex_leftovers(p.dir), u.err.buf);
	o->cases++;
	if (getenv("FX_FAULTS_SHOW"))
		print_message("case: %s (%s before step %ld: %s)\n%s\n", c->name, c->kind, c->step,
			      c->what, said.buf);
	/*
	 * The tree as before, nothing of forgex's left (in .forgex neither:
	 * ff_forgex_leftovers()), and undo either put the tree back or found
	 * nothing of the run's left.
	 */
	failed = strcmp(after, before) || *leftovers ||
		 (u.status && !strstr(u.err.buf, "changed no file") &&
		  !strstr(u.err.buf, "changed nothing") && !strstr(u.err.buf, "no run"));
	if (failed) {
		char *d = ff_difference(before, after), *clean = ff_snapshot_ex(p.dir, 1);
		struct buf line = BUF_INIT;
		/* a first sort by cause: a killed write's temporary file left; a write killed in flight */
		const char *cause = !strcmp(after, before) && *leftovers ? "leftover in .forgex" :
				    !strcmp(clean, before) ? "leftover" :
				    !c->resume && killed && u.status &&
				    strstr(u.err.buf, "changed since the run ended") ? "in-flight" :
				    !strcmp(after, before) ? "undo failed" :
				    c->resume ? "resume" : "undo";

		o->failed++;
		buf_addf(&line, "%s kind=%s step=%ld (%s) then=%s cause=%s: ", c->name, c->kind,
			 c->step, c->what, c->resume ? "resume+undo" : "undo", cause);
		if (*leftovers)
			buf_addf(&line, "in .forgex: %s; ", leftovers);
		one_line(&line, d, 600);
		if (!strcmp(after, before) && !*leftovers)
			buf_addf(&line, "undo exit %d", u.status);
		fprintf(o->list, "%s\n", line.buf);
		fflush(o->list);
		fprintf(o->log, "\n== %s\n%s%s", line.buf, d, said.buf);
		fflush(o->log);
		print_message("# %s: FAILED (%s)\n", c->name, cause);
		buf_release(&line);
		free(clean);
		free(d);
	} else {
		print_message("# %s: ok (%.1f s)\n", c->name, tu_now() - t0);
	}
	tu_result_release(&u);
	free(leftovers);
	free(before);
	free(after);
	buf_release(&said);
	free(log);
	free(fill);
	mock_release(&m);
	free(s);
	sc_proj_release(&p);
	ff_small_release(base);
}

/* Index of the first step whose line holds `needle` (from `from`), or -1. */
static long find_step(const struct strvec *steps, const char *needle, size_t from)
{
	size_t i;

	for (i = from; i < steps->nr; i++)
		if (strstr(steps->v[i], needle))
			return (long)i;
	return -1;
}

static void add_case(struct fcase **v, size_t *nr, const char *kind, const char *line, int resume)
{
	struct fcase *c;

	*v = xrealloc(*v, (*nr + 1) * sizeof(**v));
	c = &(*v)[(*nr)++];
	c->kind = kind;
	c->step = atol(line);
	c->what = strchr(line, ' ') ? strchr(line, ' ') + 1 : "";
	c->resume = resume;
	c->name = xstrfmt("%s@%ld/%s", kind, c->step, resume ? "resume" : "undo");
}

/*
 * `make test`'s share: each fault at the Builder's first change, the
 * Expert's, the repair's, the rollback's first removal and its last
 * rename of a saved copy back into place.
 */
static void reduced(struct fcase **v, size_t *nr, const struct strvec *steps)
{
	long b = find_step(steps, " calc.py", 0), e = find_step(steps, " run.sh", 0);
	long r = find_step(steps, "sub/deeper", 0), last = -1, undo = -1;
	size_t i;

	for (i = 0; i < steps->nr; i++)
		if (strstr(steps->v[i], " rename ") && !strstr(steps->v[i], ".forgex/"))
			last = (long)i;
	/* the rollback's first removal of what the run made */
	for (i = r > 0 ? (size_t)r : 0; i < steps->nr && undo < 0; i++)
		if (strstr(steps->v[i], " unlink ") && !strstr(steps->v[i], ".forgex/"))
			undo = (long)i;
	if (b < 0 || e < 0 || r < 0 || last < r || undo < r)
		fail_msg("the scripted run's steps are not as expected (see FX_FAULTS_SHOW=1)");
	add_case(v, nr, "kill", steps->v[b], 0);
	add_case(v, nr, "kill", steps->v[last], 1);
	add_case(v, nr, "kill", steps->v[last], 0);
	add_case(v, nr, "full", steps->v[e], 0);
	add_case(v, nr, "full", steps->v[r], 1);
	add_case(v, nr, "rofs", steps->v[r], 0);
	add_case(v, nr, "kill", steps->v[undo], 1);
	add_case(v, nr, "rofs", steps->v[b], 1);
	/* the classes of failure make faults found, one case each (docs/internals/journal.md) */
	{
		long again = find_step(steps, " rename calc.py", (size_t)b + 3);
		long state = find_step(steps, "/.state.json.fx-", 0);
		long stock = find_step(steps, "/saved/1.new", (size_t)r);

		/*
		 * The repair's command: its "command" record, then (six records
		 * of what it changed, "command_end", the tmp record of the edit)
		 * before the edit's temporary file: killed right after it ran.
		 */
		long edit = find_step(steps, " create .calc.py.fx-", (size_t)b + 3), cmd = edit - 9;
		long newtxt;

		if (again < 0 || state < 0 || stock < 0 || cmd < 1 ||
		    !strstr(steps->v[cmd], "changes.jsonl") || !strstr(steps->v[cmd - 1], " rename ") ||
		    !strstr(steps->v[cmd + 1], "changes.jsonl"))
			fail_msg("the scripted run's steps are not as expected (see FX_FAULTS_SHOW=1)");
		/* a command's changes not recorded yet */
		add_case(v, nr, "kill", steps->v[cmd + 1], 0);
		/* a full disk before a rename: what the run left cannot be stored, only hashed */
		if ((newtxt = find_step(steps, " rename sub/new.txt", 0)) < 0)
			fail_msg("the scripted run's steps are not as expected (see FX_FAULTS_SHOW=1)");
		add_case(v, nr, "full", steps->v[newtxt], 0);
		/* a second change killed between its rename and its "left" record */
		add_case(v, nr, "kill", steps->v[again + 1], 0);
		/* a record's temporary file in the run folder, before state.json exists */
		add_case(v, nr, "kill", steps->v[state + 1], 0);
		/* the rollback's saved copy half made again (saved/1.new) */
		add_case(v, nr, "kill", steps->v[stock + 1], 0);
	}
}

/*
 * FX_FAULTS_CASES: patterns (fnmatch(3), separated by commas, spaces or
 * new lines) of the case names to run; an entry naming a file stands for
 * the first word of each of its lines (a failure list, to run those again).
 */
static void case_patterns(struct strvec *out, const char *spec)
{
	while (*spec) {
		size_t n = strcspn(spec, ", \t\n");
		char *one = xstrndup(spec, n);
		struct buf text = BUF_INIT;

		if (n && !fsutil_read_file(&text, one, 0)) {
			const char *q = text.buf ? text.buf : "";

			while (*q) {
				size_t w = strcspn(q, " \t\n");

				if (w)
					strvec_pushf(out, "%.*s", (int)w, q);
				q += strcspn(q, "\n");
				q += *q == '\n';
			}
		} else if (n) {
			err_clear();
			strvec_push(out, one);
		}
		buf_release(&text);
		free(one);
		spec += n;
		spec += strspn(spec, ", \t\n");
	}
}

static int case_wanted(const struct strvec *patterns, const struct fcase *c)
{
	size_t i;

	if (!patterns->nr)
		return 1;
	for (i = 0; i < patterns->nr; i++)
		if (!fnmatch(patterns->v[i], c->name, 0))
			return 1;
	return 0;
}

/* The cases to run: the reduced set, or the steps FX_FAULTS (all, or N,M,A-B) names. */
static void choose(struct fcase **v, size_t *nr, const struct strvec *steps)
{
	static const char *const faults[] = { "kill", "full", "rofs" };
	const char *all = getenv("FX_FAULTS"), *only = getenv("FX_FAULTS_ONLY");
	const char *pick = getenv("FX_FAULTS_CASES");
	struct strvec patterns = STRVEC_INIT;
	struct fcase *tmp = NULL;
	size_t i, f, n = 0;

	if (!all && pick && *pick)
		all = "all";
	if (!all) {
		reduced(&tmp, &n, steps);
	} else {
		for (i = 0; i < steps->nr; i++) {
			long k = (long)i + 1;
			int want = !strcmp(all, "all");
			const char *q = all;

			/* FX_FAULTS=N,M,A-B: those steps only */
			while (!want && *q) {
				long lo = atol(q), hi = lo;
				size_t d = strcspn(q, ",-");

				if (q[d] == '-')
					hi = atol(q + d + 1);
				want = k >= lo && k <= hi;
				q += strcspn(q, ",");
				q += *q == ',';
			}
			for (f = 0; want && f < ARRAY_SIZE(faults); f++) {
				if (only && strcmp(only, faults[f]))
					continue;
				add_case(&tmp, &n, faults[f], steps->v[i], 0);
				add_case(&tmp, &n, faults[f], steps->v[i], 1);
			}
		}
	}
	case_patterns(&patterns, pick ? pick : "");
	for (i = 0; i < n; i++) {
		if (case_wanted(&patterns, &tmp[i])) {
			*v = xrealloc(*v, (*nr + 1) * sizeof(**v));
			(*v)[(*nr)++] = tmp[i];
		} else {
			free(tmp[i].name);
		}
	}
	free(tmp);
	strvec_clear(&patterns);
}

/*
 * The suite is PARTS tests, each running a PARTS-th of the cases, so that
 * tests/run.sh runs them side by side (SHARDS); each part writes its
 * failures to faults/failures-K.{txt,log} under the build folder and
 * then gathers every part's into faults-failures.{txt,log} there.
 */
#define PARTS 4

static void gather(const char *dir, const char *ext)
{
	struct buf all = BUF_INIT;
	char *out = xstrfmt("%s/faults-failures.%s", dir, ext);
	int k;

	for (k = 1; k <= PARTS; k++) {
		char *one = xstrfmt("%s/faults/failures-%d.%s", dir, k, ext);

		if (fsutil_read_file(&all, one, 0) < 0)
			err_clear();
		free(one);
	}
	if (fsutil_write_atomic(out, all.buf ? all.buf : "", all.len, 0644) < 0)
		fail_msg("cannot write %s: %s", out, err_last());
	buf_release(&all);
	free(out);
}

static void run_part(int part)
{
	struct strvec steps = STRVEC_INIT;
	struct outcome o = { 0, 0, NULL, NULL };
	struct fcase *cases = NULL;
	size_t i, nr = 0;
	char *dir, *list, *log, *sub;

	if (!have_ns) {
		print_message("skipped: no mount namespace (unshare) for the tmpfs\n");
		skip();
	}
	dir = build_dir();
	sub = xstrfmt("%s/faults", dir);
	mkdir(sub, 0755);
	list = xstrfmt("%s/failures-%d.txt", sub, part);
	log = xstrfmt("%s/failures-%d.log", sub, part);
	o.list = fopen(list, "w");
	o.log = fopen(log, "w");
	assert_non_null(o.list);
	assert_non_null(o.log);
	count_steps(&steps);
	assert_true(steps.nr > 10);
	if (getenv("FX_FAULTS_SHOW") && part == 1)
		for (i = 0; i < steps.nr; i++)
			print_message("step %s\n", steps.v[i]);
	choose(&cases, &nr, &steps);
	/* case i to part (i + i / PARTS) % PARTS: the slower resume cases (every other one) spread over all */
	for (i = 0; i < nr; i++)
		if ((i + i / PARTS) % PARTS == (size_t)part - 1)
			one_case(&o, &cases[i]);
	fclose(o.list);
	fclose(o.log);
	gather(dir, "txt");
	gather(dir, "log");
	print_message("part %d of %d: %u cases of %zu chosen (%s, %zu steps): %u failed; "
		      "the failures of every part: %s/faults-failures.txt (in full: .log)\n",
		      part, PARTS, o.cases, nr, getenv("FX_FAULTS") || getenv("FX_FAULTS_CASES") ?
		      "FX_FAULTS" : "the reduced set", steps.nr, o.failed, dir);
	for (i = 0; i < nr; i++)
		free(cases[i].name);
	free(cases);
	free(list);
	free(log);
	free(sub);
	strvec_clear(&steps);
	if (o.failed) {
		char *at = xstrfmt("%s/faults-failures.txt", dir);

		free(dir);
		fail_msg("%u of %u fault cases left the tree changed or forgex's files behind; "
			 "every part's list: %s", o.failed, o.cases, at);
	}
	free(dir);
}

static void test_part1(void **state) { (void)state; run_part(1); }
static void test_part2(void **state) { (void)state; run_part(2); }
static void test_part3(void **state) { (void)state; run_part(3); }
static void test_part4(void **state) { (void)state; run_part(4); }

/* Whether the tree `dir` holds a temporary file of forgex's (outside .git and .forgex). */
static int has_tmp(const char *dir)
{
	char *all = ff_snapshot(dir), *clean = ff_snapshot_ex(dir, 1);
	int yes = strcmp(all, clean) != 0;

	free(all);
	free(clean);
	return yes;
}

/*
 * `forgex checkpoint restore` killed between making a temporary file and
 * renaming it into place (it has no journal: it names its temporary files
 * in .forgex/checkpoints/restore-tmps first): the restore run again, and
 * the next run's start, each remove the leftover, and the restore again
 * gives back the checkpoint's tree byte for byte.
 */
static void test_restore_killed(void **state)
{
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	struct strvec steps = STRVEC_INIT;
	json_t *steps_json = json_array(), *j = NULL;
	const char *create[] = { "checkpoint", "create", "-m", "before", "--json", NULL };
	const char *run[] = { "run", "fix add", NULL };
	char *s, *base, *log, *text, *id, *at_cp, *now;
	const char *restore[] = { "checkpoint", "restore", NULL, NULL };
	long kill_at;
	int round;

	(void)state;
	if (!have_ns)
		skip();
	/* the model answers nothing: the run ends at its first call, after its start's sweep */
	json_array_append_new(steps_json, json_pack("{s:i, s:i}", "status", 500, "repeat", -1));
	s = sc_script(steps_json);
	base = ff_small_fs(64);
	mock_start(&m, s);
	ff_project(&p, base, &m, CONFIG);
	forgex(&r, &p, create, NULL, 0, NULL, NULL);
	assert_int_equal(r.status, 0);
	assert_int_equal(jsonx_parse(&j, r.out.buf, r.out.len, "create"), 0);
	id = xstrdup(jsonx_str(j, "short_id"));
	json_decref(j);
	tu_result_release(&r);
	restore[2] = id;
	at_cp = ff_snapshot(p.dir);
	log = xstrfmt("%s/steps.log", base);
	for (round = 0; round < 3; round++) {
		tu_write(p.dir, "calc.py", "changed\n");
		tu_write(p.dir, "olddir/keep.txt", "changed too\n");
		if (!round) {
			/* the steps of a restore, to kill it at the rename of calc.py's temporary file */
			forgex(&r, &p, restore, "count", 0, log, NULL);
			assert_int_equal(r.status, 0);
			tu_result_release(&r);
			text = tu_read(base, "steps.log");
			assert_non_null(text);
			ff_split_lines(&steps, text);
			free(text);
			kill_at = find_step(&steps, " rename calc.py", 0);
			if (kill_at < 0)
				fail_msg("the restore renames no calc.py into place: %s", log);
			kill_at = atol(steps.v[kill_at]);
			continue;
		}
		forgex(&r, &p, restore, "kill", kill_at, log, NULL);
		assert_int_equal(r.status, 128 + SIGKILL);
		tu_result_release(&r);
		assert_true(has_tmp(p.dir));
		if (round == 1) {
			/* the restore again removes it and finishes */
			forgex(&r, &p, restore, NULL, 0, NULL, NULL);
			assert_int_equal(r.status, 0);
			tu_result_release(&r);
			now = ff_snapshot(p.dir);
			assert_string_equal(now, at_cp);
			free(now);
		} else {
			/* the next run's start removes it (the run then fails on the model) */
			char *clean = ff_snapshot_ex(p.dir, 1);

			forgex(&r, &p, run, NULL, 0, NULL, NULL);
			tu_result_release(&r);
			now = ff_snapshot(p.dir);
			assert_string_equal(now, clean);
			free(now);
			free(clean);
		}
		text = ff_forgex_leftovers(p.dir);
		assert_string_equal(text, "");
		free(text);
	}
	strvec_clear(&steps);
	free(at_cp);
	free(log);
	free(id);
	mock_release(&m);
	free(s);
	sc_proj_release(&p);
	ff_small_release(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_part1),
		cmocka_unit_test(test_part2),
		cmocka_unit_test(test_part3),
		cmocka_unit_test(test_part4),
		cmocka_unit_test(test_restore_killed),
	};

	have_ns = ff_enter_namespace();
	return tu_run_group_tests(tests, NULL, NULL);
}
