/*
 * The line editor's history file (see lineedit.h): opened beneath its
 * workspace's .forgex/ without following a link, read from its end,
 * entries escaped one a line, compacted when it grows past the limit, and
 * turned off (memory only) with the reason when it cannot be trusted.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <histedit.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/log.h"
#include "base/strvec.h"
#include "base/termsafe.h"
#include "cli/lineedit_int.h"
#include "pipeline/rundir.h"

/* -- history file --------------------------------------------------------- */

static void le_hist_refuse(struct lineedit *le, const char *why)
{
	if (le->hist_off)
		return;
	le->hist_off = 1;
	buf_reset(&le->hist_problem);
	buf_addstr(&le->hist_problem, why);
	log_warn("history is kept in memory only for this session: %s", why);
}

/*
 * Open the history file with `flags`: beneath its workspace without
 * following links when it is under .forgex/, else with O_NOFOLLOW; then
 * only a regular file of ours with one link is accepted. The descriptor,
 * FX_ENOTFOUND, or another FX_E* with the reason recorded.
 */
static int le_hist_open(struct lineedit *le, int flags)
{
	struct stat st;
	int fd;

	if (le->hist_ws) {
		fd = rundir_forgex_open(le->hist_ws, le->hist_rel, flags, 0600);
		if (fd < 0)
			return fd;
	} else {
		fd = open(le->hist_path, flags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0600);
		if (fd < 0) {
			if (errno == ENOENT)
				return err_set(FX_ENOTFOUND, "%s does not exist", le->hist_path);
			if (errno == ELOOP)
				return err_set(FX_EDENIED, "%s is a symbolic link; forgex does not "
					       "follow it", le->hist_path);
			return err_set_errno(FX_EOS, "cannot open %s", le->hist_path);
		}
	}
	if (fstat(fd, &st) < 0) {
		close(fd);
		return err_set_errno(FX_EOS, "cannot open %s", le->hist_path);
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(FX_EDENIED, "%s is not a regular file; forgex does not use it",
			       le->hist_path);
	}
	if (st.st_uid != geteuid()) {
		close(fd);
		return err_set(FX_EDENIED, "%s belongs to another user (uid %ld); forgex does not "
			       "use it", le->hist_path, (long)st.st_uid);
	}
	if (st.st_nlink > 1) {
		close(fd);
		return err_set(FX_EDENIED, "%s has other hard links; forgex does not write "
			       "through them", le->hist_path);
	}
	/* back to blocking I/O on the regular file */
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	return fd;
}

static void le_hist_escape(struct buf *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			buf_addstr(out, "\\\\");
		else if (*s == '\n')
			buf_addstr(out, "\\n");
		else
			buf_addch(out, *s);
	}
	buf_addch(out, '\n');
}

static void le_hist_unescape(struct buf *out, const char *s, size_t len)
{
	size_t i;

	buf_reset(out);
	for (i = 0; i < len; i++) {
		if (s[i] == '\\' && i + 1 < len && (s[i + 1] == 'n' || s[i + 1] == '\\')) {
			buf_addch(out, s[i + 1] == 'n' ? '\n' : '\\');
			i++;
		} else {
			buf_addch(out, s[i]);
		}
	}
	le_sanitize(out);
}

/* Keep `entry` as the newest in memory (our list and libedit's). */
static void le_hist_remember(struct lineedit *le, const char *entry)
{
	HistEvent ev;

	strvec_push(&le->entries, entry);
	if (le->entries.nr > le->hist_max) {
		free((char *)le->entries.v[0]);
		memmove(le->entries.v, le->entries.v + 1, (le->entries.nr - 1) * sizeof(char *));
		le->entries.nr--;
		le->entries.v[le->entries.nr] = NULL;
	}
	if (le->hist)
		history(le->hist, &ev, H_ENTER, entry);
}

/* Rewrite the file with the entries in memory (atomically, in its folder). */
static void le_hist_compact(struct lineedit *le)
{
	struct buf data = BUF_INIT;
	char *dir, *slash;
	const char *name;
	int dfd, fd;
	size_t i;

	/* the file must still be one we accept before it is replaced */
	fd = le_hist_open(le, O_RDONLY);
	if (fd < 0) {
		if (fd != FX_ENOTFOUND)
			le_hist_refuse(le, err_last());
		return;
	}
	close(fd);
	for (i = 0; i < le->entries.nr; i++)
		le_hist_escape(&data, le->entries.v[i]);
	if (le->hist_ws) {
		dir = xstrdup(le->hist_rel);
		slash = strrchr(dir, '/');
		if (slash)
			*slash = '\0';
		dfd = slash ? rundir_forgex_open(le->hist_ws, dir, O_DIRECTORY, 0)
			    : rundir_forgex_open(le->hist_ws, "", O_DIRECTORY, 0);
		name = strrchr(le->hist_rel, '/') ? strrchr(le->hist_rel, '/') + 1 : le->hist_rel;
		free(dir);
		if (dfd >= 0) {
			if (fsutil_write_atomic_at(dfd, name, data.buf, data.len, 0600) == 0)
				le->file_entries = le->entries.nr;
			close(dfd);
		}
	} else if (fsutil_write_atomic(le->hist_path, data.buf, data.len, 0600) == 0) {
		le->file_entries = le->entries.nr;
	}
	buf_release(&data);
}

void le_hist_load(struct lineedit *le)
{
	struct buf data = BUF_INIT, entry = BUF_INIT;
	size_t total = 0, start = 0, i;
	struct stat st;
	int fd, cut = 0;

	fd = le_hist_open(le, O_RDONLY);
	if (fd < 0) {
		if (fd != FX_ENOTFOUND)
			le_hist_refuse(le, err_last());
		err_clear();
		return;
	}
	if (fstat(fd, &st) == 0 && st.st_size > HIST_READ_MAX) {
		/* only the newest end; the cut line is skipped below */
		if (lseek(fd, st.st_size - HIST_READ_MAX, SEEK_SET) >= 0)
			cut = 1;
	}
	if (fsutil_read_fd(&data, fd, HIST_READ_MAX) < 0) {
		close(fd);
		le_hist_refuse(le, err_last());
		buf_release(&data);
		return;
	}
	close(fd);
	if (cut) {
		char *nl = memchr(data.buf, '\n', data.len);

		start = nl ? (size_t)(nl - data.buf) + 1 : data.len;
	}
	for (i = start; i < data.len; i = start) {
		char *nl = memchr(data.buf + i, '\n', data.len - i);
		size_t end = nl ? (size_t)(nl - data.buf) : data.len;

		start = nl ? end + 1 : data.len;
		total++;
		if (end - i > HIST_ENTRY_MAX)
			continue;
		le_hist_unescape(&entry, data.buf + i, end - i);
		if (!entry.len)
			continue;
		if (le->entries.nr && !strcmp(le->entries.v[le->entries.nr - 1], entry.buf))
			continue;
		le_hist_remember(le, entry.buf);
	}
	le->file_entries = total;
	buf_release(&entry);
	buf_release(&data);
	if (cut || total > 2 * le->hist_max)
		le_hist_compact(le);
}

void lineedit_history_add(struct lineedit *le, const char *entry)
{
	struct buf line = BUF_INIT;
	int fd;

	if (!le || !entry || !*entry)
		return;
	if (le->entries.nr && !strcmp(le->entries.v[le->entries.nr - 1], entry))
		return;
	le_hist_remember(le, entry);
	if (!le->hist_path || le->hist_off || strlen(entry) > HIST_ENTRY_MAX)
		return;
	fd = le_hist_open(le, O_WRONLY | O_APPEND | O_CREAT);
	if (fd < 0) {
		le_hist_refuse(le, err_last());
		err_clear();
		return;
	}
	le_hist_escape(&line, entry);
	/* one write: entries of two sessions do not interleave */
	if (fsutil_write_all(fd, line.buf, line.len) < 0)
		le_hist_refuse(le, err_last());
	close(fd);
	buf_release(&line);
	le->file_entries++;
	if (le->file_entries > 2 * le->hist_max)
		le_hist_compact(le);
	err_clear();
}

const char *lineedit_history_problem(const struct lineedit *le)
{
	return le ? le->hist_problem.buf : "";
}
