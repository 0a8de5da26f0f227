#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "helpers/testutil.h"
#include "unit/vcs/vcs_testutil.h"
#include "vcs/checkpoint.h"
#include "vcs/commit.h"

static int group_setup(void **state)
{
	(void)state;
	vt_setup_env();	/* identity from $GIT_AUTHOR_* only: no user.name anywhere */
	return 0;
}

/* `git ARGS` in `dir`, its output (caller releases). */
#define GIT(b, dir, ...) do { buf_reset(b); vt_git_capture(b, dir, __VA_ARGS__); } while (0)

static int commit(const char *ws, const char *const *paths, char *id)
{
	struct strvec v = STRVEC_INIT;
	int ret;

	strvec_pushv(&v, paths);
	ret = vcs_commit_paths(id, ws, &v, "the message\n");
	if (ret < 0)
		fprintf(stderr, "vcs_commit_paths: %s\n", err_last());
	strvec_clear(&v);
	return ret;
}

static char *repo_with_one_commit(void)
{
	char *dir = tu_mkdtemp();

	vt_git(dir, "init", "-q");
	tu_write(dir, "other.txt", "other\n");
	tu_write(dir, "sub/x.txt", "x\n");
	tu_write(dir, "sub/gone.txt", "gone\n");
	vt_git(dir, "add", "-A");
	vt_git(dir, "commit", "-qm", "init");
	return dir;
}

static void test_commit_paths_in_a_subfolder_leave_other_staged_changes(void **state)
{
	char *dir = repo_with_one_commit(), *ws;
	struct buf b = BUF_INIT, head0 = BUF_INIT;
	const char *paths[] = { "x.txt", "gone.txt", "new one.txt", NULL };
	char id[41];

	(void)state;
	ws = xstrfmt("%s/sub", dir);
	GIT(&head0, dir, "rev-parse", "HEAD");
	/* the user's own staged change, outside what forgex changed */
	tu_write(dir, "other.txt", "staged by the user\n");
	vt_git(dir, "add", "other.txt");
	tu_write(dir, "sub/x.txt", "x changed\n");
	vt_rm(dir, "sub/gone.txt");
	tu_write(dir, "sub/new one.txt", "new\n");
	assert_int_equal(commit(ws, paths, id), 1);
	GIT(&b, dir, "rev-parse", "HEAD");
	assert_int_equal(strncmp(b.buf, id, 40), 0);
	GIT(&b, dir, "rev-parse", "HEAD~1");
	assert_string_equal(b.buf, head0.buf);
	GIT(&b, dir, "show", "--no-renames", "--name-status", "--format=%an|%B", "HEAD");
	assert_string_equal(b.buf, "Test|the message\n\n\n"
				   "D\tsub/gone.txt\nA\tsub/new one.txt\nM\tsub/x.txt\n");
	/* still staged, not committed */
	GIT(&b, dir, "status", "--porcelain");
	assert_string_equal(b.buf, "M  other.txt\n");
	buf_release(&b);
	buf_release(&head0);
	free(ws);
	tu_rmtree(dir);
}

static void test_commit_paths_on_an_unborn_branch(void **state)
{
	char *dir = tu_mkdtemp();
	struct buf b = BUF_INIT;
	const char *paths[] = { "a.txt", NULL };

	(void)state;
	vt_git(dir, "init", "-q");
	tu_write(dir, "a.txt", "a\n");
	assert_int_equal(commit(dir, paths, NULL), 1);
	GIT(&b, dir, "rev-list", "--count", "HEAD");
	assert_string_equal(b.buf, "1\n");
	GIT(&b, dir, "status", "--porcelain");
	assert_string_equal(b.buf, "");
	buf_release(&b);
	tu_rmtree(dir);
}

static void test_commit_paths_nothing_new_makes_no_commit(void **state)
{
	char *dir = repo_with_one_commit();
	struct buf b = BUF_INIT, head0 = BUF_INIT;
	const char *same[] = { "other.txt", NULL };
	const char *ignored[] = { "build.log", NULL };

	(void)state;
	GIT(&head0, dir, "rev-parse", "HEAD");
	assert_int_equal(commit(dir, same, NULL), 0);
	/* an ignored file git does not track is never committed */
	tu_write(dir, ".git/info/exclude", "*.log\n");
	tu_write(dir, "build.log", "log\n");
	assert_int_equal(commit(dir, ignored, NULL), 0);
	GIT(&b, dir, "rev-parse", "HEAD");
	assert_string_equal(b.buf, head0.buf);
	buf_release(&b);
	buf_release(&head0);
	tu_rmtree(dir);
}

static void test_commit_paths_refuses_forgex_git_and_escapes(void **state)
{
	char *dir = repo_with_one_commit();
	const char *forgex[] = { ".forgex/runs/x", NULL };
	const char *git[] = { ".git/config", NULL };
	const char *up[] = { "../outside", NULL };
	const char *mid[] = { "sub/../../outside", NULL };
	struct strvec none = STRVEC_INIT;

	(void)state;
	assert_int_equal(commit(dir, forgex, NULL), FX_EINVAL);
	assert_int_equal(commit(dir, git, NULL), FX_EINVAL);
	assert_int_equal(commit(dir, up, NULL), FX_EINVAL);
	assert_int_equal(commit(dir, mid, NULL), FX_EINVAL);
	assert_int_equal(vcs_commit_paths(NULL, dir, &none, "m"), FX_EINVAL);
	err_clear();
	tu_rmtree(dir);
}

static void test_changed_paths_lists_both_sides_of_a_rename(void **state)
{
	char *dir = repo_with_one_commit();
	struct checkpoints *cps = NULL;
	struct checkpoint_info info = { 0 };
	struct strvec v = STRVEC_INIT;
	struct buf b = BUF_INIT;
	size_t i;

	(void)state;
	assert_int_equal(checkpoint_open(&cps, dir), 0);
	assert_int_equal(checkpoint_create(&info, cps, "before"), 0);
	{
		char *from = xstrfmt("%s/sub/x.txt", dir), *to = xstrfmt("%s/y\nz.txt", dir);

		assert_int_equal(rename(from, to), 0);
		free(from);
		free(to);
	}
	tu_write(dir, "other.txt", "changed\n");
	assert_int_equal(vcs_changed_paths(&v, cps, info.id), 0);
	for (i = 0; i < v.nr; i++)
		buf_addf(&b, "[%s]", v.v[i]);
	assert_string_equal(b.buf, "[other.txt][sub/x.txt][y\nz.txt]");
	strvec_clear(&v);
	buf_release(&b);
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	tu_rmtree(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_commit_paths_in_a_subfolder_leave_other_staged_changes),
		cmocka_unit_test(test_commit_paths_on_an_unborn_branch),
		cmocka_unit_test(test_commit_paths_nothing_new_makes_no_commit),
		cmocka_unit_test(test_commit_paths_refuses_forgex_git_and_escapes),
		cmocka_unit_test(test_changed_paths_lists_both_sides_of_a_rename),
	};

	return cmocka_run_group_tests(tests, group_setup, vt_group_teardown);
}
