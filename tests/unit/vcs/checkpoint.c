#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/path.h"
#include "helpers/testutil.h"
#include "unit/vcs/vcs_testutil.h"
#include "vcs/checkpoint.h"

static int group_setup(void **state)
{
	(void)state;
	vt_setup_env();
	return 0;
}

static int group_teardown(void **state)
{
	(void)state;
	vt_teardown_env();
	return 0;
}

static struct checkpoints *open_ok(const char *ws)
{
	struct checkpoints *cps = NULL;
	int ret = checkpoint_open(&cps, ws);

	if (ret < 0)
		fprintf(stderr, "checkpoint_open: %s\n", err_last());
	assert_int_equal(ret, 0);
	return cps;
}

static void create_ok(struct checkpoint_info *info, struct checkpoints *cps, const char *msg)
{
	int ret = checkpoint_create(info, cps, msg);

	if (ret < 0)
		fprintf(stderr, "checkpoint_create: %s\n", err_last());
	assert_int_equal(ret, 0);
}

static void restore_ok(struct checkpoints *cps, const char *id)
{
	struct checkpoint_restore_result res;
	int ret = checkpoint_restore(&res, cps, id);

	if (ret < 0)
		fprintf(stderr, "checkpoint_restore: %s\n", err_last());
	assert_int_equal(ret, 0);
	checkpoint_restore_result_release(&res);
}

static char *path_in(const char *dir, const char *rel)
{
	struct buf p = BUF_INIT;

	path_join(&p, dir, rel);
	return buf_detach(&p, NULL);
}

/*
 * The main promise: every kind of change an agent can make to a real
 * repository is undone byte for byte, ignored files are left alone, links
 * are never followed out of the workspace, and the user's git state is
 * untouched down to the bytes of .git.
 */
static void test_checkpoint_restore_git_repo_fidelity(void **state)
{
	char *ws = vt_make_repo(), *outside = tu_mkdtemp(), *dotgit;
	struct buf git_before = BUF_INIT, git_after = BUF_INIT;
	struct buf dotgit_before = BUF_INIT, dotgit_after = BUF_INIT;
	struct buf tree_before = BUF_INIT, tree_after = BUF_INIT;
	struct buf out_before = BUF_INIT, out_after = BUF_INIT;
	struct checkpoint_info info;
	struct checkpoints *cps;
	char *env, *cont;

	(void)state;
	dotgit = path_in(ws, ".git");
	tu_write(ws, "data/x.txt", "x\n");
	tu_write(ws, "data/y.txt", "y\n");
	tu_write(ws, "lib/inner/code.c", "/* code */\n");
	tu_write(ws, "empty.txt", "");
	vt_write_bytes(ws, "private.txt", "secret\n", 7, 0600);
	vt_symlink(ws, "link-out", "/etc/hostname");
	vt_symlink(ws, "link-dangling", "does/not/exist");
	tu_write(outside, "inner/keep.txt", "outside, must not change\n");

	vt_git_state(&git_before, ws);
	vt_manifest(&dotgit_before, dotgit, VT_TIMES | VT_ALL);
	vt_manifest(&tree_before, ws, 0);
	vt_manifest(&out_before, outside, VT_TIMES | VT_ALL);

	cps = open_ok(ws);
	create_ok(&info, cps, "before the agent");
	assert_string_equal(info.message, "before the agent");
	assert_true(strlen(info.short_id) >= 12);
	assert_int_equal(strncmp(info.id, info.short_id, strlen(info.short_id)), 0);

	/* what an agent might do */
	tu_write(ws, "src/util.c", "int util(void) { return 42; }\n");
	vt_rm(ws, "docs");
	tu_write(ws, "new/dir/file.txt", "new\n");
	tu_write(ws, "new/empty", "");
	vt_chmod(ws, "run.sh", 0644);
	vt_chmod(ws, "README.md", 0755);
	vt_rm(ws, "src/main.c");
	vt_symlink(ws, "src/main.c", "../README.md");
	vt_rm(ws, "data");
	tu_write(ws, "data", "now a file\n");
	vt_rm(ws, "notes.txt");
	tu_write(ws, "notes.txt/inner.txt", "now a folder\n");
	vt_rm(ws, "lib");
	vt_symlink(ws, "lib", outside);
	vt_rm(ws, "link-out");
	tu_write(ws, "link-out", "a file where a link was\n");
	tu_write(ws, "private.txt", "changed secret\n");
	vt_rm(ws, "empty.txt");
	tu_write(ws, ".env", "SECRET=2\n");
	tu_write(ws, "build/new.o", "new object\n");

	restore_ok(cps, info.short_id);

	/* ignored files are left as the agent left them */
	env = tu_read(ws, ".env");
	assert_string_equal(env, "SECRET=2\n");
	free(env);
	cont = tu_read(ws, "build/new.o");
	assert_string_equal(cont, "new object\n");
	free(cont);
	/* put those two back by hand; then everything must match */
	tu_write(ws, ".env", "SECRET=1\n");
	vt_rm(ws, "build/new.o");
	vt_manifest(&tree_after, ws, 0);
	vt_assert_same(&tree_before, &tree_after, "working tree");
	assert_int_equal(vt_mode(ws, "private.txt") & 0777, 0600);

	/* the link was replaced, never written through */
	vt_manifest(&out_after, outside, VT_TIMES | VT_ALL);
	vt_assert_same(&out_before, &out_after, "folder outside the workspace");

	/* not one byte of .git changed; git sees the same state */
	vt_manifest(&dotgit_after, dotgit, VT_TIMES | VT_ALL);
	vt_assert_same(&dotgit_before, &dotgit_after, ".git");
	vt_git_state(&git_after, ws);
	vt_assert_same(&git_before, &git_after, "git state");

	checkpoint_info_release(&info);
	checkpoint_close(cps);
	buf_release(&git_before);
	buf_release(&git_after);
	buf_release(&dotgit_before);
	buf_release(&dotgit_after);
	buf_release(&tree_before);
	buf_release(&tree_after);
	buf_release(&out_before);
	buf_release(&out_after);
	free(dotgit);
	tu_rmtree(outside);
	tu_rmtree(ws);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checkpoint_restore_git_repo_fidelity),
	};

	return cmocka_run_group_tests_name("vcs/checkpoint", tests, group_setup, group_teardown);
}
