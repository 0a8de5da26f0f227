#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/path.h"

#define MAX_SYMLINKS 40

/* Drop the last component of the absolute path in `b` ("/" stays "/"). */
static void pop_component(struct buf *b)
{
	while (b->len > 1 && b->buf[b->len - 1] != '/')
		b->len--;
	if (b->len > 1)
		b->len--;
	buf_setlen(b, b->len);
}

int path_resolve_lenient(char **out, const char *path)
{
	struct buf res = BUF_INIT, todo = BUF_INIT, link = BUF_INIT;
	int links = 0, ret = 0;
	size_t pos = 0;

	if (path[0] != '/')
		return err_set(FX_EINVAL, "path '%s' is not absolute", path);
	buf_addstr(&todo, path);
	buf_addch(&res, '/');
	while (pos < todo.len) {
		size_t start, n;
		struct stat st;

		while (pos < todo.len && todo.buf[pos] == '/')
			pos++;
		start = pos;
		while (pos < todo.len && todo.buf[pos] != '/')
			pos++;
		n = pos - start;
		if (!n || (n == 1 && todo.buf[start] == '.'))
			continue;
		if (n == 2 && todo.buf[start] == '.' && todo.buf[start + 1] == '.') {
			pop_component(&res);
			continue;
		}
		if (res.len > 1)
			buf_addch(&res, '/');
		buf_add(&res, todo.buf + start, n);
		if (lstat(res.buf, &st) < 0 || !S_ISLNK(st.st_mode))
			continue;
		if (++links > MAX_SYMLINKS) {
			ret = err_set(FX_ELIMIT, "too many levels of symbolic links in '%s'", path);
			goto out;
		}
		buf_reset(&link);
		buf_grow(&link, PATH_MAX);
		{
			ssize_t r = readlink(res.buf, link.buf, link.alloc - 1);

			if (r < 0) {
				ret = err_set_errno(FX_EOS, "cannot read link '%s'", res.buf);
				goto out;
			}
			buf_setlen(&link, (size_t)r);
		}
		/* Replace the link by its target, followed by what is left. */
		pop_component(&res);
		if (link.buf[0] == '/')
			buf_setlen(&res, 1);
		buf_add(&link, todo.buf + pos, todo.len - pos);
		buf_reset(&todo);
		buf_addbuf(&todo, &link);
		pos = 0;
	}
	*out = buf_detach(&res, NULL);
out:
	buf_release(&res);
	buf_release(&todo);
	buf_release(&link);
	return ret;
}

int path_is_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (n == 1 && dir[0] == '/')
		return path[0] == '/';
	if (strncmp(path, dir, n))
		return 0;
	return path[n] == '\0' || path[n] == '/';
}

int path_resolve_in_workspace(char **out, const char *workspace, const char *path)
{
	struct buf joined = BUF_INIT;
	char *ws = NULL, *res = NULL;
	int ret;

	ws = realpath(workspace, NULL);
	if (!ws) {
		if (errno == ENOMEM)
			die("out of memory");
		return err_set_errno(FX_ENOTFOUND, "cannot resolve workspace '%s'", workspace);
	}
	if (path[0] == '/')
		buf_addstr(&joined, path);
	else
		path_join(&joined, ws, path);
	ret = path_resolve_lenient(&res, joined.buf);
	if (ret < 0)
		goto out;
	if (!path_is_within(res, ws)) {
		ret = err_set(FX_EDENIED, "'%s' resolves to '%s', outside the workspace '%s'",
			      path, res, ws);
		goto out;
	}
	*out = res;
	res = NULL;
out:
	free(res);
	free(ws);
	buf_release(&joined);
	return ret;
}

void path_join(struct buf *out, const char *a, const char *b)
{
	size_t n = strlen(a);

	buf_add(out, a, n);
	while (*b == '/')
		b++;
	if (n && a[n - 1] != '/' && *b)
		buf_addch(out, '/');
	buf_addstr(out, b);
}

void path_basename(struct buf *out, const char *path)
{
	size_t end = strlen(path), start;

	while (end > 0 && path[end - 1] == '/')
		end--;
	start = end;
	while (start > 0 && path[start - 1] != '/')
		start--;
	buf_add(out, path + start, end - start);
}

void path_dirname(struct buf *out, const char *path)
{
	size_t end = strlen(path);

	while (end > 1 && path[end - 1] == '/')
		end--;
	while (end > 0 && path[end - 1] != '/')
		end--;
	if (!end) {
		buf_addch(out, '.');
		return;
	}
	while (end > 1 && path[end - 1] == '/')
		end--;
	buf_add(out, path, end);
}

void path_relative(struct buf *out, const char *path, const char *base)
{
	size_t n = strlen(base);

	if (path_is_within(path, base)) {
		const char *rest = path + n;

		while (*rest == '/')
			rest++;
		buf_addstr(out, *rest ? rest : ".");
		return;
	}
	buf_addstr(out, path);
}
