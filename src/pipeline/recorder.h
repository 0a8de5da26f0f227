#ifndef FX_PIPELINE_RECORDER_H
#define FX_PIPELINE_RECORDER_H

/*
 * The recorder: how a run (pipeline.c) and an interactive session
 * (chat.c) write down what happens, once for both
 * (docs/internals/recorder.md).
 *
 *   - recorder_event() appends an event to the folder's events.jsonl
 *     (rundir_event()); a failure to record neither stops the work nor
 *     wipes the error being handled;
 *   - recorder_agent_event() is agent_opts.on_event: "progress" goes to
 *     the display only (the folder's on_event), a tool call's string
 *     arguments longer than RECORDER_ARG_MAX are noted by their size
 *     (transcript.jsonl holds them), a file read_file reads counts in the
 *     map's focus, and every "model_call" is counted in the ledger;
 *   - the workbench's commands, hook runs and MCP servers are events
 *     (workbench_open() wires them: workbench_opts.recorder);
 *   - `hooks` are the tools' change hooks (tool_ctx.hooks): every change,
 *     and every temporary file a tool creates beside its target, goes into
 *     the journal `jr` while one is open, then (changes) to `watch`;
 *   - recorder_restore_start() puts the tree back as a run or a session
 *     found it (forgex replay).
 *
 * The caller:
 *   1. recorder_init() on its open run folder (whose on_event, set before
 *      or after, is the display);
 *   2. workbench_open() with the recorder (it sets `map` and tctx.hooks);
 *   3. points `jr` at a journal while one is open (NULL between), and
 *      `watch` at change hooks of its own (may stay NULL);
 *   4. reads `ledger`; recorder_release().
 */

#include <jansson.h>
#include <stdint.h>

#include "context/context.h"
#include "pipeline/journal.h"
#include "pipeline/ledger.h"
#include "pipeline/rundir.h"
#include "sandbox/executor.h"
#include "tools/registry.h"

/*
 * Bytes of a tool call's string argument kept in events.jsonl; a longer
 * one becomes "[N bytes; in transcript.jsonl]".
 */
#define RECORDER_ARG_MAX 256

/*
 * A command's output (stdout, then stderr) kept for the person in
 * output/SEQ.txt of the folder: at most RECORDER_OUTPUT_MAX bytes (head
 * and tail) of what the executor kept ([terminal] max_output_bytes a
 * stream); its last RECORDER_TAIL_LINES lines, each cut at
 * RECORDER_TAIL_WIDTH bytes, in the "command" event's "tail".
 */
#define RECORDER_OUTPUT_MAX (1u << 20)
#define RECORDER_TAIL_LINES 8
#define RECORDER_TAIL_WIDTH 300

struct recorder {
	struct rundir *rd;		/* where events go (borrowed) */
	struct ctx_session *map;	/* read_file's paths count in its focus (NULL: none) */
	struct journal *jr;		/* the changes of the tools go here (NULL: not now) */
	const struct tool_hooks *watch;	/* told of every change after the journal (NULL: none) */
	struct ledger ledger;		/* every model call recorded */
	struct tool_hooks hooks;	/* for tool_ctx.hooks */
};

/** Record into the folder `rd` (borrowed; it outlives the recorder). */
void recorder_init(struct recorder *r, struct rundir *rd);

/** Free the ledger; `r` records nothing more. */
void recorder_release(struct recorder *r);

/** Append event `type` with `fields` (the reference is taken; may be NULL). */
void recorder_event(struct recorder *r, const char *type, json_t *fields);

/** An agent_opts.on_event for `data` = the recorder (see the overview). */
void recorder_agent_event(void *data, const char *type, json_t *fields);

/**
 * A shell_tools.on_command for `data` = the recorder: a "command" event
 * (tool, argv; exit_code, timed_out, duration_ms, and for a command that
 * wrote something output ("output/SEQ.txt", in the folder), output_bytes,
 * output_lines and tail; or refused and error).
 */
void recorder_command(void *data, const char *tool, const struct strvec *argv, int code,
		      const struct exec_result *r);

/**
 * Open (read-only) the command output a "command" event of folder `dir`
 * names (its "output"): only "output/N.txt" is taken, so an event that was
 * tampered with reads nothing else. Returns the descriptor, FX_EINVAL for
 * another name, or what rundir_file_open() returns.
 */
int recorder_output_open(const char *dir, const char *name);

/** A hooks_event_fn for `data` = the recorder: a "hook" event. */
void recorder_hook(void *data, json_t *fields);

/**
 * Restore the whole checkpoint that run (`kind` RUNDIR_RUNS: its
 * pre-run checkpoint) or session (RUNDIR_CHATS: its first checkpoint)
 * `id` of `workspace` started from, under the workspace lock, with
 * [checkpoints] max_file_bytes = `max_file_bytes` (the backup it takes
 * first holds what a checkpoint would). `*checkpoint` (may be NULL)
 * receives its id (caller frees). FX_ENOTFOUND when it recorded none.
 */
int recorder_restore_start(char **checkpoint, const char *workspace, uint64_t max_file_bytes,
			   const char *kind, const char *id);

#endif
