#ifndef FX_TOOLS_EDIT_H
#define FX_TOOLS_EDIT_H

/*
 * The matching behind edit_file, apart from any file so that it can be
 * tested and fuzzed on its own.
 *
 * edit_apply() replaces `old` by `new` in a text:
 *   1. exact: `old` must occur exactly once (or, with replace_all, at
 *      least once: every occurrence is replaced, left to right, never
 *      overlapping);
 *   2. otherwise, whitespace-tolerant: the lines of `old` are compared
 *      with the lines of the text ignoring leading and trailing blanks and
 *      CR; when exactly one run of lines matches, those whole lines are
 *      replaced by `new`, re-indented to the file (each line of `new`
 *      indented like a line of `old` gets the indentation of the file's
 *      matching line; others are shifted by the difference of the first
 *      lines) and with the file's line ends (CRLF stays CRLF);
 *   3. otherwise nothing changes and the explanation lists, with line
 *      numbers, every place that matched (several) or the three passages
 *      most similar to `old` (none), so the model can retry.
 */

#include <stddef.h>

#include "base/buf.h"

#define EDIT_MAX_LINES_NOTED 16

struct edit_result {
	struct buf text;	/* the new content */
	size_t count;		/* replacements made */
	int fuzzy;		/* 1 when step 2 matched */
	/* 1-based lines (in the new text) where replacements start, the first ones */
	size_t lines[EDIT_MAX_LINES_NOTED];
	size_t span;		/* lines the first replacement covers in the new text */
};

#define EDIT_RESULT_INIT { BUF_INIT, 0, 0, { 0 }, 0 }

/**
 * Apply the edit to `text` (`len` bytes). `old` must not be empty.
 * Returns 0 with `out` filled; FX_ENOTFOUND when nothing matched and
 * FX_EINVAL when several places matched (or old equals new), with the
 * explanation for the model appended to `why` (which names the file as
 * `name`). `out` is left empty on failure.
 */
int edit_apply(struct edit_result *out, const char *text, size_t len, const char *old,
	       size_t old_len, const char *new_text, size_t new_len, int replace_all,
	       const char *name, struct buf *why);

/** Free the new text; leaves EDIT_RESULT_INIT. */
void edit_result_release(struct edit_result *res);

#endif
