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
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <git2/sys/odb_backend.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/path.h"
#include "vcs/checkpoint.h"
#include "vcs/shadow.h"
#include "vcs/vcs_internal.h"

#define SHORT_ID_MIN 12
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
	 * Objects, refs and the index are renamed into place only after they
	 * reach the disk: a crash never leaves a truncated object that a
	 * later checkpoint would reuse because it "exists".
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

/* ------------------------------------------------------------------ lock */

int checkpoint__lock(struct checkpoints *cps)
{
	int waited = 0;

	if (cps->lock_depth++)
		return 0;
	for (;;) {
		if (!flock(cps->lock_fd, LOCK_EX | LOCK_NB))
			return 0;
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
}

void checkpoint__unlock(struct checkpoints *cps)
{
	if (cps->lock_depth && !--cps->lock_depth)
		flock(cps->lock_fd, LOCK_UN);
}

/* ------------------------------------------------------- durable objects */

/*
 * New objects are written without an fsync each (thousands on a first
 * checkpoint would take seconds) and made durable together by one
 * syncfs() before anything refers to them. A marker file brackets the
 * batch: when forgex dies (or the machine crashes) inside one, a loose
 * object may be left empty or truncated, and libgit2 would later trust it
 * because it "exists". The next open finds the marker and deletes every
 * loose object newer than it that does not read back whole.
 *
 * The marker itself needs no fsync: journaling file systems commit
 * metadata in order, so a surviving object file implies a surviving marker.
 */
int shadow_batch_begin(struct checkpoints *cps)
{
	struct buf p = BUF_INIT;
	int fd;

	path_join(&p, cps->shadow, BATCH_MARKER);
	fd = open(p.buf, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	buf_release(&p);
	if (fd < 0)
		return err_set_errno(FX_EOS, "cannot write in %s", cps->shadow);
	close(fd);
	git_libgit2_opts(GIT_OPT_ENABLE_FSYNC_GITDIR, 0);
	return 0;
}

int shadow_batch_end(struct checkpoints *cps)
{
	struct buf p = BUF_INIT;
	int fd, ret = 0;

	git_libgit2_opts(GIT_OPT_ENABLE_FSYNC_GITDIR, 1);
	fd = open(cps->shadow, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || syncfs(fd) < 0)
		ret = err_set_errno(FX_EOS, "cannot flush the checkpoint to disk");
	if (fd >= 0)
		close(fd);
	if (!ret) {
		path_join(&p, cps->shadow, BATCH_MARKER);
		unlink(p.buf);
		buf_release(&p);
	}
	return ret;
}

/* After an interrupted batch: remove loose objects newer than the marker that are damaged. */
static int batch_recover(struct checkpoints *cps)
{
	struct buf p = BUF_INIT, dir = BUF_INIT;
	struct stat mst;
	git_odb *odb = NULL;
	int ret = 0, gerr;
	unsigned i;

	path_join(&p, cps->shadow, BATCH_MARKER);
	if (lstat(p.buf, &mst) < 0)
		goto out;
	path_join(&dir, cps->shadow, "objects");
	/* our own objects only: a damaged copy must not hide behind a good borrowed one */
	gerr = git_odb_open(&odb, dir.buf);
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot open %s", dir.buf);
		goto out;
	}
	for (i = 0; i < 256; i++) {
		char sub[8];
		DIR *d;
		struct dirent *de;

		snprintf(sub, sizeof(sub), "/%02x", i);
		buf_setlen(&dir, strlen(cps->shadow) + strlen("/objects"));
		buf_addstr(&dir, sub);
		if (!(d = opendir(dir.buf)))
			continue;
		while ((de = readdir(d))) {
			struct stat st;
			git_oid oid;
			git_odb_object *obj = NULL;
			char hex[41];

			if (strlen(de->d_name) != 38 ||
			    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
			    st.st_mtim.tv_sec + 2 < mst.st_mtim.tv_sec)
				continue;
			snprintf(hex, sizeof(hex), "%02x%.38s", i, de->d_name);
			if (git_oid_fromstr(&oid, hex) < 0)
				continue;
			if (git_odb_read(&obj, odb, &oid) < 0)
				unlinkat(dirfd(d), de->d_name, 0);
			git_odb_object_free(obj);
		}
		closedir(d);
	}
	git_error_clear();
	/* the index may name what was just removed, or be damaged itself: rebuild it */
	buf_reset(&dir);
	path_join(&dir, cps->shadow, "index");
	unlink(dir.buf);
	buf_reset(&dir);
	path_join(&dir, cps->shadow, IGNORE_STAMP);
	unlink(dir.buf);
	if (unlink(p.buf) < 0 && errno != ENOENT)
		ret = err_set_errno(FX_EOS, "cannot remove %s", p.buf);
out:
	git_odb_free(odb);
	buf_release(&p);
	buf_release(&dir);
	return ret;
}

/* ------------------------------------------------------------------ open */

/* Write `content` to `dir`/`name` unless it already holds exactly that. */
static int write_if_changed(const char *dir, const char *name, const char *content, size_t len)
{
	struct buf p = BUF_INIT, old = BUF_INIT;
	int ret = 0;

	path_join(&p, dir, name);
	if (!fsutil_read_file(&old, p.buf, 0) && old.len == len && !memcmp(old.buf, content, len))
		goto out;
	err_clear();
	ret = fsutil_write_atomic(p.buf, content, len, 0644);
out:
	buf_release(&p);
	buf_release(&old);
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

/* Set `key` in the shadow's own config file unless it has that value already. */
static int config_ensure(git_config *cfg, const char *key, const char *value)
{
	git_config_entry *e = NULL;
	int gerr = git_config_get_entry(&e, cfg, key);

	if (!gerr && value && !strcmp(e->value, value)) {
		git_config_entry_free(e);
		return 0;
	}
	git_config_entry_free(e);
	if (gerr && gerr != GIT_ENOTFOUND)
		return vcs_git_error(gerr, "cannot read %s", key);
	git_error_clear();
	if (!value) {
		if (gerr == GIT_ENOTFOUND)
			return 0;
		gerr = git_config_delete_entry(cfg, key);
	} else {
		gerr = git_config_set_string(cfg, key, value);
	}
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot set %s in the checkpoint repository", key);
	return 0;
}

/*
 * The shadow's config: no conversions, links as links, the executable bit
 * honoured, no Windows/macOS path restrictions, and the user's
 * core.excludesFile (or none at all outside a git repository).
 */
static int setup_config(struct checkpoints *cps)
{
	static const char *const fixed[][2] = {
		{ "core.filemode", "true" },
		{ "core.symlinks", "true" },
		{ "core.ignorecase", "false" },
		{ "core.autocrlf", "false" },
		{ "core.safecrlf", "false" },
		{ "core.precomposeunicode", "false" },
		{ "core.protectNTFS", "false" },
		{ "core.protectHFS", "false" },
		{ "core.logallrefupdates", "false" },
		{ "core.checkstat", "default" },
		{ "core.trustctime", "true" },
		{ "gc.auto", "0" },
	};
	struct buf p = BUF_INIT;
	git_config *cfg = NULL, *snap = NULL;
	git_buf excl = GIT_BUF_INIT;
	char *excludes = NULL;
	size_t i;
	int ret = 0, gerr;

	if (cps->user) {
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
		}
		git_error_clear();
	} else {
		/*
		 * Outside a git repository only the tree's own .gitignore
		 * files apply: point core.excludesFile at the (empty)
		 * info/exclude so the user's global ignore file does not.
		 */
		excludes = xstrfmt("%s/info/exclude", cps->shadow);
	}
	path_join(&p, cps->shadow, "config");
	gerr = git_config_open_ondisk(&cfg, p.buf);
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot open %s", p.buf);
		goto out;
	}
	for (i = 0; i < ARRAY_SIZE(fixed) && !ret; i++)
		ret = config_ensure(cfg, fixed[i][0], fixed[i][1]);
	if (!ret)
		ret = config_ensure(cfg, "core.excludesfile", excludes);
	if (!ret && !excludes) {
		/* git's default, which libgit2 applies the same way */
		const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");

		if (xdg && *xdg)
			excludes = xstrfmt("%s/git/ignore", xdg);
		else if (home && *home)
			excludes = xstrfmt("%s/.config/git/ignore", home);
	}
	free(cps->excludes_file);
	cps->excludes_file = excludes;
	excludes = NULL;
out:
	git_config_free(cfg);
	git_config_free(snap);
	git_buf_dispose(&excl);
	free(excludes);
	buf_release(&p);
	return ret;
}

/* Mirror the user's info/exclude into the shadow; write our own attributes. */
static int setup_mirrors(struct checkpoints *cps)
{
	struct buf dir = BUF_INIT, p = BUF_INIT, excl = BUF_INIT;
	int ret = 0;

	if (cps->user) {
		path_join(&p, git_repository_commondir(cps->user), "info/exclude");
		if (fsutil_read_file(&excl, p.buf, 0) < 0) {
			if (err_last_code() != FX_ENOTFOUND) {
				ret = err_last_code();
				goto out;
			}
			buf_reset(&excl);
		}
	}
	err_clear();
	path_join(&dir, cps->shadow, "info");
	if ((ret = fsutil_mkdir_p(dir.buf, 0755)) < 0)
		goto out;
	if ((ret = write_if_changed(dir.buf, "exclude", excl.buf, excl.len)) < 0)
		goto out;
	if ((ret = write_if_changed(dir.buf, "attributes", shadow_attributes,
				    sizeof(shadow_attributes) - 1)) < 0)
		goto out;
	ret = write_if_changed(cps->shadow, ".gitignore", shadow_gitignore,
			       sizeof(shadow_gitignore) - 1);
out:
	buf_release(&dir);
	buf_release(&p);
	buf_release(&excl);
	return ret;
}

/*
 * Borrowing the user's objects.
 *
 * objects/info/alternates would do, except that libgit2 "freshens" an
 * object it was about to write and found in an alternate: it touches the
 * user's loose object or pack file, a write into the user's .git. So the
 * user's object database is added in memory behind this read-only backend,
 * which has no freshen (libgit2 then only asks whether the object exists)
 * and no write.
 */
struct borrowed_odb {
	git_odb_backend parent;
	git_odb *from;
};

static int borrowed_read(void **data, size_t *len, git_object_t *type, git_odb_backend *b,
			 const git_oid *oid)
{
	struct borrowed_odb *bo = (struct borrowed_odb *)b;
	git_odb_object *obj = NULL;
	int gerr = git_odb_read(&obj, bo->from, oid);

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
	git_odb_object *obj = NULL;
	int gerr = git_odb_read_prefix(&obj, bo->from, short_id, n);

	if (gerr < 0)
		return gerr;
	git_oid_cpy(out, git_odb_object_id(obj));
	git_odb_object_free(obj);
	return borrowed_read(data, len, type, b, out);
}

static int borrowed_read_header(size_t *len, git_object_t *type, git_odb_backend *b,
				const git_oid *oid)
{
	return git_odb_read_header(len, type, ((struct borrowed_odb *)b)->from, oid);
}

static int borrowed_exists(git_odb_backend *b, const git_oid *oid)
{
	return git_odb_exists_ext(((struct borrowed_odb *)b)->from, oid, GIT_ODB_LOOKUP_NO_REFRESH);
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
	git_odb_free(((struct borrowed_odb *)b)->from);
	free(b);
}

static int borrow_user_objects(struct checkpoints *cps)
{
	struct borrowed_odb *bo;
	git_odb *odb = NULL, *from = NULL;
	int gerr;

	if (!cps->user)
		return 0;
	gerr = git_repository_odb(&from, cps->user);
	if (!gerr)
		gerr = git_repository_odb(&odb, cps->repo);
	if (gerr < 0) {
		git_odb_free(from);
		return vcs_git_error(gerr, "cannot open the objects of %s", cps->workspace);
	}
	bo = xcalloc(1, sizeof(*bo));
	git_odb_init_backend(&bo->parent, GIT_ODB_BACKEND_VERSION);
	bo->from = from;
	bo->parent.read = borrowed_read;
	bo->parent.read_prefix = borrowed_read_prefix;
	bo->parent.read_header = borrowed_read_header;
	bo->parent.exists = borrowed_exists;
	bo->parent.exists_prefix = borrowed_exists_prefix;
	bo->parent.refresh = borrowed_refresh;
	bo->parent.free = borrowed_free;
	gerr = git_odb_add_alternate(odb, &bo->parent, 0);
	if (gerr < 0)
		borrowed_free(&bo->parent);
	git_odb_free(odb);
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot borrow the objects of %s", cps->workspace);
	return 0;
}

/* Make sure <workspace>/.forgex/checkpoints is a real folder (never a link). */
static int ensure_shadow_dir(struct checkpoints *cps)
{
	struct buf p = BUF_INIT;
	const char *parts[] = { ".forgex", SHADOW_DIR };
	struct stat st;
	size_t i;
	int ret = 0;

	for (i = 0; i < ARRAY_SIZE(parts); i++) {
		buf_reset(&p);
		path_join(&p, cps->workspace, parts[i]);
		if (lstat(p.buf, &st) < 0) {
			if (errno != ENOENT) {
				ret = err_set_errno(FX_EOS, "cannot inspect %s", p.buf);
				goto out;
			}
			if (mkdir(p.buf, 0755) < 0 && errno != EEXIST) {
				ret = err_set_errno(FX_EOS, "cannot create %s", p.buf);
				goto out;
			}
			if (lstat(p.buf, &st) < 0) {
				ret = err_set_errno(FX_EOS, "cannot inspect %s", p.buf);
				goto out;
			}
		}
		if (!S_ISDIR(st.st_mode)) {
			ret = err_set(FX_EINVAL, "%s is not a folder (a symbolic link or a file)",
				      p.buf);
			goto out;
		}
	}
out:
	buf_release(&p);
	return ret;
}

static int init_shadow(struct checkpoints *cps)
{
	git_repository_init_options opts = GIT_REPOSITORY_INIT_OPTIONS_INIT;
	git_repository *r = NULL;
	struct buf head = BUF_INIT;
	int gerr, ret = 0;

	path_join(&head, cps->shadow, "HEAD");
	if (fsutil_exists(head.buf))
		goto out;
	opts.flags = GIT_REPOSITORY_INIT_BARE | GIT_REPOSITORY_INIT_MKPATH;
	opts.mode = GIT_REPOSITORY_INIT_SHARED_UMASK;
	opts.initial_head = CHECKPOINT_REF;
	opts.description = "forgex checkpoints of this workspace\n";
	gerr = git_repository_init_ext(&r, cps->shadow, &opts);
	if (gerr < 0)
		ret = vcs_git_error(gerr, "cannot create the checkpoint repository %s", cps->shadow);
	git_repository_free(r);
out:
	buf_release(&head);
	return ret;
}

int checkpoint_open(struct checkpoints **out, const char *workspace)
{
	struct checkpoints *cps;
	struct buf p = BUF_INIT;
	struct stat st;
	int ret, gerr;

	if ((ret = vcs_init()) < 0)
		return ret;
	cps = xcalloc(1, sizeof(*cps));
	cps->lock_fd = -1;
	cps->workspace = realpath(workspace, NULL);
	if (!cps->workspace) {
		ret = err_set_errno(errno == ENOENT ? FX_ENOTFOUND : FX_EOS,
				    "cannot open workspace %s", workspace);
		goto fail;
	}
	if (stat(cps->workspace, &st) < 0 || !S_ISDIR(st.st_mode)) {
		ret = err_set(FX_EINVAL, "workspace %s is not a folder", workspace);
		goto fail;
	}
	cps->shadow = xstrfmt("%s/" SHADOW_DIR, cps->workspace);
	if ((ret = ensure_shadow_dir(cps)) < 0)
		goto fail;
	path_join(&p, cps->shadow, "forgex.lock");
	cps->lock_fd = open(p.buf, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (cps->lock_fd < 0) {
		ret = err_set_errno(FX_EOS, "cannot open %s", p.buf);
		goto fail;
	}
	if ((ret = checkpoint__lock(cps)) < 0)
		goto fail;
	if ((ret = find_user_repo(cps)) < 0 || (ret = init_shadow(cps)) < 0 ||
	    (ret = setup_mirrors(cps)) < 0 || (ret = setup_config(cps)) < 0 ||
	    (ret = batch_recover(cps)) < 0)
		goto fail_locked;
	gerr = git_repository_open_bare(&cps->repo, cps->shadow);
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot open the checkpoint repository %s", cps->shadow);
		goto fail_locked;
	}
	gerr = git_repository_set_workdir(cps->repo, cps->workspace, 0);
	if (!gerr)
		gerr = git_ignore_add_rule(cps->repo, "/.forgex\n");
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot set up the checkpoint repository");
		goto fail_locked;
	}
	if ((ret = borrow_user_objects(cps)) < 0)
		goto fail_locked;
	{
		/*
		 * libgit2's ref store decides whether it fsyncs when it is
		 * created: create it now, outside any batch, so moving the
		 * chain is always durable.
		 */
		git_refdb *refdb = NULL;

		gerr = git_repository_refdb(&refdb, cps->repo);
		git_refdb_free(refdb);
		if (gerr < 0) {
			ret = vcs_git_error(gerr, "cannot open the checkpoint refs");
			goto fail_locked;
		}
	}
	checkpoint__unlock(cps);
	buf_release(&p);
	*out = cps;
	return 0;
fail_locked:
	checkpoint__unlock(cps);
fail:
	buf_release(&p);
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
	free(cps->workspace);
	free(cps->shadow);
	free(cps->user_prefix);
	free(cps->excludes_file);
	free(cps);
}

