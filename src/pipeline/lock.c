/* The workspace lock; see lock.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "pipeline/lock.h"
#include "pipeline/rundir.h"

#define LOCK_NAME "runs/.lock"
#define RUNS_IGNORE "runs/.gitignore"

/*
 * `git status` must not show forgex's own files, even where nothing added
 * .forgex/runs/ to .git/info/exclude (a checkpoint restore before any run):
 * the folder ignores itself, as the shadow repository does.
 */
static void ignore_runs(const char *workspace)
{
	static const char text[] = "# written by forgex\n*\n";
	int fd = rundir_forgex_open(workspace, RUNS_IGNORE, O_WRONLY | O_CREAT | O_EXCL, 0644);

	if (fd >= 0) {
		if (fsutil_write_all(fd, text, sizeof(text) - 1) < 0)
			err_clear();
		close(fd);
	}
	err_clear();
}

unsigned long long ws_lock_start_ticks(long pid)
{
	char path[64], data[1024];
	unsigned long long ticks = 0;
	const char *p;
	ssize_t n;
	int fd, field;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, data, sizeof(data) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	data[n] = '\0';
	/* the command name (field 2) may hold spaces and ')': start after the last ')' */
	p = strrchr(data, ')');
	if (!p)
		return 0;
	for (field = 2; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	if (field == 22)
		ticks = strtoull(p, NULL, 10);
	return ticks;
}

static void write_holder(int fd, const char *what)
{
	char line[512];
	int n = snprintf(line, sizeof(line), "%ld %llu %lld %s\n", (long)getpid(),
			 ws_lock_start_ticks((long)getpid()), (long long)time(NULL),
			 what ? what : "forgex");

	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = (int)sizeof(line) - 1;
	/* best effort: the flock is the lock, this line only names its holder */
	if (ftruncate(fd, 0) == 0 && pwrite(fd, line, (size_t)n, 0) < 0)
		errno = 0;
}

/* "pid 123 (run X), since 2026-12-01 08:00:00 UTC" from the holder line. */
static void describe_holder(struct buf *out, int fd)
{
	char data[600];
	ssize_t n = pread(fd, data, sizeof(data) - 1, 0);
	long pid = 0;
	unsigned long long ticks = 0;
	long long since = 0;
	int used = 0;

	if (n <= 0 || sscanf((data[n] = '\0', data), "%ld %llu %lld %n", &pid, &ticks, &since,
			     &used) < 3) {
		buf_addstr(out, "another forgex (it has not said who yet)");
		return;
	}
	data[strcspn(data, "\n")] = '\0';
	buf_addf(out, "pid %ld (%s)", pid, data + used);
	if (since > 0) {
		time_t t = (time_t)since;
		struct tm tm;
		char when[64];

		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
		buf_addf(out, ", since %s", when);
	}
	if (pid > 0 && (kill((pid_t)pid, 0) < 0 && errno == ESRCH))
		buf_addstr(out, "; that process is gone, but a process it started still holds "
			   "the lock");
	else if (pid > 0 && ticks && ws_lock_start_ticks(pid) != ticks)
		buf_addstr(out, "; that pid is now another process, but a process the holder "
			   "started still holds the lock");
}

static int open_lock(const char *workspace)
{
	int fd;

	ignore_runs(workspace);
	fd = rundir_forgex_open(workspace, LOCK_NAME, O_RDWR | O_CREAT, 0600);

	if (fd < 0)
		return err_prefix(fd, "cannot open the workspace lock");
	return fd;
}

int ws_lock_acquire(struct ws_lock *l, const char *workspace, const char *what, int no_wait,
		    ws_lock_wait_fn on_wait, void *data, const volatile sig_atomic_t *cancel)
{
	int fd, told = 0;

	l->fd = -1;
	fd = open_lock(workspace);
	if (fd < 0)
		return fd;
	for (;;) {
		struct buf who = BUF_INIT;
		struct timespec ts = { 0, 100 * 1000000L };

		if (!flock(fd, LOCK_EX | LOCK_NB))
			break;
		if (errno != EWOULDBLOCK && errno != EINTR) {
			int ret = err_set_errno(FX_EOS, "cannot lock %s/.forgex/" LOCK_NAME, workspace);

			close(fd);
			return ret;
		}
		if (cancel && *cancel) {
			close(fd);
			return err_set(FX_EINTR, "interrupted while waiting for the workspace lock");
		}
		if (no_wait || !told) {
			describe_holder(&who, fd);
			if (no_wait) {
				int ret = err_set(FX_EEXISTS, "another forgex is changing this workspace: "
						  "%s (wait for it, or run again without --no-wait "
						  "to wait)", who.buf);

				buf_release(&who);
				close(fd);
				return ret;
			}
			if (on_wait)
				on_wait(data, who.buf);
			told = 1;
		}
		buf_release(&who);
		nanosleep(&ts, NULL);
	}
	write_holder(fd, what);
	l->fd = fd;
	return 0;
}

void ws_lock_describe(struct ws_lock *l, const char *what)
{
	if (l->fd >= 0)
		write_holder(l->fd, what);
}

void ws_lock_release(struct ws_lock *l)
{
	if (l->fd < 0)
		return;
	if (ftruncate(l->fd, 0) < 0)
		errno = 0;
	flock(l->fd, LOCK_UN);
	close(l->fd);
	l->fd = -1;
}

int ws_lock_holder(struct buf *out, const char *workspace)
{
	int fd = rundir_forgex_open(workspace, LOCK_NAME, O_RDONLY, 0), held = 0;


	if (fd < 0) {
		err_clear();
		return 0;
	}
	if (flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
		describe_holder(out, fd);
		held = 1;
	} else {
		flock(fd, LOCK_UN);
	}
	close(fd);
	return held;
}
