/* forgex's own messages, wrapped to the terminal; see textwrap.h. */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "base/termsafe.h"
#include "cli/textwrap.h"

#define WRAP_INDENT 2

unsigned textwrap_width(int fd)
{
	struct winsize ws;

	if (!isatty(fd) || ioctl(fd, TIOCGWINSZ, &ws) < 0)
		return 0;
	return ws.ws_col;
}

static size_t points(const char *s, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++)
		n += ((unsigned char)s[i] & 0xc0) != 0x80;
	return n;
}

/* The bytes of the first `n` code points of `s`. */
static size_t bytes_of(const char *s, size_t len, size_t n)
{
	size_t i = 0;

	while (i < len && n) {
		i++;
		while (i < len && ((unsigned char)s[i] & 0xc0) == 0x80)
			i++;
		n--;
	}
	return i;
}

/* One line (no newline in it) into rows. */
static void wrap_line(struct buf *out, const char *s, size_t len, unsigned width, unsigned indent)
{
	size_t col = 0, i = 0;
	int first = 1;

	while (i < len) {
		size_t ws = i, w, wlen, room;

		while (i < len && s[i] == ' ')
			i++;
		w = i;
		while (i < len && s[i] != ' ')
			i++;
		wlen = points(s + w, i - w);
		if (w == i) {
			/* trailing spaces: kept if they fit */
			if (col + (i - ws) <= width)
				buf_add(out, s + ws, i - ws);
			break;
		}
		if (col && col + (w - ws) + wlen > width) {
			buf_addf(out, "\n%*s", (int)indent, "");
			col = indent;
			first = 0;
		} else if (col || first) {
			/* the spaces before the word (and a line's own indentation) */
			buf_add(out, s + ws, w - ws);
			col += w - ws;
		}
		/* a word longer than a row: as much as fits, then the rest on the next */
		while (col + wlen > width && wlen) {
			room = width > col ? width - col : 0;
			if (!room) {
				buf_addf(out, "\n%*s", (int)indent, "");
				col = indent;
				continue;
			}
			{
				size_t b = bytes_of(s + w, i - w, room);

				buf_add(out, s + w, b);
				w += b;
				wlen -= room;
				buf_addf(out, "\n%*s", (int)indent, "");
				col = indent;
			}
		}
		buf_add(out, s + w, i - w);
		col += wlen;
		first = 0;
	}
}

void textwrap(struct buf *out, const char *text, size_t len, unsigned width, unsigned indent)
{
	const char *p = text, *end = text + len;

	if (!width || indent + 8 > width) {
		buf_add(out, text, len);
		return;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		wrap_line(out, p, n, width, indent);
		if (nl)
			buf_addch(out, '\n');
		p += n + (nl != NULL);
	}
}

void textwrap_printf(FILE *f, const char *fmt, ...)
{
	struct buf safe = BUF_INIT, out = BUF_INIT;
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = xstrvfmt(fmt, ap);
	va_end(ap);
	buf_add_termsafe(&safe, s, strlen(s), TERMSAFE_MULTILINE);
	textwrap(&out, safe.buf, safe.len, textwrap_width(fileno(f)), WRAP_INDENT);
	fwrite(out.buf, 1, out.len, f);
	free(s);
	buf_release(&safe);
	buf_release(&out);
}
