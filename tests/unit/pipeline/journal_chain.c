/*
 * One journal per run, however many processes worked on it (issue 24):
 * a second process appends to the first one's journal, a path's "before"
 * stays the first ever recorded, the restore of a resume is the run's own
 * (not a version of the user's), a torn last record does not swallow the
 * next; and the temporary files a journal names are removed when it is
 * opened again, nothing else.
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
#include "base/jsonx.h"
#include "helpers/testutil.h"
#include "pipeline/journal.h"
#include "pipeline/rundir.h"
#include "unit/vcs/vcs_testutil.h"
#include "vcs/checkpoint.h"

/* "<dir>/<rel>", in a ring the test never frees. */
static const char *at(const char *dir, const char *rel)
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
	tu_write(f->ws, "a.txt", "a before\n");
	tu_write(f->ws, "sub/b.txt", "b before\n");
	tu_write(f->ws, ".forgex/runs/R/events.jsonl", "");
	f->run = xstrfmt("%s/.forgex/runs/R", f->ws);
	assert_int_equal(checkpoint_open(&f->cps, f->ws), 0);
	f->j = (struct journal)JOURNAL_INIT;
	assert_int_equal(journal_open(&f->j, f->cps, f->run, 1), 0);
}

/* The process ends (or is killed: the journal holds what it wrote); another opens the run. */
static void fx_next_process(struct fx *f)
{
	journal_release(&f->j);
	checkpoint_close(f->cps);
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

/* What a tool does: the hook, the write (its temporary file named first), the record. */
static int journal_tmp(void *data, const char *rel, const char *tmp)
{
	return journal_before_tmp(data, rel, tmp);
}

static void tool_write(struct fx *f, const char *dir, const char *name, const char *content)
{
	char *d = *dir ? xstrfmt("%s/%s", f->ws, dir) : xstrdup(f->ws);
	char *rel = *dir ? xstrfmt("%s/%s", dir, name) : xstrdup(name);
	int dfd = open(d, O_RDONLY | O_DIRECTORY);
	struct fsutil_tmp_hook hook = { journal_tmp, &f->j, rel };

	assert_true(dfd >= 0);
	assert_int_equal(journal_before_change(&f->j, dfd, name, rel), 0);
	assert_int_equal(fsutil_write_atomic_hooked(dfd, name, content, strlen(content), 0644,
						    &hook), 0);
	journal_after_change(&f->j, rel);
	close(dfd);
	free(d);
	free(rel);
}

static void assert_text(const char *ws, const char *rel, const char *want)
{
	char *got = tu_read(ws, rel);

	if (!want) {
		if (got)
			fail_msg("%s is there: %s", rel, got);
		return;
	}
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void revert_all(struct fx *f)
{
	struct journal_outcome o;

	journal_outcome_init(&o);
	assert_int_equal(journal_revert(&f->j, 0, &o), 0);
	assert_int_equal(o.kept.nr, 0);
	journal_outcome_release(&o);
}

/*
 * A resume: the first process changed a.txt twice and made new.txt; the
 * second puts the run's paths back to a stage's checkpoint (its own
 * restore, not the user's edit), changes a.txt again: the revert gives
 * back what was there before the first process.
 */
static void test_resumed_run_reverts_to_before_the_first_process(void **state)
{
	struct checkpoint_info stage;
	struct strvec failed = STRVEC_INIT;
	struct fx f;

	(void)state;
	fx_open(&f);
	tool_write(&f, "", "a.txt", "a by the builder\n");
	tool_write(&f, "sub", "new.txt", "new\n");
	memset(&stage, 0, sizeof(stage));
	assert_int_equal(checkpoint_create(&stage, f.cps, "after builder"), 0);
	tool_write(&f, "", "a.txt", "a by the killed repair\n");
	tool_write(&f, "sub", "b.txt", "b by the killed repair\n");

	fx_next_process(&f);
	assert_int_equal(journal_restore_to(&f.j, stage.id, &failed), 0);
	assert_int_equal(failed.nr, 0);
	journal_note_restored(&f.j, stage.id);
	assert_text(f.ws, "a.txt", "a by the builder\n");
	assert_text(f.ws, "sub/b.txt", "b before\n");
	tool_write(&f, "", "a.txt", "a by the resumed repair\n");
	/* the restored bytes are the run's own: not kept as the user's */
	assert_text(f.run, "user-versions/a.txt", NULL);

	fx_next_process(&f);	/* forgex undo */
	revert_all(&f);
	assert_text(f.ws, "a.txt", "a before\n");
	assert_text(f.ws, "sub/b.txt", "b before\n");
	assert_text(f.ws, "sub/new.txt", NULL);
	checkpoint_info_release(&stage);
	strvec_clear(&failed);
	fx_close(&f);
}

/* A later record of a path's "before" (another process's) never replaces the first. */
static void test_first_before_wins(void **state)
{
	struct fx f;
	int fd;
	const char later[] = "{\"path\":\"a.txt\",\"before\":{\"kind\":\"absent\",\"oid\":\"\"}}\n";

	(void)state;
	fx_open(&f);
	tool_write(&f, "", "a.txt", "a by the run\n");
	fx_next_process(&f);
	fd = open(at(f.run, "changes.jsonl"), O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, later, strlen(later)), (ssize_t)strlen(later));
	close(fd);
	tool_write(&f, "", "a.txt", "a by the run, again\n");
	fx_next_process(&f);
	revert_all(&f);
	assert_text(f.ws, "a.txt", "a before\n");
	fx_close(&f);
}

/* A process killed mid-record: the next one's first record is not glued to the torn line. */
static void test_torn_last_record_does_not_swallow_the_next(void **state)
{
	struct strvec paths = STRVEC_INIT;
	struct fx f;
	int fd;

	(void)state;
	fx_open(&f);
	tool_write(&f, "", "a.txt", "a by the run\n");
	journal_release(&f.j);
	fd = open(at(f.run, "changes.jsonl"), O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"path\":\"sub/b.t", 16), 16);
	close(fd);
	f.j = (struct journal)JOURNAL_INIT;
	assert_int_equal(journal_open(&f.j, f.cps, f.run, 1), 0);
	tool_write(&f, "sub", "b.txt", "b by the next process\n");
	fx_next_process(&f);
	journal_paths(&f.j, &paths);
	assert_int_equal(paths.nr, 2);
	assert_string_equal(paths.v[1], "sub/b.txt");
	revert_all(&f);
	assert_text(f.ws, "sub/b.txt", "b before\n");
	strvec_clear(&paths);
	fx_close(&f);
}

/*
 * Temporary files: a name the journal recorded (as a killed write leaves
 * it) is removed when the journal is opened for appending; a look-alike
 * it does not name, a folder of a recorded name, and records naming
 * anything but a temporary file beside its target stay.
 */
static void test_recorded_temporary_files_only_are_removed(void **state)
{
	const char planted[] =
		"{\"tmp\":\"a.txt\",\"for\":\"a.txt\"}\n"
		"{\"tmp\":\"sub/.a.txt.fx-0000000a.tmp\",\"for\":\"a.txt\"}\n"
		"{\"tmp\":\"../.a.txt.fx-0000000b.tmp\",\"for\":\"../a.txt\"}\n"
		"{\"tmp\":\".git/.HEAD.fx-0000000c.tmp\",\"for\":\".git/HEAD\"}\n";
	struct fx f;
	int fd;

	(void)state;
	fx_open(&f);
	/* what a write killed before its rename leaves: recorded, then made */
	assert_int_equal(journal_before_tmp(&f.j, "sub/b.txt", ".b.txt.fx-1234abcd.tmp"), 0);
	tu_write(f.ws, "sub/.b.txt.fx-1234abcd.tmp", "half");
	assert_int_equal(journal_before_tmp(&f.j, "a.txt", ".a.txt.fx-00c0ffee.tmp"), 0);
	assert_int_equal(mkdir(at(f.ws, ".a.txt.fx-00c0ffee.tmp"), 0755), 0);
	/* a name that is no temporary file of its target is refused, unrecorded */
	assert_int_equal(journal_before_tmp(&f.j, "a.txt", "a.txt"), FX_EINVAL);
	assert_int_equal(journal_before_tmp(&f.j, "a.txt", ".b.txt.fx-1234abcd.tmp"), FX_EINVAL);
	err_clear();
	tu_write(f.ws, ".a.txt.fx-0badf00d.tmp", "the user's");
	tu_write(f.ws, "sub/.a.txt.fx-0000000a.tmp", "the user's");
	fd = open(at(f.run, "changes.jsonl"), O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, planted, strlen(planted)), (ssize_t)strlen(planted));
	close(fd);

	fx_next_process(&f);
	assert_int_equal(f.j.removed.nr, 1);
	assert_string_equal(f.j.removed.v[0], "sub/.b.txt.fx-1234abcd.tmp");
	assert_text(f.ws, "sub/.b.txt.fx-1234abcd.tmp", NULL);
	assert_text(f.ws, ".a.txt.fx-0badf00d.tmp", "the user's");
	assert_text(f.ws, "sub/.a.txt.fx-0000000a.tmp", "the user's");
	assert_text(f.ws, "a.txt", "a before\n");
	assert_true(fsutil_is_dir(at(f.ws, ".a.txt.fx-00c0ffee.tmp")));
	fx_close(&f);
}

/* The names: what fsutil_tmp_create() makes, and nothing else, is one. */
static void test_temporary_names(void **state)
{
	char tmp[FSUTIL_TMP_NAME_MAX], long_name[251];
	int dfd, fd;
	char *ws = tu_mkdtemp();

	(void)state;
	assert_true(fsutil_tmp_is_for(".calc.py.fx-0123abcd.tmp", "calc.py"));
	assert_false(fsutil_tmp_is_for(".calc.py.fx-0123ABCD.tmp", "calc.py"));
	assert_false(fsutil_tmp_is_for(".calc.py.fx-0123abc.tmp", "calc.py"));
	assert_false(fsutil_tmp_is_for(".calc.py.fx-0123abcde.tmp", "calc.py"));
	assert_false(fsutil_tmp_is_for(".calc.py.fx-0123abcd.tmp", "calc.p"));
	assert_false(fsutil_tmp_is_for("calc.py.fx-0123abcd.tmp", "calc.py"));
	assert_false(fsutil_tmp_is_for(".calc.py.fx-0123abcd.tmpx", "calc.py"));
	memset(long_name, 'n', 250);
	long_name[250] = '\0';
	dfd = open(ws, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	fd = fsutil_tmp_create(tmp, dfd, long_name, NULL, NULL);
	assert_true(fd >= 0);
	close(fd);
	assert_true(fsutil_tmp_is_for(tmp, long_name));
	assert_int_equal(strlen(tmp), 1 + 200 + 4 + 8 + 4);
	close(dfd);
	tu_rmtree(ws);
}

/* The events of a run a second process opens: its first one is not glued to a torn last line. */
static void test_events_of_a_resumed_run_keep_the_first_new_one(void **state)
{
	struct rundir s = RUNDIR_INIT;
	char *ws = tu_mkdtemp(), *dir;
	json_t *evs = NULL;
	int fd;

	(void)state;
	assert_int_equal(rundir_create(&s, ws, "a request"), 0);
	assert_int_equal(rundir_eventf(&s, "first", "{s:i}", "n", 1), 0);
	dir = xstrdup(s.dir);
	rundir_release(&s);
	fd = open(at(dir, "events.jsonl"), O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{\"seq\":2,\"ty", 12), 12);
	close(fd);
	assert_int_equal(rundir_open(&s, ws, strrchr(dir, '/') + 1), 0);
	assert_int_equal(rundir_eventf(&s, "run_resume", "{s:i}", "n", 2), 0);
	rundir_release(&s);
	assert_int_equal(rundir_load_events(&evs, dir), 0);
	assert_int_equal(json_array_size(evs), 2);
	assert_string_equal(jsonx_str(json_array_get(evs, 1), "type"), "run_resume");
	json_decref(evs);
	free(dir);
	tu_rmtree(ws);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_resumed_run_reverts_to_before_the_first_process),
		cmocka_unit_test(test_first_before_wins),
		cmocka_unit_test(test_torn_last_record_does_not_swallow_the_next),
		cmocka_unit_test(test_recorded_temporary_files_only_are_removed),
		cmocka_unit_test(test_temporary_names),
		cmocka_unit_test(test_events_of_a_resumed_run_keep_the_first_new_one),
	};

	return cmocka_run_group_tests(tests, vt_group_setup, vt_group_teardown);
}
