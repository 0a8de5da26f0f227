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
#include "helpers/testutil.h"
#include "unit/vcs/vcs_testutil.h"
#include "vcs/checkpoint.h"
#include "vcs/diff.h"

static struct checkpoints *open_ok(const char *ws)
{
	struct checkpoints *cps = NULL;

	if (checkpoint_open(&cps, ws) < 0)
		fprintf(stderr, "checkpoint_open: %s\n", err_last());
	assert_non_null(cps);
	return cps;
}

static void diff_ok(struct buf *out, struct checkpoints *cps, const char *id, unsigned flags)
{
	int ret;

	buf_reset(out);
	ret = vcs_diff_ext(out, NULL, cps, id, flags);
	if (ret < 0)
		fprintf(stderr, "vcs_diff: %s\n", err_last());
	assert_int_equal(ret, 0);
}

/* The exact text of a small diff: same format as git diff. */
static void test_diff_exact_text(void **state)
{
	char *ws = tu_mkdtemp();
	struct checkpoints *cps;
	struct buf out = BUF_INIT;

	(void)state;
	tu_write(ws, "a.txt", "one\ntwo\nthree\n");
	tu_write(ws, "gone.txt", "bye\n");
	cps = open_ok(ws);
	vt_create_ok(NULL, cps, "start");
	tu_write(ws, "a.txt", "one\n2\nthree\n");
	vt_rm(ws, "gone.txt");
	tu_write(ws, "new.txt", "hello\n");
	diff_ok(&out, cps, NULL, 0);
	assert_string_equal(out.buf,
		"diff --git a/a.txt b/a.txt\n"
		"index 4cb29ea..f04eb26 100644\n"
		"--- a/a.txt\n"
		"+++ b/a.txt\n"
		"@@ -1,3 +1,3 @@\n"
		" one\n"
		"-two\n"
		"+2\n"
		" three\n"
		"diff --git a/gone.txt b/gone.txt\n"
		"deleted file mode 100644\n"
		"index b023018..0000000\n"
		"--- a/gone.txt\n"
		"+++ /dev/null\n"
		"@@ -1 +0,0 @@\n"
		"-bye\n"
		"diff --git a/new.txt b/new.txt\n"
		"new file mode 100644\n"
		"index 0000000..ce01362\n"
		"--- /dev/null\n"
		"+++ b/new.txt\n"
		"@@ -0,0 +1 @@\n"
		"+hello\n");
	buf_release(&out);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/* Modes, links, binary files; ignored files and .forgex never appear. */
static void test_diff_modes_links_binary_ignored(void **state)
{
	char *ws = tu_mkdtemp();
	struct checkpoints *cps;
	struct buf out = BUF_INIT;
	static const char bin1[] = { 'P', 'N', 'G', 0, 1, 2, 3 };
	static const char bin2[] = { 'P', 'N', 'G', 0, 9, 9, 9, 9 };

	(void)state;
	tu_write(ws, ".gitignore", "*.log\n");
	vt_write_bytes(ws, "run.sh", "echo\n", 5, 0644);
	vt_write_bytes(ws, "img.png", bin1, sizeof(bin1), 0644);
	tu_write(ws, "target.txt", "t\n");
	tu_write(ws, "was-file", "plain\n");
	tu_write(ws, "app.log", "1\n");
	cps = open_ok(ws);
	vt_create_ok(NULL, cps, "start");
	vt_chmod(ws, "run.sh", 0755);
	vt_write_bytes(ws, "img.png", bin2, sizeof(bin2), 0644);
	vt_rm(ws, "was-file");
	vt_symlink(ws, "was-file", "target.txt");
	tu_write(ws, "app.log", "2\n");
	tu_write(ws, "more.log", "new\n");
	diff_ok(&out, cps, NULL, 0);
	assert_non_null(strstr(out.buf, "diff --git a/run.sh b/run.sh\nold mode 100644\nnew mode 100755\n"));
	assert_non_null(strstr(out.buf, "Binary files a/img.png and b/img.png differ\n"));
	assert_non_null(strstr(out.buf, "deleted file mode 100644\n"));
	assert_non_null(strstr(out.buf, "new file mode 120000\n"));
	assert_non_null(strstr(out.buf, "+target.txt\n\\ No newline at end of file\n"));
	assert_null(strstr(out.buf, "app.log"));
	assert_null(strstr(out.buf, "more.log"));
	assert_null(strstr(out.buf, ".forgex"));
	assert_null(strstr(out.buf, "\033["));
	buf_release(&out);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

static void test_diff_color_stat_and_empty(void **state)
{
	char *ws = tu_mkdtemp();
	struct checkpoints *cps;
	struct buf out = BUF_INIT;
	size_t changed = 99;

	(void)state;
	tu_write(ws, "a.txt", "old\n");
	tu_write(ws, "b.txt", "b\n");
	cps = open_ok(ws);
	vt_create_ok(NULL, cps, "start");
	assert_int_equal(vcs_diff_ext(&out, &changed, cps, NULL, 0), 0);
	assert_int_equal(out.len, 0);	/* nothing changed: nothing printed */
	assert_int_equal(changed, 0);
	tu_write(ws, "a.txt", "new\n");
	tu_write(ws, "c.txt", "c1\nc2\n");
	assert_int_equal(vcs_diff(&out, cps, NULL, 1), 0);
	assert_non_null(strstr(out.buf, "\033[1mdiff --git a/a.txt b/a.txt\033[m\n"));
	assert_non_null(strstr(out.buf, "\033[31m-old\033[m\n"));
	assert_non_null(strstr(out.buf, "\033[32m+new\033[m\n"));
	assert_non_null(strstr(out.buf, "\033[36m@@ -1 +1 @@\033[m\n"));
	diff_ok(&out, cps, NULL, VCS_DIFF_STAT);
	assert_non_null(strstr(out.buf, " a.txt | 2 +-\n"));
	assert_non_null(strstr(out.buf, " c.txt | 2 ++\n"));
	assert_non_null(strstr(out.buf, " 2 files changed, 3 insertions(+), 1 deletion(-)\n"));
	assert_non_null(strstr(out.buf, " create mode 100644 c.txt\n"));
	buf_reset(&out);
	assert_int_equal(vcs_diff_ext(&out, &changed, cps, NULL, 0), 0);
	assert_int_equal(changed, 2);
	buf_release(&out);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/* A model's file with OSC 52 and a screen clear, in its name and content: escaped for a terminal. */
static void test_diff_termsafe(void **state)
{
	char *ws = tu_mkdtemp();
	struct checkpoints *cps;
	struct buf out = BUF_INIT;

	(void)state;
	tu_write(ws, "a.txt", "old\n");
	cps = open_ok(ws);
	vt_create_ok(NULL, cps, "start");
	tu_write(ws, "a.txt", "new \033]52;c;ZXZpbA==\007\tok\n");
	tu_write(ws, "x\033[2J.txt", "y\n");
	diff_ok(&out, cps, NULL, VCS_DIFF_TERMSAFE | VCS_DIFF_COLOR);
	assert_non_null(strstr(out.buf, "\033[32m+new \\e]52;c;ZXZpbA==\\x07\tok\033[m\n"));
	assert_non_null(strstr(out.buf, "2J.txt"));	/* the name: quoted by git, or escaped */
	assert_null(strstr(out.buf, "\033]52"));
	assert_null(strstr(out.buf, "\033[2J"));
	diff_ok(&out, cps, NULL, VCS_DIFF_TERMSAFE | VCS_DIFF_STAT);
	assert_null(strstr(out.buf, "\033"));
	/* without the flag the patch is the file's bytes */
	diff_ok(&out, cps, NULL, 0);
	assert_non_null(strstr(out.buf, "+new \033]52;c;ZXZpbA==\007\tok\n"));
	buf_release(&out);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/* An older checkpoint by id prefix; unknown ids and no checkpoints are clear errors. */
static void test_diff_by_id_and_errors(void **state)
{
	char *ws = tu_mkdtemp();
	struct checkpoints *cps;
	struct checkpoint_info first;
	struct buf out = BUF_INIT;
	char prefix[9];

	(void)state;
	tu_write(ws, "f.txt", "v1\n");
	cps = open_ok(ws);
	assert_int_equal(vcs_diff(&out, cps, NULL, 0), FX_ENOTFOUND);
	assert_non_null(strstr(err_last(), "no checkpoints yet"));
	vt_create_ok(&first, cps, "one");
	tu_write(ws, "f.txt", "v2\n");
	vt_create_ok(NULL, cps, "two");
	tu_write(ws, "f.txt", "v3\n");
	diff_ok(&out, cps, NULL, 0);
	assert_non_null(strstr(out.buf, "-v2\n+v3\n"));
	memcpy(prefix, first.id, 8);
	prefix[8] = '\0';
	diff_ok(&out, cps, prefix, 0);
	assert_non_null(strstr(out.buf, "-v1\n+v3\n"));
	buf_reset(&out);
	assert_int_equal(vcs_diff(&out, cps, "0000000000", 0), FX_ENOTFOUND);
	assert_non_null(strstr(err_last(), "no checkpoint '0000000000'"));
	assert_int_equal(out.len, 0);
	checkpoint_info_release(&first);
	buf_release(&out);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/* A diff only reads: the tree and the user's .git stay byte and time identical. */
static void test_diff_changes_nothing(void **state)
{
	char *ws = vt_make_repo(), *dotgit;
	struct buf before = BUF_INIT, after = BUF_INIT, g1 = BUF_INIT, g2 = BUF_INIT, out = BUF_INIT;
	struct checkpoints *cps;

	(void)state;
	dotgit = xstrfmt("%s/.git", ws);
	cps = open_ok(ws);
	vt_create_ok(NULL, cps, "start");
	tu_write(ws, "src/util.c", "changed\n");
	vt_manifest(&before, ws, VT_TIMES);
	vt_manifest(&g1, dotgit, VT_TIMES | VT_ALL);
	diff_ok(&out, cps, NULL, 0);
	assert_non_null(strstr(out.buf, "+changed\n"));
	diff_ok(&out, cps, NULL, VCS_DIFF_STAT);
	vt_manifest(&after, ws, VT_TIMES);
	vt_manifest(&g2, dotgit, VT_TIMES | VT_ALL);
	vt_assert_same(&before, &after, "tree");
	vt_assert_same(&g1, &g2, ".git");
	free(dotgit);
	buf_release(&before);
	buf_release(&after);
	buf_release(&g1);
	buf_release(&g2);
	buf_release(&out);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_diff_exact_text),
		cmocka_unit_test(test_diff_modes_links_binary_ignored),
		cmocka_unit_test(test_diff_color_stat_and_empty),
		cmocka_unit_test(test_diff_termsafe),
		cmocka_unit_test(test_diff_by_id_and_errors),
		cmocka_unit_test(test_diff_changes_nothing),
	};

	return cmocka_run_group_tests_name("vcs/diff", tests, vt_group_setup, vt_group_teardown);
}
