#ifndef FX_PIPELINE_CHAT_INT_H
#define FX_PIPELINE_CHAT_INT_H

/*
 * What chat.c (the session, its turns) and chat_conv.c (a message too
 * large for the window, the notes the model is told, the session's undo
 * stack of turns and runs) share. Private to src/pipeline/.
 */

#include "agents/agent.h"
#include "base/buf.h"
#include "pipeline/chat.h"
#include "pipeline/journal.h"
#include "pipeline/pipeline.h"

/* A run made from the session that left changes, for /undo. */
struct chat_run {
	char *id;
	int after_turn;		/* the turns the session had when it ended */
	int undone;
};

/* chat_conv.c's part of a session. */
struct chat_conv {
	char *refused;			/* the message the last turn refused, or NULL */
	struct agent_fit refused_fit;
	struct chat_run *runs;		/* runs.json, read at the first need */
	size_t runs_nr, runs_alloc;
	int runs_loaded;
};

#define CHAT_CONV_INIT { NULL, { 0, NULL, 0, 0, 0, 0 }, NULL, 0, 0, 0 }

/* chat.c, for chat_conv.c */
struct chat_conv *chat_conv_of(struct chat *c);
const struct chat_opts *chat_options(const struct chat *c);

/* chat_conv.c, for chat.c */

void chat_conv_release(struct chat_conv *v);
/* Keep `message` as the refused one (chat_refused()). */
void chat_conv_refuse(struct chat *c, const char *message, const struct agent_fit *fit);
/* Append a line the model is told with the next message (notes.txt). */
void chat_conv_note(struct chat *c, const char *text);
/* Append the notes to `out`, each in brackets, then a blank line; "" when none. */
void chat_conv_notes(struct chat *c, struct buf *out);
/* The notes were sent: forget them. */
void chat_conv_notes_sent(struct chat *c);
/* Finish a note of what an undo put back (`o`), after "the person undid ...". */
void chat_undo_note(struct buf *note, const struct journal_outcome *o);
/* A run ended (chat_record_run()): one that left changes goes on the undo stack. */
void chat_conv_record_run(struct chat *c, const struct pipeline_result *res);

#endif
