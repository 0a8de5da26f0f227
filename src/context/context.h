#ifndef FX_CONTEXT_CONTEXT_H
#define FX_CONTEXT_CONTEXT_H

/*
 * The repository map for a run: one symbol index (context/index.h) kept
 * up to date and the focus the run has gathered (the request, the plan's
 * files, files read or edited). The `repo_map` tool that offers it to the
 * model is in the tools layer (tools/repo_map.h).
 *
 * The caller (the pipeline, `forgex map`):
 *   1. ctx_session_init() with the workspace, an executor for ctags and
 *      the budget ([context] map_tokens);
 *   2. tools_register_repo_map() (tools/repo_map.h) to offer it to the roles;
 *   3. ctx_session_set_request(), ctx_session_note_file() as the run goes;
 *   4. ctx_session_map() for the text a role's first request carries;
 *   5. ctx_session_release().
 * The index is brought up to date before each map (a warm update only
 * stats the tree), so a map after an edit shows the edited file as it is.
 */

#include <pthread.h>

#include "base/buf.h"
#include "base/strvec.h"
#include "context/index.h"
#include "context/rank.h"

struct executor;

struct ctx_session {
	struct ctx_index idx;
	int have_idx;
	size_t map_tokens;		/* default budget */
	char *request;
	struct strvec files;		/* plan files, files read */
	const struct strvec *changed;	/* files the tools changed (borrowed; may be NULL) */
	struct ctx_map last;		/* the last map made */
	pthread_t prefetch;		/* ctx_session_prefetch()'s update, until joined */
	int prefetching;
	struct executor *saved_ex, *saved_ex2;
};

/** Prepare; `ex` (borrowed, may be NULL) runs ctags. FX_ENOTFOUND: no such folder. */
int ctx_session_init(struct ctx_session *s, const char *workspace, struct executor *ex,
		     size_t map_tokens);

void ctx_session_release(struct ctx_session *s);

/**
 * Start bringing the index up to date in a thread of its own, with `ex`
 * (borrowed; used by nothing else until the first map) for ctags, so that
 * a cold build overlaps what the caller does meanwhile (a run's
 * checkpoint and baseline tests). The first map, or the release, waits
 * for it; the map is the same as without. Returns 0, or a negative FX_E*
 * code when no thread could start (nothing then happens early).
 */
int ctx_session_prefetch(struct ctx_session *s, struct executor *ex);

/** The request the maps are personalised by (copied). */
void ctx_session_set_request(struct ctx_session *s, const char *request);

/** A file of the plan, or read in this run (kept once). */
void ctx_session_note_file(struct ctx_session *s, const char *path);

/**
 * Update the index and append a map of at most `tokens` tokens (0: the
 * session's map_tokens) to `out`, personalised by the session's request,
 * files and changes plus `focus` (may be NULL) and `extra_files` (may be
 * NULL). Nothing is appended when the tree has nothing to show. Returns 0
 * or a negative FX_E* code when the tree cannot be walked.
 */
int ctx_session_map(struct ctx_session *s, struct buf *out, const struct strvec *focus,
		    const struct strvec *extra_files, size_t tokens);

#endif
