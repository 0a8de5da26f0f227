#ifndef FX_RUNRECORD_H
#define FX_RUNRECORD_H

/*
 * Whose runs: the user's own record of the runs forgex started,
 * `$XDG_STATE_HOME/forgex/runs` (else ~/.local/state/forgex/runs), one
 * "ID<TAB>WORKSPACE" line each, as chat.c keeps for sessions. A run folder
 * is in the workspace (`.forgex/runs/ID/`), which a cloned repository can
 * fill with a journal, a transcript and a state of its choosing: `undo`,
 * `resume` and `replay` take only a run of this record, so one shipped
 * with the repository (or left by another user) is never acted on, and a
 * run named by the person that is not in it is refused as planted.
 *
 * The caller:
 *   runrecord_add() when a run folder is created (pipeline_run());
 *   runrecord_resolve() where a run is chosen for undo, resume, replay.
 */

#include "base/buf.h"
#include "base/strvec.h"

/* The records: runs here, sessions in chat.c (both "ID<TAB>WORKSPACE" lines). */
#define RUNRECORD_RUNS "forgex/runs"
#define RUNRECORD_SESSIONS "forgex/sessions"

/**
 * Append "ID<TAB>WORKSPACE" to the user's record `record` (a path below
 * $XDG_STATE_HOME, e.g. RUNRECORD_RUNS), never through a link; best
 * effort: a failure is ignored, and a workspace with a newline is not
 * recorded.
 */
void runrecord_note(const char *record, const char *workspace, const char *id);

/** Push to `out` the ids that `record` holds for `workspace`, oldest first. */
void runrecord_list(struct strvec *out, const char *record, const char *workspace);

/** Note that this user started run `id` in `workspace` (best effort: a failure is ignored). */
void runrecord_add(const char *workspace, const char *id);

/** Whether the user's record holds run `id` of `workspace`. */
int runrecord_mine(const char *workspace, const char *id);

/**
 * rundir_resolve() among the runs of the user's record: "last" / NULL is
 * the newest recorded run (newer folders that are not in the record are
 * pushed to `planted`, may be NULL, so the caller can say they were
 * passed over); a name that designates a run not in the record is
 * FX_EDENIED, naming it as not recorded by this user (planted); no run at
 * all, or none recorded, is FX_ENOTFOUND.
 */
int runrecord_resolve(char **out, const char *workspace, const char *name,
		      struct strvec *planted);

/**
 * Append one line per id of `planted`, for the person: "forgex: passed
 * over run ID: it was not started here by you (planted: ...)", the id
 * made terminal-safe (a folder name is anyone's).
 */
void runrecord_describe_planted(struct buf *out, const struct strvec *planted);

#endif
