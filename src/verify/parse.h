#ifndef FX_VERIFY_PARSE_H
#define FX_VERIFY_PARSE_H

/*
 * Inside the output parsers (private to src/verify/).
 *
 * verify_parse() cleans the output into lines (ANSI escapes removed, "\r"
 * progress overwrites resolved) and runs every parser of the table in two
 * phases:
 *   1. claim: each parser marks the ranges of lines that quote other
 *      programs' output inside its own format (pytest's captured output
 *      and tracebacks, ctest's output of a failed test, TAP's YAML
 *      blocks, ...). Where claims overlap the one starting first (then the
 *      longer) wins, so the outermost runner owns what it quotes;
 *   2. parse: each parser reads the lines that are unclaimed or its own,
 *      reports tests with vs_test() and run-level counts with vs_counts().
 * A parser that reports anything has recognised its format. Its counts are
 * those given to vs_counts(), or else counted from its tests.
 *
 * Parsers must stay linear in the size of the output: the fuzz target
 * feeds them anything.
 */

#include <stddef.h>

#include "verify/verify.h"

/** One line of cleaned output (not NUL-terminated). */
struct vline {
	const char *s;
	size_t len;
};

/** A view of bytes, for parsing a line piece by piece. */
struct sv {
	const char *p;
	size_t n;
};

struct vsink;

/** What a parser sees. */
struct vscan {
	const struct vline *lines;
	size_t nr;
	const unsigned char *owner;	/* per line: 0 free, else parser id */
	unsigned char self;		/* this parser's id */
	const char *format;		/* this parser's name */
	struct vclaims *claims;		/* phase 1 */
	struct vsink *sink;		/* phase 2 */
};

struct verify_parser {
	const char *name;
	/** Phase 1, optional: vs_claim() what this format quotes. */
	void (*claim)(struct vscan *s);
	/** Phase 2: vs_test() / vs_counts() what this format says. */
	void (*parse)(struct vscan *s);
};

/* The parsers, one file each. */
extern const struct verify_parser verify_parser_pytest;
extern const struct verify_parser verify_parser_unittest;
extern const struct verify_parser verify_parser_gojson;
extern const struct verify_parser verify_parser_go;
extern const struct verify_parser verify_parser_cargo;
extern const struct verify_parser verify_parser_jest;
extern const struct verify_parser verify_parser_vitest;
extern const struct verify_parser verify_parser_node;
extern const struct verify_parser verify_parser_mocha;
extern const struct verify_parser verify_parser_ctest;
extern const struct verify_parser verify_parser_meson;
extern const struct verify_parser verify_parser_cmocka;
extern const struct verify_parser verify_parser_tap;
extern const struct verify_parser verify_parser_automake;
extern const struct verify_parser verify_parser_summary;

/** Whether line `i` is unclaimed or claimed by this parser. */
static inline int vs_visible(const struct vscan *s, size_t i)
{
	return !s->owner[i] || s->owner[i] == s->self;
}

/** Line `i` as a view. */
static inline struct sv vs_line(const struct vscan *s, size_t i)
{
	struct sv v = { s->lines[i].s, s->lines[i].len };
	return v;
}

/** Phase 1: claim lines [first, end) for this parser. */
void vs_claim(struct vscan *s, size_t first, size_t end);

/**
 * Phase 2: report a test. A name already reported by this parser in this
 * output is not added again: its outcome becomes the more severe of the
 * two (error > fail > pass > skip). Returns the test's handle for
 * vs_excerpt(); names are cut to VERIFY_NAME_MAX and control characters
 * become '?'.
 */
size_t vs_test(struct vscan *s, const char *name, size_t len, enum verify_outcome o);

/**
 * Phase 2: report a test that is a test of its own even when its name was
 * reported before (two `it('works')` in one suite: a pass and a fail are
 * two results). vs_find() then finds this one.
 */
size_t vs_test_new(struct vscan *s, const char *name, size_t len, enum verify_outcome o);

/**
 * Say that this output's test lines name every test its stated counts
 * count, so that verify_parse() cross-checks every count (else only the
 * failures) and reports a disagreement.
 */
void vs_lists_all(struct vscan *s);

/** The handle of the test called `name` reported by this parser, or (size_t)-1. */
size_t vs_find(struct vscan *s, const char *name, size_t len);

/** The outcome of test `h`. */
enum verify_outcome vs_outcome(struct vscan *s, size_t h);

/** How many tests this parser reported with outcome `o` (so far). */
long vs_count(struct vscan *s, enum verify_outcome o);

/** Number of handles given out so far (handles are 0 .. vs_nr() - 1). */
size_t vs_nr(struct vscan *s);

/** The name of test `h` (borrowed). */
const char *vs_name(struct vscan *s, size_t h);

/** The excerpt of test `h` ("" when none; borrowed until it changes). */
const char *vs_excerpt_of(struct vscan *s, size_t h);

/** Whether test `h` has an excerpt already. */
int vs_has_excerpt(struct vscan *s, size_t h);

/**
 * Set the excerpt of test `h` from the visible lines [first, end), blank
 * lines at both ends dropped; when longer than VERIFY_EXCERPT_MAX the
 * start and the end are kept around a "[...]" line. Replaces an earlier
 * excerpt only when `replace` is set.
 */
void vs_excerpt(struct vscan *s, size_t h, size_t first, size_t end, int replace);

/** Set the excerpt of test `h` from text. */
void vs_excerpt_text(struct vscan *s, size_t h, const char *text, size_t len, int replace);

/** Add run-level counts (each >= 0) stated by the output; marks the format recognised. */
void vs_counts(struct vscan *s, long passed, long failed, long skipped, long errors);

/** Mark the format recognised without reporting anything. */
void vs_recognised(struct vscan *s);

/* Views. */
static inline struct sv sv_make(const char *p, size_t n)
{
	struct sv v = { p, n };
	return v;
}
/** Drop leading spaces and tabs; returns how many. */
size_t sv_ltrim(struct sv *v);
/** Drop trailing whitespace. */
void sv_rtrim(struct sv *v);
/** Drop both. */
void sv_trim(struct sv *v);
/** Consume `prefix` when `v` starts with it. */
int sv_eat(struct sv *v, const char *prefix);
/** Whether `v` starts with `prefix`. */
int sv_starts(struct sv v, const char *prefix);
/** Whether `v` ends with `suffix`. */
int sv_ends(struct sv v, const char *suffix);
/** Whether `v` equals `s`. */
int sv_eq(struct sv v, const char *s);
/** Consume a decimal number (saturating at LONG_MAX / 4); 0 when none. */
int sv_eat_num(struct sv *v, long *out);
/** Offset of `needle` in `v`, or -1. */
long sv_find(struct sv v, const char *needle);
/** Offset of the last `needle` in `v`, or -1. */
long sv_rfind(struct sv v, const char *needle);
/** Consume up to the next space or tab; returns the token. */
struct sv sv_token(struct sv *v);
/** Whether `v` is `c` repeated at least `min` times (and nothing else). */
int sv_all(struct sv v, char c, size_t min);

/** Number of leading spaces (a tab counts as up to the next multiple of 8). */
size_t vl_indent(struct vline l);

/*
 * A small hash from names to size_t, for parsers that match lines to
 * tests (linear time on any input).
 */
struct vmap {
	struct vmap_slot *slots;
	size_t nr, alloc;
};

#define VMAP_INIT { NULL, 0, 0 }

/** Set `key` to `val` (copying the key). */
void vmap_put(struct vmap *m, const char *key, size_t len, size_t val);
/** The value of `key`, or (size_t)-1. */
size_t vmap_get(const struct vmap *m, const char *key, size_t len);
void vmap_release(struct vmap *m);

#endif
