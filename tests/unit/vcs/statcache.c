/*
 * The record of the last capture (src/vcs/statcache.h, snapshot_fast.c):
 * a checkpoint taken the short way (no folder listed) must be the one the
 * long way takes. Each test changes the tree in a way that leaves most
 * stamps alone and checks that the change is caught (and that a folder
 * whose entries stayed the same is not read further): a stamp taken in the
 * tick of a change (racy), files created while captures run, a file
 * replaced by a rename, a folder replaced by a link, a .gitignore
 * rewritten in place, a file created then removed, `git status` and `git
 * add -f` rewriting the user's index, a nested repository that stops being
 * one, a damaged or cut-short record.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "helpers/testutil.h"
#include "unit/vcs/vcs_testutil.h"
#include "vcs/checkpoint.h"
#include "vcs/shadow.h"
#include "vcs/statcache.h"

/* A checkpoint; the paths it records (git ls-tree -r), one per line, in `paths`. */
static void create_ok(struct buf *paths, struct checkpoints *cps, const char *ws)
{
	struct checkpoint_info info;
	char *gd = xstrfmt("--git-dir=%s/.forgex/checkpoints", ws), *alt;
	int ret = checkpoint_create(&info, cps, "test");

	if (ret < 0)
		fprintf(stderr, "checkpoint_create: %s\n", err_last());
	assert_int_equal(ret, 0);
	buf_reset(paths);
	/* trees the user's repository holds too are borrowed from it, not written again */
	alt = xstrfmt("%s/.git/objects", ws);
	setenv("GIT_ALTERNATE_OBJECT_DIRECTORIES", alt, 1);
	vt_git_capture(paths, ws, gd, "ls-tree", "-r", "--name-only", info.id);
	unsetenv("GIT_ALTERNATE_OBJECT_DIRECTORIES");
	checkpoint_info_release(&info);
	free(alt);
	free(gd);
}

/* Rewrite `rel` in place (same inode: its folder's stamp does not change). */
static void rewrite_in_place(const char *ws, const char *rel, const char *content)
{
	char *p = xstrfmt("%s/%s", ws, rel);
	int fd = open(p, O_WRONLY | O_TRUNC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
	close(fd);
	free(p);
}

/* A small tree, checkpointed twice: the second one the short way (nothing listed). */
static struct checkpoints *warm_tree(const char *ws, struct buf *paths)
{
	struct checkpoints *cps;

	tu_write(ws, "a/one.txt", "one\n");
	tu_write(ws, "a/two.txt", "two\n");
	tu_write(ws, "b/c/three.txt", "three\n");
	tu_write(ws, "top.txt", "top\n");
	cps = vt_open_ok(ws);	/* it makes .forgex: the top folder changes */
	vt_settle();
	create_ok(paths, cps, ws);
	assert_true(cps->dirs_listed > 0);
	vt_settle();
	create_ok(paths, cps, ws);
	assert_int_equal(cps->dirs_listed, 0);
	assert_int_equal(checkpoint_files_read(cps), 0);
	return cps;
}

/*
 * git's racy rule for stamps: one taken of something that changed at or
 * after the start of the capture is never trusted. Directly, and through a
 * folder whose mtime is in the future (as a change in the tick of the
 * capture would look): every capture lists the folders again.
 */
static void test_statcache_racy_stamp_not_trusted(void **state)
{
	struct timespec start;
	struct stat st;
	struct sc_stamp a, b;
	char *ws = tu_mkdtemp(), *dir;
	struct checkpoints *cps;
	struct buf paths = BUF_INIT;
	struct timespec times[2];

	(void)state;
	memset(&st, 0, sizeof(st));
	st.st_mode = S_IFDIR | 0755;
	st.st_ino = 7;
	clock_gettime(CLOCK_REALTIME_COARSE, &start);
	st.st_mtim = start;
	st.st_ctim.tv_sec = start.tv_sec - 10;
	sc_stamp_fill(&a, &st, &start);
	sc_stamp_fill(&b, &st, &start);
	assert_int_equal(a.trusted, 0);
	assert_false(sc_stamp_same(&a, &b));	/* same fields, still not trusted */
	st.st_mtim.tv_sec = start.tv_sec - 1;
	sc_stamp_fill(&a, &st, &start);
	sc_stamp_fill(&b, &st, &start);
	assert_true(sc_stamp_same(&a, &b));
	st.st_mtim.tv_nsec = 0;		/* a file system of whole seconds: the same second is racy */
	st.st_mtim.tv_sec = start.tv_sec;
	sc_stamp_fill(&a, &st, &start);
	assert_int_equal(a.trusted, 0);

	cps = warm_tree(ws, &paths);
	dir = xstrfmt("%s/a", ws);
	clock_gettime(CLOCK_REALTIME, &times[0]);
	times[0].tv_sec += 3600;
	times[1] = times[0];
	assert_int_equal(utimensat(AT_FDCWD, dir, times, 0), 0);
	vt_settle();
	create_ok(&paths, cps, ws);
	assert_true(cps->dirs_listed > 0);
	create_ok(&paths, cps, ws);
	assert_true(cps->dirs_listed > 0);	/* still racy: never trusted */
	tu_write(ws, "a/new.txt", "new\n");
	assert_int_equal(utimensat(AT_FDCWD, dir, times, 0), 0);
	create_ok(&paths, cps, ws);
	assert_non_null(strstr(paths.buf, "a/new.txt\n"));
	checkpoint_close(cps);
	buf_release(&paths);
	free(dir);
	free(ws);
}

struct writer {
	const char *ws;
	volatile int stop;
	int n;
};

/* Create files in a/ until told to stop, a little apart. */
static void *write_files(void *arg)
{
	struct writer *w = arg;
	struct timespec ts = { 0, 200 * 1000 };

	while (!w->stop) {
		char rel[32];

		snprintf(rel, sizeof(rel), "a/racy%04d.txt", w->n++);
		tu_write(w->ws, rel, "racy\n");
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/*
 * Files created in a folder while captures run (some while the capture
 * reads that folder): whatever a capture saw, the next one records every
 * one of them. (The racy rule itself is the test above: a change in the
 * tick of the look cannot be timed from outside.)
 */
static void test_statcache_files_created_during_a_capture(void **state)
{
	char *ws = tu_mkdtemp();
	struct checkpoints *cps;
	struct buf paths = BUF_INIT;
	struct writer w;
	int round, i;

	(void)state;
	cps = warm_tree(ws, &paths);
	memset(&w, 0, sizeof(w));
	w.ws = ws;
	for (round = 0; round < 8; round++) {
		pthread_t t;

		w.stop = 0;
		assert_int_equal(pthread_create(&t, NULL, write_files, &w), 0);
		create_ok(&paths, cps, ws);
		w.stop = 1;
		pthread_join(t, NULL);
		create_ok(&paths, cps, ws);
		for (i = 0; i < w.n; i++) {
			char rel[32];

			snprintf(rel, sizeof(rel), "a/racy%04d.txt\n", i);
			assert_non_null(strstr(paths.buf, rel));
		}
	}
	print_message("%d files created during captures, all recorded\n", w.n);
	checkpoint_close(cps);
	buf_release(&paths);
	free(ws);
}

/*
 * A file replaced by a rename (as editors and forgex write): its folder's
 * stamp moves, its entries do not; that one folder is listed again, the
 * new bytes recorded, and the next checkpoint lists nothing.
 */
static void test_statcache_file_replaced_by_rename(void **state)
{
	char *ws = tu_mkdtemp(), *tmp, *dst, *gd;
	struct checkpoints *cps;
	struct buf paths = BUF_INIT, before = BUF_INIT, shown = BUF_INIT;

	(void)state;
	cps = warm_tree(ws, &paths);
	buf_addstr(&before, paths.buf);
	tu_write(ws, "b/c/.three.tmp", "three, renamed over\n");
	tmp = xstrfmt("%s/b/c/.three.tmp", ws);
	dst = xstrfmt("%s/b/c/three.txt", ws);
	assert_int_equal(rename(tmp, dst), 0);
	vt_settle();
	create_ok(&paths, cps, ws);
	assert_int_equal(cps->dirs_listed, 1);
	assert_int_equal(checkpoint_files_read(cps), 1);
	assert_string_equal(paths.buf, before.buf);
	gd = xstrfmt("--git-dir=%s/.forgex/checkpoints", ws);
	vt_git_capture(&shown, ws, gd, "show", "HEAD:b/c/three.txt");
	assert_string_equal(shown.buf, "three, renamed over\n");
	create_ok(&paths, cps, ws);
	assert_int_equal(cps->dirs_listed, 0);
	assert_int_equal(checkpoint_files_read(cps), 0);
	checkpoint_close(cps);
	buf_release(&paths);
	buf_release(&before);
	buf_release(&shown);
	free(tmp);
	free(dst);
	free(gd);
	free(ws);
}

/* A folder replaced by a link: the link is recorded, not the folder's files. */
static void test_statcache_folder_replaced_by_link(void **state)
{
	char *ws = tu_mkdtemp(), *a;
	struct checkpoints *cps;
	struct buf paths = BUF_INIT;

	(void)state;
	cps = warm_tree(ws, &paths);
	assert_non_null(strstr(paths.buf, "b/c/three.txt\n"));
	a = xstrfmt("%s/b/c", ws);
	tu_rmtree(a);
	vt_symlink(ws, "b/c", "../a");
	create_ok(&paths, cps, ws);
	assert_null(strstr(paths.buf, "b/c/three.txt"));
	assert_non_null(strstr(paths.buf, "b/c\n"));
	assert_true(cps->dirs_listed > 0);
	checkpoint_close(cps);
	buf_release(&paths);
	free(ws);
}

/*
 * A .gitignore rewritten in place (its folder's stamp unchanged) to
 * ignore what was recorded: those files drop out; back again, they return.
 */
static void test_statcache_gitignore_rewritten_in_place(void **state)
{
	char *ws = tu_mkdtemp();
	struct checkpoints *cps;
	struct buf paths = BUF_INIT;

	(void)state;
	tu_write(ws, "a/.gitignore", "*.o\n");
	cps = warm_tree(ws, &paths);
	assert_non_null(strstr(paths.buf, "a/two.txt\n"));
	rewrite_in_place(ws, "a/.gitignore", "two*\n");
	create_ok(&paths, cps, ws);
	assert_null(strstr(paths.buf, "a/two.txt"));
	assert_non_null(strstr(paths.buf, "a/one.txt\n"));
	vt_settle();
	tu_write(ws, ".gitignore", "b/\n");	/* a new top-level .gitignore: a new entry */
	create_ok(&paths, cps, ws);
	assert_null(strstr(paths.buf, "b/c/three.txt"));
	vt_settle();
	rewrite_in_place(ws, "a/.gitignore", "*.o\n");
	create_ok(&paths, cps, ws);
	assert_non_null(strstr(paths.buf, "a/two.txt\n"));
	checkpoint_close(cps);
	buf_release(&paths);
	free(ws);
}

/*
 * A file created then removed between two checkpoints: the folder is
 * listed again (its stamp moved) and nothing new is recorded; the next
 * checkpoint is the short way again. A file recorded then removed is gone.
 */
static void test_statcache_file_created_then_removed(void **state)
{
	char *ws = tu_mkdtemp();
	struct checkpoints *cps;
	struct buf paths = BUF_INIT, before = BUF_INIT;

	(void)state;
	cps = warm_tree(ws, &paths);
	buf_addstr(&before, paths.buf);
	tu_write(ws, "a/tmp.txt", "temporary\n");
	vt_rm(ws, "a/tmp.txt");
	vt_settle();
	create_ok(&paths, cps, ws);
	assert_true(cps->dirs_listed > 0);
	assert_string_equal(paths.buf, before.buf);
	vt_settle();
	create_ok(&paths, cps, ws);
	assert_int_equal(cps->dirs_listed, 0);

	tu_write(ws, "b/c/kept.txt", "for a while\n");
	create_ok(&paths, cps, ws);
	assert_non_null(strstr(paths.buf, "b/c/kept.txt\n"));
	vt_settle();
	vt_rm(ws, "b/c/kept.txt");
	create_ok(&paths, cps, ws);
	assert_null(strstr(paths.buf, "b/c/kept.txt"));
	assert_string_equal(paths.buf, before.buf);
	checkpoint_close(cps);
	buf_release(&paths);
	buf_release(&before);
	free(ws);
}

/*
 * In a git repository: `git status` rewriting the index (new stat data,
 * the same paths) keeps the short way; an ignored file the user starts
 * tracking (`git add -f`, no folder changes) is recorded; a nested
 * repository that loses its .git has its files recorded.
 */
static void test_statcache_user_index_and_nested_repository(void **state)
{
	char *ws = tu_mkdtemp(), *gd, *index;
	struct stat before, after;
	struct checkpoints *cps;
	struct buf paths = BUF_INIT;

	(void)state;
	vt_git(ws, "init", "-q", "-b", "main");
	tu_write(ws, ".gitignore", "*.log\n");
	tu_write(ws, "a/keep.log", "ignored\n");
	tu_write(ws, "nested/inner.txt", "inner\n");
	tu_write(ws, "t/tracked.txt", "tracked\n");
	vt_git(ws, "add", ".gitignore", "t/tracked.txt");
	vt_git(ws, "commit", "-q", "-m", "first");
	vt_git(ws, "-C", "nested", "init", "-q");
	cps = warm_tree(ws, &paths);
	assert_null(strstr(paths.buf, "a/keep.log"));
	assert_null(strstr(paths.buf, "nested/inner.txt"));

	/* `git status` rewrites the index with new stat data only: still the short way */
	index = xstrfmt("%s/.git/index", ws);
	assert_int_equal(stat(index, &before), 0);
	rewrite_in_place(ws, "t/tracked.txt", "tracked, changed\n");
	vt_settle();
	vt_git(ws, "status", "--porcelain");
	assert_int_equal(stat(index, &after), 0);
	assert_true(before.st_ino != after.st_ino || before.st_mtim.tv_nsec != after.st_mtim.tv_nsec);
	vt_settle();
	create_ok(&paths, cps, ws);
	assert_int_equal(cps->dirs_listed, 0);
	assert_int_equal(checkpoint_files_read(cps), 1);
	create_ok(&paths, cps, ws);
	assert_int_equal(cps->dirs_listed, 0);
	assert_int_equal(checkpoint_files_read(cps), 0);

	/* ... but a path it starts tracking is recorded */
	vt_git(ws, "add", "-f", "a/keep.log");
	create_ok(&paths, cps, ws);
	assert_non_null(strstr(paths.buf, "a/keep.log\n"));
	gd = xstrfmt("%s/nested/.git", ws);
	tu_rmtree(gd);	/* frees gd */
	create_ok(&paths, cps, ws);
	assert_non_null(strstr(paths.buf, "nested/inner.txt\n"));
	checkpoint_close(cps);
	buf_release(&paths);
	free(index);
	free(ws);
}

/*
 * A record cut short or damaged is not trusted: the checkpoint is the
 * long way's (and right); the record is written again.
 */
static void test_statcache_damaged_record(void **state)
{
	char *ws = tu_mkdtemp(), *rec;
	struct checkpoints *cps;
	struct buf paths = BUF_INIT, before = BUF_INIT, raw = BUF_INIT;
	FILE *f;

	(void)state;
	cps = warm_tree(ws, &paths);
	buf_addstr(&before, paths.buf);
	rec = xstrfmt("%s/.forgex/checkpoints/" STATCACHE_FILE, ws);

	/* a record cut short at its end: the group is ignored, the next write starts afresh */
	tu_write(ws, "a/one.txt", "one, longer\n");
	vt_settle();
	create_ok(&paths, cps, ws);
	assert_int_equal(checkpoint_files_read(cps), 1);
	assert_int_equal(fsutil_read_file(&raw, rec, 0), 0);
	assert_int_equal(truncate(rec, (off_t)raw.len - 3), 0);
	vt_settle();
	create_ok(&paths, cps, ws);
	assert_int_equal(checkpoint_files_read(cps), 1);	/* its cached stamp was the old one */
	assert_string_equal(paths.buf, before.buf);

	/* a byte flipped in the base: the long way */
	buf_reset(&raw);
	assert_int_equal(fsutil_read_file(&raw, rec, 0), 0);
	raw.buf[raw.len / 2] ^= 0x40;
	f = fopen(rec, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(raw.buf, 1, raw.len, f), raw.len);
	fclose(f);
	create_ok(&paths, cps, ws);
	assert_true(cps->dirs_listed > 0);
	assert_string_equal(paths.buf, before.buf);
	vt_settle();
	create_ok(&paths, cps, ws);
	assert_int_equal(cps->dirs_listed, 0);
	checkpoint_close(cps);
	buf_release(&paths);
	buf_release(&before);
	buf_release(&raw);
	free(rec);
	free(ws);
}

/* The commit of the newest checkpoint without its parent, dates and message: tree and headers. */
static void newest_commit(struct buf *out, const char *ws)
{
	char *gd = xstrfmt("--git-dir=%s/.forgex/checkpoints", ws);
	struct buf raw = BUF_INIT;
	const char *p;

	vt_git_capture(&raw, ws, gd, "cat-file", "commit", "HEAD");
	buf_reset(out);
	/* the header lines, up to the blank line before the message */
	for (p = raw.buf; *p && *p != '\n';) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) + 1 : strlen(p);

		if (strncmp(p, "parent ", 7) && strncmp(p, "author ", 7) && strncmp(p, "committer ", 10))
			buf_add(out, p, n);
		p += n;
	}
	buf_release(&raw);
	free(gd);
}

/*
 * The short way gives the commit the long way gives: the same tree and
 * headers (permission bits, empty folders, too-large files) on a tree
 * with an executable, a 0600 file, links, an empty folder, a file over
 * max_file_bytes and a changed file.
 */
static void test_statcache_short_way_is_the_long_way(void **state)
{
	char *ws = tu_mkdtemp(), *rec;
	struct checkpoints *cps;
	struct buf paths = BUF_INIT, fast = BUF_INIT, slow = BUF_INIT;

	(void)state;
	vt_write_bytes(ws, "bin/run.sh", "#!/bin/sh\n", 10, 0755);
	vt_write_bytes(ws, "secret.txt", "secret\n", 7, 0600);
	vt_symlink(ws, "link", "secret.txt");
	vt_symlink(ws, "bin/dangling", "../nowhere");
	tu_write(ws, "empty/.keep-not", "x");
	vt_rm(ws, "empty/.keep-not");
	tu_write(ws, "big.txt", "0123456789012345678901234567890123456789012345678901234567890123456789\n");
	tu_write(ws, "a/one.txt", "one\n");
	cps = vt_open_ok(ws);	/* it makes .forgex: the top folder changes */
	checkpoint_set_max_file_bytes(cps, 64);
	vt_settle();
	create_ok(&paths, cps, ws);
	vt_settle();
	create_ok(&paths, cps, ws);
	assert_int_equal(cps->dirs_listed, 0);
	rec = xstrfmt("%s/.forgex/checkpoints/" STATCACHE_FILE, ws);
	rewrite_in_place(ws, "a/one.txt", "one, changed\n");
	vt_settle();
	create_ok(&paths, cps, ws);
	assert_int_equal(cps->dirs_listed, 0);
	newest_commit(&fast, ws);
	assert_non_null(strstr(fast.buf, "forgex-perms 1 644 755 755\n 600 secret.txt"));
	assert_non_null(strstr(fast.buf, "forgex-empty-dirs 1\n empty"));
	assert_non_null(strstr(fast.buf, "forgex-too-large 1\n 71 big.txt"));
	assert_int_equal(unlink(rec), 0);
	create_ok(&paths, cps, ws);
	assert_true(cps->dirs_listed > 0);
	newest_commit(&slow, ws);
	assert_string_equal(fast.buf, slow.buf);
	checkpoint_close(cps);
	buf_release(&paths);
	buf_release(&fast);
	buf_release(&slow);
	free(rec);
	free(ws);
}

/* A batch cut short (its marker left) drops the record with the index: the long way next. */
static void test_statcache_dropped_after_a_cut_batch(void **state)
{
	char *ws = tu_mkdtemp(), *rec;
	struct checkpoints *cps;
	struct buf paths = BUF_INIT;
	struct stat st;

	(void)state;
	cps = warm_tree(ws, &paths);
	checkpoint_close(cps);
	rec = xstrfmt("%s/.forgex/checkpoints/" STATCACHE_FILE, ws);
	assert_int_equal(stat(rec, &st), 0);
	tu_write(ws, ".forgex/checkpoints/forgex-writing", "");
	cps = vt_open_ok(ws);
	assert_int_equal(stat(rec, &st), -1);
	create_ok(&paths, cps, ws);
	assert_true(cps->dirs_listed > 0);
	assert_int_equal(stat(rec, &st), 0);
	checkpoint_close(cps);
	buf_release(&paths);
	free(rec);
	free(ws);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_statcache_racy_stamp_not_trusted),
		cmocka_unit_test(test_statcache_files_created_during_a_capture),
		cmocka_unit_test(test_statcache_file_replaced_by_rename),
		cmocka_unit_test(test_statcache_folder_replaced_by_link),
		cmocka_unit_test(test_statcache_gitignore_rewritten_in_place),
		cmocka_unit_test(test_statcache_file_created_then_removed),
		cmocka_unit_test(test_statcache_user_index_and_nested_repository),
		cmocka_unit_test(test_statcache_damaged_record),
		cmocka_unit_test(test_statcache_short_way_is_the_long_way),
		cmocka_unit_test(test_statcache_dropped_after_a_cut_batch),
	};

	return cmocka_run_group_tests(tests, vt_group_setup, vt_group_teardown);
}
