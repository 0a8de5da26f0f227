#ifndef FX_TEST_FAULTFS_H
#define FX_TEST_FAULTFS_H

/*
 * Helpers of the fault suites (tests/e2e/faults.c, tests/e2e/fullro.c).
 */

#include "base/strvec.h"
#include "helpers/scripted.h"

#define FF_CALC_PY "def add(a, b):\n    return a - b\n"

/**
 * Enter a mount namespace of this program's own (as root; else a user
 * namespace as well, this user as its root), nothing mounted in it seen
 * outside. Call before any thread. 1 when done.
 */
int ff_enter_namespace(void);

/** A fresh tmpfs of `mb` MiB on a new temporary folder (ff_small_release ends it). */
char *ff_small_fs(int mb);
void ff_small_release(char *base);

/**
 * Every entry under `dir` but .git and .forgex, with its type and mode,
 * a file's bytes, a link's target; folders too, empty ones included.
 */
char *ff_snapshot(const char *dir);
/** The same; with `skip_tmp`, without the ".NAME.fx-XXXXXXXX.tmp" files of forgex's writes. */
char *ff_snapshot_ex(const char *dir, int skip_tmp);

/**
 * What forgex left of its own under `dir`/.forgex: its
 * temporary files (".NAME.fx-XXXXXXXX.tmp") and a rollback's half-made
 * saved copies ("saved/N.new"), relative paths separated by spaces; ""
 * when none.
 */
char *ff_forgex_leftovers(const char *dir);

/** The lines of `want` missing from `got` and the extra ones, for a message. */
char *ff_difference(const char *want, const char *got);

/** Append each line of `text` to `out`. */
void ff_split_lines(struct strvec *out, const char *text);

/**
 * The project, in `base`/p, its user configuration `more` (after the
 * mock `m` as provider): calc.py (add is wrong) and its test, an
 * executable run.sh, a link to calc.py, olddir/keep.txt, an ignored .env,
 * all committed, and an untracked notes.txt.
 */
void ff_project(struct sc_proj *p, const char *base, const struct mock *m, const char *more);

#endif
