/*
 * Issue 24's items 3 and 4 as they happened, on real file systems:
 *
 *   - a disk filled by another program while the run goes on (a small
 *     tmpfs of this program's own): the run ends (nothing more can be
 *     written) and its rollback renames the saved copies back into place,
 *     so the tree is as before the run without any new space, and the
 *     run says so; `forgex undo` then has nothing left to do;
 *   - the workspace's folders made read-only while the run goes on (forgex
 *     runs as an unprivileged user of a user namespace, so the modes hold
 *     for it): the run says which paths it could not put back, each with
 *     the reason, and the command that finishes it; `forgex log RUN` says
 *     the same afterwards; once the folders are writable again that
 *     command puts the tree back byte for byte.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "helpers/faultfs.h"
#include "helpers/scripted.h"
#include "mockllm/mockctl.h"

#define PLAN "{\"summary\": \"Fix add\", \"steps\": [{\"id\": \"1\", \"title\": \"Fix\"," \
	" \"description\": \"fix add\", \"files\": [\"calc.py\"]}], \"acceptance\": [\"tests pass\"]}"
#define FIX_ADD "{\"path\": \"calc.py\", \"old_string\": \"return a - b\", \"new_string\": " \
	"\"return a + b\"}"
#define FINISH "{\"summary\": \"done\"}"
#define FAIL "{\"verdict\": \"FAIL\", \"reasons\": [\"not right\"], \"required_fixes\": [\"again\"]}"
#define CONFIG "[pipeline]\ntest_command = [\"python3\", \"-B\", \"-m\", \"unittest\"]\n" \
	"max_iterations = 1\nbaseline = false\n"

static int have_ns;
static char self[4096];		/* this program, for the unprivileged trampoline */

/*
 * The Builder changes an ignored file and a tracked one (and, with `made`,
 * makes a new one), then takes 1.5 s to finish: the fault comes then.
 * Without a new file the rollback frees no space before it puts the
 * others back: a copy would find the disk as full as the run left it.
 */
static char *script(int made)
{
	json_t *steps = json_array();

	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "write_file", "{\"path\": \".env\", \"content\": \"BROKEN=1\\n\"}");
	sc_call(steps, "edit_file", FIX_ADD);
	if (made)
		sc_call(steps, "write_file", "{\"path\": \"sub/new.txt\", \"content\": \"new\\n\"}");
	json_array_append_new(steps, json_pack("{s:i, s:[{s:s, s:s, s:{s:s}}]}", "delay_ms", 1500,
					       "tool_calls", "id", "slow", "name", "finish",
					       "arguments", "summary", "done"));
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", FAIL);
	json_array_append_new(steps, json_pack("{s:i, s:i}", "status", 500, "repeat", -1));
	return sc_script(steps);
}

/* In a child: once `rel` of `dir` holds `needle`, run `cmd` in `dir` (sh -c). */
static pid_t when_changed(const char *dir, const char *rel, const char *needle, const char *cmd)
{
	pid_t pid = fork();
	int i;

	assert_true(pid >= 0);
	if (pid)
		return pid;
	for (i = 0; i < 3000; i++) {
		char *c = tu_read(dir, rel);
		int seen = c && strstr(c, needle);

		free(c);
		if (seen)
			break;
		usleep(10000);
	}
	if (chdir(dir) < 0)
		_exit(1);
	execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
	_exit(127);
}

/* forgex `args` in the project; `unprivileged`: as a user without capabilities. */
static void forgex(struct tu_result *r, const struct sc_proj *p, int unprivileged,
		   const char *const *args)
{
	struct strvec argv = STRVEC_INIT, env = STRVEC_INIT;
	struct tu_watch w = { .deadline = 120 };
	char *abs = realpath(tu_forgex(), NULL);
	size_t i;

	for (i = 0; i < p->env_nr; i++)
		strvec_push(&env, p->env[i]);
	if (unprivileged) {
		strvec_push(&argv, self);
		strvec_push(&argv, "--unprivileged");
		/* the trampoline (this program) keeps the environment it is given */
		strvec_push(&env, "TU_KEEP_HOME=1");
	}
	strvec_push(&argv, abs);
	free(abs);
	strvec_pushv(&argv, args);
	tu_run_watched(r, (const char *const *)argv.v, p->dir, (const char *const *)env.v, &w);
	assert_false(w.killed);
	strvec_clear(&argv);
	strvec_clear(&env);
}

/* The run id from "forgex: run ID" (caller frees). */
static char *run_id(const struct tu_result *r)
{
	const char *at = strstr(r->err.buf, "forgex: run ");

	assert_non_null(at);
	at += 12;
	return xstrndup(at, strcspn(at, "\n "));
}

static void test_full_disk_mid_run_restores_without_room(void **state)
{
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	const char *run[] = { "run", "fix add", NULL }, *undo[] = { "undo", NULL };
	char *s = script(0), *base, *before, *after, *id, *cmd;
	const char *log_cmd[4] = { NULL };
	pid_t filler;
	int ws;

	(void)state;
	if (!have_ns) {
		print_message("skipped: no mount namespace (unshare) for the tmpfs\n");
		skip();
	}
	base = ff_small_fs(16);
	mock_start(&m, s);
	ff_project(&p, base, &m, CONFIG);
	before = ff_snapshot(p.dir);
	/* another program fills the disk: a file beside the workspace, on its file system */
	cmd = xstrfmt("cat /dev/zero > '%s/fill' 2>/dev/null; exit 0", base);
	filler = when_changed(p.dir, "calc.py", "a + b", cmd);
	forgex(&r, &p, 0, run);
	waitpid(filler, &ws, 0);
	if (getenv("FX_TEST_SHOW"))
		print_message("%s%s", r.out.buf, r.err.buf);
	/* the disk was full: that is what ended the run */
	assert_int_not_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "No space left on device"));
	/* and still full: the tree is back all the same, and the run says so */
	after = ff_snapshot(p.dir);
	if (strcmp(after, before))
		fail_msg("the tree is not back on the full disk:\n%s\n%s%s",
			 ff_difference(before, after), r.out.buf, r.err.buf);
	assert_non_null(strstr(r.out.buf, "The tree was restored to how it was before the run."));
	id = run_id(&r);
	tu_result_release(&r);
	free(after);
	/* room again: nothing left to undo, and nothing changes */
	free(cmd);
	cmd = xstrfmt("%s/fill", base);
	unlink(cmd);
	forgex(&r, &p, 0, undo);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "is already undone"));
	tu_result_release(&r);
	after = ff_snapshot(p.dir);
	assert_string_equal(after, before);
	log_cmd[0] = "log";
	log_cmd[1] = id;
	forgex(&r, &p, 0, log_cmd);
	assert_int_equal(r.status, 0);
	assert_null(strstr(r.out.buf, "not fully restored"));
	tu_result_release(&r);
	free(id);
	free(cmd);
	free(before);
	free(after);
	mock_release(&m);
	free(s);
	sc_proj_release(&p);
	ff_small_release(base);
}

static void test_read_only_mid_run_names_every_path_and_the_way_back(void **state)
{
	static const char *const paths[] = { ".env", "calc.py", "sub/new.txt" };
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	const char *run[] = { "run", "fix add", NULL };
	const char *args[4] = { NULL };
	char *s = script(1), *base = tu_mkdtemp(), *before, *after, *id, *cmd, *line;
	pid_t locker;
	size_t i;
	int ws;

	(void)state;
	mock_start(&m, s);
	ff_project(&p, base, &m, CONFIG);
	before = ff_snapshot(p.dir);
	/* every folder of the workspace read-only, their modes kept to set them back */
	cmd = xstrfmt("find . -type d -printf '%%m %%p\\n' > '%s/modes' && "
		      "find . -type d -exec chmod a-w {} +", base);
	locker = when_changed(p.dir, "sub/new.txt", "new", cmd);
	forgex(&r, &p, 1, run);
	waitpid(locker, &ws, 0);
	assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
	if (getenv("FX_TEST_SHOW"))
		print_message("%s%s", r.out.buf, r.err.buf);
	id = run_id(&r);
	assert_int_not_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "The tree could NOT be fully restored. Not put back:"));
	/* every path, each with why, and the command that finishes it */
	for (i = 0; i < ARRAY_SIZE(paths); i++) {
		line = xstrfmt("\n  %s: ", paths[i]);
		if (!strstr(r.out.buf, line))
			fail_msg("'%s' is not named as left changed:\n%s", paths[i], r.out.buf);
		assert_non_null(strstr(strstr(r.out.buf, line), "Permission denied"));
		free(line);
	}
	line = xstrfmt("forgex undo %s", id);
	assert_non_null(strstr(r.out.buf, line));
	tu_result_release(&r);
	/* forgex log RUN says the same afterwards */
	args[0] = "log";
	args[1] = id;
	forgex(&r, &p, 0, args);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "The tree is not fully restored"));
	for (i = 0; i < ARRAY_SIZE(paths); i++) {
		char *l = xstrfmt("\n  %s: ", paths[i]);

		if (!strstr(r.out.buf, l))
			fail_msg("forgex log does not name '%s':\n%s", paths[i], r.out.buf);
		free(l);
	}
	assert_non_null(strstr(r.out.buf, line));
	tu_result_release(&r);
	/* writable again: that command finishes it, byte for byte */
	free(cmd);
	cmd = xstrfmt("while read m d; do chmod \"$m\" \"$d\"; done < '%s/modes'", base);
	tu_sh(p.dir, cmd);
	args[0] = "undo";
	forgex(&r, &p, 0, args);
	if (r.status)
		fail_msg("undo after the folders are writable again: %s%s", r.out.buf, r.err.buf);
	tu_result_release(&r);
	after = ff_snapshot(p.dir);
	if (strcmp(after, before))
		fail_msg("the tree is not back:\n%s", ff_difference(before, after));
	args[0] = "log";
	forgex(&r, &p, 0, args);
	assert_null(strstr(r.out.buf, "not fully restored"));
	tu_result_release(&r);
	free(line);
	free(id);
	free(cmd);
	free(before);
	free(after);
	mock_release(&m);
	free(s);
	sc_proj_release(&p);
	tu_rmtree(base);
}

/*
 * `--unprivileged PROGRAM ARGS...`: run PROGRAM as user 1000 of a user
 * namespace of its own, which keeps no capability across exec, so the
 * folders' modes hold for it as for anyone (even when the tests run as
 * root).
 */
static int unprivileged(char **argv)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int fd;

	if (unshare(CLONE_NEWUSER) < 0)
		return 126;
	fd = open("/proc/self/setgroups", O_WRONLY);
	if (fd >= 0 && (write(fd, "deny", 4) < 0 || close(fd) < 0))
		return 126;
	snprintf(map, sizeof(map), "1000 %u 1", (unsigned)uid);
	fd = open("/proc/self/uid_map", O_WRONLY);
	if (fd < 0 || write(fd, map, strlen(map)) < 0 || close(fd) < 0)
		return 126;
	snprintf(map, sizeof(map), "1000 %u 1", (unsigned)gid);
	fd = open("/proc/self/gid_map", O_WRONLY);
	if (fd < 0 || write(fd, map, strlen(map)) < 0 || close(fd) < 0)
		return 126;
	execv(argv[0], argv);
	return 127;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_disk_mid_run_restores_without_room),
		cmocka_unit_test(test_read_only_mid_run_names_every_path_and_the_way_back),
	};
	ssize_t n;

	if (argc > 2 && !strcmp(argv[1], "--unprivileged"))
		return unprivileged(argv + 2);
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = '\0';
	have_ns = ff_enter_namespace();
	return tu_run_group_tests(tests, NULL, NULL);
}
