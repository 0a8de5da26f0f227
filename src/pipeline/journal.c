/* The journal of a run's own changes; see journal.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/beneath.h"
#include "base/fsutil.h"
#include "base/jsonx.h"
#include "pipeline/journal.h"
#include "pipeline/rundir.h"

#define CHANGES "changes.jsonl"
#define MAX_SAVE ((size_t)1 << 30)	/* a rollback reads a saved copy up to this */
#define SAVE_CHUNK ((size_t)64 << 10)	/* what a copy saved before a change holds in memory */
#define GITMODE_FILE 0100644u
#define GITMODE_EXEC 0100755u
#define GITMODE_LINK 0120000u

void journal_outcome_init(struct journal_outcome *o)
{
	strvec_init(&o->reverted);
	strvec_init(&o->kept);
	strvec_init(&o->overwritten);
	strvec_init(&o->failed);
}

void journal_outcome_release(struct journal_outcome *o)
{
	strvec_clear(&o->reverted);
	strvec_clear(&o->kept);
	strvec_clear(&o->overwritten);
	strvec_clear(&o->failed);
}

static void current(char oid[VCS_OID_HEX], struct journal *j, const char *rel, int store);

static int append(struct journal *j, json_t *rec)
{
	int ret = 0;

	if (j->fd >= 0)
		ret = jsonx_write_line(j->fd, rec);
	json_decref(rec);
	if (ret < 0)
		err_prefix(ret, "cannot write %s/" CHANGES, j->dir);
	return ret;
}

static json_t *entry(struct journal *j, const char *rel)
{
	json_t *e = json_object_get(j->paths, rel);

	if (!e) {
		e = json_object();
		json_object_set_new(j->paths, rel, e);
	}
	return e;
}

/*
 * Whether `rel` is a path the journal may hold: relative, clean (no
 * empty, "." or ".." component), and outside every .git and .forgex
 * folder in any letter case (what no tool changes and no snapshot holds).
 * changes.jsonl is in the workspace, so anyone may have written it: a
 * record for any other path is not taken, so a revert can never write a
 * git hook or leave the workspace.
 */
static int journal_path_ok(const char *rel)
{
	const char *p = rel;

	if (!rel || !*rel || *rel == '/')
		return 0;
	for (;;) {
		size_t n = strcspn(p, "/");

		if (!n || (n == 1 && *p == '.') || (n == 2 && !strncmp(p, "..", 2)) ||
		    (n == 4 && !strncasecmp(p, ".git", 4)) ||
		    (n == 7 && !strncasecmp(p, ".forgex", 7)))
			return 0;
		if (!p[n])
			return 1;
		p += n + 1;
	}
}

/*
 * Whether `tmp` names a temporary file for `rel` in rel's folder, as
 * fsutil_tmp_create() names one ("a/.b.fx-0123abcd.tmp" for "a/b"): a
 * record for anything else is not taken, so no journal (a planted one
 * too) can have any other file removed.
 */
static int tmp_ok(const char *tmp, const char *rel)
{
	const char *rs, *ts;
	size_t rd, td;

	if (!journal_path_ok(rel) || !journal_path_ok(tmp))
		return 0;
	rs = strrchr(rel, '/');
	ts = strrchr(tmp, '/');
	rd = rs ? (size_t)(rs - rel) : 0;
	td = ts ? (size_t)(ts - tmp) : 0;
	if (rd != td || strncmp(rel, tmp, rd))
		return 0;
	return fsutil_tmp_is_for(ts ? ts + 1 : tmp, rs ? rs + 1 : rel);
}

/*
 * A write of `rel` is under way: its temporary file is recorded and what
 * the run leaves there is not yet. Until that "left" record, the bytes
 * at `rel` may be the write's own (a process killed between its rename
 * and the record: the worst moment of a second change), so what the run
 * left there counts as unknown, as for a path whose first change was
 * killed: whatever is there is the run's (journal_conflicts()).
 */
static void writing(struct journal *j, const char *rel)
{
	json_t *e = json_object_get(j->paths, rel);

	if (e)
		json_object_set_new(e, "writing", json_true());
}

/* The "left" of `e`, or NULL when not known (never recorded, or a write of it in flight). */
static const char *left_of(const json_t *e)
{
	return json_object_get(e, "writing") ? NULL : jsonx_str(e, "left");
}

static int tmp_hook(void *data, const char *rel, const char *tmp)
{
	return journal_before_tmp(data, rel, tmp);
}

int journal_open(struct journal *j, struct checkpoints *cps, const char *dir, int append_mode)
{
	struct buf b = BUF_INIT;
	size_t pos = 0;
	int fd, ret = 0;

	j->cps = cps;
	j->dir = xstrdup(dir);
	j->fd = -1;
	j->paths = json_object();
	j->nsaved = 0;
	j->snap[0] = '\0';
	j->gaps = 0;
	j->gap_why = NULL;
	j->tmps = json_object();
	strvec_init(&j->removed);
	fd = rundir_file_open(dir, CHANGES, O_RDONLY, 0);
	if (fd >= 0) {
		ret = fsutil_read_fd(&b, fd, 256u << 20);
		close(fd);
		if (ret < 0)
			goto out;
	} else if (fd != FX_ENOTFOUND) {
		ret = fd;
		goto out;
	}
	err_clear();
	while (pos < b.len) {
		const char *nl = memchr(b.buf + pos, '\n', b.len - pos);
		size_t n = nl ? (size_t)(nl - b.buf) - pos : b.len - pos;
		json_t *rec = NULL;

		/* a torn last line (killed mid-write) is skipped */
		if (n && !jsonx_parse(&rec, b.buf + pos, n, CHANGES) &&
		    journal_path_ok(jsonx_str(rec, "path"))) {
			json_t *e = entry(j, jsonx_str(rec, "path"));
			json_t *before = json_object_get(rec, "before");

			if (json_is_object(before) && !json_object_get(e, "before"))
				json_object_set(e, "before", before);
			if (jsonx_str(rec, "left")) {
				json_object_set(e, "left", json_object_get(rec, "left"));
				json_object_del(e, "writing");
			}
			if (json_is_object(json_object_get(rec, "user_version")))
				json_object_set(e, "user_version", json_object_get(rec, "user_version"));
			if (jsonx_str(before, "file"))
				j->nsaved++;
		} else if (rec && jsonx_str(rec, "command") &&
			   strlen(jsonx_str(rec, "command")) < sizeof(j->snap)) {
			/* a command began: until its end, what it changed is not recorded */
			snprintf(j->snap, sizeof(j->snap), "%s", jsonx_str(rec, "command"));
		} else if (rec && jsonx_str(rec, "command_end")) {
			j->snap[0] = '\0';
		} else if (rec && tmp_ok(jsonx_str(rec, "tmp"), jsonx_str(rec, "for"))) {
			json_object_set(j->tmps, jsonx_str(rec, "tmp"), json_object_get(rec, "for"));
			writing(j, jsonx_str(rec, "for"));
		}
		err_clear();
		json_decref(rec);
		pos += n + 1;
	}
	if (append_mode) {
		fd = rundir_file_open(dir, CHANGES, O_WRONLY | O_CREAT | O_APPEND, 0600);
		if (fd < 0) {
			ret = fd;
			goto out;
		}
		j->fd = fd;
		/*
		 * A process killed mid-record left a torn last line: end it, or
		 * this process's first record would be glued to it and lost.
		 */
		if (b.len && b.buf[b.len - 1] != '\n' && (ret = fsutil_write_all(fd, "\n", 1)) < 0) {
			err_prefix(ret, "cannot write %s/" CHANGES, dir);
			close(fd);
			j->fd = -1;
			goto out;
		}
		/* the caller holds the lock: a temporary file named here is a dead write's */
		journal_remove_tmps(j, &j->removed);
		journal_sweep_rundir(dir);
		/*
		 * A process killed while a command ran (or before it recorded
		 * what the command changed): what differs from the snapshot
		 * before the command is recorded now, as its end would have.
		 */
		if (j->snap[0])
			journal_command_end(j);
		checkpoint_set_tmp_hook(cps, tmp_hook, j);
	}
out:
	if (!append_mode)
		j->snap[0] = '\0';
	buf_release(&b);
	return ret;
}

void journal_release(struct journal *j)
{
	if (j->fd >= 0) {
		close(j->fd);
		if (j->cps)
			checkpoint_set_tmp_hook(j->cps, NULL, NULL);
	}
	free(j->dir);
	free(j->gap_why);
	json_decref(j->paths);
	json_decref(j->tmps);
	strvec_clear(&j->removed);
	memset(j, 0, sizeof(*j));
	j->fd = -1;
}

int journal_before_tmp(struct journal *j, const char *rel, const char *tmp)
{
	const char *slash = strrchr(rel, '/');
	char *path;
	int ret;

	if (!j || !j->paths)
		return 0;
	path = slash ? xstrfmt("%.*s/%s", (int)(slash - rel), rel, tmp) : xstrdup(tmp);
	if (!tmp_ok(path, rel)) {
		ret = err_set(FX_EINVAL, "'%s' is not a temporary file name for '%s'", path, rel);
	} else {
		ret = append(j, json_pack("{s:s, s:s}", "tmp", path, "for", rel));
		if (!ret) {
			json_object_set_new(j->tmps, path, json_string(rel));
			writing(j, rel);
		}
	}
	if (ret < 0)
		err_prefix(ret, "not written, because its temporary file could not be recorded "
			   "first");
	free(path);
	return ret;
}

void journal_remove_tmps(struct journal *j, struct strvec *removed)
{
	const char *tmp;
	json_t *v;
	int wfd;

	if (!j->tmps || !json_object_size(j->tmps))
		return;
	wfd = open(checkpoint_workspace(j->cps), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (wfd < 0)
		return;
	json_object_foreach(j->tmps, tmp, v) {
		const char *slash = strrchr(tmp, '/');
		char *dir = slash ? xstrndup(tmp, (size_t)(slash - tmp)) : xstrdup("");
		const char *name = slash ? slash + 1 : tmp;
		/* its folder reached following no link: a link planted on the way is not taken */
		int dfd = beneath_open(wfd, dir, O_RDONLY | O_DIRECTORY, 0);
		struct stat st;

		if (dfd >= 0) {
			if (!fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) &&
			    (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) && !unlinkat(dfd, name, 0) &&
			    removed)
				strvec_push(removed, tmp);
			close(dfd);
		}
		free(dir);
	}
	close(wfd);
}

/* Write `data` to the new file `name` of the run folder. */
static int save_file(struct journal *j, const char *name, const void *data, size_t len,
		     mode_t mode)
{
	int fd = rundir_file_open(j->dir, name, O_WRONLY | O_CREAT | O_TRUNC, 0600), ret;

	if (fd < 0)
		return fd;
	ret = fsutil_write_all(fd, data, len);
	if (!ret && fchmod(fd, mode & 0777 ? mode & 0600 : 0600) < 0)
		ret = err_set_errno(FX_EOS, "cannot set the mode");
	if (!ret && fsync(fd) < 0)
		ret = err_set_errno(FX_EOS, "cannot flush it to disk");
	if (close(fd) < 0 && !ret)
		ret = err_set_errno(FX_EOS, "cannot close it");
	if (ret < 0)
		err_prefix(ret, "cannot save %s/%s", j->dir, name);
	return ret;
}

/* Write the `len` bytes of `data` at `off` of `fd`. */
static int pwrite_all(int fd, const char *data, size_t len, off_t off)
{
	while (len) {
		ssize_t n = pwrite(fd, data, len, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_set_errno(FX_EOS, "cannot write");
		data += n;
		len -= (size_t)n;
		off += n;
	}
	return 0;
}

/*
 * Copy the file open as `src` (its stat data `st`) to `dst`: a clone of
 * its blocks where the file system can make one (FICLONE: no byte moves),
 * else SAVE_CHUNK bytes at a time, each hole (SEEK_DATA/SEEK_HOLE) left a
 * hole. Memory stays SAVE_CHUNK whatever the size, and a sparse file takes
 * no more disk as a copy than it does in the workspace.
 */
static int copy_blocks(int dst, int src, const struct stat *st)
{
	off_t off = 0, size = st->st_size, data, hole;
	char *chunk;
	int ret = 0;

	if (!ioctl(dst, FICLONE, src))
		return 0;
	chunk = xmalloc(SAVE_CHUNK);
	while (!ret && off < size) {
		data = lseek(src, off, SEEK_DATA);
		if (data < 0)
			data = errno == ENXIO ? size : off;	/* a hole to the end; or no SEEK_DATA */
		off = data < size ? data : size;
		hole = off < size ? lseek(src, off, SEEK_HOLE) : size;
		if (hole <= off || hole > size)
			hole = size;
		while (!ret && off < hole) {
			size_t want = (size_t)(hole - off) < SAVE_CHUNK ? (size_t)(hole - off) : SAVE_CHUNK;
			ssize_t n = pread(src, chunk, want, off);

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				ret = err_set_errno(FX_EOS, "cannot read it");
			} else if (!n) {
				size = off;	/* shorter than it was: what there is */
				hole = off;
			} else if (!(ret = pwrite_all(dst, chunk, (size_t)n, off))) {
				off += n;
			}
		}
	}
	free(chunk);
	if (!ret && ftruncate(dst, size) < 0)
		ret = err_set_errno(FX_EOS, "cannot set the size");
	return ret;
}

/*
 * Save the regular file open as `src` (`st`) as the new file `name` of
 * the run folder (copy_blocks(): bounded memory), with its mode's read and
 * write bits for the owner only, and hash the copy into `oid`.
 */
static int save_copy(struct journal *j, const char *name, int src, const struct stat *st,
		     char oid[VCS_OID_HEX])
{
	int fd = rundir_file_open(j->dir, name, O_RDWR | O_CREAT | O_TRUNC, 0600), ret;

	if (fd < 0)
		return fd;
	ret = copy_blocks(fd, src, st);
	if (!ret && fchmod(fd, st->st_mode & 0777 ? st->st_mode & 0600 : 0600) < 0)
		ret = err_set_errno(FX_EOS, "cannot set the mode");
	if (!ret && fsync(fd) < 0)
		ret = err_set_errno(FX_EOS, "cannot flush it to disk");
	if (!ret)
		ret = vcs_hash_fd(oid, fd);
	if (close(fd) < 0 && !ret)
		ret = err_set_errno(FX_EOS, "cannot close it");
	if (ret < 0)
		err_prefix(ret, "cannot save %s/%s", j->dir, name);
	return ret;
}

/* Remove the file `name` of the run folder (a copy not needed after all). */
static void drop_copy(struct journal *j, const char *name)
{
	const char *slash = strrchr(name, '/');
	char *dir = slash ? xstrndup(name, (size_t)(slash - name)) : NULL;
	int dfd = rundir_file_open(j->dir, dir, O_RDONLY | O_DIRECTORY, 0);

	if (dfd >= 0) {
		unlinkat(dfd, slash ? slash + 1 : name, 0);
		close(dfd);
	}
	err_clear();
	free(dir);
}

/* The refusal for a file the bound of the checkpoints does not let be saved. */
static int too_large(struct journal *j, const char *rel, const struct stat *st, const char *what)
{
	return err_set(FX_ELIMIT, "'%s' is %lld bytes, larger than [checkpoints] max_file_bytes "
		       "(%llu): %s", rel, (long long)st->st_size,
		       (unsigned long long)checkpoint_max_file_bytes(j->cps), what);
}

/*
 * The run changes `rel` again. If someone else changed it since the run
 * last did (the user, between two of the run's writes), their version is
 * copied to user-versions/PATH first, so it is not lost. Bounded memory
 * (save_copy()); a file over [checkpoints] max_file_bytes is not changed,
 * since whoever made it so cannot have their version kept.
 */
static int keep_user_version(struct journal *j, int dirfd, const char *name, const char *rel)
{
	const char *left = left_of(json_object_get(j->paths, rel));
	struct stat st;
	char oid[VCS_OID_HEX];
	char *file;
	int fd, ret;

	if (!left)
		return 0;
	fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	if ((uint64_t)st.st_size > checkpoint_max_file_bytes(j->cps)) {
		close(fd);
		return too_large(j, rel, &st, "not changed, since a version someone else made "
				 "since the run changed it could not be saved first");
	}
	/* the run's own version (the common case: the run changes its file again): nothing to keep */
	if (vcs_hash_fd(oid, fd) == 0 && !strcmp(oid, left)) {
		close(fd);
		return 0;
	}
	err_clear();
	file = xstrfmt("user-versions/%s", rel);
	ret = save_copy(j, file, fd, &st, oid);
	close(fd);
	if (!ret && !strcmp(oid, left)) {
		drop_copy(j, file);	/* changed back to the run's between the two reads */
		free(file);
		return 0;
	}
	if (!ret) {
		/* a rollback puts the user's version back, not the one from before the run */
		json_t *uv = json_pack("{s:s, s:s, s:i, s:s}", "kind", "saved", "file", file,
				       "mode", (int)st.st_mode, "oid", oid);

		ret = append(j, json_pack("{s:s, s:O}", "path", rel, "user_version", uv));
		if (!ret)
			json_object_set(json_object_get(j->paths, rel), "user_version", uv);
		json_decref(uv);
	}
	if (ret < 0)
		err_prefix(ret, "not changed: it was changed by someone else since the run changed "
			   "it, and that version could not be saved first");
	free(file);
	return ret;
}

int journal_before_change(struct journal *j, int dirfd, const char *name, const char *rel)
{
	struct stat st;
	char oid[VCS_OID_HEX];
	json_t *before;
	int ret = 0;

	if (!j || !j->paths)
		return 0;
	if (json_object_get(j->paths, rel))
		return keep_user_version(j, dirfd, name, rel);
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			return err_set_errno(FX_EOS, "cannot look at '%s' before changing it", rel);
		before = json_pack("{s:s, s:s}", "kind", "absent", "oid", "");
	} else if (S_ISDIR(st.st_mode)) {
		before = json_pack("{s:s, s:s}", "kind", "dir", "oid", "dir");
	} else if (S_ISLNK(st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat(dirfd, name, target, sizeof(target));

		if (n < 0 || (size_t)n >= sizeof(target))
			return err_set_errno(FX_EOS, "cannot read the link '%s' before changing it", rel);
		vcs_hash_buffer(oid, target, (size_t)n);
		before = json_pack("{s:s, s:s%, s:s}", "kind", "link", "target", target, (size_t)n,
				   "oid", oid);
	} else if (S_ISREG(st.st_mode)) {
		char *file;
		int fd;

		fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			ret = err_set_errno(FX_EOS, "cannot read '%s' before changing it", rel);
			if (fd >= 0)
				close(fd);
			goto out;
		}
		/* the bound of the checkpoints: what no checkpoint could hold is not taken away */
		if ((uint64_t)st.st_size > checkpoint_max_file_bytes(j->cps)) {
			close(fd);
			return too_large(j, rel, &st, "too large to save a copy before changing it, "
					 "so it is not changed");
		}
		file = xstrfmt("saved/%lu", ++j->nsaved);
		ret = save_copy(j, file, fd, &st, oid);
		close(fd);
		if (ret < 0) {
			free(file);
			goto out;
		}
		before = json_pack("{s:s, s:s, s:i, s:s}", "kind", "saved", "file", file,
				   "mode", (int)st.st_mode, "oid", oid);
		free(file);
	} else {
		return err_set(FX_EDENIED, "'%s' is not a file, link or folder; not changed", rel);
	}
	ret = append(j, json_pack("{s:s, s:O}", "path", rel, "before", before));
	if (ret < 0) {
		json_decref(before);
		goto out;
	}
	json_object_set_new(entry(j, rel), "before", before);
out:
	if (ret < 0)
		err_prefix(ret, "not changed, because what is there could not be saved first");
	return ret;
}

static void set_left(struct journal *j, const char *rel, const char *oid)
{
	json_object_set_new(entry(j, rel), "left", json_string(oid));
	json_object_del(entry(j, rel), "writing");
	if (append(j, json_pack("{s:s, s:s}", "path", rel, "left", oid)) < 0)
		err_clear();	/* the "before" is recorded: undo still works, only less exactly */
}

void journal_after_change(struct journal *j, const char *rel)
{
	char oid[VCS_OID_HEX];

	if (!j || !j->paths)
		return;
	/*
	 * Stored in the shadow: the run's version can be copied out later.
	 * Where it cannot be stored (a full disk), hashed only: a "left" of
	 * "unknown" would make every later look at the path take it for
	 * someone else's change, and the rollback keep it.
	 */
	if (vcs_hash_path(oid, NULL, j->cps, rel, 1) < 0) {
		err_clear();
		if (vcs_hash_path(oid, NULL, j->cps, rel, 0) < 0) {
			err_clear();
			snprintf(oid, sizeof(oid), "unknown");
		}
	}
	set_left(j, rel, oid);
}

void journal_note_restored(struct journal *j, const char *tree)
{
	struct strvec all = STRVEC_INIT;
	char now[VCS_OID_HEX], was[VCS_OID_HEX];
	size_t i;

	if (!j || !j->paths || !tree)
		return;
	journal_paths(j, &all);
	for (i = 0; i < all.nr; i++) {
		const char *rel = all.v[i];
		const char *left = left_of(json_object_get(j->paths, rel));
		int held = vcs_tree_entry(was, NULL, j->cps, tree, rel);

		/* a path no checkpoint holds (ignored) was not put back: as it was */
		if (held < 0) {
			err_clear();
			continue;
		}
		current(now, j, rel, 1);
		if (!strcmp(now, "?") || !strcmp(now, "dir") || strcmp(now, was) ||
		    (left && !strcmp(left, now)))
			continue;
		set_left(j, rel, now);
	}
	strvec_clear(&all);
}

static void gap(struct journal *j)
{
	j->gaps++;
	if (!j->gap_why)
		j->gap_why = xstrdup(err_last());
	err_clear();
}

void journal_command_begin(struct journal *j)
{
	if (!j || !j->paths)
		return;
	if (vcs_snapshot(j->snap, j->cps) < 0) {
		gap(j);
		j->snap[0] = '\0';
		return;
	}
	/* so that a process killed before the command's end can still have its changes found */
	if (append(j, json_pack("{s:s}", "command", j->snap)) < 0)
		err_clear();
}

void journal_command_end(struct journal *j)
{
	struct strvec changed = STRVEC_INIT;
	char after[VCS_OID_HEX], oid[VCS_OID_HEX];
	size_t i;

	if (!j || !j->paths || !j->snap[0])
		return;
	if (vcs_snapshot(after, j->cps) < 0 ||
	    vcs_tree_changes(&changed, j->cps, j->snap, after) < 0) {
		gap(j);
		goto out;
	}
	for (i = 0; i < changed.nr; i++) {
		const char *rel = changed.v[i];

		if (!json_object_get(json_object_get(j->paths, rel), "before")) {
			json_t *before;

			if (vcs_tree_entry(oid, NULL, j->cps, j->snap, rel) < 0)
				err_clear();
			before = json_pack("{s:s, s:s, s:s}", "kind", "tree", "tree", j->snap,
					   "oid", oid);
			if (append(j, json_pack("{s:s, s:O}", "path", rel, "before", before)) < 0)
				err_clear();
			json_object_set_new(entry(j, rel), "before", before);
		}
		if (vcs_tree_entry(oid, NULL, j->cps, after, rel) < 0) {
			err_clear();
			snprintf(oid, sizeof(oid), "unknown");
		}
		set_left(j, rel, oid);
	}
	if (append(j, json_pack("{s:s}", "command_end", j->snap)) < 0)
		err_clear();
out:
	j->snap[0] = '\0';
	strvec_clear(&changed);
}

static int cmp_fwd(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void journal_paths(const struct journal *j, struct strvec *out)
{
	struct strvec all = STRVEC_INIT;
	const char *k;
	json_t *v;
	size_t i;

	json_object_foreach(j->paths, k, v)
		if (json_object_get(v, "before"))
			strvec_push(&all, k);
	/* json objects keep insertion order: sort for a stable answer */
	if (all.nr)
		qsort(all.v, all.nr, sizeof(*all.v), cmp_fwd);
	for (i = 0; i < all.nr; i++)
		strvec_push(out, all.v[i]);
	strvec_clear(&all);
}

/* What `rel` is now ("" absent); "?" when it cannot be read. */
static void current(char oid[VCS_OID_HEX], struct journal *j, const char *rel, int store)
{
	if (vcs_hash_path(oid, NULL, j->cps, rel, store) < 0) {
		err_clear();
		snprintf(oid, VCS_OID_HEX, "?");
	}
}

/* What a rollback puts back at a path: the user's version when one was saved, else the "before". */
static const json_t *target_of(const json_t *e)
{
	const json_t *uv = json_object_get(e, "user_version");

	return uv ? uv : json_object_get(e, "before");
}

/*
 * Whether the run left `e` as it was before (a rollback put it back, or
 * the run wrote the same bytes again): nothing of the run's is there, so
 * whatever is there now is someone else's.
 */
static int left_as_before(const json_t *e)
{
	const char *left = left_of(e), *was = jsonx_str(target_of(e), "oid");

	return left && was && !strcmp(left, was);
}

int journal_conflicts(struct journal *j, struct strvec *out)
{
	struct strvec all = STRVEC_INIT;
	size_t i;

	journal_paths(j, &all);
	for (i = 0; i < all.nr; i++) {
		json_t *e = json_object_get(j->paths, all.v[i]);
		const char *left = left_of(e);
		const char *was = jsonx_str(json_object_get(e, "before"), "oid");
		char now[VCS_OID_HEX];

		if (left_as_before(e))
			continue;	/* a rollback put it back: a change since is not the run's */
		current(now, j, all.v[i], 0);
		/* never left (killed mid-change) counts as left as it is */
		if (left && strcmp(now, left) && (!was || strcmp(now, was)))
			strvec_push(out, all.v[i]);
	}
	strvec_clear(&all);
	return 0;
}

int journal_own_changes(struct journal *j, struct strvec *out)
{
	struct strvec all = STRVEC_INIT;
	size_t i;

	journal_paths(j, &all);
	for (i = 0; i < all.nr; i++) {
		json_t *e = json_object_get(j->paths, all.v[i]);
		const char *left = left_of(e);
		const char *was = jsonx_str(json_object_get(e, "before"), "oid");
		char now[VCS_OID_HEX];

		current(now, j, all.v[i], 0);
		if (left && !strcmp(now, left) && (!was || strcmp(now, was)) && strcmp(now, "dir"))
			strvec_push(out, all.v[i]);
	}
	strvec_clear(&all);
	return 0;
}

/* "run-versions/a/b.txt" style name in the run folder for `rel`. */
static int save_version(struct journal *j, struct buf *where, const char *sub, const char *rel,
			const char *oid)
{
	struct buf data = BUF_INIT;
	char *name;
	int ret;

	if (!oid || !*oid || !strcmp(oid, "dir") || !strcmp(oid, "?") || !strcmp(oid, "unknown"))
		return err_set(FX_ENOTFOUND, "no copy of it was kept");
	ret = vcs_blob_read(&data, j->cps, oid);
	if (ret < 0)
		goto out;
	name = xstrfmt("%s/%s", sub, rel);
	ret = save_file(j, name, data.buf, data.len, 0600);
	if (!ret)
		buf_addf(where, "%s/%s", j->dir, name);
	free(name);
out:
	buf_release(&data);
	return ret;
}

/* Where the bytes `before` describes can be found, for a message. */
static void before_where(struct buf *out, const struct journal *j, const json_t *before)
{
	const char *kind = jsonx_str(before, "kind");

	if (kind && !strcmp(kind, "saved"))
		buf_addf(out, "%s/%s", j->dir, jsonx_str(before, "file"));
	else if (kind && !strcmp(kind, "tree"))
		buf_addf(out, "the checkpoint snapshot %.12s", jsonx_str(before, "tree"));
	else if (kind && !strcmp(kind, "link"))
		buf_addf(out, "a link to '%s'", jsonx_str(before, "target"));
	else if (kind && !strcmp(kind, "dir"))
		buf_addstr(out, "a folder");
	else
		buf_addstr(out, "nothing: it did not exist");
}

/* A saved copy's name checked to be in the run folder: "saved/N" or "user-versions/P". */
static const char *saved_file(const json_t *before)
{
	const char *file = jsonx_str(before, "file");

	if (!file || (strncmp(file, "saved/", 6) && strncmp(file, "user-versions/", 14)) ||
	    !journal_path_ok(file))
		return NULL;
	return file;
}

/* The folder of the run-folder file `file` opened, and its last name in `*base`. */
static int open_saved_dir(struct journal *j, const char *file, const char **base)
{
	const char *slash = strrchr(file, '/');
	char *sub = xstrndup(file, (size_t)(slash - file));
	int fd = rundir_file_open(j->dir, sub, O_RDONLY | O_DIRECTORY, 0);

	free(sub);
	*base = slash + 1;
	return fd;
}

/*
 * Put the saved copy `file` back at `rel` by renaming it into place: no
 * new space is needed, the bytes are on the disk already (a rollback must
 * work on a full disk). Returns 1 when done; 0 when it cannot be done so
 * (the copy is gone, or on another file system, or a folder on the way is
 * missing): the caller copies instead; < 0 with the reason.
 * The copy is consumed: journal_revert() makes it again when there is room.
 */
static int rename_back(struct journal *j, const char *rel, const char *file, unsigned mode)
{
	const char *sbase, *slash = strrchr(rel, '/'), *base = slash ? slash + 1 : rel;
	char *pdir = slash ? xstrndup(rel, (size_t)(slash - rel)) : xstrdup("");
	int sfd, wfd = -1, pfd = -1, fd, ret = 0;
	struct stat st;

	sfd = open_saved_dir(j, file, &sbase);
	if (sfd < 0) {
		err_clear();
		goto out;
	}
	fd = openat(sfd, sbase, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		goto out;	/* gone (consumed by an earlier rollback): copied otherwise */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		goto out;
	}
	/* the mode from before the run, never a set-id or sticky bit */
	if (fchmod(fd, (mode_t)(mode & 0777)) < 0) {
		ret = err_set_errno(FX_EOS, "cannot put its saved copy back");
		close(fd);
		goto out;
	}
	close(fd);
	wfd = open(checkpoint_workspace(j->cps), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (wfd < 0) {
		ret = err_set_errno(FX_EOS, "cannot open the workspace");
		goto out;
	}
	pfd = beneath_open(wfd, pdir, O_RDONLY | O_DIRECTORY, 0);
	if (pfd < 0) {
		if (errno == ELOOP || errno == EXDEV)
			ret = err_set(FX_EDENIED, "cannot put it back: a symbolic link is on its way "
				      "(not followed)");
		else if (errno != ENOENT)
			ret = err_set_errno(FX_EOS, "cannot open its folder");
		goto out;
	}
	if (!fstatat(pfd, base, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode) &&
	    unlinkat(pfd, base, AT_REMOVEDIR) < 0) {
		ret = err_set(FX_EEXISTS, "a folder that is not empty is there now");
		goto out;
	}
	if (renameat(sfd, sbase, pfd, base) < 0) {
		if (errno != EXDEV)
			ret = err_set_errno(FX_EOS, "cannot rename its saved copy back into place");
		goto out;
	}
	/* what a crash may not lose; a failure here loses nothing already done */
	if (fsync(pfd) < 0 || fsync(sfd) < 0)
		errno = 0;
	ret = 1;
out:
	if (pfd >= 0)
		close(pfd);
	if (wfd >= 0)
		close(wfd);
	if (sfd >= 0)
		close(sfd);
	free(pdir);
	return ret;
}

/*
 * Make the saved copy `file` again from what is at `rel` now (after a
 * rollback renamed it back): written beside it and renamed, so a copy is
 * never half there. Fails on a full disk; then the copy stays consumed,
 * which later undos handle (see journal_revert()).
 */
static int restock(struct journal *j, const char *rel, const char *file)
{
	struct buf data = BUF_INIT;
	const char *sbase;
	char *tmp = xstrfmt("%s.new", file);
	int wfd, fd, sfd = -1, ret;

	wfd = open(checkpoint_workspace(j->cps), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fd = wfd < 0 ? -1 : beneath_open(wfd, rel, O_RDONLY | O_NONBLOCK, 0);
	if (wfd >= 0)
		close(wfd);
	if (fd < 0) {
		ret = err_set_errno(FX_EOS, "cannot read '%s'", rel);
		goto out;
	}
	ret = fsutil_read_fd(&data, fd, MAX_SAVE);
	close(fd);
	if (!ret)
		ret = save_file(j, tmp, data.buf, data.len, 0600);
	if (!ret) {
		sfd = open_saved_dir(j, file, &sbase);
		if (sfd < 0)
			ret = sfd;
		else if (renameat(sfd, strrchr(tmp, '/') + 1, sfd, sbase) < 0)
			ret = err_set_errno(FX_EOS, "cannot rename %s into place", tmp);
	}
	if (ret < 0 && sfd >= 0)
		unlinkat(sfd, strrchr(tmp, '/') + 1, 0);
	if (sfd >= 0)
		close(sfd);
out:
	free(tmp);
	buf_release(&data);
	return ret;
}

/* Whether the saved copy `before` names is missing from the run folder. */
static int consumed(struct journal *j, const json_t *before)
{
	const char *file = saved_file(before), *sbase;
	struct stat st;
	int sfd, gone;

	if (!file || strcmp(jsonx_str(before, "kind") ? jsonx_str(before, "kind") : "", "saved"))
		return 0;
	sfd = open_saved_dir(j, file, &sbase);
	if (sfd < 0) {
		err_clear();
		return 1;
	}
	gone = fstatat(sfd, sbase, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT;
	close(sfd);
	return gone;
}

/*
 * Put `before` back at `rel`. With `renamed` (may be NULL) a saved copy
 * is renamed into place where it can be (*renamed set to 1), else copied.
 */
static int put_before(struct journal *j, const char *rel, const json_t *before, int *renamed)
{
	const char *kind = jsonx_str(before, "kind");
	int ret = 0;

	if (!kind)
		return err_set(FX_EPARSE, "the journal does not say what it was");
	if (!strcmp(kind, "absent")) {
		ret = vcs_put_path(j->cps, rel, NULL, 0, 0, 0);
	} else if (!strcmp(kind, "link")) {
		const char *t = jsonx_str(before, "target");

		ret = vcs_put_path(j->cps, rel, t, strlen(t), GITMODE_LINK, 0);
	} else if (!strcmp(kind, "saved")) {
		struct buf data = BUF_INIT;
		const char *file = saved_file(before), *oid = jsonx_str(before, "oid");
		/* never a set-id or sticky bit: the journal may not be forgex's own */
		unsigned mode = (unsigned)jsonx_int(before, "mode", 0100644) & 0777;
		int fd;

		/* the saved bytes are in the run folder, nowhere else */
		if (!file)
			return err_set(FX_EPARSE, "the journal names no saved copy inside the run "
				       "folder");
		if (renamed) {
			ret = rename_back(j, rel, file, mode);
			if (ret != 0) {
				*renamed = ret > 0;
				return ret < 0 ? ret : 0;
			}
		}
		fd = rundir_file_open(j->dir, file, O_RDONLY, 0);
		if (fd >= 0) {
			ret = fsutil_read_fd(&data, fd, MAX_SAVE);
			close(fd);
		} else if (fd == FX_ENOTFOUND && oid && *oid) {
			/* renamed back by an earlier rollback: the checkpoints may hold the bytes */
			err_clear();
			ret = vcs_blob_read(&data, j->cps, oid);
			if (ret < 0)
				ret = err_set(FX_ENOTFOUND, "its saved copy %s was used up by an earlier "
					      "rollback and no checkpoint holds its bytes", file);
		} else {
			ret = fd;
		}
		if (!ret)
			ret = vcs_put_path(j->cps, rel, data.buf, data.len,
					   mode & 0111 ? GITMODE_EXEC : GITMODE_FILE, mode);
		buf_release(&data);
	} else if (!strcmp(kind, "tree")) {
		struct strvec one = STRVEC_INIT, failed = STRVEC_INIT;

		strvec_push(&one, rel);
		ret = vcs_restore_paths(j->cps, jsonx_str(before, "tree"), &one, &failed);
		if (ret > 0)
			ret = err_set(FX_EOS, "%s", failed.v[0]);
		strvec_clear(&one);
		strvec_clear(&failed);
	} else if (!strcmp(kind, "dir")) {
		/*
		 * Beneath the workspace, following no link: a link planted on the
		 * way (by a command, or shipped with a repository next to a
		 * journal) would have the folder made wherever it points.
		 */
		int wfd = open(checkpoint_workspace(j->cps), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		struct stat st;

		if (wfd < 0) {
			ret = err_set_errno(FX_EOS, "cannot open the workspace");
		} else if (fstatat(wfd, rel, &st, AT_SYMLINK_NOFOLLOW) < 0 &&
			   beneath_mkdir(wfd, rel, 0755) < 0) {
			if (errno == ELOOP || errno == EXDEV)
				ret = err_set(FX_EDENIED, "cannot make the folder again: a symbolic "
					      "link is on its way (not followed)");
			else
				ret = err_set_errno(FX_EOS, "cannot make the folder again");
		}
		if (wfd >= 0)
			close(wfd);
	} else {
		ret = err_set(FX_EPARSE, "unknown kind '%s' in the journal", kind);
	}
	return ret;
}

static int cmp_rev(const void *a, const void *b)
{
	return strcmp(*(const char *const *)b, *(const char *const *)a);
}

int journal_unrestored(struct journal *j, struct strvec *out)
{
	struct strvec all = STRVEC_INIT;
	size_t i;

	journal_paths(j, &all);
	for (i = 0; i < all.nr; i++) {
		json_t *e = json_object_get(j->paths, all.v[i]);
		const char *was = jsonx_str(target_of(e), "oid");
		char now[VCS_OID_HEX];

		if (left_as_before(e))
			continue;
		current(now, j, all.v[i], 0);
		if (!was || strcmp(now, was))
			strvec_push(out, all.v[i]);
	}
	strvec_clear(&all);
	return 0;
}

/*
 * Restore one path (see journal_revert()). Returns 1 when it is as it was
 * before the run, 0 when kept or failed (said in `o`).
 */
static int revert_one(struct journal *j, const char *rel, int force, struct journal_outcome *o,
		      struct strvec *renamed)
{
	json_t *e = json_object_get(j->paths, rel);
	const json_t *before = target_of(e);
	const char *was = jsonx_str(before, "oid"), *left = left_of(e);
	char now[VCS_OID_HEX];
	struct buf where = BUF_INIT;
	int ok = 0, moved = 0;

	/* hashed only: storing the blob would need space a full disk has not */
	current(now, j, rel, 0);
	if (was && !strcmp(now, was)) {
		strvec_push(&o->reverted, rel);
		return 1;
	}
	if (left_as_before(e))
		return 0;	/* the run left it as it was; what is there now is someone else's */
	if (left && strcmp(now, left)) {
		if (!force) {
			/* both changed it: the user's version stays */
			if (save_version(j, &where, "run-versions", rel, left) < 0) {
				strvec_pushf(&o->kept, "%s (the run's version: not kept: %s)", rel,
					     err_last());
				err_clear();
			} else {
				strvec_pushf(&o->kept, "%s (the run's version: %s)", rel, where.buf);
			}
			buf_release(&where);
			return 0;
		}
		current(now, j, rel, 1);
		if (strcmp(now, "") && save_version(j, &where, "user-versions", rel, now) < 0) {
			struct buf w = BUF_INIT;

			before_where(&w, j, before);
			strvec_pushf(&o->failed, "%s: changed since the run and its current version "
				     "could not be saved (%s); left as it is; what it was before the "
				     "run: %s", rel, err_last(), w.buf);
			buf_release(&w);
			err_clear();
			buf_release(&where);
			return 0;
		}
		if (where.len)
			strvec_pushf(&o->overwritten, "%s (your version: %s)", rel, where.buf);
		buf_reset(&where);
	}
	if (put_before(j, rel, before, &moved) < 0) {
		before_where(&where, j, before);
		strvec_pushf(&o->failed, "%s: %s; what it was before the run: %s", rel, err_last(),
			     where.buf);
		err_clear();
	} else {
		if (moved)
			strvec_push(renamed, rel);
		current(now, j, rel, 0);
		if (was && strcmp(now, was) && strcmp(was, "dir")) {
			before_where(&where, j, before);
			strvec_pushf(&o->failed, "%s: still differs after it was put back; what it "
				     "was before the run: %s", rel, where.buf);
		} else {
			strvec_push(&o->reverted, rel);
			ok = 1;
		}
	}
	buf_release(&where);
	return ok;
}

int journal_revert(struct journal *j, int force, struct journal_outcome *o)
{
	struct strvec all = STRVEC_INIT, renamed = STRVEC_INIT, back = STRVEC_INIT;
	size_t i, failed0 = o->failed.nr;
	int pass;

	journal_paths(j, &all);
	/* deepest first, so a folder the run made is empty when its turn comes */
	if (all.nr)
		qsort(all.v, all.nr, sizeof(*all.v), cmp_rev);
	/*
	 * Pass 0 removes what the run made (which frees space), pass 1 puts
	 * back the rest, saved copies renamed into place: nothing is written
	 * before the tree is back, so neither a full disk nor a records file
	 * that cannot be written stops a restore.
	 */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < all.nr; i++) {
			const char *rel = all.v[pass ? all.nr - 1 - i : i];
			const char *was = jsonx_str(target_of(json_object_get(j->paths, rel)), "oid");

			if ((!was || !*was) != !pass)
				continue;
			if (revert_one(j, rel, force, o, &renamed))
				strvec_push(&back, rel);
		}
	}
	/*
	 * Then what can wait: the saved copies used up are made again (when
	 * there is room), and the journal notes that the run left each path
	 * as it was, so a later undo knows it is back without them.
	 */
	for (i = 0; i < renamed.nr; i++) {
		const char *file = saved_file(target_of(json_object_get(j->paths, renamed.v[i])));

		if (file && restock(j, renamed.v[i], file) < 0)
			err_clear();
	}
	for (i = 0; i < back.nr; i++) {
		const char *was = jsonx_str(target_of(json_object_get(j->paths, back.v[i])), "oid");
		json_t *e = json_object_get(j->paths, back.v[i]);

		if (was && !left_as_before(e))
			set_left(j, back.v[i], was);
	}
	strvec_clear(&all);
	strvec_clear(&renamed);
	strvec_clear(&back);
	return (int)(o->failed.nr - failed0);
}

int journal_restore_to(struct journal *j, const char *tree, struct strvec *failed)
{
	struct strvec all = STRVEC_INIT, held = STRVEC_INIT, ids = STRVEC_INIT;
	char snap[VCS_OID_HEX], a[VCS_OID_HEX], b[VCS_OID_HEX];
	size_t i, nfailed;
	int ret;

	journal_paths(j, &all);
	/*
	 * A saved copy an earlier rollback renamed back is made again first:
	 * the run goes on and may change the path again, and a rollback then
	 * needs those bytes. Without room for it the run does not go on.
	 */
	for (i = 0; i < all.nr; i++) {
		json_t *e = json_object_get(j->paths, all.v[i]);
		const json_t *before = target_of(e);
		const char *was = jsonx_str(before, "oid");
		char now[VCS_OID_HEX];

		if (!consumed(j, before))
			continue;
		current(now, j, all.v[i], 0);
		/* changed by someone since: the journal saves that version before the next change */
		if (!was || strcmp(now, was))
			continue;
		ret = restock(j, all.v[i], saved_file(before));
		if (ret < 0) {
			err_prefix(ret, "cannot save '%s' again (a rollback used up its saved copy)",
				   all.v[i]);
			goto out;
		}
	}
	ret = vcs_snapshot(snap, j->cps);
	if (ret < 0)
		goto out;
	for (i = 0; i < all.nr; i++) {
		/* a path neither tree holds is ignored (or absent in both): not a checkpoint's */
		int in_now = vcs_tree_entry(a, NULL, j->cps, snap, all.v[i]);
		int in_tree = vcs_tree_entry(b, NULL, j->cps, tree, all.v[i]);

		if (in_now < 0 || in_tree < 0)
			err_clear();
		if (in_now > 0 && in_tree > 0 && !strcmp(a, b))
			continue;
		if (in_now > 0 || in_tree > 0) {
			strvec_push(&held, all.v[i]);
			strvec_push(&ids, in_tree > 0 ? b : "");
		}
	}
	nfailed = failed->nr;
	ret = held.nr ? vcs_restore_paths(j->cps, tree, &held, failed) : 0;
	/* what the run left there now is that tree's version (not someone else's change) */
	for (i = 0; ret >= 0 && i < held.nr; i++) {
		size_t k;
		int bad = 0;

		for (k = nfailed; k < failed->nr && !bad; k++)
			bad = !strncmp(failed->v[k], held.v[i], strlen(held.v[i])) &&
			      failed->v[k][strlen(held.v[i])] == ':';
		if (!bad && strcmp(ids.v[i], "dir"))
			set_left(j, held.v[i], ids.v[i]);
	}
out:
	strvec_clear(&all);
	strvec_clear(&held);
	strvec_clear(&ids);
	return ret;
}
