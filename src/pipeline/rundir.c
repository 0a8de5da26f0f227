/*
 * Run folders and their event logs (see rundir.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/path.h"
#include "base/redact.h"
#include "pipeline/rundir.h"

#define EVENTS "events.jsonl"
#define MAX_EVENTS_FILE (256u << 20)

void rundir_make_id(char *out, size_t size, long long t)
{
	time_t tt = (time_t)t;
	struct tm tm;
	unsigned short rnd = 0;

	gmtime_r(&tt, &tm);
	if (getrandom(&rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		rnd = (unsigned short)(getpid() ^ (unsigned)clock());
	snprintf(out, size, "%04d%02d%02d-%02d%02d%02d-%04x", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)rnd);
}

char *rundir_dir(const char *workspace, const char *id)
{
	return rundir_dir_kind(workspace, RUNDIR_RUNS, id);
}

char *rundir_dir_kind(const char *workspace, const char *kind, const char *id)
{
	return xstrfmt("%s/.forgex/%s/%s", workspace, kind, id);
}

char *rundir_path(const struct rundir *s, const char *name)
{
	return xstrfmt("%s/%s", s->dir, name);
}


/*
 * forgex's own files are opened beneath the workspace without following a
 * link, and a FIFO, device or socket planted in their place is refused:
 * a command may have made any of them (issue 11).
 */
static int refuse_type(const char *shown, mode_t type)
{
	const char *what = S_ISLNK(type) ? "a symbolic link" : S_ISFIFO(type) ? "a named pipe" :
			   S_ISSOCK(type) ? "a socket" : S_ISDIR(type) ? "a folder" :
			   S_ISCHR(type) || S_ISBLK(type) ? "a device" : "not a regular file";

	return err_set(FX_EDENIED, "%s is %s, not what forgex made; forgex does not follow or "
		       "read it (remove it to go on)", shown, what);
}

int rundir_forgex_open(const char *workspace, const char *rel, int flags, mode_t mode)
{
	struct buf shown = BUF_INIT;
	const char *p = rel, *slash;
	struct stat st;
	int fd, next, ret;

	fd = open(workspace, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return err_set_errno(FX_EOS, "cannot open %s", workspace);
	buf_addf(&shown, "%s/.forgex", workspace);
	next = openat(fd, ".forgex", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (next < 0 && errno == ENOENT && (flags & O_CREAT)) {
		if (mkdirat(fd, ".forgex", 0755) < 0 && errno != EEXIST)
			goto os_fail;
		next = openat(fd, ".forgex", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	for (;;) {
		if (next < 0) {
			if (errno == ELOOP || errno == ENOTDIR) {
				if (!fstatat(fd, strrchr(shown.buf, '/') + 1, &st, AT_SYMLINK_NOFOLLOW))
					ret = refuse_type(shown.buf, st.st_mode);
				else
					ret = err_set_errno(FX_EOS, "cannot open %s", shown.buf);
				goto fail;
			}
			goto os_fail;
		}
		close(fd);
		fd = next;
		slash = strchr(p, '/');
		if (!slash)
			break;
		buf_addch(&shown, '/');
		buf_add(&shown, p, (size_t)(slash - p));
		{
			char *name = xstrndup(p, (size_t)(slash - p));

			next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (next < 0 && errno == ENOENT && (flags & O_CREAT)) {
				if (mkdirat(fd, name, 0700) < 0 && errno != EEXIST) {
					free(name);
					goto os_fail;
				}
				next = openat(fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			}
			free(name);
		}
		p = slash + 1;
	}
	if (!*p) {
		ret = fd;
		goto out;
	}
	buf_addch(&shown, '/');
	buf_addstr(&shown, p);
	if (flags & O_DIRECTORY) {
		next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 && errno == ENOENT && (flags & O_CREAT)) {
			if (mkdirat(fd, p, mode) < 0 && errno != EEXIST)
				goto os_fail;
			next = openat(fd, p, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		}
	} else {
		next = openat(fd, p, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, mode);
	}
	if (next < 0) {
		if ((errno == ELOOP || errno == ENOTDIR || errno == ENXIO || errno == EISDIR) &&
		    !fstatat(fd, p, &st, AT_SYMLINK_NOFOLLOW)) {
			ret = refuse_type(shown.buf, st.st_mode);
			goto fail;
		}
		if (errno == ENOENT) {
			ret = err_set(FX_ENOTFOUND, "%s does not exist", shown.buf);
			goto fail;
		}
		goto os_fail;
	}
	close(fd);
	fd = -1;
	if (fstat(next, &st) < 0 || ((flags & O_DIRECTORY) ? !S_ISDIR(st.st_mode)
							   : !S_ISREG(st.st_mode))) {
		ret = refuse_type(shown.buf, st.st_mode);
		close(next);
		goto out;
	}
	if (!(flags & O_DIRECTORY)) {
		/* back to blocking reads and writes on a regular file */
		int fl = fcntl(next, F_GETFL);

		if (fl >= 0 && !(flags & O_NONBLOCK))
			fcntl(next, F_SETFL, fl & ~O_NONBLOCK);
	}
	ret = next;
	goto out;
os_fail:
	ret = errno == ENOENT ? err_set(FX_ENOTFOUND, "%s does not exist", shown.buf)
			      : err_set_errno(FX_EOS, "cannot open %s", shown.buf);
fail:
	if (fd >= 0)
		close(fd);
out:
	buf_release(&shown);
	return ret;
}

/*
 * Split a run folder `dir` ("<workspace>/.forgex/runs/<id>") and `name`
 * into the workspace and ".forgex"-relative path, and open it.
 */
static int open_in_dir(const char *dir, const char *name, int flags, mode_t mode)
{
	const char *at = NULL, *p = dir;
	char *ws, *rel;
	int fd;

	while ((p = strstr(p, "/.forgex/"))) {
		at = p;
		p++;
	}
	if (!at)
		return err_set(FX_EINVAL, "%s is not a folder of .forgex", dir);
	ws = xstrndup(dir, (size_t)(at - dir));
	rel = name ? xstrfmt("%s/%s", at + 9, name) : xstrdup(at + 9);
	fd = rundir_forgex_open(ws, rel, flags, mode);
	free(ws);
	free(rel);
	return fd;
}

int rundir_file_open(const char *dir, const char *name, int flags, mode_t mode)
{
	return open_in_dir(dir, name, flags, mode);
}

static int open_events(struct rundir *s)
{
	int fd = open_in_dir(s->dir, EVENTS, O_WRONLY | O_CREAT | O_APPEND, 0600);

	if (fd < 0)
		return fd;
	s->events_fd = fd;
	return 0;
}

/* Write `data` to `name` in the run folder `dir`, atomically, without following links. */
static int write_in_dir(const char *dir, const char *name, const void *data, size_t len)
{
	int dfd = open_in_dir(dir, NULL, O_DIRECTORY, 0), ret;

	if (dfd < 0)
		return dfd;
	ret = fsutil_write_atomic_at(dfd, name, data, len, 0600);
	close(dfd);
	if (ret < 0)
		err_prefix(ret, "%s/%s", dir, name);
	return ret;
}

/* Read `name` of the run folder `dir` (at most `max` bytes). */
static int read_in_dir(struct buf *out, const char *dir, const char *name, size_t max)
{
	int fd = open_in_dir(dir, name, O_RDONLY, 0), ret;

	if (fd < 0)
		return fd;
	ret = fsutil_read_fd(out, fd, max);
	close(fd);
	if (ret < 0)
		err_prefix(ret, "%s/%s", dir, name);
	return ret;
}

int rundir_create(struct rundir *s, const char *workspace, const char *request)
{
	return rundir_create_kind(s, workspace, RUNDIR_RUNS, request);
}

int rundir_create_kind(struct rundir *s, const char *workspace, const char *kind,
			const char *request)
{
	char id[32];
	int ret, tries, runs_fd = -1;

	memset(s, 0, sizeof(*s));
	s->events_fd = -1;
	s->workspace = xstrdup(workspace);
	runs_fd = rundir_forgex_open(workspace, kind, O_DIRECTORY | O_CREAT, 0755);
	if (runs_fd < 0) {
		ret = runs_fd;
		goto fail;
	}
	for (tries = 0; tries < 16; tries++) {
		rundir_make_id(id, sizeof(id), (long long)time(NULL));
		free(s->dir);
		s->dir = rundir_dir_kind(workspace, kind, id);
		if (!mkdirat(runs_fd, id, 0700))
			break;
		if (errno != EEXIST) {
			ret = err_set_errno(FX_EOS, "cannot create %s", s->dir);
			goto fail;
		}
	}
	if (tries == 16) {
		ret = err_set(FX_EEXISTS, "cannot find a free run id in %s", s->dir);
		goto fail;
	}
	s->id = xstrdup(id);
	s->started = clk_mono_s();
	ret = open_events(s);
	if (ret < 0)
		goto fail;
	if (request) {
		struct buf clean = BUF_INIT;

		redact_text(&clean, request, strlen(request), NULL);
		ret = write_in_dir(s->dir, "request.txt", clean.buf, clean.len);
		buf_release(&clean);
		if (ret < 0)
			goto fail;
	}
	close(runs_fd);
	return 0;
fail:
	if (runs_fd >= 0)
		close(runs_fd);
	rundir_release(s);
	return ret;
}

/*
 * A process killed mid-event left a torn last line (never an event:
 * rundir_load_events() skips it while it is last). It is cut before this
 * process appends, or its first event (run_resume) would be glued to it
 * and the file would no longer read.
 */
static int cut_torn_tail(const char *dir)
{
	int fd = open_in_dir(dir, EVENTS, O_RDWR, 0), ret = 0;
	struct stat st;
	char chunk[4096];
	off_t end;

	if (fd < 0) {
		err_clear();
		return 0;	/* none yet: opening it for appending says why if it cannot be */
	}
	if (fstat(fd, &st) < 0 || !st.st_size)
		goto out;
	for (end = st.st_size; end > 0;) {
		size_t n = end > (off_t)sizeof(chunk) ? sizeof(chunk) : (size_t)end;
		off_t at = end - (off_t)n;
		const char *nl;

		if (pread(fd, chunk, n, at) != (ssize_t)n)
			goto out;
		nl = memrchr(chunk, '\n', n);
		if (nl) {
			end = at + (nl - chunk) + 1;
			break;
		}
		end = at;
	}
	if (end != st.st_size && ftruncate(fd, end) < 0)
		ret = err_set_errno(FX_EOS, "cannot cut the torn last line of %s/" EVENTS, dir);
out:
	close(fd);
	return ret;
}

int rundir_open(struct rundir *s, const char *workspace, const char *id)
{
	return rundir_open_kind(s, workspace, RUNDIR_RUNS, id);
}

int rundir_open_kind(struct rundir *s, const char *workspace, const char *kind,
		      const char *id)
{
	json_t *events = NULL;
	int ret;

	memset(s, 0, sizeof(*s));
	s->events_fd = -1;
	s->workspace = xstrdup(workspace);
	s->id = xstrdup(id);
	s->dir = rundir_dir_kind(workspace, kind, id);
	{
		int dfd = open_in_dir(s->dir, NULL, O_DIRECTORY, 0);

		if (dfd < 0) {
			ret = dfd == FX_ENOTFOUND ? err_set(FX_ENOTFOUND, "no %s '%s' in %s/.forgex/%s",
							    strcmp(kind, RUNDIR_RUNS) ? "session" : "run",
							    id, workspace, kind) : dfd;
			goto fail;
		}
		close(dfd);
	}
	ret = rundir_load_events(&events, s->dir);
	if (ret < 0)
		goto fail;
	if (json_array_size(events)) {
		json_t *last = json_array_get(events, json_array_size(events) - 1);

		s->seq = (unsigned long)jsonx_int(last, "seq", (json_int_t)json_array_size(events));
	}
	json_decref(events);
	s->started = clk_mono_s();
	ret = cut_torn_tail(s->dir);
	if (ret < 0)
		goto fail;
	ret = open_events(s);
	if (ret < 0)
		goto fail;
	return 0;
fail:
	rundir_release(s);
	return ret;
}

void rundir_release(struct rundir *s)
{
	if (s->events_fd >= 0)
		close(s->events_fd);
	free(s->workspace);
	free(s->id);
	free(s->dir);
	memset(s, 0, sizeof(*s));
	s->events_fd = -1;
}

int rundir_event(struct rundir *s, const char *type, json_t *fields)
{
	json_t *ev = json_object();
	char when[64];
	int ret = 0;

	clk_iso8601_now_ms(when, sizeof(when));
	jsonx_set(ev, "seq", json_integer((json_int_t)++s->seq));
	jsonx_set(ev, "time", jsonx_string(when));
	jsonx_set(ev, "elapsed_ms",
		  json_integer((json_int_t)((clk_mono_s() - s->started) * 1000.0 + 0.5)));
	jsonx_set(ev, "type", jsonx_string(type));
	if (fields) {
		const char *k;
		json_t *v;

		json_object_foreach(fields, k, v)
			if (!json_object_get(ev, k))
				json_object_set(ev, k, v);
		json_decref(fields);
	}
	{
		/* what a run records holds no secret (base/redact.h) */
		json_t *clean = redact_json(ev, NULL);

		json_decref(ev);
		ev = clean;
	}
	if (s->events_fd >= 0) {
		ret = jsonx_write_line(s->events_fd, ev);
		if (ret < 0)
			err_prefix(ret, "cannot write %s/" EVENTS, s->dir);
	}
	if (s->on_event)
		s->on_event(s->on_event_data, ev);
	json_decref(ev);
	return ret;
}

int rundir_eventf(struct rundir *s, const char *type, const char *fmt, ...)
{
	json_error_t jerr;
	json_t *fields;
	va_list ap;

	va_start(ap, fmt);
	fields = json_vpack_ex(&jerr, 0, fmt, ap);
	va_end(ap);
	if (!fields)
		BUG("rundir_eventf(%s): %s", type, jerr.text);
	return rundir_event(s, type, fields);
}

int rundir_write_json(const struct rundir *s, const char *name, const json_t *j)
{
	struct buf b = BUF_INIT;
	json_t *clean = redact_json(j, NULL);
	int ret;

	jsonx_dump(&b, clean, JSON_INDENT(2));
	json_decref(clean);
	buf_addch(&b, '\n');
	ret = write_in_dir(s->dir, name, b.buf, b.len);
	buf_release(&b);
	return ret;
}

int rundir_read_json(json_t **out, const char *dir, const char *name)
{
	char *p = xstrfmt("%s/%s", dir, name);
	struct buf b = BUF_INIT;
	int ret = read_in_dir(&b, dir, name, 64u << 20);

	if (!ret)
		ret = jsonx_parse(out, b.buf, b.len, p);
	buf_release(&b);
	free(p);
	return ret;
}

int rundir_load_events(json_t **out, const char *dir)
{
	char *p = xstrfmt("%s/" EVENTS, dir);
	struct buf b = BUF_INIT;
	json_t *arr = NULL;
	size_t pos = 0, line = 0;
	int ret;

	ret = read_in_dir(&b, dir, EVENTS, MAX_EVENTS_FILE);
	if (ret == FX_ENOTFOUND) {
		ret = 0;
	} else if (ret < 0) {
		goto out;
	}
	arr = json_array();
	while (pos < b.len) {
		const char *nl = memchr(b.buf + pos, '\n', b.len - pos);
		size_t n = nl ? (size_t)(nl - b.buf) - pos : b.len - pos;
		json_t *j = NULL;

		line++;
		if (n) {
			ret = jsonx_parse(&j, b.buf + pos, n, p);
			if (ret < 0) {
				/* a run killed mid-write leaves at most a torn last line */
				if (!nl) {
					ret = 0;
					err_clear();
					break;
				}
				err_prefix(ret, "line %zu", line);
				json_decref(arr);
				arr = NULL;
				goto out;
			}
			json_array_append_new(arr, j);
		}
		pos += n + 1;
	}
	*out = arr;
	arr = NULL;
out:
	json_decref(arr);
	buf_release(&b);
	free(p);
	return ret;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int rundir_list(struct strvec *out, const char *workspace)
{
	return rundir_list_kind(out, workspace, RUNDIR_RUNS);
}

int rundir_list_kind(struct strvec *out, const char *workspace, const char *kind)
{
	struct strvec ids = STRVEC_INIT;
	struct dirent *de;
	DIR *d;
	size_t i;

	{
		int fd = rundir_forgex_open(workspace, kind, O_DIRECTORY, 0);

		if (fd < 0) {
			if (fd == FX_ENOTFOUND || err_last_code() == FX_ENOTFOUND) {
				err_clear();
				return 0;
			}
			return fd;
		}
		d = fdopendir(fd);
		if (!d) {
			close(fd);
			return err_set_errno(FX_EOS, "cannot read %s/.forgex/%s", workspace, kind);
		}
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		/* only names shaped like run ids: 8 digits, '-' */
		if (strlen(de->d_name) < 15 || de->d_name[8] != '-')
			continue;
		strvec_push(&ids, de->d_name);
	}
	closedir(d);
	qsort(ids.v, ids.nr, sizeof(*ids.v), cmp_str);
	for (i = 0; i < ids.nr; i++)
		strvec_push(out, ids.v[i]);
	strvec_clear(&ids);
	return 0;
}

int rundir_resolve(char **out, const char *workspace, const char *name)
{
	return rundir_resolve_kind(out, workspace, RUNDIR_RUNS, name);
}

int rundir_resolve_kind(char **out, const char *workspace, const char *kind, const char *name)
{
	struct strvec ids = STRVEC_INIT;
	const char *found = NULL, *what = strcmp(kind, RUNDIR_RUNS) ? "session" : "run";
	size_t i, n;
	int ret = 0;

	ret = rundir_list_kind(&ids, workspace, kind);
	if (ret < 0)
		goto out;
	if (!ids.nr) {
		ret = err_set(FX_ENOTFOUND, "no %ss yet in %s/.forgex/%s", what, workspace, kind);
		goto out;
	}
	if (!name || !strcmp(name, "last")) {
		found = ids.v[ids.nr - 1];
		goto done;
	}
	n = strlen(name);
	for (i = 0; i < ids.nr; i++) {
		if (!strcmp(ids.v[i], name)) {
			found = ids.v[i];
			break;
		}
		if (!strncmp(ids.v[i], name, n)) {
			if (found) {
				ret = err_set(FX_EINVAL, "%s '%s' is ambiguous: %s, %s, ...", what,
					      name, found, ids.v[i]);
				goto out;
			}
			found = ids.v[i];
		}
	}
	if (!found) {
		ret = err_set(FX_ENOTFOUND, "no %s '%s' (see 'forgex log')", what, name);
		goto out;
	}
done:
	*out = xstrdup(found);
out:
	strvec_clear(&ids);
	return ret;
}

/*
 * The git folder of the work tree whose top is `dir`: `dir`/.git when a
 * folder, or the target of a "gitdir: PATH" file. NULL when none.
 */
static char *git_dir_of(const char *dir)
{
	struct buf p = BUF_INIT, c = BUF_INIT;
	char *ret = NULL;

	path_join(&p, dir, ".git");
	if (fsutil_is_dir(p.buf)) {
		ret = buf_detach(&p, NULL);
	} else if (!fsutil_read_file(&c, p.buf, 4096) && !strncmp(c.buf, "gitdir:", 7)) {
		struct buf t = BUF_INIT;

		buf_addstr(&t, c.buf + 7);
		buf_trim(&t);
		if (t.buf[0] == '/') {
			ret = buf_detach(&t, NULL);
		} else {
			buf_reset(&p);
			path_join(&p, dir, t.buf);
			ret = buf_detach(&p, NULL);
		}
		buf_release(&t);
	}
	buf_release(&p);
	buf_release(&c);
	return ret;
}

/*
 * Remove what a write of info/exclude killed before its rename left in
 * info/ (".exclude.fx-XXXXXXXX.tmp", fsutil_tmp_create()'s name, so only
 * forgex's own). Only one a minute old: runs of a batch share the common
 * git folder, and another's write may be under way.
 */
static void sweep_exclude_tmps(int ifd)
{
	int dfd = dup(ifd);
	DIR *dir = dfd < 0 ? NULL : fdopendir(dfd);
	struct dirent *de;
	time_t now = time(NULL);

	if (!dir) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	while ((de = readdir(dir))) {
		struct stat st;

		if (!fsutil_tmp_is_for(de->d_name, "exclude") ||
		    fstatat(ifd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) || st.st_mtime > now - 60)
			continue;
		unlinkat(ifd, de->d_name, 0);
	}
	closedir(dir);
}

int rundir_exclude(const char *workspace, int *added)
{
	static const char *const excluded[] = { ".forgex/runs/", ".forgex/checkpoints/",
						".forgex/map/", ".forgex/sessions/",
						".forgex/history" };
	struct buf common = BUF_INIT, path = BUF_INIT, content = BUF_INIT, c = BUF_INIT;
	char *gitdir = git_dir_of(workspace);
	size_t i;
	int ret = 0, n_added = 0, cfd = -1, ifd = -1, xfd = -1;

	if (!gitdir)
		goto out;
	path_join(&path, gitdir, "commondir");
	if (!fsutil_read_file(&c, path.buf, 4096)) {
		buf_trim(&c);
		if (c.buf[0] == '/')
			buf_addbuf(&common, &c);
		else
			path_join(&common, gitdir, c.buf);
	} else {
		err_clear();
		buf_addstr(&common, gitdir);
	}
	/*
	 * info/ and info/exclude are opened without following links: a link
	 * planted there (by a command run unconfined, say) is an error that
	 * names it, never a write elsewhere.
	 */
	cfd = open(common.buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cfd < 0) {
		ret = err_set_errno(FX_EOS, "cannot open the git folder %s", common.buf);
		goto out;
	}
	if (mkdirat(cfd, "info", 0755) < 0 && errno != EEXIST) {
		ret = err_set_errno(FX_EOS, "cannot create %s/info", common.buf);
		goto out;
	}
	ifd = openat(cfd, "info", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (ifd < 0) {
		ret = err_set_errno(FX_EDENIED, "%s/info is not a folder of its own (a link?); "
				    "not writing the exclude file through it", common.buf);
		goto out;
	}
	sweep_exclude_tmps(ifd);
	xfd = openat(ifd, "exclude", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (xfd >= 0) {
		struct stat st;

		if (fstat(xfd, &st) < 0 || !S_ISREG(st.st_mode)) {
			ret = err_set(FX_EDENIED, "%s/info/exclude is not a regular file; not "
				      "touching it", common.buf);
			goto out;
		}
		ret = fsutil_read_fd(&content, xfd, 16u << 20);
		if (ret < 0)
			goto out;
	} else if (errno == ELOOP) {
		ret = err_set(FX_EDENIED, "%s/info/exclude is a symbolic link; not following it",
			      common.buf);
		goto out;
	} else if (errno != ENOENT) {
		ret = err_set_errno(FX_EOS, "cannot read %s/info/exclude", common.buf);
		goto out;
	}
	for (i = 0; i < ARRAY_SIZE(excluded); i++) {
		const char *p = content.buf;
		size_t n = strlen(excluded[i]);
		int present = 0;

		while (p && *p) {
			if (!strncmp(p, excluded[i], n) && (p[n] == '\n' || p[n] == '\0'))
				present = 1;
			p = strchr(p, '\n');
			if (p)
				p++;
		}
		if (present)
			continue;
		if (content.len && content.buf[content.len - 1] != '\n')
			buf_addch(&content, '\n');
		if (!n_added)
			buf_addstr(&content, "# forgex run data\n");
		buf_addf(&content, "%s\n", excluded[i]);
		n_added++;
	}
	if (n_added)
		ret = fsutil_write_atomic_at(ifd, "exclude", content.buf, content.len, 0644);
out:
	if (xfd >= 0)
		close(xfd);
	if (ifd >= 0)
		close(ifd);
	if (cfd >= 0)
		close(cfd);
	if (added)
		*added = ret < 0 ? 0 : n_added;
	free(gitdir);
	buf_release(&common);
	buf_release(&path);
	buf_release(&content);
	buf_release(&c);
	return ret;
}
