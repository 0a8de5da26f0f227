#ifndef FX_BATCH_RESULTS_H
#define FX_BATCH_RESULTS_H

/*
 * A batch's results: DIR/results.jsonl, one JSON object per finished
 * task, and what is made of them (summary.json, the summary table, the
 * SWE-bench predictions file, the merge of shards).
 *
 * A line is
 *   {"id", "status": "PASS"|"FAIL"|"ERROR"|"TIMEOUT"|"SKIPPED", "repo",
 *    "commit", "run_id", "exit_code", "tests_before", "tests_after",
 *    "tests", "files_changed": [paths], "diffstat", "tokens", "cost_usd",
 *    "seconds", "overhead_seconds", "patch_seconds", "refused", "error",
 *    "model_patch"}
 * (overhead_seconds: the batch's own set-up and tear-down of the task's
 * tree: mirror, worktree, run folder, the line; patch_seconds: making
 * model_patch, for a passing task; the run itself is in neither)
 * written with one write(2) on a file opened O_APPEND and then fsync()ed:
 * a batch killed at any moment leaves every line it had written whole,
 * and at most a last torn one, which the next start drops. SKIPPED (not
 * started: the batch's max_cost ran out) is not a finished task: the next
 * start drops its line and runs the task.
 */

#include <jansson.h>

#include "base/buf.h"
#include "base/strvec.h"

/**
 * The finished tasks' lines of `path` (an array, file order, each id once:
 * the last line of an id wins) into `*out`; a missing file is none. A
 * torn last line, SKIPPED lines and lines whose status is in `retry` (may
 * be NULL; e.g. ERROR, to run those tasks again) are dropped, and the file
 * rewritten atomically without them (`*rewrote` set).
 */
int batch_results_load(json_t **out, const char *path, const struct strvec *retry, int *rewrote);

/** Append `line` to `path` as one line, durably (see above). */
int batch_results_append(const char *path, const json_t *line);

/** Write `results` to `path` as JSON Lines, atomically (temporary file and rename). */
int batch_results_write(const char *path, const json_t *results);

/**
 * summary.json of `results` for a set of `total` tasks, `wall` seconds
 * since the batch began (0: unknown): counts per status, pass rate,
 * tokens, cost, time, the slowest and the most expensive tasks.
 */
json_t *batch_summary(const json_t *results, size_t total, double wall);

/** The summary table a person reads at the end, from `results` and `summary`. */
void batch_summary_table(struct buf *out, const json_t *results, const json_t *summary);

/**
 * Merge the results of `dirs` (each a results file, or a folder: its
 * results.jsonl and those of its shard-K folders) into `*out`, sorted by id; a task in several shards counts once (a
 * finished line over SKIPPED, else the later folder's).
 */
int batch_collect(json_t **out, const char *const *dirs, size_t n);

/**
 * The SWE-bench harness's predictions file: a JSON array of
 * {"instance_id", "model_name_or_path", "model_patch"}, one per result
 * (the patch empty when the task did not pass), written atomically.
 */
int batch_predictions_write(const char *path, const json_t *results, const char *model);

#endif
