/*
 * The fault shim of tests/e2e/faults.c, preloaded (LD_PRELOAD) into
 * forgex-core: it counts the calls that change the workspace — write(2)
 * to a file in it, open with O_CREAT, rename, unlink, mkdir, symlink — and
 * at step N does what FX_SHIM_MODE says:
 *
 *   count   nothing (every step is logged, the total written at exit)
 *   kill    SIGKILL before step N runs (so after step N-1)
 *   full    fills the file system of the workspace (FX_SHIM_FILL, a file
 *           outside it on the same small tmpfs) before step N: from there
 *           on the kernel says ENOSPC as a disk filled by another program
 *   rofs    from step N on, every call that would change a name in the
 *           workspace or open a file of it for writing fails EROFS (a
 *           folder made read-only; descriptors opened before still write)
 *
 * Environment (read once at load, then removed with LD_PRELOAD itself, so
 * the programs forgex starts — the sandboxed commands, the tests — run
 * without the shim): FX_SHIM_ROOT the workspace (absolute, resolved),
 * FX_SHIM_STEP N, FX_SHIM_MODE, FX_SHIM_LOG a file outside the workspace
 * that gets one line "N OP PATH" per step (the last one is where it
 * acted), FX_SHIM_FILL for "full". Only a process whose program is
 * forgex-core acts; the launcher (forgex) keeps the environment for it.
 *
 * Not counted: the checkpoints' object store, the repository map, the
 * event log and the transcript (.forgex/checkpoints, .forgex/map,
 * events.jsonl, transcript.jsonl), whose writes are many and are no step
 * of the journal; the faults of "full" and "rofs" reach them all the same.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

enum shim_mode { SHIM_OFF, SHIM_COUNT, SHIM_KILL, SHIM_FULL, SHIM_ROFS };

static enum shim_mode mode;
static char root[PATH_MAX];
static size_t root_len;
static long step_at;
static long steps;		/* atomically incremented */
static int rofs_on;		/* set once step N is reached in rofs mode */
static int log_fd = -1;
static char fill_path[PATH_MAX];

/* The real calls, without going through the shim (no recursion). */
static ssize_t raw_write(int fd, const void *b, size_t n)
{
	return syscall(SYS_write, fd, b, n);
}

static int raw_open(const char *p, int flags, mode_t m)
{
	return (int)syscall(SYS_openat, AT_FDCWD, p, flags, m);
}

__attribute__((constructor)) static void shim_load(void)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *m = getenv("FX_SHIM_MODE"), *r = getenv("FX_SHIM_ROOT");
	const char *s = getenv("FX_SHIM_STEP"), *l = getenv("FX_SHIM_LOG");
	const char *f = getenv("FX_SHIM_FILL");

	if (n <= 0)
		return;
	exe[n] = '\0';
	n = (ssize_t)strlen(exe);
	if (n < 11 || strcmp(exe + n - 11, "forgex-core"))
		return;	/* the launcher: forgex-core, which it runs, acts */
	if (m && r && strlen(r) < sizeof(root)) {
		snprintf(root, sizeof(root), "%s", r);
		root_len = strlen(root);
		step_at = s ? atol(s) : 0;
		mode = !strcmp(m, "kill") ? SHIM_KILL : !strcmp(m, "full") ? SHIM_FULL :
		       !strcmp(m, "rofs") ? SHIM_ROFS : SHIM_COUNT;
		if (l)
			log_fd = raw_open(l, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (f)
			snprintf(fill_path, sizeof(fill_path), "%s", f);
	}
	unsetenv("FX_SHIM_MODE");
	unsetenv("FX_SHIM_ROOT");
	unsetenv("FX_SHIM_STEP");
	unsetenv("FX_SHIM_LOG");
	unsetenv("FX_SHIM_FILL");
	unsetenv("LD_PRELOAD");
}

/* Write until the file system says no more: as another program would. */
static void fill_disk(void)
{
	static char block[1 << 16];
	size_t sz;
	int fd = raw_open(fill_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

	if (fd < 0)
		return;
	for (sz = sizeof(block); sz; sz /= 2)
		while (raw_write(fd, block, sz) > 0)
			;
	close(fd);
}

/* `rel` (relative to `dirfd`) as an absolute path, without resolving its last name. */
static int absolute(char *out, size_t size, int dirfd, const char *rel)
{
	char base[PATH_MAX];
	ssize_t n;

	if (!rel)
		return -1;
	if (*rel == '/') {
		snprintf(out, size, "%s", rel);
		return 0;
	}
	if (dirfd == AT_FDCWD) {
		if (!getcwd(base, sizeof(base)))
			return -1;
	} else {
		char link[64];

		snprintf(link, sizeof(link), "/proc/self/fd/%d", dirfd);
		n = readlink(link, base, sizeof(base) - 1);
		if (n <= 0)
			return -1;
		base[n] = '\0';
	}
	if ((size_t)snprintf(out, size, "%s/%s", base, rel) >= size)
		return -1;
	return 0;
}

static int in_root(const char *p)
{
	return root_len && !strncmp(p, root, root_len) && (p[root_len] == '/' || !p[root_len]);
}

static int ends_with(const char *p, const char *tail)
{
	size_t n = strlen(p), t = strlen(tail);

	return n >= t && !strcmp(p + n - t, tail);
}

static int counted(const char *p)
{
	return !strstr(p, "/.forgex/checkpoints/") && !strstr(p, "/.forgex/map/") &&
	       !ends_with(p, "/.forgex/map") && !strstr(p, "/events.jsonl") &&
	       !strstr(p, "/transcript.jsonl");
}

/*
 * One step on `path` (absolute; NULL when not known): counted, logged,
 * and acted on. Returns an errno to fail the call with, or 0 to run it.
 */
static int step(const char *op, const char *path, int name_change)
{
	long n;

	if (mode == SHIM_OFF || !path || !in_root(path))
		return 0;
	if (counted(path)) {
		n = __atomic_add_fetch(&steps, 1, __ATOMIC_SEQ_CST);
		if (log_fd >= 0 && (mode == SHIM_COUNT || n == step_at)) {
			char line[PATH_MAX + 64];
			int len = snprintf(line, sizeof(line), "%ld %s %s\n", n, op,
					   path + root_len + (path[root_len] == '/'));

			if (len > 0)
				raw_write(log_fd, line, (size_t)len < sizeof(line) ? (size_t)len
										   : sizeof(line) - 1);
		}
		if (n == step_at) {
			if (mode == SHIM_KILL)
				raise(SIGKILL);
			if (mode == SHIM_FULL)
				fill_disk();
			if (mode == SHIM_ROFS)
				__atomic_store_n(&rofs_on, 1, __ATOMIC_SEQ_CST);
		}
	}
	if (name_change && __atomic_load_n(&rofs_on, __ATOMIC_SEQ_CST))
		return EROFS;
	return 0;
}

static int fd_step(const char *op, int fd)
{
	char link[64], p[PATH_MAX];
	ssize_t n;

	if (mode == SHIM_OFF)
		return 0;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, p, sizeof(p) - 1);
	if (n <= 0 || *p != '/')
		return 0;
	p[n] = '\0';
	return step(op, p, 0);
}

static int path_step(const char *op, int dirfd, const char *rel, int name_change)
{
	char p[PATH_MAX];

	if (mode == SHIM_OFF || absolute(p, sizeof(p), dirfd, rel) < 0)
		return 0;
	return step(op, p, name_change);
}

#define REAL(ret, name, ...) \
	static ret (*real)(__VA_ARGS__); \
	if (!real) \
		real = (ret (*)(__VA_ARGS__))dlsym(RTLD_NEXT, name)

#define FAIL_IF(e) \
	do { \
		int e_ = (e); \
		if (e_) { \
			errno = e_; \
			return -1; \
		} \
	} while (0)

ssize_t write(int fd, const void *b, size_t n)
{
	REAL(ssize_t, "write", int, const void *, size_t);
	if (n)
		FAIL_IF(fd_step("write", fd));
	return real(fd, b, n);
}

ssize_t writev(int fd, const struct iovec *v, int cnt)
{
	REAL(ssize_t, "writev", int, const struct iovec *, int);
	FAIL_IF(fd_step("write", fd));
	return real(fd, v, cnt);
}

/* An open that writes (creates, truncates or may write): a step; refused on a read-only folder. */
static int open_step(int dirfd, const char *p, int flags)
{
	if ((flags & O_ACCMODE) == O_RDONLY && !(flags & (O_CREAT | O_TRUNC)))
		return 0;
	return path_step(flags & O_CREAT ? "create" : "open", dirfd, p, 1);
}

#define OPEN_MODE(flags, m) \
	mode_t m = 0; \
	if ((flags) & (O_CREAT | __O_TMPFILE)) { \
		va_list ap_; \
		va_start(ap_, flags); \
		m = (mode_t)va_arg(ap_, int); \
		va_end(ap_); \
	}

int open(const char *p, int flags, ...)
{
	REAL(int, "open", const char *, int, ...);
	OPEN_MODE(flags, m);
	FAIL_IF(open_step(AT_FDCWD, p, flags));
	return real(p, flags, m);
}

int open64(const char *p, int flags, ...)
{
	REAL(int, "open64", const char *, int, ...);
	OPEN_MODE(flags, m);
	FAIL_IF(open_step(AT_FDCWD, p, flags));
	return real(p, flags, m);
}

int openat(int dirfd, const char *p, int flags, ...)
{
	REAL(int, "openat", int, const char *, int, ...);
	OPEN_MODE(flags, m);
	FAIL_IF(open_step(dirfd, p, flags));
	return real(dirfd, p, flags, m);
}

int openat64(int dirfd, const char *p, int flags, ...)
{
	REAL(int, "openat64", int, const char *, int, ...);
	OPEN_MODE(flags, m);
	FAIL_IF(open_step(dirfd, p, flags));
	return real(dirfd, p, flags, m);
}

/* glibc's checked opens (_FORTIFY_SOURCE), declared by no header */
int __open_2(const char *p, int flags);
int __openat_2(int dirfd, const char *p, int flags);

int __open_2(const char *p, int flags)
{
	REAL(int, "__open_2", const char *, int);
	FAIL_IF(open_step(AT_FDCWD, p, flags));
	return real(p, flags);
}

int __openat_2(int dirfd, const char *p, int flags)
{
	REAL(int, "__openat_2", int, const char *, int);
	FAIL_IF(open_step(dirfd, p, flags));
	return real(dirfd, p, flags);
}

int creat(const char *p, mode_t m)
{
	REAL(int, "creat", const char *, mode_t);
	FAIL_IF(path_step("create", AT_FDCWD, p, 1));
	return real(p, m);
}

int rename(const char *a, const char *b)
{
	REAL(int, "rename", const char *, const char *);
	FAIL_IF(path_step("rename", AT_FDCWD, b, 1));
	return real(a, b);
}

int renameat(int da, const char *a, int db, const char *b)
{
	REAL(int, "renameat", int, const char *, int, const char *);
	FAIL_IF(path_step("rename", db, b, 1));
	return real(da, a, db, b);
}

int renameat2(int da, const char *a, int db, const char *b, unsigned flags)
{
	REAL(int, "renameat2", int, const char *, int, const char *, unsigned);
	FAIL_IF(path_step("rename", db, b, 1));
	return real(da, a, db, b, flags);
}

int unlink(const char *p)
{
	REAL(int, "unlink", const char *);
	FAIL_IF(path_step("unlink", AT_FDCWD, p, 1));
	return real(p);
}

int unlinkat(int dirfd, const char *p, int flags)
{
	REAL(int, "unlinkat", int, const char *, int);
	FAIL_IF(path_step("unlink", dirfd, p, 1));
	return real(dirfd, p, flags);
}

int rmdir(const char *p)
{
	REAL(int, "rmdir", const char *);
	FAIL_IF(path_step("unlink", AT_FDCWD, p, 1));
	return real(p);
}

/* A folder that is there already: mkdir changes nothing, so it is no step. */
static int exists_at(int dirfd, const char *p)
{
	struct stat st;

	return fstatat(dirfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

int mkdir(const char *p, mode_t m)
{
	REAL(int, "mkdir", const char *, mode_t);
	if (!exists_at(AT_FDCWD, p))
		FAIL_IF(path_step("mkdir", AT_FDCWD, p, 1));
	return real(p, m);
}

int mkdirat(int dirfd, const char *p, mode_t m)
{
	REAL(int, "mkdirat", int, const char *, mode_t);
	if (!exists_at(dirfd, p))
		FAIL_IF(path_step("mkdir", dirfd, p, 1));
	return real(dirfd, p, m);
}

int symlink(const char *t, const char *p)
{
	REAL(int, "symlink", const char *, const char *);
	FAIL_IF(path_step("symlink", AT_FDCWD, p, 1));
	return real(t, p);
}

int symlinkat(const char *t, int dirfd, const char *p)
{
	REAL(int, "symlinkat", const char *, int, const char *);
	FAIL_IF(path_step("symlink", dirfd, p, 1));
	return real(t, dirfd, p);
}

int fchmod(int fd, mode_t m)
{
	char link[64], p[PATH_MAX];
	ssize_t n;

	REAL(int, "fchmod", int, mode_t);
	if (__atomic_load_n(&rofs_on, __ATOMIC_SEQ_CST)) {
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		n = readlink(link, p, sizeof(p) - 1);
		if (n > 0) {
			p[n] = '\0';
			FAIL_IF(in_root(p) ? EROFS : 0);
		}
	}
	return real(fd, m);
}
