/*
 * A repository without .git, for real against the native backend (issue
 * 20, item 1's family): a folder holding HEAD, objects/ and refs/ is one
 * git takes for a repository of its own, so `git branch` or `git log` in it on the
 * host reads its config and runs its core.pager. A sandboxed command makes
 * one (evil/) and tries to change one that was there before it started
 * (vendored.git/, bare, from `git init --bare`); then the user runs `git
 * branch` in each on a terminal, on the host, as the same uid. Asserted: the
 * pager never runs, because the folder that existed was read-only to the
 * command and the one it made lost its HEAD when the command ended (with
 * a note saying so); and the same `git branch` does run it once that HEAD is
 * put back (the attack is real). As root and as uid 65534.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "config/config.h"
#include "helpers/testutil.h"
#include "sandbox/executor.h"
#include "sandbox/sandbox.h"

#define NOBODY 65534
#define ARGV(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define skip_msg(...) \
	do { print_message("SKIP: " __VA_ARGS__); print_message("\n"); skip(); } while (0)

static char *ws, *marker_dir;
static struct config cfg;

struct outcome {
	int ret;
	int exit_code;
	struct buf out, err;
};

/* Run `argv` through a native executor on `ws`, in a child that first becomes `uid` (not 0). */
static void run_as(struct outcome *o, uid_t uid, const char *const *argv)
{
	int p[2], st, n = 0;
	size_t outlen = 0, errlen = 0;
	struct buf all = BUF_INIT;
	pid_t pid;

	memset(o, 0, sizeof(*o));
	buf_init(&o->out, 0);
	buf_init(&o->err, 0);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct exec_request req = { argv, 0, NULL, 60000, ARGV("GIT_CONFIG_NOSYSTEM=1") };
		struct exec_result r = EXEC_RESULT_INIT;
		struct executor ex;
		int ret;

		close(p[0]);
		if (uid && (setgroups(0, NULL) < 0 || setgid(uid) < 0 || setuid(uid) < 0)) {
			dprintf(p[1], "99 0 0 0\ncannot become %d", (int)uid);
			_exit(0);
		}
		while (argv[req.argc])
			req.argc++;
		if (executor_init(&ex, &cfg, ws) < 0) {
			dprintf(p[1], "99 0 0 %zu\n%s", strlen(err_last()), err_last());
			_exit(0);
		}
		ret = executor_run(&r, &ex, &req);
		if (ret < 0) {
			dprintf(p[1], "%d 0 0 %zu\n%s", ret, strlen(err_last()), err_last());
			_exit(0);
		}
		dprintf(p[1], "0 %d %zu %zu\n", r.exit_code, r.out.len, r.err.len);
		fsutil_write_all(p[1], r.out.buf, r.out.len);
		fsutil_write_all(p[1], r.err.buf, r.err.len);
		exec_result_release(&r);
		executor_release(&ex);
		_exit(0);
	}
	close(p[1]);
	fsutil_read_fd(&all, p[0], 1 << 24);
	close(p[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_int_equal(sscanf(all.buf, "%d %d %zu %zu\n%n", &o->ret, &o->exit_code, &outlen,
				&errlen, &n), 4);
	buf_add(&o->out, all.buf + n, outlen);
	buf_add(&o->err, all.buf + n + outlen, errlen);
	buf_release(&all);
	if (o->ret == 99 && strstr(o->err.buf, "cannot enforce"))
		skip_msg("native cannot run as uid %d here: %s", (int)uid, o->err.buf);
	if (o->ret)
		fail_msg("executor: %d %s", o->ret, o->err.buf);
}

static void need_native(void)
{
	struct executor ex;

	if (!sandbox_kernel_caps()->landlock_abi)
		skip_msg("Landlock is not available on this kernel");
	if (executor_init(&ex, &cfg, ws) < 0)
		skip_msg("the native backend cannot run here: %s", err_last());
	executor_release(&ex);
}

static int setup(void **state)
{
	(void)state;
	ws = tu_mkdtemp();
	marker_dir = xstrdup("/var/tmp/forgex-bare-XXXXXX");	/* seen by the sandbox, not writable */
	if (!mkdtemp(marker_dir))
		return -1;
	config_init(&cfg);
	free(cfg.sandbox.backend);
	cfg.sandbox.backend = xstrdup("native");
	strvec_push(&cfg.terminal.denied, "rm");	/* replaces the default list: sh allowed */
	sandbox_probe_mask(0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	config_release(&cfg);
	tu_rmtree(ws);
	tu_rmtree(marker_dir);
	ws = marker_dir = NULL;
	return 0;
}

/* The user's `git branch` in `dir` of the workspace, on a terminal (the pager runs), as `uid`. */
static void host_git_branch(uid_t uid, const char *dir)
{
	struct tu_result t;
	char *id = xstrfmt("%d", (int)uid), *in = xstrfmt("%s/%s", ws, dir);

	tu_run(&t, ARGV("setpriv", "--reuid", id, "--regid", id, "--clear-groups", "script", "-qec",
			"git branch", "/dev/null"),
	       in, ARGV("GIT_CONFIG_NOSYSTEM=1", "PAGER=cat", "HOME=/nonexistent"), NULL);
	tu_result_release(&t);
	free(id);
	free(in);
}

static int marked(const char *name)
{
	char *p = xstrfmt("%s/%s", marker_dir, name);
	int there = fsutil_exists(p);

	free(p);
	return there;
}

static void planted_git_dir(uid_t uid)
{
	struct outcome o;
	struct tu_result t;
	char *setup_cmd = xstrfmt(
		"set -e; git init -q .; git -c user.email=t@e -c user.name=t commit -q --allow-empty "
		"-m top; git init -q --bare vendored.git; chmod 0777 %s; chown -R %d:%d .",
		marker_dir, (int)uid, (int)uid);
	char *attack = xstrfmt(
		"mkdir -p evil/objects evil/refs && echo 'ref: refs/heads/main' > evil/HEAD &&"
		" printf '[core]\\n\\tpager = touch %s/evil; cat\\n' > evil/config && echo evil-made;"
		" printf '[core]\\n\\tpager = touch %s/vendored; cat\\n' >> vendored.git/config"
		" || echo vendored-refused", marker_dir, marker_dir);
	char *head = xstrfmt("%s/evil/HEAD", ws);

	tu_run(&t, ARGV("sh", "-c", setup_cmd), ws, ARGV("GIT_CONFIG_NOSYSTEM=1"), NULL);
	if (t.status)
		fail_msg("setup: %s%s", t.out.buf, t.err.buf);
	tu_result_release(&t);

	run_as(&o, uid, ARGV("sh", "-c", attack));
	assert_non_null(strstr(o.out.buf, "evil-made"));
	/* vendored.git existed when the command started: read-only to it */
	assert_non_null(strstr(o.out.buf, "vendored-refused"));
	assert_non_null(strstr(o.err.buf, "Read-only file system"));
	/* the one it made lost its HEAD when it ended, and the note says why */
	if (!strstr(o.err.buf, "/evil', a folder git takes for a repository (HEAD, objects, "
		    "refs), which would steer git outside the sandbox; its HEAD was moved to '"))
		fail_msg("no note of the quarantine:\n%s", o.err.buf);
	assert_false(fsutil_exists(head));

	/* the user's git branch in each, on the host: neither pager runs */
	host_git_branch(uid, "evil");
	host_git_branch(uid, "vendored.git");
	if (marked("evil") || marked("vendored"))
		fail_msg("git branch on the host ran a pager the command configured");

	/* the same git branch does run it once evil/HEAD is put back: the attack is real */
	tu_run(&t, ARGV("sh", "-c", "mv evil/HEAD-quarantined-by-forgex-* evil/HEAD"), ws, NULL,
	       NULL);
	assert_int_equal(t.status, 0);
	tu_result_release(&t);
	host_git_branch(uid, "evil");
	assert_true(marked("evil"));

	buf_release(&o.out);
	buf_release(&o.err);
	free(head);
	free(attack);
	free(setup_cmd);
}

static void test_planted_git_dir_root(void **state)
{
	(void)state;
	need_native();
	planted_git_dir(0);
}

static void test_planted_git_dir_unprivileged(void **state)
{
	(void)state;
	need_native();
	if (geteuid() != 0)
		skip_msg("needs root (to run as uid %d)", NOBODY);
	planted_git_dir(NOBODY);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_planted_git_dir_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_planted_git_dir_unprivileged, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
