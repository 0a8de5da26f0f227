/* The workspace lock: one writer, a holder named, a dead holder's lock free, no links. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "helpers/testutil.h"
#include "pipeline/lock.h"

/* A child that takes the lock, says so through a pipe, and sleeps. */
static pid_t holder(const char *ws)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe(p))
		abort();
	pid = fork();
	if (!pid) {
		struct ws_lock l = WS_LOCK_INIT;

		close(p[0]);
		if (ws_lock_acquire(&l, ws, "run 20261201-000000-abcd", 1, NULL, NULL, NULL) < 0)
			_exit(1);
		if (write(p[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	return pid;
}

static int waited;

static void on_wait(void *data, const char *who)
{
	(void)data;
	(void)who;
	waited++;
}

static void test_lock_names_holder_and_frees_on_death(void **state)
{
	char *ws = tu_mkdtemp();
	struct ws_lock l = WS_LOCK_INIT;
	struct buf who = BUF_INIT;
	char want[64];
	pid_t pid;
	int st;

	(void)state;
	pid = holder(ws);
	/* --no-wait: refused at once, naming pid, run and time */
	assert_int_equal(ws_lock_acquire(&l, ws, "undo", 1, NULL, NULL, NULL), FX_EEXISTS);
	snprintf(want, sizeof(want), "pid %ld (run 20261201-000000-abcd), since 20", (long)pid);
	assert_non_null(strstr(err_last(), want));
	assert_int_equal(ws_lock_holder(&who, ws), 1);
	assert_non_null(strstr(who.buf, want));
	/* the holder is killed: its lock is free, with no clean-up by anyone */
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	waited = 0;
	assert_int_equal(ws_lock_acquire(&l, ws, "undo", 0, on_wait, NULL, NULL), 0);
	assert_int_equal(waited, 0);
	ws_lock_release(&l);
	buf_reset(&who);
	assert_int_equal(ws_lock_holder(&who, ws), 0);
	buf_release(&who);
	tu_rmtree(ws);
}

static void test_lock_waits_then_takes(void **state)
{
	char *ws = tu_mkdtemp();
	struct ws_lock l = WS_LOCK_INIT;
	pid_t pid, killer;
	int st;

	(void)state;
	pid = holder(ws);
	killer = fork();
	if (!killer) {
		usleep(400000);
		kill(pid, SIGTERM);
		_exit(0);
	}
	waited = 0;
	assert_int_equal(ws_lock_acquire(&l, ws, "run", 0, on_wait, NULL, NULL), 0);
	assert_int_equal(waited, 1);
	ws_lock_release(&l);
	waitpid(pid, &st, 0);
	waitpid(killer, &st, 0);
	tu_rmtree(ws);
}

static void test_lock_cancelled_while_waiting(void **state)
{
	char *ws = tu_mkdtemp();
	struct ws_lock l = WS_LOCK_INIT;
	volatile sig_atomic_t cancel = 1;
	pid_t pid;
	int st;

	(void)state;
	pid = holder(ws);
	assert_int_equal(ws_lock_acquire(&l, ws, "run", 0, NULL, NULL, &cancel), FX_EINTR);
	kill(pid, SIGKILL);
	waitpid(pid, &st, 0);
	tu_rmtree(ws);
}

/* A link or FIFO planted as .forgex/runs/.lock is refused by name, never followed. */
static void test_lock_planted_link_or_fifo(void **state)
{
	char *ws = tu_mkdtemp(), *other = tu_mkdtemp();
	char *lock = xstrfmt("%s/.forgex/runs/.lock", ws), *target = xstrfmt("%s/victim", other);
	struct ws_lock l = WS_LOCK_INIT;
	struct stat st;

	(void)state;
	tu_write(ws, ".forgex/runs/.gitignore", "*\n");
	assert_int_equal(symlink(target, lock), 0);
	assert_int_equal(ws_lock_acquire(&l, ws, "run", 1, NULL, NULL, NULL), FX_EDENIED);
	assert_non_null(strstr(err_last(), ".forgex/runs/.lock is a symbolic link"));
	assert_int_not_equal(lstat(target, &st), 0);
	unlink(lock);
	assert_int_equal(mkfifo(lock, 0600), 0);
	assert_int_equal(ws_lock_acquire(&l, ws, "run", 1, NULL, NULL, NULL), FX_EDENIED);
	assert_non_null(strstr(err_last(), ".forgex/runs/.lock is a named pipe"));
	free(lock);
	free(target);
	tu_rmtree(ws);
	tu_rmtree(other);
}

static void test_lock_start_ticks(void **state)
{
	(void)state;
	assert_true(ws_lock_start_ticks((long)getpid()) > 0);
	assert_int_equal(ws_lock_start_ticks(0x7ffffff0L), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lock_names_holder_and_frees_on_death),
		cmocka_unit_test(test_lock_waits_then_takes),
		cmocka_unit_test(test_lock_cancelled_while_waiting),
		cmocka_unit_test(test_lock_planted_link_or_fifo),
		cmocka_unit_test(test_lock_start_ticks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
