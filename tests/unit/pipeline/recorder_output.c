/*
 * A command's output kept for the person by the recorder
 * (recorder_command(), recorder_output_open()): the file, the event's tail
 * and counts, redaction, the size bound, and names an event may not use.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "helpers/testutil.h"
#include "pipeline/recorder.h"
#include "pipeline/rundir.h"

/* The events of the folder after one command with `out` and `err`. */
static json_t *one_command(struct rundir *s, const char *out, size_t out_len, const char *err)
{
	struct recorder rec;
	struct exec_result r = EXEC_RESULT_INIT;
	struct strvec argv = STRVEC_INIT;
	json_t *events = NULL;

	recorder_init(&rec, s);
	strvec_push(&argv, "make");
	buf_add(&r.out, out, out_len);
	buf_addstr(&r.err, err);
	r.exit_code = 2;
	recorder_command(&rec, "run_command", &argv, 0, &r);
	assert_int_equal(rundir_load_events(&events, s->dir), 0);
	recorder_release(&rec);
	exec_result_release(&r);
	strvec_clear(&argv);
	return events;
}

static char *read_output(const char *dir, const char *name)
{
	struct buf b = BUF_INIT;
	int fd = recorder_output_open(dir, name);

	assert_true(fd >= 0);
	assert_int_equal(fsutil_read_fd(&b, fd, 8u << 20), 0);
	close(fd);
	return buf_detach(&b, NULL);
}

static void test_output_file_tail_and_counts(void **state)
{
	char *ws = tu_mkdtemp(), *text;
	struct rundir s = RUNDIR_INIT;
	struct buf out = BUF_INIT;
	json_t *events, *ev;
	int i;

	(void)state;
	assert_int_equal(rundir_create(&s, ws, "r"), 0);
	for (i = 1; i <= 20; i++)
		buf_addf(&out, "out %d\n", i);
	events = one_command(&s, out.buf, out.len, "warning: GITHUB_TOKEN=ghp_0123456789abcdef0123456789abcdef0123\nerr end");
	ev = json_array_get(events, 0);
	assert_string_equal(jsonx_str(ev, "type"), "command");
	assert_string_equal(jsonx_str(ev, "output"), "output/1.txt");
	/* 20 of stdout, 2 of stderr */
	assert_int_equal(jsonx_int(ev, "output_lines", 0), 22);
	assert_string_equal(jsonx_str(ev, "tail"), "out 15\nout 16\nout 17\nout 18\nout 19\nout 20\n"
			    "warning: GITHUB_TOKEN=[REDACTED]\nerr end\n");
	text = read_output(s.dir, "output/1.txt");
	assert_int_equal(strncmp(text, out.buf, out.len), 0);
	/* stdout, then stderr; the secret never on disk */
	assert_string_equal(text + out.len, "warning: GITHUB_TOKEN=[REDACTED]\nerr end");
	assert_int_equal((size_t)jsonx_int(ev, "output_bytes", 0), strlen(text));
	free(text);
	json_decref(events);
	buf_release(&out);
	rundir_release(&s);
	tu_rmtree(ws);
}

static void test_output_bounded_and_silent_commands_leave_none(void **state)
{
	char *ws = tu_mkdtemp(), *text;
	struct rundir s = RUNDIR_INIT;
	struct buf big = BUF_INIT;
	json_t *events, *ev;
	size_t i;

	(void)state;
	assert_int_equal(rundir_create(&s, ws, "r"), 0);
	/* 3 MiB on one line: the head and the tail, a note between */
	for (i = 0; i < (3u << 20); i++)
		buf_addch(&big, i < (1u << 20) ? 'h' : i < (2u << 20) ? 'm' : 't');
	events = one_command(&s, big.buf, big.len, "");
	ev = json_array_get(events, 0);
	text = read_output(s.dir, jsonx_str(ev, "output"));
	assert_true(strlen(text) < RECORDER_OUTPUT_MAX + 100);
	assert_true(text[0] == 'h' && text[strlen(text) - 1] == 't');
	assert_non_null(strstr(text, "bytes left out ...]"));
	assert_null(strchr(text, 'm'));
	/* the tail's lines (the head's, the note, the tail's) each cut to its width */
	{
		const char *p = jsonx_str(ev, "tail");

		assert_int_equal(jsonx_int(ev, "output_lines", 0), 3);
		for (; *p; p += strcspn(p, "\n") + 1)
			assert_true(strcspn(p, "\n") <= RECORDER_TAIL_WIDTH + 3);
	}
	free(text);
	json_decref(events);
	buf_release(&big);
	rundir_release(&s);
	tu_rmtree(ws);

	/* a command that wrote nothing: no file, no tail */
	ws = tu_mkdtemp();
	assert_int_equal(rundir_create(&s, ws, "r"), 0);
	events = one_command(&s, "", 0, "");
	ev = json_array_get(events, 0);
	assert_null(json_object_get(ev, "output"));
	assert_null(json_object_get(ev, "tail"));
	assert_int_equal(jsonx_int(ev, "exit_code", -1), 2);
	json_decref(events);
	rundir_release(&s);
	tu_rmtree(ws);
}

static void test_output_open_takes_only_output_files(void **state)
{
	char *ws = tu_mkdtemp();
	struct rundir s = RUNDIR_INIT;
	static const char *const bad[] = {
		"../request.txt", "output/../events.jsonl", "output/1.txt/..", "events.jsonl",
		"output/.txt", "output/1.txt.bak", "/etc/passwd", "output/-1.txt", "",
	};
	size_t i;

	(void)state;
	assert_int_equal(rundir_create(&s, ws, "r"), 0);
	for (i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		assert_int_equal(recorder_output_open(s.dir, bad[i]), FX_EINVAL);
	/* a well-formed name that is not there */
	assert_int_equal(recorder_output_open(s.dir, "output/7.txt"), FX_ENOTFOUND);
	rundir_release(&s);
	tu_rmtree(ws);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_output_file_tail_and_counts),
		cmocka_unit_test(test_output_bounded_and_silent_commands_leave_none),
		cmocka_unit_test(test_output_open_takes_only_output_files),
	};

	return cmocka_run_group_tests_name("pipeline/recorder_output", tests, NULL, NULL);
}
