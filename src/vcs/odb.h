#ifndef FX_VCS_ODB_H
#define FX_VCS_ODB_H

/*
 * The shadow's object store; not for use outside src/vcs/.
 *
 * A libgit2 odb backend for `.forgex/checkpoints/objects` that replaces
 * libgit2's own loose backend, for two reasons:
 *
 *  - a damaged loose object (cut short by a crash, or corrupted) must be
 *    detected and treated as missing: libgit2 1.5 spins forever in
 *    inflate() on a truncated stream. Every object is inflated here with a
 *    bounded zlib loop (the header, then exactly the announced size,
 *    Z_STREAM_END required, nothing after it) and its id checked before
 *    libgit2 sees a byte; `exists` answers the same way, so a damaged copy
 *    never stops a good one from being written;
 *  - every file is reached from a descriptor of the objects folder with
 *    O_NOFOLLOW: a link planted as a fan-out folder or an object file is
 *    refused (reads) or replaced (writes), never followed.
 *
 * Writes go to a temporary file in the fan-out folder, renamed into place,
 * without an fsync (the caller's batch flushes them with one syncfs(2)).
 * Packs are not read (the shadow never packs).
 */

#include <git2.h>
#include <git2/sys/odb_backend.h>

/** A backend for the objects folder open as `objfd` (taken over; closed on free). */
int vcs_loose_backend(git_odb_backend **out, int objfd);

/**
 * Check the loose object file open as `fd` against `oid` (bounded
 * inflate, size and id). 0 when whole, FX_EPARSE when damaged (message
 * set). With `data`, `*data` (malloc'd), `*len` and `*type` receive it.
 */
int vcs_loose_check(int fd, const git_oid *oid, void **data, size_t *len, git_object_t *type);

/**
 * Make the objects written since the last flush durable with one fsync
 * each (and their folders'), when there are at most `max` of them: 0 done,
 * 1 too many (the caller flushes the whole file system instead, and calls
 * vcs_loose_forget_written()).
 */
int vcs_loose_flush(git_odb_backend *b, size_t max);
void vcs_loose_forget_written(git_odb_backend *b);

/**
 * Let git_odb_open_wstream() use this backend's streamed write (a
 * temporary file deflated as the bytes come, renamed once the id is
 * known) while `on`; off, it refuses, so that git_odb_write()'s fallback
 * after a failed write (a full disk) does not try again.
 */
void vcs_loose_allow_stream(git_odb_backend *b, int on);

/** Remember `oid` as damaged (a copy elsewhere was found so). */
void vcs_loose_note_damaged(git_odb_backend *b, const git_oid *oid);

/** Whether `oid` was found damaged by this backend since it was made. */
int vcs_loose_was_damaged(git_odb_backend *b, const git_oid *oid);

#endif
