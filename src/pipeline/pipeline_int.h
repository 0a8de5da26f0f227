#ifndef FX_PIPELINE_INT_H
#define FX_PIPELINE_INT_H

/*
 * Inside the pipeline (not for use outside src/pipeline/): the state of
 * one run, shared by the files the state machine is cut into.
 *
 *   pipeline.c  the stages in order, state.json and resume, set-up and
 *               tear-down, pipeline_run()
 *   gate.c      the deterministic test gate and the tests' text for a model
 *   summary.c   the ending: outcome, rollback or keep, commit, the
 *               diffstat, summary.json, the "run_end" event
 *   undo.c      putting back the run's own changes: the rollback of an
 *               ending, and forgex undo
 */

#include <jansson.h>

#include "agents/agent.h"
#include "llm/transcript.h"
#include "pipeline/journal.h"
#include "pipeline/lock.h"
#include "pipeline/pipeline.h"
#include "pipeline/recorder.h"
#include "pipeline/workbench.h"
#include "vcs/checkpoint.h"

#define MAX_PROVIDERS 16

enum stage {
	ST_CHECKPOINT, ST_BASELINE, ST_ARCHITECT, ST_BUILDER, ST_EXPERT, ST_VERIFY, ST_REVIEW,
	ST_REPAIR, ST_DONE,
};

struct pl_provider {
	char *name;
	struct provider *p;
};

/* One run, from pipeline_run() to its end. */
struct pl {
	const struct pipeline_opts *o;
	struct config *cfg;
	struct pipeline_result *out;
	struct rundir s;
	int have_rundir;
	struct transcript *tr;
	struct checkpoints *cps;
	struct workbench wb;		/* executor, tools, hooks, map (workbench.h) */
	struct recorder rec;		/* events, the journal's hooks, the ledger (recorder.h) */
	struct journal jr;
	int have_journal;
	struct ws_lock lock;
	char *end_checkpoint;		/* the tree as the run ended, before any rollback */
	struct agent_budget budget;
	struct pl_provider provs[MAX_PROVIDERS];
	size_t nprov;

	char *request;
	json_t *plan;
	char *pre_checkpoint;
	char *tree_checkpoint;
	struct verify_command cmd;
	int have_cmd;			/* a test command was found */
	struct verify_result baseline;
	int have_baseline;
	struct verify_result last;
	struct verify_comparison cmp;
	int last_ran;
	struct buf feedback;		/* what the repair is told */
	int iteration;
	enum stage next;
	int budget_hit;
	int interrupted;		/* ended by an interrupt: state.json stays resumable */
	struct buf budget_why;
	struct buf gate_why;		/* why the test gate refused the last verdict */
	/* The paths the agents changed, stage by stage (sorted, unique), so
	 * that "files changed" leaves out what forgex's own test runs built;
	 * known only for a run followed from its start (not resumed). */
	struct strvec agent_paths;
	int agent_paths_known;
	int tested_since_checkpoint;	/* a test run changed the tree after tree_checkpoint */
	double t0;
};

/** Record event `type` of the run (takes the reference of `fields`). */
static inline void pl_emit(struct pl *pl, const char *type, json_t *fields)
{
	recorder_event(&pl->rec, type, fields);
}

/** Rewrite state.json (pipeline.c): what a resume needs. */
int pl_save_state(struct pl *pl);

/**
 * Add what changed since the last tree checkpoint (an agent stage's work)
 * to agent_paths (summary.c).
 */
void pl_note_agent_paths(struct pl *pl);

/**
 * Reach an ending (summary.c): restore or keep, commit, write
 * summary.json, fill pl->out. `code` is 0 (PASS or FAIL by `pass`),
 * FX_EINTR, FX_ELIMIT (budget) or another failure (error).
 */
void pl_finish(struct pl *pl, int code, int pass, const char *reason);

/**
 * Put back what the run changed, and only that (undo.c): the journal's
 * paths that are still what the run left, and the empty folders its
 * commands made. Fills `o`; returns the number that failed.
 */
int pl_roll_back(struct pl *pl, struct journal_outcome *o, const char *why);

/*
 * Note in run folder `dir` what a rollback or undo of run `id` could not
 * put back (restore.json, for forgex log and the next undo), or that
 * nothing is left (`failed` NULL or empty: the note goes). A folder that
 * cannot be written is not an error.
 */
void pl_note_restore(const char *dir, const char *id, const struct strvec *failed);

#endif
