#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

char buf_slopbuf[1];

void buf_init(struct buf *b, size_t hint)
{
	b->buf = buf_slopbuf;
	b->len = 0;
	b->alloc = 0;
	b->max = 0;
	if (hint)
		buf_grow(b, hint);
}

void buf_release(struct buf *b)
{
	if (b->alloc)
		free(b->buf);
	b->buf = buf_slopbuf;
	b->len = 0;
	b->alloc = 0;
}

char *buf_detach(struct buf *b, size_t *len)
{
	char *p;

	if (!b->alloc)
		buf_grow(b, 0);
	p = b->buf;
	if (len)
		*len = b->len;
	b->buf = buf_slopbuf;
	b->len = 0;
	b->alloc = 0;
	return p;
}

void buf_grow(struct buf *b, size_t extra)
{
	size_t want;

	if (extra > SIZE_MAX - b->len - 1)
		die("buffer size overflow");
	want = b->len + extra + 1;
	if (want <= b->alloc)
		return;
	if (!b->alloc)
		b->buf = NULL;
	if (want < b->alloc * 3 / 2)
		want = b->alloc * 3 / 2;
	if (want < 64)
		want = 64;
	b->buf = xrealloc(b->buf, want);
	if (!b->alloc)
		b->buf[0] = '\0';
	b->alloc = want;
}

void buf_setlen(struct buf *b, size_t len)
{
	if (len > (b->alloc ? b->alloc - 1 : 0))
		BUG("buf_setlen(%zu) beyond allocation %zu", len, b->alloc);
	b->len = len;
	if (b->alloc)
		b->buf[len] = '\0';
}

void buf_add(struct buf *b, const void *data, size_t len)
{
	if (!len)
		return;
	buf_grow(b, len);
	memcpy(b->buf + b->len, data, len);
	b->len += len;
	b->buf[b->len] = '\0';
}

void buf_addstr(struct buf *b, const char *s)
{
	buf_add(b, s, strlen(s));
}

void buf_addch(struct buf *b, int c)
{
	buf_grow(b, 1);
	b->buf[b->len++] = (char)c;
	b->buf[b->len] = '\0';
}

void buf_addbuf(struct buf *b, const struct buf *other)
{
	buf_add(b, other->buf, other->len);
}

void buf_vaddf(struct buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	if (!b->alloc)
		buf_grow(b, 64);
	va_copy(cp, ap);
	n = vsnprintf(b->buf + b->len, b->alloc - b->len, fmt, cp);
	va_end(cp);
	if (n < 0)
		BUG("bad format string '%s'", fmt);
	if ((size_t)n >= b->alloc - b->len) {
		buf_grow(b, (size_t)n);
		n = vsnprintf(b->buf + b->len, b->alloc - b->len, fmt, ap);
	}
	b->len += (size_t)n;
}

void buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vaddf(b, fmt, ap);
	va_end(ap);
}

int buf_add_capped(struct buf *b, const void *data, size_t len)
{
	if (b->max && (len > b->max || b->len > b->max - len))
		return err_set(FX_ELIMIT, "data exceeds the limit of %zu bytes", b->max);
	buf_add(b, data, len);
	return 0;
}

void buf_rtrim(struct buf *b)
{
	while (b->len && isspace((unsigned char)b->buf[b->len - 1]))
		b->len--;
	if (b->alloc)
		b->buf[b->len] = '\0';
}

void buf_trim(struct buf *b)
{
	size_t i = 0;

	buf_rtrim(b);
	while (i < b->len && isspace((unsigned char)b->buf[i]))
		i++;
	if (i) {
		memmove(b->buf, b->buf + i, b->len - i);
		buf_setlen(b, b->len - i);
	}
}

void buf_add_shell_quoted(struct buf *b, const char *s)
{
	const char *p;
	int plain = *s != '\0';

	for (p = s; *p && plain; p++)
		if (!isalnum((unsigned char)*p) && !strchr("@%+=:,./-_", *p))
			plain = 0;
	if (plain) {
		buf_addstr(b, s);
		return;
	}
	buf_addch(b, '\'');
	for (p = s; *p; p++) {
		if (*p == '\'')
			buf_addstr(b, "'\"'\"'");
		else
			buf_addch(b, *p);
	}
	buf_addch(b, '\'');
}

void headtail_init(struct headtail *h, size_t head_max, size_t tail_max)
{
	buf_init(&h->head, 0);
	h->head_max = head_max;
	h->tail_max = tail_max;
	h->tail = tail_max ? xmalloc(tail_max) : NULL;
	h->tail_len = 0;
	h->tail_pos = 0;
	h->total = 0;
}

void headtail_add(struct headtail *h, const void *data, size_t len)
{
	const char *p = data;
	size_t room, n;

	h->total += len;
	if (h->head.len < h->head_max) {
		room = h->head_max - h->head.len;
		n = len < room ? len : room;
		buf_add(&h->head, p, n);
		p += n;
		len -= n;
	}
	if (!h->tail_max || !len)
		return;
	if (len >= h->tail_max) {
		memcpy(h->tail, p + len - h->tail_max, h->tail_max);
		h->tail_len = h->tail_max;
		h->tail_pos = 0;
		return;
	}
	while (len) {
		n = h->tail_max - h->tail_pos;
		if (n > len)
			n = len;
		memcpy(h->tail + h->tail_pos, p, n);
		h->tail_pos = (h->tail_pos + n) % h->tail_max;
		h->tail_len = h->tail_len + n > h->tail_max ? h->tail_max : h->tail_len + n;
		p += n;
		len -= n;
	}
}

uint64_t headtail_dropped(const struct headtail *h)
{
	return h->total - h->head.len - h->tail_len;
}

void headtail_render(const struct headtail *h, struct buf *out)
{
	uint64_t dropped = headtail_dropped(h);
	size_t start;

	buf_addbuf(out, &h->head);
	if (dropped)
		buf_addf(out, "\n[... forgex: %llu bytes omitted ...]\n",
			 (unsigned long long)dropped);
	if (!h->tail_len)
		return;
	start = h->tail_len < h->tail_max ? 0 : h->tail_pos;
	if (h->tail_len < h->tail_max) {
		buf_add(out, h->tail, h->tail_len);
		return;
	}
	buf_add(out, h->tail + start, h->tail_max - start);
	buf_add(out, h->tail, start);
}

void headtail_release(struct headtail *h)
{
	buf_release(&h->head);
	FREE_AND_NULL(h->tail);
	h->tail_len = h->tail_pos = 0;
	h->total = 0;
}
