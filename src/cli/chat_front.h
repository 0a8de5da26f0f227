/*
 * The session's terminal front, shared by its three files:
 * cmd_chat.c (the loop, the signals, a turn, the banner), chat_show.c
 * (what each event of a turn looks like) and chat_slash.c (the slash
 * commands). The conversation itself is src/pipeline/chat.c.
 */
#ifndef FORGEX_CLI_CHAT_FRONT_H
#define FORGEX_CLI_CHAT_FRONT_H

#include <signal.h>
#include <stdio.h>

#include <jansson.h>

#include "agents/agent.h"
#include "cli/approve_tty.h"
#include "cli/lineedit.h"
#include "cli/markdown.h"
#include "config/config.h"
#include "pipeline/chat.h"
#include "sandbox/approval.h"

#define C_RESET "\033[m"
#define C_BOLD "\033[1m"
#define C_DIM "\033[2m"
#define C_RED "\033[31m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"
#define C_CYAN "\033[36m"

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
	struct markdown_stream *md;	/* with colour: the model's Markdown rendered (chat_show.c) */
	json_t *command;	/* the "command" event of the call whose result comes next */
	/* /plan, then /go */
	json_t *plan;
	char *plan_request;
	int quit;
	int show_mode;		/* /permissions was used: the prompt names the mode */
	/* the session's approvals: asked on the terminal, `a` answers kept for the session */
	struct approver ap;
	struct approve_tty tty;
};

/* Ctrl-C (stop the turn); SIGTERM or SIGHUP (stop the turn, save, leave). */
extern volatile sig_atomic_t front_interrupted, front_leaving;

/* Install the session's handlers of SIGINT, SIGTERM, SIGHUP (and ignore SIGPIPE); the old SIGINT one in `old` (may be NULL). */
void front_catch_signals(struct sigaction *old);

static inline const char *front_col(const struct front *f, const char *c)
{
	return f->color ? c : "";
}

/* chat_show.c: a turn on the terminal */

/* Text of the model or of a tool, control characters escaped, in `color`. */
void front_put_safe(struct front *f, const char *color, const char *s, size_t len, unsigned how);
/* End the model's open line before anything else is written. */
void front_close_line(struct front *f);
/* chat_opts callbacks: the model's text, a turn's events, a wait for the workspace's lock. */
void front_on_text(void *data, const char *text, size_t len);
void front_on_event(void *data, const json_t *ev);
void front_on_wait(void *data, const char *holder);
/* How the turn ended (`ret` of chat_turn(), `r` its result). */
void front_show_turn_end(struct front *f, const struct agent_result *r, int ret);

/* chat_slash.c */

/* The slash commands, for completion and "did you mean". */
extern const char *const front_slash_commands[];
/* Do the slash command `line` ("/name args"). */
void front_slash(struct front *f, const char *line);

/* cmd_chat.c */

/*
 * A turn of the conversation with `message` as it is (no @path): the
 * model streams, Esc or Ctrl-C stops it, what is typed meanwhile waits
 * for the next prompt.
 */
void front_send(struct front *f, const char *message);
/* The banner of a new (or `resumed`) session. */
void front_banner(struct front *f, int resumed);
/* Go on with session `id` in place of the current one; < 0 (said) when it cannot be opened. */
int front_resume(struct front *f, const char *id);

/* chat_sess.c */

/* The last exchanges of the conversation, compactly (after the banner of a resumed session). */
void front_recap(struct front *f);
/* `message` with the files it names as @path attached, into `out` (what was not, and why, said). */
void front_attach(struct front *f, const char *message, struct buf *out);

#endif
