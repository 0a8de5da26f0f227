/*
 * The native backend's mounts (see native.h), as bubblewrap keeps its
 * bind-mount.c: the plan, built in the parent once per executor (see
 * native_mounts_plan()), and its application in the supervisor, inside
 * the new mount namespace, with async-signal-safe calls only.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/path.h"
#include "sandbox/native.h"

#define HARDLINK_SCAN_MAX 200000	/* directory entries looked at, per executor */
#define HARDLINK_MOUNTS_MAX 2048	/* read-only binds for files with several links */
#define HARDLINK_DIR_COLLAPSE 16	/* this many in one folder: bind the folder */

static const char *keep_path(struct native_state *st, const char *path)
{
	return strvec_push(&st->paths, path);
}

static void add_op(struct native_state *st, int kind, int flags, int slot, const char *path,
		   const char *data)
{
	struct sb_mount_op *op;

	ALLOC_GROW(st->ops, st->ops_nr + 1, st->ops_alloc);
	op = &st->ops[st->ops_nr++];
	op->kind = kind;
	op->flags = flags;
	op->slot = slot;
	op->path = path;
	op->data = data;
}

/* Home folder places that hold credentials or agent sockets. */
static const char *const hidden_in_home[] = {
	".ssh", ".gnupg", ".aws", ".kube", ".docker", ".netrc", ".git-credentials",
	".config/forgex", ".cache/git/credential", ".config/gh", ".config/hub",
	".config/gcloud", ".azure", ".password-store", ".local/share/keyrings",
	".pypirc", ".cargo/credentials", ".cargo/credentials.toml", ".vault-token",
	".terraform.d/credentials.tfrc.json",
};

static int in_writable_root(const struct executor *ex, const char *path)
{
	size_t i;

	if (path_is_within(path, ex->workspace))
		return 1;
	for (i = 0; i < ex->writable_roots.nr; i++)
		if (path_is_within(path, ex->writable_roots.v[i]))
			return 1;
	return 0;
}

static int is_ancestor_of_root(const struct executor *ex, const char *path)
{
	size_t i;

	if (path_is_within(ex->workspace, path))
		return 1;
	for (i = 0; i < ex->writable_roots.nr; i++)
		if (path_is_within(ex->writable_roots.v[i], path))
			return 1;
	return 0;
}

/*
 * Resolve one place to hide and plan its mount: an empty read-only tmpfs
 * over a folder, /dev/null (nodev: every open fails) over anything else.
 * Missing places are left alone; so is /run (replaced as a whole) and a
 * place that holds a writable root (hiding it would hide the workspace).
 */
static void plan_hide(struct native_state *st, struct executor *ex, struct strvec *seen,
		      const char *path)
{
	struct stat sb;
	char *real;
	size_t i;

	if (!path || path[0] != '/' || lstat(path, &sb) < 0)
		return;
	real = realpath(path, NULL);
	if (!real || stat(real, &sb) < 0) {
		free(real);
		return;
	}
	/* /run, /tmp and /dev/shm are fresh and empty in the sandbox */
	if (!strcmp(real, "/") || ((path_is_within(real, "/run") || path_is_within(real, "/tmp") ||
				    path_is_within(real, "/dev/shm")) && !in_writable_root(ex, real))) {
		free(real);
		return;
	}
	for (i = 0; i < seen->nr; i++)
		if (path_is_within(real, seen->v[i])) {
			free(real);
			return;
		}
	if (is_ancestor_of_root(ex, real)) {
		strvec_pushf(&ex->warnings, "native sandbox: '%s' is not hidden: a writable "
			     "root is inside it", real);
		free(real);
		return;
	}
	strvec_push(seen, real);
	add_op(st, S_ISDIR(sb.st_mode) ? SB_MNT_HIDE_DIR : SB_MNT_HIDE_FILE, 0, 0,
	       keep_path(st, real), NULL);
	free(real);
}

/* Every place to hide, as named (plan_hide() resolves each). */
static void hidden_places(struct strvec *out, const struct executor *ex)
{
	struct strvec homes = STRVEC_INIT;
	const char *home = getenv("HOME"), *v;
	struct passwd *pw = getpwuid(geteuid());
	size_t h, i;

	if (home && home[0] == '/')
		strvec_push(&homes, home);
	if (pw && pw->pw_dir && pw->pw_dir[0] == '/' && (!home || strcmp(home, pw->pw_dir)))
		strvec_push(&homes, pw->pw_dir);
	for (h = 0; h < homes.nr; h++)
		for (i = 0; i < ARRAY_SIZE(hidden_in_home); i++)
			strvec_pushf(out, "%s/%s", homes.v[h], hidden_in_home[i]);
	if ((v = getenv("XDG_CONFIG_HOME")) && *v == '/')
		strvec_pushf(out, "%s/forgex", v);
	if ((v = getenv("XDG_CACHE_HOME")) && *v == '/')
		strvec_pushf(out, "%s/git/credential", v);
	/* the agents' sockets, wherever they are (under /tmp and /run: replaced anyway) */
	if ((v = getenv("XDG_RUNTIME_DIR")) && *v == '/')
		strvec_push(out, v);
	if ((v = getenv("SSH_AUTH_SOCK")) && *v == '/')
		strvec_push(out, v);
	strvec_push(out, "/var/run/docker.sock");
	for (i = 0; i < ex->hidden.nr; i++)
		strvec_push(out, ex->hidden.v[i]);
	strvec_clear(&homes);
}

static void plan_hidden(struct native_state *st, struct executor *ex)
{
	struct strvec places = STRVEC_INIT, seen = STRVEC_INIT;
	size_t i;

	hidden_places(&places, ex);
	for (i = 0; i < places.nr; i++)
		plan_hide(st, ex, &seen, places.v[i]);
	strvec_clear(&places);
	strvec_clear(&seen);
}

/*
 * Whether the folder open as `dfd` has the shape git takes for a
 * repository of its own (setup.c's is_git_directory(): HEAD, objects/,
 * refs): git run inside it reads its config with no .git anywhere (`git
 * log` there runs its core.pager on the host). Such a folder is guarded
 * as a nested .git is.
 */
static int looks_like_git_dir(int dfd)
{
	struct stat sb;

	return fstatat(dfd, "HEAD", &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
	       (S_ISREG(sb.st_mode) || S_ISLNK(sb.st_mode)) &&
	       fstatat(dfd, "objects", &sb, 0) == 0 && S_ISDIR(sb.st_mode) &&
	       fstatat(dfd, "refs", &sb, 0) == 0;
}

struct link_scan {
	struct native_state *st;
	size_t entries;
	int truncated;
	size_t mounts;
	dev_t dev;
};

/*
 * Files below `dir` with more than one link: another name of the same file
 * may be outside every writable root (a local clone's objects, a pnpm
 * store, cp -al), so they are bound read-only. A folder holding many is
 * bound read-only as a whole. The walk does not follow links or cross
 * mount points and stops after HARDLINK_SCAN_MAX entries.
 */
static void scan_links(struct link_scan *ls, int dfd, const char *path, int depth, int top)
{
	DIR *d;
	struct dirent *de;
	struct strvec files = STRVEC_INIT;
	size_t i;

	if (depth > 64 || ls->truncated)
		goto out_fd;
	d = fdopendir(dfd);
	if (!d)
		goto out_fd;
	while ((de = readdir(d))) {
		struct stat sb;
		char *sub;
		int fd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++ls->entries > HARDLINK_SCAN_MAX) {
			ls->truncated = 1;
			break;
		}
		/* already read-only as a whole */
		if (top && (!strcmp(de->d_name, ".git") || !strcmp(de->d_name, ".forgex")))
			continue;
		/*
		 * A nested .git (a submodule's file or folder, a repository
		 * inside the workspace): read-only as a whole too, so no
		 * command configures the host's git through it.
		 */
		if (!top && !strcmp(de->d_name, ".git") &&
		    (de->d_type == DT_DIR || de->d_type == DT_REG || de->d_type == DT_UNKNOWN) &&
		    fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (S_ISDIR(sb.st_mode) || S_ISREG(sb.st_mode))) {
			if (ls->mounts < HARDLINK_MOUNTS_MAX) {
				char *g = xstrfmt("%s/.git", path);

				add_op(ls->st, SB_MNT_RO_BIND, SB_MNTF_OPTIONAL, 0, keep_path(ls->st, g),
				       NULL);
				free(g);
				ls->mounts++;
			} else {
				ls->truncated = 1;
			}
			continue;
		}
		if (de->d_type != DT_UNKNOWN && de->d_type != DT_DIR && de->d_type != DT_REG)
			continue;
		if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(sb.st_mode) && sb.st_nlink > 1) {
			strvec_pushf(&files, "%s/%s", path, de->d_name);
			continue;
		}
		if (!S_ISDIR(sb.st_mode) || sb.st_dev != ls->dev)
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		sub = xstrfmt("%s/%s", path, de->d_name);
		if (!looks_like_git_dir(fd)) {
			scan_links(ls, fd, sub, depth + 1, 0);
		} else if (ls->mounts < HARDLINK_MOUNTS_MAX) {
			/* a repository without .git (bare): read-only as a whole, as a .git */
			close(fd);
			add_op(ls->st, SB_MNT_RO_BIND, SB_MNTF_OPTIONAL, 0, keep_path(ls->st, sub),
			       NULL);
			ls->mounts++;
		} else {
			close(fd);
			ls->truncated = 1;
		}
		free(sub);
	}
	closedir(d);
	if (files.nr >= HARDLINK_DIR_COLLAPSE) {
		if (ls->mounts < HARDLINK_MOUNTS_MAX) {
			add_op(ls->st, SB_MNT_RO_BIND, SB_MNTF_OPTIONAL, 0, keep_path(ls->st, path),
			       NULL);
			ls->mounts++;
		} else {
			ls->truncated = 1;
		}
	} else {
		for (i = 0; i < files.nr; i++) {
			if (ls->mounts >= HARDLINK_MOUNTS_MAX) {
				ls->truncated = 1;
				break;
			}
			add_op(ls->st, SB_MNT_RO_BIND, SB_MNTF_OPTIONAL, 0,
			       keep_path(ls->st, files.v[i]), NULL);
			ls->mounts++;
		}
	}
	strvec_clear(&files);
	return;
out_fd:
	close(dfd);
}

static void plan_links(struct native_state *st, struct executor *ex, const char *root)
{
	struct link_scan ls = { st, 0, 0, 0, 0 };
	struct stat sb;
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &sb) < 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	ls.dev = sb.st_dev;
	scan_links(&ls, fd, root, 0, 1);
	if (ls.truncated)
		strvec_pushf(&ex->warnings, "native sandbox: files with several hard links in "
			     "'%s' are only partly protected (more than %d entries or %d files)",
			     root, HARDLINK_SCAN_MAX, HARDLINK_MOUNTS_MAX);
}

static int in_replaced_place(const char *path)
{
	return path_is_within(path, "/tmp") || path_is_within(path, "/run") ||
	       path_is_within(path, "/dev/shm");
}

/* Whether `path` has a component named .git or .forgex. */
static int in_guarded_dir(const char *path)
{
	static const char *const names[] = { "/.git", "/.forgex" };
	size_t k, n;
	const char *p;

	for (k = 0; k < ARRAY_SIZE(names); k++)
		for (n = strlen(names[k]), p = path; (p = strstr(p, names[k])); p += n)
			if (p[n] == '/' || p[n] == '\0')
				return 1;
	return 0;
}

/*
 * Refuse a read-only path (ex->readonly_paths) that lies in a hidden
 * place or holds one, or lies in a .git or .forgex: binding it would
 * show what the sandbox hides. `real` is the path resolved.
 */
static int check_readonly(const struct executor *ex, const char *named, const char *real)
{
	struct strvec places = STRVEC_INIT;
	size_t i;
	int ret = 0;

	if (in_guarded_dir(real) || in_guarded_dir(named))
		return err_set(FX_EDENIED, "read-only path '%s': it lies in a .git or .forgex "
			       "folder, which the sandbox guards", named);
	hidden_places(&places, ex);
	for (i = 0; !ret && i < places.nr; i++) {
		char *h = realpath(places.v[i], NULL);

		int in = h && (path_is_within(real, h) || path_is_within(named, h));

		if (h && (in || path_is_within(h, real)))
			ret = err_set(FX_EDENIED, "read-only path '%s': %s the hidden place '%s'",
				      named, in ? "it lies in" : "it holds", h);
		free(h);
	}
	strvec_clear(&places);
	return ret;
}

/* Whether a root put back (sorted_roots()) shows `path` already. */
static int shown_by_root(const struct executor *ex, const char *path)
{
	size_t i;

	if (path_is_within(path, ex->workspace))
		return 1;
	for (i = 0; !ex->workspace_read_only && i < ex->writable_roots.nr; i++)
		if (path_is_within(path, ex->writable_roots.v[i]))
			return 1;
	return 0;
}

/*
 * The read-only paths that the fresh /tmp, /run or /dev/shm would cover:
 * each is taken (a copy of the mount tree at its resolved place, slot
 * `*slot` on) before they are mounted. `at` gets the places to put them
 * back: the resolved place and, when it differs, the place as named (a
 * program reached through a link in /tmp). Paths elsewhere are visible
 * already (read-only, or in a writable root), and so is one inside a
 * writable root.
 */
static int plan_readonly_take(struct native_state *st, struct executor *ex, struct strvec *at,
			      int *slot)
{
	size_t i, k;
	int ret;

	for (i = 0; i < ex->readonly_paths.nr; i++) {
		const char *named = ex->readonly_paths.v[i];
		const char *where[2];
		char *real = named[0] == '/' ? realpath(named, NULL) : NULL;

		if (!real)
			return err_set_errno(FX_ENOTFOUND, "read-only path '%s': cannot resolve it",
					     named);
		if ((ret = check_readonly(ex, named, real)) < 0) {
			free(real);
			return ret;
		}
		where[0] = real;
		where[1] = strcmp(named, real) ? named : NULL;
		for (k = 0; k < 2; k++) {
			if (!where[k] || !in_replaced_place(where[k]) || shown_by_root(ex, where[k]))
				continue;
			if (*slot >= SB_MAX_TREES) {
				free(real);
				return err_set(FX_EINVAL, "read-only paths: too many (at most %d "
					       "places with the writable roots)", SB_MAX_TREES);
			}
			add_op(st, SB_MNT_CLONE, 0, (*slot)++, keep_path(st, real), NULL);
			strvec_push(at, where[k]);
		}
		free(real);
	}
	return 0;
}

/* Put the read-only paths back, each bound read-only (slots from `slot`). */
static void plan_readonly_place(struct native_state *st, const struct strvec *at, int slot)
{
	size_t i;

	for (i = 0; i < at->nr; i++) {
		struct stat sb;
		const char *p = keep_path(st, at->v[i]);

		add_op(st, SB_MNT_PLACE, stat(p, &sb) == 0 && !S_ISDIR(sb.st_mode) ?
		       SB_MNTF_FILE : 0, slot + (int)i, p, NULL);
		add_op(st, SB_MNT_RO_BIND, 0, 0, p, NULL);
	}
}

/* The writable roots, shortest first (a root inside another goes on top of it). */
static void sorted_roots(struct strvec *out, const struct executor *ex)
{
	size_t i, j;

	strvec_push(out, ex->workspace);
	/* read-only commands: the workspace alone, bound read-only (native_mounts_plan()) */
	for (i = 0; !ex->workspace_read_only && i < ex->writable_roots.nr; i++)
		strvec_push(out, ex->writable_roots.v[i]);
	for (i = 1; i < out->nr; i++)
		for (j = i; j > 0 && strlen(out->v[j - 1]) > strlen(out->v[j]); j--) {
			const char *t = out->v[j];

			out->v[j] = out->v[j - 1];
			out->v[j - 1] = t;
		}
}

/*
 * The mount plan, in the order the supervisor applies it (see
 * docs/internals/executor.md, "Mount namespace"):
 *   1. "/" private; detached copies of each writable root (of the
 *      resolver configuration when it lives under /run, and of each
 *      read-only path in /tmp, /run or /dev/shm), taken before
 *      anything covers them;
 *   2. every mount read-only and nosuid;
 *   3. fresh tmpfs on /tmp, /dev/shm and /run, fresh /proc and mqueue;
 *   4. the read-only paths those covered put back, read-only; the
 *      writable roots put back, read-write (nosuid);
 *   5. .git and .forgex in each writable root read-only; files with
 *      several links read-only;
 *   6. the hidden places covered.
 */
int native_mounts_plan(struct native_state *st, struct executor *ex)
{
	struct strvec roots = STRVEC_INIT, ro_at = STRVEC_INIT;
	static const char *const devices[] = {
		"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
	};
	const char *resolv = NULL, *kept[SB_MAX_TREES];
	int dev_slot[ARRAY_SIZE(devices)];
	char *real;
	size_t i, k;
	int resolv_slot = -1, ro_slot, slot, ret;

	sorted_roots(&roots, ex);
	if (roots.nr + 1 + ARRAY_SIZE(devices) > SB_MAX_TREES) {
		strvec_clear(&roots);
		return err_set(FX_EINVAL, "[sandbox] writable_roots: at most %d",
			       SB_MAX_TREES - 2 - (int)ARRAY_SIZE(devices));
	}
	add_op(st, SB_MNT_PRIVATE, 0, 0, "/", NULL);
	for (i = 0; i < roots.nr; i++) {
		if (!strcmp(roots.v[i], "/"))
			continue;
		kept[i] = keep_path(st, roots.v[i]);
		add_op(st, SB_MNT_CLONE, 0, (int)i, kept[i], NULL);
	}
	real = realpath("/etc/resolv.conf", NULL);
	if (real && path_is_within(real, "/run")) {
		resolv = keep_path(st, real);
		resolv_slot = (int)roots.nr;
		add_op(st, SB_MNT_CLONE, 0, resolv_slot, resolv, NULL);
	}
	free(real);
	/* the few devices a command needs, taken before /dev is replaced */
	for (k = 0; k < ARRAY_SIZE(devices); k++) {
		struct stat sb;

		dev_slot[k] = -1;
		if (stat(devices[k], &sb) < 0 || !S_ISCHR(sb.st_mode))
			continue;
		dev_slot[k] = (int)roots.nr + 1 + (int)k;
		add_op(st, SB_MNT_CLONE, 0, dev_slot[k], devices[k], NULL);
	}
	slot = ro_slot = (int)roots.nr + 1 + (int)ARRAY_SIZE(devices);
	if ((ret = plan_readonly_take(st, ex, &ro_at, &slot)) < 0) {
		strvec_clear(&roots);
		strvec_clear(&ro_at);
		return ret;
	}
	add_op(st, SB_MNT_ROOT_RO, 0, 0, "/", NULL);
	add_op(st, SB_MNT_TMPFS, SB_MNTF_LANDLOCK, 0, "/tmp", st->tmpfs_opts);
	add_op(st, SB_MNT_TMPFS, SB_MNTF_LANDLOCK | SB_MNTF_OPTIONAL, 0, "/run",
	       "size=16m,mode=0755");
	if (st->pidns && (st->mount_fs & SB_MOUNT_PROC))
		add_op(st, SB_MNT_PROC, 0, 0, "/proc", NULL);
	/*
	 * A /dev of its own: the host's holds disks and other devices that
	 * root could open for reading (raw disk reads would see every hidden
	 * file).
	 */
	add_op(st, SB_MNT_TMPFS, 0, 0, "/dev", "size=64k,nr_inodes=64,mode=0755");
	for (k = 0; k < ARRAY_SIZE(devices); k++)
		if (dev_slot[k] >= 0)
			add_op(st, SB_MNT_PLACE, SB_MNTF_FILE, dev_slot[k], devices[k], NULL);
	add_op(st, SB_MNT_TMPFS, SB_MNTF_LANDLOCK | SB_MNTF_MKDIR, 0, "/dev/shm",
	       st->tmpfs_opts);
	if (st->mount_fs & SB_MOUNT_DEVPTS)
		add_op(st, SB_MNT_DEVPTS, SB_MNTF_LANDLOCK | SB_MNTF_MKDIR | SB_MNTF_OPTIONAL, 0,
		       "/dev/pts", "newinstance,ptmxmode=0666,mode=0620");
	/* an mqueue belongs to the IPC namespace of who mounts it */
	if (st->ipcns && (st->mount_fs & SB_MOUNT_MQUEUE))
		add_op(st, SB_MNT_MQUEUE, SB_MNTF_MKDIR | SB_MNTF_OPTIONAL, 0, "/dev/mqueue",
		       NULL);
	add_op(st, SB_MNT_SYMLINK, 0, 0, "/dev/ptmx", "pts/ptmx");
	add_op(st, SB_MNT_SYMLINK, 0, 0, "/dev/fd", "/proc/self/fd");
	add_op(st, SB_MNT_SYMLINK, 0, 0, "/dev/stdin", "/proc/self/fd/0");
	add_op(st, SB_MNT_SYMLINK, 0, 0, "/dev/stdout", "/proc/self/fd/1");
	add_op(st, SB_MNT_SYMLINK, 0, 0, "/dev/stderr", "/proc/self/fd/2");
	add_op(st, SB_MNT_READ_ONLY, 0, 0, "/dev", NULL);
	/* before the writable roots: a root inside a read-only folder goes on top */
	plan_readonly_place(st, &ro_at, ro_slot);
	strvec_clear(&ro_at);
	for (i = 0; i < roots.nr; i++) {
		if (!strcmp(roots.v[i], "/"))
			continue;
		add_op(st, SB_MNT_PLACE, 0, (int)i, kept[i], NULL);
	}
	if (resolv)
		add_op(st, SB_MNT_PLACE, SB_MNTF_FILE, resolv_slot, resolv, NULL);
	for (i = 0; i < roots.nr; i++) {
		static const char *const names[] = { ".git", ".forgex" };

		for (k = 0; k < ARRAY_SIZE(names); k++) {
			char *p = xstrfmt("%s/%s", strcmp(roots.v[i], "/") ? roots.v[i] : "",
					  names[k]);
			struct stat sb;

			if (lstat(p, &sb) == 0)
				add_op(st, SB_MNT_RO_BIND, SB_MNTF_OPTIONAL, 0, keep_path(st, p),
				       NULL);
			else
				strvec_push(&st->absent, p);
			free(p);
		}
	}
	if (ex->workspace_read_only)
		/* all of it read-only: no hard-linked file needs its own protection */
		add_op(st, SB_MNT_RO_BIND, 0, 0, keep_path(st, ex->workspace), NULL);
	else
		for (i = 0; i < roots.nr; i++)
			plan_links(st, ex, roots.v[i]);
	plan_hidden(st, ex);
	strvec_clear(&roots);
	return 0;
}

/*
 * A command may create .git or .forgex in a writable root that had none
 * (they cannot be mounted read-only before they exist). Such a folder
 * could plant hooks or fsmonitor commands for the user's git, or links
 * for forgex's own writes: it is renamed out of the way, never used.
 */
static void quarantine_nested(struct native_state *st, struct sb_spawn *sp);
static void quarantine_one(struct sb_spawn *sp, const char *p, const char *what);

void native_mounts_quarantine(struct native_state *st, struct sb_spawn *sp)
{
	size_t i;

	for (i = 0; i < st->absent.nr; i++) {
		struct stat sb;

		if (lstat(st->absent.v[i], &sb) == 0)
			quarantine_one(sp, st->absent.v[i], "created");
	}
	quarantine_nested(st, sp);
}

/* ---- nested .git: created or changed by the command ------------------- */

#define GIT_SCAN_MAX 200000		/* directory entries looked at after a command */
#define GIT_INSIDE_MAX 20000		/* entries looked at inside one .git */

void native_mounts_mark(struct native_state *st, const struct executor *ex)
{
	clock_gettime(CLOCK_REALTIME_COARSE, &st->git_since);
	st->git_ex = ex;
}

static int changed_since(const struct stat *sb, const struct timespec *t)
{
	return sb->st_ctim.tv_sec > t->tv_sec ||
	       (sb->st_ctim.tv_sec == t->tv_sec && sb->st_ctim.tv_nsec >= t->tv_nsec);
}

/*
 * Whether anything in the .git folder `dfd` (taken over) changed since
 * `t`: its config, hooks, info/attributes, a gitdir file, modules/NAME. Its
 * objects are skipped: they are data, not settings.
 */
static int git_dir_changed(int dfd, const struct timespec *t, size_t *budget, int depth)
{
	DIR *d = fdopendir(dfd);
	struct dirent *de;
	int changed = 0;

	if (!d) {
		close(dfd);
		return 0;
	}
	while (!changed && (de = readdir(d))) {
		struct stat sb;
		int fd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!*budget) {
			changed = 1;	/* too much to look at: not taken as unchanged */
			break;
		}
		--*budget;
		if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (changed_since(&sb, t)) {
			changed = 1;
			break;
		}
		if (!S_ISDIR(sb.st_mode) || depth > 16 || (!depth && !strcmp(de->d_name, "objects")))
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0)
			changed = git_dir_changed(fd, t, budget, depth + 1);
	}
	closedir(d);
	return changed;
}

struct git_scan {
	const struct native_state *st;
	struct sb_spawn *sp;
	const struct timespec *since;
	size_t entries;
	int truncated;
	dev_t dev;
};

static void quarantine_one(struct sb_spawn *sp, const char *p, const char *what)
{
	char *to = xstrfmt("%s-quarantined-by-forgex-%ld-%lu", p, (long)getpid(),
			   __atomic_add_fetch(&native_name_seq, 1, __ATOMIC_RELAXED));

	if (rename(p, to) == 0)
		strvec_pushf(&sp->notes, "forgex: the command %s '%s', which would steer git or "
			     "forgex outside the sandbox; it was moved to '%s'", what, p, to);
	else
		strvec_pushf(&sp->notes, "forgex: the command %s '%s' and forgex could not move "
			     "it away (%s): check it before you run git there", what, p,
			     strerror(errno));
	free(to);
}

/*
 * A folder git takes for a repository (looks_like_git_dir()) that the
 * command made or changed: renamed, it would still be one, so its HEAD is
 * moved aside instead and git no longer takes it for a repository; the
 * rest stays for the person to look at.
 */
static void quarantine_git_dir(struct sb_spawn *sp, const char *p)
{
	char *head = xstrfmt("%s/HEAD", p);
	char *to = xstrfmt("%s-quarantined-by-forgex-%ld-%lu", head, (long)getpid(),
			   __atomic_add_fetch(&native_name_seq, 1, __ATOMIC_RELAXED));

	if (rename(head, to) == 0)
		strvec_pushf(&sp->notes, "forgex: the command created or changed '%s', a folder "
			     "git takes for a repository (HEAD, objects, refs), which would steer "
			     "git outside the sandbox; its HEAD was moved to '%s'", p, to);
	else
		strvec_pushf(&sp->notes, "forgex: the command created or changed '%s', a folder "
			     "git takes for a repository, and forgex could not move its HEAD away "
			     "(%s): check it before you run git there", p, strerror(errno));
	free(head);
	free(to);
}

/*
 * Whether the plan binds `path` read-only: the command cannot have changed
 * it, and a change seen there is the user's own (git refreshing the index
 * of a nested repository while the command ran).
 */
static int bound_read_only(const struct native_state *st, const char *path)
{
	size_t i;

	for (i = 0; st->planned && i < st->ops_nr; i++)
		if (st->ops[i].kind == SB_MNT_RO_BIND && !strcmp(st->ops[i].path, path))
			return 1;
	return 0;
}

/* Below `dfd` (taken over), `path` on the host: every .git the command made or changed. */
static void scan_git(struct git_scan *gs, int dfd, const char *path, int depth)
{
	DIR *d;
	struct dirent *de;

	if (depth > 64 || gs->truncated) {
		close(dfd);
		return;
	}
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	while ((de = readdir(d))) {
		struct stat sb;
		char *sub;
		int fd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++gs->entries > GIT_SCAN_MAX) {
			gs->truncated = 1;
			break;
		}
		/* the root's own .git and .forgex: bound read-only, or in `absent` */
		if (!depth && (!strcmp(de->d_name, ".git") || !strcmp(de->d_name, ".forgex")))
			continue;
		if (!strcmp(de->d_name, ".git")) {
			size_t budget = GIT_INSIDE_MAX;
			int changed;

			sub = xstrfmt("%s/.git", path);
			if (bound_read_only(gs->st, sub) ||
			    fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0) {
				free(sub);
				continue;
			}
			changed = changed_since(&sb, gs->since);
			if (!changed && S_ISDIR(sb.st_mode)) {
				fd = openat(dirfd(d), de->d_name,
					    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				changed = fd >= 0 && git_dir_changed(fd, gs->since, &budget, 0);
			}
			if (changed)
				quarantine_one(gs->sp, sub, "created or changed");
			free(sub);
			continue;
		}
		if (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN)
			continue;
		if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(sb.st_mode) || sb.st_dev != gs->dev)
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		sub = xstrfmt("%s/%s", path, de->d_name);
		if (looks_like_git_dir(fd)) {
			/* a repository without .git: made or changed, it goes as a .git would */
			size_t budget = GIT_INSIDE_MAX;
			int changed = 0;

			if (bound_read_only(gs->st, sub))
				close(fd);
			else if (!(changed = changed_since(&sb, gs->since)))
				changed = git_dir_changed(fd, gs->since, &budget, 0);	/* takes fd */
			else
				close(fd);
			if (changed)
				quarantine_git_dir(gs->sp, sub);
		} else {
			scan_git(gs, fd, sub, depth + 1);
		}
		free(sub);
	}
	closedir(d);
}

static void quarantine_nested(struct native_state *st, struct sb_spawn *sp)
{
	const struct executor *ex = st->git_ex;
	struct strvec roots = STRVEC_INIT;
	size_t i;

	/* a read-only workspace: nothing below it can be made */
	if (!ex || ex->workspace_read_only)
		return;
	sorted_roots(&roots, ex);
	for (i = 0; i < roots.nr; i++) {
		struct git_scan gs = { st, sp, &st->git_since, 0, 0, 0 };
		struct stat sb;
		int fd;

		/* a root inside another was searched with it */
		if (i && path_is_within(roots.v[i], roots.v[0]))
			continue;
		fd = open(roots.v[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &sb) < 0) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		gs.dev = sb.st_dev;
		scan_git(&gs, fd, roots.v[i], 0);
		if (gs.truncated)
			strvec_pushf(&sp->notes, "forgex: '%s' holds more than %d entries: a .git "
				     "the command made deep in it may not have been found; check "
				     "before you run git there", roots.v[i], GIT_SCAN_MAX);
	}
	strvec_clear(&roots);
}

/* ------------------------------------------ child side: AS-safe only */

/* The failing step, for the report (static: the child's own copy). */
static char mount_stage[112];

static void set_stage(const char *what, const char *path)
{
	size_t n = 0, i;

	for (i = 0; what[i] && n < sizeof(mount_stage) - 1; i++)
		mount_stage[n++] = what[i];
	for (i = 0; path && path[i] && n < sizeof(mount_stage) - 1; i++)
		mount_stage[n++] = path[i];
	mount_stage[n] = '\0';
}

static int set_attr(int dfd, const char *path, unsigned flags, uint64_t set, uint64_t clr)
{
	struct mount_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.attr_set = set;
	attr.attr_clr = clr;
	return mount_setattr(dfd, path, flags, &attr, sizeof(attr));
}

/* mkdir -p inside a fresh tmpfs, for a writable root that lives under it. */
static int make_mountpoint(const char *path, int file)
{
	static char buf[4096];
	size_t n = 0, i;
	int fd;

	while (path[n])
		n++;
	if (n >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		if (buf[i] == '\0' && file)
			break;
		buf[i] = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		if (i < n)
			buf[i] = '/';
	}
	if (!file)
		return 0;
	fd = open(buf, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int trees[SB_MAX_TREES];

static int apply_one_mount(const struct sb_plan *plan, const struct sb_mount_op *op)
{
	struct stat sb;
	int fd;

	switch (op->kind) {
	case SB_MNT_PRIVATE:
		set_stage("mount: make / private", NULL);
		return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
	case SB_MNT_CLONE:
		set_stage("mount: copy ", op->path);
		fd = open_tree(AT_FDCWD, op->path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
			       AT_RECURSIVE);
		if (fd < 0)
			return -1;
		trees[op->slot] = fd;
		/* setuid bits of files in writable roots are not honoured either */
		return set_attr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, MOUNT_ATTR_NOSUID, 0);
	case SB_MNT_ROOT_RO:
		set_stage("mount: make every mount read-only and nosuid", NULL);
		return set_attr(AT_FDCWD, "/", AT_RECURSIVE, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID,
				0);
	case SB_MNT_TMPFS:
		set_stage("mount: tmpfs on ", op->path);
		if ((op->flags & SB_MNTF_MKDIR) && mkdir(op->path, 0755) < 0 && errno != EEXIST)
			return -1;
		if (mount("tmpfs", op->path, "tmpfs", MS_NOSUID | MS_NODEV, op->data) < 0)
			return -1;
		if (op->flags & SB_MNTF_LANDLOCK) {
			set_stage("Landlock: allow writing to ", op->path);
			return native_landlock_grant(plan->landlock_fd, op->path, plan->landlock_rw);
		}
		return 0;
	case SB_MNT_PROC:
		set_stage("mount: a new /proc", NULL);
		return mount("proc", op->path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	case SB_MNT_MQUEUE:
		set_stage("mount: a new mqueue on ", op->path);
		if ((op->flags & SB_MNTF_MKDIR) && mkdir(op->path, 0755) < 0 && errno != EEXIST)
			return -1;
		return mount("mqueue", op->path, "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	case SB_MNT_DEVPTS:
		set_stage("mount: a new devpts on ", op->path);
		if ((op->flags & SB_MNTF_MKDIR) && mkdir(op->path, 0755) < 0 && errno != EEXIST)
			return -1;
		if (mount("devpts", op->path, "devpts", MS_NOSUID | MS_NOEXEC, op->data) < 0)
			return -1;
		if (op->flags & SB_MNTF_LANDLOCK) {
			set_stage("Landlock: allow terminals in ", op->path);
			return native_landlock_grant(plan->landlock_fd, op->path, plan->landlock_rw &
					      (LANDLOCK_ACCESS_FS_READ_FILE |
					       LANDLOCK_ACCESS_FS_WRITE_FILE |
					       LANDLOCK_ACCESS_FS_READ_DIR |
					       LANDLOCK_ACCESS_FS_IOCTL_DEV));
		}
		return 0;
	case SB_MNT_SYMLINK:
		set_stage("mount: link ", op->path);
		return symlink(op->data, op->path);
	case SB_MNT_READ_ONLY:
		set_stage("mount: read-only ", op->path);
		return set_attr(AT_FDCWD, op->path, 0, MOUNT_ATTR_RDONLY, 0);
	case SB_MNT_PLACE:
		set_stage("mount: put back ", op->path);
		if (stat(op->path, &sb) < 0 && make_mountpoint(op->path, op->flags & SB_MNTF_FILE) < 0)
			return -1;
		if (move_mount(trees[op->slot], "", AT_FDCWD, op->path,
			       MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return -1;
		close(trees[op->slot]);
		trees[op->slot] = -1;
		return 0;
	case SB_MNT_RO_BIND:
		set_stage("mount: read-only ", op->path);
		if (mount(op->path, op->path, NULL, MS_BIND | MS_REC, NULL) < 0)
			return -1;
		return set_attr(AT_FDCWD, op->path, AT_RECURSIVE, MOUNT_ATTR_RDONLY |
				MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0);
	case SB_MNT_HIDE_DIR:
		set_stage("mount: hide ", op->path);
		return mount("tmpfs", op->path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV |
			     MS_NOEXEC, "size=4k,nr_inodes=8,mode=0755");
	case SB_MNT_HIDE_FILE:
		set_stage("mount: hide ", op->path);
		if (mount("/dev/null", op->path, NULL, MS_BIND, NULL) < 0)
			return -1;
		return set_attr(AT_FDCWD, op->path, 0, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
				MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, 0);
	default:
		errno = EINVAL;
		return -1;
	}
}

int native_mounts_apply(const struct sb_plan *plan, const char **stage)
{
	size_t i;

	for (i = 0; i < SB_MAX_TREES; i++)
		trees[i] = -1;
	for (i = 0; i < plan->mounts_nr; i++) {
		const struct sb_mount_op *op = &plan->mounts[i];

		if (apply_one_mount(plan, op) < 0 || native_injected(5)) {
			if ((op->flags & SB_MNTF_OPTIONAL) && (errno == ENOENT || errno == ENOTDIR))
				continue;
			*stage = mount_stage;
			return -1;
		}
	}
	return 0;
}
