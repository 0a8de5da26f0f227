#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <unistd.h>

#include "unit/tools/common.h"

/*
 * The repositories are made with the git program (the tests may spawn
 * it; the tools never do), then read through git_status and git_diff.
 */

static void git(const char *dir, const char *const *args)
{
	struct tu_result r = { 0, BUF_INIT, BUF_INIT };
	struct strvec argv = STRVEC_INIT;

	strvec_pushv(&argv, (const char *const[]){ "git", "-c", "user.name=Test", "-c",
						   "user.email=test@example.com", "-c",
						   "init.defaultBranch=main", "-c",
						   "core.excludesFile=/dev/null", NULL });
	strvec_pushv(&argv, args);
	tu_run(&r, argv.v, dir, (const char *const[]){ "GIT_CONFIG_NOSYSTEM=1", NULL }, NULL);
	if (r.status)
		fail_msg("git %s failed: %s", args[0], r.err.buf);
	tu_result_release(&r);
	strvec_clear(&argv);
}

static int have_git(void)
{
	struct tu_result r = { 0, BUF_INIT, BUF_INIT };
	int ok;

	tu_run(&r, (const char *const[]){ "git", "--version", NULL }, NULL, NULL, NULL);
	ok = r.status == 0;
	tu_result_release(&r);
	return ok;
}

/* A repository with one commit, then changes of every kind. */
static void skip_without_git(void)
{
	if (!have_git()) {
		print_message("skipping: the git program (used to make test repositories) is "
			      "missing\n");
		skip();
	}
}

static void make_repo(struct tt *t)
{
	skip_without_git();
	tu_write(t->ws, "a.txt", "one\ntwo\nthree\n");
	tu_write(t->ws, "b.txt", "bee\n");
	tu_write(t->ws, "sub/c.txt", "sea\n");
	tu_write(t->ws, ".gitignore", "*.log\n");
	git(t->ws, (const char *const[]){ "init", "-q", NULL });
	git(t->ws, (const char *const[]){ "add", "-A", NULL });
	git(t->ws, (const char *const[]){ "commit", "-q", "-m", "first", NULL });
	tu_write(t->ws, "a.txt", "one\nTWO\nthree\n");		/* modified, unstaged */
	unlink(tt_path(t, "b.txt"));				/* deleted, unstaged */
	tu_write(t->ws, "n.txt", "new and staged\n");
	git(t->ws, (const char *const[]){ "add", "n.txt", NULL });
	git(t->ws, (const char *const[]){ "mv", "sub/c.txt", "sub/d.txt", NULL });
	tu_write(t->ws, "u.txt", "untracked\n");
	tu_write(t->ws, "i.log", "ignored\n");
}

/* Everything under .git with its size and modification time, to prove nothing was written. */
static void snapshot(struct buf *out, const char *dir)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		struct buf p = BUF_INIT;
		struct stat st;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		path_join(&p, dir, de->d_name);
		if (!lstat(p.buf, &st)) {
			buf_addf(out, "%s %lld %lld.%09ld\n", p.buf, (long long)st.st_size,
				 (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
			if (S_ISDIR(st.st_mode))
				snapshot(out, p.buf);
		}
		buf_release(&p);
	}
	if (d)
		closedir(d);
}

static void test_git_status(void **state)
{
	struct buf before = BUF_INIT, after = BUF_INIT;
	unsigned supervisor = permissions_for_role("supervisor");
	struct tt t;

	(void)state;
	tt_setup(&t);
	make_repo(&t);
	snapshot(&before, tt_path(&t, ".git"));
	assert_int_equal(tt_call(&t, supervisor, "git_status", "{}"), TOOL_OK);
	assert_string_equal(t.out.buf,
			    "## main\n"
			    " M a.txt\n"
			    " D b.txt\n"
			    "A  n.txt\n"
			    "R  sub/c.txt -> sub/d.txt\n"
			    "?? u.txt\n");
	assert_int_equal(tt_callj(&t, supervisor, "git_status", json_pack("{s:s}", "path", "sub")),
			 TOOL_OK);
	assert_string_equal(t.out.buf, "## main\nR  sub/c.txt -> sub/d.txt\n");
	assert_int_equal(tt_callj(&t, supervisor, "git_status", json_pack("{s:s}", "path", "b.txt")),
			 TOOL_OK);
	assert_string_equal(t.out.buf, "## main\n D b.txt\n");
	assert_int_equal(tt_callj(&t, supervisor, "git_diff", json_pack("{s:s}", "path", "a.txt")),
			 TOOL_OK);
	/* Reading status and diffs wrote nothing in .git, not even the index. */
	snapshot(&after, tt_path(&t, ".git"));
	assert_string_equal(before.buf, after.buf);
	assert_int_equal(tt_callj(&t, supervisor, "git_status", json_pack("{s:s}", "path", "../x")),
			 TOOL_REFUSED);
	assert_contains(t.out.buf, "outside the workspace");
	assert_int_equal(tt_callj(&t, supervisor, "git_diff", json_pack("{s:s}", "path", ".git/config")),
			 TOOL_REFUSED);
	assert_contains(t.out.buf, ".git");
	buf_release(&before);
	buf_release(&after);
	tt_teardown(&t);
}

static void test_git_diff(void **state)
{
	struct tt t;

	(void)state;
	tt_setup(&t);
	make_repo(&t);
	assert_int_equal(tt_callj(&t, tt_builder(), "git_diff", json_pack("{s:s}", "path", "a.txt")),
			 TOOL_OK);
	assert_contains(t.out.buf, "diff --git a/a.txt b/a.txt\n");
	assert_contains(t.out.buf, "--- a/a.txt\n+++ b/a.txt\n");
	assert_contains(t.out.buf, "@@ -1,3 +1,3 @@\n one\n-two\n+TWO\n three\n");
	assert_not_contains(t.out.buf, "b.txt");
	assert_int_equal(tt_call(&t, tt_builder(), "git_diff", ""), TOOL_OK);
	assert_contains(t.out.buf, "-bee\n");				/* deleted */
	assert_contains(t.out.buf, "+new and staged\n");		/* staged */
	assert_contains(t.out.buf, "+untracked\n");			/* untracked, with content */
	assert_not_contains(t.out.buf, "ignored");			/* ignored stays out */
	assert_contains(t.out.buf, "sub/d.txt");
	/* A small cap: the diff is cut and says so. */
	t.ctx.limits.output_bytes = 120;
	assert_int_equal(tt_call(&t, tt_builder(), "git_diff", ""), TOOL_OK);
	assert_contains(t.out.buf, "[forgex: diff cut at 120 bytes");
	assert_true(strstr(t.out.buf, "[forgex:") - t.out.buf <= 120);
	tt_teardown(&t);
}

static void test_git_clean_unborn_and_none(void **state)
{
	struct tt t;

	(void)state;
	tt_setup(&t);
	skip_without_git();
	assert_int_equal(tt_call(&t, tt_builder(), "git_status", ""), TOOL_FAILED);
	assert_contains(t.out.buf, "not inside a git repository");
	git(t.ws, (const char *const[]){ "init", "-q", NULL });
	tu_write(t.ws, "first.txt", "hello\n");
	assert_int_equal(tt_call(&t, tt_builder(), "git_status", ""), TOOL_OK);
	assert_string_equal(t.out.buf, "## no commits yet on main\n?? first.txt\n");
	assert_int_equal(tt_call(&t, tt_builder(), "git_diff", ""), TOOL_OK);
	assert_contains(t.out.buf, "+++ b/first.txt\n@@ -0,0 +1 @@\n+hello\n");
	git(t.ws, (const char *const[]){ "add", "-A", NULL });
	git(t.ws, (const char *const[]){ "commit", "-q", "-m", "c", NULL });
	assert_int_equal(tt_call(&t, tt_builder(), "git_status", ""), TOOL_OK);
	assert_string_equal(t.out.buf, "## main\nnothing changed (no staged, unstaged or untracked "
			    "files)\n");
	assert_int_equal(tt_call(&t, tt_builder(), "git_diff", ""), TOOL_OK);
	assert_string_equal(t.out.buf, "no changes against HEAD\n");
	tt_teardown(&t);
}

static void test_git_workspace_in_a_subfolder(void **state)
{
	struct tool_ctx sub;
	struct buf out = BUF_INIT;
	struct tt t;

	(void)state;
	tt_setup(&t);
	make_repo(&t);
	tu_write(t.ws, "sub/e.txt", "e\n");
	assert_int_equal(tool_ctx_init(&sub, &t.reg, tt_path(&t, "sub")), 0);
	assert_int_equal(tool_dispatch(&sub, tt_builder(), "git_status", "{}", &out), TOOL_OK);
	/* Only what lies in the workspace, named from it. */
	assert_string_equal(out.buf, "## main\nR  c.txt -> d.txt\n?? e.txt\n");
	buf_reset(&out);
	assert_int_equal(tool_dispatch(&sub, tt_builder(), "git_diff", "{}", &out), TOOL_OK);
	assert_contains(out.buf, "+e\n");
	assert_not_contains(out.buf, "a.txt");
	buf_release(&out);
	tool_ctx_release(&sub);
	tt_teardown(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_git_status),
		cmocka_unit_test(test_git_diff),
		cmocka_unit_test(test_git_clean_unborn_and_none),
		cmocka_unit_test(test_git_workspace_in_a_subfolder),
	};

	return cmocka_run_group_tests_name("tools/git", tests, NULL, NULL);
}
