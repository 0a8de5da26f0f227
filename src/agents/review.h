#ifndef FX_REVIEW_H
#define FX_REVIEW_H

/*
 * Verdicts and the ensemble review.
 *
 * A review is one or more votes: the Supervisor's, plus one per extra
 * voter of [review] voters ("provider:model"). Each vote is PASS or FAIL
 * with a summary and the fixes the voter requires; a voter that could not
 * vote (its model failed, it never called submit_verdict) counts as FAIL
 * and says why. The quorum decides:
 *   majority   more than half of the votes are PASS;
 *   unanimous  every vote is PASS;
 *   any        at least one vote is PASS.
 *
 * The caller:
 *   1. review_init();
 *   2. review_ensemble() with a function that runs one voter (the pipeline
 *      runs a Supervisor agent), or review_add_vote() per vote and then
 *      review_decide();
 *   3. review_to_json() to record every vote; review_release().
 *
 * Nothing here talks to a model or prints.
 */

#include <jansson.h>

#include "base/buf.h"
#include "base/strvec.h"

enum review_quorum {
	QUORUM_MAJORITY = 0,
	QUORUM_UNANIMOUS,
	QUORUM_ANY,
};

/** The quorum called `name` ("majority", "unanimous", "any"), or -1. */
int review_quorum_from_name(const char *name);
/** "majority", "unanimous", "any". */
const char *review_quorum_name(enum review_quorum q);

/** One vote. Strings owned. */
struct review_vote {
	char *voter;		/* "supervisor" or "provider:model" */
	int pass;		/* 1: PASS, 0: FAIL */
	int failed;		/* the voter could not vote; `summary` says why */
	char *summary;
	struct strvec fixes;	/* required fixes (FAIL) */
};

/** A review: the votes and the decision. */
struct review {
	struct review_vote *votes;
	size_t nr, alloc;
	enum review_quorum quorum;
	size_t passes, fails;
	int pass;		/* the decision, after review_decide() */
};

#define REVIEW_INIT { NULL, 0, 0, QUORUM_MAJORITY, 0, 0, 0 }

void review_init(struct review *r, enum review_quorum q);
void review_release(struct review *r);

/**
 * Record a vote (copies the strings; `fixes` may be NULL). Returns the
 * vote (borrowed).
 */
struct review_vote *review_add_vote(struct review *r, const char *voter, int pass, int failed,
				    const char *summary, const struct strvec *fixes);

/**
 * Whether `passes` PASS votes of `total` meet quorum `q`. No votes never
 * pass.
 */
int review_quorum_met(enum review_quorum q, size_t passes, size_t total);

/** Count the votes, decide by the quorum, set r->pass; returns it. */
int review_decide(struct review *r);

/**
 * Read a verdict from the arguments of a submit_verdict call:
 * {"verdict": "PASS"|"FAIL" (any case), "summary"/"reason": "..." or
 * "reasons": ["...", ...] (joined with "; "),
 * "required_fixes"/"fixes": ["...", ...]}. FX_EPARSE when there is no
 * recognisable verdict; `*pass`, `summary` and `fixes` are then untouched.
 */
int review_parse_verdict(int *pass, struct buf *summary, struct strvec *fixes,
			 const json_t *args);

/**
 * Run one voter: fill the vote `out` (voter already set) and return 0, or
 * return a negative FX_E* code (FX_EINTR stops the review; any other
 * failure becomes a failed FAIL vote carrying err_last()).
 */
typedef int (*review_vote_fn)(struct review_vote *out, const char *voter, void *data);

/**
 * Collect the Supervisor's vote ("supervisor") and one per entry of
 * `voters` through `fn`, then decide. Returns 0 (see r->pass) or FX_EINTR
 * when a voter was interrupted (the votes so far are kept).
 */
int review_ensemble(struct review *r, const struct strvec *voters, review_vote_fn fn,
		    void *data);

/**
 * Split a voter "provider:model" into its parts (caller frees both);
 * "provider" alone gives an empty model. FX_EINVAL for an empty provider.
 */
int review_split_voter(char **provider, char **model, const char *voter);

/** {"quorum", "pass", "passes", "fails", "votes": [{voter, verdict, failed, summary, fixes}]} */
json_t *review_to_json(const struct review *r);

#endif
