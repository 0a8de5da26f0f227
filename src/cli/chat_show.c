/*
 * The session on the terminal, turn by turn: the model's text as it
 * streams, each tool call and its result, diffs, warnings, and how the
 * turn ended (see chat_front.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/jsonx.h"
#include "base/termsafe.h"
#include "cli/chat_front.h"
#include "cli/cli.h"
#include "cli/progress.h"
#include "cli/textwrap.h"

/* Bytes of a tool result's first line shown. */
#define RESULT_SHOWN 160

/* Text of the model or of a tool, control characters escaped, in `color`. */
void front_put_safe(struct front *f, const char *color, const char *s, size_t len, unsigned how)
{
	struct buf b = BUF_INIT;

	buf_add_termsafe(&b, s, len, how);
	fprintf(f->out, "%s%.*s%s", front_col(f, color), (int)b.len, b.buf, *front_col(f, color) ?
		front_col(f, C_RESET) : "");
	buf_release(&b);
}

/* End the model's open line before anything else is written. */
void front_close_line(struct front *f)
{
	if (f->md) {
		struct buf b = BUF_INIT;

		/* the message ends: what its Markdown held is shown */
		f->line_open = markdown_stream_finish(f->md, &b);
		fwrite(b.buf, 1, b.len, f->out);
		buf_release(&b);
		markdown_stream_free(f->md);
		f->md = NULL;
	}
	json_decref(f->command);
	f->command = NULL;
	if (f->held_len) {
		front_put_safe(f, "", f->held, f->held_len, TERMSAFE_MULTILINE);
		f->held_len = 0;
	}
	if (f->line_open) {
		fputc('\n', f->out);
		f->line_open = 0;
	}
}

void front_on_text(void *data, const char *text, size_t len)
{
	struct front *f = data;
	struct buf in = BUF_INIT;
	size_t keep;

	if (!len)
		return;
	progress_hold();
	if (f->color) {
		/* on a terminal with colour: Markdown, a block once it is complete */
		if (!f->md)
			f->md = markdown_stream_new();
		markdown_stream_feed(f->md, text, len, &in);
		fwrite(in.buf, 1, in.len, f->out);
		fflush(f->out);
		f->printed += len;
		f->last = text[len - 1];
		if (in.len)
			f->line_open = in.buf[in.len - 1] != '\n';
		/* as below; while a block is held the cursor is at a line's start */
		progress_release(f->line_open ? "" : NULL);
		buf_release(&in);
		return;
	}
	buf_add(&in, f->held, f->held_len);
	buf_add(&in, text, len);
	keep = termsafe_partial_tail(in.buf, in.len);
	memcpy(f->held, in.buf + in.len - keep, keep);
	f->held_len = keep;
	front_put_safe(f, "", in.buf, in.len - keep, TERMSAFE_MULTILINE);
	fflush(f->out);
	f->printed += len;
	f->last = text[len - 1];
	f->line_open = f->last != '\n';
	/* the spinner must not draw over a line of text being written */
	progress_release(f->line_open ? "" : NULL);
	buf_release(&in);
}

/* A short form of a call's arguments: what a person needs to see. */
static void call_summary(struct buf *out, const char *name, const json_t *args)
{
	const char *path = jsonx_str(args, "path");

	if (!strcmp(name, "run_command")) {
		const json_t *argv = json_object_get(args, "argv");
		struct strvec v = STRVEC_INIT;

		if (jsonx_to_strvec(&v, argv) == 0 && v.nr) {
			buf_addstr(out, "$ ");
			approval_format_argv(out, (const char *const *)v.v, v.nr);
		} else {
			buf_addstr(out, "run_command (no argv)");
		}
		if (jsonx_str(args, "cwd")) {
			buf_addstr(out, "   (in ");
			approval_add_visible(out, jsonx_str(args, "cwd"));
			buf_addch(out, ')');
		}
		strvec_clear(&v);
		err_clear();
		return;
	}
	buf_addstr(out, name);
	if (!strcmp(name, "move_file") && jsonx_str(args, "from")) {
		buf_addch(out, ' ');
		approval_add_visible(out, jsonx_str(args, "from"));
		buf_addstr(out, " -> ");
		approval_add_visible(out, jsonx_str(args, "to") ? jsonx_str(args, "to") : "?");
	} else if (!strcmp(name, "search") && jsonx_str(args, "pattern")) {
		buf_addch(out, ' ');
		approval_add_visible(out, jsonx_str(args, "pattern"));
		if (path) {
			buf_addstr(out, " in ");
			approval_add_visible(out, path);
		}
	} else if (path) {
		buf_addch(out, ' ');
		approval_add_visible(out, path);
	} else if (json_is_object(args) && json_object_size(args)) {
		struct buf j = BUF_INIT;

		jsonx_dump(&j, args, JSON_COMPACT);
		buf_addch(out, ' ');
		if (j.len > 200) {
			buf_setlen(&j, 200);
			buf_addstr(&j, "...");
		}
		approval_add_visible(out, j.buf);
		buf_release(&j);
	}
}

/* The first line of a result that says something (not the "$ argv" echo). */
static void result_line(struct buf *out, const char *name, const char *preview)
{
	const char *p = preview, *nl;

	if (!strcmp(name, "run_command")) {
		const char *e = strstr(preview, "exit_code: ");

		if (e) {
			int code = atoi(e + 11);

			buf_addf(out, "exit %d", code);
			if (strstr(preview, "timed_out: true"))
				buf_addstr(out, ", timed out");
			return;
		}
	}
	while (*p == '\n' || *p == ' ')
		p++;
	nl = strchr(p, '\n');
	buf_add(out, p, nl ? (size_t)(nl - p) : strlen(p));
	if (out->len > RESULT_SHOWN) {
		buf_setlen(out, RESULT_SHOWN);
		buf_addstr(out, "...");
	}
}

/*
 * A command's last lines (the "command" event's tail), dimmed, under its
 * call; how many came before them, and where the whole output is.
 */
static void show_tail(struct front *f, const json_t *cmd)
{
	const char *tail = jsonx_str(cmd, "tail"), *p;
	long long lines = jsonx_int(cmd, "output_lines", 0), shown = 0;

	if (!tail || !*tail)
		return;
	for (p = tail; *p; p++)
		shown += *p == '\n';
	if (lines > shown)
		fprintf(f->out, "    %s... %lld earlier line%s: /last or Ctrl-O shows the whole output%s\n",
			front_col(f, C_DIM), lines - shown, lines - shown == 1 ? "" : "s",
			front_col(f, C_RESET));
	for (p = tail; *p;) {
		size_t n = strcspn(p, "\n");

		fputs("    ", f->out);
		front_put_safe(f, C_DIM, p, n, TERMSAFE_MULTILINE);
		fputc('\n', f->out);
		p += n + (p[n] == '\n');
	}
}

static void show_diff(struct front *f, const char *diff)
{
	const char *p = diff;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		const char *c = "";

		if (!strncmp(p, "diff --git ", 11) || !strncmp(p, "index ", 6)) {
			/* git's header lines say nothing a person needs here */
			p += n + (nl != NULL);
			continue;
		}
		if (!strncmp(p, "+++", 3) || !strncmp(p, "---", 3) || !strncmp(p, "new file", 8) ||
		    !strncmp(p, "deleted file", 12))
			c = C_BOLD;
		else if (*p == '+')
			c = C_GREEN;
		else if (*p == '-')
			c = C_RED;
		else if (*p == '@')
			c = C_CYAN;
		fputs("    ", f->out);
		front_put_safe(f, c, p, n, 0);
		fputc('\n', f->out);
		p += n + (nl != NULL);
	}
}

void front_on_event(void *data, const json_t *ev)
{
	struct front *f = data;
	const char *type = jsonx_str(ev, "type"), *label = NULL;
	struct buf b = BUF_INIT;

	if (!type)
		return;
	progress_hold();
	if (!strcmp(type, "tool_call")) {
		front_close_line(f);
		call_summary(&b, jsonx_str(ev, "name") ? jsonx_str(ev, "name") : "?",
			     json_object_get(ev, "arguments"));
		fprintf(f->out, "%s*%s %s\n", front_col(f, C_CYAN), front_col(f, C_RESET), b.buf);
		label = b.buf;
	} else if (!strcmp(type, "command")) {
		/* its output is shown with the result that follows */
		json_decref(f->command);
		f->command = json_incref((json_t *)ev);
	} else if (!strcmp(type, "tool_result")) {
		const char *status = jsonx_str(ev, "status"), *name = jsonx_str(ev, "name");
		const char *preview = jsonx_str(ev, "preview");
		json_t *cmd = f->command;

		f->command = NULL;
		front_close_line(f);
		if (cmd && name && !strcmp(name, "run_command"))
			show_tail(f, cmd);
		json_decref(cmd);
		result_line(&b, name ? name : "", preview ? preview : "");
		if (status && !strcmp(status, "refused")) {
			fprintf(f->out, "  %sREFUSED%s ", front_col(f, C_RED C_BOLD), front_col(f, C_RESET));
			front_put_safe(f, C_RED, b.buf, b.len, 0);
		} else if (status && !strcmp(status, "failed")) {
			fprintf(f->out, "  %sFAILED%s ", front_col(f, C_RED C_BOLD), front_col(f, C_RESET));
			front_put_safe(f, C_RED, b.buf, b.len, 0);
		} else {
			int bad = name && !strcmp(name, "run_command") && strncmp(b.buf, "exit 0", 6) &&
				  !strncmp(b.buf, "exit ", 5);

			fprintf(f->out, "  %s%s%s ", front_col(f, bad ? C_YELLOW : C_DIM), bad ? "!" : "ok",
				front_col(f, C_RESET));
			/* a file's or a folder's text says nothing in one line */
			if (!name || (strcmp(name, "read_file") && strcmp(name, "list_dir")))
				front_put_safe(f, C_DIM, b.buf, b.len, 0);
			fprintf(f->out, "%s (%lld bytes)%s", front_col(f, C_DIM),
				(long long)jsonx_int(ev, "bytes", 0), front_col(f, C_RESET));
		}
		fputc('\n', f->out);
		label = "";
	} else if (!strcmp(type, "file_diff")) {
		const char *diff = jsonx_str(ev, "diff");

		if (diff)
			show_diff(f, diff);
		if (json_is_true(json_object_get(ev, "cut")))
			fprintf(f->out, "    [... the rest of the diff: /diff ...]\n");
	} else if (!strcmp(type, "context_compact")) {
		front_close_line(f);
		fprintf(f->out, "%s(context compacted: %lld messages summarised, %lld shortened)%s\n",
			front_col(f, C_DIM), (long long)jsonx_int(ev, "summarised", 0),
			(long long)jsonx_int(ev, "stubbed", 0), front_col(f, C_RESET));
	} else if (!strcmp(type, "warning")) {
		front_close_line(f);
		textwrap_printf(stderr, "forgex: warning: %s\n", jsonx_str(ev, "message") ?
				jsonx_str(ev, "message") : "");
	} else if (!strcmp(type, "hook") && json_is_true(json_object_get(ev, "blocked"))) {
		front_close_line(f);
		textwrap_printf(f->out, "  hook %s blocked: %s\n", jsonx_str(ev, "command") ?
				jsonx_str(ev, "command") : "", jsonx_str(ev, "reason") ?
				jsonx_str(ev, "reason") : "");
	} else if (!strcmp(type, "progress") && cli_verbose) {
		front_close_line(f);
		cli_printf(stderr, "forgex: %s\n", jsonx_str(ev, "message"));
	} else if (!strcmp(type, "progress") && !f->line_open &&
		   !strcmp(jsonx_str(ev, "kind") ? jsonx_str(ev, "kind") : "", "model")) {
		buf_addf(&b, "waiting for %s", chat_model(f->chat));
		label = b.buf;
	}
	fflush(f->out);
	progress_release(label);
	buf_release(&b);
}

void front_on_wait(void *data, const char *holder)
{
	struct front *f = data;

	progress_hold();
	front_close_line(f);
	textwrap_printf(stderr, "forgex: waiting for %s to finish (Ctrl-C stops waiting)\n", holder);
	progress_release(NULL);
}



/*
 * A message that cannot fit the model's window was not sent (nor kept):
 * what it can be instead, the person's choice.
 */
static void offer_way_out(struct front *f)
{
	struct agent_fit fit;
	struct buf line = BUF_INIT, instead = BUF_INIT;
	const char *msg;
	size_t left = 0;
	int ret;

	msg = chat_refused(f->chat, &fit);
	if (!msg)
		return;
	fprintf(f->out, "%sThe message was not sent%s (about %ld tokens; a request to this model "
		"may take %ld of its %ld). Send it another way:\n", front_col(f, C_YELLOW),
		front_col(f, C_RESET), fit.message, fit.limit, fit.window);
	fprintf(f->out, "  a  attach it as a file the model reads in parts\n"
		"  c  cut it to fit: its beginning and its end\n");
	fprintf(f->out, "  Enter: neither; nothing is sent (Up brings the message back to edit).\n"
		"/compact and /clear make room only for what the conversation takes, not for a "
		"message this large.\n");
	fflush(f->out);
	ret = lineedit_read(f->le, "a or c? ", &line);
	buf_trim(&line);
	if (ret != LINEEDIT_LINE || !line.len) {
		fprintf(f->out, "nothing sent\n");
	} else if (!strcmp(line.buf, "a")) {
		if (chat_attach_refused(f->chat, &instead) < 0)
			cli_print_error();
		else
			front_send(f, instead.buf);
	} else if (!strcmp(line.buf, "c")) {
		if (chat_cut_refused(f->chat, &instead, &left) < 0) {
			cli_print_error();
		} else {
			fprintf(f->out, "%s(sending it with %zu of its %zu bytes left out in the "
				"middle)%s\n", front_col(f, C_DIM), left, strlen(msg),
				front_col(f, C_RESET));
			front_send(f, instead.buf);
		}
	} else {
		cli_printf(f->out, "'%s' is none of them: nothing sent\n", line.buf);
	}
	buf_release(&line);
	buf_release(&instead);
}

void front_show_turn_end(struct front *f, const struct agent_result *r, int ret)
{
	size_t nr;
	const struct chat_turn *t = chat_turns(f->chat, &nr);

	if (ret < 0) {
		front_close_line(f);
		if (ret == FX_EINTR || front_interrupted)
			fprintf(f->out, "%s(interrupted)%s\n", front_col(f, C_YELLOW), front_col(f, C_RESET));
		else
			cli_print_error();
		if (ret == FX_ELIMIT)
			offer_way_out(f);
		return;
	}
	if (!f->printed && r->answer && *r->answer) {
		front_put_safe(f, "", r->answer, strlen(r->answer), TERMSAFE_MULTILINE);
		f->line_open = r->answer[strlen(r->answer) - 1] != '\n';
	}
	front_close_line(f);
	switch (r->status) {
	case AGENT_DONE:
	case AGENT_ANSWERED:
		break;
	case AGENT_INTERRUPTED:
		fprintf(f->out, "%s(interrupted: the conversation and the files stay as they are%s)%s\n",
			front_col(f, C_YELLOW), nr && t[nr - 1].changed ? "; /undo reverts this turn" : "",
			front_col(f, C_RESET));
		break;
	default:
		fputs(front_col(f, C_RED), f->out);
		cli_printf(f->out, "the turn ended: %s", r->error ? r->error
							   : agent_status_name(r->status));
		fprintf(f->out, "%s\n", front_col(f, C_RESET));
		/* the window: the way out, every time it happens */
		if (r->error_code == FX_ELIMIT && !r->refused)
			fprintf(f->out, "/compact sums up the conversation so far to make room; /clear "
				"starts it afresh (the files and /undo stay)\n");
		break;
	}
	if (r->refused) {
		offer_way_out(f);
		return;
	}
	if (nr && t[nr - 1].changed && r->status != AGENT_INTERRUPTED)
		fprintf(f->out, "%s(turn %d changed files: /diff %d shows them, /undo reverts them)%s\n",
			front_col(f, C_DIM), t[nr - 1].n, t[nr - 1].n, front_col(f, C_RESET));
}
