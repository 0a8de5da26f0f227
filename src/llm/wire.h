#ifndef FX_WIRE_H
#define FX_WIRE_H

/*
 * The OpenAI chat-completions wire format, apart from HTTP: reading a whole
 * reply, and assembling a streamed one from its chunks.
 *
 * A streamed reply is a sequence of SSE events, each a JSON
 * "chat.completion.chunk" whose choices[0].delta carries a piece of text
 * or pieces of tool calls (keyed by their "index": the id and name come
 * once, the arguments in many pieces), then a chunk with a finish_reason,
 * optionally a chunk with usage and no choices, then "[DONE]".
 *
 * The caller:
 *   1. wire_asm_init() with an optional text callback;
 *   2. wire_asm_event() with the data of each SSE event;
 *   3. wire_asm_finish() at the end of the body, which checks the reply
 *      is complete and moves it into a `struct llm_response`;
 *   4. wire_asm_release().
 *
 * Errors are FX_EPROVIDER (the server's error text, a reply cut short,
 * a reply with neither text nor tool calls), FX_EPARSE (malformed JSON)
 * and FX_ELIMIT (a reply beyond WIRE_MAX_REPLY bytes or WIRE_MAX_CALLS
 * calls); none of them is a crash, whatever the bytes.
 */

#include "llm/provider.h"

/** The most text plus arguments one reply may carry: 16 MiB. */
#define WIRE_MAX_REPLY (16u << 20)
/** The most tool calls in one reply. */
#define WIRE_MAX_CALLS 256

struct wire_call {
	long index;
	struct buf id, name, arguments;
};

struct wire_asm {
	llm_text_fn on_text;
	void *cb_data;
	struct buf content;
	struct wire_call *calls;
	size_t calls_nr, calls_alloc;
	size_t total;		/* bytes of text and arguments so far */
	char *finish_reason;
	char *model;
	struct llm_usage usage;
	int done;		/* "[DONE]" seen */
	size_t text_delivered;	/* bytes handed to on_text */
	size_t chunks;		/* JSON chunks taken */
};

/** Prepare `a`; `on_text` (may be NULL) gets each piece of text as it is taken. */
void wire_asm_init(struct wire_asm *a, llm_text_fn on_text, void *cb_data);
/** Free what `a` holds (what wire_asm_finish() moved out is not touched). */
void wire_asm_release(struct wire_asm *a);

/**
 * Take the data of one SSE event: "[DONE]", a chunk, or an error object
 * (`{"error": {...}}`, reported with the server's message).
 */
int wire_asm_event(struct wire_asm *a, const char *data, size_t len);

/** Take one parsed chunk. */
int wire_asm_chunk(struct wire_asm *a, const json_t *chunk);

/**
 * Check that the stream finished (a finish_reason or "[DONE]" was seen)
 * and that the reply holds text or tool calls, then move it into `out`
 * (initialised by the caller). Tool calls without an id get "call_N";
 * empty arguments become "{}".
 */
int wire_asm_finish(struct wire_asm *a, struct llm_response *out);

/**
 * Read a whole (non-streamed) reply body into `out` (initialised by the
 * caller), with the same checks as wire_asm_finish().
 */
int wire_parse_reply(struct llm_response *out, const char *body, size_t len);

/**
 * The body of Ollama's POST /api/chat for `req`: its own message shape
 * (tool-call arguments as objects, tool results with "tool_name"), and
 * options.num_ctx (when > 0), temperature and num_predict. "messages" comes
 * last, as in llm_request_to_json(). New reference.
 */
json_t *wire_ollama_request(const struct llm_request *req, const char *model, int stream,
			    long num_ctx);

/**
 * Take one line of Ollama's NDJSON stream (or its whole non-streamed
 * answer): message.content is text, message.tool_calls come whole, the
 * line with "done": true ends the reply (done_reason, prompt_eval_count,
 * eval_count). wire_asm_finish() then checks and moves the reply out.
 */
int wire_ollama_chunk(struct wire_asm *a, const char *data, size_t len);

/**
 * The error text of an error body: its JSON error.message (or "error" as
 * a string, or "message"), else the body itself, cut to about 500 bytes
 * and with control characters replaced. Appended to `out`.
 */
void wire_error_text(struct buf *out, const char *body, size_t len);

#endif
