#ifndef FX_PIPELINE_LEDGER_H
#define FX_PIPELINE_LEDGER_H

/*
 * The ledger: the model calls of a run or a session, per model, with
 * their tokens and money, counted from the agent loop's "model_call"
 * events (agents/agent.h) as they happen. The recorder
 * (pipeline/recorder.h) keeps one for a run (pipeline_result.ledger) and
 * one for a session; a session adds the ledger of each /run, /plan and
 * /go it makes to its own (ledger_add()), so its /cost counts them
 * without reading any file back.
 *
 * The caller: ledger_init() (or LEDGER_INIT), ledger_count() per event,
 * ledger_describe() to show it, ledger_release().
 */

#include <jansson.h>

#include "base/buf.h"

/** What one model cost. */
struct ledger_entry {
	char *model;			/* as the reply named it; "(unnamed)" without */
	long prompt, completion;	/* tokens */
	long calls;
	double cost;			/* USD, of the calls that had a price */
	int unpriced;			/* some call had no price ([budget] prices) */
};

struct ledger {
	struct ledger_entry *v;		/* first model called first */
	size_t nr, alloc;
};

#define LEDGER_INIT { NULL, 0, 0 }

void ledger_init(struct ledger *l);
/** Free the entries; `l` is left as LEDGER_INIT. */
void ledger_release(struct ledger *l);

/**
 * Count one "model_call" event's fields (`usage`, `cost_usd`, `model`).
 * A call that failed (no `usage`) costs nothing and is not counted.
 */
void ledger_count(struct ledger *l, const json_t *model_call);

/** Add every entry of `from` to `l` (the same model's figures are summed). */
void ledger_add(struct ledger *l, const struct ledger *from);

/**
 * Append one line per model ("MODEL: N calls, P prompt + C completion
 * tokens, $X"), then the total (money "unknown" when a call had no price).
 */
void ledger_describe(const struct ledger *l, struct buf *out);

#endif
