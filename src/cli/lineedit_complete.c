/*
 * Tab in the line editor (see lineedit.h): slash commands, and paths
 * bounded to the workspace (resolved lexically, opened beneath it without
 * following a link), @path mentions included.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <histedit.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/strvec.h"
#include "base/termsafe.h"
#include "base/utf8.h"
#include "cli/lineedit_int.h"

/* -- completion ------------------------------------------------------------ */

struct cands {
	struct strvec v;	/* the full words (a folder ends in '/') */
	size_t dropped;
};

/* Lexically resolve `path` (absolute) into `out`: no ".", "..", "//". */
static void le_normalize(struct buf *out, const char *path)
{
	const char *p = path;

	buf_reset(out);
	while (*p) {
		const char *e;
		size_t n;

		while (*p == '/')
			p++;
		e = strchrnul(p, '/');
		n = (size_t)(e - p);
		if (n == 0 || (n == 1 && p[0] == '.')) {
			/* nothing */
		} else if (n == 2 && p[0] == '.' && p[1] == '.') {
			char *s = strrchr(out->buf, '/');

			buf_setlen(out, s ? (size_t)(s - out->buf) : 0);
		} else {
			buf_addch(out, '/');
			buf_add(out, p, n);
		}
		p = e;
	}
	if (!out->len)
		buf_addch(out, '/');
}

static int le_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Names in the folder of `word` (a path as typed, relative to the cwd)
 * that start with its last part, as `word` completed. Only inside the
 * workspace: the folder is resolved lexically, must lie in it, and is
 * opened beneath it without following a link, so neither ".." nor a link
 * leads out. Links are offered as names, never followed to see if they
 * are folders.
 */
static void le_complete_path(struct lineedit *le, const char *word, struct cands *c)
{
	struct buf abs = BUF_INIT, norm = BUF_INIT;
	const char *slash = strrchr(word, '/'), *base = slash ? slash + 1 : word;
	size_t dirlen = slash ? (size_t)(slash - word) + 1 : 0, wslen, blen = strlen(base);
	size_t scanned = 0;
	char cwd[PATH_MAX];
	const char *rel;
	struct dirent *de;
	DIR *d = NULL;
	int wfd = -1, fd;

	if (!le->ws_real)
		return;
	if (word[0] != '/') {
		if (!getcwd(cwd, sizeof(cwd)))
			return;
		buf_addstr(&abs, cwd);
		buf_addch(&abs, '/');
	}
	buf_add(&abs, word, dirlen);
	le_normalize(&norm, abs.buf);
	wslen = strlen(le->ws_real);
	if (!strcmp(norm.buf, le->ws_real))
		rel = ".";
	else if (!strncmp(norm.buf, le->ws_real, wslen) &&
		 (norm.buf[wslen] == '/' || !strcmp(le->ws_real, "/")))
		rel = norm.buf + wslen + (norm.buf[wslen] == '/');
	else
		goto out;
	wfd = open(le->ws_real, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (wfd < 0)
		goto out;
	fd = fsutil_open_beneath(wfd, rel);
	if (fd < 0)
		goto out;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		goto out;
	}
	while ((de = readdir(d)) && scanned++ < COMPLETE_SCAN_MAX) {
		const char *n = de->d_name;
		int isdir = de->d_type == DT_DIR;
		struct buf w = BUF_INIT;

		if (!strcmp(n, ".") || !strcmp(n, ".."))
			continue;
		if (n[0] == '.' && base[0] != '.')
			continue;
		if (strncmp(n, base, blen) || termsafe_needed(n, strlen(n), 0))
			continue;
		if (de->d_type == DT_UNKNOWN) {
			struct stat st;

			isdir = !fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) && S_ISDIR(st.st_mode);
		}
		buf_add(&w, word, dirlen);
		buf_addstr(&w, n);
		if (isdir)
			buf_addch(&w, '/');
		strvec_push(&c->v, w.buf);
		buf_release(&w);
	}
	if (de)
		c->dropped++;
out:
	if (d)
		closedir(d);
	if (wfd >= 0)
		close(wfd);
	buf_release(&abs);
	buf_release(&norm);
}

static void le_list(struct lineedit *le, const struct cands *c, size_t strip)
{
	int cols = 80, width = 0, per, i;
	size_t k;
	struct winsize ws;

	if (ioctl(le->out_fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		cols = ws.ws_col;
	for (k = 0; k < c->v.nr && k < COMPLETE_LIST_MAX; k++) {
		int w = (int)strlen(c->v.v[k] + strip);

		if (w > width)
			width = w;
	}
	width += 2;
	per = cols / width > 0 ? cols / width : 1;
	fputs("\n", le->fout);
	for (k = 0, i = 0; k < c->v.nr && k < COMPLETE_LIST_MAX; k++) {
		const char *s = c->v.v[k] + strip;

		fputs_termsafe(s, le->fout, 0);
		if (++i == per || k + 1 == c->v.nr) {
			fputs("\n", le->fout);
			i = 0;
		} else {
			fprintf(le->fout, "%*s", width - (int)strlen(s), "");
		}
	}
	if (c->v.nr > COMPLETE_LIST_MAX || c->dropped)
		fprintf(le->fout, "(%s%zu more not shown)\n", c->dropped ? "and more; " : "",
			c->v.nr > COMPLETE_LIST_MAX ? c->v.nr - COMPLETE_LIST_MAX : 0);
	fflush(le->fout);
}

/*
 * Tab: complete the word before the cursor. A first word starting with
 * '/' is a slash command; anything else a path. One candidate: it is
 * inserted whole, then a space (a folder keeps its '/' and no space);
 * several: their common beginning; nothing more to add: a beep, and a
 * second Tab on the same line lists them.
 */
unsigned char le_key_complete(EditLine *el, int ch)
{
	struct lineedit *le = le_of(el);
	const LineInfo *li = el_line(el);
	const char *start = li->cursor, *s;
	struct cands c = { STRVEC_INIT, 0 };
	size_t wlen, common, k, strip;
	char *word, *line;
	int is_cmd = 0, ret = CC_REFRESH_BEEP;

	(void)ch;
	while (start > li->buffer && start[-1] != ' ' && start[-1] != '\t' && start[-1] != '\n')
		start--;
	wlen = (size_t)(li->cursor - start);
	word = xstrndup(start, wlen);
	line = xstrndup(li->buffer, (size_t)(li->lastchar - li->buffer));
	for (s = li->buffer; s < start && (*s == ' ' || *s == '\t'); s++)
		;
	if (s == start && word[0] == '/' && !strchr(word + 1, '/')) {
		for (k = 0; k < le->commands.nr; k++)
			if (!strncmp(le->commands.v[k], word, wlen))
				strvec_push(&c.v, le->commands.v[k]);
		is_cmd = c.v.nr > 0;
	}
	if (!is_cmd && word[0] == '@' && le->ws_real) {
		/* @path, a file to attach: relative to the workspace, offered with its '@' */
		struct cands in = { STRVEC_INIT, 0 };
		char *abs = xstrfmt("%s/%s", le->ws_real, word + 1);

		le_complete_path(le, abs, &in);
		for (k = 0; k < in.v.nr; k++)
			strvec_pushf(&c.v, "@%s", in.v.v[k] + strlen(le->ws_real) + 1);
		c.dropped = in.dropped;
		strvec_clear(&in.v);
		free(abs);
	} else if (!is_cmd) {
		le_complete_path(le, word, &c);
	}
	if (!c.v.nr)
		goto out;
	qsort(c.v.v, c.v.nr, sizeof(*c.v.v), le_cmp);
	common = strlen(c.v.v[0]);
	for (k = 1; k < c.v.nr; k++) {
		size_t n = 0;

		while (n < common && c.v.v[k][n] == c.v.v[0][n])
			n++;
		common = n;
	}
	/* never half a UTF-8 character */
	common = utf8_cut(c.v.v[0], strlen(c.v.v[0]), common);
	if (common < wlen)
		common = wlen;
	if (c.v.nr == 1) {
		const char *w = c.v.v[0];
		size_t n = strlen(w);

		if (n > wlen)
			el_insertstr(el, w + wlen);
		if (n && w[n - 1] != '/')
			el_insertstr(el, " ");
		ret = CC_REFRESH;
	} else if (common > wlen) {
		char *add = xstrndup(c.v.v[0] + wlen, common - wlen);

		el_insertstr(el, add);
		free(add);
		ret = CC_REFRESH;
	} else if (le->tab_line && !strcmp(le->tab_line, line) &&
		   le->tab_cursor == (size_t)(li->cursor - li->buffer)) {
		/* a second Tab: list, without the folder part typed */
		const char *sl = is_cmd ? NULL : strrchr(word, '/');

		strip = sl ? (size_t)(sl - word) + 1 : 0;
		le_list(le, &c, strip);
		ret = CC_REDISPLAY;
	}
out:
	free(le->tab_line);
	le->tab_line = NULL;
	if (ret == CC_REFRESH_BEEP) {
		le->tab_line = line;
		le->tab_cursor = (size_t)(li->cursor - li->buffer);
		line = NULL;
	}
	free(line);
	free(word);
	strvec_clear(&c.v);
	return (unsigned char)ret;
}
