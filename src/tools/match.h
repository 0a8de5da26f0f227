#ifndef FX_TOOLS_MATCH_H
#define FX_TOOLS_MATCH_H

/*
 * The matching behind edit_file (and the line matching apply_patch
 * shares), apart from any file so that it can be tested and fuzzed on
 * its own.
 *
 * match_apply() replaces `old` by `new` in a text. The matchers, in order
 * (docs/internals/tools.md gives each one's bounds); each is tried only
 * when the ones before it found nothing, each needs a unique match
 * (several is a refusal listing them, or, given a start_line, the one
 * holding that line), and the result names the matcher that matched:
 *   1. exact: `old` occurs exactly once (with replace_all: at least once,
 *      every occurrence replaced, never overlapping). When `old` as sent is
 *      not there, it is tried again with its line ends turned into the
 *      file's; in a file of mixed line ends, `new` takes those of the
 *      text it replaces;
 *   2. trailing whitespace: whole lines compared without trailing blanks;
 *   3. indentation: whole lines compared without leading and trailing
 *      blanks; `new` is re-indented (see below);
 *   4. internal whitespace: as 3, and a run of blanks inside a line counts
 *      as one space;
 *   5. unicode punctuation: as 4, with typographic dashes, quotes and
 *      spaces (‐‑‒–—―−, ‘’‚‛, “”„‟, no-break and other wide spaces) and …
 *      folded to ASCII;
 *   6. blank edges: 1-5 again without the blank lines at old's edges, or
 *      without the blanks and line breaks around what is a piece of one
 *      line (and as many of new's);
 *   7. escapes: `old` and `new` with the escapes a model doubled undone
 *      (\\n \\t \\' \\" \\` \\$ \\\\), then 1-5 again; or, when the file holds
 *      \\t, with the tabs after a line's first character written so;
 *   8. line numbers: every line of `old` starting with a read's line
 *      number ("%6d<TAB>", "N | ", "N→"), numbered one after the other:
 *      1-5 again without them (and without new's, when every line of new
 *      has one), the first number as the start_line hint;
 *   9. near miss: the one passage within MATCH_NEAR_MIN of `old` and
 *      MATCH_NEAR_MARGIN better than any other, with at most half of its
 *      lines differing (each MATCH_NEAR_LINE alike, or inside the passage
 *      the file's line with text added at one end) and one at least the
 *      same, or differing only by slips (commas, semicolons, one quote for
 *      another), or one line with a misspelt word (a letter more or less,
 *      two swapped, in a spelling the file has nowhere); several equally close
 *      are several occurrences (replace_all replaces each, start_line
 *      chooses);
 *  10. letter case: as 5, with letters compared in either case
 *      (`MYVARIABLE` for `myVariable`, `ÄNDERUNG` for `Änderung`; see
 *      match_fold.c), one place only (not with
 *      replace_all); `new` is written as sent; a one-line `old` may be a
 *      piece of a line that no word is cut from;
 *  11. no whitespace: `old` and the file compared with every blank and
 *      line break left out (but words kept apart unless `old` holds no
 *      whitespace at all; ending at a line's end when `old` does), one
 *      place only, at least 12 characters (8 when they are two words or
 *      more kept apart), not with replace_all: the
 *      bytes from the first to the last character matched are replaced by
 *      `new` as sent
 *      (Continue's one-line `function test(){return true;}` for a
 *      three-line function).
 * replace_all runs 1-9 on every occurrence. Each of 9-11 is named in the
 * result, so the model (and the user) can check the lines it changed.
 *
 * What is written, on every pass: the file's line ends (a CRLF file stays
 * CRLF, whatever `new` used), and the file's final-newline state (a file
 * that ended with a newline still does, one that did not still does not).
 * In matchers 2-9, lines of `new` equal to a line of `old` (the lines the
 * model kept) are written as the file has them, byte for byte; a `new`
 * already written in the file's indentation is not shifted again; the
 * other lines are re-indented by the shift between `old` and the file: when
 * every line of the match is shifted the same way (the file's indentation
 * is the model's plus, or minus, one same prefix), that shift applies to
 * every new line. When the shifts differ from line to line (the model
 * flattened or mangled the indentation), a changed line is placed only
 * where that is certain: a line replaced one for one by a line of the same
 * indentation takes that line's shift; a block of lines that all had one
 * indentation and one shift keeps it; anything else is refused with an
 * explanation rather than guessed (Aider's rule), so an edit never writes
 * an indentation the model did not mean.
 *
 * When nothing matched, the explanation shows the three passages most like
 * `old` with line numbers, and a line diff of `old` against the closest
 * one with the first differing column of each changed pair, so the model
 * can copy the exact characters.
 */

#include <stddef.h>

#include "base/buf.h"

#define MATCH_MAX_LINES_NOTED 16

enum match_pass {
	MATCH_EXACT = 0,
	MATCH_TRAILING,		/* trailing whitespace ignored */
	MATCH_INDENT,		/* leading and trailing whitespace ignored */
	MATCH_SPACES,		/* and runs of blanks inside lines */
	MATCH_UNICODE,		/* and typographic punctuation, canonical equivalence */
	MATCH_ESCAPES,		/* doubled escapes undone, then all the above */
	MATCH_TABS,		/* tabs inside lines written as the escape \t, then 1-5 */
	MATCH_LINENO,		/* line numbers copied from a read removed, then 1-5 */
	MATCH_NEAR,		/* one passage clearly closest, within the similarity bound */
	MATCH_CASE,		/* as MATCH_UNICODE, and letters of either case */
	MATCH_NOSPACE,		/* all whitespace left out, line breaks too */
};

/* The near-miss matcher: how similar the passage must be, and how much better than the next. */
#define MATCH_NEAR_MIN 0.90
#define MATCH_NEAR_MARGIN 0.10
/* How alike each line that differs must be, in a passage of four lines or more, and under four. */
#define MATCH_NEAR_LINE 0.75
#define MATCH_NEAR_LINE_SHORT 0.80

/** What the result tells the model about a pass ("ignoring trailing whitespace"). */
const char *match_pass_name(enum match_pass pass);

struct match_result {
	struct buf text;	/* the new content */
	size_t count;		/* replacements made */
	enum match_pass pass;	/* the pass that matched */
	/* 1-based lines (in the new text) where replacements start, the first ones */
	size_t lines[MATCH_MAX_LINES_NOTED];
	size_t span;		/* lines the first replacement covers in the new text */
	int blank_edges;	/* old's edges not in the text: 1 blank lines, 2 blanks of one line */
	enum match_pass level;	/* the normal form the lines were compared in */
	int similar;		/* MATCH_NEAR: the passage's similarity, in percent */
	size_t differ;		/* MATCH_NEAR: lines of old that differ from the file's */
	size_t by_line;		/* several matches: the start_line that chose this one */
	size_t laid_out;	/* new lines whose depth was a choice of layout (match_place_lines) */
	/* MATCH_NEAR on a misspelt word: "AS_SENT\nAS_IN_FILE", new_string respelt so */
	char *respelt;
};

#define MATCH_RESULT_INIT { BUF_INIT, 0, MATCH_EXACT, { 0 }, 0, 0, MATCH_EXACT, 0, 0, 0, 0, NULL }

/* The longest word the near-miss matcher takes for misspelt. */
#define MATCH_WORD_MAX 96

/**
 * Apply the edit to `text` (`len` bytes). `old` must not be empty.
 * Returns 0 with `out` filled; FX_ENOTFOUND when nothing matched and
 * FX_EINVAL when several places matched, old equals new, or the
 * indentation cannot be placed, with the explanation for the model
 * appended to `why` (which names the file as `name`). `out` is left empty
 * on failure.
 */
int match_apply(struct match_result *out, const char *text, size_t len, const char *old,
	       size_t old_len, const char *new_text, size_t new_len, int replace_all,
	       const char *name, struct buf *why);

/**
 * match_apply() with a line hint: when old matches several places,
 * `start_line` (1-based, 0 for none) chooses the one whose lines include
 * it; when none or several do, the refusal lists them all. A unique match
 * is applied wherever it is. Ignored with replace_all.
 */
int match_apply_at(struct match_result *out, const char *text, size_t len, const char *old,
		  size_t old_len, const char *new_text, size_t new_len, int replace_all,
		  size_t start_line, const char *name, struct buf *why);

/**
 * A lazy placeholder in `new` that `old` does not have: a whole line that is
 * only a comment or parenthesis standing for code left out ("// ... rest
 * of methods ...", "(rest of code unchanged)", "# ... existing code ...").
 * Returns the 1-based line of `new` holding the first, 0 when there is none;
 * the placeholder's text (as written, trimmed) is appended to `what`.
 */
size_t match_find_placeholder(const char *old, size_t old_len, const char *new_text,
			      size_t new_len, struct buf *what);

/** Free the new text; leaves MATCH_RESULT_INIT. */
void match_result_release(struct match_result *res);

/* ---- the pieces apply_patch shares ---- */

/** A piece of text (not NUL-terminated). */
struct match_slice {
	const char *s;
	size_t n;
};

/**
 * Append the form of the line `s` (`n` bytes, no line end) that pass
 * `level` compares: MATCH_EXACT as is, MATCH_TRAILING without trailing
 * blanks, MATCH_INDENT trimmed, MATCH_SPACES and inner runs of blanks as one
 * space, MATCH_UNICODE (and MATCH_ESCAPES) typographic punctuation folded
 * and canonically equivalent text made one (NFD) first.
 */
void match_norm_line(struct buf *out, const char *s, size_t n, enum match_pass level);

/**
 * The lines of `file` (`k` of them) matched the lines `old` (also `k`);
 * append the lines that replace them: `nw` (`m` lines), each followed by
 * `eol`, where a line equal to a line of `old` is written as the file has
 * it and the others are re-indented by the rules above. Returns the
 * number of new lines whose depth was a choice of layout (0 but in a file
 * whose language gives indentation no meaning, by `name`'s extension,
 * where a line is indented as the model indents two lines the file puts at
 * different depths: it takes the nearer one's), or FX_EINVAL with the
 * reason appended to `why` (naming lines from `first_line`, the 1-based
 * number of file[0], in `name`).
 */
int match_place_lines(struct buf *out, const struct match_slice *file, const struct match_slice *old,
		     size_t k, const struct match_slice *nw, size_t m, const char *eol,
		     const char *name, size_t first_line, struct buf *why);

/**
 * Append, for `old` found nowhere in `text`, the passages most like it
 * (numbered) and a diff of `old` against the closest, as match_apply() does.
 */
void match_explain_missing(struct buf *why, const char *text, size_t len, const char *old,
			  size_t old_len);

/** "\r\n" when most line ends of `text` are CRLF, else "\n". */
const char *match_eol_of(const char *text, size_t len);

/**
 * Append lines [from, to) (0-based) of `text` (`len` bytes), numbered as
 * read_file numbers them, as the explanations show passages: at most 20
 * lines, each cut at 300 bytes. edit_file shows the lines around a change
 * with it.
 */
void match_show_lines(struct buf *out, const char *text, size_t len, size_t from, size_t to);

#endif
