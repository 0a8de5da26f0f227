/*
 * The session's slash commands: /run, /plan and /go (the pipeline from
 * inside the conversation), /diff, /undo, /model, /cost, /compact, /clear,
 * /resume, /permissions, /help and /exit (see chat_front.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/termsafe.h"
#include "cli/chat_front.h"
#include "cli/chat_sess.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "llm/provider.h"
#include "pipeline/pipeline.h"
#include "pipeline/recorder.h"
#include "pipeline/rundir.h"
#include "vcs/diff.h"

const char *const front_slash_commands[] = {
	"/run", "/plan", "/go", "/diff", "/undo", "/model", "/cost", "/compact", "/clear",
	"/resume", "/permissions", "/last", "/help", "/exit", "/quit", NULL,
};

/* /run, /plan and /go: the pipeline, with its usual progress, gate and rollback. */
static void pipeline(struct front *f, const char *action, const char *request,
		     const json_t *plan)
{
	struct pipeline_opts po = PIPELINE_OPTS_INIT;
	struct pipeline_result res = PIPELINE_RESULT_INIT;
	struct buf typed = BUF_INIT;
	int baseline = f->cfg->pipeline.baseline, plan_only = !strcmp(action, "plan");

	po.request = request;
	po.plan_only = plan_only;
	po.plan = plan;
	po.force_provider = f->co.force_provider;
	po.no_wait = f->co.no_wait;
	po.approver = &f->ap;	/* the session's `a` answers hold in its runs */
	if (plan_only)
		f->cfg->pipeline.baseline = 0;
	/* "/run", "/plan", "/go": the ending names the session's /undo, not forgex undo */
	{
		char *cmd = xstrfmt("/%s", action);

		/* Esc stops the run as it stops a turn; what is typed meanwhile waits for the prompt */
		cli_pipeline_keep(cmd, f->cfg, &po, 0, &res, lineedit_is_tty(f->le) ? &typed : NULL);
		free(cmd);
	}
	lineedit_prefill(f->le, typed.buf);
	buf_release(&typed);
	/* cli_pipeline() put back the handlers it found: ours */
	front_catch_signals(NULL);
	front_interrupted = 0;
	f->cfg->pipeline.baseline = baseline;
	/* the run's model calls, as the pipeline counted them, and its ending */
	chat_record_run(f->chat, action, &res);
	if (plan_only && res.outcome == PIPELINE_PLANNED && res.plan) {
		json_decref(f->plan);
		f->plan = json_incref(res.plan);
		free(f->plan_request);
		f->plan_request = xstrdup(request);
		fprintf(f->out, "%s/go runs the pipeline on this plan; /plan again makes another.%s\n",
			front_col(f, C_DIM), front_col(f, C_RESET));
	} else if (!plan_only) {
		json_decref(f->plan);
		f->plan = NULL;
	}
	pipeline_result_release(&res);
	fflush(f->out);
}

/*
 * /last (and Ctrl-O at the prompt): the whole output of the session's last
 * command, as the recorder kept it (output/SEQ.txt of the session's folder,
 * named by its "command" event), made safe for the terminal.
 */
static void cmd_last_output(struct front *f)
{
	json_t *events = NULL, *ev, *last = NULL;
	struct strvec argv = STRVEC_INIT;
	struct buf line = BUF_INIT, out = BUF_INIT;
	const char *name;
	size_t i;
	int fd;

	if (rundir_load_events(&events, chat_dir(f->chat)) < 0) {
		cli_print_error();
		return;
	}
	json_array_foreach(events, i, ev)
		if (jsonx_str(ev, "type") && !strcmp(jsonx_str(ev, "type"), "command") &&
		    !json_is_true(json_object_get(ev, "refused")))
			last = ev;
	if (!last) {
		fprintf(f->out, "no command has run in this session yet\n");
		goto out;
	}
	if (jsonx_to_strvec(&argv, json_object_get(last, "argv")) == 0 && argv.nr)
		approval_format_argv(&line, (const char *const *)argv.v, argv.nr);
	err_clear();
	buf_addf(&line, "   (exit %lld%s", (long long)jsonx_int(last, "exit_code", 0),
		 json_is_true(json_object_get(last, "timed_out")) ? ", timed out" : "");
	name = jsonx_str(last, "output");
	if (name)
		buf_addf(&line, ", %lld line%s)", (long long)jsonx_int(last, "output_lines", 0),
			 jsonx_int(last, "output_lines", 0) == 1 ? "" : "s");
	else
		buf_addstr(&line, ", no output)");
	fprintf(f->out, "%s$ ", front_col(f, C_DIM));
	front_put_safe(f, "", line.buf, line.len, 0);
	fprintf(f->out, "%s\n", front_col(f, C_RESET));
	if (!name)
		goto out;
	fd = recorder_output_open(chat_dir(f->chat), name);
	if (fd < 0 || fsutil_read_fd(&out, fd, RECORDER_OUTPUT_MAX + 4096) < 0) {
		cli_print_error();
	} else {
		front_put_safe(f, "", out.buf, out.len, TERMSAFE_MULTILINE);
		if (out.len && out.buf[out.len - 1] != '\n')
			fputc('\n', f->out);
	}
	if (fd >= 0)
		close(fd);
out:
	strvec_clear(&argv);
	buf_release(&line);
	buf_release(&out);
	json_decref(events);
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
		"  /undo                 revert the last turn's or /run's changes (again: the one\n"
		"                        before); the model is told what was reverted\n"
		"  /model [ROLE] NAME    the model of the session (or of a pipeline role:\n"
		"                        architect, builder, expert_coder, supervisor)\n"
		"  /cost                 tokens and money so far, per model\n"
		"  /compact              summarise the conversation into a short context\n"
		"  /clear                forget the conversation (files and /undo stay)\n"
		"  /resume [ID]          go on with an earlier session of this project\n"
		"  /permissions [MODE]   ask, auto or safe: the approvals for this session\n"
		"                        (the sandbox stays as configured)\n"
		"  /last                 the whole output of the last command (also Ctrl-O)\n"
		"  /help, /exit          this text; leave (also Ctrl-D)\n"
		"Keys: arrows, Home/End, Ctrl-R searches the history, Tab completes commands\n"
		"and paths, a trailing \\ or Alt-Enter continues on a new line. Ctrl-C or Esc\n"
		"stops the model or the command and comes back here (what you type meanwhile\n"
		"waits for the prompt); Esc Esc at an empty prompt brings back your last\n"
		"message; Ctrl-C twice at the prompt leaves.\n"
		"@path in a message attaches that file of the project (Tab completes it).\n");
}

static void cmd_undo_turn(struct front *f)
{
	struct chat_undone u;
	size_t i;
	int ret;

	chat_undone_init(&u);
	ret = chat_undo_last(f->chat, &u);
	if (ret == FX_ENOTFOUND) {
		fprintf(f->out, "nothing to undo: no turn or run of this session changed files (that "
			"is not undone yet)\n");
	} else if (ret < 0) {
		cli_print_error();
		for (i = 0; i < u.conflicts.nr; i++)
			cli_printf(f->out, "  changed since the run ended: %s\n", u.conflicts.v[i]);
		if (u.conflicts.nr)
			cli_printf(f->out, "'forgex undo %s --force' reverts them anyway, saving your "
				   "versions\n", u.run_id);
	} else {
		if (u.run_id)
			cli_printf(f->out, "undid run %s: %zu path%s put back as before the run\n",
				   u.run_id, u.o.reverted.nr, u.o.reverted.nr == 1 ? "" : "s");
		else
			fprintf(f->out, "undid turn %d: %zu path%s put back\n", u.turn,
				u.o.reverted.nr, u.o.reverted.nr == 1 ? "" : "s");
		for (i = 0; i < u.o.reverted.nr; i++)
			cli_printf(f->out, "  %s\n", u.o.reverted.v[i]);
		for (i = 0; i < u.o.kept.nr; i++) {
			/* the journal's words are a run's; for a turn it was the turn */
			const char *run = strstr(u.o.kept.v[i], "(the run's version: ");

			if (run && !u.run_id)
				cli_printf(f->out, "  kept, changed since: %.*s(the turn's version: %s\n",
					   (int)(run - u.o.kept.v[i]), u.o.kept.v[i], run + 20);
			else
				cli_printf(f->out, "  kept, changed since: %s\n", u.o.kept.v[i]);
		}
		for (i = 0; i < u.o.failed.nr; i++) {
			fprintf(f->out, "  %sFAILED%s ", front_col(f, C_RED), front_col(f, C_RESET));
			cli_printf(f->out, "%s\n", u.o.failed.v[i]);
		}
		fprintf(f->out, "%s(the model is told what was undone with your next message)%s\n",
			front_col(f, C_DIM), front_col(f, C_RESET));
	}
	chat_undone_release(&u);
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

/*
 * /model NAME with the server's list at hand: a name it does not offer is
 * set all the same (a server may take more than it lists), with a warning.
 * Said nothing when the list cannot be had.
 */
static void warn_unlisted(struct front *f, const char *role, const char *name)
{
	int r = role ? config_role_from_name(role) : (int)ROLE_BUILDER;
	const struct agent_config *ac;
	const struct provider_config *pc;
	struct strvec models = STRVEC_INIT;

	if (f->co.force_provider || r < 0)
		return;
	ac = config_agent(f->cfg, (enum agent_role)r);
	pc = config_provider(f->cfg, ac->provider);
	if (pc && provider_list_models(&models, pc, 2000) == 0 && models.nr &&
	    strvec_find(&models, name) < 0) {
		fflush(f->out);
		cli_printf(stderr, "forgex: warning: the server of provider %s does not list a model "
			   "'%s' (set all the same; /model alone lists what it offers)\n",
			   ac->provider ? ac->provider : "default", name);
	}
	err_clear();
	strvec_clear(&models);
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
		if (chat_set_model(f->chat, role, name) < 0) {
			cli_print_error();
		} else {
			cli_printf(f->out, "%s now uses %s\n", role, name);
			warn_unlisted(f, strcmp(role, "chat") ? role : NULL, name);
		}
		return;
	}
	chat_set_model(f->chat, NULL, role);
	cli_printf(f->out, "the session now uses %s\n", role);
	warn_unlisted(f, NULL, role);
}

static void cmd_resume_pick(struct front *f, const char *arg)
{
	struct strvec all = STRVEC_INIT, ids = STRVEC_INIT;
	struct buf line = BUF_INIT;
	long long now = (long long)time(NULL);
	size_t i, from, cols = chat_sess_columns(f->out);
	int ret;

	if (arg && *arg) {
		front_resume(f, arg);
		return;
	}
	if (rundir_list_kind(&all, f->cfg->workspace, RUNDIR_CHATS) < 0) {
		cli_print_error();
		return;
	}
	/* the sessions in which something was said: an empty one has nothing to go on with */
	for (i = 0; i < all.nr; i++) {
		struct chat_session_info si;

		if (chat_session_info_read(&si, f->cfg->workspace, all.v[i]) == 0 && si.turns)
			strvec_push(&ids, all.v[i]);
		err_clear();
		chat_session_info_release(&si);
	}
	from = ids.nr > 20 ? ids.nr - 20 : 0;
	for (i = from; i < ids.nr; i++) {
		struct chat_session_info si;
		const char *mark = !strcmp(ids.v[i], chat_id(f->chat)) ? " (this one)" :
				   !chat_session_mine(f->cfg->workspace, ids.v[i]) ?
				   " (not started by you here)" : "";
		struct buf row = BUF_INIT;
		size_t lead = 5 + strlen(ids.v[i]) + strlen(mark) + 2;

		chat_session_info_read(&si, f->cfg->workspace, ids.v[i]);
		err_clear();
		chat_sess_row(&row, &si, now, !cols ? 0 : cols > lead + 30 ? cols - lead - 1 : 30);
		/* the id is a folder's name: anyone's */
		cli_printf(f->out, "%3zu  %s%s  %s\n", i - from + 1, ids.v[i], mark, row.buf);
		buf_release(&row);
		chat_session_info_release(&si);
	}
	if (ids.nr == from) {
		fprintf(f->out, "no sessions yet (one in which nothing was said is not kept)\n");
		goto out;
	}
	ret = lineedit_read(f->le, "session (number or id; Enter: none): ", &line);
	if (ret == LINEEDIT_LINE && line.len) {
		char *end;
		long n = strtol(line.buf, &end, 10);

		if (!*end && n >= 1 && (size_t)n <= ids.nr - from)
			front_resume(f, ids.v[from + (size_t)n - 1]);
		else
			front_resume(f, line.buf);
	}
out:
	buf_release(&line);
	strvec_clear(&ids);
	strvec_clear(&all);
}

/*
 * /permissions [ask|auto|safe]: who answers the questions for the rest of
 * the session. Never the boundary: the sandbox is the configuration's.
 */
static void cmd_permissions(struct front *f, const char *arg)
{
	const char *net = f->cfg->sandbox.network ? "on (through the egress proxy)" : "off";

	if (!*arg) {
		fprintf(f->out, "permissions %s. /permissions ask: a command that needs approval is "
			"asked about; auto: it runs without a question; safe: it is refused.\n"
			"The sandbox stays as configured whatever the mode: network %s.\n",
			f->cfg->permissions.mode ? f->cfg->permissions.mode : "ask", net);
		return;
	}
	if (chat_set_permissions(f->chat, arg) < 0) {
		cli_print_error();
		return;
	}
	f->show_mode = 1;
	fprintf(f->out, "permissions %s for this session; the sandbox stays as configured "
		"(network %s)\n", f->cfg->permissions.mode, net);
}

void front_slash(struct front *f, const char *line)
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

		front_interrupted = 0;
		if (chat_compact(f->chat, &r) < 0)
			cli_print_error();
		else
			fprintf(f->out, "compacted: %zu messages, now %zu (your latest message kept "
				"whole, what came before it summed up)\n", before,
				chat_messages(f->chat));
		agent_result_release(&r);
	} else if (!strcmp(cmd, "/clear")) {
		chat_clear(f->chat);
		fprintf(f->out, "conversation cleared (the files, the turns and /undo stay)\n");
	} else if (!strcmp(cmd, "/resume")) {
		cmd_resume_pick(f, arg);
	} else if (!strcmp(cmd, "/permissions")) {
		cmd_permissions(f, arg);
	} else if (!strcmp(cmd, "/last")) {
		cmd_last_output(f);
	} else {
		const char *const *c, *like = NULL;
		size_t best = 1, k;

		/* the command that shares the longest start with what was typed */
		for (c = front_slash_commands; *c; c++) {
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
