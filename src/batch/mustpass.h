#ifndef FX_BATCH_MUSTPASS_H
#define FX_BATCH_MUSTPASS_H

/*
 * A task's must-pass tests (SWE-bench's FAIL_TO_PASS and PASS_TO_PASS)
 * as its run saw them. The run itself enforces them (`-c
 * pipeline.must_pass=[...]`: its verify gate narrows the tests to these
 * and refuses the change unless every one passes); this reads back, for
 * results.jsonl, what each one did before and after the change.
 */

#include <jansson.h>

#include "batch/task.h"

/**
 * The must-pass tests of `t` from its run's events log `log` (JSON
 * Lines; the last test_result of "baseline" and of "after"): a new array
 * of {"test", "set": "FAIL_TO_PASS" | "PASS_TO_PASS", "before", "after"}
 * where before and after are "pass", "fail", "error", "skip", or null when
 * that run did not name the test or did not happen. NULL when `t` has no
 * must-pass tests. An unreadable log gives nulls, not an error.
 */
json_t *batch_must_pass(const struct batch_task *t, const char *log);

#endif
