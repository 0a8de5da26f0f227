#ifndef FX_TOML_H
#define FX_TOML_H

/*
 * A TOML 1.0.0 parser (https://toml.io/en/v1.0.0). Debian packages no C
 * TOML library, so this one is ours; it passes the toml-test 1.0.0 corpus.
 *
 * The caller:
 *   1. toml_parse() a whole document into a tree of `struct toml_value`;
 *   2. walks the root table (toml_table_get(), or the arrays directly);
 *   3. toml_free() the root.
 *
 * Every value and key carries the line and column (1-based, columns in
 * bytes) where it was written, so configuration errors can point at it.
 * Errors are FX_EPARSE with a message "FILE:LINE:COL: what is wrong".
 *
 * Limits: tables and arrays nest at most TOML_MAX_DEPTH levels below the
 * root (counting those that [a.b.c] headers and dotted keys create), so
 * parsing and toml_free() never recurse deeper than that; a document over
 * INT_MAX bytes is refused with FX_ELIMIT. Parsing takes time linear in
 * the size of the document.
 *
 * Strings and keys are valid UTF-8, NUL-terminated, and may hold NULs
 * (use `len` / `keylen`). Date-times keep the text as written (e.g.
 * "1979-05-27 07:32:00Z"), already validated. Multi-line strings have
 * their CRLF line ends turned into LF.
 */

#include <stddef.h>
#include <stdint.h>

/** The deepest nesting of tables and arrays toml_parse() accepts. */
#define TOML_MAX_DEPTH 1000

enum toml_type {
	TOML_STRING,
	TOML_INTEGER,
	TOML_FLOAT,
	TOML_BOOL,
	TOML_DATETIME,		/* offset date-time, text as written */
	TOML_DATETIME_LOCAL,
	TOML_DATE_LOCAL,
	TOML_TIME_LOCAL,
	TOML_ARRAY,
	TOML_TABLE,
};

struct toml_value;

struct toml_kv {
	char *key;		/* NUL-terminated; may hold NULs, see keylen */
	size_t keylen;
	int line, col;		/* where the key was written */
	struct toml_value *value;
};

struct toml_value {
	enum toml_type type;
	int line, col;		/* where the value (or table header) was written */
	union {
		struct { char *ptr; size_t len; } str;	/* strings and date-times */
		int64_t i;
		double f;
		int b;
		struct { struct toml_value **items; size_t nr, alloc; } arr;
		struct { struct toml_kv *items; size_t nr, alloc; } tab;
	} u;
};

/**
 * Parse `len` bytes of `data`. `name` is used in error messages. On
 * success `*out` is the root table (caller frees with toml_free()).
 */
int toml_parse(struct toml_value **out, const char *data, size_t len, const char *name);

/** Free a tree; NULL is fine. */
void toml_free(struct toml_value *v);

/**
 * The member `key` of a table, or NULL (borrowed). NULL too when `table`
 * is NULL or not a table. A linear scan of the table; a key holding a NUL
 * cannot be named here (walk `u.tab.items` instead).
 */
const struct toml_value *toml_table_get(const struct toml_value *table, const char *key);

/** The key/value entry `key` of a table, or NULL (borrowed). */
const struct toml_kv *toml_table_entry(const struct toml_value *table, const char *key);

/** "string", "integer", ... for messages. */
const char *toml_type_name(enum toml_type t);

#endif
