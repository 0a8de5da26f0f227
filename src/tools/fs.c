#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/redact.h"
#include "base/utf8.h"
#include "sandbox/permissions.h"
#include "tools/fs.h"
#include "ws/ignore.h"

/* ---- shared helpers ---- */

int fs_is_binary(const char *data, size_t len, int whole, struct buf *why)
{
	size_t n = len < FS_SNIFF_BYTES ? len : FS_SNIFF_BYTES, i = 0;
	const char *nul = memchr(data, '\0', n);

	if (nul) {
		buf_addf(why, "NUL byte at offset %zu", (size_t)(nul - data));
		return 1;
	}
	while (i < n) {
		uint32_t cp;
		size_t l = utf8_decode(data + i, n - i, &cp);

		if (!l && (!whole || n < len) && utf8_incomplete(data + i, n - i))
			break;	/* cut by the sniff window, not by the file */
		if (!l) {
			buf_addf(why, "invalid UTF-8 at offset %zu", i);
			return 1;
		}
		i += l;
	}
	return 0;
}

int fs_check_allowed(const char *rel, const char *shown, int modify)
{
	const char *p = rel;

	while (*p) {
		const char *e = strchrnul(p, '/');

		if (e - p == 4 && !strncasecmp(p, ".git", 4))
			return err_set(FX_EDENIED, "'%s' is inside a .git folder, which the tools do not "
				       "touch; use git_status and git_diff", shown);
		if (modify && e - p == 7 && !strncasecmp(p, ".forgex", 7))
			return err_set(FX_EDENIED, "'%s' is inside .forgex, forgex's own folder (its "
				       "configuration, runs and checkpoints); the tools do not change it",
				       shown);
		p = *e ? e + 1 : e;
	}
	return 0;
}

static size_t count_placeholders(const char *s, size_t len)
{
	size_t n = 0, pl = strlen(REDACTED);
	const char *p = s, *end = s + len, *hit;

	while (p < end && (hit = memmem(p, (size_t)(end - p), REDACTED, pl))) {
		n++;
		p = hit + pl;
	}
	return n;
}

int fs_check_placeholder(const char *old, size_t old_len, const char *new_text, size_t new_len,
			 const char *shown)
{
	if (count_placeholders(new_text, new_len) <= count_placeholders(old, old_len))
		return 0;
	return err_set(FX_EINVAL, "the new content of '%s' holds " REDACTED ", which stands for a "
		       "secret forgex hid from you; writing it would replace the secret. Change only "
		       "the lines around it with edit_file, leaving the line with the secret out of "
		       "old_string and new_string", shown);
}

void fs_add_lineno(struct buf *out, size_t n)
{
	buf_addf(out, "%6zu\t", n);
}

size_t fs_count_lines(const char *data, size_t len)
{
	size_t n = 0;
	const char *p = data, *end = data + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		n++;
		if (!nl)
			break;
		p = nl + 1;
	}
	return n;
}

static const char *type_name(mode_t type)
{
	switch (type) {
	case S_IFDIR: return "a folder";
	case S_IFLNK: return "a symbolic link";
	case S_IFIFO: return "a named pipe";
	case S_IFSOCK: return "a socket";
	case S_IFCHR: case S_IFBLK: return "a device";
	default: return "not a regular file";
	}
}

int fs_load_text(struct buf *out, struct wspath_loc *loc, struct tool_ctx *ctx, const char *path,
		 size_t max, unsigned flags)
{
	struct stat st;
	int fd, ret;

	ret = wspath_locate(loc, &ctx->root, path, WSPATH_FOLLOW | flags);
	if (ret < 0)
		return ret;
	if (loc->type != S_IFREG)
		return err_set(FX_EINVAL, "'%s' is %s%s", path, type_name(loc->type),
			       loc->type == S_IFDIR ? "; use list_dir" : "");
	fd = wspath_open_loc(&ctx->root, loc, O_RDONLY | O_NONBLOCK);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return err_set(FX_EDENIED, "'%s' changed while it was being opened; try again", path);
	}
	if ((size_t)st.st_size > max) {
		close(fd);
		return err_set(FX_ELIMIT, "'%s' is %lld bytes, more than the %zu bytes the tools load",
			       path, (long long)st.st_size, max);
	}
	ret = fsutil_read_fd(out, fd, max);
	close(fd);
	if (ret < 0)
		return err_prefix(ret, "cannot read '%s'", path);
	return 0;
}

static int fs_before_tmp(void *data, const char *rel, const char *tmp)
{
	return tool_ctx_before_tmp(data, rel, tmp);
}

struct fsutil_tmp_hook fs_tmp_hook(struct tool_ctx *ctx, const char *rel)
{
	struct fsutil_tmp_hook h = { fs_before_tmp, ctx, rel };

	return h;
}

int fs_write_loc(struct tool_ctx *ctx, const struct wspath_loc *loc, const void *data, size_t len)
{
	/* the journal names the temporary file before it exists: a kill leaves a known name */
	const struct fsutil_tmp_hook hook = fs_tmp_hook(ctx, loc->rel);
	int ret = tool_ctx_before_change(ctx, loc);

	if (ret < 0)
		return err_prefix(ret, "'%s'", loc->rel);
	ret = fsutil_write_atomic_hooked(loc->dirfd, loc->name, data, len, 0644, &hook);

	if (ret < 0)
		return err_prefix(ret, "cannot write '%s'", loc->rel);
	tool_ctx_changed(ctx, loc->rel);
	return 0;
}

int fs_delete_loc(struct tool_ctx *ctx, const struct wspath_loc *loc, const char *shown)
{
	/* the run's journal keeps the bytes first (delete_file, apply_patch) */
	int ret = loc->type ? tool_ctx_before_change(ctx, loc) : 0;

	if (ret < 0)
		return err_prefix(ret, "'%s'", loc->rel);
	if (unlinkat(loc->dirfd, loc->name, 0) < 0)
		return errno == ENOENT ? err_set(FX_ENOTFOUND, "'%s' does not exist", shown)
				       : err_set_errno(FX_EOS, "cannot delete '%s'", shown);
	tool_ctx_changed(ctx, loc->rel);
	return 0;
}

/* ---- read_file ---- */

static int tool_read_file(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	const char *path = tool_arg_str(args, "path");
	long long start = tool_arg_int(args, "start_line", 1);
	long long end = tool_arg_int(args, "end_line", 0);
	struct wspath_loc loc = WSPATH_LOC_INIT;
	struct buf data = BUF_INIT, why = BUF_INIT;
	size_t total, lineno = 0, shown = 0, first = 0, last = 0, pos = 0, base = result->len;
	int ret, cut = 0;

	if (end && end < start) {
		ret = err_set(FX_EINVAL, "end_line (%lld) is before start_line (%lld)", end, start);
		goto out;
	}
	ret = fs_load_text(&data, &loc, ctx, path, ctx->limits.file_bytes, 0);
	if (ret < 0)
		goto out;
	if (fs_is_binary(data.buf, data.len, 1, &why)) {
		ret = err_set(FX_EINVAL, "'%s' looks like a binary file (%s, %zu bytes); not shown",
			      path, why.buf, data.len);
		goto out;
	}
	if (!data.len) {
		buf_addf(result, "(%s is empty)\n", loc.rel);
		goto out;
	}
	total = fs_count_lines(data.buf, data.len);
	if ((size_t)start > total) {
		ret = err_set(FX_EINVAL, "start_line %lld is past the end of '%s', which has %zu lines",
			      start, path, total);
		goto out;
	}
	while (pos < data.len) {
		const char *line = data.buf + pos;
		const char *nl = memchr(line, '\n', data.len - pos);
		size_t n = nl ? (size_t)(nl - line) : data.len - pos;

		pos += n + (nl != NULL);
		lineno++;
		if (lineno < (size_t)start)
			continue;
		if ((end && lineno > (size_t)end) || shown >= ctx->limits.read_lines)
			break;
		if (result->len - base + n + 8 > ctx->limits.read_bytes) {
			size_t used = result->len - base;
			size_t room = ctx->limits.read_bytes > used + 8 ?
				      ctx->limits.read_bytes - used - 8 : 0;

			if (room && !shown) {
				/* One huge line: show its start rather than nothing. */
				fs_add_lineno(result, lineno);
				buf_add(result, line, utf8_cut(line, n, room));
				buf_addch(result, '\n');
				shown++;
				first = last = lineno;
			}
			cut = 1;
			break;
		}
		fs_add_lineno(result, lineno);
		buf_add(result, line, n);
		buf_addch(result, '\n');
		if (!shown)
			first = lineno;
		last = lineno;
		shown++;
	}
	if (cut)
		buf_addf(result, "[forgex: output cut at %zu bytes: showing lines %zu-%zu of %zu%s; "
			 "read on with start_line=%zu]\n", ctx->limits.read_bytes, first, last, total,
			 last == first && shown == 1 ? " (the line itself was cut)" : "", last + 1);
	else if (last < total && (!end || (size_t)end > last))
		buf_addf(result, "[forgex: showing lines %zu-%zu of %zu (at most %zu lines at a time); "
			 "read on with start_line=%zu]\n", first, last, total,
			 ctx->limits.read_lines, last + 1);
out:
	wspath_loc_release(&loc);
	buf_release(&data);
	buf_release(&why);
	return ret;
}

/* ---- list_dir ---- */

struct lister {
	struct tool_ctx *ctx;
	struct ignore_tree ignore;
	struct buf *out;
	size_t count, max;
	int full;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int list_into(struct lister *l, int dfd, const char *rel, long depth)
{
	struct strvec names = STRVEC_INIT;
	struct buf child = BUF_INIT;
	struct dirent *de;
	DIR *d;
	size_t i;
	int fd = dup(dfd), ret = 0;

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return err_set_errno(FX_EOS, "cannot read folder '%s'", *rel ? rel : ".");
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			strvec_push(&names, de->d_name);
	closedir(d);
	qsort(names.v, names.nr, sizeof(*names.v), cmp_str);
	for (i = 0; i < names.nr && !ret; i++) {
		const char *name = names.v[i];
		struct stat st;
		int ignored;

		if (!strcasecmp(name, ".git"))
			continue;
		if (l->count >= l->max) {
			l->full = 1;
			break;
		}
		buf_reset(&child);
		if (*rel) {
			buf_addstr(&child, rel);
			buf_addch(&child, '/');
		}
		buf_addstr(&child, name);
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;	/* gone since readdir */
		l->count++;
		if (S_ISLNK(st.st_mode)) {
			char target[4096];
			ssize_t n = readlinkat(dfd, name, target, sizeof(target) - 1);

			target[n > 0 ? n : 0] = '\0';
			buf_addf(l->out, "%s -> %s\n", child.buf, target);
			continue;
		}
		ignored = ignore_tree_excluded(&l->ignore, child.buf, S_ISDIR(st.st_mode));
		if (ignored < 0)
			ignored = 0;
		if (S_ISDIR(st.st_mode)) {
			int sub;

			buf_addf(l->out, "%s/%s\n", child.buf, ignored ? "  (ignored; not expanded)" : "");
			if (ignored || depth <= 1)
				continue;
			sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0)
				continue;
			ret = list_into(l, sub, child.buf, depth - 1);
			close(sub);
		} else {
			buf_addf(l->out, "%s%s\n", child.buf, ignored ? "  (ignored)" : "");
		}
	}
	strvec_clear(&names);
	buf_release(&child);
	return ret;
}

static int tool_list_dir(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	const char *path = tool_arg_str(args, "path");
	long long depth = tool_arg_int(args, "depth", 1);
	struct wspath_loc loc = WSPATH_LOC_INIT;
	struct lister l;
	size_t start = result->len;
	int ret, fd = -1;

	memset(&l, 0, sizeof(l));
	if (!path)
		path = ".";
	ret = wspath_locate(&loc, &ctx->root, path, WSPATH_FOLLOW);
	if (ret < 0)
		goto out;
	if (loc.type != S_IFDIR) {
		ret = err_set(FX_EINVAL, "'%s' is %s, not a folder%s", path, type_name(loc.type),
			      loc.type == S_IFREG ? "; use read_file" : "");
		goto out;
	}
	fd = wspath_open_loc(&ctx->root, &loc, O_RDONLY | O_DIRECTORY);
	if (fd < 0) {
		ret = fd;
		goto out;
	}
	l.ctx = ctx;
	l.out = result;
	l.max = ctx->limits.list_entries;
	ret = ignore_tree_init(&l.ignore, &ctx->root);
	if (ret < 0)
		goto out;
	ret = list_into(&l, fd, loc.rel, depth);
	ignore_tree_release(&l.ignore);
	if (ret < 0)
		goto out;
	if (result->len == start)
		buf_addf(result, "(%s is an empty folder)\n", *loc.rel ? loc.rel : "the workspace");
	if (l.full)
		buf_addf(result, "[forgex: stopped after %zu entries; list a sub-folder or use a "
			 "smaller depth]\n", l.max);
out:
	if (fd >= 0)
		close(fd);
	wspath_loc_release(&loc);
	return ret;
}

/* ---- write_file ---- */

/* The deepest path write_file creates: absurd depths are refused, not made. */
#define FS_MAX_NEW_DEPTH 64

/* How many names `path` has ("a/b/c": 3; empty and "." components are not counted). */
static size_t path_depth(const char *path)
{
	size_t n = 0;

	while (*path) {
		size_t len = strcspn(path, "/");

		if (len && !(len == 1 && path[0] == '.'))
			n++;
		path += len;
		while (*path == '/')
			path++;
	}
	return n;
}

static int tool_write_file(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	const char *path = tool_arg_str(args, "path");
	const json_t *content = json_object_get(args, "content");
	struct wspath_loc loc = WSPATH_LOC_INIT;
	size_t len = json_string_length(content);
	const char *data = json_string_value(content);
	mode_t was;
	int ret;

	/* no project needs this, and every tool after it would walk it */
	if (path_depth(path) > FS_MAX_NEW_DEPTH)
		return err_set(FX_EINVAL, "'%.60s...' is %zu folders deep; write_file makes at most "
			       "%d levels (a command can make deeper ones)", path, path_depth(path),
			       FS_MAX_NEW_DEPTH);
	ret = wspath_locate(&loc, &ctx->root, path, WSPATH_FOLLOW | WSPATH_MKDIRS | WSPATH_CHANGE);
	if (ret < 0)
		goto out;
	was = loc.type;
	if (!*loc.name || (was && was != S_IFREG)) {
		ret = err_set(FX_EINVAL, "'%s' is %s; write_file writes regular files only", path,
			      *loc.name ? type_name(was) : "the workspace folder");
		goto out;
	}
	if (memmem(data, len, REDACTED, strlen(REDACTED))) {
		/* what the model saw of this file was redacted: keep the secrets it holds */
		struct buf old = BUF_INIT;
		int fd = was ? openat(loc.dirfd, loc.name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
				      O_CLOEXEC | O_NOCTTY) : -1;

		if (fd >= 0) {
			fsutil_read_fd(&old, fd, ctx->limits.file_bytes);
			close(fd);
		}
		ret = fs_check_placeholder(old.buf, old.len, data, len, path);
		buf_release(&old);
		if (ret < 0)
			goto out;
	}
	ret = fs_write_loc(ctx, &loc, data, len);
	if (ret < 0)
		goto out;
	buf_addf(result, "%s %s: %zu bytes, %zu lines\n", was ? "replaced" : "created", loc.rel,
		 len, fs_count_lines(data, len));
out:
	wspath_loc_release(&loc);
	return ret;
}

/* ---- delete_file ---- */

static int tool_delete_file(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	const char *path = tool_arg_str(args, "path");
	struct wspath_loc loc = WSPATH_LOC_INIT;
	int ret;

	/* Not following a final symlink: deleting a link removes the link. */
	ret = wspath_locate(&loc, &ctx->root, path, WSPATH_CHANGE);
	if (ret < 0)
		goto out;
	if (!*loc.name) {
		ret = err_set(FX_EDENIED, "'%s' is the workspace itself", path);
		goto out;
	}
	if (loc.type == S_IFDIR) {
		ret = tool_ctx_before_change(ctx, &loc);
		if (ret < 0) {
			err_prefix(ret, "'%s'", loc.rel);
			goto out;
		}
		if (unlinkat(loc.dirfd, loc.name, AT_REMOVEDIR) < 0) {
			ret = errno == ENOTEMPTY || errno == EEXIST
				? err_set(FX_EINVAL, "'%s' is a folder that is not empty; "
					  "delete_file removes files and empty folders only", path)
				: err_set_errno(FX_EOS, "cannot remove folder '%s'", path);
			goto out;
		}
		buf_addf(result, "deleted empty folder %s\n", loc.rel);
		tool_ctx_changed(ctx, loc.rel);
	} else {
		ret = fs_delete_loc(ctx, &loc, path);
		if (ret < 0)
			goto out;
		buf_addf(result, "deleted %s%s\n", loc.rel,
			 loc.type == S_IFLNK ? " (the symbolic link, not what it points to)" : "");
	}
out:
	wspath_loc_release(&loc);
	return ret;
}

/* ---- move_file ---- */

static int tool_move_file(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	const char *from = tool_arg_str(args, "from"), *to = tool_arg_str(args, "to");
	struct wspath_loc src = WSPATH_LOC_INIT, dst = WSPATH_LOC_INIT;
	int ret;

	ret = wspath_locate(&src, &ctx->root, from, WSPATH_CHANGE);
	if (ret < 0)
		goto out;
	if (!*src.name) {
		ret = err_set(FX_EDENIED, "'%s' is the workspace itself", from);
		goto out;
	}
	ret = wspath_locate(&dst, &ctx->root, to, WSPATH_MKDIRS | WSPATH_CHANGE);
	if (ret < 0)
		goto out;
	if (dst.type) {
		ret = err_set(FX_EEXISTS, "'%s' already exists; move_file does not overwrite "
			      "(delete it first, or choose another name)", to);
		goto out;
	}
	if ((ret = tool_ctx_before_change(ctx, &src)) < 0 ||
	    (ret = tool_ctx_before_change(ctx, &dst)) < 0) {
		err_prefix(ret, "'%s'", from);
		goto out;
	}
	if (renameat2(src.dirfd, src.name, dst.dirfd, dst.name, RENAME_NOREPLACE) < 0) {
		if (errno == EEXIST) {
			ret = err_set(FX_EEXISTS, "'%s' already exists; move_file does not overwrite", to);
		} else if (errno == EINVAL && src.type == S_IFDIR &&
			   !strncmp(dst.rel, src.rel, strlen(src.rel))) {
			ret = err_set(FX_EINVAL, "cannot move folder '%s' into itself", from);
		} else if (errno == EINVAL || errno == ENOSYS) {
			/* A file system without RENAME_NOREPLACE: hard-link for files, refuse the rest. */
			if (src.type != S_IFREG || linkat(src.dirfd, src.name, dst.dirfd, dst.name, 0) < 0 ||
			    unlinkat(src.dirfd, src.name, 0) < 0)
				ret = err_set_errno(FX_EOS, "cannot move '%s' to '%s' without "
						    "overwriting", from, to);
		} else {
			ret = err_set_errno(FX_EOS, "cannot move '%s' to '%s'", from, to);
		}
		if (ret < 0)
			goto out;
	}
	if (fsync(dst.dirfd) < 0 && errno != EINVAL && errno != EROFS) {
		ret = err_set_errno(FX_EOS, "cannot flush the folder of '%s'", to);
		goto out;
	}
	tool_ctx_changed(ctx, src.rel);
	tool_ctx_changed(ctx, dst.rel);
	buf_addf(result, "moved %s to %s\n", src.rel, dst.rel);
out:
	wspath_loc_release(&src);
	wspath_loc_release(&dst);
	return ret;
}

int tools_register_fs(struct tool_registry *reg)
{
	static const struct tool_def defs[] = {
		{
			"read_file",
			"Read a text file of the workspace. Lines come numbered like `cat -n` "
			"(number, tab, text); the numbers are not part of the file. At most 2000 "
			"lines or 256 KiB at a time: use start_line and end_line (1-based, "
			"inclusive) to read a part or read on. Binary files are refused.",
			"{\"type\":\"object\",\"properties\":{"
			"\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":\"File path, relative to the workspace\"},"
			"\"start_line\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"First line to show (default 1)\"},"
			"\"end_line\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"Last line to show (default: as many as fit)\"}"
			"},\"required\":[\"path\"],\"additionalProperties\":false}",
			PERM_READ, 0, tool_read_file, NULL,
		},
		{
			"list_dir",
			"List a folder of the workspace: one path per line, relative to the workspace, "
			"folders ending in '/', symbolic links as 'link -> target'. depth 1 (default) "
			"lists the folder itself, more goes deeper. .git is not shown; folders ignored "
			"by .gitignore are marked and not expanded.",
			"{\"type\":\"object\",\"properties\":{"
			"\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Folder, relative to the workspace (default: the workspace)\"},"
			"\"depth\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":10,\"description\":\"How many levels to list (default 1)\"}"
			"},\"additionalProperties\":false}",
			PERM_READ, 0, tool_list_dir, NULL,
		},
		{
			"write_file",
			"Create a file or replace its whole content. Missing parent folders are "
			"created. The write is atomic. To change part of an existing file, prefer "
			"edit_file.",
			"{\"type\":\"object\",\"properties\":{"
			"\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":\"File path, relative to the workspace\"},"
			"\"content\":{\"type\":\"string\",\"description\":\"The complete new content\"}"
			"},\"required\":[\"path\",\"content\"],\"additionalProperties\":false}",
			PERM_WRITE, 0, tool_write_file, NULL,
		},
		{
			"delete_file",
			"Delete a file, a symbolic link (not what it points to) or an empty folder. "
			"Folders that are not empty are refused.",
			"{\"type\":\"object\",\"properties\":{"
			"\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Path, relative to the workspace\"}"
			"},\"required\":[\"path\"],\"additionalProperties\":false}",
			PERM_DELETE, 0, tool_delete_file, NULL,
		},
		{
			"move_file",
			"Move or rename a file or folder inside the workspace. Missing parent folders "
			"of the destination are created; an existing destination is never overwritten.",
			"{\"type\":\"object\",\"properties\":{"
			"\"from\":{\"type\":\"string\",\"minLength\":1,\"description\":\"Current path\"},"
			"\"to\":{\"type\":\"string\",\"minLength\":1,\"description\":\"New path\"}"
			"},\"required\":[\"from\",\"to\"],\"additionalProperties\":false}",
			PERM_WRITE | PERM_DELETE, 0, tool_move_file, NULL,
		},
	};
	size_t i;
	int ret;

	for (i = 0; i < ARRAY_SIZE(defs); i++)
		if ((ret = registry_add(reg, &defs[i])) < 0)
			return ret;
	return 0;
}
