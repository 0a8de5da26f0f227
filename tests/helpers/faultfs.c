/*
 * Helpers of the fault suites (tests/e2e/faults.c, tests/e2e/fullro.c):
 * small file systems of their own, a byte-for-byte picture of a tree,
 * and the project the faulted runs work on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "helpers/faultfs.h"
#include "helpers/scripted.h"

#define CALC_PY FF_CALC_PY
#define TEST_PY "import unittest\nfrom calc import add\n\n\nclass T(unittest.TestCase):\n" \
	"    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n"

/* A mount namespace of this program's own (and a user namespace when not root). */
int ff_enter_namespace(void)
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

/* A fresh tmpfs of `mb` MiB (caller: ff_small_release). */
char *ff_small_fs(int mb)
{
	char *base = tu_mkdtemp(), opts[32];

	snprintf(opts, sizeof(opts), "size=%dm,mode=0755", mb);
	if (mount("tmpfs", base, "tmpfs", 0, opts) < 0)
		fail_msg("cannot mount a tmpfs on %s: %s", base, strerror(errno));
	return base;
}

void ff_small_release(char *base)
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
static int is_tmp(const char *n)
{
	size_t len = strlen(n);

	return *n == '.' && strstr(n, ".fx-") && len > 4 && !strcmp(n + len - 4, ".tmp");
}

/* Whether the folder `fd` holds at least one forgex temporary file and nothing else but folders of them. */
static int only_tmps(int fd)
{
	DIR *d = fdopendir(dup(fd));
	struct dirent *e;
	int some = 0, other = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && !other) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (is_tmp(e->d_name)) {
			some = 1;
		} else if (e->d_type == DT_DIR) {
			int sub = openat(fd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sub >= 0 && only_tmps(sub))
				some = 1;
			else
				other = 1;
			if (sub >= 0)
				close(sub);
		} else {
			other = 1;
		}
	}
	closedir(d);
	return some && !other;
}

static void snap_at(struct buf *out, int dirfd, const char *rel, int skip_tmp)
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
		    (skip_tmp && is_tmp(n)) ||
		    fstatat(dirfd, n, &st, AT_SYMLINK_NOFOLLOW)) {
			free(sub);
			continue;
		}
		if (S_ISDIR(st.st_mode)) {
			int fd = openat(dirfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			struct buf inner = BUF_INIT;

			assert_true(fd >= 0);
			snap_at(&inner, fd, sub, skip_tmp);
			/* with skip_tmp, a folder that holds only such files is left out too */
			if (!skip_tmp || inner.len || !only_tmps(fd))
				buf_addf(out, "== %s %o\n%s", sub, (unsigned)st.st_mode, inner.buf);
			buf_release(&inner);
			close(fd);
			free(sub);
			continue;
		}
		buf_addf(out, "== %s %o\n", sub, (unsigned)st.st_mode);
		if (S_ISREG(st.st_mode)) {
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

char *ff_snapshot(const char *dir)
{
	return ff_snapshot_ex(dir, 0);
}

char *ff_snapshot_ex(const char *dir, int skip_tmp)
{
	struct buf b = BUF_INIT;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(fd >= 0);
	snap_at(&b, fd, "", skip_tmp);
	close(fd);
	return buf_detach(&b, NULL);
}

/* Every entry under `dirfd` (`rel`) named as a leftover of forgex's (see ff_forgex_leftovers()). */
static void leftovers_at(struct buf *out, int dirfd, const char *rel)
{
	DIR *d = fdopendir(dup(dirfd));
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		const char *n = e->d_name;
		size_t len = strlen(n);
		char *sub;
		struct stat st;

		if (!strcmp(n, ".") || !strcmp(n, "..") ||
		    fstatat(dirfd, n, &st, AT_SYMLINK_NOFOLLOW))
			continue;
		sub = *rel ? xstrfmt("%s/%s", rel, n) : xstrdup(n);
		if (S_ISDIR(st.st_mode)) {
			int fd = openat(dirfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (fd >= 0) {
				leftovers_at(out, fd, sub);
				close(fd);
			}
		} else if (is_tmp(n) || (len > 4 && !strcmp(n + len - 4, ".new") &&
					 strstr(sub, "/saved/"))) {
			buf_addf(out, "%s%s", out->len ? " " : "", sub);
		}
		free(sub);
	}
	closedir(d);
}

char *ff_forgex_leftovers(const char *dir)
{
	static const char *const where[] = { ".forgex" };
	struct buf b = BUF_INIT;
	size_t i;

	for (i = 0; i < sizeof(where) / sizeof(where[0]); i++) {
		char *p = xstrfmt("%s/%s", dir, where[i]);
		int fd = open(p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (fd >= 0) {
			leftovers_at(&b, fd, where[i]);
			close(fd);
		}
		free(p);
	}
	buf_addstr(&b, "");
	return buf_detach(&b, NULL);
}

/* Append the lines of `text` to `out`. */
void ff_split_lines(struct strvec *out, const char *text)
{
	while (*text) {
		size_t n = strcspn(text, "\n");

		strvec_pushf(out, "%.*s", (int)n, text);
		text += n + (text[n] == '\n');
	}
}

/* The lines of `a` not in `b` and of `b` not in `a`, for a message. */
char *ff_difference(const char *want, const char *got)
{
	struct strvec w = STRVEC_INIT, g = STRVEC_INIT;
	struct buf out = BUF_INIT;
	size_t i;

	ff_split_lines(&w, want);
	ff_split_lines(&g, got);
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
void ff_project(struct sc_proj *p, const char *base, const struct mock *m, const char *more)
{
	memset(p, 0, sizeof(*p));
	p->dir = xstrfmt("%s/p", base);
	p->home = tu_mkdtemp();
	mkdir(p->dir, 0755);
	sc_proj_config(p, m, "auto", more);
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

