/*
 * libFuzzer target for the SSE parser and the streamed-reply assembler.
 *
 * Input: byte 0 is the number of cuts (mod 16), the next that many bytes
 * are the lengths of the first pieces, the rest is the body. The body is
 * parsed twice, cut at those boundaries and whole, and both must give the
 * same result: the same code, and the same text, tool calls, finish
 * reason and usage. The body also goes through the whole-reply parser and
 * the redactor. Any crash, leak, sanitizer report or difference is a
 * finding.
 *
 *   make fuzz && build/fuzz/sse -max_total_time=300 corpus/
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "base/sse.h"
#include "llm/transcript.h"
#include "llm/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int to_asm(void *cb_data, const char *event, const char *payload, size_t len)
{
	(void)event;
	return wire_asm_event(cb_data, payload, len);
}

static void on_text(void *cb_data, const char *text, size_t len)
{
	buf_add(cb_data, text, len);
}

struct outcome {
	int code;
	struct buf texts;	/* what the callback saw */
	struct llm_response r;
};

static void run(struct outcome *o, const char *body, size_t len, const uint8_t *cuts,
		size_t ncuts)
{
	struct sse_parser p;
	struct wire_asm a;
	size_t pos = 0, i;
	int ret = 0;

	buf_init(&o->texts, 0);
	wire_asm_init(&a, on_text, &o->texts);
	/* a small cap so the limit path is exercised too */
	sse_init(&p, to_asm, &a, 4096);
	for (i = 0; i < ncuts && !ret; i++) {
		size_t n = cuts[i];

		if (n > len - pos)
			n = len - pos;
		ret = sse_feed(&p, body + pos, n);
		pos += n;
	}
	if (!ret)
		ret = sse_feed(&p, body + pos, len - pos);
	if (!ret)
		ret = sse_finish(&p);
	if (!ret)
		ret = wire_asm_finish(&a, &o->r);
	o->code = ret;
	sse_release(&p);
	wire_asm_release(&a);
}

static void same_or_trap(const struct outcome *x, const struct outcome *y)
{
	size_t i;

	if (x->code != y->code)
		__builtin_trap();
	if (x->texts.len != y->texts.len || memcmp(x->texts.buf, y->texts.buf, x->texts.len))
		__builtin_trap();
	if (x->code)
		return;
	if (strcmp(x->r.content, y->r.content) || strcmp(x->r.finish_reason, y->r.finish_reason) ||
	    x->r.tool_calls_nr != y->r.tool_calls_nr ||
	    x->r.usage.total_tokens != y->r.usage.total_tokens)
		__builtin_trap();
	/* the text handed out is exactly the text of the reply */
	if (strlen(x->r.content) != x->texts.len)
		__builtin_trap();
	for (i = 0; i < x->r.tool_calls_nr; i++)
		if (strcmp(x->r.tool_calls[i].id, y->r.tool_calls[i].id) ||
		    strcmp(x->r.tool_calls[i].name, y->r.tool_calls[i].name) ||
		    strcmp(x->r.tool_calls[i].arguments, y->r.tool_calls[i].arguments))
			__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct outcome cut = { 0 }, whole = { 0 };
	struct llm_response r = LLM_RESPONSE_INIT;
	struct strvec secrets = STRVEC_INIT;
	struct buf red = BUF_INIT;
	size_t ncuts;

	if (!size)
		return 0;
	ncuts = data[0] % 16;
	if (ncuts > size - 1)
		ncuts = size - 1;
	{
		const char *body = (const char *)data + 1 + ncuts;
		size_t len = size - 1 - ncuts;

		cut.r = r;
		whole.r = r;
		run(&cut, body, len, data + 1, ncuts);
		run(&whole, body, len, NULL, 0);
		same_or_trap(&cut, &whole);

		wire_parse_reply(&r, body, len);
		strvec_push(&secrets, "secret-value");
		redact_text(&red, body, len, &secrets);
	}
	err_clear();
	llm_response_release(&cut.r);
	llm_response_release(&whole.r);
	llm_response_release(&r);
	buf_release(&cut.texts);
	buf_release(&whole.texts);
	buf_release(&red);
	strvec_clear(&secrets);
	return 0;
}
