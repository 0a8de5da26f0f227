#ifndef FX_PIPELINE_H
#define FX_PIPELINE_H

/*
 * The pipeline: the state machine of `forgex run` (DESIGN.md, top).
 *
 *   baseline tests -> checkpoint -> Architect (submit_plan) -> Builder
 *   (finish) -> Expert Coder (finish) -> [ verify -> Supervisor and the
 *   voters (submit_verdict) -> gate -> PASS: done | FAIL: checkpoint ->
 *   Expert Coder repairs -> verify ... ] at most max_iterations reviews.
 *
 * The deterministic gate: a PASS from the review does not pass when a test
 * that passed at baseline now fails, or when the test command could not
 * run (refused, timed out, failed to start). Its reason is recorded and
 * given to the repair.
 *
 * Endings: PASS leaves the change in the tree (or commits it with
 * [pipeline] commit); a final FAIL, a spent budget or a provider failure
 * restores the pre-run checkpoint ([pipeline] on_failure = "rollback") or
 * leaves the last attempt ("keep"); an interrupt always restores the
 * pre-run checkpoint.
 *
 * Every stage start and end, model call, tool call and result, command,
 * checkpoint, test result and verdict is an event of the run folder
 * (pipeline/rundir.h). After each stage the tree is checkpointed and
 * state.json says which stage comes next, so a run killed at any point can
 * be resumed from its last completed stage (`resume_id`).
 *
 * The caller (src/cli/cmd_run.c and friends):
 *   1. loads the configuration;
 *   2. fills `struct pipeline_opts` (PIPELINE_OPTS_INIT first), with a
 *      cancel flag its SIGINT handler sets;
 *   3. pipeline_run() blocks until the run ends, calling `on_event` for
 *      every event; reads `struct pipeline_result`;
 *   4. pipeline_result_release().
 * Nothing here prints.
 */

#include <jansson.h>
#include <signal.h>
#include <stdint.h>

#include "base/buf.h"
#include "config/config.h"
#include "pipeline/ledger.h"
#include "pipeline/rundir.h"
#include "verify/verify.h"

enum pipeline_outcome {
	PIPELINE_PASS = 0,	/* the change passed and stays */
	PIPELINE_FAIL,		/* failed after the last iteration (or a budget ran out) */
	PIPELINE_PLANNED,	/* plan_only: the Architect's plan was made */
	PIPELINE_INTERRUPTED,	/* cancelled; the tree was restored */
	PIPELINE_ERROR,		/* could not run: provider, config, sandbox (see `code`) */
};

/** "pass", "fail", "planned", "interrupted", "error". */
const char *pipeline_outcome_name(enum pipeline_outcome o);

struct pipeline_opts {
	struct config *cfg;		/* required; cfg->workspace is the project */
	const char *request;		/* required unless resume_id */
	int plan_only;			/* stop after the Architect (forgex plan) */
	const char *resume_id;		/* continue this run from its last completed stage */
	/*
	 * Every role and voter talks to this [providers.NAME] (keeping its
	 * own model), e.g. a replay provider; NULL: as configured.
	 */
	const char *force_provider;
	/* Record the model exchanges to this transcript instead of the run's own. */
	const char *transcript_path;
	const volatile sig_atomic_t *cancel;	/* non-zero: stop (NULL: never) */
	rundir_event_fn on_event;	/* every event, after it is recorded (may be NULL) */
	void *event_data;
	/* Called with the run folder as soon as it exists (may be NULL). */
	void (*on_rundir)(void *data, const struct rundir *s);
	/* Every piece of the model's text as it streams (may be NULL), with event_data. */
	void (*on_text)(void *data, const char *text, size_t len);
	/*
	 * The workspace lock (pipeline/lock.h): with no_wait, a run that finds
	 * it held fails at once naming the holder; else on_wait (may be NULL)
	 * is told once, with event_data, and the run waits.
	 */
	int no_wait;
	void (*on_wait)(void *data, const char *holder);
	/*
	 * A plan made before (the session's /plan, then /go): the Architect
	 * does not run; this plan is the run's (borrowed; NULL: plan).
	 */
	const json_t *plan;
	/* Decides about commands, hooks and MCP tools that need approval (borrowed; NULL: nobody to ask). */
	struct approver *approver;
};

#define PIPELINE_OPTS_INIT { NULL, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL }

struct pipeline_result {
	enum pipeline_outcome outcome;
	int code;		/* PIPELINE_ERROR: the FX_E* code; else 0 */
	char *run_id;
	char *run_dir;
	char *reason;		/* why it failed or stopped ("" on PASS) */
	char *pre_checkpoint;	/* the checkpoint taken before any change ("" when none) */
	int rolled_back;	/* the tree was restored to pre_checkpoint */
	int kept;		/* on_failure = keep: the last attempt is in the tree */
	int committed;		/* commit = true: the change was committed */
	int iterations;		/* reviews done */
	long tokens;
	double cost_usd;
	struct ledger ledger;	/* the run's model calls per model (a session adds them to its own) */
	double seconds;
	char *diffstat;		/* what changed, as `forgex diff --stat` shows */
	json_t *plan;		/* the Architect's plan, or NULL */
	json_t *summary;	/* summary.json */
	/* the rollback: paths kept as the user changed them ("PATH (the run's version: FILE)") */
	struct strvec kept_paths;
	/* the rollback: paths that could not be put back ("PATH: why; ... WHERE") */
	struct strvec failed_paths;
};

#define PIPELINE_RESULT_INIT { PIPELINE_ERROR, 0, NULL, NULL, NULL, NULL, 0, 0, 0, 0, 0, 0.0, LEDGER_INIT, 0.0, NULL, NULL, NULL, STRVEC_INIT, STRVEC_INIT }

/**
 * Run (or resume) the pipeline. Returns 0 when the run reached an ending
 * (see out->outcome, including PIPELINE_ERROR for a provider that failed
 * mid-run), or a negative FX_E* code when it could not start (no request,
 * bad configuration, no such run to resume); `out` is then as far as it
 * got. Blocks until the end.
 */
int pipeline_run(struct pipeline_result *out, const struct pipeline_opts *opts);

void pipeline_result_release(struct pipeline_result *r);

/**
 * The deterministic gate. Whether the tests of `current` (compared with
 * the baseline in `cmp`) forbid a PASS: 1 with the reason appended to
 * `why` when the tests could not run (`ran` is 0, or the run timed out),
 * when a test fails now that did not fail at a complete baseline (named
 * passing or not: see verify_is_regression()), when fewer tests pass than
 * the baseline and the fixes account for, or (without test names) when
 * more tests fail than before; else 0. Without a baseline every failing
 * test blocks. A blocked run that also ran fewer tests says so in `why`.
 */
int pipeline_gate(struct buf *why, int ran, const struct verify_result *current,
		  const struct verify_comparison *cmp);

/**
 * Append a short text of the test outcome for a model: the counts, the
 * change from the baseline, and each failing test with its excerpt (at
 * most `max` bytes in all).
 */
void pipeline_describe_tests(struct buf *out, const struct verify_result *r,
			     const struct verify_comparison *cmp, size_t max);

/** What pipeline_undo() did, or why it did not. */
struct pipeline_undo_result {
	struct strvec conflicts;	/* the run's paths changed since it ended */
	struct strvec reverted, kept, overwritten, failed;	/* see journal_outcome */
	char backup[41];		/* checkpoint of the tree just before the undo */
	char revert_commit[41];		/* the commit that reverts the run's commit */
	char *commit_note;		/* why the run's commit was not reverted (or NULL) */
	int legacy;			/* an old run without a journal: whole-tree restore */
	int already;			/* nothing to undo: every path is as before the run */
};

void pipeline_undo_result_init(struct pipeline_undo_result *r);
void pipeline_undo_result_release(struct pipeline_undo_result *r);

/**
 * forgex undo: revert run `id`'s own changes (its journal) in `workspace`.
 * When a path of the run changed since the run ended, nothing is done and
 * FX_EDENIED returned with the paths in `out->conflicts`, unless `force`
 * (the current versions are then saved in the run folder). A run that
 * committed (commit = true) has its commit reverted by a new commit when
 * HEAD is still that commit, else `commit_note` says why not. Takes the
 * workspace lock (see pipeline_opts.no_wait / on_wait). Its backup
 * checkpoint and the copies it saves before writing over a path keep
 * [checkpoints] max_file_bytes = `max_file_bytes`.
 */
int pipeline_undo(struct pipeline_undo_result *out, const char *workspace,
		  uint64_t max_file_bytes, const char *id, int force, int no_wait,
		  void (*on_wait)(void *data, const char *holder), void *data,
		  const volatile sig_atomic_t *cancel);

/**
 * Whether run `id` of `workspace` left its tree not put back: when its
 * rollback or undo could not finish (restore.json in the run folder says
 * so), or it never ended (killed, or its records could not be written),
 * each of its paths that an undo would still change is appended to `left`
 * as "PATH: why" (the reason recorded, when it could be). Returns how
 * many, or a negative code. Finish it with `forgex undo ID`.
 */
int pipeline_restore_pending(struct strvec *left, const char *workspace, const char *id);

#endif
