/*
 * Checkpoints in a shadow repository; see checkpoint.h and
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
#include <time.h>
#include <unistd.h>

#include <git2/sys/odb_backend.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/path.h"
#include "base/strvec.h"
#include "vcs/checkpoint.h"
#include "vcs/vcs_internal.h"

#define CHECKPOINT_REF "refs/forgex/checkpoints"
#define SHADOW_DIR ".forgex/checkpoints"
#define SHORT_ID_MIN 12
#define LOCK_WAIT_MS 10000

struct checkpoints {
	char *workspace;	/* resolved, absolute, no trailing slash */
	char *shadow;		/* <workspace>/.forgex/checkpoints */
	git_repository *repo;	/* the shadow; work tree = workspace (in memory) */
	git_repository *user;	/* the user's repository, or NULL */
	char *user_prefix;	/* the workspace inside the user's work tree: "" or "a/b/" */
	char *excludes_file;	/* the core.excludesFile in effect, or NULL */
	int lock_fd;
	int lock_depth;
};

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

static int vcs_init(void)
{
	pthread_once(&vcs_once, vcs_init_once);
	if (vcs_init_error)
		return err_set(FX_ERROR, "cannot initialise libgit2");
	return 0;
}

/* ------------------------------------------------------------------ info */

void checkpoint_info_release(struct checkpoint_info *info)
{
	if (!info)
		return;
	FREE_AND_NULL(info->message);
}

void checkpoint_list_release(struct checkpoint_list *list)
{
	size_t i;

	for (i = 0; i < list->nr; i++)
		checkpoint_info_release(&list->items[i]);
	FREE_AND_NULL(list->items);
	list->nr = list->alloc = 0;
}

void checkpoint_restore_result_release(struct checkpoint_restore_result *res)
{
	if (res)
		checkpoint_info_release(&res->backup);
}

const char *checkpoint_workspace(const struct checkpoints *cps)
{
	return cps->workspace;
}

git_repository *checkpoint__repo(struct checkpoints *cps)
{
	return cps->repo;
}

static void fill_info(struct checkpoint_info *out, const git_commit *c, size_t short_len)
{
	const char *msg = git_commit_message(c);
	size_t n = strlen(msg);

	memset(out, 0, sizeof(*out));
	git_oid_tostr(out->id, sizeof(out->id), git_commit_id(c));
	if (short_len > 40)
		short_len = 40;
	memcpy(out->short_id, out->id, short_len);
	out->short_id[short_len] = '\0';
	while (n && msg[n - 1] == '\n')
		n--;
	out->message = xstrndup(msg, n);
	out->time = (int64_t)git_commit_time(c);
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
#define BATCH_MARKER "forgex-writing"
#define IGNORE_STAMP "forgex-ignore-stamp"

static int batch_begin(struct checkpoints *cps)
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

static int batch_end(struct checkpoints *cps)
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

/* ----------------------------------------------------------- permissions */

static int is_file_mode(uint32_t mode)
{
	return mode == GIT_FILEMODE_BLOB || mode == GIT_FILEMODE_BLOB_EXECUTABLE;
}

/*
 * Git records only whether a file is executable. A checkpoint also records
 * the permission bits (0777) of every file and of every folder holding
 * one, in a "forgex-perms" header of its commit: a first line "1 F X D"
 * with the bits most files (F), executable files (X) and folders (D) have,
 * then "BITS PATH" for each exception, folders with a trailing "/"; bits
 * in octal, "\" and newlines in paths written "\\" and "\n".
 */
#define PERMS_HEADER "forgex-perms"

enum { PERM_FILE, PERM_EXEC, PERM_DIR };

struct perm_entry {
	char *path;		/* a folder ends with "/" */
	unsigned perms;
};

struct perm_map {
	struct perm_entry *v;
	size_t nr, alloc;
	unsigned def[3];	/* by PERM_FILE, PERM_EXEC, PERM_DIR */
	int known;		/* 0: no record (the defaults are a guess) */
};

#define PERM_MAP_INIT { NULL, 0, 0, { 0644, 0755, 0755 }, 0 }

static void perm_map_release(struct perm_map *m)
{
	size_t i;

	for (i = 0; i < m->nr; i++)
		free(m->v[i].path);
	FREE_AND_NULL(m->v);
	m->nr = m->alloc = 0;
}

static void perm_map_add(struct perm_map *m, const char *path, unsigned perms)
{
	ALLOC_GROW(m->v, m->nr + 1, m->alloc);
	m->v[m->nr].path = xstrdup(path);
	m->v[m->nr].perms = perms;
	m->nr++;
}

static int perm_entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct perm_entry *)a)->path, ((const struct perm_entry *)b)->path);
}

static void perm_map_sort(struct perm_map *m)
{
	if (m->nr)
		qsort(m->v, m->nr, sizeof(*m->v), perm_entry_cmp);
}

/* The kind of a map key, given the git mode of a file (ignored for a folder). */
static int perm_kind(const char *path, uint32_t mode)
{
	size_t n = strlen(path);

	if (n && path[n - 1] == '/')
		return PERM_DIR;
	return mode == GIT_FILEMODE_BLOB_EXECUTABLE ? PERM_EXEC : PERM_FILE;
}

/* The bits recorded for `path` (a folder: "a/b/"), whose git mode is `mode`. */
static unsigned perm_map_get(const struct perm_map *m, const char *path, uint32_t mode)
{
	struct perm_entry key, *e;

	key.path = (char *)path;
	e = m->nr ? bsearch(&key, m->v, m->nr, sizeof(*m->v), perm_entry_cmp) : NULL;
	return e ? e->perms : m->def[perm_kind(path, mode)];
}

static int strcmp_ptr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Folders above paths, as "a/", "a/b/": add_parent_dirs() for each path in
 * sorted order, then finish_dirs() sorts and drops duplicates.
 */
static void add_parent_dirs(struct strvec *all, const char *path, const char **prev)
{
	const char *slash;

	for (slash = strchr(path, '/'); slash; slash = strchr(slash + 1, '/')) {
		size_t len = (size_t)(slash - path) + 1;
		char *d;

		/* sorted input: a prefix shared with the last path is in already */
		if (*prev && !strncmp(*prev, path, len))
			continue;
		d = xstrndup(path, len);
		strvec_push(all, d);
		free(d);
	}
	*prev = path;
}

static void finish_dirs(struct strvec *out, struct strvec *all)
{
	size_t i;

	if (all->nr)
		qsort(all->v, all->nr, sizeof(*all->v), strcmp_ptr);
	for (i = 0; i < all->nr; i++)
		if (!i || strcmp(all->v[i], all->v[i - 1]))
			strvec_push(out, all->v[i]);
	strvec_clear(all);
}

static void index_dirs(struct strvec *out, git_index *idx)
{
	struct strvec all = STRVEC_INIT;
	size_t i, n = git_index_entrycount(idx);
	const char *prev = NULL;

	for (i = 0; i < n; i++)
		add_parent_dirs(&all, git_index_get_byindex(idx, i)->path, &prev);
	finish_dirs(out, &all);
}

/*
 * The permission bits, as they are on disk, of every file of `idx` and
 * every folder holding one (a full map: `def` is not used).
 */
static int perm_map_read(struct perm_map *out, int rootfd, git_index *idx)
{
	struct strvec dirs = STRVEC_INIT;
	size_t i, n = git_index_entrycount(idx);
	char *curdir = NULL;
	int ret = 0, dfd = -1;

	for (i = 0; i < n && !ret; i++) {
		const git_index_entry *e = git_index_get_byindex(idx, i);
		const char *slash = strrchr(e->path, '/'), *base = slash ? slash + 1 : e->path;
		char *dir = xstrndup(e->path, slash ? (size_t)(slash - e->path) : 0);
		struct stat st;

		if (!is_file_mode(e->mode)) {
			free(dir);
			continue;
		}
		/* one descriptor per folder: no full path walk per file */
		if (!curdir || strcmp(dir, curdir)) {
			if (dfd >= 0)
				close(dfd);
			free(curdir);
			curdir = dir;
			dfd = *dir ? openat(rootfd, dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) :
				     dup(rootfd);
		} else {
			free(dir);
		}
		if (dfd < 0 || fstatat(dfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode)) {
			ret = err_set_errno(FX_EOS, "cannot read the mode of '%s'", e->path);
			break;
		}
		perm_map_add(out, e->path, (unsigned)(st.st_mode & 0777));
	}
	if (dfd >= 0)
		close(dfd);
	free(curdir);
	if (ret < 0)
		return ret;
	index_dirs(&dirs, idx);
	for (i = 0; i < dirs.nr; i++) {
		struct stat st;

		if (fstatat(rootfd, dirs.v[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)) {
			ret = err_set_errno(FX_EOS, "cannot read the mode of '%s'", dirs.v[i]);
			break;
		}
		perm_map_add(out, dirs.v[i], (unsigned)(st.st_mode & 0777));
	}
	strvec_clear(&dirs);
	perm_map_sort(out);
	out->known = 1;
	return ret;
}

static unsigned most_common(const unsigned *counts, unsigned fallback)
{
	unsigned i, best = fallback;

	for (i = 0; i < 01000; i++)
		if (counts[i] > counts[best])
			best = i;
	return best;
}

/* The kind of an entry of a full map of index `idx`. */
static int perm_kind_in(git_index *idx, const char *path)
{
	const git_index_entry *e;
	size_t n = strlen(path);

	if (n && path[n - 1] == '/')
		return PERM_DIR;
	e = git_index_get_bypath(idx, path, 0);
	return e && e->mode == GIT_FILEMODE_BLOB_EXECUTABLE ? PERM_EXEC : PERM_FILE;
}

/* Format the full map `m` of index `idx` as the header value. */
static char *perm_map_format(const struct perm_map *m, git_index *idx)
{
	static const unsigned fallback[3] = { 0644, 0755, 0755 };
	unsigned *counts = xcalloc(3 * 01000, sizeof(*counts)), def[3];
	struct buf b = BUF_INIT;
	size_t i;
	int k;

	for (i = 0; i < m->nr; i++)
		counts[perm_kind_in(idx, m->v[i].path) * 01000 + m->v[i].perms]++;
	for (k = 0; k < 3; k++)
		def[k] = most_common(counts + k * 01000, fallback[k]);
	buf_addf(&b, "1 %o %o %o", def[0], def[1], def[2]);
	for (i = 0; i < m->nr; i++) {
		const char *p;

		if (m->v[i].perms == def[perm_kind_in(idx, m->v[i].path)])
			continue;
		buf_addf(&b, "\n%o ", m->v[i].perms);
		for (p = m->v[i].path; *p; p++) {
			if (*p == '\\')
				buf_addstr(&b, "\\\\");
			else if (*p == '\n')
				buf_addstr(&b, "\\n");
			else
				buf_addch(&b, *p);
		}
	}
	free(counts);
	return buf_detach(&b, NULL);
}

/* Read the header of commit `c` into `out`; a commit without one leaves out->known 0. */
static int perm_map_load(struct perm_map *out, const git_commit *c)
{
	git_buf hv = GIT_BUF_INIT;
	const char *p, *end;
	unsigned version;
	int gerr = git_commit_header_field(&hv, c, PERMS_HEADER);

	if (gerr == GIT_ENOTFOUND) {
		git_error_clear();
		return 0;
	}
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot read the modes of checkpoint %s",
				     git_oid_tostr_s(git_commit_id(c)));
	p = hv.ptr;
	end = hv.ptr + hv.size;
	if (sscanf(p, "%u %o %o %o", &version, &out->def[0], &out->def[1], &out->def[2]) != 4 ||
	    version != 1)
		goto bad;
	p += strcspn(p, "\n");
	while (p < end && *p == '\n') {
		struct buf path = BUF_INIT;
		unsigned perms;
		char *sp;

		p++;
		perms = (unsigned)strtoul(p, &sp, 8);
		if (sp == p || *sp != ' ' || perms > 0777)
			goto bad;
		for (p = sp + 1; p < end && *p != '\n'; p++) {
			if (*p == '\\' && p + 1 < end && (p[1] == '\\' || p[1] == 'n')) {
				buf_addch(&path, p[1] == 'n' ? '\n' : '\\');
				p++;
			} else {
				buf_addch(&path, *p);
			}
		}
		perm_map_add(out, path.buf, perms);
		buf_release(&path);
	}
	if (out->def[0] > 0777 || out->def[1] > 0777 || out->def[2] > 0777)
		goto bad;
	perm_map_sort(out);
	out->known = 1;
	git_buf_dispose(&hv);
	return 0;
bad:
	git_buf_dispose(&hv);
	perm_map_release(out);
	return err_set(FX_EPARSE, "checkpoint %s has a damaged " PERMS_HEADER " header",
		       git_oid_tostr_s(git_commit_id(c)));
}

/* --------------------------------------------------------------- capture */

static int lstat_rel(const struct checkpoints *cps, const char *rel, struct stat *st)
{
	struct buf p = BUF_INIT;
	int r;

	path_join(&p, cps->workspace, rel);
	r = lstat(p.buf, st);
	buf_release(&p);
	return r;
}

struct add_ctx {
	struct checkpoints *cps;
	git_index *idx;
};

/*
 * add_all callback: a folder reaching it is a nested repository (or a
 * submodule): leave it alone. When it replaced a recorded file, drop that
 * file, which add_all would otherwise keep.
 */
static int skip_dirs_cb(const char *path, const char *matched, void *payload)
{
	struct add_ctx *ctx = payload;
	struct stat st;

	(void)matched;
	if (lstat_rel(ctx->cps, path, &st) || !S_ISDIR(st.st_mode))
		return 0;
	if (git_index_get_bypath(ctx->idx, path, 0) && git_index_remove_bypath(ctx->idx, path) < 0)
		return -1;
	return 1;
}

/* The user's index entry for workspace path `rel`, if the user tracks it. */
static const git_index_entry *user_entry(git_index *uidx, const char *prefix, const char *rel,
					 struct buf *scratch)
{
	const git_index_entry *e;
	int stage;

	if (!uidx)
		return NULL;
	buf_reset(scratch);
	buf_addstr(scratch, prefix);
	buf_addstr(scratch, rel);
	for (stage = 0; stage <= 3; stage++)
		if ((e = git_index_get_bypath(uidx, scratch->buf, stage)))
			return e;
	return NULL;
}

/*
 * Copy the user's entries the shadow does not have yet, with their stat
 * data: then add_all reads only the files that changed since git last
 * looked, and the first checkpoint of a large repository costs about what
 * `git status` does. Stat data git itself would not trust is dropped (the
 * file is read again): racy entries (not older than the index file, git's
 * rule), assume-unchanged, skip-worktree and intent-to-add entries.
 */
static int seed_from_user_index(git_index *idx, git_index *uidx, const char *prefix)
{
	const char *ipath = git_index_path(uidx);
	size_t i, n = git_index_entrycount(uidx), plen = strlen(prefix);
	struct stat ist;
	int have_stamp = ipath && !stat(ipath, &ist);

	for (i = 0; i < n; i++) {
		const git_index_entry *e = git_index_get_byindex(uidx, i);
		git_index_entry ne;
		int trust, gerr;

		if (GIT_INDEX_ENTRY_STAGE(e) != 0 || e->mode == GIT_FILEMODE_COMMIT ||
		    strncmp(e->path, prefix, plen) || git_index_get_bypath(idx, e->path + plen, 0))
			continue;
		memset(&ne, 0, sizeof(ne));
		ne.path = e->path + plen;
		ne.mode = e->mode;
		git_oid_cpy(&ne.id, &e->id);
		trust = have_stamp && !(e->flags & GIT_INDEX_ENTRY_VALID) &&
			!(e->flags_extended & (GIT_INDEX_ENTRY_SKIP_WORKTREE |
					       GIT_INDEX_ENTRY_INTENT_TO_ADD)) &&
			((int64_t)e->mtime.seconds < (int64_t)ist.st_mtim.tv_sec ||
			 ((int64_t)e->mtime.seconds == (int64_t)ist.st_mtim.tv_sec &&
			  (long)e->mtime.nanoseconds < ist.st_mtim.tv_nsec));
		if (trust) {
			ne.ctime = e->ctime;
			ne.mtime = e->mtime;
			ne.dev = e->dev;
			ne.ino = e->ino;
			ne.uid = e->uid;
			ne.gid = e->gid;
			ne.file_size = e->file_size;
		}
		gerr = git_index_add(idx, &ne);
		if (gerr < 0)
			return vcs_git_error(gerr, "cannot record %s", ne.path);
	}
	return 0;
}

static void buf_swap_into(struct buf *dst, struct buf *src)
{
	buf_reset(dst);
	buf_addbuf(dst, src);
	buf_reset(src);
}

/* Append `path`'s bytes (or "-" when it cannot be read) to `fp`. */
static void fingerprint_file(struct buf *fp, const char *path)
{
	struct buf c = BUF_INIT;

	buf_addf(fp, "%s\n", path);
	if (fsutil_read_file(&c, path, 16 << 20) < 0)
		buf_addstr(fp, "-\n");
	else
		buf_addf(fp, "%zu\n%s\n", c.len, c.buf);
	err_clear();
	buf_release(&c);
}

/*
 * Everything that decides whether a recorded path is ignored: the
 * .gitignore of every folder holding recorded files (their bytes, so an
 * edit within the same clock tick counts), info/exclude, the excludes file
 * and which files the user tracks (the index checksum).
 */
static void ignore_fingerprint(struct buf *fp, struct checkpoints *cps, git_index *idx,
			       git_index *uidx)
{
	struct strvec dirs = STRVEC_INIT;
	struct buf p = BUF_INIT;
	size_t i;

	buf_addf(fp, "forgex ignore fingerprint 1\nprefix %s\n",
		 cps->user_prefix ? cps->user_prefix : "(none)");
	if (uidx) {
		const git_oid *sum = git_index_checksum(uidx);

		buf_addf(fp, "user index %s\n", sum ? git_oid_tostr_s(sum) : "-");
	}
	strvec_push(&dirs, "");
	index_dirs(&dirs, idx);
	for (i = 0; i < dirs.nr; i++) {
		buf_reset(&p);
		buf_addf(&p, "%s/%s.gitignore", cps->workspace, dirs.v[i]);
		fingerprint_file(fp, p.buf);
	}
	buf_reset(&p);
	path_join(&p, cps->shadow, "info/exclude");
	fingerprint_file(fp, p.buf);
	if (cps->excludes_file)
		fingerprint_file(fp, cps->excludes_file);
	strvec_clear(&dirs);
	buf_release(&p);
}


/*
 * Bring the shadow index up to the working tree:
 *  1. entries the user's repository tracks (with their stat data), so
 *     files tracked although ignored are recorded too;
 *  2. add_all: new files not ignored, changed and deleted ones (stat data
 *     decides which files are read again);
 *  3. drop entries that are now ignored and not tracked by the user, and
 *     any gitlink. A path's "ignored" can only change when an ignore file
 *     or the user's index does, so this step runs only when their
 *     fingerprint differs from the one saved with the last capture
 *     (`*stamp` receives the new one to save, or stays empty).
 */
static int update_index(struct buf *stamp, struct checkpoints *cps, git_index *idx)
{
	struct add_ctx ctx = { cps, idx };
	git_index *uidx = NULL;
	struct strvec drop = STRVEC_INIT;
	struct buf scratch = BUF_INIT, fp = BUF_INIT, old = BUF_INIT;
	const char *prefix = cps->user_prefix ? cps->user_prefix : "";
	size_t i, n;
	int gerr, ret = 0;

	if (git_index_read(idx, 0) < 0) {
		/* a damaged cache: start again from nothing */
		git_error_clear();
		if ((gerr = git_index_clear(idx)) < 0)
			return vcs_git_error(gerr, "cannot reset the checkpoint index");
	}
	if (cps->user) {
		gerr = git_repository_index(&uidx, cps->user);
		if (!gerr)
			gerr = git_index_read(uidx, 0);
		if (gerr < 0) {
			ret = vcs_git_error(gerr, "cannot read the git index of %s", cps->workspace);
			goto out;
		}
		if ((ret = seed_from_user_index(idx, uidx, prefix)) < 0)
			goto out;
	}
	gerr = git_index_add_all(idx, NULL, GIT_INDEX_ADD_DEFAULT, skip_dirs_cb, &ctx);
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot record the working tree of %s", cps->workspace);
		goto out;
	}
	ignore_fingerprint(&fp, cps, idx, uidx);
	buf_addf(&scratch, "%s/" IGNORE_STAMP, cps->shadow);
	if (!fsutil_read_file(&old, scratch.buf, 0) && old.len == fp.len &&
	    !memcmp(old.buf, fp.buf, fp.len))
		goto out;
	err_clear();
	buf_swap_into(stamp, &fp);
	n = git_index_entrycount(idx);
	for (i = 0; i < n; i++) {
		const git_index_entry *e = git_index_get_byindex(idx, i);
		int ignored = 0;

		if (!e)
			continue;
		if (e->mode != GIT_FILEMODE_COMMIT) {
			if (user_entry(uidx, prefix, e->path, &scratch))
				continue;
			gerr = git_ignore_path_is_ignored(&ignored, cps->repo, e->path);
			if (gerr < 0) {
				ret = vcs_git_error(gerr, "cannot check whether %s is ignored",
						    e->path);
				goto out;
			}
			if (!ignored)
				continue;
		}
		strvec_push(&drop, e->path);
	}
	for (i = 0; i < drop.nr; i++) {
		gerr = git_index_remove_bypath(idx, drop.v[i]);
		if (gerr < 0) {
			ret = vcs_git_error(gerr, "cannot update the checkpoint index");
			goto out;
		}
	}
out:
	git_index_free(uidx);
	strvec_clear(&drop);
	buf_release(&scratch);
	buf_release(&fp);
	buf_release(&old);
	return ret;
}

/*
 * Bring the index up to the tree, write its tree object and save the
 * index. The caller brackets this with batch_begin() / batch_end(), then
 * saves `stamp` with save_stamp(). With `perms`, also read every file's
 * permission bits into it (a full map).
 */
static int capture_tree(git_oid *out, size_t *files, struct perm_map *perms, struct buf *stamp,
			struct checkpoints *cps, git_index *idx)
{
	int gerr, ret;

	if ((ret = update_index(stamp, cps, idx)) < 0)
		return ret;
	if ((gerr = git_index_write_tree(out, idx)) < 0)
		return vcs_git_error(gerr, "cannot write the checkpoint tree");
	if ((gerr = git_index_write(idx)) < 0)
		return vcs_git_error(gerr, "cannot save the checkpoint index");
	if (perms) {
		int rootfd = open(cps->workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (rootfd < 0)
			return err_set_errno(FX_EOS, "cannot open %s", cps->workspace);
		ret = perm_map_read(perms, rootfd, idx);
		close(rootfd);
		if (ret < 0)
			return ret;
	}
	if (files)
		*files = git_index_entrycount(idx);
	return 0;
}

/*
 * The ignore fingerprint goes to disk only once the index it describes is
 * durable (after batch_end()): a stamp must never claim a prune the index
 * lacks.
 */
static int save_stamp(struct checkpoints *cps, const struct buf *stamp)
{
	struct buf p = BUF_INIT;
	int ret;

	if (!stamp->len)
		return 0;
	path_join(&p, cps->shadow, IGNORE_STAMP);
	ret = fsutil_write_atomic(p.buf, stamp->buf, stamp->len, 0644);
	buf_release(&p);
	return ret;
}

/* The shadow's index; a damaged one (a cache) is dropped and rebuilt. */
static int open_index(git_index **out, struct checkpoints *cps)
{
	int gerr = git_repository_index(out, cps->repo);

	if (gerr < 0) {
		struct buf p = BUF_INIT;

		path_join(&p, cps->shadow, "index");
		unlink(p.buf);
		buf_release(&p);
		git_error_clear();
		gerr = git_repository_index(out, cps->repo);
	}
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot open the checkpoint index");
	return 0;
}

int checkpoint__capture_tree(git_oid *out, size_t *files, struct checkpoints *cps)
{
	struct buf stamp = BUF_INIT;
	git_index *idx = NULL;
	int ret;

	if ((ret = open_index(&idx, cps)) < 0)
		return ret;
	if ((ret = batch_begin(cps)) < 0)
		goto out;
	ret = capture_tree(out, files, NULL, &stamp, cps, idx);
	if (batch_end(cps) < 0 && !ret)
		ret = err_last_code();
	if (!ret)
		ret = save_stamp(cps, &stamp);
out:
	buf_release(&stamp);
	git_index_free(idx);
	return ret;
}

/* ----------------------------------------------------------------- chain */

/* The newest checkpoint commit id; FX_ENOTFOUND (no message) when none. */
static int chain_head(git_oid *out, struct checkpoints *cps)
{
	int gerr = git_reference_name_to_id(out, cps->repo, CHECKPOINT_REF);

	if (gerr == GIT_ENOTFOUND) {
		git_error_clear();
		return FX_ENOTFOUND;
	}
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot read %s", CHECKPOINT_REF);
	return 0;
}

/* Every checkpoint commit id, newest first. */
static int chain_ids(git_oid **out, size_t *nr, struct checkpoints *cps)
{
	git_oid cur, *ids = NULL;
	size_t n = 0, alloc = 0;
	int ret;

	*out = NULL;
	*nr = 0;
	ret = chain_head(&cur, cps);
	if (ret == FX_ENOTFOUND)
		return 0;
	if (ret < 0)
		return ret;
	for (;;) {
		git_commit *c = NULL;
		int gerr = git_commit_lookup(&c, cps->repo, &cur);

		if (gerr < 0) {
			free(ids);
			return vcs_git_error(gerr, "checkpoint history is damaged at %s",
					     git_oid_tostr_s(&cur));
		}
		ALLOC_GROW(ids, n + 1, alloc);
		git_oid_cpy(&ids[n++], &cur);
		if (!git_commit_parentcount(c)) {
			git_commit_free(c);
			break;
		}
		git_oid_cpy(&cur, git_commit_parent_id(c, 0));
		git_commit_free(c);
	}
	*out = ids;
	*nr = n;
	return 0;
}

static int oid_cmp_qsort(const void *a, const void *b)
{
	return git_oid_cmp(a, b);
}

/* The shortest prefix length (>= SHORT_ID_MIN) that tells all `ids` apart. */
static size_t short_len(const git_oid *ids, size_t nr)
{
	git_oid *sorted;
	size_t i, len = SHORT_ID_MIN;

	if (nr < 2)
		return len;
	sorted = xmalloc(nr * sizeof(*sorted));
	memcpy(sorted, ids, nr * sizeof(*sorted));
	qsort(sorted, nr, sizeof(*sorted), oid_cmp_qsort);
	for (i = 1; i < nr; i++) {
		char a[41], b[41];
		size_t k = 0;

		git_oid_tostr(a, sizeof(a), &sorted[i - 1]);
		git_oid_tostr(b, sizeof(b), &sorted[i]);
		while (k < 40 && a[k] == b[k])
			k++;
		if (k + 1 > len)
			len = k + 1;
	}
	free(sorted);
	return len;
}

int checkpoint_list(struct checkpoint_list *out, struct checkpoints *cps)
{
	struct checkpoint_list list = CHECKPOINT_LIST_INIT;
	git_oid *ids = NULL;
	size_t nr, i, slen;
	int ret;

	if ((ret = chain_ids(&ids, &nr, cps)) < 0)
		return ret;
	slen = short_len(ids, nr);
	for (i = 0; i < nr; i++) {
		git_commit *c = NULL;
		int gerr = git_commit_lookup(&c, cps->repo, &ids[i]);

		if (gerr < 0) {
			ret = vcs_git_error(gerr, "cannot read checkpoint %s",
					    git_oid_tostr_s(&ids[i]));
			checkpoint_list_release(&list);
			goto out;
		}
		ALLOC_GROW(list.items, list.nr + 1, list.alloc);
		fill_info(&list.items[list.nr++], c, slen);
		git_commit_free(c);
	}
	*out = list;
out:
	free(ids);
	return ret;
}

int checkpoint_resolve(char **out, struct checkpoints *cps, const char *id)
{
	git_oid *ids = NULL;
	size_t nr, i, len = id ? strlen(id) : 0, found = (size_t)-1;
	int ret;

	if (len < 4 || len > 40 || strspn(id, "0123456789abcdefABCDEF") != len)
		return err_set(FX_EINVAL, "'%s' is not a checkpoint id (4 to 40 hex digits)",
			       id ? id : "");
	if ((ret = chain_ids(&ids, &nr, cps)) < 0)
		return ret;
	for (i = 0; i < nr; i++) {
		char hex[41];

		git_oid_tostr(hex, sizeof(hex), &ids[i]);
		if (strncasecmp(hex, id, len))
			continue;
		if (found != (size_t)-1) {
			ret = err_set(FX_EINVAL, "checkpoint id '%s' is ambiguous; give more digits",
				      id);
			goto out;
		}
		found = i;
	}
	if (found == (size_t)-1) {
		ret = err_set(FX_ENOTFOUND, "no checkpoint '%s' in %s (see 'forgex checkpoint list')",
			      id, cps->workspace);
		goto out;
	}
	*out = xstrdup(git_oid_tostr_s(&ids[found]));
out:
	free(ids);
	return ret;
}

int checkpoint__lookup(git_commit **out, struct checkpoints *cps, const char *id)
{
	git_oid oid;
	int ret, gerr;

	if (id) {
		char *full = NULL;

		if ((ret = checkpoint_resolve(&full, cps, id)) < 0)
			return ret;
		git_oid_fromstr(&oid, full);
		free(full);
	} else {
		ret = chain_head(&oid, cps);
		if (ret == FX_ENOTFOUND)
			return err_set(FX_ENOTFOUND, "no checkpoints yet in %s", cps->workspace);
		if (ret < 0)
			return ret;
	}
	gerr = git_commit_lookup(out, cps->repo, &oid);
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot read checkpoint %s", git_oid_tostr_s(&oid));
	return 0;
}

/*
 * Write the commit of a checkpoint of `tree_id` (inside a batch: it is made
 * durable by batch_end()); advance_chain() then makes it the newest.
 */
static int write_commit(git_oid *out, struct checkpoints *cps, const git_oid *tree_id,
			const char *message, const char *perms)
{
	git_buf content = GIT_BUF_INIT;
	git_signature *sig = NULL;
	git_tree *tree = NULL;
	git_commit *parent = NULL;
	git_oid parent_id;
	struct buf msg = BUF_INIT;
	int ret, gerr, has_parent;

	ret = chain_head(&parent_id, cps);
	if (ret < 0 && ret != FX_ENOTFOUND)
		return ret;
	has_parent = ret == 0;
	ret = 0;
	gerr = git_signature_now(&sig, "forgex", "forgex@localhost");
	if (!gerr)
		gerr = git_tree_lookup(&tree, cps->repo, tree_id);
	if (!gerr && has_parent)
		gerr = git_commit_lookup(&parent, cps->repo, &parent_id);
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot prepare the checkpoint");
		goto out;
	}
	buf_addstr(&msg, message && *message ? message : "checkpoint");
	buf_rtrim(&msg);
	buf_addch(&msg, '\n');
	gerr = git_commit_create_buffer(&content, cps->repo, sig, sig, NULL, msg.buf, tree,
					has_parent ? 1 : 0, (const git_commit **)&parent);
	if (!gerr)
		gerr = git_commit_create_with_signature(out, cps->repo, content.ptr, perms,
							PERMS_HEADER);
	if (gerr < 0)
		ret = vcs_git_error(gerr, "cannot write the checkpoint");
out:
	git_buf_dispose(&content);
	buf_release(&msg);
	git_commit_free(parent);
	git_tree_free(tree);
	git_signature_free(sig);
	return ret;
}

/*
 * Make commit `oid` (written by write_commit(), now durable) the newest
 * checkpoint: the ref moves only if it still names the commit's parent.
 * Fills `out` (may be NULL).
 */
static int advance_chain(struct checkpoint_info *out, struct checkpoints *cps, const git_oid *oid,
			 size_t files)
{
	git_commit *c = NULL;
	git_reference *ref = NULL;
	git_oid *ids = NULL;
	size_t nr;
	int ret = 0, gerr;

	gerr = git_commit_lookup(&c, cps->repo, oid);
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot read the new checkpoint");
	gerr = git_reference_create_matching(&ref, cps->repo, CHECKPOINT_REF, oid, 1,
					     git_commit_parentcount(c) ?
					     git_commit_parent_id(c, 0) : NULL, "checkpoint");
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot record the checkpoint in %s", CHECKPOINT_REF);
		goto out;
	}
	if (out) {
		if ((ret = chain_ids(&ids, &nr, cps)) < 0)
			goto out;
		fill_info(out, c, short_len(ids, nr));
		out->files = files;
	}
out:
	free(ids);
	git_reference_free(ref);
	git_commit_free(c);
	return ret;
}

int checkpoint_create(struct checkpoint_info *out, struct checkpoints *cps, const char *message)
{
	struct perm_map perms = PERM_MAP_INIT;
	struct buf stamp = BUF_INIT;
	git_index *idx = NULL;
	git_oid tree, commit;
	size_t files = 0;
	char *header = NULL;
	int ret;

	if ((ret = checkpoint__lock(cps)) < 0)
		return ret;
	if ((ret = open_index(&idx, cps)) < 0 || (ret = batch_begin(cps)) < 0)
		goto out;
	ret = capture_tree(&tree, &files, &perms, &stamp, cps, idx);
	if (!ret) {
		header = perm_map_format(&perms, idx);
		ret = write_commit(&commit, cps, &tree, message, header);
	}
	/* everything the ref will point at reaches the disk first */
	if (batch_end(cps) < 0 && !ret)
		ret = err_last_code();
	if (!ret)
		ret = save_stamp(cps, &stamp);
	if (!ret)
		ret = advance_chain(out, cps, &commit, files);
out:
	free(header);
	buf_release(&stamp);
	perm_map_release(&perms);
	git_index_free(idx);
	checkpoint__unlock(cps);
	return ret;
}

/* --------------------------------------------------------------- restore */

enum change_kind {
	CHANGE_DELETE,		/* in the tree now, not in the checkpoint */
	CHANGE_WRITE,		/* missing or different: write the checkpoint's version */
	CHANGE_CHMOD,		/* same bytes, only the executable bit differs */
};

struct change {
	enum change_kind kind;
	char *path;
	git_oid oid;		/* the checkpoint's blob (WRITE, CHMOD) */
	uint32_t mode;		/* the checkpoint's mode (WRITE, CHMOD) */
	int perms;		/* the checkpoint's permission bits of a file; -1: not recorded */
};

struct plan {
	struct change *items;
	size_t nr, alloc;
};

/* The checkpoint's files, sorted by path as an index is (bytewise). */
struct tree_entry {
	char *path;
	git_oid oid;
	uint32_t mode;
};

struct tree_list {
	struct tree_entry *v;
	size_t nr, alloc;
};

static void tree_list_release(struct tree_list *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		free(l->v[i].path);
	FREE_AND_NULL(l->v);
	l->nr = l->alloc = 0;
}

static int tree_walk_cb(const char *root, const git_tree_entry *e, void *payload)
{
	struct tree_list *l = payload;
	struct tree_entry *t;

	if (git_tree_entry_type(e) == GIT_OBJECT_TREE)
		return 0;
	ALLOC_GROW(l->v, l->nr + 1, l->alloc);
	t = &l->v[l->nr++];
	t->path = xstrfmt("%s%s", root, git_tree_entry_name(e));
	git_oid_cpy(&t->oid, git_tree_entry_id(e));
	t->mode = (uint32_t)git_tree_entry_filemode(e);
	return 0;
}

static int tree_entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct tree_entry *)a)->path, ((const struct tree_entry *)b)->path);
}

/*
 * Not git_index_read_tree(): an index without a repository applies
 * libgit2's default path rules (core.protectNTFS), which reject names
 * like "git~1" that a Linux tree may hold and the shadow recorded.
 */
static int tree_list_load(struct tree_list *out, git_tree *tree)
{
	int gerr = git_tree_walk(tree, GIT_TREEWALK_PRE, tree_walk_cb, out);

	if (gerr < 0)
		return vcs_git_error(gerr, "cannot read the checkpoint's tree");
	if (out->nr)
		qsort(out->v, out->nr, sizeof(*out->v), tree_entry_cmp);
	return 0;
}

/* Index of the first entry whose path is >= `path`. */
static size_t tree_list_lower(const struct tree_list *l, const char *path)
{
	size_t lo = 0, hi = l->nr;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(l->v[mid].path, path) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct tree_entry *tree_list_find(const struct tree_list *l, const char *path)
{
	size_t i = tree_list_lower(l, path);

	return i < l->nr && !strcmp(l->v[i].path, path) ? &l->v[i] : NULL;
}

static void plan_release(struct plan *p)
{
	size_t i;

	for (i = 0; i < p->nr; i++)
		free(p->items[i].path);
	FREE_AND_NULL(p->items);
	p->nr = p->alloc = 0;
}

static void plan_add(struct plan *p, enum change_kind kind, const char *path,
		     const struct tree_entry *want, int perms)
{
	struct change *c;

	ALLOC_GROW(p->items, p->nr + 1, p->alloc);
	c = &p->items[p->nr++];
	memset(c, 0, sizeof(*c));
	c->kind = kind;
	c->path = xstrdup(path);
	c->perms = perms;
	if (want) {
		git_oid_cpy(&c->oid, &want->oid);
		c->mode = want->mode;
	}
}

/*
 * A path from a checkpoint must stay inside the workspace and out of the
 * user's repository and the shadow: no empty, ".", ".." or ".git"
 * component, not under .forgex. Trees we wrote never hold such paths; a
 * damaged or planted shadow might.
 */
static int check_safe_path(const char *path)
{
	const char *p = path;

	if (!*path || *path == '/')
		goto bad;
	if (!strcmp(path, ".forgex") || !strncmp(path, ".forgex/", 8))
		goto bad;
	for (;;) {
		size_t n = strcspn(p, "/");

		if (!n || (n == 1 && p[0] == '.') || (n == 2 && !strncmp(p, "..", 2)) ||
		    (n == 4 && !strncasecmp(p, ".git", 4)))
			goto bad;
		if (!p[n])
			return 0;
		p += n + 1;
	}
bad:
	return err_set(FX_EINVAL, "the checkpoint holds an unsafe path '%s'; refusing to restore",
		       path);
}

/*
 * Compare the current tree (`now`, with the permission bits of its files
 * in `now_perms`) with the checkpoint's (`want`, `want_perms`).
 */
static int make_plan(struct plan *plan, git_index *now, const struct perm_map *now_perms,
		     const struct tree_list *want, const struct perm_map *want_perms)
{
	size_t i = 0, j = 0, n = git_index_entrycount(now), m = want->nr;
	int ret;

	while (i < n || j < m) {
		const git_index_entry *a = i < n ? git_index_get_byindex(now, i) : NULL;
		const struct tree_entry *b = j < m ? &want->v[j] : NULL;
		int cmp, perms = -1;

		/* nested repositories are never touched */
		if (a && a->mode == GIT_FILEMODE_COMMIT) {
			i++;
			continue;
		}
		if (b && b->mode == GIT_FILEMODE_COMMIT) {
			j++;
			continue;
		}
		cmp = !a ? 1 : !b ? -1 : strcmp(a->path, b->path);
		if (cmp < 0) {
			plan_add(plan, CHANGE_DELETE, a->path, NULL, -1);
			i++;
			continue;
		}
		if ((ret = check_safe_path(b->path)) < 0)
			return ret;
		if (is_file_mode(b->mode) && want_perms->known)
			perms = (int)perm_map_get(want_perms, b->path, b->mode);
		if (cmp > 0)
			plan_add(plan, CHANGE_WRITE, b->path, b, perms);
		else if (!git_oid_equal(&a->id, &b->oid) || (a->mode == GIT_FILEMODE_LINK) !=
			 (b->mode == GIT_FILEMODE_LINK))
			plan_add(plan, CHANGE_WRITE, b->path, b, perms);
		else if (a->mode != b->mode ||
			 (perms >= 0 && perm_map_get(now_perms, a->path, a->mode) != (unsigned)perms))
			plan_add(plan, CHANGE_CHMOD, b->path, b, perms);
		if (cmp == 0)
			i++;
		j++;
	}
	return 0;
}

/* Whether `path` is recorded now but not in the checkpoint: the restore deletes it. */
static int will_delete(git_index *now, const struct tree_list *want, const char *path)
{
	return git_index_get_bypath(now, path, 0) && !tree_list_find(want, path);
}

/* Whether the checkpoint has anything under folder `dir` ("a/b", no slash). */
static int want_has_dir(const struct tree_list *want, const char *dir)
{
	char *prefix = xstrfmt("%s/", dir);
	size_t i = tree_list_lower(want, prefix);
	int found = i < want->nr && !strncmp(want->v[i].path, prefix, strlen(prefix));

	free(prefix);
	return found;
}

/*
 * Check that everything inside folder `dirfd` (at `rel`) is recorded now
 * and so deleted by the restore: anything else is an ignored file the
 * restore would destroy.
 */
static int check_dir_deletable(int dirfd, const char *rel, git_index *now, const struct tree_list *want,
			       int depth)
{
	DIR *d;
	struct dirent *de;
	int ret = 0, fd;

	if (depth > 256)
		return err_set(FX_ELIMIT, "folders nested too deep under '%s'", rel);
	fd = dup(dirfd);
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return err_set_errno(FX_EOS, "cannot read folder '%s'", rel);
	}
	while (!ret && (de = readdir(d))) {
		struct stat st;
		char *sub;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		sub = xstrfmt("%s/%s", rel, de->d_name);
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			ret = err_set_errno(FX_EOS, "cannot inspect '%s'", sub);
		} else if (S_ISDIR(st.st_mode)) {
			int sfd = openat(dirfd, de->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (sfd < 0) {
				ret = err_set_errno(FX_EOS, "cannot open folder '%s'", sub);
			} else {
				ret = check_dir_deletable(sfd, sub, now, want, depth + 1);
				close(sfd);
			}
		} else if (!will_delete(now, want, sub)) {
			ret = err_set(FX_EDENIED,
				      "restoring would delete '%s', which no checkpoint holds "
				      "(it is ignored); move it away and try again", sub);
		}
		free(sub);
	}
	closedir(d);
	return ret;
}

/*
 * Before changing anything: every file the restore writes must be
 * reachable without destroying an ignored file. A link on the way is fine
 * (it is replaced, never followed); a file or folder recorded now is
 * deleted first; anything else is refused. An ignored file or link at the
 * very path is overwritten: it goes to `overwrite`, so the backup keeps it.
 */
static int check_write(struct strvec *overwrite, int rootfd, const struct change *c,
		       git_index *now, const struct tree_list *want)
{
	struct buf so_far = BUF_INIT;
	const char *p = c->path;
	int fd = dup(rootfd), ret = 0;

	if (fd < 0)
		return err_set_errno(FX_EOS, "dup");
	for (;;) {
		size_t n = strcspn(p, "/");
		int last = !p[n];
		char *comp = xstrndup(p, n);
		struct stat st;

		if (so_far.len)
			buf_addch(&so_far, '/');
		buf_add(&so_far, p, n);
		if (fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT && errno != ENOTDIR)
				ret = err_set_errno(FX_EOS, "cannot inspect '%s'", so_far.buf);
			free(comp);
			break;
		}
		if (last && (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) &&
		    !git_index_get_bypath(now, so_far.buf, 0))
			strvec_push(overwrite, so_far.buf);
		if (S_ISLNK(st.st_mode)) {
			free(comp);
			break;
		}
		if (last) {
			if (S_ISDIR(st.st_mode)) {
				int dfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
						 O_CLOEXEC);

				if (dfd < 0) {
					ret = err_set_errno(FX_EOS, "cannot open folder '%s'",
							    so_far.buf);
				} else {
					ret = check_dir_deletable(dfd, so_far.buf, now, want, 0);
					close(dfd);
				}
			}
			free(comp);
			break;
		}
		if (!S_ISDIR(st.st_mode)) {
			if (!will_delete(now, want, so_far.buf))
				ret = err_set(FX_EDENIED,
					      "restoring '%s' would delete '%s', which no checkpoint "
					      "holds (it is ignored); move it away and try again",
					      c->path, so_far.buf);
			free(comp);
			break;
		}
		{
			int next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			free(comp);
			if (next < 0) {
				ret = err_set_errno(FX_EOS, "cannot open folder '%s'", so_far.buf);
				break;
			}
			close(fd);
			fd = next;
		}
		p += n + 1;
	}
	close(fd);
	buf_release(&so_far);
	return ret;
}

/*
 * Open the folder holding `path` below `rootfd` without following links.
 * With `create`, missing folders are made and a link in the way is
 * replaced by a folder; without, a missing folder or a link gives
 * FX_ENOTFOUND (nothing to do there). `*base` points into `path`.
 */
static int open_parent(int *out, int rootfd, const char *path, int create, const char **base)
{
	const char *p = path, *slash;
	int fd = dup(rootfd);

	if (fd < 0)
		return err_set_errno(FX_EOS, "dup");
	while ((slash = strchr(p, '/'))) {
		char *comp = xstrndup(p, (size_t)(slash - p));
		int next, tries;

		for (tries = 0; tries < 3; tries++) {
			struct stat st;

			next = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (next >= 0 || !create)
				break;
			if (fstatat(fd, comp, &st, AT_SYMLINK_NOFOLLOW) < 0) {
				if (errno != ENOENT)
					break;
			} else if (S_ISLNK(st.st_mode)) {
				/* a link planted where a folder belongs: replace, never follow */
				if (unlinkat(fd, comp, 0) < 0)
					break;
			} else if (!S_ISDIR(st.st_mode)) {
				errno = ENOTDIR;
				break;
			}
			if (mkdirat(fd, comp, 0777) < 0 && errno != EEXIST)
				break;
		}
		if (next < 0) {
			int e = errno, ret;

			if (!create && (e == ENOENT || e == ELOOP || e == ENOTDIR)) {
				ret = FX_ENOTFOUND;
			} else {
				errno = e;
				ret = err_set_errno(FX_EOS, "cannot open folder '%.*s'",
						    (int)(slash - path), path);
			}
			free(comp);
			close(fd);
			return ret;
		}
		free(comp);
		close(fd);
		fd = next;
		p = slash + 1;
	}
	*base = p;
	*out = fd;
	return 0;
}

/* Remove folder `name` in `dirfd` if it holds nothing but empty folders. */
static int remove_empty_tree(int parent, const char *name, int depth)
{
	DIR *d;
	struct dirent *de;
	int fd, ret = 0;

	if (depth > 256)
		return -1;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (!(d = fdopendir(fd))) {
		close(fd);
		return -1;
	}
	while (!ret && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		ret = remove_empty_tree(dirfd(d), de->d_name, depth + 1);
	}
	closedir(d);
	if (ret)
		return ret;
	return unlinkat(parent, name, AT_REMOVEDIR);
}

static mode_t current_umask(void)
{
	mode_t m = umask(0);

	umask(m);
	return m;
}

/* The permission bits for a file the restore writes or chmods. */
static mode_t file_perms(const struct stat *old, int exec, mode_t um)
{
	mode_t m;

	if (!old || !S_ISREG(old->st_mode))
		return (exec ? 0777 : 0666) & ~um;
	/* keep what the user chose (0600 stays private); only the x bits follow git */
	m = old->st_mode & 0777;
	if (exec)
		m |= (m & 0444) >> 2;
	else
		m &= ~(mode_t)0111;
	return m;
}

static unsigned tmp_counter;

/* Create a fresh temporary name in `dirfd` with `make` (O_EXCL semantics). */
static int make_tmp(char *tmp, size_t size, int dirfd, const char *target, const git_blob *blob,
		    mode_t perms, int is_link, const struct stat *old)
{
	const char *data = git_blob_rawcontent(blob);
	size_t len = (size_t)git_blob_rawsize(blob);
	int tries, fd = -1;

	for (tries = 0; tries < 100; tries++) {
		snprintf(tmp, size, ".forgex-restore-%ld-%u.tmp", (long)getpid(), tmp_counter++);
		if (is_link) {
			char *t = xstrndup(data, len);
			int r = symlinkat(t, dirfd, tmp);

			free(t);
			if (!r)
				return 0;
		} else {
			fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				    0600);
			if (fd >= 0)
				break;
		}
		if (errno != EEXIST)
			return err_set_errno(FX_EOS, "cannot create a temporary file for '%s'",
					     target);
	}
	if (fd < 0)
		return err_set(FX_EOS, "cannot create a temporary file for '%s'", target);
	/* a later mtime second than the file replaced: .pyc and make see the change */
	if (fsutil_write_all(fd, data, len) < 0 || fchmod(fd, perms) < 0 ||
	    (old && S_ISREG(old->st_mode) && fsutil_later_mtime(fd, old) < 0)) {
		int ret = err_set_errno(FX_EOS, "cannot write '%s'", target);

		close(fd);
		unlinkat(dirfd, tmp, 0);
		return ret;
	}
	if (close(fd) < 0) {
		unlinkat(dirfd, tmp, 0);
		return err_set_errno(FX_EOS, "cannot write '%s'", target);
	}
	return 0;
}

/* Write the checkpoint's version of `c->path`, replacing whatever is there. */
static int write_entry(git_repository *repo, int rootfd, const struct change *c, mode_t um)
{
	git_blob *blob = NULL;
	const char *base;
	struct stat st, *old = NULL;
	char tmp[96];
	int fd = -1, ret, gerr, is_link = c->mode == GIT_FILEMODE_LINK;

	gerr = git_blob_lookup(&blob, repo, &c->oid);
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot read the checkpoint's '%s'", c->path);
	if ((ret = open_parent(&fd, rootfd, c->path, 1, &base)) < 0)
		goto out;
	if (!fstatat(fd, base, &st, AT_SYMLINK_NOFOLLOW)) {
		old = &st;
		if (S_ISDIR(st.st_mode) && remove_empty_tree(fd, base, 0) < 0) {
			ret = err_set_errno(FX_EOS, "cannot replace folder '%s' with a file",
					    c->path);
			goto out;
		}
	}
	ret = make_tmp(tmp, sizeof(tmp), fd, c->path, blob,
		       c->perms >= 0 ? (mode_t)c->perms :
		       file_perms(old, c->mode == GIT_FILEMODE_BLOB_EXECUTABLE, um), is_link, old);
	if (ret < 0)
		goto out;
	if (renameat(fd, tmp, fd, base) < 0) {
		ret = err_set_errno(FX_EOS, "cannot put '%s' in place", c->path);
		unlinkat(fd, tmp, 0);
	}
out:
	if (fd >= 0)
		close(fd);
	git_blob_free(blob);
	return ret;
}

/* Flip the executable bit of a file whose bytes are already right. */
static int chmod_entry(git_repository *repo, int rootfd, const struct change *c, mode_t um)
{
	const char *base;
	struct stat st;
	int dfd = -1, fd = -1, ret;

	if ((ret = open_parent(&dfd, rootfd, c->path, 1, &base)) < 0)
		return ret;
	fd = openat(dfd, base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		/* not the file we recorded a moment ago: write it whole */
		if (fd >= 0)
			close(fd);
		close(dfd);
		return write_entry(repo, rootfd, c, um);
	}
	if (fchmod(fd, c->perms >= 0 ? (mode_t)c->perms :
		   file_perms(&st, c->mode == GIT_FILEMODE_BLOB_EXECUTABLE, um)) < 0)
		ret = err_set_errno(FX_EOS, "cannot change the mode of '%s'", c->path);
	close(fd);
	close(dfd);
	return ret;
}

/* Remove `path`, then the folders above it that this left empty. */
static int delete_entry(int rootfd, const char *path, const struct tree_list *want)
{
	const char *base;
	char *dir, *slash;
	int fd, ret;

	ret = open_parent(&fd, rootfd, path, 0, &base);
	if (ret == FX_ENOTFOUND)
		return 0;	/* gone already, or behind a link we do not follow */
	if (ret < 0)
		return ret;
	if (unlinkat(fd, base, 0) < 0 && errno != ENOENT) {
		ret = err_set_errno(FX_EOS, "cannot remove '%s'", path);
		close(fd);
		return ret;
	}
	close(fd);
	dir = xstrdup(path);
	while ((slash = strrchr(dir, '/'))) {
		*slash = '\0';
		if (want_has_dir(want, dir))
			break;
		if (open_parent(&fd, rootfd, dir, 0, &base) < 0)
			break;
		ret = unlinkat(fd, base, AT_REMOVEDIR);
		close(fd);
		if (ret < 0)
			break;
	}
	err_clear();
	free(dir);
	return 0;
}

static void tree_dirs(struct strvec *out, const struct tree_list *want)
{
	struct strvec all = STRVEC_INIT;
	const char *prev = NULL;
	size_t i;

	for (i = 0; i < want->nr; i++)
		add_parent_dirs(&all, want->v[i].path, &prev);
	finish_dirs(out, &all);
}

/*
 * Give every folder of the checkpoint its recorded bits, deepest first
 * (last, so that a read-only folder is filled before it is closed). With
 * `check`, only compare and fail on the first difference.
 */
static int fix_dir_perms(size_t *changed, int rootfd, const struct tree_list *want,
			 const struct perm_map *want_perms, int check)
{
	struct strvec dirs = STRVEC_INIT;
	size_t i;
	int ret = 0;

	if (!want_perms->known)
		return 0;
	tree_dirs(&dirs, want);
	for (i = dirs.nr; i-- > 0 && !ret;) {
		char *dir = xstrndup(dirs.v[i], strlen(dirs.v[i]) - 1);
		unsigned perms = perm_map_get(want_perms, dirs.v[i], 0);
		const char *base;
		struct stat st;
		int pfd;

		if ((ret = open_parent(&pfd, rootfd, dir, 0, &base)) < 0) {
			ret = err_set(FX_ERROR, "after the restore folder '%s' is missing", dir);
		} else {
			if (fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
				ret = err_set(FX_ERROR, "after the restore '%s' is not a folder", dir);
			else if ((st.st_mode & 0777) == perms)
				;
			else if (check)
				ret = err_set(FX_ERROR, "after the restore folder '%s' has mode %o, not %o",
					      dir, (unsigned)(st.st_mode & 0777), perms);
			else if (fchmodat(pfd, base, perms, 0) < 0)
				ret = err_set_errno(FX_EOS, "cannot change the mode of folder '%s'", dir);
			else if (changed)
				(*changed)++;
			close(pfd);
		}
		free(dir);
	}
	strvec_clear(&dirs);
	return ret;
}

/* Every object the checkpoint needs must be readable before anything changes. */
static int check_objects(struct checkpoints *cps, const struct tree_list *want, const char *id)
{
	git_odb *odb = NULL;
	size_t i;
	int gerr, ret = 0;

	gerr = git_repository_odb(&odb, cps->repo);
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot open the checkpoint objects");
	for (i = 0; i < want->nr && !ret; i++) {
		const struct tree_entry *e = &want->v[i];

		if (e->mode == GIT_FILEMODE_COMMIT || git_odb_exists(odb, &e->oid))
			continue;
		ret = err_set(FX_ENOTFOUND,
			      "checkpoint %.12s is damaged: the content of '%s' (%s) is missing "
			      "(was it pruned from the git repository it borrows from?)",
			      id, e->path, git_oid_tostr_s(&e->oid));
	}
	git_odb_free(odb);
	return ret;
}

/*
 * Read the tree back: files the restore wrote are hashed again, anything
 * else comes from the stat cache, new files not ignored are picked up.
 */
static int verify_restore(struct checkpoints *cps, int rootfd, git_index *idx,
			  const struct plan *plan, git_tree *target, const struct tree_list *want,
			  const struct perm_map *want_perms, const char *id)
{
	struct add_ctx ctx = { cps, idx };
	git_oid got;
	git_tree *got_tree = NULL;
	git_diff *diff = NULL;
	size_t i;
	int gerr, ret = 0;

	for (i = 0; i < plan->nr; i++) {
		const struct change *c = &plan->items[i];

		if (c->kind == CHANGE_DELETE)
			gerr = git_index_remove_bypath(idx, c->path);
		else
			gerr = git_index_add_bypath(idx, c->path);
		if (gerr < 0)
			return vcs_git_error(gerr, "cannot read back '%s' after the restore", c->path);
	}
	gerr = git_index_add_all(idx, NULL, GIT_INDEX_ADD_DEFAULT, skip_dirs_cb, &ctx);
	if (!gerr)
		gerr = git_index_write_tree(&got, idx);
	if (!gerr)
		gerr = git_index_write(idx);
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot read back the tree after the restore");
	if (git_oid_equal(&got, git_tree_id(target))) {
		size_t n = git_index_entrycount(idx);

		if (!want_perms->known)
			return 0;
		for (i = 0; i < n; i++) {
			const git_index_entry *e = git_index_get_byindex(idx, i);
			unsigned bits = perm_map_get(want_perms, e->path, e->mode);
			struct stat st;

			if (!is_file_mode(e->mode))
				continue;
			if (fstatat(rootfd, e->path, &st, AT_SYMLINK_NOFOLLOW) < 0)
				return err_set_errno(FX_ERROR, "after the restore '%s' is gone",
						     e->path);
			if ((st.st_mode & 0777) != bits)
				return err_set(FX_ERROR,
					       "after restoring checkpoint %.12s '%s' has mode %o, "
					       "not %o", id, e->path, (unsigned)(st.st_mode & 0777),
					       bits);
		}
		return fix_dir_perms(NULL, rootfd, want, want_perms, 1);
	}
	ret = err_set(FX_ERROR, "after restoring checkpoint %.12s the tree still differs from it",
		      id);
	if (!git_tree_lookup(&got_tree, cps->repo, &got) &&
	    !git_diff_tree_to_tree(&diff, cps->repo, target, got_tree, NULL) &&
	    git_diff_num_deltas(diff) > 0) {
		const git_diff_delta *d = git_diff_get_delta(diff, 0);

		ret = err_set(FX_ERROR,
			      "after restoring checkpoint %.12s the tree still differs from it "
			      "(first at '%s'; %zu paths differ)",
			      id, d->new_file.path ? d->new_file.path : d->old_file.path,
			      git_diff_num_deltas(diff));
	}
	git_error_clear();
	git_diff_free(diff);
	git_tree_free(got_tree);
	return ret;
}

int checkpoint_restore(struct checkpoint_restore_result *out, struct checkpoints *cps,
		       const char *id)
{
	struct checkpoint_restore_result res;
	struct plan plan = { NULL, 0, 0 };
	struct tree_list want = { NULL, 0, 0 };
	struct perm_map now_perms = PERM_MAP_INIT, want_perms = PERM_MAP_INIT;
	struct strvec overwrite = STRVEC_INIT;
	git_index *idx = NULL;
	git_commit *target = NULL;
	git_tree *tree = NULL;
	git_oid now_tree, backup;
	struct buf stamp = BUF_INIT;
	char full[41], *msg = NULL, *header = NULL;
	size_t i;
	mode_t um = current_umask();
	int ret, gerr, rootfd = -1, applying = 0, in_batch = 0;

	memset(&res, 0, sizeof(res));
	if ((ret = checkpoint__lock(cps)) < 0)
		return ret;
	if ((ret = checkpoint__lookup(&target, cps, id)) < 0)
		goto out;
	git_oid_tostr(full, sizeof(full), git_commit_id(target));
	gerr = git_commit_tree(&tree, target);
	if (gerr < 0) {
		ret = vcs_git_error(gerr, "cannot read checkpoint %.12s", full);
		goto out;
	}
	if ((ret = open_index(&idx, cps)) < 0)
		goto out;
	if ((ret = tree_list_load(&want, tree)) < 0 ||
	    (ret = perm_map_load(&want_perms, target)) < 0 ||
	    (ret = check_objects(cps, &want, full)) < 0)
		goto out;

	/* 1. Record what is there now (committed below, once the plan holds). */
	if ((ret = batch_begin(cps)) < 0)
		goto out;
	in_batch = 1;
	if ((ret = capture_tree(&now_tree, NULL, &now_perms, &stamp, cps, idx)) < 0) {
		err_prefix(ret, "cannot record the tree before restoring (nothing was changed)");
		goto out;
	}

	/* 2. Plan every change and refuse before touching anything. */
	if ((ret = make_plan(&plan, idx, &now_perms, &want, &want_perms)) < 0)
		goto out;
	rootfd = open(cps->workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0) {
		ret = err_set_errno(FX_EOS, "cannot open %s", cps->workspace);
		goto out;
	}
	for (i = 0; i < plan.nr; i++)
		if (plan.items[i].kind == CHANGE_WRITE &&
		    (ret = check_write(&overwrite, rootfd, &plan.items[i], idx, &want)) < 0)
			goto out;
	if (overwrite.nr) {
		/*
		 * Ignored files the checkpoint has a version of (it recorded
		 * them before they were ignored) are overwritten: put them in
		 * the backup first, so that the restore can still be undone.
		 */
		for (i = 0; i < overwrite.nr; i++)
			if ((gerr = git_index_add_bypath(idx, overwrite.v[i])) < 0) {
				ret = vcs_git_error(gerr, "cannot record '%s'", overwrite.v[i]);
				goto out;
			}
		if ((gerr = git_index_write_tree(&now_tree, idx)) < 0) {
			ret = vcs_git_error(gerr, "cannot write the checkpoint tree");
			goto out;
		}
		perm_map_release(&now_perms);
		plan_release(&plan);
		if ((ret = perm_map_read(&now_perms, rootfd, idx)) < 0 ||
		    (ret = make_plan(&plan, idx, &now_perms, &want, &want_perms)) < 0)
			goto out;
	}
	msg = xstrfmt("before restore of %.12s", full);
	header = perm_map_format(&now_perms, idx);
	if ((ret = write_commit(&backup, cps, &now_tree, msg, header)) < 0)
		goto out;
	in_batch = 0;
	if ((ret = batch_end(cps)) < 0 || (ret = save_stamp(cps, &stamp)) < 0 ||
	    (ret = advance_chain(&res.backup, cps, &backup, git_index_entrycount(idx))) < 0)
		goto out;

	/* 3. Deletions first (they make room), then modes, then contents. */
	applying = 1;
	for (i = 0; i < plan.nr; i++) {
		if (plan.items[i].kind != CHANGE_DELETE)
			continue;
		if ((ret = delete_entry(rootfd, plan.items[i].path, &want)) < 0)
			goto out;
		res.removed++;
	}
	for (i = 0; i < plan.nr; i++) {
		const struct change *c = &plan.items[i];

		if (c->kind == CHANGE_CHMOD) {
			if ((ret = chmod_entry(cps->repo, rootfd, c, um)) < 0)
				goto out;
			res.chmodded++;
		} else if (c->kind == CHANGE_WRITE) {
			if ((ret = write_entry(cps->repo, rootfd, c, um)) < 0)
				goto out;
			res.written++;
		}
	}
	if ((ret = fix_dir_perms(&res.chmodded, rootfd, &want, &want_perms, 0)) < 0)
		goto out;
	if (syncfs(rootfd) < 0) {
		ret = err_set_errno(FX_EOS, "cannot flush the restored files to disk");
		goto out;
	}
	applying = 0;

	/* 4. Check the result against the checkpoint. */
	ret = verify_restore(cps, rootfd, idx, &plan, tree, &want, &want_perms, full);
	if (ret < 0)
		err_prefix(ret, "the tree before the restore is checkpoint %s",
			   res.backup.short_id);
out:
	if (ret < 0 && applying)
		err_prefix(ret, "restore stopped part-way; the tree before it is checkpoint %s",
			   res.backup.short_id);
	if (in_batch)
		batch_end(cps);
	if (res.backup.message) {
		/*
		 * The index now tracks what the checkpoint had, which may
		 * include files ignored since: make the next capture check.
		 */
		struct buf sp = BUF_INIT;

		path_join(&sp, cps->shadow, IGNORE_STAMP);
		unlink(sp.buf);
		buf_release(&sp);
	}
	strvec_clear(&overwrite);
	if (rootfd >= 0)
		close(rootfd);
	buf_release(&stamp);
	plan_release(&plan);
	perm_map_release(&now_perms);
	perm_map_release(&want_perms);
	free(header);
	free(msg);
	tree_list_release(&want);
	git_index_free(idx);
	git_tree_free(tree);
	git_commit_free(target);
	checkpoint__unlock(cps);
	if (ret < 0 || !out)
		checkpoint_restore_result_release(&res);
	else
		*out = res;
	return ret;
}
