/* Opening beneath a folder without following links; see beneath.h. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/beneath.h"
#include "base/buf.h"

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

#define RESOLVE_CONFINED (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* -1: not yet known, 0: missing, 1: present. */
static atomic_int have_openat2 = -1;
static atomic_int forced_fallback;

static int sys_openat2(int dirfd, const char *path, int flags, mode_t mode,
		       unsigned long long resolve)
{
	struct open_how how;

	memset(&how, 0, sizeof(how));
	how.flags = (unsigned long long)flags;
	how.mode = (flags & (O_CREAT | __O_TMPFILE)) ? (unsigned long long)mode : 0;
	how.resolve = resolve;
	return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
}

int beneath_have_openat2(void)
{
	int have = atomic_load(&have_openat2);

	if (atomic_load(&forced_fallback))
		return 0;
	if (have < 0) {
		int fd = sys_openat2(AT_FDCWD, "/", O_PATH | O_CLOEXEC, 0, RESOLVE_NO_MAGICLINKS);

		/* ENOSYS: an old kernel; EPERM: a seccomp filter that does not know it. */
		have = fd >= 0;
		if (fd >= 0)
			close(fd);
		atomic_store(&have_openat2, have);
	}
	return have;
}

int beneath_force_fallback(int on)
{
	return atomic_exchange(&forced_fallback, on ? 1 : 0);
}

/* The walk without openat2: one component at a time, O_NOFOLLOW each, no "..". */
static int open_walk(int dirfd, const char *rel, int flags, mode_t mode)
{
	const char *p = rel;
	int fd = -1, e;

	for (;;) {
		const char *end = strchrnul(p, '/');
		size_t n = (size_t)(end - p);
		const char *rest = end;
		char *comp;
		int next;

		while (*rest == '/')
			rest++;
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			e = EXDEV;	/* as RESOLVE_BENEATH says it */
			goto fail;
		}
		if (!n || (n == 1 && p[0] == '.')) {
			if (!*rest)
				break;
			p = rest;
			continue;
		}
		comp = xstrndup(p, n);
		if (*rest)
			next = openat(fd < 0 ? dirfd : fd, comp,
				      O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		else
			next = openat(fd < 0 ? dirfd : fd, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
		e = errno;
		free(comp);
		if (fd >= 0)
			close(fd);
		fd = -1;
		if (next < 0) {
			/* O_NOFOLLOW on a link says ELOOP, but with O_DIRECTORY it says ENOTDIR */
			if (e == ENOTDIR) {
				struct stat st;
				char *upto = xstrndup(rel, (size_t)(end - rel));

				if (!fstatat(dirfd, upto, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode))
					e = ELOOP;
				free(upto);
			}
			goto fail;
		}
		if (!*rest)
			return next;
		fd = next;
		p = rest;
	}
	/* nothing but "." and slashes: the folder itself */
	if (fd >= 0) {
		int self = openat(fd, ".", flags | O_CLOEXEC, mode);

		e = errno;
		close(fd);
		errno = e;
		return self;
	}
	return openat(dirfd, ".", flags | O_CLOEXEC, mode);
fail:
	if (fd >= 0)
		close(fd);
	errno = e;
	return -1;
}

int beneath_open(int dirfd, const char *rel, int flags, mode_t mode)
{
	int fd, tries = 0;

	if (!*rel)
		rel = ".";
	if (*rel == '/') {
		errno = EXDEV;
		return -1;
	}
	if (beneath_have_openat2()) {
		do
			fd = sys_openat2(dirfd, rel, flags | O_CLOEXEC, mode, RESOLVE_CONFINED);
		while (fd < 0 && (errno == EAGAIN || errno == EINTR) && ++tries < 16);
		/*
		 * ENOSYS, EPERM: a seccomp filter installed since the probe (a
		 * sandboxed child); ENAMETOOLONG: a path longer than PATH_MAX,
		 * which the walk opens a component at a time.
		 */
		if (fd >= 0 || (errno != ENOSYS && errno != EPERM && errno != ENAMETOOLONG))
			return fd;
	}
	return open_walk(dirfd, rel, flags, mode);
}

size_t beneath_link_prefix(int dirfd, const char *rel)
{
	const char *p = rel;

	while (*p) {
		const char *end = strchrnul(p, '/');
		char *upto = xstrndup(rel, (size_t)(end - rel));
		struct stat st;
		int link = !fstatat(dirfd, upto, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode);

		free(upto);
		if (link)
			return (size_t)(end - rel);
		p = *end ? end + 1 : end;
	}
	return 0;
}

int beneath_mkdir(int dirfd, const char *rel, mode_t mode)
{
	const char *slash = strrchr(rel, '/');
	const char *name = slash ? slash + 1 : rel;
	int pfd = dirfd, ret, saved;

	if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
		errno = EINVAL;
		return -1;
	}
	if (slash) {
		char *parent = strndup(rel, (size_t)(slash - rel));

		if (!parent) {
			errno = ENOMEM;
			return -1;
		}
		pfd = beneath_open(dirfd, parent, O_RDONLY | O_DIRECTORY, 0);
		free(parent);
		if (pfd < 0)
			return -1;
	}
	/* mkdirat() never follows a link in the last component: EEXIST instead */
	ret = mkdirat(pfd, name, mode);
	saved = errno;
	if (pfd != dirfd)
		close(pfd);
	errno = saved;
	return ret;
}
