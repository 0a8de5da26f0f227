#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/path.h"
#include "helpers/testutil.h"

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

static void test_fsutil_write_atomic_creates_and_replaces(void **state)
{
	char *ws = tu_mkdtemp(), *c;
	struct buf p = BUF_INIT;
	struct stat st;

	(void)state;
	path_join(&p, ws, "f.txt");
	assert_int_equal(fsutil_write_atomic(p.buf, "one", 3, 0640), 0);
	assert_int_equal(stat(p.buf, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	assert_int_equal(chmod(p.buf, 0755), 0);
	assert_int_equal(fsutil_write_atomic(p.buf, "two!", 4, 0600), 0);
	c = tu_read(ws, "f.txt");
	assert_string_equal(c, "two!");
	assert_int_equal(stat(p.buf, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0755);	/* an existing file keeps its mode */
	assert_int_equal(count_entries(ws), 1);		/* no temporary file left */
	free(c);
	buf_release(&p);
	tu_rmtree(ws);
}

/*
 * A same-size rewrite within the second of the old file's mtime gets a
 * later second, so Python's .pyc check (mtime seconds and size) sees it.
 */
static void test_fsutil_write_atomic_later_second(void **state)
{
	char *ws = tu_mkdtemp();
	struct buf p = BUF_INIT;
	struct stat a, b;
	int i;

	(void)state;
	path_join(&p, ws, "calc.py");
	assert_int_equal(fsutil_write_atomic(p.buf, "return a - b\n", 13, 0644), 0);
	for (i = 0; i < 3; i++) {
		assert_int_equal(stat(p.buf, &a), 0);
		assert_int_equal(fsutil_write_atomic(p.buf, i % 2 ? "return a - b\n" : "return a + b\n",
						     13, 0644), 0);
		assert_int_equal(stat(p.buf, &b), 0);
		assert_int_equal(a.st_size, b.st_size);
		assert_true(b.st_mtim.tv_sec > a.st_mtim.tv_sec);
	}
	/* Versions always have increasing seconds, even ahead of the clock. */
	{
		struct timespec ts[2] = { { 0, UTIME_OMIT }, { time(NULL) + 3600, 0 } };

		assert_int_equal(utimensat(AT_FDCWD, p.buf, ts, 0), 0);
		assert_int_equal(fsutil_write_atomic(p.buf, "x", 1, 0644), 0);
		assert_int_equal(stat(p.buf, &b), 0);
		assert_int_equal(b.st_mtim.tv_sec, ts[1].tv_sec + 1);
	}
	/* A file of an earlier second keeps the clock's time. */
	{
		struct timespec ts[2] = { { 0, UTIME_OMIT }, { time(NULL) - 100, 0 } };

		assert_int_equal(utimensat(AT_FDCWD, p.buf, ts, 0), 0);
		assert_int_equal(fsutil_write_atomic(p.buf, "y", 1, 0644), 0);
		assert_int_equal(stat(p.buf, &b), 0);
		assert_true(b.st_mtim.tv_sec >= time(NULL) - 1);
	}
	buf_release(&p);
	tu_rmtree(ws);
}

static void test_fsutil_write_atomic_failure_leaves_old(void **state)
{
	char *ws = tu_mkdtemp(), *c;
	struct buf p = BUF_INIT;

	(void)state;
	tu_write(ws, "keep", "original");
	path_join(&p, ws, "missing-dir/f");
	assert_int_equal(fsutil_write_atomic(p.buf, "x", 1, 0644), FX_ENOTFOUND);
	buf_reset(&p);
	path_join(&p, ws, "keep");
	if (geteuid() != 0) {
		assert_int_equal(chmod(ws, 0500), 0);
		assert_true(fsutil_write_atomic(p.buf, "new", 3, 0644) < 0);
		assert_int_equal(chmod(ws, 0700), 0);
	}
	c = tu_read(ws, "keep");
	assert_string_equal(c, "original");
	free(c);
	buf_release(&p);
	tu_rmtree(ws);
}

static void test_fsutil_write_atomic_refuses_non_regular(void **state)
{
	char *ws = tu_mkdtemp();
	struct buf p = BUF_INIT;

	(void)state;
	path_join(&p, ws, "d");
	assert_int_equal(mkdir(p.buf, 0755), 0);
	assert_int_equal(fsutil_write_atomic(p.buf, "x", 1, 0644), FX_EINVAL);
	buf_release(&p);
	tu_rmtree(ws);
}

static void test_fsutil_read_limits(void **state)
{
	char *ws = tu_mkdtemp();
	struct buf p = BUF_INIT, c = BUF_INIT;

	(void)state;
	tu_write(ws, "f", "0123456789");
	path_join(&p, ws, "f");
	assert_int_equal(fsutil_read_file(&c, p.buf, 5), FX_ELIMIT);
	assert_int_equal(c.len, 0);
	assert_int_equal(fsutil_read_file(&c, p.buf, 10), 0);
	assert_string_equal(c.buf, "0123456789");
	buf_reset(&p);
	path_join(&p, ws, "nope");
	assert_int_equal(fsutil_read_file(&c, p.buf, 0), FX_ENOTFOUND);
	buf_release(&p);
	buf_release(&c);
	tu_rmtree(ws);
}

static void test_fsutil_mkdir_p_and_remove_tree(void **state)
{
	char *ws = tu_mkdtemp();
	struct buf p = BUF_INIT;

	(void)state;
	path_join(&p, ws, "a/b/c");
	assert_int_equal(fsutil_mkdir_p(p.buf, 0755), 0);
	assert_int_equal(fsutil_mkdir_p(p.buf, 0755), 0);
	assert_true(fsutil_is_dir(p.buf));
	tu_write(ws, "a/b/c/file", "x");
	tu_write(ws, "a/f", "y");
	buf_reset(&p);
	path_join(&p, ws, "a");
	assert_int_equal(fsutil_remove_tree(p.buf), 0);
	assert_false(fsutil_exists(p.buf));
	assert_int_equal(fsutil_remove_tree(p.buf), 0);
	buf_release(&p);
	tu_rmtree(ws);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fsutil_write_atomic_creates_and_replaces),
		cmocka_unit_test(test_fsutil_write_atomic_later_second),
		cmocka_unit_test(test_fsutil_write_atomic_failure_leaves_old),
		cmocka_unit_test(test_fsutil_write_atomic_refuses_non_regular),
		cmocka_unit_test(test_fsutil_read_limits),
		cmocka_unit_test(test_fsutil_mkdir_p_and_remove_tree),
	};

	return cmocka_run_group_tests_name("base/fsutil", tests, NULL, NULL);
}
