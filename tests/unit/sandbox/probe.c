/*
 * The kernel probe (sandbox_kernel_caps()) when user namespaces run out.
 * Each case runs in a child of its own, in a user namespace of its own
 * whose max_user_namespaces the case sets (a limit that binds only there):
 *
 *   - the count full for a moment (another process holds the one allowed,
 *     as a batch or a test suite starting sandboxes at once does): the
 *     probe tries again and the namespaces are not taken for missing;
 *   - the limit 0 (user namespaces switched off): missing at once, and the
 *     native backend's refusal gives the kernel's reason.
 *
 * And the pids cgroup when cgroups named with this process's pid were left
 * by a killed process that had the pid before.
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
#include <time.h>
#include <unistd.h>

#include "base/err.h"
#include "base/fsutil.h"
#include "config/config.h"
#include "helpers/testutil.h"
#include "sandbox/executor.h"
#include "sandbox/sandbox.h"

/* Exit statuses of a case's child besides 0 (the case held). */
enum {
	C_SETUP = 90, C_NO_USERNS, C_HAS_USERNS, C_ERRNO, C_INIT_OK, C_MESSAGE, C_HOLDER, C_NO_PIDS,
	C_LEFT, C_RUN,
};

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return -1;
	ok = write(fd, text, strlen(text)) == (ssize_t)strlen(text);
	close(fd);
	return ok ? 0 : -1;
}

/* Enter a new user namespace mapping this uid and gid, with `limit` user namespaces below it. */
static int enter_userns(long limit)
{
	char map[64];
	uid_t uid = geteuid();
	gid_t gid = getegid();

	if (unshare(CLONE_NEWUSER) < 0)
		return -1;
	snprintf(map, sizeof(map), "%ld %ld 1\n", (long)uid, (long)uid);
	if (write_file("/proc/self/uid_map", map) < 0 ||
	    write_file("/proc/self/setgroups", "deny") < 0)
		return -1;
	snprintf(map, sizeof(map), "%ld %ld 1\n", (long)gid, (long)gid);
	if (write_file("/proc/self/gid_map", map) < 0)
		return -1;
	snprintf(map, sizeof(map), "%ld\n", limit);
	return write_file("/proc/sys/user/max_user_namespaces", map);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Run `body` in a child; its exit status. */
static int in_child(int (*body)(void))
{
	int st;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid)
		_exit(body());
	while (waitpid(pid, &st, 0) < 0)
		assert_int_equal(errno, EINTR);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int can_nest(void)
{
	int st;
	pid_t pid;

	if (enter_userns(10) < 0)
		return C_SETUP;
	pid = fork();
	if (pid < 0)
		return C_SETUP;
	if (!pid)
		_exit(unshare(CLONE_NEWUSER) < 0 ? 1 : 0);
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		return C_SETUP;
	return 0;
}

static void need_nested_userns(void)
{
	if (in_child(can_nest) != 0) {
		print_message("# skip: no nested user namespace with a limit of its own here\n");
		skip();
	}
}

/*
 * The one user namespace allowed is held by another process that ends at
 * once (the kernel frees its namespace some 60 ms after it is reaped); the
 * probe meets ENOSPC, tries again, and finds user namespaces there.
 */
static pid_t holder;

static void reap_holder(int sig)
{
	int e = errno;

	(void)sig;
	if (holder > 0 && waitpid(holder, NULL, WNOHANG) == holder)
		holder = 0;
	errno = e;
}

static int full_for_a_moment(void)
{
	const struct sandbox_caps *c;
	struct sigaction sa;
	int go[2], st;
	pid_t pid;
	char b;

	if (enter_userns(1) < 0 || pipe(go) < 0)
		return C_SETUP;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = reap_holder;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGCHLD, &sa, NULL);
	pid = fork();
	if (pid < 0)
		return C_SETUP;
	if (!pid) {
		if (unshare(CLONE_NEWUSER) < 0 || write(go[1], "x", 1) != 1)
			_exit(C_HOLDER);
		sleep_ms(5);
		_exit(0);
	}
	holder = pid;
	close(go[1]);
	if (read(go[0], &b, 1) != 1)
		return C_HOLDER;
	/* the count is full now: a plain unshare says so */
	pid = fork();
	if (!pid)
		_exit(unshare(CLONE_NEWUSER) < 0 && errno == ENOSPC ? 0 : 1);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return C_SETUP;
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		return C_SETUP;
	c = sandbox_kernel_caps();
	return c->userns ? 0 : C_NO_USERNS;
}

static void test_probe_tries_again_while_the_count_is_full(void **state)
{
	int st;

	(void)state;
	need_nested_userns();
	st = in_child(full_for_a_moment);
	if (st == C_NO_USERNS)
		fail_msg("user namespaces taken for missing while the count was full for a moment");
	assert_int_equal(st, 0);
}

/* The limit 0: no user namespace, the reason given, and the native backend refuses naming it. */
static int switched_off(void)
{
	const struct sandbox_caps *c;
	struct executor ex;
	struct config cfg;
	char *ws;
	int ret;

	if (enter_userns(0) < 0)
		return C_SETUP;
	c = sandbox_kernel_caps();
	if (c->userns)
		return C_HAS_USERNS;
	if (c->unshare_errno != ENOSPC)
		return C_ERRNO;
	/* no user namespace, no mount namespace: the native sandbox cannot start */
	ws = tu_mkdtemp();
	config_init(&cfg);
	free(cfg.sandbox.backend);
	cfg.sandbox.backend = xstrdup("native");
	ret = executor_init(&ex, &cfg, ws);
	if (ret >= 0) {
		executor_release(&ex);
		ret = C_INIT_OK;
	} else {
		ret = strstr(err_last(), "(unshare: No space left on device)") ? 0 : C_MESSAGE;
		if (ret)
			fprintf(stderr, "# the refusal: %s\n", err_last());
	}
	config_release(&cfg);
	tu_rmtree(ws);
	return ret;
}

static void test_probe_switched_off_says_why(void **state)
{
	(void)state;
	need_nested_userns();
	assert_int_equal(in_child(switched_off), 0);
}

/*
 * Cgroups named with this process's pid, left by a process that had the
 * same pid and was killed before removing them (the kernel probe's
 * forgex-probe-PID and a command's forgex-PID-1): the probe still finds
 * the pids cgroup writable, and a command runs under its process limit.
 */
static char pids_parent[256];

static int learn_pids_parent(void)
{
	const struct sandbox_caps *c = sandbox_kernel_caps();

	if (!c->cgroup_pids)
		return C_SETUP;
	dprintf(1, "%s", c->cgroup_pids_dir);
	return 0;
}

static int stale_cgroups_of_this_pid(void)
{
	const char *const argv[] = { "echo", "ran", NULL };
	struct exec_request req = { argv, 2, NULL, 10000, NULL };
	struct exec_result r = EXEC_RESULT_INIT;
	char *probe, *cmd, *ws;
	struct executor ex;
	struct config cfg;
	int ret;

	probe = xstrfmt("%s/forgex-probe-%ld", pids_parent, (long)getpid());
	cmd = xstrfmt("%s/forgex-%ld-1", pids_parent, (long)getpid());
	if (mkdir(probe, 0755) < 0 || mkdir(cmd, 0755) < 0)
		return C_SETUP;
	if (!sandbox_kernel_caps()->cgroup_pids)
		return C_NO_PIDS;
	if (access(probe, F_OK) == 0)
		return C_LEFT;
	ws = tu_mkdtemp();
	config_init(&cfg);
	free(cfg.sandbox.backend);
	cfg.sandbox.backend = xstrdup("native");
	cfg.sandbox.max_processes = 64;
	ret = executor_init(&ex, &cfg, ws);
	if (ret < 0) {
		fprintf(stderr, "# executor_init: %s\n", err_last());
		ret = C_SETUP;
	} else {
		ret = executor_run(&r, &ex, &req);
		if (ret < 0)
			fprintf(stderr, "# executor_run: %s\n", err_last());
		ret = ret < 0 ? C_RUN : r.exit_code || !strstr(r.out.buf, "ran") ? C_RUN : 0;
		exec_result_release(&r);
		executor_release(&ex);
	}
	config_release(&cfg);
	tu_rmtree(ws);
	rmdir(cmd);
	free(probe);
	free(cmd);
	return ret;
}

static void test_probe_stale_cgroups_of_this_pid(void **state)
{
	struct buf out = BUF_INIT;
	int p[2], st;
	pid_t pid;

	(void)state;
	if (geteuid() != 0) {
		print_message("# skip: the pids cgroup is for root\n");
		skip();
	}
	/* where the pids cgroups go, asked by a child (a probe's answer stays in its process) */
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(p[0]);
		dup2(p[1], 1);
		_exit(learn_pids_parent());
	}
	close(p[1]);
	fsutil_read_fd(&out, p[0], sizeof(pids_parent));
	close(p[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	if (!WIFEXITED(st) || WEXITSTATUS(st) || !out.len || out.len >= sizeof(pids_parent)) {
		print_message("# skip: no writable pids cgroup here\n");
		buf_release(&out);
		skip();
	}
	memcpy(pids_parent, out.buf, out.len + 1);
	buf_release(&out);
	st = in_child(stale_cgroups_of_this_pid);
	if (st == C_NO_PIDS)
		fail_msg("a stale forgex-probe-PID of this pid hid the pids cgroup");
	if (st == C_LEFT)
		fail_msg("the stale forgex-probe-PID was left in place");
	if (st == C_RUN)
		fail_msg("a stale forgex-PID-1 of this pid kept the command from running");
	assert_int_equal(st, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probe_tries_again_while_the_count_is_full),
		cmocka_unit_test(test_probe_switched_off_says_why),
		cmocka_unit_test(test_probe_stale_cgroups_of_this_pid),
	};

	return cmocka_run_group_tests_name("unit/sandbox/probe", tests, NULL, NULL);
}
