#ifndef FX_VCS_TESTUTIL_H
#define FX_VCS_TESTUTIL_H

/*
 * Helpers shared by the checkpoint and diff tests (unit and end-to-end):
 * an isolated git environment, running git, and manifests of a tree that
 * say exactly what is on disk (path, type, mode, bytes or link target).
 * Header-only so that each test program stays one file.
 * Include after <cmocka.h> and "helpers/testutil.h".
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/path.h"
#include "base/strvec.h"
#include "helpers/testutil.h"
#include "vcs/checkpoint.h"

#define VT_UNUSED __attribute__((unused))

static char *vt_home;

/*
 * A private HOME (and XDG_CONFIG_HOME) for git and libgit2, so neither the
 * developer's ~/.gitconfig nor a global ignore file changes what a test
 * sees. Call before the first libgit2 use; children inherit it.
 */
static VT_UNUSED void vt_setup_env(void)
{
	struct buf p = BUF_INIT;

	if (vt_home)
		return;
	vt_home = tu_mkdtemp();
	setenv("HOME", vt_home, 1);
	path_join(&p, vt_home, ".config");
	fsutil_mkdir_p(p.buf, 0755);
	setenv("XDG_CONFIG_HOME", p.buf, 1);
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	setenv("GIT_AUTHOR_NAME", "Test", 1);
	setenv("GIT_AUTHOR_EMAIL", "test@example.com", 1);
	setenv("GIT_COMMITTER_NAME", "Test", 1);
	setenv("GIT_COMMITTER_EMAIL", "test@example.com", 1);
	unsetenv("GIT_DIR");
	unsetenv("GIT_WORK_TREE");
	unsetenv("GIT_INDEX_FILE");
	buf_release(&p);
}

static VT_UNUSED void vt_teardown_env(void)
{
	tu_rmtree(vt_home);
	vt_home = NULL;
}

/* cmocka group set-up and tear-down: the isolated git environment above. */
static VT_UNUSED int vt_group_setup(void **state)
{
	(void)state;
	vt_setup_env();
	return 0;
}

static VT_UNUSED int vt_group_teardown(void **state)
{
	(void)state;
	vt_teardown_env();
	return 0;
}

/* checkpoint_open(), _create() and _restore() that must succeed (the error printed if not). */
static VT_UNUSED struct checkpoints *vt_open_ok(const char *ws)
{
	struct checkpoints *cps = NULL;
	int ret = checkpoint_open(&cps, ws);

	if (ret < 0)
		fprintf(stderr, "checkpoint_open: %s\n", err_last());
	assert_int_equal(ret, 0);
	return cps;
}

static VT_UNUSED void vt_create_ok(struct checkpoint_info *info, struct checkpoints *cps,
				   const char *msg)
{
	int ret = checkpoint_create(info, cps, msg);

	if (ret < 0)
		fprintf(stderr, "checkpoint_create: %s\n", err_last());
	assert_int_equal(ret, 0);
}

static VT_UNUSED void vt_restore_ok(struct checkpoints *cps, const char *id)
{
	struct checkpoint_restore_result res;
	int ret = checkpoint_restore(&res, cps, id);

	if (ret < 0)
		fprintf(stderr, "checkpoint_restore: %s\n", err_last());
	assert_int_equal(ret, 0);
	checkpoint_restore_result_release(&res);
}

/* Run git with the NULL-terminated arguments in `dir`; fail the test unless it succeeds. */
static VT_UNUSED void vt_git_out(struct buf *out, const char *dir, ...)
{
	struct strvec argv = STRVEC_INIT;
	struct tu_result r;
	const char *a;
	va_list ap;

	strvec_push(&argv, "git");
	va_start(ap, dir);
	while ((a = va_arg(ap, const char *)))
		strvec_push(&argv, a);
	va_end(ap);
	tu_run(&r, argv.v, dir, NULL, NULL);
	if (r.status != 0) {
		fprintf(stderr, "git %s failed (%d): %s%s\n", argv.v[1], r.status, r.out.buf,
			r.err.buf);
		fail();
	}
	if (out)
		buf_addbuf(out, &r.out);
	tu_result_release(&r);
	strvec_clear(&argv);
}

#define vt_git(dir, ...) vt_git_out(NULL, dir, __VA_ARGS__, (const char *)NULL)
#define vt_git_capture(out, dir, ...) vt_git_out(out, dir, __VA_ARGS__, (const char *)NULL)

/* Write `len` bytes to `dir`/`rel` (parents created) and set `mode`. */
/*
 * Let the coarse clock, which file stamps and a capture's start are taken
 * from, move past what was just written, so that no stamp is racy. Its
 * tick is the kernel's (4 ms at HZ=250, 40 ms at HZ=25): a fixed sleep
 * shorter than the tick left stamps racy, and the short way not taken.
 */
static VT_UNUSED void vt_settle(void)
{
	struct timespec res = { 0, 4 * 1000 * 1000 }, ts;

	clock_getres(CLOCK_REALTIME_COARSE, &res);
	ts.tv_sec = res.tv_sec;
	ts.tv_nsec = res.tv_nsec + 5 * 1000 * 1000;
	if (ts.tv_nsec >= 1000 * 1000 * 1000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000 * 1000 * 1000;
	}
	nanosleep(&ts, NULL);
}

static VT_UNUSED void vt_write_bytes(const char *dir, const char *rel, const void *data, size_t len,
				     mode_t mode)
{
	struct buf p = BUF_INIT, d = BUF_INIT;
	int fd;

	path_join(&p, dir, rel);
	path_dirname(&d, p.buf);
	assert_int_equal(fsutil_mkdir_p(d.buf, 0755), 0);
	fd = open(p.buf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fsutil_write_all(fd, data, len), 0);
	assert_int_equal(fchmod(fd, mode), 0);
	assert_int_equal(close(fd), 0);
	buf_release(&p);
	buf_release(&d);
}

static VT_UNUSED void vt_symlink(const char *dir, const char *rel, const char *target)
{
	struct buf p = BUF_INIT;

	path_join(&p, dir, rel);
	unlink(p.buf);
	assert_int_equal(symlink(target, p.buf), 0);
	buf_release(&p);
}

static VT_UNUSED int vt_exists(const char *dir, const char *rel)
{
	struct buf p = BUF_INIT;
	int r;

	path_join(&p, dir, rel);
	r = fsutil_exists(p.buf);
	buf_release(&p);
	return r;
}

static VT_UNUSED void vt_rm(const char *dir, const char *rel)
{
	struct buf p = BUF_INIT;

	path_join(&p, dir, rel);
	assert_int_equal(fsutil_remove_tree(p.buf), 0);
	buf_release(&p);
}

static VT_UNUSED void vt_chmod(const char *dir, const char *rel, mode_t mode)
{
	struct buf p = BUF_INIT;

	path_join(&p, dir, rel);
	assert_int_equal(chmod(p.buf, mode), 0);
	buf_release(&p);
}

static VT_UNUSED mode_t vt_mode(const char *dir, const char *rel)
{
	struct buf p = BUF_INIT;
	struct stat st;

	path_join(&p, dir, rel);
	assert_int_equal(lstat(p.buf, &st), 0);
	buf_release(&p);
	return st.st_mode;
}

static int vt_cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

enum vt_manifest_flags {
	VT_TIMES = 1 << 0,	/* include mtimes and sizes of everything (for .git) */
	VT_ALL = 1 << 1,	/* do not skip .git and .forgex at the top */
};

static void vt_walk(struct strvec *lines, const char *root, const char *rel, unsigned flags)
{
	struct buf p = BUF_INIT;
	DIR *d;
	struct dirent *de;

	path_join(&p, root, rel);
	d = opendir(p.buf);
	assert_non_null(d);
	while ((de = readdir(d))) {
		struct buf sub = BUF_INIT, full = BUF_INIT, line = BUF_INIT;
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!*rel && !(flags & VT_ALL) &&
		    (!strcmp(de->d_name, ".git") || !strcmp(de->d_name, ".forgex")))
			continue;
		if (*rel)
			buf_addf(&sub, "%s/%s", rel, de->d_name);
		else
			buf_addstr(&sub, de->d_name);
		path_join(&full, root, sub.buf);
		assert_int_equal(lstat(full.buf, &st), 0);
		buf_addf(&line, "%s\t%s\t%o", sub.buf,
			 S_ISDIR(st.st_mode) ? "dir" : S_ISLNK(st.st_mode) ? "link" :
			 S_ISREG(st.st_mode) ? "file" : "other", (unsigned)(st.st_mode & 07777));
		if (flags & VT_TIMES)
			buf_addf(&line, "\t%lld.%09ld", (long long)st.st_mtim.tv_sec,
				 st.st_mtim.tv_nsec);
		if (S_ISREG(st.st_mode)) {
			struct buf c = BUF_INIT;

			assert_int_equal(fsutil_read_file(&c, full.buf, 0), 0);
			buf_addf(&line, "\t%zu\t", c.len);
			buf_addbuf(&line, &c);
			buf_release(&c);
		} else if (S_ISLNK(st.st_mode)) {
			char target[4096];
			ssize_t n = readlink(full.buf, target, sizeof(target));

			assert_true(n >= 0);
			buf_addstr(&line, "\t-> ");
			buf_add(&line, target, (size_t)n);
		}
		strvec_push(lines, line.buf);
		if (S_ISDIR(st.st_mode))
			vt_walk(lines, root, sub.buf, flags);
		buf_release(&sub);
		buf_release(&full);
		buf_release(&line);
	}
	closedir(d);
	buf_release(&p);
}

/*
 * A manifest of everything under `root`: one record per entry with path,
 * type, permission bits, and the bytes of a file or the target of a link,
 * sorted by path. Without VT_ALL the top-level .git and .forgex are left
 * out (they are not part of the user's tree).
 */
static VT_UNUSED void vt_manifest(struct buf *out, const char *root, unsigned flags)
{
	struct strvec lines = STRVEC_INIT;
	size_t i;

	vt_walk(&lines, root, "", flags);
	qsort(lines.v, lines.nr, sizeof(*lines.v), vt_cmp_str);
	buf_reset(out);
	for (i = 0; i < lines.nr; i++) {
		buf_addstr(out, lines.v[i]);
		buf_addch(out, '\0');
	}
	strvec_clear(&lines);
}

/* Fail with the first differing record of two manifests. */
static VT_UNUSED void vt_assert_same(const struct buf *a, const struct buf *b, const char *what)
{
	size_t i = 0, line_start = 0;

	if (a->len == b->len && !memcmp(a->buf, b->buf, a->len))
		return;
	while (i < a->len && i < b->len && a->buf[i] == b->buf[i]) {
		if (!a->buf[i])
			line_start = i + 1;
		i++;
	}
	fprintf(stderr, "%s differs:\n  expected: %.200s\n  actual:   %.200s\n", what,
		line_start < a->len ? a->buf + line_start : "(end)",
		line_start < b->len ? b->buf + line_start : "(end)");
	fail();
}

/*
 * Everything git shows about the user's state: HEAD, every ref, the stash,
 * every reflog, status and the config. Read-only git commands only
 * (--no-optional-locks keeps `git status` from refreshing the index).
 */
static VT_UNUSED void vt_git_state(struct buf *out, const char *repo)
{
	struct buf refs = BUF_INIT;
	const char *p;

	buf_reset(out);
	vt_git_capture(out, repo, "rev-parse", "HEAD");
	vt_git_capture(out, repo, "symbolic-ref", "-q", "HEAD");
	vt_git_capture(&refs, repo, "for-each-ref", "--format=%(refname)");
	buf_addbuf(out, &refs);
	vt_git_capture(out, repo, "for-each-ref");
	vt_git_capture(out, repo, "stash", "list");
	vt_git_capture(out, repo, "--no-optional-locks", "status", "--porcelain=v1", "-z",
		       "--untracked-files=all");
	vt_git_capture(out, repo, "config", "--local", "--list");
	vt_git_capture(out, repo, "reflog", "show", "--all");
	for (p = refs.buf; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] == '\n')) {
		char *ref = xstrndup(p, strcspn(p, "\n"));

		if (*ref && strcmp(ref, "refs/stash"))
			vt_git_capture(out, repo, "reflog", "show", ref);
		free(ref);
	}
	buf_release(&refs);
}

/*
 * A user's repository with history: three commits, a tag, a branch, a
 * stash entry, a .gitignore and an info/exclude rule. Returns the folder.
 */
static VT_UNUSED char *vt_make_repo(void)
{
	char *ws = tu_mkdtemp();

	vt_git(ws, "init", "-q", "-b", "main");
	tu_write(ws, "README.md", "# demo\n");
	tu_write(ws, "src/main.c", "int main(void) { return 0; }\n");
	tu_write(ws, ".gitignore", "build/\n*.o\n.env\n");
	vt_git(ws, "add", "-A");
	vt_git(ws, "commit", "-q", "-m", "first");
	tu_write(ws, "src/util.c", "int util(void) { return 1; }\n");
	vt_write_bytes(ws, "run.sh", "#!/bin/sh\necho hi\n", 18, 0755);
	vt_git(ws, "add", "-A");
	vt_git(ws, "commit", "-q", "-m", "second");
	vt_git(ws, "tag", "v1");
	vt_git(ws, "tag", "-a", "v1-annotated", "-m", "annotated");
	vt_git(ws, "branch", "feature");
	tu_write(ws, "docs/guide.md", "guide\n");
	vt_git(ws, "add", "docs/guide.md");
	vt_git(ws, "commit", "-q", "-m", "third");
	tu_write(ws, "README.md", "# demo (stashed edit)\n");
	vt_git(ws, "stash", "push", "-q", "-m", "wip");
	tu_write(ws, ".git/info/exclude", "*.local\n");
	tu_write(ws, "src/main.c", "int main(void) { return 2; }\n");	/* modified, unstaged */
	tu_write(ws, "notes.txt", "untracked notes\n");
	tu_write(ws, "build/out.bin", "ignored build output\n");
	tu_write(ws, ".env", "SECRET=1\n");
	tu_write(ws, "my.local", "excluded by info/exclude\n");
	return ws;
}

#endif
