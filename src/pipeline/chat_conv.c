/*
 * The session's conversation beyond one turn (see chat.h and
 * docs/internals/chat.md): a message too large for the model's window
 * (refused, then attached as a file or cut), the notes the model is told
 * with the next message (what /undo put back), and the undo stack of the
 * session's turns and runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/utf8.h"
#include "pipeline/chat.h"
#include "pipeline/chat_int.h"
#include "pipeline/pipeline.h"
#include "pipeline/rundir.h"

/* Notes are told once; a file of them larger than this is not a note. */
#define NOTES_MAX (64u << 10)
/* Bytes of an attached message's beginning shown to the model with its path. */
#define ATTACH_HEAD 600
/* Paths named in a note, at most. */
#define NOTE_PATHS 40

void chat_conv_release(struct chat_conv *v)
{
	size_t i;

	free(v->refused);
	for (i = 0; i < v->runs_nr; i++)
		free(v->runs[i].id);
	free(v->runs);
	*v = (struct chat_conv)CHAT_CONV_INIT;
}

/*
 * A message too large for the window
 */

void chat_conv_refuse(struct chat *c, const char *message, const struct agent_fit *fit)
{
	struct chat_conv *v = chat_conv_of(c);

	free(v->refused);
	v->refused = xstrdup(message);
	v->refused_fit = *fit;
	chat_event(c, "refused", json_pack("{s:I, s:I, s:I, s:I, s:I}", "bytes",
					   (json_int_t)strlen(message), "tokens",
					   (json_int_t)fit->message, "window", (json_int_t)fit->window,
					   "limit", (json_int_t)fit->limit, "least",
					   (json_int_t)fit->least));
}

const char *chat_refused(const struct chat *c, struct agent_fit *fit)
{
	const struct chat_conv *v = chat_conv_of((struct chat *)c);

	if (fit)
		*fit = v->refused_fit;
	return v->refused;
}

static size_t count_lines(const char *s, size_t len)
{
	size_t n = 0, i;

	for (i = 0; i < len; i++)
		n += s[i] == '\n';
	return n + (len && s[len - 1] != '\n');
}

int chat_attach_refused(struct chat *c, struct buf *out)
{
	struct chat_conv *v = chat_conv_of(c);
	const struct agent_fit *fit = &v->refused_fit;
	size_t len, lines, room, per, head;
	char *name = NULL;
	int fd = -1, n, ret;

	if (!v->refused)
		return err_set(FX_ENOTFOUND, "no message was refused");
	len = strlen(v->refused);
	fd = rundir_file_open(chat_dir(c), "attachments", O_DIRECTORY | O_CREAT, 0700);
	if (fd < 0)
		return err_prefix(fd, "the session's attachments");
	close(fd);
	for (n = 1;; n++) {
		char *path;
		int there;

		free(name);
		name = xstrfmt("attachments/%d.txt", n);
		path = xstrfmt("%s/%s", chat_dir(c), name);
		there = fsutil_exists(path);
		free(path);
		if (!there)
			break;
	}
	fd = rundir_file_open(chat_dir(c), name, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0) {
		ret = err_prefix(fd, "%s", name);
		free(name);
		return ret;
	}
	ret = fsutil_write_all(fd, v->refused, len);
	close(fd);
	if (ret < 0) {
		err_prefix(ret, "%s", name);
		free(name);
		return ret;
	}
	lines = count_lines(v->refused, len);
	/*
	 * Lines a read_file result holds: an eighth of the window (the cap of
	 * one tool result), each line with its number, less a margin.
	 */
	room = (size_t)((double)(fit->window / 8) / AGENT_TOKENS_PER_BYTE) / 10 * 9;
	per = room / (len / (lines ? lines : 1) + 8);
	if (per < 1)
		per = 1;
	head = utf8_cut(v->refused, len, ATTACH_HEAD);
	buf_addf(out, "[forgex: the person's message was too large for the model's context window "
		 "(%zu bytes, %zu lines, about %ld tokens), so it was saved as a file: .forgex/"
		 RUNDIR_CHATS "/%s/%s. Read it in parts with read_file, start_line and end_line, "
		 "about %zu lines at a time. It begins:]\n%.*s%s\n", len, lines, fit->message,
		 chat_id(c), name, per, (int)head, v->refused, head < len ? "\n[...]" : "");
	chat_event(c, "attach", json_pack("{s:s, s:I, s:I}", "path", name, "bytes", (json_int_t)len,
					  "lines", (json_int_t)lines));
	free(name);
	return 0;
}

int chat_cut_refused(struct chat *c, struct buf *out, size_t *left_out)
{
	struct chat_conv *v = chat_conv_of(c);
	const struct agent_fit *fit = &v->refused_fit;
	long rest = fit->least - fit->message, room = fit->window / 2 - rest;
	size_t len, max, h, t;

	if (!v->refused)
		return err_set(FX_ENOTFOUND, "no message was refused");
	/* half the window with the rest; when the rest takes that, what the limit leaves */
	if (room < fit->window / 16)
		room = (fit->limit - rest) / 2;
	if (room < 64)
		room = 64;
	len = strlen(v->refused);
	/* the estimate counts escapes (JSON) too: a margin for them */
	max = (size_t)((double)room / AGENT_TOKENS_PER_BYTE) / 10 * 8;
	if (max >= len)
		max = len;
	h = utf8_cut(v->refused, len, max / 4 * 3);
	t = utf8_start(v->refused, len, len - max / 4);
	if (t < h)
		t = h;
	buf_add(out, v->refused, h);
	if (t > h)
		buf_addf(out, "\n[... forgex: %zu bytes of the person's message were left out here "
			 "to fit the model's context window ...]\n", t - h);
	buf_add(out, v->refused + t, len - t);
	*left_out = t - h;
	return 0;
}

/*
 * Notes for the model
 */

void chat_conv_note(struct chat *c, const char *text)
{
	int fd = rundir_file_open(chat_dir(c), "notes.txt", O_WRONLY | O_CREAT | O_APPEND, 0600);
	struct buf line = BUF_INIT;

	if (fd < 0) {
		err_clear();
		return;
	}
	buf_addf(&line, "%s\n", text);
	if (fsutil_write_all(fd, line.buf, line.len) < 0)
		err_clear();
	close(fd);
	buf_release(&line);
}

void chat_conv_notes(struct chat *c, struct buf *out)
{
	int fd = rundir_file_open(chat_dir(c), "notes.txt", O_RDONLY, 0);
	struct buf b = BUF_INIT;
	const char *p, *nl;

	if (fd < 0) {
		err_clear();
		return;
	}
	if (fsutil_read_fd(&b, fd, NOTES_MAX) < 0)
		err_clear();
	close(fd);
	for (p = b.buf; p && *p; p = nl + 1) {
		nl = strchrnul(p, '\n');
		if (nl > p)
			buf_addf(out, "[forgex: %.*s]\n", (int)(nl - p), p);
		if (!*nl)
			break;
	}
	if (out->len)
		buf_addch(out, '\n');
	buf_release(&b);
}

void chat_conv_notes_sent(struct chat *c)
{
	char *path = xstrfmt("%s/notes.txt", chat_dir(c));

	if (unlink(path) < 0 && errno != ENOENT)
		err_clear();
	free(path);
}

static void note_paths(struct buf *note, const char *what, const struct strvec *v, int cut_at)
{
	size_t i;

	if (!v->nr)
		return;
	buf_addf(note, "; %s: ", what);
	for (i = 0; i < v->nr && i < NOTE_PATHS; i++) {
		const char *p = v->v[i];
		/* "PATH (the run's version: FILE)" and "PATH: why": the path alone */
		size_t n = cut_at ? strcspn(p, cut_at == ' ' ? " " : ":") : strlen(p);

		buf_addf(note, "%s%.*s", i ? ", " : "", (int)n, p);
	}
	if (v->nr > NOTE_PATHS)
		buf_addf(note, " and %zu more", v->nr - NOTE_PATHS);
}

void chat_undo_note(struct buf *note, const struct journal_outcome *o)
{
	size_t i;

	if (o->reverted.nr)
		note_paths(note, "these files are back as they were before it, so what was done "
			   "to them then is gone (read them again before relying on it)", &o->reverted,
			   0);
	else
		buf_addstr(note, "; no file had to be put back");
	note_paths(note, "kept as changed since", &o->kept, ' ');
	note_paths(note, "could not be put back", &o->failed, ':');
	/* one line: the notes file holds one note a line */
	for (i = 0; i < note->len; i++)
		if (note->buf[i] == '\n' || note->buf[i] == '\r')
			note->buf[i] = ' ';
}

/*
 * The undo stack: the session's turns (chat_undo()) and runs
 */

static void save_runs(struct chat *c)
{
	struct chat_conv *v = chat_conv_of(c);
	json_t *a = json_array();
	struct buf b = BUF_INIT;
	char *path = xstrfmt("%s/runs.json", chat_dir(c));
	size_t i;

	for (i = 0; i < v->runs_nr; i++)
		json_array_append_new(a, json_pack("{s:s, s:i, s:b}", "id", v->runs[i].id,
						   "after_turn", v->runs[i].after_turn, "undone",
						   v->runs[i].undone));
	jsonx_dump(&b, a, JSON_INDENT(2));
	buf_addch(&b, '\n');
	if (fsutil_write_atomic(path, b.buf, b.len, 0600) < 0)
		err_clear();
	json_decref(a);
	buf_release(&b);
	free(path);
}

static void load_runs(struct chat *c)
{
	struct chat_conv *v = chat_conv_of(c);
	json_t *a = NULL, *r;
	size_t i;

	if (v->runs_loaded)
		return;
	v->runs_loaded = 1;
	if (rundir_read_json(&a, chat_dir(c), "runs.json") < 0) {
		err_clear();
		return;
	}
	json_array_foreach(a, i, r) {
		if (!jsonx_str(r, "id"))
			continue;
		ALLOC_GROW(v->runs, v->runs_nr + 1, v->runs_alloc);
		v->runs[v->runs_nr].id = xstrdup(jsonx_str(r, "id"));
		v->runs[v->runs_nr].after_turn = (int)jsonx_int(r, "after_turn", 0);
		v->runs[v->runs_nr].undone = json_is_true(json_object_get(r, "undone"));
		v->runs_nr++;
	}
	json_decref(a);
}

void chat_conv_record_run(struct chat *c, const struct pipeline_result *res)
{
	struct chat_conv *v = chat_conv_of(c);
	size_t nr;

	/* a plan, a run rolled back or one that changed nothing: nothing to undo */
	if (!res->run_id || res->rolled_back || !res->diffstat || !*res->diffstat)
		return;
	load_runs(c);
	chat_turns(c, &nr);
	ALLOC_GROW(v->runs, v->runs_nr + 1, v->runs_alloc);
	v->runs[v->runs_nr].id = xstrdup(res->run_id);
	v->runs[v->runs_nr].after_turn = (int)nr;
	v->runs[v->runs_nr].undone = 0;
	v->runs_nr++;
	save_runs(c);
}

void chat_undone_init(struct chat_undone *u)
{
	memset(u, 0, sizeof(*u));
	journal_outcome_init(&u->o);
	strvec_init(&u->conflicts);
}

void chat_undone_release(struct chat_undone *u)
{
	free(u->run_id);
	journal_outcome_release(&u->o);
	strvec_clear(&u->conflicts);
	chat_undone_init(u);
}

static void copy_all(struct strvec *to, const struct strvec *from)
{
	size_t i;

	for (i = 0; i < from->nr; i++)
		strvec_push(to, from->v[i]);
}

static int undo_run(struct chat *c, struct chat_run *r, struct chat_undone *u)
{
	const struct chat_opts *o = chat_options(c);
	struct pipeline_undo_result pr;
	struct buf note = BUF_INIT;
	int ret;

	pipeline_undo_result_init(&pr);
	u->run_id = xstrdup(r->id);
	ret = pipeline_undo(&pr, o->cfg->workspace,
			    (uint64_t)o->cfg->checkpoints.max_file_bytes, r->id, 0, o->no_wait, o->on_wait,
			    o->event_data, o->cancel);
	copy_all(&u->conflicts, &pr.conflicts);
	if (ret < 0)
		goto out;
	copy_all(&u->o.reverted, &pr.reverted);
	copy_all(&u->o.kept, &pr.kept);
	copy_all(&u->o.failed, &pr.failed);
	r->undone = 1;
	save_runs(c);
	chat_event(c, "undo_run", json_pack("{s:s, s:o, s:o, s:o}", "run_id", r->id, "reverted",
					    jsonx_from_strvec(&u->o.reverted), "kept",
					    jsonx_from_strvec(&u->o.kept), "failed",
					    jsonx_from_strvec(&u->o.failed)));
	buf_addf(&note, "the person undid run %s (the pipeline run from this conversation with "
		 "/run or /go) with /undo", r->id);
	chat_undo_note(&note, &u->o);
	chat_conv_note(c, note.buf);
	ret = 0;
out:
	buf_release(&note);
	pipeline_undo_result_release(&pr);
	return ret;
}

int chat_undo_last(struct chat *c, struct chat_undone *u)
{
	struct chat_conv *v = chat_conv_of(c);
	const struct chat_turn *t;
	struct chat_run *run = NULL;
	size_t nr, i;
	int turn = 0;

	load_runs(c);
	t = chat_turns(c, &nr);
	for (i = nr; i-- > 0;)
		if (t[i].changed && !t[i].undone) {
			turn = t[i].n;
			break;
		}
	for (i = v->runs_nr; i-- > 0;)
		if (!v->runs[i].undone) {
			run = &v->runs[i];
			break;
		}
	/* a run made after the turn (none between) is the newer */
	if (run && run->after_turn >= turn)
		return undo_run(c, run, u);
	if (!turn)
		return err_set(FX_ENOTFOUND, "nothing to undo: no turn or run of this session "
			       "changed files that are not undone yet");
	return chat_undo(c, &u->turn, &u->o);
}
