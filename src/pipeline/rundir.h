#ifndef FX_RUNDIR_H
#define FX_RUNDIR_H

/*
 * Run folders: the folder of one run, `<workspace>/.forgex/runs/<run-id>/`,
 * and the record of what happened in it.
 *
 *   events.jsonl      one JSON object per line, each written with a single
 *                     write(2): {"seq": N, "time": "2026-11-30T03:15:00.123Z",
 *                     "elapsed_ms": N, "type": "stage_start", ...fields}
 *   transcript.jsonl  every model exchange (llm/transcript.h writes it)
 *   request.txt       the request, as given
 *   state.json        what a resume needs: the stages completed so far and
 *                     the checkpoint taken after each (rewritten atomically)
 *   plan.json         the Architect's plan
 *   summary.json      the outcome, written at the end
 *
 * A run id is "YYYYMMDD-HHMMSS-xxxx" (UTC, four random hex digits), so ids
 * sort by time.
 *
 * The caller:
 *   1. rundir_create() for a new run (or rundir_open() for an existing
 *      one, e.g. to resume it); rundir_exclude() once per workspace;
 *   2. rundir_event() for everything that happens; rundir_write_json()
 *      for plan.json, state.json, summary.json;
 *   3. rundir_release().
 * Listing and reading runs: rundir_list(), rundir_resolve(),
 * rundir_load_events(), rundir_read_json().
 *
 * Nothing here prints.
 */

#include <jansson.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/strvec.h"

/**
 * Called with every event after it is written (e.g. to print progress or
 * to copy it to stdout for --json). `ev` is borrowed.
 */
typedef void (*rundir_event_fn)(void *data, const json_t *ev);

/** One run's folder and event log. */
struct rundir {
	char *workspace;	/* absolute */
	char *id;		/* the run id */
	char *dir;		/* <workspace>/.forgex/runs/<id> */
	int events_fd;		/* events.jsonl, O_APPEND; -1 when closed */
	unsigned long seq;	/* events written so far (numbering continues on open) */
	double started;		/* CLOCK_MONOTONIC seconds at create/open */
	rundir_event_fn on_event;	/* may be NULL */
	void *on_event_data;
};

#define RUNDIR_INIT { NULL, NULL, NULL, -1, 0, 0.0, NULL, NULL }

/**
 * Make a new run folder under `workspace`/.forgex/runs/ with a fresh id
 * and an empty events.jsonl. `request` (may be NULL) is saved as
 * request.txt. FX_EOS when a folder or file cannot be made.
 */
int rundir_create(struct rundir *s, const char *workspace, const char *request);

/**
 * Open the existing run `id` of `workspace` to append to its events
 * (numbering continues after its last event). FX_ENOTFOUND when there is
 * no such run.
 */
int rundir_open(struct rundir *s, const char *workspace, const char *id);

/** Close the events file and free the contents; `s` is left as RUNDIR_INIT. */
void rundir_release(struct rundir *s);

/** A new string "<dir>/<name>" (caller frees). */
char *rundir_path(const struct rundir *s, const char *name);

/**
 * Append one event of `type` with the members of `fields` (may be NULL;
 * the reference is taken, even on failure) to events.jsonl with a single
 * write(2), adding "seq", "time", "elapsed_ms" and "type". Then calls
 * `on_event`. Returns 0 or FX_EOS.
 */
int rundir_event(struct rundir *s, const char *type, json_t *fields);

/** As rundir_event() with fields from json_pack() format `fmt`. */
int rundir_eventf(struct rundir *s, const char *type, const char *fmt, ...);

/** Write `j` indented to `name` in the run folder, atomically. */
int rundir_write_json(const struct rundir *s, const char *name, const json_t *j);

/** Read `name` of the run folder `dir`. FX_ENOTFOUND when missing. */
int rundir_read_json(json_t **out, const char *dir, const char *name);

/**
 * Add ".forgex/runs/", ".forgex/checkpoints/", ".forgex/map/", ".forgex/sessions/" and
 * ".forgex/history" to the info/exclude file
 * of the git repository at `workspace` (the common one for a linked
 * worktree), each once. Nothing happens when `workspace` is not the top of
 * a git work tree. `*added` (may be NULL) receives the lines added. A
 * temporary file a killed write of it left in info/ (a minute old or
 * more) is removed first.
 */
int rundir_exclude(const char *workspace, int *added);

/** Push the ids of the runs of `workspace`, oldest first. */
int rundir_list(struct strvec *out, const char *workspace);

/**
 * The run id that `name` designates: an exact id, a unique prefix, or
 * "last" / NULL for the newest. FX_ENOTFOUND when no run matches,
 * FX_EINVAL when a prefix matches several.
 */
int rundir_resolve(char **out, const char *workspace, const char *name);

/** The folder of run `id` (caller frees). */
char *rundir_dir(const char *workspace, const char *id);

/**
 * Read events.jsonl of the run folder `dir` as a JSON array. A torn last
 * line (a run killed mid-write) is skipped; any other bad line is
 * FX_EPARSE naming it.
 */
int rundir_load_events(json_t **out, const char *dir);

/**
 * Open `<workspace>/.forgex/<rel>` without following a link anywhere below
 * the workspace, and refuse (FX_EDENIED, naming it) a link, FIFO, device
 * or socket in the place of a folder or file. `flags` are open(2) flags:
 * O_DIRECTORY opens a folder; O_CREAT makes the missing folders on the way
 * (0700) and the file or folder itself with `mode`. Files are opened
 * O_NONBLOCK (then set back to blocking), so a FIFO never hangs.
 * Returns the descriptor or a negative FX_E* code (FX_ENOTFOUND: missing).
 */
int rundir_forgex_open(const char *workspace, const char *rel, int flags, mode_t mode);

/** As rundir_forgex_open() for `name` in the run folder `dir`; NULL: the folder. */
int rundir_file_open(const char *dir, const char *name, int flags, mode_t mode);

/*
 * The same for the folders of another kind: RUNDIR_RUNS (what the plain
 * functions use) or RUNDIR_CHATS, the interactive sessions
 * (`.forgex/sessions/<id>/`, with the same events.jsonl and
 * transcript.jsonl; see src/pipeline/chat.h).
 */
#define RUNDIR_RUNS "runs"
#define RUNDIR_CHATS "sessions"
int rundir_create_kind(struct rundir *s, const char *workspace, const char *kind,
			const char *request);
int rundir_open_kind(struct rundir *s, const char *workspace, const char *kind,
		      const char *id);
int rundir_list_kind(struct strvec *out, const char *workspace, const char *kind);
int rundir_resolve_kind(char **out, const char *workspace, const char *kind, const char *name);
char *rundir_dir_kind(const char *workspace, const char *kind, const char *id);

/** Make a run id for the wall-clock time `t` (seconds) into `out` (>= 21 bytes). */
void rundir_make_id(char *out, size_t size, long long t);

#endif
