/* The SSE parser: framing, line ends, splits at every byte, limits. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "base/sse.h"

/* Events rendered as "[event]data|" so a whole sequence compares as a string. */
struct seen {
	struct buf log;
	int stop_at;		/* > 0: fail on that event */
	int n;
};

static int record(void *data, const char *event, const char *payload, size_t len)
{
	struct seen *s = data;

	s->n++;
	if (s->stop_at && s->n == s->stop_at)
		return err_set(FX_EPROVIDER, "stop at %d", s->n);
	buf_addf(&s->log, "[%s]", event);
	buf_add(&s->log, payload, len);
	buf_addch(&s->log, '|');
	return 0;
}

/* Parse `text` fed as pieces cut at the offsets in `cuts` (ascending, -1 ends). */
static int parse_cut(struct buf *out, const char *text, size_t len, const size_t *cuts,
		     size_t ncuts, size_t max)
{
	struct seen s = { BUF_INIT, 0, 0 };
	struct sse_parser p;
	size_t pos = 0, i;
	int ret = 0;

	sse_init(&p, record, &s, max);
	for (i = 0; i <= ncuts && !ret; i++) {
		size_t end = i < ncuts ? cuts[i] : len;

		ret = sse_feed(&p, text + pos, end - pos);
		pos = end;
	}
	if (!ret)
		ret = sse_finish(&p);
	buf_addbuf(out, &s.log);
	buf_release(&s.log);
	sse_release(&p);
	return ret;
}

static int parse(struct buf *out, const char *text)
{
	return parse_cut(out, text, strlen(text), NULL, 0, 0);
}

/* A stream as OpenAI sends it, with a comment, a CRLF part and a no-space field. */
static const char recorded[] =
	": OPENROUTER PROCESSING\n\n"
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
	"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\r\n\r\n"
	"data:{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo \\u00e9\"}}]}\n\n"
	"event: message\ndata: {\"a\":1}\ndata: {\"b\":2}\n\n"
	"id: 7\nretry: 100\ndata: [DONE]\n\n";

static const char recorded_events[] =
	"[]{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}|"
	"[]{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}|"
	"[]{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo \\u00e9\"}}]}|"
	"[message]{\"a\":1}\n{\"b\":2}|"
	"[][DONE]|";

static void test_sse_recorded_stream(void **state)
{
	struct buf out = BUF_INIT;

	(void)state;
	assert_int_equal(parse(&out, recorded), 0);
	assert_string_equal(out.buf, recorded_events);
	buf_release(&out);
}

static void test_sse_every_split_point(void **state)
{
	size_t len = strlen(recorded), i, j;

	(void)state;
	for (i = 0; i <= len; i++) {
		struct buf out = BUF_INIT;
		size_t cut[1] = { i };

		assert_int_equal(parse_cut(&out, recorded, len, cut, 1, 0), 0);
		assert_string_equal(out.buf, recorded_events);
		buf_release(&out);
	}
	/* and every pair of split points, which covers a lone byte between two cuts */
	for (i = 0; i <= len; i += 3) {
		for (j = i; j <= len; j += 5) {
			struct buf out = BUF_INIT;
			size_t cut[2] = { i, j };

			assert_int_equal(parse_cut(&out, recorded, len, cut, 2, 0), 0);
			assert_string_equal(out.buf, recorded_events);
			buf_release(&out);
		}
	}
}

static void test_sse_byte_at_a_time(void **state)
{
	size_t len = strlen(recorded), i, cuts[sizeof(recorded)];
	struct buf out = BUF_INIT;

	(void)state;
	for (i = 0; i < len; i++)
		cuts[i] = i + 1;
	assert_int_equal(parse_cut(&out, recorded, len, cuts, len - 1, 0), 0);
	assert_string_equal(out.buf, recorded_events);
	buf_release(&out);
}

static void test_sse_line_ends(void **state)
{
	struct buf a = BUF_INIT, b = BUF_INIT, c = BUF_INIT;

	(void)state;
	assert_int_equal(parse(&a, "data: x\n\ndata: y\ndata: z\n\n"), 0);
	assert_int_equal(parse(&b, "data: x\r\n\r\ndata: y\r\ndata: z\r\n\r\n"), 0);
	assert_int_equal(parse(&c, "data: x\r\rdata: y\rdata: z\r\r"), 0);
	assert_string_equal(a.buf, "[]x|[]y\nz|");
	assert_string_equal(b.buf, a.buf);
	assert_string_equal(c.buf, a.buf);
	buf_release(&a);
	buf_release(&b);
	buf_release(&c);
}

static void test_sse_crlf_split_between_cr_and_lf(void **state)
{
	const char *t = "data: a\r\n\r\ndata: b\r\n\r\n";
	size_t cuts[] = { 8, 10 };	/* after "\r", after the second "\r" */
	struct buf out = BUF_INIT;

	(void)state;
	assert_int_equal(parse_cut(&out, t, strlen(t), cuts, 2, 0), 0);
	/* a CRLF cut in two is one line end, not a blank line: still two events */
	assert_string_equal(out.buf, "[]a|[]b|");
	buf_release(&out);
}

static void test_sse_comments_and_fields(void **state)
{
	struct buf out = BUF_INIT;

	(void)state;
	assert_int_equal(parse(&out, ":keep-alive\n\n: ping\ndata:nospace\n\n"
			       "data\n\nunknown: x\ndata:  two spaces\n\n"), 0);
	/* a comment alone is no event; "data" with no colon is an empty line of data */
	assert_string_equal(out.buf, "[]nospace|[]|[] two spaces|");
	buf_release(&out);
}

static void test_sse_event_type_resets(void **state)
{
	struct buf out = BUF_INIT;

	(void)state;
	assert_int_equal(parse(&out, "event: error\ndata: {\"error\":{}}\n\ndata: next\n\n"
			       "event: lonely\n\n"), 0);
	assert_string_equal(out.buf, "[error]{\"error\":{}}|[]next|");
	buf_release(&out);
}

static void test_sse_finish_dispatches_unterminated(void **state)
{
	struct buf out = BUF_INIT;

	(void)state;
	assert_int_equal(parse(&out, "data: one\n\ndata: [DONE]"), 0);
	assert_string_equal(out.buf, "[]one|[][DONE]|");
	buf_release(&out);
}

static void test_sse_event_size_is_capped(void **state)
{
	char big[300];
	struct buf out = BUF_INIT;
	struct buf text = BUF_INIT;
	size_t cuts[] = { 50, 120, 200 };

	(void)state;
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	/* one long line */
	buf_addf(&text, "data: %s\n\n", big);
	assert_int_equal(parse_cut(&out, text.buf, text.len, cuts, 3, 256), FX_ELIMIT);
	assert_non_null(strstr(err_last(), "256 bytes"));
	/* many short lines that add up */
	buf_reset(&text);
	buf_reset(&out);
	for (size_t i = 0; i < 40; i++)
		buf_addstr(&text, "data: 0123456789\n");
	buf_addstr(&text, "\n");
	assert_int_equal(parse_cut(&out, text.buf, text.len, NULL, 0, 256), FX_ELIMIT);
	/* under the cap is fine, and the cap is per event, not per stream */
	buf_reset(&text);
	buf_reset(&out);
	for (size_t i = 0; i < 40; i++)
		buf_addstr(&text, "data: 0123456789\n\n");
	assert_int_equal(parse_cut(&out, text.buf, text.len, NULL, 0, 256), 0);
	assert_int_equal(out.len, 40 * strlen("[]0123456789|"));
	buf_release(&text);
	buf_release(&out);
}

static void test_sse_callback_error_stops(void **state)
{
	struct seen s = { BUF_INIT, 2, 0 };
	struct sse_parser p;
	const char *t = "data: 1\n\ndata: 2\n\ndata: 3\n\n";

	(void)state;
	sse_init(&p, record, &s, 0);
	assert_int_equal(sse_feed(&p, t, strlen(t)), FX_EPROVIDER);
	assert_string_equal(err_last(), "stop at 2");
	assert_string_equal(s.log.buf, "[]1|");
	/* a failed parser refuses more input rather than resuming mid-stream */
	assert_int_equal(sse_feed(&p, "data: 4\n\n", 9), FX_EINVAL);
	assert_int_equal(s.n, 2);
	sse_release(&p);
	buf_release(&s.log);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sse_recorded_stream),
		cmocka_unit_test(test_sse_every_split_point),
		cmocka_unit_test(test_sse_byte_at_a_time),
		cmocka_unit_test(test_sse_line_ends),
		cmocka_unit_test(test_sse_crlf_split_between_cr_and_lf),
		cmocka_unit_test(test_sse_comments_and_fields),
		cmocka_unit_test(test_sse_event_type_resets),
		cmocka_unit_test(test_sse_finish_dispatches_unterminated),
		cmocka_unit_test(test_sse_event_size_is_capped),
		cmocka_unit_test(test_sse_callback_error_stops),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
