/*
 * Taking snapshots (src/vcs/snapshot.c, statcache.c): what is
 * recorded and what is read, on trees that broke the libgit2 iterator —
 * a committed .forgex/config.toml, folders 200 deep with paths longer than
 * PATH_MAX, links to folders under folder-only ignore patterns, empty
 * folders — and the stat cache after touch and cp -a.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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
#include "helpers/testutil.h"
#include "unit/vcs/vcs_testutil.h"
#include "vcs/checkpoint.h"

/* The paths a checkpoint records (git ls-tree -r of the shadow), one per line. */
static void recorded(struct buf *out, const char *ws, const char *id)
{
	char *gd = xstrfmt("--git-dir=%s/.forgex/checkpoints", ws);

	buf_reset(out);
	vt_git_capture(out, ws, gd, "ls-tree", "-r", "--name-only", id);
	free(gd);
}

/*
 * The project config is committed (the documented place for it): a
 * checkpoint must not record it, and a restore must leave the user's
 * version of it alone while putting everything else back.
 */
static void test_snapshot_tracked_forgex_config_left_alone(void **state)
{
	char *ws = tu_mkdtemp(), *c;
	struct checkpoint_info info;
	struct checkpoints *cps;
	struct buf names = BUF_INIT;

	(void)state;
	vt_git(ws, "init", "-q");
	tu_write(ws, ".forgex/config.toml", "[pipeline]\n");
	tu_write(ws, "app.py", "print(1)\n");
	vt_git(ws, "add", "-A");
	vt_git(ws, "commit", "-q", "-m", "project with a config");
	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, "before");
	assert_int_equal(info.files, 1);
	recorded(&names, ws, info.id);
	assert_string_equal(names.buf, "app.py\n");
	tu_write(ws, "app.py", "print(2)  # broken by the run\n");
	tu_write(ws, ".forgex/config.toml", "[pipeline]\n# the user's own edit\n");
	vt_restore_ok(cps, info.id);
	c = tu_read(ws, "app.py");
	assert_string_equal(c, "print(1)\n");
	free(c);
	c = tu_read(ws, ".forgex/config.toml");
	assert_string_equal(c, "[pipeline]\n# the user's own edit\n");
	free(c);
	buf_release(&names);
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/* Open (creating) the 200-deep chain under `ws`; returns the deepest folder's fd. */
static int open_deep(const char *ws, int depth, int create)
{
	char name[64];
	int fd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC), i;

	assert_true(fd >= 0);
	memset(name, 'd', 40);
	name[40] = '\0';
	for (i = 0; i < depth; i++) {
		int next;

		if (create)
			mkdirat(fd, name, 0755);
		next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (next < 0)
			return -1;
		fd = next;
	}
	return fd;
}

/*
 * A folder 200 deep whose path is ~8,200 bytes long (twice PATH_MAX):
 * libgit2's iterator gave up at 100 levels and every later checkpoint
 * failed. Now it is recorded, removed by a restore of an earlier
 * checkpoint and written back by a restore of the later one.
 */
static void test_snapshot_200_deep_folder(void **state)
{
	char *ws = tu_mkdtemp(), buf[64];
	struct checkpoint_info before, deep, after;
	struct checkpoints *cps;
	struct buf names = BUF_INIT;
	int fd;
	ssize_t n;

	(void)state;
	vt_git(ws, "init", "-q");
	tu_write(ws, "top.txt", "top\n");
	cps = vt_open_ok(ws);
	vt_create_ok(&before, cps, "before");
	fd = open_deep(ws, 200, 1);
	assert_true(fd >= 0);
	{
		int f = openat(fd, "leaf.txt", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		assert_true(f >= 0);
		assert_int_equal(write(f, "deep\n", 5), 5);
		close(f);
	}
	close(fd);
	vt_create_ok(&deep, cps, "deep");
	assert_int_equal(deep.files, 2);
	recorded(&names, ws, deep.id);
	assert_true(names.len > PATH_MAX);
	assert_non_null(strstr(names.buf, "/leaf.txt\n"));
	/* every later checkpoint works too */
	vt_create_ok(&after, cps, "after");
	assert_int_equal(after.files, 2);

	vt_restore_ok(cps, before.id);
	assert_false(vt_exists(ws, "dddddddddddddddddddddddddddddddddddddddd"));
	vt_restore_ok(cps, deep.id);
	fd = open_deep(ws, 200, 0);
	assert_true(fd >= 0);
	{
		int f = openat(fd, "leaf.txt", O_RDONLY | O_CLOEXEC);

		assert_true(f >= 0);
		n = read(f, buf, sizeof(buf));
		close(f);
		assert_int_equal(n, 5);
		assert_memory_equal(buf, "deep\n", 5);
	}
	close(fd);
	/* the clean-up helper works by path: empty the chain with a restore first */
	vt_restore_ok(cps, before.id);
	buf_release(&names);
	checkpoint_info_release(&before);
	checkpoint_info_release(&deep);
	checkpoint_info_release(&after);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/*
 * git never takes a symbolic link for a folder when it applies ignore
 * rules (dir.c lstat()s): a link to a folder under the pattern "/ *\/"
 * (without the space) is not ignored
 * (git status shows it as untracked), so it is recorded and restored.
 * Checked against the real git's own answer.
 */
static void test_snapshot_link_to_folder_is_not_a_folder_for_ignore(void **state)
{
	char *ws = tu_mkdtemp();
	struct checkpoint_info info;
	struct checkpoints *cps;
	struct buf names = BUF_INIT, status = BUF_INIT, m = BUF_INIT;

	(void)state;
	vt_git(ws, "init", "-q");
	tu_write(ws, "real/f.txt", "in a folder\n");
	vt_symlink(ws, "link", "real");
	vt_symlink(ws, "abs", "/tmp");
	tu_write(ws, ".gitignore", "/*/\n");
	vt_git_capture(&status, ws, "status", "--porcelain", "--untracked-files=all");
	assert_string_equal(status.buf, "?? .gitignore\n?? abs\n?? link\n");
	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, "links");
	recorded(&names, ws, info.id);
	assert_string_equal(names.buf, ".gitignore\nabs\nlink\n");
	vt_rm(ws, "link");
	vt_rm(ws, "abs");
	vt_restore_ok(cps, info.id);
	vt_manifest(&m, ws, 0);
	{
		static const char l1[] = "link\tlink\t777\t-> real", l2[] = "abs\tlink\t777\t-> /tmp";

		assert_non_null(memmem(m.buf, m.len, l1, sizeof(l1)));	/* with its NUL */
		assert_non_null(memmem(m.buf, m.len, l2, sizeof(l2)));
	}
	/* the folder itself stays ignored and untouched */
	assert_true(vt_exists(ws, "real/f.txt"));
	buf_release(&names);
	buf_release(&status);
	buf_release(&m);
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/* Sort the lines of `b` (git ls-files lists tracked files first). */
static void sort_lines(struct buf *b)
{
	struct strvec v = STRVEC_INIT;
	char *p = b->buf, *nl;
	size_t i;

	while ((nl = strchr(p, '\n'))) {
		*nl = '\0';
		strvec_push(&v, p);
		p = nl + 1;
	}
	qsort(v.v, v.nr, sizeof(*v.v), vt_cmp_str);
	buf_reset(b);
	for (i = 0; i < v.nr; i++)
		buf_addf(b, "%s\n", v.v[i]);
	strvec_clear(&v);
}

/*
 * The ignore rules against git's own answer on one tree that exercises
 * them: what a checkpoint records must be exactly what
 * `git ls-files --cached --others --exclude-standard` lists.
 */
static void test_snapshot_ignore_rules_match_git(void **state)
{
	static const char *const files[] = {
		"a.o", "src/a.o", "src/keep.o", "src/deep/x.o", "src/deep/keep.o",
		"build/out", "build/sub/out", "docs/build/readme", "logs/today.log",
		"logs/keep/important.log", "tmp/x", "tmp", "#hash", "space ", "space",
		"crlf.txt", "nested/.gitignore", "nested/skip.md", "nested/keep.md",
		"nested/inner/skip.md", "any/where/foo/bar.txt", "foo/bar.txt",
		"anchored.txt", "sub/anchored.txt", "excl.local", "global.bak", "x/y/z.gen",
		"x/z.gen", "q/a/b/c.q", "Case.TXT", "case.txt", "[brackets]", "star*",
	};
	char *ws = tu_mkdtemp(), *gd;
	struct checkpoint_info info;
	struct checkpoints *cps;
	struct buf got = BUF_INIT, want = BUF_INIT, excl = BUF_INIT;
	size_t i;

	(void)state;
	vt_git(ws, "init", "-q");
	for (i = 0; i < ARRAY_SIZE(files); i++)
		if (strcmp(files[i], "tmp") && strcmp(files[i], "nested/.gitignore"))
			tu_write(ws, files[i], "x\n");
	vt_rm(ws, "tmp/x");
	vt_rm(ws, "tmp");
	tu_write(ws, "tmp", "a file named like a folder pattern\n");
	tu_write(ws, ".gitignore",
		 "# comment\n"
		 "*.o\n"
		 "!keep.o\n"
		 "build/\n"
		 "/docs/build\n"
		 "logs/*\n"
		 "!logs/keep/\n"
		 "tmp/\n"
		 "\\#hash\n"
		 "space\\ \n"
		 "crlf.txt\r\n"
		 "**/foo/bar.txt\n"
		 "/anchored.txt\n"
		 "x/**/*.gen\n"
		 "q/**\n"
		 "case.txt\n"
		 "\\[brackets]\n"
		 "star\\*\n");
	tu_write(ws, "nested/.gitignore", "*.md\n!keep.md\n");
	tu_write(ws, ".git/info/exclude", "*.local\n");
	tu_write(vt_home, "global-ignore", "*.bak\n");
	buf_addf(&excl, "%s/global-ignore", vt_home);
	vt_git(ws, "config", "core.excludesFile", excl.buf);
	vt_git(ws, "add", "src/keep.o");
	vt_symlink(ws, "linked", "build");
	vt_git_capture(&want, ws, "ls-files", "--cached", "--others", "--exclude-standard");
	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, "rules");
	gd = xstrfmt("--git-dir=%s/.forgex/checkpoints", ws);
	vt_git_capture(&got, ws, gd, "ls-tree", "-r", "--name-only", info.id);
	sort_lines(&got);
	sort_lines(&want);
	if (strcmp(got.buf, want.buf))
		fprintf(stderr, "forgex recorded:\n%s\ngit lists:\n%s\n", got.buf, want.buf);
	assert_string_equal(got.buf, want.buf);
	free(gd);
	buf_release(&got);
	buf_release(&want);
	buf_release(&excl);
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/* Empty folders are part of a checkpoint: restored when gone, removed when new. */
static void test_snapshot_empty_folders(void **state)
{
	char *ws = tu_mkdtemp();
	struct checkpoint_info info, later;
	struct checkpoints *cps;
	struct buf before = BUF_INIT, m = BUF_INIT, p = BUF_INIT;

	(void)state;
	vt_git(ws, "init", "-q");
	tu_write(ws, "a.txt", "a\n");
	tu_write(ws, ".gitignore", "*.log\n");
	path_join(&p, ws, "empty/inner");
	assert_int_equal(fsutil_mkdir_p(p.buf, 0755), 0);
	buf_reset(&p);
	path_join(&p, ws, "private");
	assert_int_equal(mkdir(p.buf, 0700), 0);
	tu_write(ws, "logs/x.log", "only an ignored file\n");
	vt_manifest(&before, ws, 0);
	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, "with empty folders");
	/* gone: both come back, with their modes */
	vt_rm(ws, "empty/inner");
	vt_rm(ws, "empty");
	vt_rm(ws, "private");
	/* new: an empty folder the checkpoint does not have goes */
	buf_reset(&p);
	path_join(&p, ws, "new-empty");
	assert_int_equal(mkdir(p.buf, 0755), 0);
	vt_restore_ok(cps, info.id);
	vt_manifest(&m, ws, 0);
	vt_assert_same(&before, &m, "after restoring empty folders");
	/* a folder holding only ignored files is not "empty" and never removed */
	vt_create_ok(&later, cps, "again");
	assert_true(vt_exists(ws, "logs/x.log"));
	buf_release(&before);
	buf_release(&m);
	buf_release(&p);
	checkpoint_info_release(&info);
	checkpoint_info_release(&later);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

#define NFILES 40

static void make_files(const char *ws)
{
	int i;

	for (i = 0; i < NFILES; i++) {
		char rel[32], content[32];

		snprintf(rel, sizeof(rel), "d%d/f%02d.txt", i % 4, i);
		snprintf(content, sizeof(content), "file %d\n", i);
		tu_write(ws, rel, content);
	}
}

static size_t create_reads(struct checkpoints *cps)
{
	struct checkpoint_info info;

	vt_create_ok(&info, cps, NULL);
	checkpoint_info_release(&info);
	return checkpoint_files_read(cps);
}

/*
 * Nothing changed, nothing written but the checkpoint's own record: the
 * stat cache (index) is not saved again, no tree object is made, and the
 * only new object is the commit (issue 26). A change after that is seen.
 */
static void count_objects(const char *ws, size_t *n)
{
	char *objs = xstrfmt("%s/.forgex/checkpoints/objects", ws);
	struct tu_result r;
	const char *argv[] = { "sh", "-c", "find . -type f | wc -l", NULL };

	tu_run(&r, argv, objs, NULL, NULL);
	assert_int_equal(r.status, 0);
	*n = (size_t)strtoul(r.out.buf, NULL, 10);
	tu_result_release(&r);
	free(objs);
}

static void test_snapshot_unchanged_writes_only_the_commit(void **state)
{
	char *ws = tu_mkdtemp(), *index, *cache;
	struct checkpoints *cps;
	struct checkpoint_info a, b;
	struct stat s1, s2, c1, c2;
	size_t n1, n2;

	(void)state;
	make_files(ws);
	vt_settle();
	cps = vt_open_ok(ws);
	vt_create_ok(&a, cps, "first");
	checkpoint_info_release(&a);
	vt_settle();
	vt_create_ok(&a, cps, "second");	/* the racy entries of the first get their stat data */
	index = xstrfmt("%s/.forgex/checkpoints/index", ws);
	cache = xstrfmt("%s/.forgex/checkpoints/forgex-statcache", ws);
	assert_int_equal(stat(index, &s1), 0);
	assert_int_equal(stat(cache, &c1), 0);
	count_objects(ws, &n1);
	vt_create_ok(&b, cps, "third, unchanged");
	assert_int_equal(checkpoint_files_read(cps), 0);
	assert_int_equal(stat(index, &s2), 0);
	assert_int_equal(s1.st_ino, s2.st_ino);
	assert_int_equal(s1.st_mtim.tv_sec, s2.st_mtim.tv_sec);
	assert_int_equal(s1.st_mtim.tv_nsec, s2.st_mtim.tv_nsec);
	assert_int_equal(stat(cache, &c2), 0);
	assert_int_equal(c1.st_ino, c2.st_ino);
	assert_int_equal(c1.st_size, c2.st_size);
	assert_int_equal(c1.st_mtim.tv_nsec, c2.st_mtim.tv_nsec);
	count_objects(ws, &n2);
	assert_int_equal(n2, n1 + 1);	/* the commit */
	assert_string_not_equal(a.id, b.id);
	checkpoint_info_release(&a);
	checkpoint_info_release(&b);

	/*
	 * One file changed in place: its blob, the trees above it and the
	 * commit are written, and the stat cache gets records appended (the
	 * same file, a little longer), not a new copy of every entry.
	 */
	tu_write(ws, "d1/f01.txt", "changed\n");
	vt_settle();
	count_objects(ws, &n1);
	vt_create_ok(&a, cps, "fourth");
	assert_int_equal(checkpoint_files_read(cps), 1);
	count_objects(ws, &n2);
	assert_int_equal(n2, n1 + 4);	/* blob, d1/, the top tree, the commit */
	assert_int_equal(stat(index, &s2), 0);
	assert_int_equal(s1.st_ino, s2.st_ino);
	assert_int_equal(s1.st_mtim.tv_nsec, s2.st_mtim.tv_nsec);
	assert_int_equal(stat(cache, &c2), 0);
	assert_int_equal(c1.st_ino, c2.st_ino);
	assert_true(c2.st_size > c1.st_size && c2.st_size < c1.st_size + 1024);
	checkpoint_info_release(&a);
	checkpoint_close(cps);
	free(index);
	free(cache);
	free(ws);
}

/*
 * The stat cache: a checkpoint of an unchanged tree reads nothing; after
 * `touch` of every file the next one reads them all (their content must
 * prove unchanged) and refreshes the cache, so the one after reads
 * nothing again. The same after `cp -a` of the whole workspace (new
 * inodes and ctimes). Before, every later checkpoint read every file.
 */
static void test_snapshot_stat_cache_refreshed(void **state)
{
	char *ws = tu_mkdtemp(), *copy = tu_mkdtemp();
	struct checkpoints *cps;
	struct tu_result r;
	const char *argv[6];
	char *dst = NULL;

	(void)state;
	make_files(ws);
	vt_settle();
	cps = vt_open_ok(ws);
	assert_int_equal(create_reads(cps), NFILES);
	assert_int_equal(create_reads(cps), 0);

	argv[0] = "sh";
	argv[1] = "-c";
	argv[2] = "touch d*/*.txt";
	argv[3] = NULL;
	tu_run(&r, argv, ws, NULL, NULL);
	assert_int_equal(r.status, 0);
	tu_result_release(&r);
	vt_settle();
	assert_int_equal(create_reads(cps), NFILES);
	assert_int_equal(create_reads(cps), 0);
	checkpoint_close(cps);

	argv[0] = "cp";
	argv[1] = "-a";
	argv[2] = (char *)ws;
	argv[3] = dst = xstrfmt("%s/ws", copy);
	argv[4] = NULL;
	tu_run(&r, argv, NULL, NULL, NULL);
	assert_int_equal(r.status, 0);
	tu_result_release(&r);
	vt_settle();
	cps = vt_open_ok(dst);
	assert_int_equal(create_reads(cps), NFILES);
	assert_int_equal(create_reads(cps), 0);
	/* a real change is still seen: one file read */
	tu_write(dst, "d1/f01.txt", "changed\n");
	vt_settle();
	assert_int_equal(create_reads(cps), 1);
	checkpoint_close(cps);
	free(dst);
	tu_rmtree(copy);
	tu_rmtree(ws);
}

/*
 * A branch switch rewrites the files that differ; coming back rewrites
 * them with the bytes the cache already knows. The first checkpoint after
 * reads those files once, the next reads none.
 */
static void test_snapshot_stat_cache_after_branch_switch(void **state)
{
	char *ws = tu_mkdtemp();
	struct checkpoints *cps;
	int i;

	(void)state;
	vt_git(ws, "init", "-q", "-b", "main");
	make_files(ws);
	vt_git(ws, "add", "-A");
	vt_git(ws, "commit", "-q", "-m", "main");
	vt_git(ws, "checkout", "-q", "-b", "other");
	for (i = 0; i < NFILES; i += 4) {
		char rel[32];

		snprintf(rel, sizeof(rel), "d%d/f%02d.txt", i % 4, i);
		tu_write(ws, rel, "on the other branch\n");
	}
	vt_git(ws, "commit", "-q", "-am", "other");
	vt_git(ws, "checkout", "-q", "main");
	vt_settle();
	cps = vt_open_ok(ws);
	create_reads(cps);
	assert_int_equal(create_reads(cps), 0);
	vt_git(ws, "checkout", "-q", "other");
	vt_git(ws, "checkout", "-q", "main");
	vt_settle();
	assert_int_equal(create_reads(cps), NFILES / 4);
	assert_int_equal(create_reads(cps), 0);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/* A file changed during a capture is never trusted from the cache afterwards. */
static void test_snapshot_racy_file_read_again(void **state)
{
	char *ws = tu_mkdtemp();
	struct checkpoints *cps;

	(void)state;
	make_files(ws);
	cps = vt_open_ok(ws);
	/* written in the same clock tick as the capture starts: kept without stat data */
	tu_write(ws, "d0/f00.txt", "same size\n");
	assert_true(create_reads(cps) >= 1);
	vt_settle();
	tu_write(ws, "d0/f00.txt", "SAME SIZE\n");
	assert_true(create_reads(cps) >= 1);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_snapshot_tracked_forgex_config_left_alone),
		cmocka_unit_test(test_snapshot_200_deep_folder),
		cmocka_unit_test(test_snapshot_link_to_folder_is_not_a_folder_for_ignore),
		cmocka_unit_test(test_snapshot_ignore_rules_match_git),
		cmocka_unit_test(test_snapshot_empty_folders),
		cmocka_unit_test(test_snapshot_stat_cache_refreshed),
		cmocka_unit_test(test_snapshot_unchanged_writes_only_the_commit),
		cmocka_unit_test(test_snapshot_stat_cache_after_branch_switch),
		cmocka_unit_test(test_snapshot_racy_file_read_again),
	};

	return cmocka_run_group_tests(tests, vt_group_setup, vt_group_teardown);
}
