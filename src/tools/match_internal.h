#ifndef FX_TOOLS_MATCH_INTERNAL_H
#define FX_TOOLS_MATCH_INTERNAL_H

/*
 * Private to the matching engine: what finding (match.c), the matchers
 * that find a passage only approximately (match_near.c) and placing
 * (match_place.c) share. Callers use match.h.
 */

#include <stddef.h>

#include "tools/match.h"

#define MATCH_LEV_MAX 256	/* bytes of a line the edit distance looks at */

struct line {
	size_t start;		/* first byte */
	size_t end;		/* end of the content: before "\n" or "\r\n" */
	size_t next;		/* start of the next line (len at the end) */
};

struct lines {
	struct line *v;
	size_t nr, alloc;
};

/** The lines of `s` (`len` bytes) into `out` (its old table is not freed). */
void match_split_lines(struct lines *out, const char *s, size_t len);

/** [*a, *b): the content of line `l` of `s` without leading and trailing blanks. */
void match_trimmed(const char *s, const struct line *l, size_t *a, size_t *b);

/** The 1-based line of byte `off` of `s`. */
size_t match_line_of(const char *s, size_t off);

/** Append lines [from, to) of `text`, numbered as read_file numbers them, cut as explanations cut. */
void match_show_passage(struct buf *why, const char *text, const struct lines *ls, size_t from,
			size_t to);

/** Levenshtein distance of two byte strings, each cut at MATCH_LEV_MAX. */
size_t match_levenshtein(const char *a, size_t n, const char *b, size_t m);

struct match_cand {
	size_t start;		/* first line, 0-based */
	double score;
};

/**
 * The (at most `max`) windows of as many lines as `old` that are most like
 * it by the Dice coefficient of their lines' byte pairs and do not overlap,
 * best first, into `top`; their count.
 */
size_t match_rank_windows(struct match_cand *top, size_t max, const char *text,
			  const struct lines *fl, const char *old, const struct lines *ol);

/** Append `n` bytes of `s` with every line end made `eol`. */
void match_add_with_eol(struct buf *out, const char *s, size_t n, const char *eol);

/**
 * Of `n` places (0-based first lines, `span` lines each), the one that
 * holds line `sl` (1-based): the one starting there, else the only one
 * that covers it. -1 when there is no hint, or none or several cover it.
 */
long match_pick_by_line(const size_t *first, size_t n, size_t span, size_t sl);

/**
 * Replace the matches at `places` (`n` of them, ascending first lines of
 * the file, `ol->nr` lines each) with the lines of `new_text`, placed by
 * match_place_lines(). Returns 0, or FX_EINVAL with the reason in `why`.
 */
int match_place_all(struct match_result *out, const char *text, size_t len,
		    const struct lines *fl, const size_t *places, size_t n, const char *old,
		    const struct lines *ol, const char *new_text, const struct lines *nl,
		    const char *eol, const char *name, struct buf *why);

/**
 * The near-miss matcher (match.h, 9): FX_ENOTFOUND when no passage is close
 * enough (with a note in `why` when two were about as close and neither
 * stood out), FX_EINVAL with the places listed when several are equally
 * close and neither replace_all nor start_line chooses, else 0.
 */
int match_try_near(struct match_result *out, const char *text, size_t len,
		   const struct lines *fl, const char *old, size_t old_len,
		   const char *new_text, size_t new_len, int replace_all, size_t start_line,
		   const char *name, struct buf *why);

/**
 * Letter case, for a piece of one line (match.h, 10): the one place of the
 * text equal to `old` but for the case of ASCII letters that cuts no word
 * in two, replaced by `new` as sent. FX_ENOTFOUND when none or several.
 */
int match_try_case_piece(struct match_result *out, const char *text, size_t len,
			 const char *old, size_t old_len, const char *new_text, size_t new_len);

/**
 * The last matcher (match.h, 11): `old` and the file compared with all
 * whitespace, line breaks too, left out (a space kept only between two
 * letters or digits, so that words stay apart). Applies when the text
 * occurs exactly once, replacing the bytes from its first character to its
 * last with `new` as written (in the file's line ends). FX_ENOTFOUND
 * otherwise, with a note in `why` when it occurs several times.
 */
int match_try_nospace(struct match_result *out, const char *text, size_t len,
		      const char *old, size_t old_len, const char *new_text, size_t new_len,
		      struct buf *why);

/** A space, tab, CR, form feed or vertical tab: what the passes ignore at line edges. */
int match_is_blank(char c);

/** Append `s` with the escapes a model doubled undone (\n, \t, \", ...); 0 when it had none. */
int match_unescape(struct buf *out, const char *s, size_t n);

/** Append `s` with each tab after a line's first character written as \t; 0 when it had none. */
int match_escape_tabs(struct buf *out, const char *s, size_t n);

/**
 * map[j] (for j < m): the index of the line of `a` (k lines) paired with
 * b[j] in a longest common subsequence of equal lines, or -1. Above a
 * size bound only the common first and last lines are paired.
 */
void match_lcs_map(long *map, const struct match_slice *a, size_t k, const struct match_slice *b,
		   size_t m);

enum match_lineno_style { LN_NONE, LN_TAB, LN_BAR, LN_ARROW };

/**
 * `s` without the line-number prefixes of its lines, into `out`, when
 * every line has one of one style (`*style` set by the first, or given),
 * numbered one after the other when `consecutive`. Returns the number of
 * lines holding one (0: not every line does), the first number in *first.
 */
size_t match_strip_linenos(struct buf *out, const char *s, size_t n,
			   enum match_lineno_style *style, int consecutive, unsigned long *first);

/** Whether `s` holds nothing but blanks and line ends (or nothing). */
int match_only_blanks(const char *s, size_t n);

/** Whether some line of `s` starts with a line-number prefix. */
int match_any_lineno(const char *s, size_t n);

/**
 * Append `s` with its letters in lower case (every script's, see
 * match_fold.c). When `at` is given, (*at)[j] is the byte of `s` that
 * out's j-th new byte came from, and one more entry holds `n`; the caller
 * frees it.
 */
void match_fold(struct buf *out, size_t **at, const char *s, size_t n);

/**
 * Append the canonical decomposition (NFD) of `s` (`n` bytes): two texts
 * are canonically equivalent when these are equal (match_nfd.c).
 */
void match_nfd(struct buf *out, const char *s, size_t n);

#endif
