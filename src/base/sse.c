#include <string.h>

#include "base/sse.h"

void sse_init(struct sse_parser *p, sse_event_fn fn, void *cb_data, size_t max_event)
{
	memset(p, 0, sizeof(*p));
	p->fn = fn;
	p->cb_data = cb_data;
	p->max_event = max_event ? max_event : SSE_MAX_EVENT;
	buf_init(&p->line, 0);
	buf_init(&p->data, 0);
	buf_init(&p->event, 0);
}

void sse_release(struct sse_parser *p)
{
	buf_release(&p->line);
	buf_release(&p->data);
	buf_release(&p->event);
}

static int too_big(struct sse_parser *p)
{
	p->failed = 1;
	return err_set(FX_ELIMIT, "a streamed event is larger than %zu bytes", p->max_event);
}

static int dispatch(struct sse_parser *p)
{
	int ret = 0;

	if (p->has_data) {
		/* the last data line's "\n" is not part of the data */
		if (p->data.len)
			buf_setlen(&p->data, p->data.len - 1);
		p->events++;
		ret = p->fn(p->cb_data, p->event.buf, p->data.buf, p->data.len);
		if (ret < 0)
			p->failed = 1;
	}
	buf_reset(&p->data);
	buf_reset(&p->event);
	p->has_data = 0;
	return ret;
}

/* One complete line (without its end) in p->line. */
static int process_line(struct sse_parser *p)
{
	const char *l = p->line.buf, *colon, *value;
	size_t n = p->line.len, name_len, value_len;

	if (!n)
		return dispatch(p);
	if (l[0] == ':')
		return 0;	/* comment, e.g. ": keep-alive" */
	colon = memchr(l, ':', n);
	if (colon) {
		name_len = (size_t)(colon - l);
		value = colon + 1;
		value_len = n - name_len - 1;
		if (value_len && *value == ' ') {
			value++;
			value_len--;
		}
	} else {
		name_len = n;
		value = l + n;
		value_len = 0;
	}
	if (name_len == 4 && !memcmp(l, "data", 4)) {
		if (p->data.len + value_len + 1 > p->max_event)
			return too_big(p);
		buf_add(&p->data, value, value_len);
		buf_addch(&p->data, '\n');
		p->has_data = 1;
	} else if (name_len == 5 && !memcmp(l, "event", 5)) {
		if (value_len > p->max_event)
			return too_big(p);
		buf_reset(&p->event);
		buf_add(&p->event, value, value_len);
	}
	/* "id", "retry" and unknown fields are ignored, as the standard says */
	return 0;
}

int sse_feed(struct sse_parser *p, const char *bytes, size_t len)
{
	size_t i = 0;
	int ret;

	if (p->failed)
		return err_set(FX_EINVAL, "the event stream parser already failed");
	while (i < len) {
		const char *start = bytes + i;
		size_t rest = len - i, run;

		if (p->after_cr) {
			p->after_cr = 0;
			if (*start == '\n') {
				i++;
				continue;
			}
		}
		/* copy the run of ordinary bytes up to the next line end */
		for (run = 0; run < rest && start[run] != '\n' && start[run] != '\r'; run++)
			;
		if (run) {
			if (p->line.len + run + p->data.len > p->max_event)
				return too_big(p);
			buf_add(&p->line, start, run);
			i += run;
		}
		if (i < len) {
			if (bytes[i] == '\r')
				p->after_cr = 1;
			i++;
			ret = process_line(p);
			buf_reset(&p->line);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

int sse_finish(struct sse_parser *p)
{
	int ret;

	if (p->failed)
		return err_set(FX_EINVAL, "the event stream parser already failed");
	if (p->line.len) {
		ret = process_line(p);
		buf_reset(&p->line);
		if (ret < 0)
			return ret;
	}
	return dispatch(p);
}
