#ifndef FX_CONFIG_TRUST_H
#define FX_CONFIG_TRUST_H

/*
 * Trusted project files (DESIGN.md section 4, "Project trust").
 *
 * A project's .forgex/config.toml may come from a cloned repository or be
 * written by a command, so the keys that loosen confinement or choose
 * where data and secrets go count from it only once the user has trusted
 * that file, as it is, with `forgex trust`. The user's state records each
 * trusted file as its absolute path and the SHA-256 of its content; a file
 * whose content changed since is untrusted again.
 *
 * The store is one text file, $XDG_STATE_HOME/forgex/trusted (else
 * ~/.local/state/forgex/trusted), a line per file:
 *
 *     <64 hex digits> <absolute path>
 *
 * Lines starting with '#' are comments. It is replaced atomically
 * (temporary file, fsync, rename), so a reader never sees half of it and a
 * symbolic link planted in its place is replaced, not written through. It
 * is read without following a final symbolic link, and only when it is a
 * regular file owned by the user (or root) that nobody else may write: any
 * other store trusts nothing, with an error that says why.
 */

#include <stddef.h>

#include "base/sha256.h"

struct trust_entry {
	char hash[SHA256_HEX_LEN + 1];
	char *path;
};

/** The store's path from XDG_STATE_HOME or HOME (caller frees); NULL when neither is set. */
char *trust_store_path(void);

/**
 * Load the store's entries (a missing store has none). `*out` and `*nr`
 * are set even on failure (empty); free with trust_entries_free().
 */
int trust_load(struct trust_entry **out, size_t *nr);
void trust_entries_free(struct trust_entry *e, size_t nr);

/**
 * Whether `path` is trusted with content hash `hash`: 1 trusted, 0 not
 * (`*recorded`, when not NULL, is set to 1 when the path is in the store
 * with another hash, i.e. the file changed since it was trusted).
 * Negative when the store cannot be read (then nothing is trusted).
 */
int trust_check(const char *path, const char *hash, int *recorded);

/** Record `path` with `hash`, replacing an earlier entry for it. */
int trust_add(const char *path, const char *hash);

/** Remove `path`; `*removed` says whether it was there. */
int trust_revoke(const char *path, int *removed);

#endif
