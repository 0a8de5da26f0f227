#ifndef FX_BATCH_TASK_H
#define FX_BATCH_TASK_H

/*
 * A batch's task set: one JSON object per line of TASKS.jsonl.
 *
 * forgex's own form:
 *   {"id", "repo", "commit", "request", "test_command"?, "config"?}
 * where `repo` is a local path (relative to the tasks file's folder) or a
 * git URL, `test_command` an argv array or one shell string, and `config`
 * an object of "section.key": value applied to the task's run as `-c`
 * flags.
 *
 * The SWE-bench instance form is read as it is: `instance_id`, `repo` as
 * "owner/name" (made a URL with the template, "{repo}" replaced),
 * `base_commit`, `problem_statement`, and FAIL_TO_PASS / PASS_TO_PASS (an
 * array, or a string holding one, as the published data sets have them),
 * which become the task's must-pass tests: its run gets them as
 * `pipeline.must_pass`, so that its verify gate runs just those tests and
 * passes the change only when every one of them passes.
 *
 * Blank lines and lines starting with '#' are skipped. Nothing here runs
 * git or reads a repository.
 */

#include <jansson.h>
#include <stddef.h>

#include "base/strvec.h"

#define BATCH_URL_TEMPLATE "https://github.com/{repo}.git"

struct batch_task {
	char *id;
	char *key;		/* id made a file name: [A-Za-z0-9._-], unique */
	char *repo;		/* as written (for results) */
	char *url;		/* what git clones: an absolute path or a URL */
	char *commit;
	char *request;		/* with the must-pass tests named, for SWE-bench */
	json_t *test_command;	/* array of strings, or NULL */
	json_t *config;		/* object "section.key" -> value, or NULL */
	struct strvec must_pass;	/* FAIL_TO_PASS then PASS_TO_PASS */
	size_t fail_to_pass;		/* how many of must_pass are FAIL_TO_PASS */
	int swebench;
	size_t line;		/* 1-based line in the file */
};

struct batch_tasks {
	struct batch_task *v;
	size_t nr, alloc;
};

#define BATCH_TASKS_INIT { NULL, 0, 0 }

/**
 * Read the tasks of `path` into `out` (appended). `url_template` makes an
 * SWE-bench "owner/name" a clone URL (NULL: BATCH_URL_TEMPLATE). FX_EPARSE
 * naming the file and line for a malformed line, a missing field or a
 * repeated id; FX_ENOTFOUND when the file cannot be read.
 */
int batch_tasks_load(struct batch_tasks *out, const char *path, const char *url_template);

void batch_tasks_release(struct batch_tasks *t);

/**
 * The shard (0 .. n-1) task `id` belongs to: FNV-1a of the id modulo n,
 * so a task's shard depends on its id alone, never on the order or the
 * other lines of the file.
 */
unsigned batch_shard_of(const char *id, unsigned n);

/** "K/N" (0 <= K < N) into `k` and `n`; FX_EINVAL otherwise. */
int batch_shard_parse(unsigned *k, unsigned *n, const char *s);

/** `value` as the text a `-c KEY=VALUE` flag takes (strings as they are, arrays as TOML). */
char *batch_config_text(const json_t *value);

#endif
