/* What a run and a session write down; see recorder.h. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/redact.h"
#include "base/utf8.h"
#include "pipeline/lock.h"
#include "pipeline/recorder.h"
#include "sandbox/permissions.h"
#include "vcs/checkpoint.h"

static int rec_before_change(void *data, const struct wspath_loc *loc)
{
	struct recorder *r = data;
	int ret;

	if (r->jr) {
		ret = journal_before_change(r->jr, loc->dirfd, loc->name, loc->rel);
		if (ret < 0)
			return ret;
	}
	return r->watch && r->watch->before_change ?
	       r->watch->before_change(r->watch->data, loc) : 0;
}

static int rec_before_tmp(void *data, const char *rel, const char *tmp)
{
	struct recorder *r = data;

	return r->jr ? journal_before_tmp(r->jr, rel, tmp) : 0;
}

static void rec_after_change(void *data, const char *rel)
{
	struct recorder *r = data;

	if (r->jr)
		journal_after_change(r->jr, rel);
	if (r->watch && r->watch->after_change)
		r->watch->after_change(r->watch->data, rel);
}

static void rec_around_call(void *data, const struct tool *t, int after)
{
	struct recorder *r = data;

	if (r->watch && r->watch->around_call)
		r->watch->around_call(r->watch->data, t, after);
	/* a command can change any file: what it changed is the journal's */
	if (!r->jr || !(t->needs & (PERM_TERMINAL | PERM_TEST | PERM_BUILD)))
		return;
	if (after)
		journal_command_end(r->jr);
	else
		journal_command_begin(r->jr);
}

void recorder_init(struct recorder *r, struct rundir *rd)
{
	memset(r, 0, sizeof(*r));
	r->rd = rd;
	ledger_init(&r->ledger);
	r->hooks.before_change = rec_before_change;
	r->hooks.after_change = rec_after_change;
	r->hooks.around_call = rec_around_call;
	r->hooks.before_tmp = rec_before_tmp;
	r->hooks.data = r;
}

void recorder_release(struct recorder *r)
{
	ledger_release(&r->ledger);
	r->map = NULL;
	r->jr = NULL;
	r->watch = NULL;
}

void recorder_event(struct recorder *r, const char *type, json_t *fields)
{
	/*
	 * A failure to record is not a reason to stop changing code halfway,
	 * and must not wipe the error being handled (a full disk used to turn
	 * "cannot restore: No space left" into an empty reason).
	 */
	char *keep = xstrdup(err_last());
	int code = err_last_code();

	if (rundir_event(r->rd, type, fields) < 0) {
		if (*keep)
			err_set(code, "%s", keep);
		else
			err_clear();
	}
	free(keep);
}

static json_t *size_note(const json_t *s)
{
	char *note = xstrfmt("[%zu bytes; in transcript.jsonl]", json_string_length(s));
	json_t *j = json_string(note);

	free(note);
	return j;
}

/*
 * The model's tool arguments are in transcript.jsonl already (the reply
 * that made the call): events.jsonl keeps each long string once, as a
 * note of its size, so the logs do not hold a file's content twice.
 */
static void shorten_arguments(json_t *fields)
{
	json_t *args = json_object_get(fields, "arguments"), *v;
	const char *k;

	if (json_is_string(args) && json_string_length(args) > RECORDER_ARG_MAX) {
		json_object_set_new(fields, "arguments", size_note(args));
		return;
	}
	if (!json_is_object(args))
		return;
	/* the agent still uses its own object: change a copy */
	args = json_deep_copy(args);
	json_object_set_new(fields, "arguments", args);
	json_object_foreach(args, k, v)
		if (json_is_string(v) && json_string_length(v) > RECORDER_ARG_MAX)
			json_object_set_new(args, k, size_note(v));
}

void recorder_agent_event(void *data, const char *type, json_t *fields)
{
	struct recorder *r = data;

	if (!strcmp(type, "progress")) {
		/* for display only: not stored */
		if (r->rd->on_event) {
			json_t *ev = json_deep_copy(fields);

			jsonx_set(ev, "type", jsonx_string(type));
			r->rd->on_event(r->rd->on_event_data, ev);
			json_decref(ev);
		}
		json_decref(fields);
		return;
	}
	if (!strcmp(type, "model_call"))
		ledger_count(&r->ledger, fields);
	if (!strcmp(type, "tool_call")) {
		const json_t *args = json_object_get(fields, "arguments");
		const char *name = jsonx_str(fields, "name");

		/* a file the model read counts in the next map's focus */
		if (r->map && name && !strcmp(name, "read_file") && json_is_object(args))
			ctx_session_note_file(r->map, jsonx_str(args, "path"));
		shorten_arguments(fields);
	}
	recorder_event(r, type, fields);
}

/* The start of the last RECORDER_TAIL_LINES lines of `s` (a final newline ends the last line). */
static size_t tail_start(const char *s, size_t len, size_t *lines)
{
	size_t end = len && s[len - 1] == '\n' ? len - 1 : len, i = end, n = 0, start = 0;

	while (i > 0) {
		if (s[i - 1] == '\n') {
			if (++n == RECORDER_TAIL_LINES && !start)
				start = i;
		}
		i--;
	}
	*lines = len ? n + 1 : 0;
	return n >= RECORDER_TAIL_LINES ? start : 0;
}

/*
 * A command's output for the person: stdout then stderr, redacted, in
 * output/SEQ.txt of the folder (SEQ: the "command" event's), at most
 * RECORDER_OUTPUT_MAX bytes (head and tail); its last lines in the event.
 */
static void keep_output(struct recorder *r, json_t *f, const struct exec_result *res)
{
	struct buf all = BUF_INIT, tail = BUF_INIT;
	char *name;
	size_t lines, from, i;
	int fd;

	buf_addbuf(&all, &res->out);
	if (all.len && all.buf[all.len - 1] != '\n' && res->err.len)
		buf_addch(&all, '\n');
	buf_addbuf(&all, &res->err);
	if (!all.len)
		goto out;
	redact_buf(&all);
	if (all.len > RECORDER_OUTPUT_MAX) {
		size_t h = RECORDER_OUTPUT_MAX / 2, t = all.len - RECORDER_OUTPUT_MAX / 2;
		struct buf cut = BUF_INIT;

		buf_add(&cut, all.buf, h);
		buf_addf(&cut, "\n[... forgex: %zu bytes left out ...]\n", t - h);
		buf_add(&cut, all.buf + t, all.len - t);
		buf_release(&all);
		all = cut;
	}
	from = tail_start(all.buf, all.len, &lines);
	/* each tail line at most RECORDER_TAIL_WIDTH bytes: a person reads them on one row */
	for (i = from; i < all.len;) {
		size_t n = strcspn(all.buf + i, "\n"), k = utf8_cut(all.buf + i, n, RECORDER_TAIL_WIDTH);

		buf_add(&tail, all.buf + i, k);
		if (k < n)
			buf_addstr(&tail, "...");
		buf_addch(&tail, '\n');
		i += n + 1;
	}
	jsonx_set(f, "output_lines", json_integer((json_int_t)lines));
	jsonx_set(f, "output_bytes", json_integer((json_int_t)all.len));
	jsonx_set(f, "tail", jsonx_stringn_lossy(tail.buf, tail.len));
	name = xstrfmt("output/%lu.txt", r->rd->seq + 1);
	fd = r->rd->dir ? rundir_file_open(r->rd->dir, name, O_WRONLY | O_CREAT | O_TRUNC, 0600) : -1;
	if (fd >= 0 && fsutil_write_all(fd, all.buf, all.len) == 0)
		jsonx_set(f, "output", jsonx_string(name));
	if (fd >= 0)
		close(fd);
	/* the output is for the person; no reason to stop the work */
	err_clear();
	free(name);
out:
	buf_release(&all);
	buf_release(&tail);
}

void recorder_command(void *data, const char *tool, const struct strvec *argv, int code,
		      const struct exec_result *res)
{
	json_t *f = json_object();

	jsonx_set(f, "tool", jsonx_string(tool));
	jsonx_set(f, "argv", jsonx_from_strvec(argv));
	if (code < 0) {
		jsonx_set(f, "refused", json_true());
		jsonx_set(f, "error", jsonx_string(err_last()));
	} else if (res) {
		jsonx_set(f, "exit_code", json_integer(res->exit_code));
		jsonx_set(f, "timed_out", json_boolean(res->timed_out));
		jsonx_set(f, "duration_ms", json_integer((json_int_t)res->duration_ms));
		keep_output(data, f, res);
	}
	recorder_event(data, "command", f);
}

int recorder_output_open(const char *dir, const char *name)
{
	size_t n = 0;

	if (!strncmp(name, "output/", 7))
		n = strspn(name + 7, "0123456789");
	if (!n || strcmp(name + 7 + n, ".txt"))
		return err_set(FX_EINVAL, "'%s' is not a command's output file", name);
	return rundir_file_open(dir, name, O_RDONLY, 0);
}

void recorder_hook(void *data, json_t *fields)
{
	recorder_event(data, "hook", fields);
}

int recorder_restore_start(char **checkpoint, const char *workspace, uint64_t max_file_bytes,
			   const char *kind, const char *id)
{
	struct ws_lock lock = WS_LOCK_INIT;
	struct checkpoints *cps = NULL;
	struct checkpoint_restore_result res;
	int run = !strcmp(kind, RUNDIR_RUNS);
	char *dir = rundir_dir_kind(workspace, kind, id);
	json_t *st = NULL;
	const char *start;
	int ret;

	memset(&res, 0, sizeof(res));
	ret = ws_lock_acquire(&lock, workspace, "replay", 0, NULL, NULL, NULL);
	if (ret < 0)
		goto out;
	ret = rundir_read_json(&st, dir, "state.json");
	if (ret < 0)
		goto out;
	/* a run starts from its pre-run checkpoint, a session from its first */
	start = jsonx_str(st, run ? "pre_checkpoint" : "start_checkpoint");
	if (!start) {
		ret = run ? err_set(FX_ENOTFOUND, "run %s changed nothing (no pre-run checkpoint)", id)
			  : err_set(FX_ENOTFOUND, "session %s has no checkpoint of its start", id);
		goto out;
	}
	ret = checkpoint_open(&cps, workspace);
	if (ret < 0)
		goto out;
	checkpoint_set_max_file_bytes(cps, max_file_bytes);
	ret = checkpoint_restore(&res, cps, start);
	if (ret < 0)
		goto out;
	if (checkpoint)
		*checkpoint = xstrdup(start);
out:
	ws_lock_release(&lock);
	checkpoint_restore_result_release(&res);
	checkpoint_close(cps);
	json_decref(st);
	free(dir);
	return ret;
}
