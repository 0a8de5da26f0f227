#ifndef FX_BASE_BENEATH_H
#define FX_BASE_BENEATH_H

/*
 * Opening a path beneath a folder without following any symbolic link:
 * the one way forgex does it (the workspace's confined paths in
 * ws/wspath.h, the checkpoints' shadow repository, the project file, the
 * files a run reads from the workspace). It sits in base/, below the
 * workspace layer, because config/ reads .forgex/config.toml with it.
 *
 * How: openat2(2) with RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
 * RESOLVE_NO_MAGICLINKS, so the kernel refuses a link anywhere on the way
 * and a ".." that climbs out, even when a component is swapped for a link
 * while the call runs. Where the kernel lacks openat2 (ENOSYS, or a
 * seccomp filter that answers EPERM), and for a path longer than
 * PATH_MAX, the path is walked one component at a time from `dirfd`, each
 * opened with O_NOFOLLOW, and any ".." is refused: just as confined, a
 * few more system calls.
 *
 * The calls do not record messages: they return -1 with errno, and the
 * caller names the path the way its reader needs (a model, a person).
 */

#include <stddef.h>
#include <sys/types.h>

/**
 * Open `rel` beneath the folder `dirfd` with `flags` (O_CLOEXEC is added;
 * `mode` is for O_CREAT), following no symbolic link on the way or at the
 * end. "" and "." open the folder itself. Returns the descriptor, or -1
 * with errno: ELOOP when a link is on the way, EXDEV for a way out (".."),
 * ENOENT, ENOTDIR, and the open's own errors. EAGAIN and EINTR from
 * openat2 (a rename raced it) are retried a few times.
 */
int beneath_open(int dirfd, const char *rel, int flags, mode_t mode);

/**
 * Make the folder `rel` beneath `dirfd` with `mode`, following no symbolic
 * link on the way (its parent is opened with beneath_open()) nor at the
 * end (mkdirat(2): a link there is EEXIST). The parent must exist.
 * Returns 0, or -1 with errno as beneath_open() and mkdirat() give it
 * (ELOOP: a link on the way; EEXIST: something is there already; EINVAL:
 * no last component).
 */
int beneath_mkdir(int dirfd, const char *rel, mode_t mode);

/**
 * The length of the first leading part of `rel` beneath `dirfd` that is a
 * symbolic link ("a/b" of "a/b/c" when b is one), or 0 when none is: for
 * a message after beneath_open() said ELOOP.
 */
size_t beneath_link_prefix(int dirfd, const char *rel);

/** Whether openat2 is used (1) or the walk alone (0); probed once. */
int beneath_have_openat2(void);

/**
 * For tests: 1 forces the walk without openat2, 0 restores detection.
 * Returns the previous setting.
 */
int beneath_force_fallback(int on);

#endif
