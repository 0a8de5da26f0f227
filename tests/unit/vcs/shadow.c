/*
 * The shadow repository under attack and after crashes (src/vcs/shadow.c,
 * odb.c): links planted where forgex's own files go, locks a killed
 * process left, loose objects cut short or corrupted. Each case checks the
 * reason of the refusal and that nothing outside changed (bytes, mtimes).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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
#include "vcs/diff.h"

/* A hang (libgit2's inflate loop) must fail the test, not stall the suite. */
static int guard(void **state)
{
	(void)state;
	alarm(60);
	return 0;
}

static int unguard(void **state)
{
	(void)state;
	alarm(0);
	return 0;
}

static char *path_in_ws(const char *ws, const char *rel)
{
	return xstrfmt("%s/%s", ws, rel);
}

/* A workspace with one checkpoint already taken (the shadow exists). */
static char *workspace_with_shadow(int git)
{
	char *ws = tu_mkdtemp();
	struct checkpoint_info info;
	struct checkpoints *cps;

	if (git)
		vt_git(ws, "init", "-q");
	tu_write(ws, "a.txt", "a\n");
	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, "first");
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	return ws;
}

/* A folder outside the workspace holding `name` with known bytes and an old mtime. */
static char *outside_dir(const char *name)
{
	char *d = tu_mkdtemp();
	struct buf p = BUF_INIT;
	struct timespec old[2] = { { 1000000000, 0 }, { 1000000000, 0 } };

	if (name) {
		tu_write(d, name, "the user's own bytes\n");
		path_join(&p, d, name);
		assert_int_equal(utimensat(AT_FDCWD, p.buf, old, AT_SYMLINK_NOFOLLOW), 0);
	}
	buf_release(&p);
	return d;
}

static void expect_refused(int ret, const char *what)
{
	if (ret != FX_EDENIED || !strstr(err_last(), what))
		fprintf(stderr, "expected a refusal naming %s, got %d: %s\n", what, ret, err_last());
	assert_int_equal(ret, FX_EDENIED);
	assert_non_null(strstr(err_last(), what));
	assert_non_null(strstr(err_last(), "symbolic link"));
}

/* Opening refuses, naming the link; `outside` stays byte for byte and time for time the same. */
static void expect_all_refused(const char *ws, const char *what, const char *outside)
{
	struct buf before = BUF_INIT, after = BUF_INIT, d = BUF_INIT;
	struct checkpoint_info info;
	struct checkpoints *cps = NULL;

	vt_manifest(&before, outside, VT_TIMES | VT_ALL);
	expect_refused(checkpoint_open(&cps, ws), what);
	assert_null(cps);
	vt_manifest(&after, outside, VT_TIMES | VT_ALL);
	vt_assert_same(&before, &after, "outside after open");
	buf_release(&before);
	buf_release(&after);
	buf_release(&d);
	(void)info;
}

static void test_shadow_planted_info_link(void **state)
{
	char *ws = workspace_with_shadow(0), *dir = outside_dir("exclude");

	(void)state;
	vt_rm(ws, ".forgex/checkpoints/info/attributes");
	vt_rm(ws, ".forgex/checkpoints/info/exclude");
	vt_rm(ws, ".forgex/checkpoints/info");
	vt_symlink(ws, ".forgex/checkpoints/info", dir);
	expect_all_refused(ws, ".forgex/checkpoints/info", dir);
	assert_false(vt_exists(dir, "attributes"));
	tu_rmtree(dir);
	tu_rmtree(ws);
}

static void test_shadow_planted_config_link(void **state)
{
	char *ws = workspace_with_shadow(1), *home = outside_dir(".gitconfig"), *target;

	(void)state;
	target = xstrfmt("%s/.gitconfig", home);
	vt_rm(ws, ".forgex/checkpoints/config");
	vt_symlink(ws, ".forgex/checkpoints/config", target);
	expect_all_refused(ws, ".forgex/checkpoints/config", home);
	free(target);
	tu_rmtree(home);
	tu_rmtree(ws);
}

static void test_shadow_planted_index_link(void **state)
{
	char *ws = workspace_with_shadow(0), *dir = outside_dir(NULL), *target;

	(void)state;
	target = xstrfmt("%s/missing/path", dir);
	vt_rm(ws, ".forgex/checkpoints/index");
	vt_symlink(ws, ".forgex/checkpoints/index", target);
	expect_all_refused(ws, ".forgex/checkpoints/index", dir);
	assert_false(vt_exists(dir, "missing"));
	free(target);
	tu_rmtree(dir);
	tu_rmtree(ws);
}

static void test_shadow_planted_ref_link(void **state)
{
	char *ws = workspace_with_shadow(0), *dir = outside_dir("head"), *target;

	(void)state;
	target = xstrfmt("%s/head", dir);
	vt_rm(ws, ".forgex/checkpoints/refs/forgex/checkpoints");
	vt_symlink(ws, ".forgex/checkpoints/refs/forgex/checkpoints", target);
	expect_all_refused(ws, ".forgex/checkpoints/refs/forgex/checkpoints", dir);
	free(target);
	tu_rmtree(dir);
	tu_rmtree(ws);
}

static void test_shadow_planted_shadow_link(void **state)
{
	char *ws = tu_mkdtemp(), *dir = outside_dir(NULL);

	(void)state;
	tu_write(ws, "a.txt", "a\n");
	tu_write(ws, ".forgex/config.toml", "[pipeline]\n");
	vt_symlink(ws, ".forgex/checkpoints", dir);
	expect_all_refused(ws, ".forgex/checkpoints", dir);
	tu_rmtree(dir);
	tu_rmtree(ws);
}

/* The user's .git/info as a link: read beneath the workspace only, so refused by name. */
static void test_shadow_planted_git_info_link(void **state)
{
	char *ws = workspace_with_shadow(1), *dir = outside_dir("exclude");
	struct buf before = BUF_INIT, after = BUF_INIT;
	struct checkpoint_info info;
	struct checkpoints *cps;
	int ret;

	(void)state;
	cps = vt_open_ok(ws);
	vt_rm(ws, ".git/info/exclude");
	vt_rm(ws, ".git/info");
	vt_symlink(ws, ".git/info", dir);
	vt_manifest(&before, dir, VT_TIMES | VT_ALL);
	ret = checkpoint_create(&info, cps, "x");
	expect_refused(ret, ".git/info");
	vt_manifest(&after, dir, VT_TIMES | VT_ALL);
	vt_assert_same(&before, &after, "outside after create");
	checkpoint_close(cps);
	buf_release(&before);
	buf_release(&after);
	tu_rmtree(dir);
	tu_rmtree(ws);
}

/* A link planted while the checkpoints are open is caught before the next libgit2 use. */
static void test_shadow_link_planted_while_open(void **state)
{
	char *ws = workspace_with_shadow(0), *home = outside_dir(".gitconfig"), *target;
	struct buf before = BUF_INIT, after = BUF_INIT, out = BUF_INIT;
	struct checkpoint_info info;
	struct checkpoints *cps;

	(void)state;
	cps = vt_open_ok(ws);
	target = xstrfmt("%s/.gitconfig", home);
	vt_rm(ws, ".forgex/checkpoints/index");
	vt_symlink(ws, ".forgex/checkpoints/index", target);
	vt_manifest(&before, home, VT_TIMES | VT_ALL);
	expect_refused(checkpoint_create(&info, cps, "x"), ".forgex/checkpoints/index");
	expect_refused(vcs_diff(&out, cps, NULL, 0), ".forgex/checkpoints/index");
	vt_manifest(&after, home, VT_TIMES | VT_ALL);
	vt_assert_same(&before, &after, "outside after create and diff");
	checkpoint_close(cps);
	free(target);
	buf_release(&before);
	buf_release(&after);
	buf_release(&out);
	tu_rmtree(home);
	tu_rmtree(ws);
}

/* An object fan-out folder planted as a link: objects are never written through it. */
static void test_shadow_planted_object_folder_link(void **state)
{
	char *ws = workspace_with_shadow(0), *dir = outside_dir(NULL), *sub;
	struct buf oid = BUF_INIT, before = BUF_INIT, after = BUF_INIT;
	struct checkpoint_info info;
	struct checkpoints *cps;
	struct tu_result r;
	const char *argv[] = { "git", "hash-object", "--stdin", NULL };

	(void)state;
	tu_run(&r, argv, ws, NULL, "new content\n");
	assert_int_equal(r.status, 0);
	buf_addbuf(&oid, &r.out);
	tu_result_release(&r);
	sub = xstrfmt(".forgex/checkpoints/objects/%.2s", oid.buf);
	if (vt_exists(ws, sub)) {
		char *full = path_in_ws(ws, sub);

		fsutil_remove_tree(full);
		free(full);
	}
	vt_symlink(ws, sub, dir);
	tu_write(ws, "new.txt", "new content\n");
	vt_manifest(&before, dir, VT_TIMES | VT_ALL);
	cps = vt_open_ok(ws);
	assert_true(checkpoint_create(&info, cps, "x") < 0);
	assert_non_null(strstr(err_last(), "new.txt"));
	vt_manifest(&after, dir, VT_TIMES | VT_ALL);
	vt_assert_same(&before, &after, "outside after create");
	assert_int_equal(after.len, 0);
	checkpoint_close(cps);
	free(sub);
	buf_release(&oid);
	buf_release(&before);
	buf_release(&after);
	tu_rmtree(dir);
	tu_rmtree(ws);
}

/* The shadow's own object file for `hex` (relative to the workspace). */
static char *object_path(const char *hex)
{
	return xstrfmt(".forgex/checkpoints/objects/%.2s/%s", hex, hex + 2);
}

static void cut_short(const char *ws, const char *hex, off_t len)
{
	char *rel = object_path(hex), *full = path_in_ws(ws, rel);

	assert_int_equal(chmod(full, 0644), 0);
	assert_int_equal(truncate(full, len), 0);
	free(rel);
	free(full);
}

/*
 * Locks a killed forgex left (libgit2 takes index.lock while it writes the
 * index; forgex's own ref and config writes use temporary files, but an
 * older forgex took refs/.../checkpoints.lock and config.lock): every
 * command works after them, and takes them away.
 */
static void test_shadow_stale_locks_cleared(void **state)
{
	char *ws = workspace_with_shadow(1);
	struct checkpoint_info info;
	struct checkpoint_list list = CHECKPOINT_LIST_INIT;
	struct checkpoints *cps;
	struct buf out = BUF_INIT;

	(void)state;
	tu_write(ws, ".forgex/checkpoints/index.lock", "half an index");
	tu_write(ws, ".forgex/checkpoints/config.lock", "[core]");
	tu_write(ws, ".forgex/checkpoints/refs/forgex/checkpoints.lock", "0123");
	tu_write(ws, "a.txt", "changed\n");
	cps = vt_open_ok(ws);
	assert_false(vt_exists(ws, ".forgex/checkpoints/index.lock"));
	assert_false(vt_exists(ws, ".forgex/checkpoints/refs/forgex/checkpoints.lock"));
	vt_create_ok(&info, cps, "after a crash");
	checkpoint_info_release(&info);
	tu_write(ws, ".forgex/checkpoints/index.lock", "again, while open");
	assert_int_equal(vcs_diff(&out, cps, NULL, 0), 0);
	vt_create_ok(&info, cps, "again");
	assert_int_equal(checkpoint_list(&list, cps), 0);
	assert_int_equal(list.nr, 3);
	checkpoint_list_release(&list);
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	buf_release(&out);
	tu_rmtree(ws);
}

/*
 * A loose object cut short (a crash between write and flush, or a damaged
 * disk): libgit2 spun in inflate() at 100% CPU forever. Now each command
 * returns at once with a clear error, and a new checkpoint starts a new
 * chain instead of failing forever.
 */
static void test_shadow_truncated_commit_no_hang(void **state)
{
	char *ws = workspace_with_shadow(0);
	struct checkpoint_info second, third;
	struct checkpoint_list list = CHECKPOINT_LIST_INIT;
	struct checkpoints *cps;
	struct buf out = BUF_INIT;
	char *full = NULL;
	time_t t0 = time(NULL);

	(void)state;
	cps = vt_open_ok(ws);
	tu_write(ws, "a.txt", "second\n");
	vt_create_ok(&second, cps, "second");
	checkpoint_close(cps);
	cut_short(ws, second.id, 60);
	cps = vt_open_ok(ws);
	assert_true(checkpoint_list(&list, cps) < 0);
	assert_non_null(strstr(err_last(), "damaged"));
	assert_true(checkpoint_resolve(&full, cps, second.short_id) < 0);
	assert_true(vcs_diff(&out, cps, NULL, 0) < 0);
	assert_non_null(strstr(err_last(), "damaged"));
	vt_create_ok(&third, cps, "third");
	assert_int_equal(checkpoint_list(&list, cps), 0);
	assert_int_equal(list.nr, 1);
	assert_string_equal(list.items[0].id, third.id);
	assert_true(time(NULL) - t0 < 30);
	checkpoint_list_release(&list);
	checkpoint_info_release(&second);
	checkpoint_info_release(&third);
	checkpoint_close(cps);
	buf_release(&out);
	tu_rmtree(ws);
}

/* The blob of `rel` in checkpoint `id`, in hex (caller frees). */
static char *blob_of(const char *ws, const char *id, const char *rel)
{
	struct buf out = BUF_INIT;
	char *gd = xstrfmt("--git-dir=%s/.forgex/checkpoints", ws), *spec = xstrfmt("%s:%s", id, rel);

	vt_git_capture(&out, ws, gd, "rev-parse", spec);
	buf_trim(&out);
	free(gd);
	free(spec);
	return buf_detach(&out, NULL);
}

/*
 * A damaged blob: the restore checks every object it needs before the
 * first write, so it refuses and the tree stays byte for byte (and mtime
 * for mtime) as it was — no half-restored tree, no backup taken either.
 */
static void test_shadow_damaged_blob_restore_refuses_first(void **state)
{
	char *ws = tu_mkdtemp(), *blob;
	struct checkpoint_info old;
	struct checkpoint_restore_result res;
	struct checkpoint_list list = CHECKPOINT_LIST_INIT;
	struct checkpoints *cps;
	struct buf before = BUF_INIT, after = BUF_INIT;
	int i;

	(void)state;
	for (i = 0; i < 20; i++) {
		char rel[32], content[64];

		snprintf(rel, sizeof(rel), "f%02d.txt", i);
		snprintf(content, sizeof(content), "version one of file %d\n", i);
		tu_write(ws, rel, content);
	}
	cps = vt_open_ok(ws);
	vt_create_ok(&old, cps, "old");
	for (i = 0; i < 20; i++) {
		char rel[32];

		snprintf(rel, sizeof(rel), "f%02d.txt", i);
		tu_write(ws, rel, "version two\n");
	}
	tu_write(ws, "new.txt", "new\n");
	blob = blob_of(ws, old.id, "f13.txt");
	cut_short(ws, blob, 12);
	vt_manifest(&before, ws, VT_TIMES);
	assert_int_equal(checkpoint_restore(&res, cps, old.id), FX_ENOTFOUND);
	assert_non_null(strstr(err_last(), "f13.txt"));
	assert_non_null(strstr(err_last(), "cut short or corrupt"));
	assert_non_null(strstr(err_last(), "nothing was changed"));
	vt_manifest(&after, ws, VT_TIMES);
	vt_assert_same(&before, &after, "the tree after a refused restore");
	assert_int_equal(checkpoint_list(&list, cps), 0);
	assert_int_equal(list.nr, 1);	/* no backup either */
	checkpoint_list_release(&list);
	checkpoint_info_release(&old);
	checkpoint_close(cps);
	free(blob);
	buf_release(&before);
	buf_release(&after);
	tu_rmtree(ws);
}

/*
 * The same when the damaged blob is the user's own (a checkpoint borrows
 * what git already stores): libgit2 would spin on the user's loose object
 * as well; it is checked first, and the restore refuses before writing.
 */
static void test_shadow_damaged_borrowed_blob_no_hang(void **state)
{
	char *ws = tu_mkdtemp(), *blob, *rel, *full;
	struct checkpoint_info old;
	struct checkpoint_restore_result res;
	struct checkpoints *cps;
	struct buf before = BUF_INIT, after = BUF_INIT, out = BUF_INIT;

	(void)state;
	vt_git(ws, "init", "-q");
	tu_write(ws, "kept.txt", "committed by the user, stored only in .git\n");
	vt_git(ws, "add", "-A");
	vt_git(ws, "commit", "-q", "-m", "c");
	cps = vt_open_ok(ws);
	vt_create_ok(&old, cps, "old");
	{
		struct buf h = BUF_INIT;

		vt_git_capture(&h, ws, "rev-parse", "HEAD:kept.txt");
		buf_trim(&h);
		blob = buf_detach(&h, NULL);
	}
	rel = object_path(blob);
	assert_false(vt_exists(ws, rel));	/* borrowed, not copied */
	free(rel);
	rel = xstrfmt(".git/objects/%.2s/%s", blob, blob + 2);
	full = path_in_ws(ws, rel);
	assert_int_equal(chmod(full, 0644), 0);
	assert_int_equal(truncate(full, 20), 0);
	tu_write(ws, "kept.txt", "changed\n");
	vt_manifest(&before, ws, VT_TIMES);
	assert_int_equal(checkpoint_restore(&res, cps, old.id), FX_ENOTFOUND);
	assert_non_null(strstr(err_last(), "kept.txt"));
	assert_non_null(strstr(err_last(), "cut short or corrupt"));
	vt_manifest(&after, ws, VT_TIMES);
	vt_assert_same(&before, &after, "the tree after a refused restore");
	/* diff needs the old content too: an error, not a hang */
	assert_true(vcs_diff(&out, cps, old.id, 0) < 0);
	checkpoint_info_release(&old);
	checkpoint_close(cps);
	free(blob);
	free(rel);
	free(full);
	buf_release(&before);
	buf_release(&after);
	buf_release(&out);
	tu_rmtree(ws);
}

/* A FIFO planted as the user's .git/config or .git/index: refused by name, never read (a hang). */
static void test_shadow_fifo_in_user_git_refused(void **state)
{
	static const char *const names[] = { ".git/config", ".git/index" };
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		char *ws = workspace_with_shadow(1), *full = path_in_ws(ws, names[i]);
		struct checkpoint_info info;
		struct checkpoints *cps = NULL;
		int ret;

		vt_git(ws, "add", "a.txt");
		vt_rm(ws, names[i]);
		assert_int_equal(mkfifo(full, 0644), 0);
		ret = checkpoint_open(&cps, ws);
		if (!ret) {
			ret = checkpoint_create(&info, cps, "x");
			checkpoint_close(cps);
		}
		assert_int_equal(ret, FX_EDENIED);
		assert_non_null(strstr(err_last(), names[i]));
		assert_non_null(strstr(err_last(), "not a regular file"));
		unlink(full);
		free(full);
		tu_rmtree(ws);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_shadow_planted_info_link),
		cmocka_unit_test(test_shadow_planted_config_link),
		cmocka_unit_test(test_shadow_planted_index_link),
		cmocka_unit_test(test_shadow_planted_ref_link),
		cmocka_unit_test(test_shadow_planted_shadow_link),
		cmocka_unit_test(test_shadow_planted_git_info_link),
		cmocka_unit_test(test_shadow_link_planted_while_open),
		cmocka_unit_test(test_shadow_planted_object_folder_link),
		cmocka_unit_test(test_shadow_stale_locks_cleared),
		cmocka_unit_test_setup_teardown(test_shadow_truncated_commit_no_hang, guard, unguard),
		cmocka_unit_test_setup_teardown(test_shadow_damaged_blob_restore_refuses_first, guard,
						unguard),
		cmocka_unit_test_setup_teardown(test_shadow_damaged_borrowed_blob_no_hang, guard,
						unguard),
		cmocka_unit_test_setup_teardown(test_shadow_fifo_in_user_git_refused, guard, unguard),
	};

	return cmocka_run_group_tests(tests, vt_group_setup, vt_group_teardown);
}
