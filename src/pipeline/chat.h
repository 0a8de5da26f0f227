#ifndef FX_PIPELINE_CHAT_H
#define FX_PIPELINE_CHAT_H

/*
 * The interactive session (`forgex chat`): a conversation with an agent
 * that has the Builder's tools, under the policy, sandbox, approvals,
 * hooks and budgets of a run, one user message a turn.
 *
 * Each turn:
 *   1. takes the workspace lock (pipeline/lock.h) for the turn only, so
 *      a `forgex run` elsewhere waits for the turn, not for the session;
 *   2. checkpoints the tree (vcs/checkpoint.h) and opens the turn's
 *      journal (pipeline/journal.h) in `turns/N/` of the session folder:
 *      every path the turn's tools and commands change is recorded, so
 *      chat_undo() puts back exactly the turn's changes and never a path
 *      the person changed since;
 *   3. runs the agent loop on the conversation (agent_opts.conversation):
 *      the earlier messages are the start of the request, byte for byte;
 *   4. saves the conversation (conversation.json) and the turns
 *      (state.json), so that the session can be picked up later
 *      (chat_opts.resume).
 * An interrupted turn (the cancel flag) keeps the conversation and the
 * files as they are; its calls that got no result are answered "not
 * run: interrupted", so the next request is well formed.
 *
 * The session folder `.forgex/sessions/<id>/` holds events.jsonl and
 * transcript.jsonl in the formats of a run (pipeline/rundir.h,
 * llm/transcript.h), so `forgex log` and `forgex replay` read both, plus
 * conversation.json (the messages, redacted), state.json and turns/,
 * and as needed runs.json (the runs made from the session that changed
 * files, for /undo), notes.txt (what the model is told with the next
 * message: what /undo reverted) and attachments/ (messages too large for
 * the model's window, which it reads in parts).
 *
 * Events of a session, beside the agent's (agents/agent.h) and "command",
 * "checkpoint", "hook", "warning" as in a run:
 *   "chat_start"   session, model, provider, resumed (bool), messages
 *   "user"         text (the person's message, redacted)
 *   "turn_start"   turn, checkpoint
 *   "file_diff"    turn, path, diff (unified, at most CHAT_DIFF_MAX bytes),
 *                  cut (bool)
 *   "turn_end"     turn, status (agent_status_name()), changed [paths],
 *                  answer, error
 *   "undo"         turn, reverted [paths], kept [paths], failed [paths]
 *   "undo_run"     run_id, reverted [paths], kept [paths], failed [paths]
 *   "refused"      bytes, tokens (the message's), window, limit, least
 *                  (see agent_fit()): a message that cannot fit, not sent
 *   "attach"       path, bytes, lines: a refused message saved as a file
 *   "compact"      messages_before, messages_after
 *   "clear"        messages (dropped)
 *   "model"        role ("chat" or a role name), model
 *   "permissions"  mode (/permissions: "ask", "auto", "safe")
 *   "pipeline"     action ("run", "plan", "go"), run_id, outcome, reason
 * Events that are only for display ("progress") are passed to `on_event`
 * but not recorded.
 *
 * Nothing here prints.
 */

#include <jansson.h>
#include <signal.h>

#include "agents/agent.h"
#include "base/buf.h"
#include "base/strvec.h"
#include "config/config.h"
#include "pipeline/journal.h"
#include "pipeline/ledger.h"
#include "pipeline/pipeline.h"
#include "pipeline/rundir.h"

/** Bytes of one edit's diff in a "file_diff" event. */
#define CHAT_DIFF_MAX (64u << 10)

struct chat;

struct chat_opts {
	struct config *cfg;		/* required; cfg->workspace is the project (borrowed) */
	/*
	 * Go on with this session (an id, a prefix; "last": the one the user
	 * used last here, by a turn or a resume, see chat_session_mine());
	 * NULL: a new one.
	 */
	const char *resume;
	/* Every role talks to this [providers.NAME] (a replay provider); NULL: as configured. */
	const char *force_provider;
	const volatile sig_atomic_t *cancel;	/* non-zero: stop the turn (NULL: never) */
	rundir_event_fn on_event;	/* every event (may be NULL) */
	void *event_data;
	llm_text_fn on_text;		/* the model's text as it streams (may be NULL) */
	void *text_data;
	int no_wait;			/* a held workspace lock fails a turn at once */
	void (*on_wait)(void *data, const char *holder);	/* with event_data */
	/*
	 * Decides about commands, hooks and MCP tools that need approval
	 * (borrowed; NULL: nobody to ask). chat_open() makes it forget its
	 * `a` answers: they hold for one session.
	 */
	struct approver *approver;
};

#define CHAT_OPTS_INIT { NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL }

/** One turn, as state.json keeps it. */
struct chat_turn {
	int n;			/* 1, 2, ... */
	char *checkpoint;	/* the tree before the turn */
	int changed;		/* the turn changed files (it has something to undo) */
	int undone;
};

/**
 * Start a session (or go on with `opts->resume`): the session folder, the
 * provider, the tools, the sandbox, MCP servers and hooks, and a
 * checkpoint of the tree as the session starts. FX_ENOTFOUND when there
 * is no session to resume.
 */
int chat_open(struct chat **out, const struct chat_opts *opts);

/**
 * End the session: everything is saved; the struct is freed. NULL is
 * fine. A session made by this chat_open() in which nothing happened (no
 * turn, no message, no /run) is not kept: its folder is removed.
 */
void chat_close(struct chat *c);

/** Whether chat_close() keeps the session (see there). */
int chat_kept(const struct chat *c);

const char *chat_id(const struct chat *c);
const char *chat_dir(const struct chat *c);
/** The model the session's requests name (as set by /model or the config). */
const char *chat_model(const struct chat *c);
/** Messages in the conversation (0 after chat_clear()). */
size_t chat_messages(const struct chat *c);
/** The conversation (borrowed; valid until the next call). */
const struct llm_request *chat_conversation(const struct chat *c);
/** The turns so far (borrowed). */
const struct chat_turn *chat_turns(const struct chat *c, size_t *nr);

/**
 * One turn on `message`. Returns 0 with `res` filled (whatever the
 * agent's status; AGENT_INTERRUPTED when cancelled), or a negative code
 * when the turn could not start (the lock, a checkpoint) with `res` as
 * AGENT_RESULT_INIT.
 *
 * What the model is told of an /undo since the last turn (notes.txt)
 * comes first in the message it is sent, the person's text after it as
 * typed. A message that cannot fit the model's window however the
 * conversation is compacted (agent_fit()) is refused before anything
 * else: FX_ELIMIT, no turn, nothing sent or kept; a message that could
 * not be sent because the conversation could not be made small enough
 * ends its turn AGENT_PROVIDER_ERROR with `res->refused`, also not kept.
 * Either way chat_refused() then has it.
 */
int chat_turn(struct chat *c, const char *message, struct agent_result *res);

/**
 * The message the last chat_turn() refused, or NULL (borrowed, until the
 * next turn); `fit` (may be NULL) gets its measure. Compacting would not
 * make room for it: the turn compacted the conversation as far as it goes
 * before refusing; only a shorter form fits (chat_attach_refused(),
 * chat_cut_refused()).
 */
const char *chat_refused(const struct chat *c, struct agent_fit *fit);

/**
 * The refused message as a file of the session, attachments/N.txt, and in
 * `out` the message that tells the model where it is (its path in the
 * workspace, which read_file reads) and how to read it in parts with
 * read_file's start_line and end_line. FX_ENOTFOUND without a refused
 * message.
 */
int chat_attach_refused(struct chat *c, struct buf *out);

/**
 * The refused message cut to fit: its head (three quarters) and tail (one
 * quarter) with a note of how much was left out between, at most about
 * half the window with the system prompt and tools. `*left_out` gets the
 * bytes left out. FX_ENOTFOUND without a refused message.
 */
int chat_cut_refused(struct chat *c, struct buf *out, size_t *left_out);

/**
 * Undo the newest turn that changed files and is not undone yet: its
 * paths go back to what they were before it (journal_revert()); a path
 * changed since by someone else is kept (`o->kept`). `*turn` is the turn
 * undone. The model is told which paths went back with the next message.
 * FX_ENOTFOUND when no turn is left to undo.
 */
int chat_undo(struct chat *c, int *turn, struct journal_outcome *o);

/** What chat_undo_last() undid. */
struct chat_undone {
	int turn;			/* the turn undone, or 0 */
	char *run_id;			/* else the run (/run, /go) undone */
	struct journal_outcome o;	/* reverted, kept, failed */
	struct strvec conflicts;	/* a run's paths changed since it ended: nothing done */
};

void chat_undone_init(struct chat_undone *u);
void chat_undone_release(struct chat_undone *u);

/**
 * /undo: undo the newest of the session's turns and runs (/run, /go that
 * left changes) not undone yet: a turn as chat_undo(), a run with the
 * run's own undo (pipeline_undo(), without force: FX_EDENIED with
 * `u->conflicts` when a path of the run changed since). The model is told
 * which paths went back with the next message. FX_ENOTFOUND when nothing
 * is left to undo.
 */
int chat_undo_last(struct chat *c, struct chat_undone *u);

/**
 * The diff from the start of the session (`since_turn` 0) or from before
 * turn `since_turn` to the tree now (vcs/diff.h flags). FX_ENOTFOUND for
 * a turn that does not exist.
 */
int chat_diff(struct chat *c, int since_turn, unsigned flags, struct buf *out);

/** Summarise the conversation into a short one (agent_compact()). */
int chat_compact(struct chat *c, struct agent_result *res);

/** Forget the conversation (the files and turns stay; /undo still works). */
void chat_clear(struct chat *c);

/**
 * Set the model of the session (`role` NULL or "chat") or of a role of
 * the pipeline ("architect", "builder", "expert_coder", "supervisor") for
 * /run and /plan. FX_EINVAL for an unknown role.
 */
int chat_set_model(struct chat *c, const char *role, const char *model);

/**
 * A pipeline run made from the session (/run, /plan, /go: `action`
 * "run", "plan", "go") in this process has ended with `res`: its model
 * calls (res->ledger) count in the session's costs, and a "pipeline"
 * event records its id, outcome and reason. A run that left changes in
 * the tree (not rolled back) goes on the session's undo stack
 * (chat_undo_last()).
 */
void chat_record_run(struct chat *c, const char *action, const struct pipeline_result *res);

/**
 * Append the tokens and money spent so far, per model, one line each,
 * then the total (money "unknown" without [budget] prices).
 */
void chat_cost(const struct chat *c, struct buf *out);

/**
 * The conversation so far as one request for the pipeline (/run without
 * a request): the person's messages, oldest first, and the last answer.
 * "" when nothing was said.
 */
void chat_request_text(const struct chat *c, struct buf *out);

/**
 * Whether session `id` of `workspace` was started by this user here (it
 * is in the user's record of sessions, $XDG_STATE_HOME/forgex/sessions):
 * `resume` "last" takes only such a session; one that came with the
 * folder is resumed only by name, with a warning.
 */
int chat_session_mine(const char *workspace, const char *id);

/**
 * The approval mode of the session from now on ("ask", "auto", "safe";
 * FX_EINVAL for another): cfg's permissions.mode (so /run uses it too),
 * the executor's, the hooks' and the MCP tools'. A "permissions" event
 * records it. It decides who answers the questions, never the boundary:
 * [sandbox] network and what a command may write stay as configured.
 */
int chat_set_permissions(struct chat *c, const char *mode);

/**
 * `message` with the files it mentions as `@path` (a word beginning with
 * @, relative to the workspace, sentence punctuation after it dropped)
 * attached, into `out`: the message as typed, then each file once as
 * `<file path="REL">` ... `</file>`. Each file is read as read_file reads
 * one (inside the workspace, a symbolic link only if it stays inside,
 * never in .git, at most the tools' read_bytes, not binary) and redacted
 * as a tool's result is. Pushes "REL (N lines, N bytes)" to `attached`
 * and "@PATH: why" to `refused` (not attached; the mention stays as text).
 */
void chat_attach(struct chat *c, const char *message, struct buf *out, struct strvec *attached,
		 struct strvec *refused);

/** What a list of sessions shows of one (chat_list.c). */
struct chat_session_info {
	char *first;		/* the first message ("" when none was said) */
	size_t turns;
	long long used;		/* last used (opened, a turn): seconds since the epoch; 0: unknown */
};

#define CHAT_SESSION_INFO_INIT { NULL, 0, 0 }

/**
 * Read what session `id` of `workspace` holds (its state.json; the first
 * message from its events when an older state lost it to /clear).
 * `out` is filled (and must be released) even on failure; FX_ENOTFOUND
 * when the session has no state.
 */
int chat_session_info_read(struct chat_session_info *out, const char *workspace, const char *id);
void chat_session_info_release(struct chat_session_info *s);

/** Record an event of the session (takes the reference of `fields`, may be NULL). */
void chat_event(struct chat *c, const char *type, json_t *fields);

#endif
