#ifndef FX_VERIFY_H
#define FX_VERIFY_H

/*
 * The verification harness: find out how a project is tested, run that
 * command, and read the outcome from what it printed.
 *
 * The caller:
 *   1. verify_detect() names the command (argv), what kind of runner it
 *      is and why it was chosen;
 *   2. verify_run() runs it through a verify_run_fn (the sandbox executor
 *      in forgex, a function handing back captured output in tests) and
 *      parses the result; verify_parse() parses output the caller already
 *      holds;
 *   3. verify_compare() sets a result against a baseline result;
 *   4. verify_result_to_json() / verify_comparison_to_json() give the
 *      forms the pipeline stores, verify_result_from_json() reads one back;
 *   5. verify_command_release(), verify_result_release(),
 *      verify_comparison_release().
 *
 * Parsing never fails and never trusts the output: every format forgex
 * knows is recognised from the text itself, whatever command printed it,
 * and the counts of all formats found are added up. What it does not
 * recognise falls back to the exit status, keeping the tail of the output.
 * See docs/internals/verify.md.
 */

#include <jansson.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/strvec.h"

/* Bounds on what a result keeps, whatever the output's size. */
#define VERIFY_EXCERPT_MAX 2048	/* bytes of one failure excerpt */
#define VERIFY_NAME_MAX 512	/* bytes of one test name */
#define VERIFY_TESTS_MAX 10000	/* named tests kept per result */
#define VERIFY_TAIL_MAX 4096	/* bytes of output tail kept */

/** How the project's tests are run. */
struct verify_command {
	struct strvec argv;
	/* "configured", "make", "npm", "pytest", "unittest", "go", "cargo",
	 * "ctest", "meson" */
	char *kind;
	char *reason;		/* "Makefile has a 'check' target" */
	int configured;		/* from [pipeline] test_command: approved by the user */
	/* Run first, when not empty: the build the tests need (ctest:
	 * cmake --build DIR), so that they never run stale binaries. */
	struct strvec build;
	/* Whether the results are known to come from the current sources: 1
	 * when the runner builds what it tests (go, cargo, meson, make), forgex
	 * builds first (ctest), or nothing is compiled but Python bytecode,
	 * which forgex keeps in a private cache; 0 with `fresh_note` saying why
	 * it could not be ensured. */
	int fresh;
	char *fresh_note;
};

#define VERIFY_COMMAND_INIT { STRVEC_INIT, NULL, NULL, 0, STRVEC_INIT, 0, NULL }

/**
 * Decide how the project in `workspace` is tested. `test_command` is the
 * configured [pipeline] test_command (may be NULL or empty); when set it
 * wins. Otherwise, in order: a Makefile (GNUmakefile, makefile) with a
 * `test` or `check` target; package.json scripts.test (not npm's
 * placeholder); pytest configuration; Python test files (unittest);
 * go.mod; Cargo.toml; a configured CMake build folder (build*); a
 * configured meson build folder.
 *
 * On success `*out` (VERIFY_COMMAND_INIT or released) is filled.
 * FX_ENOTFOUND, with a message saying what was looked for and any near
 * miss (a CMakeLists.txt without a build folder), when nothing was found;
 * FX_ENOTFOUND also when `workspace` is not a folder.
 */
int verify_detect(struct verify_command *out, const char *workspace,
		  const struct strvec *test_command);

/** Free the contents of `cmd`; it is left as VERIFY_COMMAND_INIT. */
void verify_command_release(struct verify_command *cmd);

/** A new JSON object {"argv", "kind", "reason", "configured"}. */
json_t *verify_command_to_json(const struct verify_command *cmd);

enum verify_outcome {
	VERIFY_PASS = 0,
	VERIFY_FAIL,		/* an assertion failed */
	VERIFY_ERROR,		/* could not run: setup, collection, crash, bail out */
	VERIFY_SKIP,		/* skipped, todo, expected failure */
};

/** "pass", "fail", "error", "skip". */
const char *verify_outcome_name(enum verify_outcome o);

/** One test the output named. */
struct verify_test {
	char *name;		/* at most VERIFY_NAME_MAX bytes */
	enum verify_outcome outcome;
	char *excerpt;		/* failure details, at most VERIFY_EXCERPT_MAX bytes; NULL when none */
	const char *format;	/* the parser that found it (static string) */
};

/** What one run of the tests came to. */
struct verify_result {
	long passed, failed, skipped, errors;
	/* The tests the output named, in order: all failing ones, and the
	 * passing ones when the format lists them. */
	struct verify_test *tests;
	size_t tests_nr, tests_alloc;
	size_t tests_dropped;	/* named tests beyond VERIFY_TESTS_MAX */
	struct strvec formats;	/* the formats recognised, in table order */
	int exit_code;		/* the command's status; 128+N for signal N; -1 unknown */
	int timed_out;
	int truncated;		/* the runner dropped part of the output */
	long duration_ms;
	char *tail;		/* the last VERIFY_TAIL_MAX bytes of the output ("" when none) */
	/* Where a format states its counts and names its tests too and the two
	 * disagree: one sentence each ("node: the summary says 3 passed, the
	 * test lines 4"). The stated counts are kept. */
	struct strvec disagreements;
	int fresh;		/* see struct verify_command; 1 for output parsed as given */
	char *fresh_note;	/* why freshness is not ensured; NULL when it is */
};

#define VERIFY_RESULT_INIT { 0, 0, 0, 0, NULL, 0, 0, 0, STRVEC_INIT, -1, 0, 0, 0, NULL, \
			     STRVEC_INIT, 1, NULL }

/** Free the contents of `r`; it is left as VERIFY_RESULT_INIT. */
void verify_result_release(struct verify_result *r);

/**
 * Whether the run passed: exit status 0, no timeout, and no test failed
 * or errored in any format found.
 */
int verify_result_ok(const struct verify_result *r);

/** Number of tests in `r` with outcome VERIFY_FAIL or VERIFY_ERROR. */
size_t verify_result_failing(const struct verify_result *r);

/** Captured output of one run of the test command. */
struct verify_output {
	const char *out;	/* standard output (may be NULL when out_len is 0) */
	size_t out_len;
	const char *err;	/* standard error */
	size_t err_len;
	int exit_code;		/* 128+N for signal N; -1 unknown */
	int timed_out;
	int truncated;
	long duration_ms;
};

/**
 * Read the outcome of a run from its output into `out`
 * (VERIFY_RESULT_INIT or released). Standard output and then standard
 * error are read as one text. Every known format is looked for and their
 * counts are added; a timeout, a non-zero exit status with no failing
 * test, or output in no known format each add an error entry carrying the
 * tail of the output. Never fails; arbitrary bytes are fine.
 */
void verify_parse(struct verify_result *out, const struct verify_output *o);

/** The names of the known output formats, NULL-terminated, in the order they are tried. */
const char *const *verify_formats(void);

/*
 * Running. verify_run() calls a verify_run_fn to run the command; forgex
 * passes one that goes through the sandbox executor
 * (verify_executor_run() in tools/verify_executor.h: verify/ does not
 * know the sandbox), tests pass one that hands back captured output.
 */

/** What a verify_run_fn is asked to run. */
struct verify_request {
	const struct verify_command *cmd;
	const char *workspace;	/* the project root; the command runs there */
	long timeout_seconds;	/* 0: the runner's default */
};

/** What a verify_run_fn hands back; verify_run() releases it. */
struct verify_capture {
	struct buf out, err;
	int exit_code;
	int timed_out;
	int truncated;
	long duration_ms;
	char *note;		/* what the runner could not set up (a cache), or NULL */
};

#define VERIFY_CAPTURE_INIT { BUF_INIT, BUF_INIT, -1, 0, 0, 0, NULL }

/**
 * Run `req->cmd` and fill `out` (VERIFY_CAPTURE_INIT). Returns >= 0 when
 * the command ran (whatever its exit status), or a negative FX_E* code
 * with err_set() when it could not: FX_EDENIED when refused by policy or
 * sandbox.
 */
typedef int (*verify_run_fn)(struct verify_capture *out, const struct verify_request *req,
			     void *data);

/**
 * The forgex-owned cache folder of the test runs of `workspace` (an
 * absolute, resolved path) into `out`, made when missing:
 * $XDG_CACHE_HOME/forgex/tests/NAME-HASH (else ~/.cache/...), mode 0700,
 * refused unless it is a real folder of this user. Test commands may
 * write there (it is added to the sandbox's writable roots for them);
 * it persists between runs. FX_ENOTFOUND, FX_EOS, FX_EDENIED.
 */
int verify_cache_dir(struct buf *out, const char *workspace);

/**
 * Run the tests with `run` (given `data`) and parse the outcome into
 * `out` (VERIFY_RESULT_INIT). When `req->cmd->build` is set it runs
 * first; if it fails, `out` is its outcome (not ok) with `fresh_note`
 * saying the tests did not run. `out->fresh` and `fresh_note` carry the
 * command's freshness and the runner's note. Returns 0 when the command ran, whatever the
 * tests said, or the error of `run` (`out` then untouched).
 */
int verify_run(struct verify_result *out, const struct verify_request *req,
	       verify_run_fn run, void *data);

/*
 * Comparing with a baseline.
 */

enum verify_change {
	VERIFY_UNCHANGED = 0,	/* passed before and passes now (or skipped both times) */
	VERIFY_NEWLY_FAILING,	/* passed (or unknown) before, fails now */
	VERIFY_FIXED,		/* failed before, passes now */
	VERIFY_STILL_FAILING,	/* failed before and fails now */
	VERIFY_NEW,		/* not in the baseline at all */
	VERIFY_REMOVED,		/* in the baseline, gone now */
	VERIFY_CHANGE__COUNT,
};

/** "unchanged", "newly_failing", "fixed", "still_failing", "new", "removed". */
const char *verify_change_name(enum verify_change c);

struct verify_change_entry {
	char *name;
	enum verify_change change;
	int before;		/* enum verify_outcome in the baseline, -1 when absent or unknown */
	int after;		/* enum verify_outcome now, -1 when absent or unknown */
};

struct verify_comparison {
	struct verify_change_entry *entries;
	size_t entries_nr, entries_alloc;
	size_t counts[VERIFY_CHANGE__COUNT];
	/* Run-level numbers, for outputs that name no tests. */
	long failing_before, failing_after;	/* failed + errors */
	int regressed;		/* something fails now that did not before */
	/* The baseline ran to the end with its output whole (not timed out,
	 * not truncated): a test it did not name as failing did not fail. */
	int baseline_complete;
	long passed_before, passed_after;
	long ran_before, ran_after;	/* passed + failed + skipped + errors */
	/* Tests that no longer pass and that no named failure accounts for:
	 * passed_before + fixes - passed_after - newly failing (0 when none,
	 * or when the baseline was not complete). */
	long passed_drop;
	size_t regressions;	/* entries that count as regressions (see verify_is_regression()) */
};

#define VERIFY_COMPARISON_INIT { NULL, 0, 0, { 0 }, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 }

/**
 * Classify every test of `baseline` and `current` into `out`
 * (VERIFY_COMPARISON_INIT). A test only the current run names is "new"
 * when the baseline listed every test it ran, and "newly failing" when it
 * fails and the baseline only listed failures (it may have passed
 * silently). A baseline failure the current run does not name is "fixed"
 * when the current run only lists failures and was recognised, "removed"
 * when the current run lists all its tests. `regressed` is set when an
 * entry is a regression (verify_is_regression()), when fewer tests pass
 * than the baseline and the fixes account for (`passed_drop`), or,
 * without names, when more fail than before. A baseline that timed out
 * or whose output was cut is not complete: only what it named counts.
 */
void verify_compare(struct verify_comparison *out, const struct verify_result *baseline,
		    const struct verify_result *current);

void verify_comparison_release(struct verify_comparison *c);

/**
 * Whether entry `e` of `c` is a regression: a test that fails now and
 * did not fail at a complete baseline (whether or not the baseline named
 * it passing), a test that passed or was skipped at any baseline and
 * fails now, or a failing test the baseline did not have.
 */
int verify_is_regression(const struct verify_comparison *c,
			 const struct verify_change_entry *e);

/** A new JSON object with the counts, formats, run facts and tests of `r`. */
json_t *verify_result_to_json(const struct verify_result *r);

/**
 * Read a result written by verify_result_to_json() into `out`
 * (VERIFY_RESULT_INIT). FX_EPARSE naming the first bad member.
 */
int verify_result_from_json(struct verify_result *out, const json_t *j);

/** A new JSON object with the change counts, run numbers and entries of `c`. */
json_t *verify_comparison_to_json(const struct verify_comparison *c);

/*
 * Must-pass tests: test ids a task says must pass after the change
 * (SWE-bench's FAIL_TO_PASS and PASS_TO_PASS), as the runner names them:
 * pytest node ids ("tests/test_x.py::TestA::test_b"), dotted unittest
 * names ("mod.Class.test_b"), or the "test_b (mod.Class)" form of Django
 * and of unittest before Python 3.11.
 */

/** The name verify's parsers give the test `id` ("test_b (mod.Class)" -> "mod.Class.test_b"); caller frees. */
char *verify_test_key(const char *id);

/** The outcome (enum verify_outcome) of the test `id` in `r`, or -1 when `r` does not name it. */
int verify_outcome_of(const struct verify_result *r, const char *id);

/**
 * Narrow `cmd` to the tests `ids` (none: nothing changes), in a way that
 * names every selected test with its outcome: pytest gets -rA and the node
 * ids; unittest -v and one -k per test (which also works with discover);
 * Django's runtests.py or `manage.py test` --verbosity=2 and the dotted
 * labels. Returns 1 when narrowed (`cmd->reason` says so), 0 for a runner
 * forgex cannot narrow (it runs whole; the ids are still looked for in
 * its output), FX_EINVAL for an id that is empty, several lines, or
 * starts with '-' (it would be an option).
 */
int verify_select(struct verify_command *cmd, const struct strvec *ids);

/**
 * The must-pass gate: 1 when some test of `ids` did not pass in `r`
 * (NULL: the tests did not run), with the tests and why ("fail", "not in
 * the output") appended to `why` (after "; " when it holds something);
 * 0 when every one passed or `ids` is empty.
 */
int verify_must_pass_gate(struct buf *why, const struct verify_result *r,
			  const struct strvec *ids);

#endif
