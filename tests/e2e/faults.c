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

struct outcome {
	struct buf failures;
	unsigned cases, failed;
};

/* One case: the fault at `step`, then (resume and) undo; the tree must be as before. */
static void one_case(struct outcome *o, const char *fault, long step, const char *what,
		     int resume)
{
	struct sc_proj p;
	struct mock m;
	struct tu_result r, u;
	const char *run[] = { "run", "fix add", NULL }, *res[] = { "resume", NULL };
	const char *undo[] = { "undo", NULL };
	char *s = script(0), *base = ff_small_fs(!strcmp(fault, "full") ? 24 : 64), *log, *fill;
	char *before, *after, *label;
	struct buf said = BUF_INIT;
	int killed;

	mock_start(&m, s);
	ff_project(&p, base, &m, CONFIG);
	log = xstrfmt("%s/steps.log", base);
	fill = xstrfmt("%s/fill", base);
	before = ff_snapshot(p.dir);
	forgex(&r, &p, run, fault, step, log, fill);
	killed = r.status == 128 + SIGKILL;
	buf_addf(&said, "--- run (exit %d)\n%s%s", r.status, r.out.buf, r.err.buf);
	tu_result_release(&r);
	unlink(fill);	/* room again */
	if (resume) {
		forgex(&r, &p, res, NULL, 0, NULL, NULL);
		buf_addf(&said, "--- resume (exit %d)\n%s%s", r.status, r.out.buf, r.err.buf);
		tu_result_release(&r);
	}
	forgex(&u, &p, undo, NULL, 0, NULL, NULL);
	buf_addf(&said, "--- undo (exit %d)\n%s%s", u.status, u.out.buf, u.err.buf);
	after = ff_snapshot(p.dir);
	label = xstrfmt("%s before step %ld (%s), then %s", fault, step, what,
			resume ? "resume and undo" : "undo");
	o->cases++;
	if (getenv("FX_FAULTS_SHOW"))
		print_message("case: %s\n%s", label, said.buf);
	/* undo either put the tree back or found nothing of the run's left */
	if (strcmp(after, before) || (u.status && !strstr(u.err.buf, "changed no file") &&
				       !strstr(u.err.buf, "changed nothing") &&
				       !strstr(u.err.buf, "no run"))) {
		char *d = ff_difference(before, after), *clean = ff_snapshot_ex(p.dir, 1);
		/* what kind of failure: only a killed write's temporary file is left, a write killed in flight */
		const char *kind = !strcmp(clean, before) ? "leftover" :
				   !resume && killed && u.status &&
				   strstr(u.err.buf, "changed since the run ended") ? "in-flight" :
				   resume ? "resume" : "undo";

		free(clean);
		o->failed++;
		buf_addf(&o->failures, "\n== %s: the tree is not back (%s)\n%s%s", label, kind, d,
			 said.len > 3000 ? said.buf + said.len - 3000 : said.buf);
		free(d);
	}
	tu_result_release(&u);
	free(label);
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

/*
 * `make test`'s share, 8 cases (15-30 s): each fault at the Builder's
 * first change, the Expert's, the repair's, the rollback's first removal
 * and its last rename of a saved copy back into place.
 */
static void reduced(struct outcome *o, const struct strvec *steps)
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
#define AT(n) atol(steps->v[n]), strchr(steps->v[n], ' ') + 1
	one_case(o, "kill", AT(b), 0);
	one_case(o, "kill", AT(last), 1);
	one_case(o, "kill", AT(last), 0);
	one_case(o, "full", AT(e), 0);
	one_case(o, "full", AT(r), 1);
	one_case(o, "rofs", AT(r), 0);
	one_case(o, "kill", AT(undo), 1);
	one_case(o, "rofs", AT(b), 1);
#undef AT
}

static void test_every_step(void **state)
{
	static const char *const faults[] = { "kill", "full", "rofs" };
	struct strvec steps = STRVEC_INIT, chosen = STRVEC_INIT;
	struct outcome o = { BUF_INIT, 0, 0 };
	const char *all = getenv("FX_FAULTS");
	size_t i, f;

	(void)state;
	if (!have_ns) {
		print_message("skipped: no mount namespace (unshare) for the tmpfs\n");
		skip();
	}
	count_steps(&steps);
	assert_true(steps.nr > 10);
	if (all && strcmp(all, "all")) {
		/* FX_FAULTS=N,M,...: those steps only (to look at a case again) */
		const char *q = all;

		while (*q) {
			long n = atol(q);

			if (n >= 1 && (size_t)n <= steps.nr)
				strvec_push(&chosen, steps.v[n - 1]);
			q += strcspn(q, ",");
			q += *q == ',';
		}
	} else if (all) {
		for (i = 0; i < steps.nr; i++)
			strvec_push(&chosen, steps.v[i]);
	} else {
		reduced(&o, &steps);
	}
	if (getenv("FX_FAULTS_SHOW"))
		for (i = 0; i < steps.nr; i++)
			print_message("step %s\n", steps.v[i]);
	for (i = 0; i < chosen.nr; i++) {
		long n = atol(chosen.v[i]);
		const char *what = strchr(chosen.v[i], ' ') ? strchr(chosen.v[i], ' ') + 1 : "";

		for (f = 0; f < ARRAY_SIZE(faults); f++) {
			const char *only = getenv("FX_FAULTS_ONLY");

			if (only && strcmp(only, faults[f]))
				continue;
			one_case(&o, faults[f], n, what, 0);
			one_case(&o, faults[f], n, what, 1);
		}
	}
	print_message("%u cases at %s of %zu steps: %u failed\n", o.cases,
		      chosen.nr ? "all or the chosen" : "a spread", steps.nr, o.failed);
	if (o.failed) {
		/* each case in full: cmocka's own message is short */
		fputs(o.failures.buf, stderr);
		fail_msg("%u of %u fault cases left the tree changed (above)", o.failed, o.cases);
	}
	buf_release(&o.failures);
	strvec_clear(&steps);
	strvec_clear(&chosen);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_step),
	};

	have_ns = ff_enter_namespace();
	return tu_run_group_tests(tests, NULL, NULL);
}
