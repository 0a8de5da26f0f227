/*
 * forgex chat (and `forgex` alone on a terminal): the interactive session.
 * The conversation itself is src/pipeline/chat.c; this file is the
 * terminal's loop: the line editor (cli/lineedit.h), a turn, the banner,
 * and Ctrl-C. What a turn looks like is chat_show.c, the slash commands
 * chat_slash.c.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/agent.h"
#include "base/log.h"
#include "cli/chat_front.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/lineedit.h"
#include "cli/progress.h"
#include "cli/setup.h"
#include "cli/turnkeys.h"
#include "cli/textwrap.h"
#include "llm/provider.h"
#include "pipeline/chat.h"
#include "sandbox/approval.h"

volatile sig_atomic_t front_interrupted, front_leaving;

static void on_sigint(int sig)
{
	(void)sig;
	front_interrupted = 1;
}

/* SIGTERM, SIGHUP (the terminal went away): stop the turn, save, and leave. */
static void on_stop(int sig)
{
	(void)sig;
	front_interrupted = 1;
	front_leaving = 1;
}

void front_catch_signals(struct sigaction *old)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, old);
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/*
 * Turns
 */

/* The terminal's reader while a turn runs (turnkeys.h), or NULL. */
static struct turnkeys *front_keys;

/*
 * The session's approval question: the turn's reader steps aside while it
 * is asked, and Ctrl-C at it ends the turn (the command not run), as
 * Ctrl-C anywhere else in a turn does; a `forgex run` goes on after one.
 */
static int front_ask(void *data, struct approval_answer *a, const struct approval_request *rq,
		     const volatile sig_atomic_t *cancel)
{
	int verdict;

	turnkeys_pause(front_keys);
	verdict = approve_tty_ask(data, a, rq, cancel);
	turnkeys_resume(front_keys);
	if (a->interrupted)
		front_interrupted = 1;
	return verdict;
}

void front_send(struct front *f, const char *message)
{
	struct agent_result r = AGENT_RESULT_INIT;
	struct buf typed = BUF_INIT;
	size_t i;
	int ret;

	f->printed = 0;
	f->line_open = 0;
	f->held_len = 0;
	front_interrupted = 0;
	/* Esc stops the turn; what is typed meanwhile waits for the next prompt, unechoed */
	if (lineedit_is_tty(f->le))
		turnkeys_start(&front_keys, 0, &front_interrupted);
	/* a spinner while nothing else is said: on a terminal, not with -q or -v */
	if (!cli_quiet && !cli_verbose && isatty(1))
		progress_start(stderr);
	ret = chat_turn(f->chat, message, &r);
	if (progress_active())
		progress_stop();
	turnkeys_stop(front_keys, &typed);
	front_keys = NULL;
	front_show_turn_end(f, &r, ret);
	for (i = 0; i < r.warnings.nr; i++)
		textwrap_printf(stderr, "forgex: warning: %s\n", r.warnings.v[i]);
	agent_result_release(&r);
	front_interrupted = 0;
	fflush(f->out);
	lineedit_prefill(f->le, typed.buf);
	buf_release(&typed);
}

static void turn(struct front *f, const char *message)
{
	struct buf sent = BUF_INIT;

	front_attach(f, message, &sent);
	front_send(f, sent.buf);
	buf_release(&sent);
	lineedit_set_recall(f->le, message);
}

/*
 * `exit`, `quit` or `clear` alone is a habit from a shell, not a message:
 * the command it meant is named instead of the word going to the model.
 */
static int bare_command_word(struct front *f, const char *line)
{
	static const char *const words[][2] = {
		{ "exit", "/exit" }, { "quit", "/exit" }, { "clear", "/clear" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(words); i++) {
		if (strcasecmp(line, words[i][0]))
			continue;
		fprintf(f->out, "%s(not sent: type %s to %s; Ctrl-D also leaves)%s\n",
			front_col(f, C_DIM), words[i][1],
			!strcmp(words[i][1], "/exit") ? "leave" : "start a new conversation",
			front_col(f, C_RESET));
		fflush(f->out);
		return 1;
	}
	return 0;
}


/*
 * The session
 */

void front_banner(struct front *f, int resumed)
{
	size_t nr;

	chat_turns(f->chat, &nr);
	fprintf(f->out, "%sforgex%s ", front_col(f, C_BOLD), front_col(f, C_RESET));
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
		front_recap(f);
	}
	fprintf(f->out, "%s/help for commands; Esc or Ctrl-C stops a turn; Ctrl-D leaves.%s\n",
		front_col(f, C_DIM), front_col(f, C_RESET));
	fflush(f->out);
}


int front_resume(struct front *f, const char *id)
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
	front_banner(f, 1);
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
		{ "model", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct lineedit_opts lo = LINEEDIT_OPTS_INIT;
	struct front f;
	struct config cfg;
	struct buf first = BUF_INIT, line = BUF_INIT;
	struct sigaction old_int;
	const char *mode = NULL, *resume = NULL;
	char *history = NULL;
	int c, ret, status = EXIT_OK, interrupts = 0, i;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+hm:", opts, NULL)) != -1) {
		switch (c) {
		case 'C':
			resume = "last";
			break;
		case 'm':
			if (cli_set_model(optarg) < 0)
				return cli_usage_error("chat", "%s", err_last());
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
	if ((ret = cli_check_providers(&cfg)) &&
	    setup_is_first_run(&cfg, config_agent(&cfg, ROLE_BUILDER)->provider) && isatty(0) &&
	    isatty(2)) {
		/* a first session with nothing configured and nothing where the defaults point */
		struct setup_opts so = SETUP_OPTS_INIT;

		so.interactive = so.first_run = 1;
		if (setup_user_config(&so) == EXIT_OK) {
			config_release(&cfg);
			if (cli_load_config(&cfg) != 0) {
				buf_release(&first);
				return EXIT_USAGE;
			}
			if (mode)
				config_set(&cfg, "permissions.mode", mode, CFG_FLAG);
			ret = cli_check_providers(&cfg);
		}
	}
	if (ret) {
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
	f.co.cancel = &front_interrupted;
	f.co.on_event = front_on_event;
	f.co.event_data = &f;
	f.co.on_text = front_on_text;
	f.co.text_data = &f;
	f.co.on_wait = front_on_wait;
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--no-wait"))
			f.co.no_wait = 1;

	front_catch_signals(&old_int);

	/*
	 * Questions on the terminal; after one the spinner starts its count
	 * again. SIGTERM or SIGHUP at one is a no (Ctrl-C there is one anyway).
	 */
	f.tty.label = "";
	approver_init(&f.ap, front_ask, &f.tty, &front_interrupted);
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
	lo.commands = front_slash_commands;
	lo.workspace = cfg.workspace;
	lo.cancel = &front_interrupted;
	if (lineedit_open(&f.le, &lo) < 0) {
		cli_print_error();
		status = EXIT_FAIL;
		goto out;
	}
	front_banner(&f, resume != NULL);
	if (first.len)
		turn(&f, first.buf);
	while (!f.quit && !front_leaving) {
		char prompt[64], name[32];

		/* after /permissions, the mode it set: "forgex (auto)>" */
		if (f.show_mode)
			snprintf(name, sizeof(name), "forgex (%s)", cfg.permissions.mode);
		else
			snprintf(name, sizeof(name), "forgex");
		snprintf(prompt, sizeof(prompt), "%s%s>%s ", f.color ? "\1" C_BOLD "\1" : "",
			 name, f.color ? "\1" C_RESET "\1" : "");
		front_interrupted = 0;
		fflush(f.out);
		ret = lineedit_read(f.le, prompt, &line);
		if (ret < 0) {
			cli_print_error();
			status = EXIT_FAIL;
			break;
		}
		if (ret == LINEEDIT_EOF)
			break;
		if (ret == LINEEDIT_INTERRUPT && front_leaving)
			break;
		if (ret == LINEEDIT_INTERRUPT) {
			/* Ctrl-C that drops a typed line only drops it; twice at an empty one leaves */
			if (lineedit_dropped(f.le)) {
				interrupts = 0;
				continue;
			}
			if (++interrupts >= 2)
				break;
			fprintf(f.out, "%s(Ctrl-C again, or Ctrl-D, leaves)%s\n", front_col(&f, C_DIM),
				front_col(&f, C_RESET));
			fflush(f.out);
			continue;
		}
		interrupts = 0;
		buf_trim(&line);
		if (!line.len || bare_command_word(&f, line.buf))
			continue;
		/* a script piped in is not what the person typed */
		if (lineedit_is_tty(f.le))
			lineedit_history_add(f.le, line.buf);
		if (line.buf[0] == '/' && line.buf[1] != '/')
			front_slash(&f, line.buf);
		else
			turn(&f, line.buf[0] == '/' ? line.buf + 1 : line.buf);
	}
	if (f.chat && !cli_quiet && chat_kept(f.chat))
		cli_printf(stderr, "forgex: session %s saved; 'forgex chat --continue' picks it up\n",
			   chat_id(f.chat));
	else if (f.chat && !cli_quiet)
		cli_printf(stderr, "forgex: nothing was said: session %s is not kept\n",
			   chat_id(f.chat));
out:
	lineedit_close(f.le);
	/* front_leaving: an index still being built for the map is not waited for */
	front_interrupted = 1;
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
