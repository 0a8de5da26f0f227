#ifndef FX_PIPELINE_JOURNAL_H
#define FX_PIPELINE_JOURNAL_H

/*
 * The journal of a run: which paths the run itself changed, what each was
 * before and what the run left there, so that a rollback or `forgex undo`
 * reverts the run's changes and nothing else (issue 11).
 *
 * What counts as the run's change:
 *   - every path a tool writes, replaces, moves or deletes (the tools'
 *     pre-change hook, tools/registry.h): before the change the entry's
 *     bytes are copied to `saved/N` in the run folder (also ignored and
 *     large files, which no checkpoint holds) and a record is appended;
 *     if the copy cannot be made, the tool's change is refused;
 *   - every path that differs across a command or test run the run made
 *     (a snapshot of the tree before and after, vcs/paths.h; ignored files
 *     are not seen, as for checkpoints).
 * A path the user changes while the run goes on is not the run's, and is
 * never touched. When the run and the user both changed a path (it is no
 * longer what the run left), the user's version stays and the run's
 * version is copied to `run-versions/PATH` in the run folder.
 *
 * `changes.jsonl` in the run folder holds the records, one JSON object a
 * line, each written with one write(2) before (the "before" of a path)
 * or right after (what the run "left") the change, so a run killed at any
 * point can still be undone:
 *   {"path": P, "before": {"kind": "saved", "file": "saved/3", "mode": 33188, "oid": X}}
 *   {"path": P, "before": {"kind": "link", "target": T, "oid": X}}
 *   {"path": P, "before": {"kind": "absent", "oid": ""}}
 *   {"path": P, "before": {"kind": "tree", "tree": T, "oid": X}}   (a command changed it)
 *   {"path": P, "before": {"kind": "dir", "oid": "dir"}}
 *   {"path": P, "left": X}
 * Ids are git blob ids ("" absent, "dir" a folder).
 */

#include <jansson.h>

#include "base/strvec.h"
#include "vcs/checkpoint.h"
#include "vcs/paths.h"

struct journal {
	struct checkpoints *cps;	/* borrowed */
	char *dir;			/* the run folder */
	int fd;				/* changes.jsonl, O_APPEND; -1 when read-only */
	json_t *paths;			/* path -> {"before": {...}, "left": id} */
	unsigned long nsaved;
	char snap[VCS_OID_HEX];		/* snapshot before the running command ("": none) */
	unsigned gaps;			/* commands whose changes could not be recorded */
	char *gap_why;			/* why the first one could not */
	json_t *tmps;			/* temporary file -> its target, as recorded */
	struct strvec removed;		/* leftovers removed when opened for appending */
};

#define JOURNAL_INIT { NULL, NULL, -1, NULL, 0, "", 0, NULL, NULL, STRVEC_INIT }

/**
 * Open the journal of the run folder `dir` and read what it holds; with
 * `append`, records can be added (changes.jsonl is created): then the
 * caller holds the workspace lock, the leftovers of killed writes the
 * journal names are removed (journal_remove_tmps(), into `removed`), and
 * `cps` tells the journal of its temporary files until journal_release().
 * However many processes worked on the run (a resume, an undo), it is one
 * journal: each appends to the same file, and a path's "before" is the
 * first one ever recorded.
 */
int journal_open(struct journal *j, struct checkpoints *cps, const char *dir, int append);
void journal_release(struct journal *j);

/**
 * Before the temporary file `tmp` is created in the folder of `rel`
 * (fsutil_tmp_create()): a {"tmp": PATH, "for": REL} record, so a write
 * killed before its rename leaves a file the journal names. FX_EOS when
 * the record cannot be written, FX_EINVAL when `tmp` is not a name
 * fsutil_tmp_create() makes for `rel`: the write must not be made.
 */
int journal_before_tmp(struct journal *j, const char *rel, const char *tmp);

/**
 * Remove every temporary file the journal names that is still there: a
 * file or link (never a folder), named as fsutil_tmp_create() names one
 * for the record's target, in the target's folder, reached from the
 * workspace following no link. Each removed is pushed to `removed` (may
 * be NULL). Nothing a journal does not name is ever removed. The caller
 * holds the workspace lock (no write of forgex is under way).
 */
void journal_remove_tmps(struct journal *j, struct strvec *removed);

/**
 * journal_remove_tmps() on the journal of every run and session turn of
 * `workspace` that the user's records hold (runrecord.h): a run's
 * start clears what a killed forgex left, whichever run or turn it was.
 */
void journal_sweep(struct checkpoints *cps, const char *workspace, struct strvec *removed);

/**
 * What a killed forgex left in the run (or turn) folder `dir` itself: the
 * temporary files of its records (".state.json.fx-XXXXXXXX.tmp") and a
 * saved copy half made again by a rollback ("saved/N.new"). Only files
 * (or links) so named go, never a folder; not said (not the user's tree).
 * The caller holds the workspace lock: no write of forgex is under way.
 * journal_open(append = 1) and journal_sweep() call it.
 */
void journal_sweep_rundir(const char *dir);

/**
 * Before a tool changes `rel` (the entry `name` in the folder `dirfd`):
 * the first time, save what is there. FX_EOS (with the reason) when it
 * cannot be saved: the change must not be made.
 */
int journal_before_change(struct journal *j, int dirfd, const char *name, const char *rel);

/** After a tool changed `rel`: record what the run left there. */
void journal_after_change(struct journal *j, const char *rel);

/**
 * After the run itself put its paths back to the tree `tree` (a resume:
 * journal_restore_to()): each path of the journal that is now what `tree`
 * holds is recorded as what the run left there. Without it, the next
 * change of such a path would take the restored bytes for the user's
 * version and an undo would put those back instead of the bytes from
 * before the run (issue 24). The "before" of every path stays the first
 * one recorded, by whichever process.
 */
void journal_note_restored(struct journal *j, const char *tree);

/** Around a command or test run: snapshot before, and record what changed after. */
void journal_command_begin(struct journal *j);
void journal_command_end(struct journal *j);

/** What journal_revert() did. */
struct journal_outcome {
	struct strvec reverted;		/* paths put back as they were before the run */
	struct strvec kept;		/* "PATH (the run's version: FILE)": changed by the user too */
	struct strvec overwritten;	/* with force: "PATH (your version: FILE)" */
	struct strvec failed;		/* "PATH: why; its bytes from before the run: WHERE" */
};

void journal_outcome_init(struct journal_outcome *o);
void journal_outcome_release(struct journal_outcome *o);

/**
 * The run's paths that are no longer what the run left (changed since by
 * someone else), each as "PATH" appended to `out`.
 */
int journal_conflicts(struct journal *j, struct strvec *out);

/**
 * The run's paths that are still what the run left and differ from what
 * they were before the run (what a commit of the run holds).
 */
int journal_own_changes(struct journal *j, struct strvec *out);

/**
 * The run's paths that are not what they were before the run (the user's
 * version, when the journal saved one) and that the run did not leave so:
 * what an undo would still change. Empty after a complete rollback.
 */
int journal_unrestored(struct journal *j, struct strvec *out);

/** Every path of the journal, sorted. */
void journal_paths(const struct journal *j, struct strvec *out);

/**
 * Put every path of the run back as it was before the run. A path that
 * is no longer what the run left is kept as it is (its run's version
 * saved) unless `force`, which saves the current version and reverts it.
 * A path the run left as it was before (a rollback put it back: a "left"
 * record with the id from before) is not the run's any more and is not
 * touched.
 *
 * Needs no new disk space for a file the journal saved: its copy in the
 * run folder is renamed into place (same file system; a copy otherwise),
 * and nothing is written before the tree is back. Only then are the used
 * copies made again (when there is room) and "left" records appended; a
 * copy that could not be made again is taken from the checkpoints by a
 * later revert, and a resume makes it again first (journal_restore_to()).
 * Returns the number of paths that failed (see `o->failed`), or a
 * negative code.
 */
int journal_revert(struct journal *j, int force, struct journal_outcome *o);

/**
 * Make the run's paths that a checkpoint can hold what they are in the
 * tree `tree` (for resume: the tree of the last completed stage), and
 * note that the run left them so. A saved copy a rollback used up is
 * made again first (the run may change that path again); FX_EOS when it
 * cannot be.
 */
int journal_restore_to(struct journal *j, const char *tree, struct strvec *failed);

#endif
