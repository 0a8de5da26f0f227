#ifndef FX_TESTUTIL_H
#define FX_TESTUTIL_H

/*
 * Shared helpers for unit and end-to-end tests: temporary folders, files,
 * and running a program to completion with its output captured.
 * Include after <cmocka.h>'s prerequisites (stdarg, stddef, setjmp).
 */

#include <stddef.h>

#include "base/buf.h"
#include "base/strvec.h"

/** Create a fresh temporary folder (absolute path; caller frees). */
char *tu_mkdtemp(void);
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
 */
void tu_run(struct tu_result *r, const char *const *argv, const char *cwd,
	    const char *const *env_extra, const char *input);
void tu_result_release(struct tu_result *r);

/** The forgex binary under test ($FORGEX_BIN, else build/forgex). */
const char *tu_forgex(void);

#endif
