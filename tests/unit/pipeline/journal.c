/*
 * The journal of a run's own changes: what a tool overwrote (ignored files
 * too) and what a command changed are put back; the user's files are not
 * touched; a path both changed stays the user's; a link planted on the way
 * is never followed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <git2.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "helpers/testutil.h"
#include "pipeline/journal.h"
#include "unit/vcs/vcs_testutil.h"
#include "vcs/checkpoint.h"

/* "<dir>/<rel>", in a ring the test never frees. */
static const char *xstrfmt_leak(const char *dir, const char *rel)
{
	static char *ring[8];
	static unsigned n;

	free(ring[n % 8]);
	ring[n % 8] = xstrfmt("%s/%s", dir, rel);
	return ring[n++ % 8];
}

struct fx {
	char *ws, *run;
	struct checkpoints *cps;
	struct journal j;
};

static void fx_open(struct fx *f)
{
	f->ws = vt_make_repo();
	tu_write(f->ws, ".env", "SECRET=1\n");
	chmod(xstrfmt_leak(f->ws, ".env"), 0600);
	tu_write(f->ws, "a.txt", "a before\n");
	tu_write(f->ws, "sub/b.txt", "b before\n");
	tu_write(f->ws, "user.txt", "the user's, before\n");
	tu_write(f->ws, ".forgex/runs/R/events.jsonl", "");
	f->run = xstrfmt("%s/.forgex/runs/R", f->ws);
	assert_int_equal(checkpoint_open(&f->cps, f->ws), 0);
	f->j = (struct journal)JOURNAL_INIT;
	assert_int_equal(journal_open(&f->j, f->cps, f->run, 1), 0);
}

static void fx_close(struct fx *f)
{
	journal_release(&f->j);
	checkpoint_close(f->cps);
	free(f->run);
	tu_rmtree(f->ws);
}

/* What a tool does: the hook, the write, the record. */
static void tool_write(struct fx *f, const char *dir, const char *name, const char *content)
{
	char *d = *dir ? xstrfmt("%s/%s", f->ws, dir) : xstrdup(f->ws);
	char *rel = *dir ? xstrfmt("%s/%s", dir, name) : xstrdup(name);
	int dfd = open(d, O_RDONLY | O_DIRECTORY);

	assert_true(dfd >= 0);
	assert_int_equal(journal_before_change(&f->j, dfd, name, rel), 0);
	assert_int_equal(fsutil_write_atomic_at(dfd, name, content, strlen(content), 0644), 0);
	journal_after_change(&f->j, rel);
	close(dfd);
	free(d);
	free(rel);
}

static void assert_text(const char *ws, const char *rel, const char *want)
{
	char *got = tu_read(ws, rel);

	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void test_journal_reverts_the_runs_paths_only(void **state)
{
	struct fx f;
	struct journal_outcome o;
	struct stat st;

	(void)state;
	fx_open(&f);
	tool_write(&f, "", ".env", "BROKEN\n");
	tool_write(&f, "", "a.txt", "a by the run\n");
	tool_write(&f, "sub", "new.txt", "new by the run\n");
	/* a command changes b.txt and makes a file */
	journal_command_begin(&f.j);
	tu_write(f.ws, "sub/b.txt", "b by a command\n");
	tu_write(f.ws, "made.txt", "made by a command\n");
	journal_command_end(&f.j);
	/* the user changes a file of their own, and one the run changed */
	tu_write(f.ws, "user.txt", "the user's, now\n");
	tu_write(f.ws, "a.txt", "a by the user\n");
	journal_outcome_init(&o);
	assert_int_equal(journal_revert(&f.j, 0, &o), 0);
	assert_text(f.ws, ".env", "SECRET=1\n");
	assert_int_equal(lstat(xstrfmt_leak(f.ws, ".env"), &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_text(f.ws, "sub/b.txt", "b before\n");
	assert_false(vt_exists(f.ws, "sub/new.txt"));
	assert_false(vt_exists(f.ws, "made.txt"));
	assert_text(f.ws, "user.txt", "the user's, now\n");
	/* both changed a.txt: the user's stays, the run's is saved */
	assert_text(f.ws, "a.txt", "a by the user\n");
	assert_int_equal(o.kept.nr, 1);
	assert_non_null(strstr(o.kept.v[0], "a.txt (the run's version: "));
	assert_text(f.run, "run-versions/a.txt", "a by the run\n");
	assert_int_equal(o.failed.nr, 0);
	journal_outcome_release(&o);
	fx_close(&f);
}

/* The journal is on disk: another process (undo after kill -9) reads it. */
static void test_journal_read_back_and_force(void **state)
{
	struct fx f;
	struct journal j2 = JOURNAL_INIT;
	struct journal_outcome o;
	struct strvec conflicts = STRVEC_INIT, own = STRVEC_INIT;

	(void)state;
	fx_open(&f);
	tool_write(&f, "", "a.txt", "a by the run\n");
	tool_write(&f, "", "c.txt", "c by the run\n");
	journal_release(&f.j);
	f.j = (struct journal)JOURNAL_INIT;
	assert_int_equal(journal_open(&j2, f.cps, f.run, 0), 0);
	assert_int_equal(journal_own_changes(&j2, &own), 0);
	assert_int_equal(own.nr, 2);
	tu_write(f.ws, "c.txt", "c by the user\n");
	assert_int_equal(journal_conflicts(&j2, &conflicts), 0);
	assert_int_equal(conflicts.nr, 1);
	assert_string_equal(conflicts.v[0], "c.txt");
	journal_outcome_init(&o);
	assert_int_equal(journal_revert(&j2, 1, &o), 0);
	assert_text(f.ws, "a.txt", "a before\n");
	assert_false(vt_exists(f.ws, "c.txt"));
	assert_int_equal(o.overwritten.nr, 1);
	assert_text(f.run, "user-versions/c.txt", "c by the user\n");
	journal_outcome_release(&o);
	journal_release(&j2);
	strvec_clear(&conflicts);
	strvec_clear(&own);
	fx_close(&f);
}

/* The user edits a file between two of the run's writes: their version is kept aside. */
static void test_journal_keeps_a_user_version_between_writes(void **state)
{
	struct fx f;
	struct journal_outcome o;

	(void)state;
	fx_open(&f);
	tool_write(&f, "", "a.txt", "a by the run\n");
	tu_write(f.ws, "a.txt", "a by the user, in between\n");
	tool_write(&f, "", "a.txt", "a by the run, again\n");
	assert_text(f.run, "user-versions/a.txt", "a by the user, in between\n");
	journal_outcome_init(&o);
	assert_int_equal(journal_revert(&f.j, 0, &o), 0);
	/* the rollback gives back what the user had made of it */
	assert_text(f.ws, "a.txt", "a by the user, in between\n");
	journal_outcome_release(&o);
	fx_close(&f);
}

/* A folder replaced by a link to elsewhere: the revert does not follow it. */
static void test_journal_never_follows_a_planted_link(void **state)
{
	struct fx f;
	struct journal_outcome o;
	char *outside = tu_mkdtemp();

	(void)state;
	fx_open(&f);
	tool_write(&f, "sub", "b.txt", "b by the run\n");
	tu_write(outside, "b.txt", "outside, untouched\n");
	vt_rm(f.ws, "sub");
	vt_symlink(f.ws, "sub", outside);
	journal_outcome_init(&o);
	assert_int_equal(journal_revert(&f.j, 1, &o), 1);
	assert_int_equal(o.failed.nr, 1);
	assert_non_null(strstr(o.failed.v[0], "sub/b.txt: "));
	assert_non_null(strstr(o.failed.v[0], "what it was before the run: "));
	assert_text(outside, "b.txt", "outside, untouched\n");
	journal_outcome_release(&o);
	tu_rmtree(outside);
	fx_close(&f);
}

/*
 * Issue 20, item 6: a journal whose record says a folder was there before
 * the run ("dir"), under a link planted in the workspace that points
 * outside. Reverting makes the folder beneath the workspace without
 * following the link (beneath_mkdir()): nothing appears outside, and the
 * path is reported as failed, saying why.
 */
static void test_journal_makes_folders_beneath_the_workspace(void **state)
{
	struct fx f;
	struct journal_outcome o;
	struct stat st;
	char *outside = tu_mkdtemp();

	(void)state;
	fx_open(&f);
	journal_release(&f.j);
	tu_write(f.run, "changes.jsonl",
		 "{\"path\": \"planted/made\", \"before\": {\"kind\": \"dir\", \"oid\": \"dir\"}}\n"
		 "{\"path\": \"real/made\", \"before\": {\"kind\": \"dir\", \"oid\": \"dir\"}}\n");
	vt_symlink(f.ws, "planted", outside);
	assert_int_equal(mkdir(xstrfmt_leak(f.ws, "real"), 0755), 0);
	f.j = (struct journal)JOURNAL_INIT;
	assert_int_equal(journal_open(&f.j, f.cps, f.run, 0), 0);
	journal_outcome_init(&o);
	assert_int_equal(journal_revert(&f.j, 1, &o), 1);
	/* the attack fails: no folder outside */
	assert_int_equal(lstat(xstrfmt_leak(outside, "made"), &st), -1);
	/* why: the link on the way was not followed */
	assert_int_equal(o.failed.nr, 1);
	assert_non_null(strstr(o.failed.v[0], "planted/made: "));
	assert_non_null(strstr(o.failed.v[0], "symbolic link is on its way"));
	/* a folder with no link on the way is made again */
	assert_int_equal(stat(xstrfmt_leak(f.ws, "real/made"), &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	journal_outcome_release(&o);
	tu_rmtree(outside);
	fx_close(&f);
}

/*
 * A journal someone else wrote (a cloned repository can ship
 * .forgex/runs/ID/): records for paths no tool may change (.git, .forgex,
 * any letter case, any depth) or that leave the workspace are not taken,
 * so an undo can never plant a git hook.
 */
static void test_journal_ignores_paths_no_tool_may_change(void **state)
{
	static const char *const bad[] = {
		".git/hooks/pre-commit", "sub/.GIT/config", ".forgex/config.toml",
		"x/.Forgex/runs/R/changes.jsonl", "../outside.txt", "/etc/passwd-x", "a//b",
		"./a.txt", "sub/../a.txt", "",
	};
	/* without the check, each of these would be written (and then differ from the id) */
	struct fx f;
	struct journal j2 = JOURNAL_INIT;
	struct journal_outcome o;
	struct strvec paths = STRVEC_INIT;
	struct buf recs = BUF_INIT;
	size_t i;

	(void)state;
	fx_open(&f);
	journal_release(&f.j);
	f.j = (struct journal)JOURNAL_INIT;
	tu_write(f.run, "saved/1", "#!/bin/sh\necho pwned\n");
	for (i = 0; i < ARRAY_SIZE(bad); i++)
		buf_addf(&recs, "{\"path\": \"%s\", \"before\": {\"kind\": \"saved\", \"file\": "
			 "\"saved/1\", \"mode\": 33261, \"oid\": \"0123456789abcdef0123456789abcdef01234567\"}}\n{\"path\": \"%s\", "
			 "\"left\": \"\"}\n", bad[i], bad[i]);
	buf_addstr(&recs, "{\"path\": \"new.txt\", \"before\": {\"kind\": \"absent\", \"oid\": \"\"}}\n");
	/* saved bytes from outside the run folder, and a set-user-id bit */
	tu_write(f.ws, "outside-secret", "SECRET\n");
	buf_addstr(&recs, "{\"path\": \"leak.txt\", \"before\": {\"kind\": \"saved\", \"file\": "
		   "\"saved/../../../../outside-secret\", \"mode\": 33188, \"oid\": \"0123456789abcdef0123456789abcdef01234567\"}}\n"
		   "{\"path\": \"suid\", \"before\": {\"kind\": \"saved\", \"file\": \"saved/1\", "
		   "\"mode\": 36333, \"oid\": \"0123456789abcdef0123456789abcdef01234567\"}}\n"
		   "{\"path\": \"leak.txt\", \"left\": \"\"}\n{\"path\": \"suid\", \"left\": \"\"}\n");
	tu_write(f.run, "changes.jsonl", recs.buf);
	assert_int_equal(journal_open(&j2, f.cps, f.run, 0), 0);
	journal_paths(&j2, &paths);
	assert_int_equal(paths.nr, 3);
	assert_string_equal(paths.v[0], "leak.txt");
	assert_string_equal(paths.v[1], "new.txt");
	assert_string_equal(paths.v[2], "suid");
	journal_outcome_init(&o);
	/* leak.txt fails: its saved copy is not in the run folder */
	/*
	 * leak.txt fails: its saved copy is not in the run folder; suid is
	 * written (without its set-id bit), then differs from the made-up id
	 */
	assert_int_equal(journal_revert(&j2, 1, &o), 2);
	assert_int_equal(o.failed.nr, 2);
	assert_non_null(strstr(o.failed.v[0], "leak.txt: the journal names no saved copy inside "
			       "the run folder"));
	assert_non_null(strstr(o.failed.v[1], "suid: still differs"));
	assert_false(vt_exists(f.ws, "leak.txt"));
	{
		struct stat st;
		char *p = xstrfmt("%s/suid", f.ws);

		assert_int_equal(stat(p, &st), 0);
		assert_int_equal(st.st_mode & 07000, 0);	/* 36333 is 0106755: no set-id bit */
		free(p);
	}
	assert_false(vt_exists(f.ws, ".git/hooks/pre-commit"));
	assert_false(vt_exists(f.ws, ".forgex/config.toml"));
	assert_text(f.ws, "a.txt", "a before\n");
	journal_outcome_release(&o);
	journal_release(&j2);
	strvec_clear(&paths);
	buf_release(&recs);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_journal_reverts_the_runs_paths_only),
		cmocka_unit_test(test_journal_read_back_and_force),
		cmocka_unit_test(test_journal_keeps_a_user_version_between_writes),
		cmocka_unit_test(test_journal_never_follows_a_planted_link),
		cmocka_unit_test(test_journal_makes_folders_beneath_the_workspace),
		cmocka_unit_test(test_journal_ignores_paths_no_tool_may_change),
	};

	return cmocka_run_group_tests(tests, vt_group_setup, vt_group_teardown);
}
