#ifndef FX_TEXTCALLS_INT_H
#define FX_TEXTCALLS_INT_H

/*
 * Inside the text-call reader: the scan state and the helpers its
 * dialects share. textcalls.c holds the JSON families and the dispatcher,
 * dialects.c the token-marked and XML-ish ones and the reasoning mask,
 * pycalls.c those written as function calls (pythonic, OLMo 3, LFM2,
 * Gemma), textcalls_more.c Kimi K3's tag language, Functionary v3.2's
 * recipients and MiniCPM 5's XML, dialects_vllm_a.c GLM's value rule,
 * Hunyuan and MiniMax M3, dialects_vllm_b.c Inkling, Solar Open2,
 * GigaChat 3.5 and K2 Horizon, dialects_more.c Muse Glimmer and Solar Open,
 * dialects_vllm_c.c the families of vLLM parsers outside its registered
 * list (dots.llm, CWM, PLaMo 3, Step-Audio 2, IQuest Coder V2, Granite's
 * call lines, HyperCLOVA X 14B's reasoning). Nothing outside src/llm/
 * includes this.
 */

#include <stddef.h>

#include <jansson.h>

#include "llm/textcalls.h"

struct span {
	size_t a, b;
};

struct scan {
	const char *text;	/* what the dialects read: reasoning blanked out */
	const char *orig;	/* the reply as sent (same length and offsets) */
	size_t len;
	const struct strvec *tools;
	struct text_calls *out;
	struct span *spans;
	size_t spans_nr, spans_alloc;
};

/* How a JSON call object was found: inside explicit markers, in a fence, bare in prose. */
enum { TC_MARKED, TC_FENCED, TC_BARE };

int tc_known(const struct scan *sc, const char *name);
void tc_add_span(struct scan *sc, size_t a, size_t b);
void tc_call_error(struct scan *sc, const char *dialect, const char *name, const char *fmt, ...)
	FX_PRINTF(4, 5);
void tc_unknown_error(struct scan *sc, const char *dialect, const char *name);
void tc_push_call(struct scan *sc, const char *name, const json_t *args, const char *dialect,
		  const char *notes);
json_t *tc_take_json(struct scan *sc, size_t pos, size_t end, const char *dialect, int strict,
		     const char *name, size_t *used, struct buf *notes);
int tc_take_call_obj(struct scan *sc, const json_t *obj, const char *dialect, int how,
		     const char *notes);
int tc_take_calls_at(struct scan *sc, size_t pos, size_t end, const char *dialect, int how,
		     size_t *used);
const char *tc_find(const struct scan *sc, size_t from, size_t end, const char *needle);
size_t tc_skip_ws(const struct scan *sc, size_t p, size_t end);
json_t *tc_xml_value(const char *s, size_t n);
/*
 * Set argument `n` bytes at `s` of the reply (a name the model wrote, so
 * perhaps not UTF-8: made valid as jsonx_stringn_lossy() does) to `value`.
 */
void tc_set_key(json_t *obj, const char *s, size_t n, json_t *value);
/* Drop one line end at each edge of a value written on lines of its own ("\nv\n"). */
void tc_xml_trim(const char **s, size_t *n);
/* Qwen3-Coder / Seed-OSS body at `p`: <function=NAME><parameter=K>V</parameter>...</function> */
void tc_take_xml_function(struct scan *sc, size_t p, size_t end, const char *dialect);

/* ---- dialects.c ---- */

/* The offset of `needle` in t[from, end), or (size_t)-1. */
size_t tc_find_at(const char *t, size_t from, size_t end, const char *needle);
/* Does the scanned text have `s` at `p` (within `end`)? */
int tc_starts(const struct scan *sc, size_t p, size_t end, const char *s);
/* A byte of a tool name as the dialects write it: letters, digits, _ - . */
int tc_name_char(int c);

/** How to write a call in `dialect`, for the message to the model. */
const char *tc_example(const char *dialect);
/** Whether `dialect` carries its arguments as JSON (the message then says how JSON is quoted). */
int tc_dialect_is_json(const char *dialect);
/**
 * Blank (with spaces) every stretch of `text` that is the model's
 * reasoning, in place: <think>...</think>, <seed:think>, harmony's
 * analysis channel, [THINK], <|START_THINKING|>, ◁think▷. With
 * `keep_unclosed`, reasoning opened and never closed loses only its
 * opening marker (what follows is left to read, for the nudge of
 * textcalls_parse()).
 */
void tc_mask_reasoning(char *text, size_t len, int keep_unclosed);
/* GLM-4.5+ body of a <tool_call> at `p`: NAME <arg_key>K</arg_key><arg_value>V</arg_value>... */
void tc_take_glm(struct scan *sc, size_t p, size_t end);

/*
 * The tags of a GLM-style body: NAME then KEY/VALUE pairs (LongCat-Flash
 * prefixes them); `ns`, when set, a namespace the name may carry before an
 * offered tool's ("functions.").
 */
struct glm_tags {
	const char *dialect, *key, *key_close, *value, *value_close, *ns;
};
void tc_take_glm_tags(struct scan *sc, size_t p, size_t end, const struct glm_tags *t);

void tc_scan_harmony(struct scan *sc);
void tc_scan_kimi(struct scan *sc);
void tc_scan_seed(struct scan *sc);
void tc_scan_invoke(struct scan *sc);
void tc_scan_tagged_json(struct scan *sc);
void tc_scan_function_tag(struct scan *sc);

/* ---- pycalls.c ---- */

/* Llama 3 built-in tools after <|python_tag|>: NAME.call(k="v"). Returns bytes used, 0 if not one. */
size_t tc_take_llama_builtin(struct scan *sc, size_t p, size_t end);
/* The body of a ```tool_code fence (Gemma): one or more NAME(k=v) calls. */
void tc_take_tool_code(struct scan *sc, size_t p, size_t end);
/* NAME(k=v) calls one after another in [p, end), each pushed as `dialect`. Returns bytes used. */
size_t tc_take_py_calls(struct scan *sc, size_t p, size_t end, const char *dialect);
void tc_scan_function_gemma(struct scan *sc);
void tc_scan_lfm2(struct scan *sc);
void tc_scan_olmo3(struct scan *sc);
void tc_scan_pythonic(struct scan *sc);

/* ---- textcalls_more.c ---- */

void tc_scan_kimi3(struct scan *sc);
void tc_scan_recipient(struct scan *sc);
void tc_scan_minicpm5(struct scan *sc);

/* ---- dialects_more.c ---- */

/* Muse Glimmer's addressed ATEM messages, Solar Open's
 * <|tool_call:begin|>...<|tool_call:name|>...<|tool_call:args|> markers. */
void tc_scan_more(struct scan *sc);
/* Blank Solar Open's <|think|> and Glimmer's to=self reasoning (and ATEM markup not sent to a tool). */
void tc_mask_more(char *text, size_t len);

/* ---- dialects_vllm_b.c ---- */

/*
 * Blank Inkling's <|content_thinking|> blocks; not in the mask's table,
 * their closer <|end_message|> ending every kind of block.
 */
void tc_mask_inkling(char *text, size_t len);
void tc_scan_inkling(struct scan *sc);
void tc_scan_solar(struct scan *sc);
void tc_scan_gigachat35(struct scan *sc);
void tc_scan_k2_horizon(struct scan *sc);
/* ---- dialects_vllm_a.c ---- */

/*
 * A GLM-style <arg_value>: a one-line JSON string literal decoded
 * (HyperCLOVA X), JSON (or an integer) when its text, blanks trimmed, is
 * one; otherwise the string exactly as written.
 */
json_t *tc_glm_value(const char *s, size_t n);
/* Hy3's <tool_call>NAME<tool_sep>..., Hy4's suffixed <tool_call:SUFFIX>NAME<arg_key:SUFFIX>... */
void tc_scan_hy(struct scan *sc);
/* MiniMax M3: every tag after the namespace mark ]<]minimax[>[, parameters as nested tags */
void tc_scan_minimax3(struct scan *sc);
/* ---- dialects_vllm_c.c ---- */

/* A value written as one JSON string literal on one line ("Seoul"): that string; else NULL. */
json_t *tc_xml_json_string(const char *s, size_t n);
void tc_scan_dots(struct scan *sc);
void tc_scan_cwm(struct scan *sc);
void tc_scan_plamo3(struct scan *sc);
void tc_scan_step_audio2(struct scan *sc);
void tc_scan_iquest2(struct scan *sc);
void tc_scan_line_calls(struct scan *sc);
/* Blank HyperCLOVA X 14B's assistant/think turn (reasoning). */
void tc_mask_channels(char *t, size_t len);

#endif
