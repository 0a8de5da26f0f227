#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/beneath.h"
#include "base/fsutil.h"
#include "base/path.h"

int fsutil_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return err_set_errno(FX_EOS, "write failed");
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int fsutil_later_mtime(int fd, const struct stat *old)
{
	struct timespec ts[2];

	if (clock_gettime(CLOCK_REALTIME, &ts[1]) < 0)
		return 0;
	if (ts[1].tv_sec > old->st_mtim.tv_sec)
		return 0;
	ts[0].tv_sec = 0;
	ts[0].tv_nsec = UTIME_OMIT;
	ts[1].tv_sec = old->st_mtim.tv_sec + 1;
	ts[1].tv_nsec = 0;
	return futimens(fd, ts);
}

#define TMP_BASE_MAX 200

/* A new temporary entry for `name`: a file (returned open), a symbolic link, or a hard link. */
static int tmp_make(char tmp[FSUTIL_TMP_NAME_MAX], int dirfd, const char *name,
		    const char *link_target, int hard, const struct fsutil_tmp_hook *hook)
{
	unsigned int rnd = 0;
	int tries, fd, ret;

	for (tries = 0; tries < 100; tries++) {
		if (getrandom(&rnd, sizeof(rnd), 0) != sizeof(rnd))
			rnd = (unsigned int)getpid() * 2654435761u + (unsigned int)tries;
		snprintf(tmp, FSUTIL_TMP_NAME_MAX, ".%.*s.fx-%08x.tmp", TMP_BASE_MAX, name, rnd);
		/* named first: a kill between the two leaves a name someone knows */
		if (hook && hook->before_create &&
		    (ret = hook->before_create(hook->data, hook->rel, tmp)) < 0)
			return ret;
		if (hard) {
			if (!linkat(dirfd, name, dirfd, tmp, 0))
				return 0;
		} else if (link_target) {
			if (!symlinkat(link_target, dirfd, tmp))
				return 0;
		} else {
			fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW,
				    0600);
			if (fd >= 0)
				return fd;
		}
		if (errno != EEXIST)
			return err_set_errno(FX_EOS, "cannot create a temporary file for '%s'", name);
	}
	return err_set(FX_EOS, "cannot create a temporary file for '%s'", name);
}

int fsutil_tmp_create(char tmp[FSUTIL_TMP_NAME_MAX], int dirfd, const char *name,
		      const char *link_target, const struct fsutil_tmp_hook *hook)
{
	return tmp_make(tmp, dirfd, name, link_target, 0, hook);
}

int fsutil_tmp_hardlink(char tmp[FSUTIL_TMP_NAME_MAX], int dirfd, const char *name,
			const struct fsutil_tmp_hook *hook)
{
	return tmp_make(tmp, dirfd, name, NULL, 1, hook);
}

int fsutil_tmp_is_for(const char *tmp, const char *name)
{
	size_t n = strnlen(name, TMP_BASE_MAX), i;

	if (!*name || tmp[0] != '.' || strncmp(tmp + 1, name, n) || strncmp(tmp + 1 + n, ".fx-", 4))
		return 0;
	tmp += 1 + n + 4;
	for (i = 0; i < 8; i++)
		if (!tmp[i] || !strchr("0123456789abcdef", tmp[i]))
			return 0;
	return !strcmp(tmp + 8, ".tmp");
}

int fsutil_write_atomic_at(int dirfd, const char *name, const void *data, size_t len,
			   mode_t mode)
{
	return fsutil_write_atomic_hooked(dirfd, name, data, len, mode, NULL);
}

int fsutil_write_atomic_hooked(int dirfd, const char *name, const void *data, size_t len,
			       mode_t mode, const struct fsutil_tmp_hook *hook)
{
	char tmp[FSUTIL_TMP_NAME_MAX];
	struct stat st;
	int fd, ret = 0, had = 0;

	if (strchr(name, '/') || !*name)
		return err_set(FX_EINVAL, "'%s' is not a plain file name", name);
	if (!fstatat(dirfd, name, &st, 0)) {
		if (!S_ISREG(st.st_mode))
			return err_set(FX_EINVAL, "'%s' exists and is not a regular file", name);
		mode = st.st_mode & 07777;
		had = 1;
	}
	fd = fsutil_tmp_create(tmp, dirfd, name, NULL, hook);
	if (fd < 0)
		return fd;
	ret = fsutil_write_all(fd, data, len);
	if (ret < 0) {
		err_prefix(ret, "cannot write '%s'", name);
		goto fail;
	}
	if (fchmod(fd, mode) < 0) {
		ret = err_set_errno(FX_EOS, "cannot set the mode of '%s'", name);
		goto fail;
	}
	if (had && fsutil_later_mtime(fd, &st) < 0) {
		ret = err_set_errno(FX_EOS, "cannot set the time of '%s'", name);
		goto fail;
	}
	if (fsync(fd) < 0) {
		ret = err_set_errno(FX_EOS, "cannot flush '%s' to disk", name);
		goto fail;
	}
	if (close(fd) < 0) {
		fd = -1;
		ret = err_set_errno(FX_EOS, "cannot close '%s'", name);
		goto fail;
	}
	fd = -1;
	if (renameat(dirfd, tmp, dirfd, name) < 0) {
		ret = err_set_errno(FX_EOS, "cannot rename the new '%s' into place", name);
		goto fail;
	}
	/* The rename is durable only once the folder is. */
	if (fsync(dirfd) < 0 && errno != EINVAL && errno != EROFS)
		return err_set_errno(FX_EOS, "cannot flush the folder of '%s'", name);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	unlinkat(dirfd, tmp, 0);
	return ret;
}

int fsutil_write_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	struct buf dir = BUF_INIT, base = BUF_INIT;
	int dirfd, ret;

	path_dirname(&dir, path);
	path_basename(&base, path);
	dirfd = open(dir.buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		ret = err_set_errno(errno == ENOENT ? FX_ENOTFOUND : FX_EOS,
				    "cannot open folder '%s'", dir.buf);
		goto out;
	}
	ret = fsutil_write_atomic_at(dirfd, base.buf, data, len, mode);
	if (ret < 0)
		err_prefix(ret, "%s", path);
	close(dirfd);
out:
	buf_release(&dir);
	buf_release(&base);
	return ret;
}

int fsutil_read_fd(struct buf *out, int fd, size_t max)
{
	size_t start = out->len;

	for (;;) {
		ssize_t n;

		buf_grow(out, 8192);
		n = read(fd, out->buf + out->len, out->alloc - out->len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			buf_setlen(out, start);
			return err_set_errno(FX_EOS, "read failed");
		}
		if (!n)
			break;
		buf_setlen(out, out->len + (size_t)n);
		if (max && out->len - start > max) {
			buf_setlen(out, start);
			return err_set(FX_ELIMIT, "more than %zu bytes", max);
		}
	}
	return 0;
}

int fsutil_read_file(struct buf *out, const char *path, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret;

	if (fd < 0)
		return err_set_errno(errno == ENOENT ? FX_ENOTFOUND : FX_EOS,
				     "cannot open '%s'", path);
	ret = fsutil_read_fd(out, fd, max);
	if (ret < 0)
		err_prefix(ret, "cannot read '%s'", path);
	close(fd);
	return ret;
}

int fsutil_mkdir_p(const char *path, mode_t mode)
{
	struct buf b = BUF_INIT;
	size_t i;
	int ret = 0;

	buf_addstr(&b, path);
	for (i = 1; i <= b.len; i++) {
		if (i < b.len && b.buf[i] != '/')
			continue;
		b.buf[i] = '\0';
		if (mkdir(b.buf, mode) < 0 && errno != EEXIST) {
			ret = err_set_errno(FX_EOS, "cannot create folder '%s'", b.buf);
			break;
		}
		if (i < b.len)
			b.buf[i] = '/';
	}
	if (!ret && !fsutil_is_dir(path))
		ret = err_set(FX_EEXISTS, "'%s' exists and is not a folder", path);
	buf_release(&b);
	return ret;
}

int fsutil_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

int fsutil_is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int remove_at(int parent, const char *name)
{
	struct dirent *de;
	DIR *d;
	int fd, ret = 0;

	if (!unlinkat(parent, name, 0) || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return err_set_errno(FX_EOS, "cannot remove '%s'", name);
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return err_set_errno(FX_EOS, "cannot open '%s'", name);
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return err_set_errno(FX_EOS, "cannot read '%s'", name);
	}
	while ((de = readdir(d)) && !ret) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		ret = remove_at(dirfd(d), de->d_name);
	}
	closedir(d);
	if (!ret && unlinkat(parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		ret = err_set_errno(FX_EOS, "cannot remove folder '%s'", name);
	return ret;
}

int fsutil_remove_tree(const char *path)
{
	return remove_at(AT_FDCWD, path);
}

int fsutil_remove_tree_at(int dirfd, const char *name)
{
	return remove_at(dirfd, name);
}

int fsutil_open_beneath(int dirfd, const char *rel)
{
	return beneath_open(dirfd, rel, O_RDONLY | O_NOCTTY | O_NONBLOCK, 0);
}

int fsutil_read_beneath(struct buf *out, const char *dir, const char *rel, size_t max, int *cut)
{
	struct stat st;
	int dfd, fd, ret;

	if (cut)
		*cut = 0;
	if (!*rel || *rel == '/')
		return err_set(FX_EDENIED, "'%s' is not a path inside %s", rel, dir);
	dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return err_set_errno(FX_EOS, "cannot open %s", dir);
	fd = fsutil_open_beneath(dfd, rel);
	close(dfd);
	if (fd < 0) {
		if (errno == ENOENT)
			return err_set(FX_ENOTFOUND, "%s does not exist", rel);
		if (errno == ELOOP)
			return err_set(FX_EDENIED, "%s is (or passes through) a symbolic link; it is not "
				       "read, since forgex reads it only without following links", rel);
		if (errno == EXDEV)
			return err_set(FX_EDENIED, "%s leads outside %s; it is not read", rel, dir);
		return err_set_errno(FX_EOS, "cannot read %s", rel);
	}
	if (fstat(fd, &st) < 0) {
		ret = err_set_errno(FX_EOS, "cannot read %s", rel);
	} else if (!S_ISREG(st.st_mode)) {
		ret = err_set(FX_EDENIED, "%s is not a regular file; it is not read", rel);
	} else {
		/* up to max bytes; the rest is dropped and said to be */
		ret = 0;
		{
			char chunk[8192];
			size_t got = 0;

			for (;;) {
				ssize_t n = read(fd, chunk, sizeof(chunk));

				if (n < 0 && errno == EINTR)
					continue;
				if (n < 0) {
					ret = err_set_errno(FX_EOS, "cannot read %s", rel);
					break;
				}
				if (!n)
					break;
				if (max && got + (size_t)n > max) {
					buf_add(out, chunk, max - got);
					if (cut)
						*cut = 1;
					break;
				}
				buf_add(out, chunk, (size_t)n);
				got += (size_t)n;
			}
		}
	}
	close(fd);
	return ret;
}
