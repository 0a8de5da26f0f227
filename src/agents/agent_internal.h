#ifndef FX_AGENTS_AGENT_INTERNAL_H
#define FX_AGENTS_AGENT_INTERNAL_H

/*
 * What the loop (agent.c), the budget (budget.c) and the window and its
 * compaction (compact.c) share: the state of one run, and the few loop actions compaction needs.
 * Private to src/agents/; callers outside use agent.h.
 *
 * Order within agent_run(): compact_window_setup() once, before the first
 * request; before every model call compact_fit(); after every reply
 * compact_calibrate().
 */

#include "agents/agent.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/strvec.h"
#include "llm/provider.h"

/** One run of the loop (or one agent_compact()). */
struct loop {
	const struct agent_opts *o;
	struct agent_result *out;
	struct agent_budget local_budget;
	struct agent_budget *budget;
	struct llm_request req;
	const char *terminal;
	const char *model;		/* requested: opts or the provider's */
	unsigned granted;
	int turn;
	int text_mode;
	size_t tools_chars;		/* the tools' JSON, which the model also reads */
	size_t result_max;
	struct strvec tool_names;	/* what the model may call, for calls in text */

	/* the model's window (see "Context control" in agent.h) */
	long window;			/* tokens */
	const char *window_source;
	long reserve;			/* tokens kept free for the reply */
	double tok_per_byte;		/* estimate of tokens per request byte, only ever raised */
	size_t sent_bytes;		/* size of the last request */
	int malformed;			/* replies in a row whose calls could not be read */

	/*
	 * A conversation with a person (agent_opts.conversation): compaction
	 * keeps the person's latest message, at `person`, whole, and sums up
	 * what came before it as earlier in the conversation (a run's keeps
	 * its task, messages[1], instead).
	 */
	int chat;
	size_t person;			/* index of the person's latest message (chat) */
	int fresh;			/* the conversation began with this call */

	/* loop guard: the last failing call */
	struct buf guard_key, guard_result;
	int guard_status, guard_repeats;
};
/* ---- the loop (agent.c) ---- */

/** Send event `type` with `fields` (owned, consumed) to on_event, with the role and turn added. */
void loop_emit(struct loop *l, const char *type, json_t *fields);

/** End the run with `st`; a message (printf `fmt`, or NULL) becomes the result's error. */
void loop_end(struct loop *l, enum agent_status st, const char *fmt, ...) FX_PRINTF(3, 4);

/**
 * Charge the reply's usage to the budget (estimated from `prompt_chars`
 * when the server sent none) and emit "model_call".
 */
void loop_account(struct loop *l, struct llm_response *resp, size_t prompt_chars);

/** Append a short form of a tool call (its name and main argument) as progress lines show it. */
void loop_call_summary(struct buf *out, const char *name, const json_t *args);

/* ---- the budget (budget.c) ---- */

/** The price of exactly `model` (no "*" fallback), or NULL; borrowed from `b`. */
struct agent_price *budget_price_exact(const struct agent_budget *b, const char *model);

/* ---- the window and compaction (compact.c) ---- */

/** Set the window, the reply's reserve and the tool result cap, and emit "context_window". */
void compact_window_setup(struct loop *l);

/**
 * Make the next request fit the window, compacting when it would not leave
 * the reserve free (emitting "context_compact"). 0, or -1 after
 * loop_end(AGENT_PROVIDER_ERROR) when it cannot fit even so.
 */
int compact_fit(struct loop *l);

/**
 * Fill `fit` for the request as it stands in `l` (built, not sent): the
 * window, and the tokens the request, the person's latest message and the
 * least request holding it (the system prompt, the tools, that message)
 * take. No event is sent.
 */
void compact_measure(const struct loop *l, struct agent_fit *fit);

/** The index of the person's latest message in `l->req` (chat), or messages_nr when none. */
size_t compact_person(const struct loop *l);

/** Learn the tokens per request byte from the server's count in `resp` (never lowered). */
void compact_calibrate(struct loop *l, const struct llm_response *resp);

#endif
