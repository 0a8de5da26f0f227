#ifndef FX_CONTEXT_TOKENIZE_H
#define FX_CONTEXT_TOKENIZE_H

/*
 * The identifier scan of the repository map: which names a file refers
 * to. One pass over the bytes with a 256-entry class table, no regular
 * expression and no allocation per identifier.
 *
 * An identifier is a maximal run of [A-Za-z0-9_$] (and bytes >= 0x80, so
 * that UTF-8 names stay whole) that does not start with a digit and is
 * at least CTX_IDENT_MIN bytes long; a run that starts with a digit (a
 * number such as 0x1f or 10ul) is skipped whole. Comments and strings are
 * not told apart from code: a name in a comment counts as a reference,
 * as it does for a person reading the file.
 *
 * Also the hash the index uses for file contents and names.
 */

#include <stddef.h>
#include <stdint.h>

#define CTX_IDENT_MIN 2		/* shorter identifiers say nothing */
#define CTX_IDENT_MAX 128	/* longer ones are not names a person wrote */

/**
 * Called for each identifier: `s`/`len` point into the scanned text;
 * `hash` is ctx_ident_hash(s, len). Return non-zero to stop the scan.
 */
typedef int (*ctx_ident_fn)(void *data, const char *s, size_t len, uint64_t hash);

/**
 * Scan `len` bytes of `text` and call `fn` for each identifier, in order.
 * Returns the number of identifiers reported.
 */
size_t ctx_tokenize(const char *text, size_t len, ctx_ident_fn fn, void *data);

/** Whether byte `c` may continue an identifier. */
int ctx_ident_char(unsigned char c);

/** FNV-1a over the bytes of a name: what symbols are hashed with (computed during the scan). */
static inline uint64_t ctx_ident_hash(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

/** A 64-bit hash of `len` bytes (not cryptographic; stable across runs and machines). */
uint64_t ctx_hash(const void *data, size_t len);

#endif
