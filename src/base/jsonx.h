#ifndef FX_JSONX_H
#define FX_JSONX_H

/*
 * Helpers over jansson. Parsing errors become FX_EPARSE with line and
 * column; dumping goes into a `struct buf`; JSON Lines are appended to a
 * file descriptor with one write(2) so concurrent appenders do not
 * interleave within a line.
 */

#include <jansson.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/strvec.h"

/** Parse `len` bytes; `what` names the input in the error ("reply from X"). */
int jsonx_parse(json_t **out, const char *data, size_t len, const char *what);

/** Parse a whole file (at most `max` bytes, 0: no limit). */
int jsonx_load_file(json_t **out, const char *path, size_t max);

/** Append the compact (flags 0) or indented (JSON_INDENT(n)) form of `j`. */
void jsonx_dump(struct buf *out, const json_t *j, size_t flags);

/** Append `j` compactly plus "\n" to `fd` in a single write. */
int jsonx_write_line(int fd, const json_t *j);

/** The string member `key` of `obj`, or NULL when absent or not a string. */
const char *jsonx_str(const json_t *obj, const char *key);

/** The integer member `key`, or `def` when absent or not an integer. */
json_int_t jsonx_int(const json_t *obj, const char *key, json_int_t def);

/** The boolean member `key`, or `def` when absent or not a boolean. */
int jsonx_bool(const json_t *obj, const char *key, int def);

/** A new JSON array of the strings of `sv`. */
json_t *jsonx_from_strvec(const struct strvec *sv);

/**
 * Push the strings of the JSON array `arr` onto `out`. FX_EINVAL when
 * `arr` is not an array of strings (`out` is then unchanged).
 */
int jsonx_to_strvec(struct strvec *out, const json_t *arr);

/** Take a new reference-counted string, dying on allocation failure. */
json_t *jsonx_string(const char *s);
/** Same for `len` bytes that may not be valid UTF-8 (invalid bytes become U+FFFD). */
json_t *jsonx_stringn_lossy(const char *s, size_t len);

/** json_object_set_new() that dies when it fails (only on OOM). */
void jsonx_set(json_t *obj, const char *key, json_t *value);

#endif
