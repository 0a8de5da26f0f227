#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

#include "base/beneath.h"
#include "unit/tools/common.h"

/*
 * The file tools as a model uses them, and the confinement to the
 * workspace. Every test that touches path resolution runs twice: with
 * openat2 (state 0) and with the fallback walk that older kernels get
 * (state 1).
 */

static int mode_openat2 = 0, mode_fallback = 1;

static int set_mode(void **state)
{
	int fallback = *(int *)*state;

	beneath_force_fallback(fallback);
	if (!fallback && !beneath_have_openat2()) {
		print_message("skipping the openat2 run: this kernel has no openat2 "
			      "(the fallback run covers it)\n");
		skip();
	}
	return 0;
}

static char *slurp(const char *path)
{
	struct buf b = BUF_INIT;

	if (fsutil_read_file(&b, path, 0) < 0) {
		buf_release(&b);
		return NULL;
	}
	return buf_detach(&b, NULL);
}

static int count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/* ---- read_file ---- */

static void test_fs_read_numbers_lines(void **state)
{
	struct tt t;

	set_mode(state);
	tt_setup(&t);
	tu_write(t.ws, "a.txt", "alpha\nbeta\ngamma");
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file", json_pack("{s:s}", "path", "a.txt")),
			 TOOL_OK);
	assert_string_equal(t.out.buf, "     1\talpha\n     2\tbeta\n     3\tgamma\n");
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file",
				  json_pack("{s:s,s:i,s:i}", "path", "a.txt", "start_line", 2,
					    "end_line", 2)), TOOL_OK);
	assert_string_equal(t.out.buf, "     2\tbeta\n");
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file",
				  json_pack("{s:s,s:i}", "path", "a.txt", "start_line", 9)), TOOL_FAILED);
	assert_contains(t.out.buf, "past the end");
	assert_contains(t.out.buf, "3 lines");
	tu_write(t.ws, "empty", "");
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file", json_pack("{s:s}", "path", "empty")),
			 TOOL_OK);
	assert_contains(t.out.buf, "empty");
	tt_teardown(&t);
}

static void test_fs_read_caps_lines_and_bytes(void **state)
{
	struct buf big = BUF_INIT;
	struct tt t;
	int i;

	set_mode(state);
	tt_setup(&t);
	for (i = 1; i <= 5000; i++)
		buf_addf(&big, "line %d\n", i);
	tu_write(t.ws, "long.txt", big.buf);
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file",
				  json_pack("{s:s}", "path", "long.txt")), TOOL_OK);
	assert_contains(t.out.buf, "  2000\tline 2000\n");
	assert_not_contains(t.out.buf, "line 2001\n");
	assert_contains(t.out.buf, "showing lines 1-2000 of 5000");
	assert_contains(t.out.buf, "start_line=2001");
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file",
				  json_pack("{s:s,s:i}", "path", "long.txt", "start_line", 4990)), TOOL_OK);
	assert_contains(t.out.buf, "  4990\tline 4990\n");
	assert_contains(t.out.buf, "  5000\tline 5000\n");
	assert_not_contains(t.out.buf, "forgex:");	/* nothing was left out */

	/* 2000 lines of 200 bytes are more than 256 KiB: the byte cap speaks. */
	buf_reset(&big);
	for (i = 1; i <= 2000; i++) {
		buf_addf(&big, "%05d ", i);
		while (big.len % 200 != 199)
			buf_addch(&big, 'x');
		buf_addch(&big, '\n');
	}
	tu_write(t.ws, "wide.txt", big.buf);
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file",
				  json_pack("{s:s}", "path", "wide.txt")), TOOL_OK);
	assert_true(t.out.len <= 256 * 1024 + 300);
	assert_contains(t.out.buf, "output cut at 262144 bytes");
	assert_contains(t.out.buf, "of 2000");
	/* One line larger than the cap: its start is shown, not nothing. */
	buf_reset(&big);
	for (i = 0; i < 300 * 1024; i++)
		buf_addch(&big, 'y');
	tu_write(t.ws, "oneline.txt", big.buf);
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file",
				  json_pack("{s:s}", "path", "oneline.txt")), TOOL_OK);
	assert_contains(t.out.buf, "     1\tyyyy");
	assert_contains(t.out.buf, "the line itself was cut");
	buf_release(&big);
	tt_teardown(&t);
}

static void test_fs_read_refuses_binary(void **state)
{
	struct buf text = BUF_INIT;
	struct tt t;
	int fd;

	set_mode(state);
	tt_setup(&t);
	fd = open(tt_path(&t, "nul.bin"), O_WRONLY | O_CREAT, 0644);
	assert_int_equal(write(fd, "ELF\0\1\2abc\n", 10), 10);
	close(fd);
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file", json_pack("{s:s}", "path", "nul.bin")),
			 TOOL_FAILED);
	assert_contains(t.out.buf, "binary");
	assert_contains(t.out.buf, "NUL byte at offset 3");
	tu_write(t.ws, "latin1.txt", "caf\xe9 au lait\n");
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file",
				  json_pack("{s:s}", "path", "latin1.txt")), TOOL_FAILED);
	assert_contains(t.out.buf, "invalid UTF-8 at offset 3");
	/* A multi-byte character cut by the 8 KiB sniff window is still text. */
	while (text.len < 8191)
		buf_addch(&text, 'a');
	buf_addstr(&text, "\xc3\xa9 and more\n");
	tu_write(t.ws, "utf8.txt", text.buf);
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file",
				  json_pack("{s:s}", "path", "utf8.txt")), TOOL_OK);
	assert_contains(t.out.buf, "\xc3\xa9 and more");
	buf_release(&text);
	tt_teardown(&t);
}

/* ---- confinement ---- */

static void test_fs_refuses_paths_outside(void **state)
{
	struct tt t;
	char *parent_file;

	set_mode(state);
	tt_setup(&t);
	tu_write(t.ws, "in.txt", "inside\n");
	parent_file = xstrfmt("%s.outside", t.ws);
	assert_int_equal(fsutil_write_atomic(parent_file, "x", 1, 0644), 0);

	assert_int_equal(tt_callj(&t, tt_builder(), "read_file", json_pack("{s:s}", "path", "../x")),
			 TOOL_REFUSED);
	assert_contains(t.out.buf, "'../x' is outside the workspace");
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file",
				  json_pack("{s:s}", "path", "/etc/passwd")), TOOL_REFUSED);
	assert_contains(t.out.buf, "outside the workspace");
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file",
				  json_pack("{s:s}", "path", "a/../../in.txt")), TOOL_REFUSED);
	assert_contains(t.out.buf, "outside the workspace");
	assert_int_equal(tt_callj(&t, tt_builder(), "write_file",
				  json_pack("{s:s,s:s}", "path", parent_file, "content", "pwned")),
			 TOOL_REFUSED);
	assert_contains(t.out.buf, "outside the workspace");
	assert_int_equal(tt_callj(&t, tt_builder(), "write_file",
				  json_pack("{s:s,s:s}", "path", "../ws-sibling", "content", "x")),
			 TOOL_REFUSED);
	assert_int_equal(tt_callj(&t, tt_builder(), "list_dir", json_pack("{s:s}", "path", "..")),
			 TOOL_REFUSED);
	assert_int_equal(tt_callj(&t, tt_builder(), "delete_file",
				  json_pack("{s:s}", "path", parent_file)), TOOL_REFUSED);
	assert_true(fsutil_exists(parent_file));
	assert_int_equal(tt_callj(&t, tt_builder(), "move_file",
				  json_pack("{s:s,s:s}", "from", "in.txt", "to", "../stolen.txt")),
			 TOOL_REFUSED);
	assert_true(fsutil_exists(tt_path(&t, "in.txt")));

	/* Absolute paths inside the workspace are fine, and so is "a/../b". */
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file",
				  json_pack("{s:s}", "path", tt_path(&t, "in.txt"))), TOOL_OK);
	assert_contains(t.out.buf, "inside");
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file",
				  json_pack("{s:s}", "path", "sub/../in.txt")), TOOL_OK);
	unlink(parent_file);
	free(parent_file);
	tt_teardown(&t);
}

/* Every file tool, aimed through a symlink at /etc/passwd, leaves it alone. */
static void test_fs_symlink_to_etc_passwd(void **state)
{
	char *before = slurp("/etc/passwd"), *after;
	struct stat st_before, st_after;
	struct tt t;

	set_mode(state);
	if (!before)
		skip();
	assert_int_equal(stat("/etc/passwd", &st_before), 0);
	tt_setup(&t);
	assert_int_equal(symlink("/etc/passwd", tt_path(&t, "pw")), 0);
	assert_int_equal(symlink("../../../../../../../../../etc/passwd", tt_path(&t, "pw-rel")), 0);

	assert_int_equal(tt_callj(&t, tt_builder(), "read_file", json_pack("{s:s}", "path", "pw")),
			 TOOL_REFUSED);
	assert_contains(t.out.buf, "outside the workspace");
	assert_not_contains(t.out.buf, "root:");
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file", json_pack("{s:s}", "path", "pw-rel")),
			 TOOL_REFUSED);
	assert_not_contains(t.out.buf, "root:");
	assert_int_equal(tt_callj(&t, tt_builder(), "edit_file",
				  json_pack("{s:s,s:s,s:s}", "path", "pw", "old_string", "root",
					    "new_string", "toor")), TOOL_REFUSED);
	assert_not_contains(t.out.buf, "root:");
	assert_int_equal(tt_callj(&t, tt_builder(), "write_file",
				  json_pack("{s:s,s:s}", "path", "pw", "content", "pwned\n")), TOOL_REFUSED);
	assert_int_equal(tt_callj(&t, tt_builder(), "write_file",
				  json_pack("{s:s,s:s}", "path", "pw-rel", "content", "pwned\n")),
			 TOOL_REFUSED);
	assert_int_equal(tt_callj(&t, tt_builder(), "edit_file",
				  json_pack("{s:s,s:s,s:s}", "path", "pw", "old_string", "",
					    "new_string", "pwned")), TOOL_REFUSED);
	assert_int_equal(tt_callj(&t, tt_builder(), "search",
				  json_pack("{s:s,s:s}", "pattern", "root", "path", "pw")), TOOL_REFUSED);
	assert_not_contains(t.out.buf, "root:");
	assert_int_equal(tt_callj(&t, tt_builder(), "search", json_pack("{s:s}", "pattern", "root:")),
			 TOOL_OK);
	assert_not_contains(t.out.buf, "root:x");
	/* Moving and deleting act on the link itself, never on what it points to. */
	assert_int_equal(tt_callj(&t, tt_builder(), "move_file",
				  json_pack("{s:s,s:s}", "from", "pw", "to", "moved")), TOOL_OK);
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file", json_pack("{s:s}", "path", "moved")),
			 TOOL_REFUSED);
	assert_int_equal(tt_callj(&t, tt_builder(), "delete_file", json_pack("{s:s}", "path", "moved")),
			 TOOL_OK);
	assert_contains(t.out.buf, "the symbolic link, not what it points to");
	assert_false(fsutil_exists(tt_path(&t, "moved")));

	after = slurp("/etc/passwd");
	assert_non_null(after);
	assert_string_equal(before, after);
	assert_int_equal(stat("/etc/passwd", &st_after), 0);
	assert_int_equal(st_before.st_ino, st_after.st_ino);
	assert_int_equal(st_before.st_mtime, st_after.st_mtime);
	free(before);
	free(after);
	tt_teardown(&t);
}

static void test_fs_symlink_to_folder_outside(void **state)
{
	char *outside = tu_mkdtemp(), *c;
	struct tt t;

	set_mode(state);
	tt_setup(&t);
	tu_write(outside, "secret.txt", "TOP-SECRET\n");
	assert_int_equal(symlink(outside, tt_path(&t, "out")), 0);
	assert_int_equal(symlink("..", tt_path(&t, "up")), 0);

	assert_int_equal(tt_callj(&t, tt_builder(), "read_file",
				  json_pack("{s:s}", "path", "out/secret.txt")), TOOL_REFUSED);
	assert_contains(t.out.buf, "outside the workspace");
	assert_not_contains(t.out.buf, "TOP-SECRET");
	assert_int_equal(tt_callj(&t, tt_builder(), "list_dir", json_pack("{s:s}", "path", "out")),
			 TOOL_REFUSED);
	assert_not_contains(t.out.buf, "secret.txt");
	assert_int_equal(tt_callj(&t, tt_builder(), "list_dir", json_pack("{s:s}", "path", "up")),
			 TOOL_REFUSED);
	assert_int_equal(tt_callj(&t, tt_builder(), "write_file",
				  json_pack("{s:s,s:s}", "path", "out/new.txt", "content", "x")),
			 TOOL_REFUSED);
	assert_int_equal(tt_callj(&t, tt_builder(), "write_file",
				  json_pack("{s:s,s:s}", "path", "out/deeper/new.txt", "content", "x")),
			 TOOL_REFUSED);
	assert_int_equal(tt_callj(&t, tt_builder(), "move_file",
				  json_pack("{s:s,s:s}", "from", "out/secret.txt", "to", "got.txt")),
			 TOOL_REFUSED);
	assert_int_equal(tt_callj(&t, tt_builder(), "delete_file",
				  json_pack("{s:s}", "path", "out/secret.txt")), TOOL_REFUSED);
	assert_int_equal(tt_callj(&t, tt_builder(), "search",
				  json_pack("{s:s,s:s}", "pattern", "SECRET", "path", "out")), TOOL_REFUSED);
	assert_int_equal(tt_callj(&t, tt_builder(), "search", json_pack("{s:s}", "pattern", "SECRET")),
			 TOOL_OK);
	assert_not_contains(t.out.buf, "TOP-SECRET");
	/* list_dir of the workspace shows the link, without following it. */
	assert_int_equal(tt_call(&t, tt_builder(), "list_dir", "{}"), TOOL_OK);
	assert_contains(t.out.buf, "out -> ");
	assert_not_contains(t.out.buf, "secret.txt");

	assert_int_equal(count_entries(outside), 1);
	c = tu_read(outside, "secret.txt");
	assert_string_equal(c, "TOP-SECRET\n");
	free(c);
	tu_rmtree(outside);
	tt_teardown(&t);
}

static void test_fs_symlinks_inside_are_followed(void **state)
{
	struct tt t;
	char *c, *abs_target;
	struct stat st;

	set_mode(state);
	tt_setup(&t);
	tu_write(t.ws, "real.txt", "real content\n");
	tu_write(t.ws, "sub/deep/file.txt", "deep\n");
	assert_int_equal(symlink("real.txt", tt_path(&t, "alias.txt")), 0);
	assert_int_equal(symlink("../../real.txt", tt_path(&t, "sub/deep/up.txt")), 0);
	assert_int_equal(symlink("sub/deep", tt_path(&t, "dl")), 0);
	abs_target = xstrdup(tt_path(&t, "real.txt"));
	assert_int_equal(symlink(abs_target, tt_path(&t, "abs.txt")), 0);

	assert_int_equal(tt_callj(&t, tt_builder(), "read_file", json_pack("{s:s}", "path", "alias.txt")),
			 TOOL_OK);
	assert_contains(t.out.buf, "real content");
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file",
				  json_pack("{s:s}", "path", "sub/deep/up.txt")), TOOL_OK);
	assert_contains(t.out.buf, "real content");
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file", json_pack("{s:s}", "path", "dl/file.txt")),
			 TOOL_OK);
	assert_contains(t.out.buf, "deep");
	/* An absolute link naming a place inside the workspace is inside. */
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file", json_pack("{s:s}", "path", "abs.txt")),
			 TOOL_OK);
	assert_contains(t.out.buf, "real content");

	/* Writing through a link changes its target and keeps the link. */
	assert_int_equal(tt_callj(&t, tt_builder(), "write_file",
				  json_pack("{s:s,s:s}", "path", "alias.txt", "content", "new\n")), TOOL_OK);
	assert_contains(t.out.buf, "replaced real.txt");
	c = tu_read(t.ws, "real.txt");
	assert_string_equal(c, "new\n");
	free(c);
	assert_int_equal(lstat(tt_path(&t, "alias.txt"), &st), 0);
	assert_true(S_ISLNK(st.st_mode));
	assert_int_equal(t.ctx.changed.nr, 1);
	assert_string_equal(t.ctx.changed.v[0], "real.txt");
	free(abs_target);
	tt_teardown(&t);
}

/* ---- the race: a component becomes a symlink to outside while calls run ---- */

struct flipper {
	char *ws;
	atomic_int stop;
	atomic_long flips;
};

static void *flip(void *arg)
{
	struct flipper *f = arg;
	int dfd = open(f->ws, O_RDONLY | O_DIRECTORY);

	while (!atomic_load(&f->stop)) {
		/* Swap the real folder "d" and the link "dl" -> outside, atomically. */
		if (renameat2(dfd, "d", dfd, "dl", RENAME_EXCHANGE) == 0)
			atomic_fetch_add(&f->flips, 1);
	}
	close(dfd);
	return NULL;
}

static void test_fs_race_symlink_swap_cannot_escape(void **state)
{
	char *outside = tu_mkdtemp(), *c;
	struct flipper f;
	pthread_t th;
	struct tt t;
	int i, inside = 0, refused = 0;

	set_mode(state);
	tt_setup(&t);
	tu_write(outside, "f", "OUTSIDE-SECRET\n");
	tu_write(t.ws, "d/f", "inside\n");
	assert_int_equal(symlink(outside, tt_path(&t, "dl")), 0);
	f.ws = t.ws;
	atomic_init(&f.stop, 0);
	atomic_init(&f.flips, 0);
	assert_int_equal(pthread_create(&th, NULL, flip, &f), 0);
	for (i = 0; i < 20000 && (inside < 50 || refused < 50); i++) {
		char name[64];

		tt_callj(&t, tt_builder(), "read_file", json_pack("{s:s}", "path", "d/f"));
		if (strstr(t.out.buf, "OUTSIDE"))
			fail_msg("read_file escaped the workspace: %s", t.out.buf);
		if (t.status == TOOL_OK)
			inside++;
		else
			refused++;
		snprintf(name, sizeof(name), "d/w%d", i % 8);
		tt_callj(&t, tt_builder(), "write_file", json_pack("{s:s,s:s}", "path", name,
								    "content", "w"));
		tt_callj(&t, tt_builder(), "list_dir", json_pack("{s:s}", "path", "d"));
		if (strstr(t.out.buf, "OUTSIDE"))
			fail_msg("list_dir escaped the workspace");
		if (i % 16 == 0) {
			tt_callj(&t, tt_builder(), "search", json_pack("{s:s,s:s}", "pattern", "SECRET",
								    "path", "d"));
			if (strstr(t.out.buf, "OUTSIDE-SECRET"))
				fail_msg("search escaped the workspace: %s", t.out.buf);
		}
	}
	atomic_store(&f.stop, 1);
	pthread_join(th, NULL);
	/* The race really happened: both states were seen, many swaps were made. */
	assert_true(atomic_load(&f.flips) > 100);
	assert_true(inside > 0);
	assert_true(refused > 0);
	/* Nothing was written outside, and the secret is as it was. */
	assert_int_equal(count_entries(outside), 1);
	c = tu_read(outside, "f");
	assert_string_equal(c, "OUTSIDE-SECRET\n");
	free(c);
	tu_rmtree(outside);
	tt_teardown(&t);
}

/* ---- write, delete, move, list ---- */

static void test_fs_write_creates_parents_atomically(void **state)
{
	struct tt t;
	char *c;

	set_mode(state);
	tt_setup(&t);
	assert_int_equal(tt_callj(&t, tt_builder(), "write_file",
				  json_pack("{s:s,s:s}", "path", "a/b/c.txt", "content", "one\ntwo\n")),
			 TOOL_OK);
	assert_string_equal(t.out.buf, "created a/b/c.txt: 8 bytes, 2 lines\n");
	c = tu_read(t.ws, "a/b/c.txt");
	assert_string_equal(c, "one\ntwo\n");
	free(c);
	assert_int_equal(tt_callj(&t, tt_builder(), "write_file",
				  json_pack("{s:s,s:s}", "path", "a/b/c.txt", "content", "")), TOOL_OK);
	assert_contains(t.out.buf, "replaced a/b/c.txt: 0 bytes");
	assert_int_equal(count_entries(tt_path(&t, "a/b")), 1);	/* no temporary file left */
	assert_int_equal(tt_callj(&t, tt_builder(), "write_file",
				  json_pack("{s:s,s:s}", "path", "a/b", "content", "x")), TOOL_FAILED);
	assert_contains(t.out.buf, "a folder");
	assert_int_equal(tt_callj(&t, tt_builder(), "write_file",
				  json_pack("{s:s,s:s}", "path", ".git/hooks/pre-commit", "content",
					    "#!/bin/sh\nrm -rf ~\n")), TOOL_REFUSED);
	assert_contains(t.out.buf, ".git");
	assert_false(fsutil_exists(tt_path(&t, ".git")));
	assert_int_equal(tt_callj(&t, tt_builder(), "write_file",
				  json_pack("{s:s,s:s}", "path", ".forgex/checkpoints/x", "content", "x")),
			 TOOL_REFUSED);
	assert_int_equal(t.ctx.changed.nr, 1);
	assert_string_equal(t.ctx.changed.v[0], "a/b/c.txt");
	tt_teardown(&t);
}

static void test_fs_delete(void **state)
{
	struct tt t;

	set_mode(state);
	tt_setup(&t);
	tu_write(t.ws, "f.txt", "x");
	tu_write(t.ws, "full/inner.txt", "x");
	assert_int_equal(mkdir(tt_path(&t, "empty"), 0755), 0);
	assert_int_equal(tt_callj(&t, tt_builder(), "delete_file", json_pack("{s:s}", "path", "f.txt")),
			 TOOL_OK);
	assert_false(fsutil_exists(tt_path(&t, "f.txt")));
	assert_int_equal(tt_callj(&t, tt_builder(), "delete_file", json_pack("{s:s}", "path", "f.txt")),
			 TOOL_FAILED);
	assert_contains(t.out.buf, "does not exist");
	assert_int_equal(tt_callj(&t, tt_builder(), "delete_file", json_pack("{s:s}", "path", "full")),
			 TOOL_FAILED);
	assert_contains(t.out.buf, "not empty");
	assert_true(fsutil_exists(tt_path(&t, "full/inner.txt")));
	assert_int_equal(tt_callj(&t, tt_builder(), "delete_file", json_pack("{s:s}", "path", "empty")),
			 TOOL_OK);
	assert_false(fsutil_exists(tt_path(&t, "empty")));
	assert_int_equal(tt_callj(&t, tt_builder(), "delete_file", json_pack("{s:s}", "path", ".")),
			 TOOL_REFUSED);
	assert_true(fsutil_is_dir(t.ws));
	assert_int_equal(t.ctx.changed.nr, 2);
	tt_teardown(&t);
}

static void test_fs_move_never_overwrites(void **state)
{
	struct tt t;
	char *c;

	set_mode(state);
	tt_setup(&t);
	tu_write(t.ws, "a.txt", "A");
	tu_write(t.ws, "b.txt", "B");
	assert_int_equal(tt_callj(&t, tt_builder(), "move_file",
				  json_pack("{s:s,s:s}", "from", "a.txt", "to", "b.txt")), TOOL_FAILED);
	assert_contains(t.out.buf, "already exists");
	c = tu_read(t.ws, "b.txt");
	assert_string_equal(c, "B");
	free(c);
	assert_true(fsutil_exists(tt_path(&t, "a.txt")));
	assert_int_equal(tt_callj(&t, tt_builder(), "move_file",
				  json_pack("{s:s,s:s}", "from", "a.txt", "to", "x/y/a2.txt")), TOOL_OK);
	assert_string_equal(t.out.buf, "moved a.txt to x/y/a2.txt\n");
	c = tu_read(t.ws, "x/y/a2.txt");
	assert_string_equal(c, "A");
	free(c);
	assert_false(fsutil_exists(tt_path(&t, "a.txt")));
	assert_int_equal(tt_callj(&t, tt_builder(), "move_file",
				  json_pack("{s:s,s:s}", "from", "x", "to", "x/y/z")), TOOL_FAILED);
	assert_int_equal(tt_callj(&t, tt_builder(), "move_file",
				  json_pack("{s:s,s:s}", "from", "nope", "to", "z")), TOOL_FAILED);
	assert_contains(t.out.buf, "does not exist");
	assert_int_equal(t.ctx.changed.nr, 2);
	assert_string_equal(t.ctx.changed.v[0], "a.txt");
	assert_string_equal(t.ctx.changed.v[1], "x/y/a2.txt");
	tt_teardown(&t);
}

static void test_fs_list_dir(void **state)
{
	struct tt t;
	int i;

	set_mode(state);
	tt_setup(&t);
	tu_write(t.ws, "b.txt", "");
	tu_write(t.ws, "a/one.c", "");
	tu_write(t.ws, "a/deeper/two.c", "");
	tu_write(t.ws, ".git/HEAD", "ref: refs/heads/main\n");
	tu_write(t.ws, ".gitignore", "build/\n*.o\n");
	tu_write(t.ws, "build/out.bin", "");
	tu_write(t.ws, "a/x.o", "");
	assert_int_equal(tt_call(&t, tt_builder(), "list_dir", ""), TOOL_OK);
	assert_string_equal(t.out.buf, ".gitignore\na/\nb.txt\nbuild/  (ignored; not expanded)\n");
	assert_int_equal(tt_callj(&t, tt_builder(), "list_dir", json_pack("{s:s,s:i}", "path", "a",
									  "depth", 3)), TOOL_OK);
	assert_string_equal(t.out.buf, "a/deeper/\na/deeper/two.c\na/one.c\na/x.o  (ignored)\n");
	assert_int_equal(tt_callj(&t, tt_builder(), "list_dir", json_pack("{s:s}", "path", "b.txt")),
			 TOOL_FAILED);
	assert_contains(t.out.buf, "read_file");
	assert_int_equal(tt_callj(&t, tt_builder(), "list_dir", json_pack("{s:s}", "path", ".git")),
			 TOOL_REFUSED);
	for (i = 0; i < 1100; i++) {
		char name[32];

		snprintf(name, sizeof(name), "many/f%04d", i);
		tu_write(t.ws, name, "");
	}
	assert_int_equal(tt_callj(&t, tt_builder(), "list_dir", json_pack("{s:s}", "path", "many")),
			 TOOL_OK);
	assert_contains(t.out.buf, "many/f0999\n");
	assert_not_contains(t.out.buf, "many/f1000");
	assert_contains(t.out.buf, "stopped after 1000 entries");
	assert_int_equal(mkdir(tt_path(&t, "void"), 0755), 0);
	assert_int_equal(tt_callj(&t, tt_builder(), "list_dir", json_pack("{s:s}", "path", "void")),
			 TOOL_OK);
	assert_contains(t.out.buf, "empty folder");
	tt_teardown(&t);
}

static void test_fs_refuses_special_files(void **state)
{
	struct tt t;

	set_mode(state);
	tt_setup(&t);
	assert_int_equal(mkfifo(tt_path(&t, "pipe"), 0644), 0);
	/* Reading a FIFO would block for ever: it is refused without opening it. */
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file", json_pack("{s:s}", "path", "pipe")),
			 TOOL_FAILED);
	assert_contains(t.out.buf, "named pipe");
	assert_int_equal(tt_callj(&t, tt_builder(), "write_file",
				  json_pack("{s:s,s:s}", "path", "pipe", "content", "x")), TOOL_FAILED);
	tt_teardown(&t);
}

/*
 * No tool writes .git or .forgex at any depth, in any letter case, nor
 * through a link that leads there (issue 10: a project file written by a
 * tool would be obeyed by the next run).
 */
static void test_fs_protected_folders_any_depth_any_case(void **state)
{
	static const char *const paths[] = {
		".forgex/config.toml", ".Forgex/config.toml", ".FORGEX/x", "sub/.forgex/config.toml",
		"a/b/.ForGex/config.toml", ".git/config", ".GIT/hooks/post-checkout", "sub/.Git/config",
		"viaforgex/config.toml", "viagit/hooks/pre-commit",
	};
	struct tt t;
	size_t i;

	set_mode(state);
	tt_setup(&t);
	assert_int_equal(mkdir(tt_path(&t, ".forgex"), 0755), 0);
	assert_int_equal(mkdir(tt_path(&t, ".git"), 0755), 0);
	tu_write(t.ws, "sub/.forgex/config.toml", "[pipeline]\n");
	tu_write(t.ws, "sub/ok.txt", "fine\n");
	assert_int_equal(symlink(".forgex", tt_path(&t, "viaforgex")), 0);
	assert_int_equal(symlink(".git", tt_path(&t, "viagit")), 0);
	for (i = 0; i < ARRAY_SIZE(paths); i++) {
		assert_int_equal(tt_callj(&t, tt_builder(), "write_file",
					  json_pack("{s:s,s:s}", "path", paths[i], "content",
						    "[sandbox]\nbackend = \"none\"\n")), TOOL_REFUSED);
		if (!strstr(t.out.buf, "inside .forgex") && !strstr(t.out.buf, "inside a .git"))
			fail_msg("write_file %s: %s", paths[i], t.out.buf);
		{
			int st = tt_callj(&t, tt_builder(), "delete_file",
					  json_pack("{s:s}", "path", paths[i]));

			/* refused where it is protected; a missing file is a plain failure */
			if (strstr(t.out.buf, "does not exist"))
				assert_int_equal(st, TOOL_FAILED);
			else if (strstr(t.out.buf, "inside .forgex") || strstr(t.out.buf, "inside a .git"))
				assert_int_equal(st, TOOL_REFUSED);
			else
				fail_msg("delete_file %s: %s", paths[i], t.out.buf);
		}
		assert_int_equal(tt_callj(&t, tt_builder(), "move_file",
					  json_pack("{s:s,s:s}", "from", "sub/ok.txt", "to", paths[i])),
				 TOOL_REFUSED);
		if (!strstr(t.out.buf, "inside .forgex") && !strstr(t.out.buf, "inside a .git"))
			fail_msg("move_file to %s: %s", paths[i], t.out.buf);
	}
	assert_int_equal(tt_callj(&t, tt_builder(), "edit_file",
				  json_pack("{s:s,s:s,s:s}", "path", "sub/.forgex/config.toml", "old_string",
					    "[pipeline]", "new_string", "[sandbox]\nbackend = \"none\"")),
			 TOOL_REFUSED);
	assert_contains(t.out.buf, "inside .forgex");
	{
		char *c = tu_read(t.ws, "sub/.forgex/config.toml");

		assert_string_equal(c, "[pipeline]\n");
		free(c);
	}
	assert_false(fsutil_exists(tt_path(&t, ".forgex/config.toml")));
	assert_false(fsutil_exists(tt_path(&t, ".git/config")));
	/* reading .forgex is fine; reading .GIT is not */
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file",
				  json_pack("{s:s}", "path", "sub/.forgex/config.toml")), TOOL_OK);
	assert_int_equal(tt_callj(&t, tt_builder(), "read_file",
				  json_pack("{s:s}", "path", ".GIT/config")), TOOL_REFUSED);
	assert_contains(t.out.buf, "inside a .git");
	tt_teardown(&t);
}

#define BOTH(fn) \
	cmocka_unit_test_prestate(fn, &mode_openat2), cmocka_unit_test_prestate(fn, &mode_fallback)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_fs_read_numbers_lines),
		BOTH(test_fs_read_caps_lines_and_bytes),
		BOTH(test_fs_read_refuses_binary),
		BOTH(test_fs_refuses_paths_outside),
		BOTH(test_fs_symlink_to_etc_passwd),
		BOTH(test_fs_symlink_to_folder_outside),
		BOTH(test_fs_symlinks_inside_are_followed),
		BOTH(test_fs_race_symlink_swap_cannot_escape),
		BOTH(test_fs_write_creates_parents_atomically),
		BOTH(test_fs_delete),
		BOTH(test_fs_move_never_overwrites),
		BOTH(test_fs_list_dir),
		BOTH(test_fs_refuses_special_files),
		BOTH(test_fs_protected_folders_any_depth_any_case),
	};

	return cmocka_run_group_tests_name("tools/fs", tests, NULL, NULL);
}
