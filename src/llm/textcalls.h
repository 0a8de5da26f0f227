#ifndef FX_TEXTCALLS_H
#define FX_TEXTCALLS_H

/*
 * Tool calls written in a reply's text: what local models emit when the
 * server (Ollama, llama.cpp server, vLLM) runs them without a tool parser,
 * and what forgex's own text tool mode asks for.
 *
 * Dialects, looked for in this order (the first that finds anything wins):
 *
 *   hermes    Hermes / Qwen 2.5 / Qwen 3:
 *               <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
 *             and Qwen3-Coder's XML body:
 *               <tool_call>\n<function=f>\n<parameter=p>\nv\n</parameter>\n</function>\n</tool_call>
 *   llama3    Llama 3.x after <|python_tag|>: {"name": "f", "parameters": {...}},
 *             several separated by ";"
 *   mistral   [TOOL_CALLS] [{"name": "f", "arguments": {...}}, ...]   (pre-v11)
 *             [TOOL_CALLS]f[ARGS]{...}, [TOOL_CALLS]f[CALL_ID]id[ARGS]{...},
 *             [TOOL_CALLS]f{...}   (v11+, special tokens shown or skipped)
 *   deepseek  <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>f
 *             ```json\n{...}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>   (V3, R1)
 *             <｜tool▁call▁begin｜>f<｜tool▁sep｜>{...}<｜tool▁call▁end｜>   (V3.1)
 *   fenced    ```json (or any fence) holding {"tool"|"name": "f",
 *             "arguments"|"parameters": {...}} or a list of them (forgex's
 *             text mode; many models without a template for tools)
 *   command-r the fence after "Action:" (Cohere Command R:
 *             Action: ```json\n[{"tool_name": "f", "parameters": {...}}]\n```)
 *   bare      the same object anywhere in the text, unfenced (Llama 3.x
 *             JSON tool calling without <|python_tag|>)
 *
 * and, in dialects.c, pycalls.c and dialects_vllm_a.c, the families with
 * their own markers or syntax:
 * harmony, Kimi K2, Seed-OSS, MiniMax M3, Hunyuan Hy3 / Hy4,
 * GLM (<arg_key>), FunctionGemma / Gemma 4,
 * LFM2, the <invoke name=...> family, JSON after a family's marker
 * (Granite, Jamba, Nemotron, InternLM2, Command R7B, Phi-4, ...),
 * Functionary, OLMo 3, pythonic lists, Gemma's tool_code (docs/internals/
 * llm.md has the table).
 *
 * Reasoning is never read: <think>...</think>, <seed:think>, harmony's
 * analysis channel and the like are blanked before any dialect looks,
 * so a call written there is no call and no error.
 *
 * A call must name a tool in `tools`: JSON in prose that names no known
 * tool is not a call. Inside explicit markers (hermes, llama3's tag,
 * mistral, deepseek, a fenced {"tool": ...}) an unknown name or JSON that
 * cannot be read is an error for the model; in fenced and bare JSON it is
 * an error only when the text names a known tool.
 *
 * JSON repair (textcalls_repair_json()): trailing commas, closing braces
 * and brackets missing at the end, and raw control characters (line
 * breaks, tabs) inside strings are fixed. Nothing else is: a string that
 * never closes, a key without a value, a value cut right after its '{' or
 * '[' (`"arguments": {` at the end: what it held is lost, it is not empty)
 * or after a ',' (the next value lost),
 * single quotes, Python literals are refused with a message saying what to
 * fix. A repair never adds a key or
 * a value.
 */

#include <stddef.h>

#include "base/buf.h"
#include "base/strvec.h"

struct text_call {
	char *name;
	char *arguments;	/* compact JSON object text */
	const char *dialect;	/* "hermes", "llama3", ... (static) */
	char *repaired;		/* NULL, or what the repair changed ("removed a trailing comma") */
};

struct text_calls {
	struct text_call *v;
	size_t nr, alloc;
	struct strvec errors;	/* one message per call that could not be read, for the model */
	size_t unknown;		/* of the errors, those about a name that is no tool */
	struct buf prose;	/* the text with the calls taken out (trimmed) */
};

#define TEXT_CALLS_INIT { NULL, 0, 0, STRVEC_INIT, 0, BUF_INIT }

/** The most calls one reply may hold; the rest are an error. */
#define TEXTCALLS_MAX 64

/**
 * Find the calls in `text` (`len` bytes). `tools` lists the names the
 * model may call. Returns the number of calls found (also in `out->nr`);
 * messages for calls that could not be read are pushed to `out->errors`.
 * `out` must be TEXT_CALLS_INIT or released.
 */
size_t textcalls_parse(struct text_calls *out, const char *text, size_t len,
		       const struct strvec *tools);

/** Free what `tc` holds; it is left as TEXT_CALLS_INIT. */
void textcalls_release(struct text_calls *tc);

/**
 * Repair the JSON value that starts at `s` (at most `len` bytes; it ends
 * where its outermost bracket closes, or at `len`). On success appends the
 * repaired text to `out`, what was changed to `notes` ("" when nothing),
 * stores the bytes consumed in `*used` and returns 0. On failure returns
 * -1 with the reason, for the model, in `why`.
 */
int textcalls_repair_json(struct buf *out, struct buf *notes, struct buf *why, const char *s,
			  size_t len, size_t *used);

#endif
