/*
 * forgex chat (and `forgex` alone on a terminal): the interactive session.
 * The conversation itself is src/pipeline/chat.c; this file is the
 * terminal: the line editor (cli/lineedit.h), what each event looks like,
 * the slash commands, and Ctrl-C.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/agent.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/termsafe.h"
#include "cli/approve_tty.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/lineedit.h"
#include "cli/progress.h"
#include "llm/provider.h"
#include "pipeline/chat.h"
#include "pipeline/pipeline.h"
#include "sandbox/approval.h"
#include "vcs/diff.h"

#define C_RESET "\033[m"
#define C_BOLD "\033[1m"
#define C_DIM "\033[2m"
#define C_RED "\033[31m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"
#define C_CYAN "\033[36m"

/* Bytes of a tool result's first line shown. */
#define RESULT_SHOWN 160

static volatile sig_atomic_t interrupted, leaving;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

/* SIGTERM, SIGHUP (the terminal went away): stop the turn, save, and leave. */
static void on_stop(int sig)
{
	(void)sig;
	interrupted = 1;
	leaving = 1;
}

static const char *const slash_commands[] = {
	"/run", "/plan", "/go", "/diff", "/undo", "/model", "/cost", "/compact", "/clear",
	"/resume", "/help", "/exit", "/quit", NULL,
};

struct front {
	struct config *cfg;
	struct chat *chat;
	struct chat_opts co;
	struct lineedit *le;
	int color;
	FILE *out;
	/* the model's text of this turn */
	size_t printed;
	char last;
	char held[4];
	size_t held_len;
	int line_open;		/* a line of text is open (no newline yet) */
	/* /plan, then /go */
	json_t *plan;
	char *plan_request;
	int quit;
	/* the session's approvals: asked on the terminal, `a` answers kept for the session */
	struct approver ap;
	struct approve_tty tty;
};

static const char *col(const struct front *f, const char *c)
{
	return f->color ? c : "";
}

/* Text of the model or of a tool, control characters escaped, in `color`. */
static void put_safe(struct front *f, const char *color, const char *s, size_t len, unsigned how)
{
	struct buf b = BUF_INIT;

	buf_add_termsafe(&b, s, len, how);
	fprintf(f->out, "%s%.*s%s", col(f, color), (int)b.len, b.buf, *col(f, color) ?
		col(f, C_RESET) : "");
	buf_release(&b);
}

/* End the model's open line before anything else is written. */
static void close_line(struct front *f)
{
	if (f->held_len) {
		put_safe(f, "", f->held, f->held_len, TERMSAFE_MULTILINE);
		f->held_len = 0;
	}
	if (f->line_open) {
		fputc('\n', f->out);
		f->line_open = 0;
	}
}

static void on_text(void *data, const char *text, size_t len)
{
	struct front *f = data;
	struct buf in = BUF_INIT;
	size_t keep;

	if (!len)
		return;
	progress_hold();
	buf_add(&in, f->held, f->held_len);
	buf_add(&in, text, len);
	keep = termsafe_partial_tail(in.buf, in.len);
	memcpy(f->held, in.buf + in.len - keep, keep);
	f->held_len = keep;
	put_safe(f, "", in.buf, in.len - keep, TERMSAFE_MULTILINE);
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
		put_safe(f, c, p, n, 0);
		fputc('\n', f->out);
		p += n + (nl != NULL);
	}
}

static void on_event(void *data, const json_t *ev)
{
	struct front *f = data;
	const char *type = jsonx_str(ev, "type"), *label = NULL;
	struct buf b = BUF_INIT;

	if (!type)
		return;
	progress_hold();
	if (!strcmp(type, "tool_call")) {
		close_line(f);
		call_summary(&b, jsonx_str(ev, "name") ? jsonx_str(ev, "name") : "?",
			     json_object_get(ev, "arguments"));
		fprintf(f->out, "%s*%s %s\n", col(f, C_CYAN), col(f, C_RESET), b.buf);
		label = b.buf;
	} else if (!strcmp(type, "tool_result")) {
		const char *status = jsonx_str(ev, "status"), *name = jsonx_str(ev, "name");
		const char *preview = jsonx_str(ev, "preview");

		close_line(f);
		result_line(&b, name ? name : "", preview ? preview : "");
		if (status && !strcmp(status, "refused")) {
			fprintf(f->out, "  %sREFUSED%s ", col(f, C_RED C_BOLD), col(f, C_RESET));
			put_safe(f, C_RED, b.buf, b.len, 0);
		} else if (status && !strcmp(status, "failed")) {
			fprintf(f->out, "  %sFAILED%s ", col(f, C_RED C_BOLD), col(f, C_RESET));
			put_safe(f, C_RED, b.buf, b.len, 0);
		} else {
			int bad = name && !strcmp(name, "run_command") && strncmp(b.buf, "exit 0", 6) &&
				  !strncmp(b.buf, "exit ", 5);

			fprintf(f->out, "  %s%s%s ", col(f, bad ? C_YELLOW : C_DIM), bad ? "!" : "ok",
				col(f, C_RESET));
			/* a file's or a folder's text says nothing in one line */
			if (!name || (strcmp(name, "read_file") && strcmp(name, "list_dir")))
				put_safe(f, C_DIM, b.buf, b.len, 0);
			fprintf(f->out, "%s (%lld bytes)%s", col(f, C_DIM),
				(long long)jsonx_int(ev, "bytes", 0), col(f, C_RESET));
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
		close_line(f);
		fprintf(f->out, "%s(context compacted: %lld messages summarised, %lld shortened)%s\n",
			col(f, C_DIM), (long long)jsonx_int(ev, "summarised", 0),
			(long long)jsonx_int(ev, "stubbed", 0), col(f, C_RESET));
	} else if (!strcmp(type, "warning")) {
		close_line(f);
		cli_printf(stderr, "forgex: warning: %s\n", jsonx_str(ev, "message") ?
			   jsonx_str(ev, "message") : "");
	} else if (!strcmp(type, "hook") && json_is_true(json_object_get(ev, "blocked"))) {
		close_line(f);
		cli_printf(f->out, "  hook %s blocked: %s\n", jsonx_str(ev, "command") ?
			   jsonx_str(ev, "command") : "", jsonx_str(ev, "reason") ?
			   jsonx_str(ev, "reason") : "");
	} else if (!strcmp(type, "progress") && cli_verbose) {
		close_line(f);
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

static void on_wait(void *data, const char *holder)
{
	struct front *f = data;

	progress_hold();
	close_line(f);
	cli_printf(stderr, "forgex: waiting for %s to finish (Ctrl-C stops waiting)\n", holder);
	progress_release(NULL);
}

/*
 * Turns
 */

static void show_turn_end(struct front *f, const struct agent_result *r, int ret)
{
	size_t nr;
	const struct chat_turn *t = chat_turns(f->chat, &nr);

	if (ret < 0) {
		close_line(f);
		if (ret == FX_EINTR || interrupted)
			fprintf(f->out, "%s(interrupted)%s\n", col(f, C_YELLOW), col(f, C_RESET));
		else
			cli_print_error();
		return;
	}
	if (!f->printed && r->answer && *r->answer) {
		put_safe(f, "", r->answer, strlen(r->answer), TERMSAFE_MULTILINE);
		f->line_open = r->answer[strlen(r->answer) - 1] != '\n';
	}
	close_line(f);
	switch (r->status) {
	case AGENT_DONE:
	case AGENT_ANSWERED:
		break;
	case AGENT_INTERRUPTED:
		fprintf(f->out, "%s(interrupted: the conversation and the files stay as they are%s)%s\n",
			col(f, C_YELLOW), nr && t[nr - 1].changed ? "; /undo reverts this turn" : "",
			col(f, C_RESET));
		break;
	default:
		fputs(col(f, C_RED), f->out);
		cli_printf(f->out, "the turn ended: %s", r->error ? r->error
							   : agent_status_name(r->status));
		fprintf(f->out, "%s\n", col(f, C_RESET));
		break;
	}
	if (nr && t[nr - 1].changed && r->status != AGENT_INTERRUPTED)
		fprintf(f->out, "%s(turn %d changed files: /diff %d shows them, /undo reverts them)%s\n",
			col(f, C_DIM), t[nr - 1].n, t[nr - 1].n, col(f, C_RESET));
}

static void turn(struct front *f, const char *message)
{
	struct agent_result r = AGENT_RESULT_INIT;
	size_t i;
	int ret;

	f->printed = 0;
	f->line_open = 0;
	f->held_len = 0;
	interrupted = 0;
	/* a spinner while nothing else is said: on a terminal, not with -q or -v */
	if (!cli_quiet && !cli_verbose && isatty(1))
		progress_start(stderr);
	ret = chat_turn(f->chat, message, &r);
	if (progress_active())
		progress_stop();
	show_turn_end(f, &r, ret);
	for (i = 0; i < r.warnings.nr; i++)
		cli_printf(stderr, "forgex: warning: %s\n", r.warnings.v[i]);
	agent_result_release(&r);
	interrupted = 0;
	fflush(f->out);
}

/*
 * Slash commands
 */

/* /run, /plan and /go: the pipeline, with its usual progress, gate and rollback. */
static void pipeline(struct front *f, const char *action, const char *request,
		     const json_t *plan)
{
	struct pipeline_opts po = PIPELINE_OPTS_INIT;
	struct pipeline_result res = PIPELINE_RESULT_INIT;
	struct sigaction sa, old;
	int baseline = f->cfg->pipeline.baseline, plan_only = !strcmp(action, "plan");

	po.request = request;
	po.plan_only = plan_only;
	po.plan = plan;
	po.force_provider = f->co.force_provider;
	po.no_wait = f->co.no_wait;
	po.approver = &f->ap;	/* the session's `a` answers hold in its runs */
	if (plan_only)
		f->cfg->pipeline.baseline = 0;
	sigaction(SIGINT, NULL, &old);
	cli_pipeline_keep(plan_only ? "plan" : "run", f->cfg, &po, 0, &res);
	/* cli_pipeline() put back the handlers it found: ours */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	interrupted = 0;
	f->cfg->pipeline.baseline = baseline;
	/* the run's model calls, as the pipeline counted them, and its ending */
	chat_record_run(f->chat, action, &res);
	if (plan_only && res.outcome == PIPELINE_PLANNED && res.plan) {
		json_decref(f->plan);
		f->plan = json_incref(res.plan);
		free(f->plan_request);
		f->plan_request = xstrdup(request);
		fprintf(f->out, "%s/go runs the pipeline on this plan; /plan again makes another.%s\n",
			col(f, C_DIM), col(f, C_RESET));
	} else if (!plan_only) {
		json_decref(f->plan);
		f->plan = NULL;
	}
	pipeline_result_release(&res);
	fflush(f->out);
}

static void cmd_help_text(struct front *f)
{
	fprintf(f->out,
		"Type a message to talk to the model; it can read, edit and run commands in\n"
		"this project (each turn is checkpointed). Commands:\n"
		"  /run [REQUEST]        the full pipeline (plan, build, test, review, gate,\n"
		"                        rollback) on REQUEST, or on the conversation so far\n"
		"  /plan [REQUEST]       the Architect's plan only; then /go\n"
		"  /go                   run the pipeline on that plan, without planning again\n"
		"  /diff [TURN]          what changed since the session started (or since TURN)\n"
		"  /undo                 revert the last turn's changes (again: the one before)\n"
		"  /model [ROLE] NAME    the model of the session (or of a pipeline role:\n"
		"                        architect, builder, expert_coder, supervisor)\n"
		"  /cost                 tokens and money so far, per model\n"
		"  /compact              summarise the conversation into a short context\n"
		"  /clear                forget the conversation (files and /undo stay)\n"
		"  /resume [ID]          go on with an earlier session of this project\n"
		"  /help, /exit          this text; leave (also Ctrl-D)\n"
		"Keys: arrows, Home/End, Ctrl-R searches the history, Tab completes commands\n"
		"and paths, a trailing \\ or Alt-Enter continues on a new line. Ctrl-C stops\n"
		"the model or the command and comes back here; twice at the prompt leaves.\n");
}

static void cmd_undo_turn(struct front *f)
{
	struct journal_outcome o;
	size_t i;
	int t = 0, ret;

	journal_outcome_init(&o);
	ret = chat_undo(f->chat, &t, &o);
	if (ret == FX_ENOTFOUND) {
		fprintf(f->out, "nothing to undo: no turn of this session changed files (that is not "
			"undone yet)\n");
	} else if (ret < 0) {
		cli_print_error();
	} else {
		fprintf(f->out, "undid turn %d: %zu path%s put back\n", t, o.reverted.nr,
			o.reverted.nr == 1 ? "" : "s");
		for (i = 0; i < o.reverted.nr; i++)
			cli_printf(f->out, "  %s\n", o.reverted.v[i]);
		for (i = 0; i < o.kept.nr; i++) {
			/* the journal's words are a run's; here it was a turn */
			const char *run = strstr(o.kept.v[i], "(the run's version: ");

			if (run)
				cli_printf(f->out, "  kept, changed since: %.*s(the turn's version: %s\n",
					   (int)(run - o.kept.v[i]), o.kept.v[i], run + 20);
			else
				cli_printf(f->out, "  kept, changed since: %s\n", o.kept.v[i]);
		}
		for (i = 0; i < o.failed.nr; i++) {
			fprintf(f->out, "  %sFAILED%s ", col(f, C_RED), col(f, C_RESET));
			cli_printf(f->out, "%s\n", o.failed.v[i]);
		}
	}
	journal_outcome_release(&o);
}

static void cmd_diff_turn(struct front *f, const char *arg)
{
	struct buf d = BUF_INIT;
	int since = 0, ret;
	unsigned flags = VCS_DIFF_TERMSAFE | (f->color ? VCS_DIFF_COLOR : 0);

	if (arg && *arg) {
		char *end;
		long n = strtol(arg, &end, 10);

		if (*end || n < 1 || n > 1000000) {
			fprintf(f->out, "/diff takes a turn number (1, 2, ...), not '%s'\n", arg);
			return;
		}
		since = (int)n;
	}
	ret = chat_diff(f->chat, since, flags, &d);
	if (ret < 0)
		cli_print_error();
	else if (!d.len)
		fprintf(f->out, "no changes since %s\n", since ? "that turn" : "the session started");
	else
		fwrite(d.buf, 1, d.len, f->out);
	buf_release(&d);
}

static void cmd_model(struct front *f, const char *arg)
{
	char role[32] = "", name[256] = "";
	int r;

	if (!arg || !*arg) {
		fprintf(f->out, "chat: %s\n", chat_model(f->chat));
		for (r = 0; r < ROLE__COUNT; r++) {
			const struct agent_config *ac = config_agent(f->cfg, (enum agent_role)r);
			const struct provider_config *pc = config_provider(f->cfg, ac->provider);
			const char *model = ac->model && *ac->model ? ac->model
					    : pc && pc->model && *pc->model ? pc->model : "(none set)";

			cli_printf(f->out, "%s: %s (provider %s)\n", config_role_name((enum agent_role)r),
				   model, ac->provider ? ac->provider : "default");
		}
		{
			const struct agent_config *ac = config_agent(f->cfg, ROLE_BUILDER);
			const struct provider_config *pc = config_provider(f->cfg, ac->provider);
			struct strvec models = STRVEC_INIT;
			struct buf line = BUF_INIT;
			size_t i;

			if (pc && provider_list_models(&models, pc, 3000) == 0 && models.nr) {
				for (i = 0; i < models.nr && i < 40; i++)
					buf_addf(&line, "%s%s", i ? ", " : "", models.v[i]);
				if (models.nr > 40)
					buf_addf(&line, ", ... (%zu in all)", models.nr);
				cli_printf(f->out, "the server of provider %s offers: %s\n",
					   ac->provider ? ac->provider : "default", line.buf);
			}
			err_clear();
			strvec_clear(&models);
			buf_release(&line);
		}
		return;
	}
	if (sscanf(arg, "%31s %255s", role, name) == 2) {
		if (chat_set_model(f->chat, role, name) < 0)
			cli_print_error();
		else
			cli_printf(f->out, "%s now uses %s\n", role, name);
		return;
	}
	chat_set_model(f->chat, NULL, role);
	cli_printf(f->out, "the session now uses %s\n", role);
}

static int resume_session(struct front *f, const char *id);

static void cmd_resume_pick(struct front *f, const char *arg)
{
	struct strvec ids = STRVEC_INIT;
	struct buf line = BUF_INIT;
	size_t i, from;
	int ret;

	if (arg && *arg) {
		resume_session(f, arg);
		return;
	}
	if (rundir_list_kind(&ids, f->cfg->workspace, RUNDIR_CHATS) < 0) {
		cli_print_error();
		return;
	}
	from = ids.nr > 20 ? ids.nr - 20 : 0;
	for (i = from; i < ids.nr; i++) {
		char *dir = rundir_dir_kind(f->cfg->workspace, RUNDIR_CHATS, ids.v[i]);
		json_t *st = NULL;
		const char *first = "";

		if (!rundir_read_json(&st, dir, "state.json"))
			first = json_string_value(json_array_get(json_object_get(st, "said"), 0));
		err_clear();
		cli_printf(f->out, "%3zu  %s%s  %.60s\n", i - from + 1, ids.v[i],
			   !strcmp(ids.v[i], chat_id(f->chat)) ? " (this one)" :
			   !chat_session_mine(f->cfg->workspace, ids.v[i]) ?
			   " (not started by you here)" : "", first ? first : "");
		json_decref(st);
		free(dir);
	}
	if (ids.nr == from) {
		fprintf(f->out, "no sessions yet\n");
		goto out;
	}
	ret = lineedit_read(f->le, "session (number or id; Enter: none): ", &line);
	if (ret == LINEEDIT_LINE && line.len) {
		char *end;
		long n = strtol(line.buf, &end, 10);

		if (!*end && n >= 1 && (size_t)n <= ids.nr - from)
			resume_session(f, ids.v[from + (size_t)n - 1]);
		else
			resume_session(f, line.buf);
	}
out:
	buf_release(&line);
	strvec_clear(&ids);
}

static void slash(struct front *f, const char *line)
{
	const char *sp = strchr(line, ' ');
	size_t n = sp ? (size_t)(sp - line) : strlen(line);
	const char *arg = sp ? sp + 1 : "";
	char *cmd = xstrndup(line, n);

	while (*arg == ' ')
		arg++;
	if (!strcmp(cmd, "/exit") || !strcmp(cmd, "/quit")) {
		f->quit = 1;
	} else if (!strcmp(cmd, "/help") || !strcmp(cmd, "/?")) {
		cmd_help_text(f);
	} else if (!strcmp(cmd, "/run") || !strcmp(cmd, "/plan")) {
		struct buf req = BUF_INIT;

		if (*arg)
			buf_addstr(&req, arg);
		else
			chat_request_text(f->chat, &req);
		if (!req.len)
			fprintf(f->out, "nothing to %s yet: say what to do first, or %s REQUEST\n",
				cmd + 1, cmd);
		else
			pipeline(f, cmd + 1, req.buf, NULL);
		buf_release(&req);
	} else if (!strcmp(cmd, "/go")) {
		if (!f->plan)
			fprintf(f->out, "no plan to run: /plan [REQUEST] makes one\n");
		else
			pipeline(f, "go", f->plan_request, f->plan);
	} else if (!strcmp(cmd, "/diff")) {
		cmd_diff_turn(f, arg);
	} else if (!strcmp(cmd, "/undo")) {
		cmd_undo_turn(f);
	} else if (!strcmp(cmd, "/model")) {
		cmd_model(f, arg);
	} else if (!strcmp(cmd, "/cost")) {
		struct buf b = BUF_INIT;

		chat_cost(f->chat, &b);
		cli_printf(f->out, "%s", b.buf);
		buf_release(&b);
	} else if (!strcmp(cmd, "/compact")) {
		struct agent_result r = AGENT_RESULT_INIT;
		size_t before = chat_messages(f->chat);

		interrupted = 0;
		if (chat_compact(f->chat, &r) < 0)
			cli_print_error();
		else
			fprintf(f->out, "compacted: %zu messages, now %zu\n", before,
				chat_messages(f->chat));
		agent_result_release(&r);
	} else if (!strcmp(cmd, "/clear")) {
		chat_clear(f->chat);
		fprintf(f->out, "conversation cleared (the files, the turns and /undo stay)\n");
	} else if (!strcmp(cmd, "/resume")) {
		cmd_resume_pick(f, arg);
	} else {
		const char *const *c, *like = NULL;
		size_t best = 1, k;

		/* the command that shares the longest start with what was typed */
		for (c = slash_commands; *c; c++) {
			for (k = 0; (*c)[k] && (*c)[k] == cmd[k]; k++)
				;
			if (k > best) {
				best = k;
				like = *c;
			}
		}
		if (like)
			cli_printf(f->out, "unknown command %s (did you mean %s?); /help lists them\n",
				   cmd, like);
		else
			cli_printf(f->out, "unknown command %s; /help lists them\n", cmd);
	}
	free(cmd);
	fflush(f->out);
}

/*
 * The session
 */

static void banner(struct front *f, int resumed)
{
	size_t nr;

	chat_turns(f->chat, &nr);
	fprintf(f->out, "%sforgex%s ", col(f, C_BOLD), col(f, C_RESET));
	cli_printf(f->out, "session %s%s: model %s, permissions %s.\n", chat_id(f->chat),
		   resumed ? " (resumed)" : "", chat_model(f->chat),
		   f->cfg->permissions.mode ? f->cfg->permissions.mode : "ask");
	if (resumed) {
		const struct llm_request *conv = chat_conversation(f->chat);
		size_t said = conv->messages_nr;

		/* the person's and the model's, not the system prompt */
		if (said && conv->messages[0].role == LLM_SYSTEM)
			said--;
		fprintf(f->out, "%zu earlier message%s and %zu turn%s in the conversation.\n", said,
			said == 1 ? "" : "s", nr, nr == 1 ? "" : "s");
	}
	fprintf(f->out, "%s/help for commands; Ctrl-C stops a turn; Ctrl-D leaves.%s\n",
		col(f, C_DIM), col(f, C_RESET));
	fflush(f->out);
}

static int resume_session(struct front *f, const char *id)
{
	struct chat *c = NULL;
	int ret;

	f->co.resume = id;
	ret = chat_open(&c, &f->co);
	f->co.resume = NULL;
	if (ret < 0) {
		cli_print_error();
		return ret;
	}
	chat_close(f->chat);
	f->chat = c;
	json_decref(f->plan);
	f->plan = NULL;
	banner(f, 1);
	return 0;
}

int cmd_chat(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "continue", no_argument, NULL, 'C' },
		{ "resume", required_argument, NULL, 'R' },
		{ "yes", no_argument, NULL, 'Y' },
		{ "ask", no_argument, NULL, 'A' },
		{ "safe", no_argument, NULL, 'S' },
		{ "no-wait", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct lineedit_opts lo = LINEEDIT_OPTS_INIT;
	struct front f;
	struct config cfg;
	struct buf first = BUF_INIT, line = BUF_INIT;
	struct sigaction sa, old_int;
	const char *mode = NULL, *resume = NULL;
	char *history = NULL;
	int c, ret, status = EXIT_OK, interrupts = 0, i;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'C':
			resume = "last";
			break;
		case 'R':
			resume = optarg;
			break;
		case 'Y':
			mode = "auto";
			break;
		case 'A':
			mode = "ask";
			break;
		case 'S':
			mode = "safe";
			break;
		case 'n':
			break;
		case 'h':
			return cli_help("chat");
		default:
			return cli_usage_error("chat", "unknown option '%s'", argv[optind - 1]);
		}
	}
	for (i = optind; i < argc; i++) {
		if (first.len)
			buf_addch(&first, ' ');
		buf_addstr(&first, argv[i]);
	}
	if (cli_load_config(&cfg) != 0) {
		buf_release(&first);
		return EXIT_USAGE;
	}
	if (mode && config_set(&cfg, "permissions.mode", mode, CFG_FLAG) < 0) {
		cli_print_error();
		config_release(&cfg);
		buf_release(&first);
		return EXIT_USAGE;
	}
	if ((ret = cli_check_providers(&cfg))) {
		config_release(&cfg);
		buf_release(&first);
		return ret;
	}
	memset(&f, 0, sizeof(f));
	f.cfg = &cfg;
	f.out = stdout;
	f.color = log_color_for_fd(1);
	f.co = (struct chat_opts)CHAT_OPTS_INIT;
	f.co.cfg = &cfg;
	f.co.resume = resume;
	f.co.cancel = &interrupted;
	f.co.on_event = on_event;
	f.co.event_data = &f;
	f.co.on_text = on_text;
	f.co.text_data = &f;
	f.co.on_wait = on_wait;
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--no-wait"))
			f.co.no_wait = 1;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_int);
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	/*
	 * Questions on the terminal; after one the spinner starts its count
	 * again. SIGTERM or SIGHUP at one is a no (Ctrl-C there is one anyway).
	 */
	f.tty.label = "";
	approver_init(&f.ap, approve_tty_ask, &f.tty, &interrupted);
	f.co.approver = &f.ap;
	ret = chat_open(&f.chat, &f.co);
	f.co.resume = NULL;
	if (ret < 0) {
		cli_print_error();
		status = ret == FX_ENOTFOUND || ret == FX_EINVAL ? EXIT_USAGE : EXIT_FAIL;
		goto out;
	}
	history = xstrfmt("%s/.forgex/history", cfg.workspace);
	lo.in_fd = 0;
	lo.out_fd = 1;
	lo.history_path = history;
	lo.commands = slash_commands;
	lo.workspace = cfg.workspace;
	lo.cancel = &interrupted;
	if (lineedit_open(&f.le, &lo) < 0) {
		cli_print_error();
		status = EXIT_FAIL;
		goto out;
	}
	banner(&f, resume != NULL);
	if (first.len)
		turn(&f, first.buf);
	while (!f.quit && !leaving) {
		char prompt[64];

		snprintf(prompt, sizeof(prompt), "%s%s>%s ", f.color ? "\1" C_BOLD "\1" : "",
			 "forgex", f.color ? "\1" C_RESET "\1" : "");
		interrupted = 0;
		fflush(f.out);
		ret = lineedit_read(f.le, prompt, &line);
		if (ret < 0) {
			cli_print_error();
			status = EXIT_FAIL;
			break;
		}
		if (ret == LINEEDIT_EOF)
			break;
		if (ret == LINEEDIT_INTERRUPT && leaving)
			break;
		if (ret == LINEEDIT_INTERRUPT) {
			/* Ctrl-C that drops a typed line only drops it; twice at an empty one leaves */
			if (lineedit_dropped(f.le)) {
				interrupts = 0;
				continue;
			}
			if (++interrupts >= 2)
				break;
			fprintf(f.out, "%s(Ctrl-C again, or Ctrl-D, leaves)%s\n", col(&f, C_DIM),
				col(&f, C_RESET));
			fflush(f.out);
			continue;
		}
		interrupts = 0;
		buf_trim(&line);
		if (!line.len)
			continue;
		/* a script piped in is not what the person typed */
		if (lineedit_is_tty(f.le))
			lineedit_history_add(f.le, line.buf);
		if (line.buf[0] == '/' && line.buf[1] != '/')
			slash(&f, line.buf);
		else
			turn(&f, line.buf[0] == '/' ? line.buf + 1 : line.buf);
	}
	if (f.chat && !cli_quiet)
		cli_printf(stderr, "forgex: session %s saved; 'forgex chat --continue' picks it up\n",
			   chat_id(f.chat));
out:
	lineedit_close(f.le);
	/* leaving: an index still being built for the map is not waited for */
	interrupted = 1;
	chat_close(f.chat);
	approver_release(&f.ap);
	sigaction(SIGINT, &old_int, NULL);
	json_decref(f.plan);
	free(f.plan_request);
	free(history);
	buf_release(&line);
	buf_release(&first);
	config_release(&cfg);
	return status;
}
