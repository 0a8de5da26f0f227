#ifndef FX_BUF_H
#define FX_BUF_H

/*
 * Growable byte buffers, after git's strbuf.
 *
 * A `struct buf` initialised with BUF_INIT always has a NUL-terminated
 * `buf` (never NULL), so it can be printed without checks. `len` excludes
 * the terminator. Growth dies on out-of-memory.
 *
 * Hard cap: a buffer with `max` > 0 refuses, through buf_add_capped(),
 * any addition that would make it longer than `max` (curl's dynbuf). Use it
 * for HTTP bodies and anything a peer controls.
 *
 * Head and tail: `struct headtail` keeps at most `head_max` first bytes and
 * `tail_max` last bytes of a stream of any length, counting what it drops,
 * so a child that prints a gigabyte costs a fixed amount of memory.
 */

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

struct buf {
	char *buf;
	size_t len;
	size_t alloc;
	size_t max;	/* 0: no cap; else the most buf_add_capped() allows */
};

extern char buf_slopbuf[];
#define BUF_INIT { buf_slopbuf, 0, 0, 0 }
#define BUF_INIT_CAP(cap) { buf_slopbuf, 0, 0, (cap) }

void buf_init(struct buf *b, size_t hint);
/** Free the contents; the buffer is left as BUF_INIT (keeping `max`). */
void buf_release(struct buf *b);
/** Take the contents (NUL-terminated, caller frees); `*len` may be NULL. */
char *buf_detach(struct buf *b, size_t *len);
/** Make room for `extra` more bytes. */
void buf_grow(struct buf *b, size_t extra);
void buf_setlen(struct buf *b, size_t len);
static inline void buf_reset(struct buf *b) { buf_setlen(b, 0); }

void buf_add(struct buf *b, const void *data, size_t len);
void buf_addstr(struct buf *b, const char *s);
void buf_addch(struct buf *b, int c);
void buf_addbuf(struct buf *b, const struct buf *other);
void buf_addf(struct buf *b, const char *fmt, ...) FX_PRINTF(2, 3);
void buf_vaddf(struct buf *b, const char *fmt, va_list ap);

/**
 * Append unless the result would exceed `b->max` (when set). Returns 0, or
 * FX_ELIMIT (with a message) and leaves the buffer unchanged.
 */
int buf_add_capped(struct buf *b, const void *data, size_t len);

/** Remove trailing whitespace. */
void buf_rtrim(struct buf *b);
/** Remove leading and trailing whitespace. */
void buf_trim(struct buf *b);

/** Append `s` quoted for a POSIX shell, only when it needs quoting. */
void buf_add_shell_quoted(struct buf *b, const char *s);

/** Head and tail of a stream; see the overview. */
struct headtail {
	struct buf head;
	char *tail;		/* ring of tail_max bytes */
	size_t head_max, tail_max;
	size_t tail_len;	/* bytes in the ring, <= tail_max */
	size_t tail_pos;	/* next write position in the ring */
	uint64_t total;		/* bytes seen */
};

void headtail_init(struct headtail *h, size_t head_max, size_t tail_max);
void headtail_add(struct headtail *h, const void *data, size_t len);
/** Bytes seen but not kept. */
uint64_t headtail_dropped(const struct headtail *h);
/**
 * Append what was kept to `out`: the head, then, when bytes were dropped,
 * a line "\n[... forgex: N bytes omitted ...]\n", then the tail.
 */
void headtail_render(const struct headtail *h, struct buf *out);
void headtail_release(struct headtail *h);

#endif
