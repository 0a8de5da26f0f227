#ifndef FX_STRVEC_H
#define FX_STRVEC_H

/*
 * A NULL-terminated vector of owned strings, after git's strvec: `v` is
 * never NULL (an empty vector points at a static { NULL }), so it can be
 * passed to execv() as it is.
 */

#include <stddef.h>

#include "base/err.h"

struct strvec {
	const char **v;
	size_t nr;
	size_t alloc;
};

extern const char *strvec_empty[];
#define STRVEC_INIT { strvec_empty, 0, 0 }

void strvec_init(struct strvec *sv);
/** Push a copy of `s`; returns the copy (borrowed). */
const char *strvec_push(struct strvec *sv, const char *s);
const char *strvec_pushf(struct strvec *sv, const char *fmt, ...) FX_PRINTF(2, 3);
/** Push copies of every string of the NULL-terminated `argv`. */
void strvec_pushv(struct strvec *sv, const char *const *argv);
void strvec_pop(struct strvec *sv);
/** Index of the first string equal to `s`, or -1. */
long strvec_find(const struct strvec *sv, const char *s);
/** Free every string and the vector; leaves it as STRVEC_INIT. */
void strvec_clear(struct strvec *sv);
/** Copy `src` into the empty `dst`. */
void strvec_copy(struct strvec *dst, const struct strvec *src);
/** Take the array (caller frees each string and the array). */
const char **strvec_detach(struct strvec *sv);

#endif
