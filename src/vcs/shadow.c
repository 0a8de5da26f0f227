/*
 * The shadow repository and its lock; see shadow.h and
 * docs/internals/checkpoint.md.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <git2/sys/odb_backend.h>
#include <git2/sys/repository.h>

#include "base/beneath.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/path.h"
#include "vcs/checkpoint.h"
#include "vcs/odb.h"
#include "vcs/shadow.h"
#include "vcs/statcache.h"
#include "vcs/vcs_internal.h"

#define LOCK_WAIT_MS 10000

/*
 * Attributes that would make the bytes recorded differ from the bytes on
 * disk (end-of-line conversion, $Id$ expansion, clean filters) are switched
 * off: info/attributes takes precedence over every .gitattributes.
 */
static const char shadow_attributes[] =
	"# written by forgex: record every file byte for byte\n"
	"* -text -eol -crlf -ident -filter -working-tree-encoding\n";

/* Keeps the shadow out of the user's `git status`. */
static const char shadow_gitignore[] = "# written by forgex\n*\n";

/* ---------------------------------------------------------------- errors */

int vcs_git_error(int gerr, const char *fmt, ...)
{
	const git_error *e = git_error_last();
	va_list ap;
	char *what;
	int code = gerr == GIT_ENOTFOUND ? FX_ENOTFOUND : FX_ERROR;

	va_start(ap, fmt);
	what = xstrvfmt(fmt, ap);
	va_end(ap);
	err_set(code, "%s: %s", what, e && e->message ? e->message : "libgit2 failed");
	free(what);
	return code;
}

static pthread_once_t vcs_once = PTHREAD_ONCE_INIT;
static int vcs_init_error;

static void vcs_init_once(void)
{
	if (git_libgit2_init() < 0) {
		vcs_init_error = 1;
		return;
	}
	/*
	 * The index is renamed into place only after it reaches the disk
	 * (objects are ours, see odb.h, and flushed by the batch; the ref is
	 * ours too, see shadow_write_ref()).
	 */
	git_libgit2_opts(GIT_OPT_ENABLE_FSYNC_GITDIR, 1);
	/*
	 * libgit2 runs nothing a repository's config names (no hooks, no
	 * fsmonitor, no filter drivers), so reading a workspace owned by
	 * someone else is safe; the shadow is ours either way.
	 */
	git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0);
}

int vcs_init(void)
{
	pthread_once(&vcs_once, vcs_init_once);
	if (vcs_init_error)
		return err_set(FX_ERROR, "cannot initialise libgit2");
	return 0;
}

const char *checkpoint_workspace(const struct checkpoints *cps)
{
	return cps->workspace;
}

git_repository *checkpoint__repo(struct checkpoints *cps)
{
	return cps->repo;
}

size_t checkpoint_files_read(const struct checkpoints *cps)
{
	return cps->files_read;
}

/* ---------------------------------------------------- files beneath a fd */

int vcs_openat_beneath(int *out, int dirfd, const char *rel, int flags, const char *shown)
{
	int fd = beneath_open(dirfd, rel, flags, 0), e = errno;
	size_t link;

	if (fd >= 0) {
		*out = fd;
		return 0;
	}
	if (e == ELOOP && (link = beneath_link_prefix(dirfd, rel)))
		return err_set(FX_EDENIED, "%s/%.*s is a symbolic link; forgex does not follow "
			       "links there (remove it)", shown, (int)link, rel);
	if (e == ELOOP || e == EXDEV)
		return err_set(FX_EDENIED, "%s/%s leads through a symbolic link or out of %s; "
			       "forgex does not follow it", shown, rel, shown);
	if (e == ENOENT)
		return err_set(FX_ENOTFOUND, "%s/%s does not exist", shown, rel);
	if (e == ENOTDIR)
		return err_set(FX_EDENIED, "%s/%s: a folder on the way is not a folder", shown, rel);
	errno = e;
	return err_set_errno(FX_EOS, "cannot open %s/%s", shown, rel);
}

int vcs_read_beneath(struct buf *out, int dirfd, const char *rel, size_t max, const char *shown)
{
	struct stat st;
	int fd, ret;

	if ((ret = vcs_openat_beneath(&fd, dirfd, rel, O_RDONLY | O_NONBLOCK, shown)) < 0)
		return ret;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(FX_EDENIED, "%s/%s is not a regular file", shown, rel);
	}
	ret = fsutil_read_fd(out, fd, max);
	close(fd);
	if (ret < 0)
		err_prefix(ret, "cannot read %s/%s", shown, rel);
	return ret;
}

/* Open (and with `create`, make) folder `name` in `dirfd`, never a link. */
static int open_dir(int *out, int dirfd, const char *name, int create, const char *shown)
{
	int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	if (fd < 0 && errno == ENOENT && create) {
		if (mkdirat(dirfd, name, 0755) < 0 && errno != EEXIST)
			return err_set_errno(FX_EOS, "cannot create %s", shown);
		fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (fd >= 0) {
		*out = fd;
		return 0;
	}
	if (!fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISLNK(st.st_mode))
		return err_set(FX_EDENIED, "%s is a symbolic link, not a folder; forgex does not "
			       "follow links in its own files (remove it)", shown);
	if (errno == ENOTDIR)
		return err_set(FX_EDENIED, "%s is not a folder (remove it)", shown);
	if (errno == ENOENT)
		return err_set(FX_ENOTFOUND, "%s does not exist", shown);
	return err_set_errno(FX_EOS, "cannot open %s", shown);
}

/* ------------------------------------------------------------------ lock */

/* The files libgit2 opens by name in the shadow: each a plain file or absent. */
static const char *const shadow_files[] = {
	"HEAD", "config", "index", "packed-refs", "forgex.lock", BATCH_MARKER, "description",
	".gitignore", "info/attributes", "info/exclude", "refs/forgex/checkpoints",
};

/* ... and its folders: each a real folder or absent. */
static const char *const shadow_dirs[] = {
	"objects", "refs", "refs/forgex", "info", "objects/pack", "objects/info",
};

/*
 * Before libgit2 touches the shadow: `.forgex` and `.forgex/checkpoints`
 * are still the folders opened at checkpoint_open(), and neither the files
 * libgit2 opens by name nor the folders on their way are links. libgit2
 * follows a link where a file should be (it locks and writes the link's
 * target): a link planted there by a command is refused, naming it.
 */
int shadow_check(struct checkpoints *cps)
{
	struct stat now, then;
	size_t i;
	int fd = -1, sfd = -1, ret;

	if ((ret = open_dir(&fd, cps->root_fd, ".forgex", 0, cps->shadow)) < 0 ||
	    (ret = open_dir(&sfd, fd, "checkpoints", 0, cps->shadow)) < 0)
		goto out;
	if (fstat(sfd, &now) < 0 || fstat(cps->shadow_fd, &then) < 0 ||
	    now.st_dev != then.st_dev || now.st_ino != then.st_ino) {
		ret = err_set(FX_EDENIED, "%s was replaced while forgex was using it", cps->shadow);
		goto out;
	}
	for (i = 0; i < ARRAY_SIZE(shadow_dirs); i++) {
		struct stat st;
		int dfd;

		ret = vcs_openat_beneath(&dfd, cps->shadow_fd, shadow_dirs[i],
					 O_RDONLY | O_DIRECTORY, cps->shadow);
		if (ret == FX_ENOTFOUND) {
			err_clear();
			ret = 0;
			continue;
		}
		if (ret < 0)
			goto out;
		if (fstat(dfd, &st) < 0 || !S_ISDIR(st.st_mode))
			ret = err_set(FX_EDENIED, "%s/%s is not a folder", cps->shadow, shadow_dirs[i]);
		close(dfd);
		if (ret < 0)
			goto out;
	}
	for (i = 0; i < ARRAY_SIZE(shadow_files); i++) {
		const char *slash = strrchr(shadow_files[i], '/');
		struct stat st;
		int dfd = -1;

		if (slash) {
			char *dir = xstrndup(shadow_files[i], (size_t)(slash - shadow_files[i]));

			ret = vcs_openat_beneath(&dfd, cps->shadow_fd, dir, O_RDONLY | O_DIRECTORY,
						 cps->shadow);
			free(dir);
			if (ret == FX_ENOTFOUND) {
				err_clear();
				ret = 0;
				continue;
			}
			if (ret < 0)
				goto out;
		}
		if (fstatat(dfd >= 0 ? dfd : cps->shadow_fd, slash ? slash + 1 : shadow_files[i], &st,
			    AT_SYMLINK_NOFOLLOW) < 0) {
			if (dfd >= 0)
				close(dfd);
			if (errno == ENOENT)
				continue;
			ret = err_set_errno(FX_EOS, "cannot inspect %s/%s", cps->shadow,
					    shadow_files[i]);
			goto out;
		}
		if (dfd >= 0)
			close(dfd);
		if (!S_ISREG(st.st_mode)) {
			ret = err_set(FX_EDENIED,
				      "%s/%s is %s, not a file; forgex does not follow links in "
				      "its own files (remove it)", cps->shadow, shadow_files[i],
				      S_ISLNK(st.st_mode) ? "a symbolic link" : "something else");
			goto out;
		}
	}
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	if (sfd >= 0)
		close(sfd);
	if (ret < 0)
		err_prefix(ret, "the checkpoints cannot be used");
	return ret;
}

/*
 * libgit2 takes "NAME.lock" files while it writes (the index; forgex
 * writes the ref and config itself). Under the flock no other forgex is
 * writing, so any such file is what a killed process left: remove it.
 */
static void clear_stale_locks(struct checkpoints *cps)
{
	static const char *const locks[] = {
		"index.lock", "HEAD.lock", "config.lock", "packed-refs.lock",
	};
	size_t i;
	int dfd;

	for (i = 0; i < ARRAY_SIZE(locks); i++)
		unlinkat(cps->shadow_fd, locks[i], 0);
	if (!vcs_openat_beneath(&dfd, cps->shadow_fd, "refs/forgex", O_RDONLY | O_DIRECTORY,
				cps->shadow)) {
		unlinkat(dfd, "checkpoints.lock", 0);
		close(dfd);
	}
	err_clear();
}

int checkpoint__lock(struct checkpoints *cps)
{
	int waited = 0, ret;

	if (cps->lock_depth++)
		return 0;
	for (;;) {
		if (!flock(cps->lock_fd, LOCK_EX | LOCK_NB))
			break;
		if (errno != EWOULDBLOCK && errno != EINTR) {
			cps->lock_depth--;
			return err_set_errno(FX_EOS, "cannot lock %s", cps->shadow);
		}
		if (waited >= LOCK_WAIT_MS) {
			cps->lock_depth--;
			return err_set(FX_ETIMEOUT,
				       "another forgex process is using the checkpoints in %s",
				       cps->shadow);
		}
		usleep(50 * 1000);
		waited += 50;
	}
	clear_stale_locks(cps);
	if ((ret = shadow_check(cps)) < 0) {
		cps->lock_depth = 0;
		flock(cps->lock_fd, LOCK_UN);
		return ret;
	}
	return 0;
}

void checkpoint__unlock(struct checkpoints *cps)
{
	if (cps->lock_depth && !--cps->lock_depth)
		flock(cps->lock_fd, LOCK_UN);
}

/* ------------------------------------------------------------------- ref */

int shadow_read_ref(struct checkpoints *cps, git_oid *out)
{
	struct buf b = BUF_INIT;
	int ret = vcs_read_beneath(&b, cps->shadow_fd, "refs/forgex/checkpoints", 4096, cps->shadow);

	if (ret == FX_ENOTFOUND) {
		err_clear();
		buf_release(&b);
		return FX_ENOTFOUND;
	}
	if (ret < 0)
		goto out;
	buf_trim(&b);
	if (b.len != GIT_OID_HEXSZ || git_oid_fromstr(out, b.buf) < 0) {
		git_error_clear();
		ret = err_set(FX_EPARSE, "%s/refs/forgex/checkpoints is damaged", cps->shadow);
	}
out:
	buf_release(&b);
	return ret;
}

int shadow_write_ref(struct checkpoints *cps, const git_oid *oid, const git_oid *expect)
{
	git_oid cur;
	char line[GIT_OID_HEXSZ + 2];
	int ret, dfd = -1;

	ret = shadow_read_ref(cps, &cur);
	if (ret < 0 && ret != FX_ENOTFOUND)
		return ret;
	if ((ret == FX_ENOTFOUND) != (expect == NULL) ||
	    (expect && !git_oid_equal(&cur, expect)))
		return err_set(FX_ERROR, "the checkpoint chain moved while this checkpoint was "
			       "written; nothing was recorded");
	if ((ret = open_dir(&dfd, cps->shadow_fd, "refs", 1, cps->shadow)) < 0)
		return ret;
	{
		int fdd = -1;

		ret = open_dir(&fdd, dfd, "forgex", 1, cps->shadow);
		close(dfd);
		if (ret < 0)
			return ret;
		dfd = fdd;
	}
	git_oid_tostr(line, sizeof(line), oid);
	line[GIT_OID_HEXSZ] = '\n';
	line[GIT_OID_HEXSZ + 1] = '\0';
	ret = fsutil_write_atomic_at(dfd, "checkpoints", line, strlen(line), 0644);
	close(dfd);
	if (ret < 0)
		err_prefix(ret, "cannot record the checkpoint in %s", cps->shadow);
	return ret;
}

/* ------------------------------------------------------- durable objects */

/*
 * New objects are written without an fsync each (thousands on a first
 * checkpoint would take seconds) and made durable together by one
 * syncfs() before anything refers to them. A marker file brackets the
 * batch: when forgex dies (or the machine crashes) inside one, a loose
 * object may be left empty or truncated. The next open finds the marker
 * and deletes every loose object newer than it that does not read back
 * whole (odb.h checks every object anyway, so a damaged one is never
 * trusted; this only tidies up and drops the stat cache, which may name
 * what was deleted).
 *
 * The marker itself needs no fsync: journaling file systems commit
 * metadata in order, so a surviving object file implies a surviving marker.
 */
int shadow_batch_begin(struct checkpoints *cps)
{
	int fd = openat(cps->shadow_fd, BATCH_MARKER,
			O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);

	if (fd < 0)
		return err_set_errno(FX_EOS, "cannot write in %s", cps->shadow);
	close(fd);
	git_libgit2_opts(GIT_OPT_ENABLE_FSYNC_GITDIR, 0);
	return 0;
}

/*
 * A few objects (the usual checkpoint: a commit, some trees, the changed
 * files) are flushed one by one, with the index when it was saved (a
 * checkpoint of an unchanged tree writes only its commit); more than that, the whole
 * file system at once: syncfs(2) also waits for every other process's
 * dirty data, which on a busy machine costs more than a few fsyncs.
 */
#define FSYNC_EACH_MAX 128

int shadow_batch_end(struct checkpoints *cps)
{
	int r = cps->loose ? vcs_loose_flush(cps->loose, FSYNC_EACH_MAX) : 1, fd;

	git_libgit2_opts(GIT_OPT_ENABLE_FSYNC_GITDIR, 1);
	if (r < 0)
		return r;
	if (!r && cps->index_written) {
		static const char *const caches[] = { "index", STATCACHE_FILE };
		size_t i;

		for (i = 0; i < ARRAY_SIZE(caches) && !r; i++) {
			fd = openat(cps->shadow_fd, caches[i],
				    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			if (fd >= 0 && fsync(fd) < 0)
				r = -1;
			if (fd >= 0)
				close(fd);
		}
		if (!r && fsync(cps->shadow_fd) < 0)
			r = -1;
	}
	if (r) {
		if (syncfs(cps->shadow_fd) < 0)
			return err_set_errno(FX_EOS, "cannot flush the checkpoint to disk");
		if (cps->loose)
			vcs_loose_forget_written(cps->loose);
	}
	cps->index_written = 0;
	unlinkat(cps->shadow_fd, BATCH_MARKER, 0);
	return 0;
}

/* After an interrupted batch: remove loose objects newer than the marker that are damaged. */
static int batch_recover(struct checkpoints *cps)
{
	struct stat mst;
	unsigned i;
	int objfd;

	if (fstatat(cps->shadow_fd, BATCH_MARKER, &mst, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (vcs_openat_beneath(&objfd, cps->shadow_fd, "objects", O_RDONLY | O_DIRECTORY,
			       cps->shadow) < 0)
		return err_last_code() == FX_ENOTFOUND ? (err_clear(), 0) : err_last_code();
	for (i = 0; i < 256; i++) {
		char sub[9];
		DIR *d;
		struct dirent *de;
		int dfd;

		snprintf(sub, sizeof(sub), "%02x", i & 0xff);
		dfd = openat(objfd, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0)
			continue;
		if (!(d = fdopendir(dfd))) {
			close(dfd);
			continue;
		}
		while ((de = readdir(d))) {
			struct stat st;
			git_oid oid;
			char hex[64];
			int fd;

			if (!strncmp(de->d_name, "tmp_obj_", 8)) {
				unlinkat(dirfd(d), de->d_name, 0);
				continue;
			}
			if (strlen(de->d_name) != 38 ||
			    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    st.st_mtim.tv_sec + 2 < mst.st_mtim.tv_sec)
				continue;
			snprintf(hex, sizeof(hex), "%s%.38s", sub, de->d_name);
			if (git_oid_fromstr(&oid, hex) < 0)
				continue;
			fd = openat(dirfd(d), de->d_name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			if (fd < 0 || !S_ISREG(st.st_mode) || vcs_loose_check(fd, &oid, NULL, NULL, NULL) < 0)
				unlinkat(dirfd(d), de->d_name, 0);
			if (fd >= 0)
				close(fd);
		}
		closedir(d);
	}
	close(objfd);
	git_error_clear();
	err_clear();
	/* the index may name what was just removed, or be damaged itself: rebuild it */
	unlinkat(cps->shadow_fd, "index", 0);
	unlinkat(cps->shadow_fd, STATCACHE_FILE, 0);
	unlinkat(cps->shadow_fd, IGNORE_STAMP, 0);
	if (unlinkat(cps->shadow_fd, BATCH_MARKER, 0) < 0 && errno != ENOENT)
		return err_set_errno(FX_EOS, "cannot remove %s/%s", cps->shadow, BATCH_MARKER);
	return 0;
}

/* ------------------------------------------------------------------ open */

/* Write `content` to `name` in the shadow unless it already holds exactly that. */
static int write_if_changed(struct checkpoints *cps, const char *name, const char *content,
			    size_t len)
{
	struct buf old = BUF_INIT;
	const char *slash = strrchr(name, '/');
	int ret = 0, dfd = cps->shadow_fd;

	if (!vcs_read_beneath(&old, cps->shadow_fd, name, 1 << 20, cps->shadow) && old.len == len &&
	    !memcmp(old.buf, content, len))
		goto out;
	if (err_last_code() == FX_EDENIED) {
		ret = err_last_code();
		goto out;
	}
	err_clear();
	if (slash) {
		char *dir = xstrndup(name, (size_t)(slash - name));

		ret = vcs_openat_beneath(&dfd, cps->shadow_fd, dir, O_RDONLY | O_DIRECTORY,
					 cps->shadow);
		free(dir);
		if (ret < 0)
			goto out;
	}
	ret = fsutil_write_atomic_at(dfd, slash ? slash + 1 : name, content, len, 0644);
	if (ret < 0)
		err_prefix(ret, "%s/%s", cps->shadow, name);
	if (dfd != cps->shadow_fd)
		close(dfd);
out:
	buf_release(&old);
	return ret;
}

/* FX_EDENIED when `dir`/`name` exists and is not a regular file (a FIFO would block a read). */
static int plain_or_absent(const char *dir, const char *name)
{
	char *p = xstrfmt("%s%s%s", dir, *dir && dir[strlen(dir) - 1] == '/' ? "" : "/", name);
	struct stat st;
	int ret = 0;

	if (!stat(p, &st) && !S_ISREG(st.st_mode))
		ret = err_set(FX_EDENIED, "%s is not a regular file; not reading it", p);
	free(p);
	return ret;
}

/*
 * Before libgit2 reads the user's config files: none may be a FIFO or a
 * device (libgit2 opens them blocking). git_repository_discover() only
 * looks for the git folder; opening it reads `config`.
 */
static int check_user_config(const char *workspace)
{
	git_buf gitdir = GIT_BUF_INIT;
	struct buf common = BUF_INIT;
	int ret = 0;

	if (git_repository_discover(&gitdir, workspace, 0, NULL) < 0) {
		git_error_clear();
		return 0;
	}
	if ((ret = plain_or_absent(gitdir.ptr, "commondir")) < 0 ||
	    (ret = plain_or_absent(gitdir.ptr, "config")) < 0 ||
	    (ret = plain_or_absent(gitdir.ptr, "config.worktree")) < 0)
		goto out;
	{
		char *cd = xstrfmt("%scommondir", gitdir.ptr);

		if (!fsutil_read_file(&common, cd, 4096)) {
			buf_trim(&common);
			if (common.len && common.buf[0] != '/') {
				char *abs = xstrfmt("%s%s", gitdir.ptr, common.buf);

				buf_reset(&common);
				buf_addstr(&common, abs);
				free(abs);
			}
			if (common.len)
				ret = plain_or_absent(common.buf, "config");
		}
		err_clear();
		free(cd);
	}
out:
	git_buf_dispose(&gitdir);
	buf_release(&common);
	return ret;
}

/* Find the user's repository: the workspace or a folder above it. */
static int find_user_repo(struct checkpoints *cps)
{
	git_repository *user = NULL;
	const char *wd;
	char *real = NULL;
	size_t n;
	int gerr;

	if ((gerr = check_user_config(cps->workspace)) < 0)
		return gerr;
	gerr = git_repository_open_ext(&user, cps->workspace, 0, NULL);
	if (gerr == GIT_ENOTFOUND) {
		git_error_clear();
		return 0;
	}
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot open the git repository of %s", cps->workspace);
	wd = git_repository_workdir(user);
	if (!wd || !(real = realpath(wd, NULL))) {
		/* bare, or a work tree that is gone: nothing to mirror */
		git_repository_free(user);
		return 0;
	}
	n = strlen(real);
	if (!strcmp(real, cps->workspace)) {
		cps->user_prefix = xstrdup("");
	} else if (!strncmp(cps->workspace, real, n) && cps->workspace[n] == '/') {
		cps->user_prefix = xstrfmt("%s/", cps->workspace + n + 1);
	} else {
		git_repository_free(user);
		free(real);
		return 0;
	}
	free(real);
	cps->user = user;
	return 0;
}

/*
 * The shadow's config, written by forgex itself (through a descriptor,
 * never through a link): no conversions, links as links, the executable
 * bit honoured, no Windows/macOS path restrictions. Which files are
 * ignored is decided by ignore.c, which reads the user's
 * core.excludesFile (remembered here) and info/exclude itself.
 */
static int setup_config(struct checkpoints *cps)
{
	static const char config[] =
		"# written by forgex; rewritten when it differs\n"
		"[core]\n"
		"\trepositoryformatversion = 0\n"
		"\tbare = true\n"
		"\tfilemode = true\n"
		"\tsymlinks = true\n"
		"\tignorecase = false\n"
		"\tautocrlf = false\n"
		"\tsafecrlf = false\n"
		"\tprecomposeunicode = false\n"
		"\tprotectNTFS = false\n"
		"\tprotectHFS = false\n"
		"\tlogallrefupdates = false\n"
		"\tcheckstat = default\n"
		"\ttrustctime = true\n"
		"[gc]\n"
		"\tauto = 0\n";
	git_config *snap = NULL;
	git_buf excl = GIT_BUF_INIT;
	char *excludes = NULL;
	int ret = 0, gerr;

	if (cps->user) {
		/* a FIFO or device planted as the user's config would block the read */
		char *cpath = xstrfmt("%sconfig", git_repository_commondir(cps->user));
		struct stat cst;
		int bad = !stat(cpath, &cst) && !S_ISREG(cst.st_mode);

		if (bad)
			ret = err_set(FX_EDENIED, "%s is not a regular file; not reading it", cpath);
		free(cpath);
		if (bad)
			goto out;
		gerr = git_repository_config_snapshot(&snap, cps->user);
		if (gerr < 0) {
			ret = vcs_git_error(gerr, "cannot read the config of %s", cps->workspace);
			goto out;
		}
		gerr = git_config_get_path(&excl, snap, "core.excludesfile");
		if (!gerr) {
			excludes = xstrdup(excl.ptr);
		} else if (gerr != GIT_ENOTFOUND) {
			ret = vcs_git_error(gerr, "cannot read core.excludesFile");
			goto out;
		} else {
			/* git's default */
			const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");

			if (xdg && *xdg)
				excludes = xstrfmt("%s/git/ignore", xdg);
			else if (home && *home)
				excludes = xstrfmt("%s/.config/git/ignore", home);
		}
		git_error_clear();
	}
	/* outside a git repository only the tree's own .gitignore files apply */
	if ((ret = write_if_changed(cps, "config", config, sizeof(config) - 1)) < 0)
		goto out;
	free(cps->excludes_file);
	cps->excludes_file = excludes;
	excludes = NULL;
out:
	git_config_free(snap);
	git_buf_dispose(&excl);
	free(excludes);
	return ret;
}

/* Our own attributes, and the .gitignore that hides the shadow from git. */
static int setup_files(struct checkpoints *cps)
{
	int ret, dfd;

	if ((ret = open_dir(&dfd, cps->shadow_fd, "info", 1, cps->shadow)) < 0)
		return ret;
	close(dfd);
	/* what older versions kept and nothing reads any more */
	unlinkat(cps->shadow_fd, IGNORE_STAMP, 0);
	if ((ret = write_if_changed(cps, "info/attributes", shadow_attributes,
				    sizeof(shadow_attributes) - 1)) < 0)
		return ret;
	return write_if_changed(cps, ".gitignore", shadow_gitignore, sizeof(shadow_gitignore) - 1);
}

struct borrowed_odb {
	git_odb_backend parent;
	git_odb *from;
	int objfd;		/* the user's objects folder, or -1 */
	git_odb_backend *loose;	/* ours, to remember damaged objects */
};

/*
 * libgit2 spins in inflate() on a loose object cut short in the user's
 * repository as well: check a loose copy with odb.c's bounded reader
 * before libgit2 reads it. 0 when there is none or it is whole.
 */
static int borrowed_check_loose(struct borrowed_odb *bo, const git_oid *oid)
{
	char hex[GIT_OID_HEXSZ + 1], sub[3];
	struct stat st;
	int dfd, fd, r;

	if (bo->objfd < 0)
		return 0;
	git_oid_tostr(hex, sizeof(hex), oid);
	memcpy(sub, hex, 2);
	sub[2] = '\0';
	dfd = openat(bo->objfd, sub, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	fd = openat(dfd, hex + 2, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	close(dfd);
	if (fd < 0)
		return 0;
	r = fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ? -1 :
	    vcs_loose_check(fd, oid, NULL, NULL, NULL);
	close(fd);
	if (r < 0) {
		err_clear();
		if (bo->loose)
			vcs_loose_note_damaged(bo->loose, oid);
		git_error_set_str(GIT_ERROR_ODB, "object is damaged (cut short or corrupt)");
		return GIT_ENOTFOUND;
	}
	return 0;
}

static int borrowed_read(void **data, size_t *len, git_object_t *type, git_odb_backend *b,
			 const git_oid *oid)
{
	struct borrowed_odb *bo = (struct borrowed_odb *)b;
	git_odb_object *obj = NULL;
	int gerr = borrowed_check_loose(bo, oid);

	if (!gerr)
		gerr = git_odb_read(&obj, bo->from, oid);
	if (gerr < 0)
		return gerr;
	*len = git_odb_object_size(obj);
	*type = git_odb_object_type(obj);
	*data = git_odb_backend_data_alloc(b, *len ? *len : 1);
	if (!*data) {
		git_odb_object_free(obj);
		return GIT_ERROR;
	}
	memcpy(*data, git_odb_object_data(obj), *len);
	git_odb_object_free(obj);
	return 0;
}

static int borrowed_read_prefix(git_oid *out, void **data, size_t *len, git_object_t *type,
				git_odb_backend *b, const git_oid *short_id, size_t n)
{
	struct borrowed_odb *bo = (struct borrowed_odb *)b;
	int gerr = git_odb_exists_prefix(out, bo->from, short_id, n);

	if (gerr < 0)
		return gerr;
	return borrowed_read(data, len, type, b, out);
}

static int borrowed_read_header(size_t *len, git_object_t *type, git_odb_backend *b,
				const git_oid *oid)
{
	int gerr = borrowed_check_loose((struct borrowed_odb *)b, oid);

	return gerr ? gerr : git_odb_read_header(len, type, ((struct borrowed_odb *)b)->from, oid);
}

static int borrowed_exists(git_odb_backend *b, const git_oid *oid)
{
	struct borrowed_odb *bo = (struct borrowed_odb *)b;

	if (!git_odb_exists_ext(bo->from, oid, GIT_ODB_LOOKUP_NO_REFRESH))
		return 0;
	/* a damaged loose copy does not count: the shadow then stores a good one */
	if (borrowed_check_loose(bo, oid) < 0) {
		git_error_clear();
		return 0;
	}
	return 1;
}

static int borrowed_exists_prefix(git_oid *out, git_odb_backend *b, const git_oid *short_id,
				  size_t n)
{
	return git_odb_exists_prefix(out, ((struct borrowed_odb *)b)->from, short_id, n);
}

static int borrowed_refresh(git_odb_backend *b)
{
	return git_odb_refresh(((struct borrowed_odb *)b)->from);
}

static void borrowed_free(git_odb_backend *b)
{
	if (((struct borrowed_odb *)b)->objfd >= 0)
		close(((struct borrowed_odb *)b)->objfd);
	git_odb_free(((struct borrowed_odb *)b)->from);
	free(b);
}

/*
 * The shadow's object database: its own loose objects through odb.c
 * (bounded reads, no links) and, behind them, the user's objects read-only.
 */
static int setup_odb(struct checkpoints *cps)
{
	git_odb *odb = NULL, *from = NULL;
	git_odb_backend *loose = NULL;
	struct borrowed_odb *bo;
	int gerr, ret, objfd;

	if ((ret = open_dir(&objfd, cps->shadow_fd, "objects", 1, cps->shadow)) < 0)
		return ret;
	if ((gerr = git_odb_new(&odb)) < 0) {
		close(objfd);
		return vcs_git_error(gerr, "cannot set up the checkpoint objects");
	}
	vcs_loose_backend(&loose, objfd);
	if ((gerr = git_odb_add_backend(odb, loose, 2)) < 0) {
		loose->free(loose);
		goto fail;
	}
	cps->loose = loose;
	if (cps->user) {
		if ((gerr = git_repository_odb(&from, cps->user)) < 0)
			goto fail;
		bo = xcalloc(1, sizeof(*bo));
		git_odb_init_backend(&bo->parent, GIT_ODB_BACKEND_VERSION);
		bo->from = from;
		bo->loose = loose;
		{
			char *od = xstrfmt("%sobjects", git_repository_commondir(cps->user));

			bo->objfd = open(od, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			free(od);
		}
		bo->parent.read = borrowed_read;
		bo->parent.read_prefix = borrowed_read_prefix;
		bo->parent.read_header = borrowed_read_header;
		bo->parent.exists = borrowed_exists;
		bo->parent.exists_prefix = borrowed_exists_prefix;
		bo->parent.refresh = borrowed_refresh;
		bo->parent.free = borrowed_free;
		if ((gerr = git_odb_add_alternate(odb, &bo->parent, 1)) < 0) {
			borrowed_free(&bo->parent);
			goto fail;
		}
	}
	if ((gerr = git_repository_set_odb(cps->repo, odb)) < 0)
		goto fail;
	git_odb_free(odb);
	return 0;
fail:
	ret = vcs_git_error(gerr, "cannot open the objects of %s", cps->workspace);
	git_odb_free(odb);
	return ret;
}

/*
 * A new shadow, made by forgex itself beneath the shadow's descriptor
 * (libgit2's git_repository_init would follow links planted in the folder).
 */
static int init_shadow(struct checkpoints *cps)
{
	static const char head[] = "ref: " CHECKPOINT_REF "\n";
	static const char desc[] = "forgex checkpoints of this workspace\n";
	struct stat st;
	int ret, dfd;

	if (!fstatat(cps->shadow_fd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode))
		return 0;
	if ((ret = open_dir(&dfd, cps->shadow_fd, "objects", 1, cps->shadow)) < 0)
		return ret;
	close(dfd);
	if ((ret = open_dir(&dfd, cps->shadow_fd, "refs", 1, cps->shadow)) < 0)
		return ret;
	{
		int f = -1;

		ret = open_dir(&f, dfd, "forgex", 1, cps->shadow);
		close(dfd);
		if (ret < 0)
			return ret;
		close(f);
	}
	if ((ret = write_if_changed(cps, "description", desc, sizeof(desc) - 1)) < 0)
		return ret;
	return write_if_changed(cps, "HEAD", head, sizeof(head) - 1);
}

int checkpoint_open(struct checkpoints **out, const char *workspace)
{
	struct checkpoints *cps;
	struct stat st;
	int ret, gerr, fd = -1;

	if ((ret = vcs_init()) < 0)
		return ret;
	cps = xcalloc(1, sizeof(*cps));
	strvec_init(&cps->too_large);
	cps->lock_fd = cps->root_fd = cps->shadow_fd = -1;
	cps->max_file_bytes = CHECKPOINT_MAX_FILE_BYTES;
	cps->workspace = realpath(workspace, NULL);
	if (!cps->workspace) {
		ret = err_set_errno(errno == ENOENT ? FX_ENOTFOUND : FX_EOS,
				    "cannot open workspace %s", workspace);
		goto fail;
	}
	cps->root_fd = open(cps->workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cps->root_fd < 0 || fstat(cps->root_fd, &st) < 0 || !S_ISDIR(st.st_mode)) {
		ret = err_set(FX_EINVAL, "workspace %s is not a folder", workspace);
		goto fail;
	}
	cps->shadow = xstrfmt("%s/" SHADOW_DIR, cps->workspace);
	{
		char *forgex = xstrfmt("%s/.forgex", cps->workspace);

		ret = open_dir(&fd, cps->root_fd, ".forgex", 1, forgex);
		free(forgex);
		if (ret < 0)
			goto fail;
		ret = open_dir(&cps->shadow_fd, fd, "checkpoints", 1, cps->shadow);
		close(fd);
		if (ret < 0)
			goto fail;
	}
	cps->lock_fd = openat(cps->shadow_fd, "forgex.lock",
			      O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
	if (cps->lock_fd < 0) {
		ret = err_set_errno(FX_EOS, "cannot open %s/forgex.lock", cps->shadow);
		goto fail;
	}
	if ((ret = checkpoint__lock(cps)) < 0)
		goto fail;
	if ((ret = find_user_repo(cps)) < 0 || (ret = init_shadow(cps)) < 0 ||
	    (ret = setup_files(cps)) < 0 || (ret = setup_config(cps)) < 0 ||
	    (ret = batch_recover(cps)) < 0 || (ret = shadow_check(cps)) < 0)
		goto fail_locked;
	gerr = git_repository_open_bare(&cps->repo, cps->shadow);
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot open the checkpoint repository %s", cps->shadow);
		goto fail_locked;
	}
	gerr = git_repository_set_workdir(cps->repo, cps->workspace, 0);
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot set up the checkpoint repository");
		goto fail_locked;
	}
	if ((ret = setup_odb(cps)) < 0)
		goto fail_locked;
	checkpoint__unlock(cps);
	*out = cps;
	return 0;
fail_locked:
	checkpoint__unlock(cps);
fail:
	checkpoint_close(cps);
	return ret;
}

void checkpoint_close(struct checkpoints *cps)
{
	if (!cps)
		return;
	git_repository_free(cps->repo);
	git_repository_free(cps->user);
	if (cps->lock_fd >= 0)
		close(cps->lock_fd);
	if (cps->shadow_fd >= 0)
		close(cps->shadow_fd);
	if (cps->root_fd >= 0)
		close(cps->root_fd);
	free(cps->workspace);
	free(cps->shadow);
	free(cps->user_prefix);
	free(cps->excludes_file);
	strvec_clear(&cps->too_large);
	free(cps);
}
