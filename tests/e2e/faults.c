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
 * runs every one. FX_FAULTS_SHOW=1 prints each case.
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
#define CALC_PY "def add(a, b):\n    return a - b\n"
#define TEST_PY "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n" \
	"    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"

static int have_ns;		/* a mount namespace of our own: tmpfs can be mounted */

/* A mount namespace of this program's own (and a user namespace when not root). */
static int enter_namespace(void)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();

	if (uid == 0) {
		if (unshare(CLONE_NEWNS) < 0)
			return 0;
	} else {
		char map[64];
		int fd;

		if (unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
			return 0;
		fd = open("/proc/self/setgroups", O_WRONLY);
		if (fd >= 0) {
			if (write(fd, "deny", 4) < 0)
				return 0;
			close(fd);
		}
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)uid);
		fd = open("/proc/self/uid_map", O_WRONLY);
		if (fd < 0 || write(fd, map, strlen(map)) < 0)
			return 0;
		close(fd);
		snprintf(map, sizeof(map), "0 %u 1", (unsigned)gid);
		fd = open("/proc/self/gid_map", O_WRONLY);
		if (fd < 0 || write(fd, map, strlen(map)) < 0)
			return 0;
		close(fd);
	}
	/* nothing mounted here shows outside */
	return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0;
}

/* A fresh tmpfs of `mb` MiB (caller: small_release). */
static char *small_fs(int mb)
{
	char *base = tu_mkdtemp(), opts[32];

	snprintf(opts, sizeof(opts), "size=%dm,mode=0755", mb);
	if (mount("tmpfs", base, "tmpfs", 0, opts) < 0)
		fail_msg("cannot mount a tmpfs on %s: %s", base, strerror(errno));
	return base;
}

static void small_release(char *base)
{
	umount2(base, MNT_DETACH);
	rmdir(base);
	free(base);
}

static int strcmp_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Every entry under `dirfd` but .git and .forgex: type, mode, bytes, link
 * target, and the folders themselves (empty ones too).
 */
static void snap_at(struct buf *out, int dirfd, const char *rel)
{
	DIR *d = fdopendir(dup(dirfd));
	struct dirent *e;
	struct strvec names = STRVEC_INIT;
	size_t i;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			strvec_push(&names, e->d_name);
	closedir(d);
	if (names.nr)
		qsort(names.v, names.nr, sizeof(*names.v), strcmp_ptr);
	for (i = 0; i < names.nr; i++) {
		const char *n = names.v[i];
		char *sub = *rel ? xstrfmt("%s/%s", rel, n) : xstrdup(n);
		struct stat st;

		if (!strcmp(sub, ".git") || !strcmp(sub, ".forgex") ||
		    fstatat(dirfd, n, &st, AT_SYMLINK_NOFOLLOW)) {
			free(sub);
			continue;
		}
		buf_addf(out, "== %s %o\n", sub, (unsigned)st.st_mode);
		if (S_ISDIR(st.st_mode)) {
			int fd = openat(dirfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			assert_true(fd >= 0);
			snap_at(out, fd, sub);
			close(fd);
		} else if (S_ISREG(st.st_mode)) {
			int fd = openat(dirfd, n, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

			assert_true(fd >= 0);
			fsutil_read_fd(out, fd, 0);
			close(fd);
		} else if (S_ISLNK(st.st_mode)) {
			char t[4096];
			ssize_t k = readlinkat(dirfd, n, t, sizeof(t));

			buf_addf(out, "-> %.*s\n", (int)(k > 0 ? k : 0), t);
		}
		free(sub);
	}
	strvec_clear(&names);
}

static char *snapshot(const char *dir)
{
	struct buf b = BUF_INIT;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(fd >= 0);
	snap_at(&b, fd, "");
	close(fd);
	return buf_detach(&b, NULL);
}

/* Append the lines of `text` to `out`. */
static void split_lines(struct strvec *out, const char *text)
{
	while (*text) {
		size_t n = strcspn(text, "\n");

		strvec_pushf(out, "%.*s", (int)n, text);
		text += n + (text[n] == '\n');
	}
}

/* The lines of `a` not in `b` and of `b` not in `a`, for a message. */
static char *difference(const char *want, const char *got)
{
	struct strvec w = STRVEC_INIT, g = STRVEC_INIT;
	struct buf out = BUF_INIT;
	size_t i;

	split_lines(&w, want);
	split_lines(&g, got);
	for (i = 0; i < w.nr; i++)
		if (strvec_find(&g, w.v[i]) < 0)
			buf_addf(&out, "  missing: %.200s\n", w.v[i]);
	for (i = 0; i < g.nr; i++)
		if (strvec_find(&w, g.v[i]) < 0)
			buf_addf(&out, "  extra:   %.200s\n", g.v[i]);
	strvec_clear(&w);
	strvec_clear(&g);
	return buf_detach(&out, NULL);
}

/*
 * The project, in `base`/p: a file the Builder fixes, an executable the
 * Expert rewrites, a link it deletes, an ignored file (no checkpoint holds
 * it), a folder the repair's command removes, an untracked file.
 */
static void project(struct sc_proj *p, const char *base, const struct mock *m)
{
	memset(p, 0, sizeof(*p));
	p->dir = xstrfmt("%s/p", base);
	p->home = tu_mkdtemp();
	mkdir(p->dir, 0755);
	sc_proj_config(p, m, "auto", "[pipeline]\ntest_command = [\"python3\", \"-B\", \"-m\", "
		       "\"unittest\"]\nmax_iterations = 2\n");
	tu_write(p->dir, "calc.py", CALC_PY);
	tu_write(p->dir, "test_calc.py", TEST_PY);
	tu_write(p->dir, "run.sh", "#!/bin/sh\necho run\n");
	tu_sh(p->dir, "chmod 755 run.sh");
	tu_write(p->dir, "olddir/keep.txt", "keep\n");
	tu_write(p->dir, ".gitignore", ".env\n");
	tu_write(p->dir, ".env", "SECRET=1\n");
	tu_sh(p->dir, "ln -s calc.py link");
	tu_git_init(p->dir);
	tu_write(p->dir, "notes.txt", "untracked\n");
	p->env_home = xstrfmt("HOME=%s", p->home);
	p->env_xdg = xstrfmt("XDG_CONFIG_HOME=%s", p->home);
	p->env[0] = p->env_home;
	p->env[1] = p->env_xdg;
	p->env_nr = 2;
}

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
	sc_call(steps, "run_command", "{\"argv\": [\"sh\", \"-c\", \"rm -rf olddir && "
		"ln -s test_calc.py link2 && echo x > made.txt\"]}");
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
	char *s = script(0), *base = small_fs(64), *log, *text;

	mock_start(&m, s);
	project(&p, base, &m);
	log = xstrfmt("%s/steps.log", base);
	forgex(&r, &p, run, "count", 0, log, NULL);
	if (!strstr(r.out.buf, "FAIL") || !strstr(r.out.buf, "The tree was restored"))
		fail_msg("the scripted run did not fail and roll back:\n%s%s", r.out.buf, r.err.buf);
	tu_result_release(&r);
	text = tu_read(base, "steps.log");
	assert_non_null(text);
	split_lines(out, text);
	free(text);
	free(log);
	mock_release(&m);
	free(s);
	sc_proj_release(&p);
	small_release(base);
}

struct outcome {
	struct buf failures;
	unsigned cases, failed, pending;
};

/*
 * Cases that fail until issue 24's items 1 and 2 land (another branch:
 * resume continues the run's journal; a killed write's temporary file is
 * recorded before it is made). A failure of such a case is counted and
 * named, not failed; the assertion itself is the same. Empty this list
 * once those are merged.
 */
static const char *const pending_items_1_2[] = {
	NULL,
};

static int pending(const char *what)
{
	size_t i;

	for (i = 0; pending_items_1_2[i]; i++)
		if (strstr(what, pending_items_1_2[i]))
			return 1;
	return 0;
}

/* One case: the fault at `step`, then (resume and) undo; the tree must be as before. */
static void one_case(struct outcome *o, const char *fault, long step, const char *what,
		     int resume)
{
	struct sc_proj p;
	struct mock m;
	struct tu_result r, u;
	const char *run[] = { "run", "fix add", NULL }, *res[] = { "resume", NULL };
	const char *undo[] = { "undo", NULL };
	char *s = script(0), *base = small_fs(!strcmp(fault, "full") ? 24 : 64), *log, *fill;
	char *before, *after, *label;
	struct buf said = BUF_INIT;

	mock_start(&m, s);
	project(&p, base, &m);
	log = xstrfmt("%s/steps.log", base);
	fill = xstrfmt("%s/fill", base);
	before = snapshot(p.dir);
	forgex(&r, &p, run, fault, step, log, fill);
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
	after = snapshot(p.dir);
	label = xstrfmt("%s before step %ld (%s), then %s", fault, step, what,
			resume ? "resume and undo" : "undo");
	o->cases++;
	if (getenv("FX_FAULTS_SHOW"))
		print_message("case: %s\n%s", label, said.buf);
	/* undo either put the tree back or found nothing of the run's left */
	if (strcmp(after, before) || (u.status && !strstr(u.err.buf, "changed no file") &&
				       !strstr(u.err.buf, "changed nothing") &&
				       !strstr(u.err.buf, "no run"))) {
		char *d = difference(before, after);

		if (pending(label)) {
			o->pending++;
		} else {
			o->failed++;
			buf_addf(&o->failures, "\n== %s: the tree is not back\n%s%s", label, d,
				 said.len > 3000 ? said.buf + said.len - 3000 : said.buf);
		}
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
	small_release(base);
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

static void test_every_step(void **state)
{
	static const char *const faults[] = { "kill", "full", "rofs" };
	struct strvec steps = STRVEC_INIT, chosen = STRVEC_INIT;
	struct outcome o = { BUF_INIT, 0, 0, 0 };
	const char *all = getenv("FX_FAULTS");
	size_t i, f;

	(void)state;
	if (!have_ns) {
		print_message("skipped: no mount namespace (unshare) for the tmpfs\n");
		skip();
	}
	count_steps(&steps);
	assert_true(steps.nr > 10);
	if (all && !strcmp(all, "all")) {
		for (i = 0; i < steps.nr; i++)
			strvec_push(&chosen, steps.v[i]);
	} else {
		/*
		 * A spread: the Builder's first change, the Expert's, the
		 * repair's, and the rollback's last rename.
		 */
		long b = find_step(&steps, " calc.py", 0);
		long e = find_step(&steps, " run.sh", 0);
		long r = find_step(&steps, "sub/deeper", 0);
		long last = -1;

		/* the last rename into the tree: the rollback putting a saved copy back */
		for (i = 0; i < steps.nr; i++)
			if (strstr(steps.v[i], " rename ") && !strstr(steps.v[i], ".forgex/"))
				last = (long)i;
		if (b >= 0)
			strvec_push(&chosen, steps.v[b]);
		if (e >= 0)
			strvec_push(&chosen, steps.v[e]);
		if (r >= 0)
			strvec_push(&chosen, steps.v[r]);
		if (last >= 0)
			strvec_push(&chosen, steps.v[last]);
	}
	if (getenv("FX_FAULTS_SHOW"))
		for (i = 0; i < steps.nr; i++)
			print_message("step %s\n", steps.v[i]);
	for (i = 0; i < chosen.nr; i++) {
		long n = atol(chosen.v[i]);
		const char *what = strchr(chosen.v[i], ' ') ? strchr(chosen.v[i], ' ') + 1 : "";

		for (f = 0; f < ARRAY_SIZE(faults); f++) {
			one_case(&o, faults[f], n, what, 0);
			one_case(&o, faults[f], n, what, 1);
		}
	}
	print_message("%u cases over %zu of %zu steps: %u failed, %u pending (issue 24 items 1-2)\n",
		      o.cases, chosen.nr, steps.nr, o.failed, o.pending);
	if (o.failed)
		fail_msg("%u of %u fault cases left the tree changed:%s", o.failed, o.cases,
			 o.failures.buf);
	buf_release(&o.failures);
	strvec_clear(&steps);
	strvec_clear(&chosen);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_every_step),
	};

	have_ns = enter_namespace();
	return tu_run_group_tests(tests, NULL, NULL);
}
