#ifndef FX_TESTUTIL_H
#define FX_TESTUTIL_H

/*
 * Shared helpers for unit and end-to-end tests: temporary folders, files,
 * and running a program to completion with its output captured.
 * Include after <cmocka.h>'s prerequisites (stdarg, stddef, setjmp).
 */

#include <stddef.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/strvec.h"

/** Create a fresh temporary folder (absolute path; caller frees). */
char *tu_mkdtemp(void);
/**
 * A fresh folder outside the sandbox's private places: under /var/tmp,
 * never /tmp (a sandboxed command has a /tmp of its own, so a write there
 * would miss the folder for the wrong reason) nor the test's home.
 */
char *tu_outside_mkdtemp(void);
/** Remove a folder tree and free the path. */
void tu_rmtree(char *path);
/** Write `content` to `dir`/`rel`, creating parent folders. */
void tu_write(const char *dir, const char *rel, const char *content);
/** Read `dir`/`rel` into a new string (caller frees); NULL when missing. */
char *tu_read(const char *dir, const char *rel);

struct tu_result {
	int status;		/* exit status, or 128+signal */
	struct buf out, err;
};

/**
 * Run `argv` in `cwd` (NULL: current), with `env_extra` ("K=V" entries
 * added to the current environment; "K" alone removes K), feeding
 * `input` (may be NULL) on stdin. Waits for the end.
 *
 * Isolation: before main(), every program linked with this file sets
 * HOME, XDG_CONFIG_HOME, XDG_STATE_HOME and XDG_CACHE_HOME to a temporary
 * folder of its own (tu_home(), removed at exit), so no test and no child
 * it starts, with tu_run() or its own exec, reads or writes the real
 * user's configuration, trust store or caches. To override for one
 * child, pass the variable in `env_extra` ("HOME=/x", or "XDG_CONFIG_HOME"
 * alone to unset it); run a test with TU_KEEP_HOME=1 in its environment
 * to keep the real ones.
 */
void tu_run(struct tu_result *r, const char *const *argv, const char *cwd,
	    const char *const *env_extra, const char *input);
void tu_result_release(struct tu_result *r);

/** What tu_run_watched() does while the program runs, and what it saw. */
struct tu_watch {
	int sig;		/* a signal to send (0: none), once `sig_marker` */
	const char *sig_marker;	/* shows on stderr, or (when NULL) */
	double sig_after;	/* after this many seconds */
	const char *mark;	/* note when this first shows on stdout */
	double deadline;	/* SIGKILL after this many seconds */
	double started, ended;	/* set: CLOCK_MONOTONIC seconds */
	double mark_at;		/* set: when `mark` showed; 0: never */
	int killed;		/* set: killed at the deadline */
};

/**
 * Run `argv` as tu_run() does (stdin /dev/null), watching it as `w` says:
 * for the tests that interrupt a program at a given point or time.
 */
void tu_run_watched(struct tu_result *r, const char *const *argv, const char *cwd,
		    const char *const *env_extra, struct tu_watch *w);
/** CLOCK_MONOTONIC in seconds. */
double tu_now(void);

/** Run `sh -c cmd` in `dir` (as tu_run); the test fails when it fails. */
void tu_sh(const char *dir, const char *cmd);
/** tu_sh(), and what it printed on stdout, trailing white space cut (the caller frees it). */
char *tu_sh_out(const char *dir, const char *cmd);
/** Formatted text that lives for the next 32 calls (no frees in the asserts). */
char *tu_fmt(const char *f, ...) FX_PRINTF(1, 2);
/**
 * Make `dir` a git repository with everything in it committed (as user
 * "t"), its test runs' bytecode cache seeded (tu_seed_bytecode()).
 */
void tu_git_init(const char *dir);
/**
 * Give the test runs forgex makes in `workspace` the compiled standard
 * library a user's second run finds: copy tests/run.sh's seed
 * ($FORGEX_TEST_PYCACHE: Python's bytecode prefix after one `python3 -m
 * unittest` elsewhere) into that workspace's cache folder (verify_cache_dir(),
 * as forgex finds it with this process's XDG_CACHE_HOME), unless it holds
 * a prefix already: hard links where it can (the seed's files are
 * read-only; Python replaces a .pyc by rename, never writes one in place). Without it each new workspace's first Python test run
 * compiles unittest and what it imports again, a quarter of a second of
 * CPU, some 160 times per `make test`. Nothing of the workspace's own is
 * in the seed, so what a run reads of the project is compiled as before;
 * a test of the prefix itself does not call this. No seed: nothing done.
 * A `workspace` that does not exist yet is taken as the absolute, resolved
 * path forgex will have (a batch's worktrees).
 */
void tu_seed_bytecode(const char *workspace);

/** The isolated home (NULL with TU_KEEP_HOME=1). */
const char *tu_home(void);

/**
 * Run `forgex -C dir trust` with `env_extra` (as tu_run), as a user who
 * read the project file would; dies when it fails.
 */
void tu_trust(const char *dir, const char *const *env_extra);

/** The forgex binary under test ($FORGEX_BIN, else build/forgex). */
const char *tu_forgex(void);

struct CMUnitTest;

/**
 * Run the group `tests` (`nr` of them) as cmocka_run_group_tests_name()
 * does, or one shard of it: with TEST_SHARD=k/n in the environment
 * (tests/run.sh sets it for the suites it splits), only tests k, k+n,
 * k+2n, ... (counting from 1) run, so the n shards together run each test
 * once. The tests of a sharded suite must not depend on one another.
 */
int tu_run_group(const char *name, const struct CMUnitTest *tests, size_t nr,
		 int (*setup)(void **), int (*teardown)(void **));

#define tu_run_group_tests(tests, setup, teardown) \
	tu_run_group(#tests, (tests), sizeof(tests) / sizeof((tests)[0]), (setup), (teardown))

#endif
