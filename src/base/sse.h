#ifndef FX_SSE_H
#define FX_SSE_H

/*
 * An incremental parser for Server-Sent Events
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html), the
 * framing OpenAI-compatible servers use for streamed replies.
 *
 * Bytes may arrive split at any boundary, even inside a CRLF pair. Lines
 * end with CRLF, LF or CR. "data:" with or without the following space,
 * comment lines (starting with ':'), "event:", and several "data:" lines
 * in one event (joined with "\n") are all understood; "id:" and "retry:"
 * are accepted and ignored. An event is dispatched at the blank line that
 * ends it, and only when it carried data.
 *
 * Memory is bounded: a single event (its data plus the line being read)
 * larger than `max_event` bytes fails with FX_ELIMIT.
 *
 * The caller:
 *   1. sse_init() with a callback;
 *   2. sse_feed() each piece of the body as it arrives;
 *   3. sse_finish() at the end of the body (dispatches an event the
 *      server did not close with a blank line);
 *   4. sse_release().
 */

#include <stddef.h>

#include "base/buf.h"

/** Default cap on one event: 8 MiB. */
#define SSE_MAX_EVENT (8u << 20)

/**
 * Called for each complete event. `event` is the "event:" field or "" for
 * the default; `data` (NUL-terminated, `len` bytes) is the joined data
 * lines. Both are borrowed for the call. Return < 0 (having recorded an
 * error) to stop parsing; sse_feed() then returns that code.
 */
typedef int (*sse_event_fn)(void *cb_data, const char *event, const char *data, size_t len);

struct sse_parser {
	sse_event_fn fn;
	void *cb_data;
	size_t max_event;
	struct buf line;	/* the line being read, without its end */
	struct buf data;	/* data lines of the current event, each + "\n" */
	struct buf event;	/* the current event's type */
	int has_data;		/* a data field was seen in the current event */
	int after_cr;		/* the last byte fed was CR: skip one LF */
	int failed;		/* a callback or a limit stopped the parser */
	size_t events;		/* events dispatched so far */
};

/** Prepare `p`; `max_event` 0 means SSE_MAX_EVENT. */
void sse_init(struct sse_parser *p, sse_event_fn fn, void *cb_data, size_t max_event);

/**
 * Parse `len` more bytes. Returns 0, FX_ELIMIT when an event is too large,
 * or what a callback returned. After a failure further calls return
 * FX_EINVAL without parsing.
 */
int sse_feed(struct sse_parser *p, const char *bytes, size_t len);

/** End of the body: treat a pending line and event as complete. */
int sse_finish(struct sse_parser *p);

/** Free the buffers. */
void sse_release(struct sse_parser *p);

#endif
