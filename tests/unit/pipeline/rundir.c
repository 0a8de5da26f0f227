/* Run folders, event logs, run ids, resolving runs, info/exclude. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "helpers/testutil.h"
#include "pipeline/rundir.h"

static void collect(void *data, const json_t *ev)
{
	json_array_append((json_t *)data, (json_t *)ev);
}

static void test_rundir_events_numbered_and_timed(void **state)
{
	char *ws = tu_mkdtemp();
	struct rundir s = RUNDIR_INIT;
	json_t *seen = json_array(), *events = NULL, *e;
	char *req;

	(void)state;
	assert_int_equal(rundir_create(&s, ws, "fix the bug"), 0);
	s.on_event = collect;
	s.on_event_data = seen;
	assert_int_equal(rundir_eventf(&s, "stage_start", "{s:s}", "stage", "baseline"), 0);
	assert_int_equal(rundir_event(&s, "stage_end", json_pack("{s:s, s:s}", "stage",
								  "baseline", "seq", "forged")), 0);
	assert_int_equal(rundir_event(&s, "note", NULL), 0);
	assert_int_equal(json_array_size(seen), 3);
	assert_int_equal(rundir_load_events(&events, s.dir), 0);
	assert_int_equal(json_array_size(events), 3);
	e = json_array_get(events, 1);
	/* numbering is the run folder's, whatever the fields say */
	assert_int_equal(jsonx_int(e, "seq", 0), 2);
	assert_string_equal(jsonx_str(e, "type"), "stage_end");
	assert_string_equal(jsonx_str(e, "stage"), "baseline");
	assert_non_null(jsonx_str(e, "time"));
	assert_int_equal(strlen(jsonx_str(e, "time")), 24);
	assert_true(jsonx_int(e, "elapsed_ms", -1) >= 0);
	req = tu_read(s.dir, "request.txt");
	assert_string_equal(req, "fix the bug");
	free(req);
	json_decref(events);
	json_decref(seen);
	rundir_release(&s);
	tu_rmtree(ws);
}

static void test_rundir_open_continues_numbering(void **state)
{
	char *ws = tu_mkdtemp(), *id;
	struct rundir s = RUNDIR_INIT;
	json_t *events = NULL;
	char *path;
	FILE *f;

	(void)state;
	assert_int_equal(rundir_create(&s, ws, "x"), 0);
	rundir_event(&s, "a", NULL);
	rundir_event(&s, "b", NULL);
	id = xstrdup(s.id);
	path = rundir_path(&s, "events.jsonl");
	rundir_release(&s);
	/* a run killed mid-write leaves a torn last line */
	f = fopen(path, "a");
	fputs("{\"seq\": 3, \"ty", f);
	fclose(f);
	assert_int_equal(rundir_open(&s, ws, id), 0);
	assert_int_equal(s.seq, 2);
	rundir_event(&s, "c", NULL);
	rundir_release(&s);
	/* the torn line was cut at the open: the new event follows the last whole one */
	assert_int_equal(rundir_load_events(&events, (s.dir = rundir_dir(ws, id))), 0);
	assert_int_equal(json_array_size(events), 3);
	assert_string_equal(jsonx_str(json_array_get(events, 2), "type"), "c");
	json_decref(events);
	/* a broken line in the middle (not forgex's writing) is an error naming its line */
	f = fopen(path, "a");
	fputs("{\"seq\": 4, \"ty\n{\"seq\": 5}\n", f);
	fclose(f);
	assert_int_equal(rundir_load_events(&events, s.dir), FX_EPARSE);
	assert_non_null(strstr(err_last(), "line 4"));
	free(s.dir);
	assert_int_equal(rundir_open(&s, ws, "20000101-000000-0000"), FX_ENOTFOUND);
	free(path);
	free(id);
	tu_rmtree(ws);
}

static void test_rundir_ids_sort_and_resolve(void **state)
{
	char *ws = tu_mkdtemp(), *out = NULL;
	struct strvec ids = STRVEC_INIT;
	char id[32];

	(void)state;
	rundir_make_id(id, sizeof(id), 1796008500LL); /* 2026-11-30 03:15:00 UTC */
	assert_int_equal(strlen(id), 20);
	assert_memory_equal(id, "20261130-031500-", 16);
	assert_int_equal(rundir_resolve(&out, ws, NULL), FX_ENOTFOUND);
	tu_write(ws, ".forgex/runs/20261130-031500-ab12/events.jsonl", "");
	tu_write(ws, ".forgex/runs/20261130-031459-ffff/events.jsonl", "");
	tu_write(ws, ".forgex/runs/20261201-000000-0001/events.jsonl", "");
	tu_write(ws, ".forgex/runs/not-a-run/x", "");
	assert_int_equal(rundir_list(&ids, ws), 0);
	assert_int_equal(ids.nr, 3);
	assert_string_equal(ids.v[0], "20261130-031459-ffff");
	assert_string_equal(ids.v[2], "20261201-000000-0001");
	assert_int_equal(rundir_resolve(&out, ws, "last"), 0);
	assert_string_equal(out, "20261201-000000-0001");
	free(out);
	assert_int_equal(rundir_resolve(&out, ws, "20261130-0315"), 0);
	assert_string_equal(out, "20261130-031500-ab12");
	free(out);
	assert_int_equal(rundir_resolve(&out, ws, "20261130"), FX_EINVAL);
	assert_int_equal(rundir_resolve(&out, ws, "1999"), FX_ENOTFOUND);
	strvec_clear(&ids);
	tu_rmtree(ws);
}

static void test_rundir_exclude_once(void **state)
{
	char *ws = tu_mkdtemp(), *ex;
	int added = -1;

	(void)state;
	/* not a git repository: nothing to do */
	assert_int_equal(rundir_exclude(ws, &added), 0);
	assert_int_equal(added, 0);
	tu_write(ws, ".git/info/exclude", "*.o");
	assert_int_equal(rundir_exclude(ws, &added), 0);
	assert_int_equal(added, 5);
	assert_int_equal(rundir_exclude(ws, &added), 0);
	assert_int_equal(added, 0);
	ex = tu_read(ws, ".git/info/exclude");
	assert_string_equal(ex, "*.o\n# forgex run data\n.forgex/runs/\n.forgex/checkpoints/\n"
			    ".forgex/map/\n.forgex/sessions/\n.forgex/history\n");
	free(ex);
	tu_rmtree(ws);
}

/* Whether `rel` of `ws` exists (a link not followed). */
static int exists(const char *ws, const char *rel)
{
	char *p = xstrfmt("%s/%s", ws, rel);
	struct stat st;
	int ret = lstat(p, &st) == 0;

	free(p);
	return ret;
}

/* Age `rel` of `ws` by `secs` (its mtime and atime). */
static void age(const char *ws, const char *rel, time_t secs)
{
	char *p = xstrfmt("%s/%s", ws, rel);
	struct timespec t[2];

	clock_gettime(CLOCK_REALTIME, &t[0]);
	t[0].tv_sec -= secs;
	t[1] = t[0];
	assert_int_equal(utimensat(AT_FDCWD, p, t, AT_SYMLINK_NOFOLLOW), 0);
	free(p);
}

/*
 * A write of info/exclude killed before its rename left its temporary
 * file: the next rundir_exclude() removes it when it is a minute old, and
 * nothing else (a fresh one may be another run's write under way; names
 * forgex does not make are the user's).
 */
static void test_rundir_exclude_sweeps_killed_write(void **state)
{
	char *ws = tu_mkdtemp();
	int added = -1;

	(void)state;
	tu_write(ws, ".git/info/exclude", "*.o\n");
	tu_write(ws, ".git/info/.exclude.fx-0e578946.tmp", "half");
	tu_write(ws, ".git/info/.exclude.fx-1a2b3c4d.tmp", "under way");
	tu_write(ws, ".git/info/.exclude.bak", "the user's");
	tu_write(ws, ".git/info/.attributes.fx-0e578946.tmp", "not exclude's");
	age(ws, ".git/info/.exclude.fx-0e578946.tmp", 120);
	age(ws, ".git/info/.exclude.bak", 120);
	age(ws, ".git/info/.attributes.fx-0e578946.tmp", 120);
	assert_int_equal(rundir_exclude(ws, &added), 0);
	assert_int_equal(added, 5);
	assert_false(exists(ws, ".git/info/.exclude.fx-0e578946.tmp"));
	assert_true(exists(ws, ".git/info/.exclude.fx-1a2b3c4d.tmp"));
	assert_true(exists(ws, ".git/info/.exclude.bak"));
	assert_true(exists(ws, ".git/info/.attributes.fx-0e578946.tmp"));
	tu_rmtree(ws);
}

/* A link planted as .git/info or .git/info/exclude is an error naming it, never a write elsewhere. */
static void test_rundir_exclude_refuses_links(void **state)
{
	char *ws = tu_mkdtemp(), *elsewhere = tu_mkdtemp(), *ex, *p, *q;
	struct stat before, after;
	int added = -1;

	(void)state;
	tu_write(ws, ".git/HEAD", "ref: refs/heads/main\n");
	tu_write(elsewhere, "exclude", "mine\n");
	p = xstrfmt("%s/.git/info", ws);
	assert_int_equal(symlink(elsewhere, p), 0);
	q = xstrfmt("%s/exclude", elsewhere);
	assert_int_equal(stat(q, &before), 0);
	assert_int_equal(rundir_exclude(ws, &added), FX_EDENIED);
	assert_non_null(strstr(err_last(), "/info is not a folder of its own"));
	assert_int_equal(added, 0);
	ex = tu_read(elsewhere, "exclude");
	assert_string_equal(ex, "mine\n");
	free(ex);
	assert_int_equal(stat(q, &after), 0);
	assert_int_equal(before.st_ino, after.st_ino);
	assert_int_equal(before.st_mtime, after.st_mtime);
	/* a link as the file itself: not followed, not replaced */
	assert_int_equal(unlink(p), 0);
	assert_int_equal(mkdir(p, 0755), 0);
	free(p);
	p = xstrfmt("%s/.git/info/exclude", ws);
	assert_int_equal(symlink(q, p), 0);
	assert_int_equal(rundir_exclude(ws, &added), FX_EDENIED);
	assert_non_null(strstr(err_last(), "info/exclude is a symbolic link"));
	ex = tu_read(elsewhere, "exclude");
	assert_string_equal(ex, "mine\n");
	free(ex);
	free(p);
	free(q);
	tu_rmtree(ws);
	tu_rmtree(elsewhere);
}

/* Lines from concurrent writers never interleave: each is one write(2). */
static void test_rundir_concurrent_lines_whole(void **state)
{
	char *ws = tu_mkdtemp(), *id;
	struct rundir s = RUNDIR_INIT;
	json_t *events = NULL;
	char big[5000];
	int k;

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(rundir_create(&s, ws, NULL), 0);
	id = xstrdup(s.id);
	for (k = 0; k < 4; k++) {
		pid_t pid = fork();

		if (!pid) {
			int i;

			for (i = 0; i < 50; i++)
				rundir_eventf(&s, "w", "{s:s, s:i}", "blob", big, "k", k);
			_exit(0);
		}
	}
	while (wait(NULL) > 0)
		;
	rundir_release(&s);
	s.dir = rundir_dir(ws, id);
	assert_int_equal(rundir_load_events(&events, s.dir), 0);
	assert_int_equal(json_array_size(events), 200);
	free(s.dir);
	json_decref(events);
	free(id);
	tu_rmtree(ws);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rundir_events_numbered_and_timed),
		cmocka_unit_test(test_rundir_open_continues_numbering),
		cmocka_unit_test(test_rundir_ids_sort_and_resolve),
		cmocka_unit_test(test_rundir_exclude_once),
		cmocka_unit_test(test_rundir_exclude_refuses_links),
		cmocka_unit_test(test_rundir_exclude_sweeps_killed_write),
		cmocka_unit_test(test_rundir_concurrent_lines_whole),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
