#ifndef FX_PROVIDER_H
#define FX_PROVIDER_H

/*
 * Talking to a model: the conversation types and the provider interface.
 *
 * A conversation is a `struct llm_request` (messages, tool schemas and
 * sampling settings); one exchange with the model turns it into a
 * `struct llm_response` (text, tool calls, finish reason, usage). The agent
 * loop appends the reply with llm_request_add_reply(), the results of the
 * tools with llm_request_add_tool_result(), and asks again.
 *
 * Providers sit behind one table of operations (`struct provider_ops`):
 *   "openai"  any OpenAI-compatible server over HTTP (openai.c);
 *   "ollama"  Ollama's native chat API, which takes num_ctx per request (openai.c);
 *   "replay"  answers from a recorded transcript, offline (replay.c).
 *
 * The caller:
 *   1. provider_open() for a [providers.NAME] table of the configuration,
 *      optionally with a transcript that every exchange is appended to;
 *   2. provider_set_cancel() with a flag a SIGINT handler sets (optional);
 *   3. provider_chat() as often as needed; it blocks until the reply is
 *      complete, calling `on_text` for each piece of streamed text;
 *   4. provider_free().
 *
 * A provider never prints. Failures are FX_EPROVIDER (the server or the
 * network failed; the message names the provider, base_url, model and, for
 * 401/403, the key variable), FX_EINTR (cancelled), FX_EMISMATCH (replay:
 * the request differs from the recording), FX_EINVAL/FX_ENOTFOUND
 * (configuration). API keys are read from the environment variable the
 * configuration names and never appear in messages or transcripts.
 */

#include <signal.h>
#include <jansson.h>

#include "base/buf.h"
#include "base/strvec.h"
#include "config/config.h"

struct transcript;

enum llm_role {
	LLM_SYSTEM = 0,
	LLM_USER,
	LLM_ASSISTANT,
	LLM_TOOL,
};

/** One function call the model asked for. */
struct llm_tool_call {
	char *id;		/* the server's id, echoed back with the result */
	char *name;		/* the function's name */
	char *arguments;	/* the arguments as JSON text, exactly as sent */
};

/** One message of a conversation. Strings are owned; NULL when absent. */
struct llm_message {
	enum llm_role role;
	char *content;		/* NULL for an assistant turn of tool calls only */
	struct llm_tool_call *tool_calls;	/* assistant */
	size_t tool_calls_nr, tool_calls_alloc;
	char *tool_call_id;	/* tool: the call this result answers */
	char *name;		/* optional participant or tool name */
};

/** A function the model may call. */
struct llm_tool {
	char *name;
	char *description;
	json_t *parameters;	/* JSON Schema of the arguments (owned reference) */
};

/** A request: the conversation so far and how to answer it. */
struct llm_request {
	struct llm_message *messages;
	size_t messages_nr, messages_alloc;
	struct llm_tool *tools;
	size_t tools_nr, tools_alloc;
	char *tool_choice;	/* NULL (server default), "auto", "none", "required" or a function name */
	char *model;		/* NULL: the provider's model */
	double temperature;	/* < 0: not sent */
	long max_tokens;	/* <= 0: not sent */
};

#define LLM_REQUEST_INIT { NULL, 0, 0, NULL, 0, 0, NULL, NULL, -1.0, 0 }

/** Token counts as the server reported them. */
struct llm_usage {
	int present;		/* 0: the server sent none */
	long prompt_tokens, completion_tokens, total_tokens;
};

/** A reply. Strings are owned; `content` is never NULL ("" when none). */
struct llm_response {
	char *content;
	struct llm_tool_call *tool_calls;
	size_t tool_calls_nr, tool_calls_alloc;
	char *finish_reason;	/* "stop", "tool_calls", "length", ...; "" when the server gave none */
	char *model;		/* the model that answered, as the server named it ("" if not) */
	struct llm_usage usage;
	int retries;		/* attempts that failed before this one */
	long http_status;	/* of the last attempt; 0 without HTTP (replay) */
	double elapsed;		/* seconds, all attempts and waits included */
	struct strvec warnings;	/* things the caller should tell the user (lenient replay) */
};

#define LLM_RESPONSE_INIT { NULL, NULL, 0, 0, NULL, NULL, { 0, 0, 0, 0 }, 0, 0, 0.0, STRVEC_INIT }

/** "system", "user", "assistant", "tool". */
const char *llm_role_name(enum llm_role role);
/** The role called `name`, or -1. */
int llm_role_from_name(const char *name);

/** Make `req` empty (as LLM_REQUEST_INIT). */
void llm_request_init(struct llm_request *req);
/** Free the contents; leaves `req` as LLM_REQUEST_INIT. */
void llm_request_release(struct llm_request *req);

/** Append a message with a copy of `content` (may be NULL); returns it (borrowed). */
struct llm_message *llm_request_add(struct llm_request *req, enum llm_role role,
				    const char *content);

/**
 * Append the assistant turn of `resp` (its text and tool calls), as the
 * next request must carry it. Returns the message (borrowed).
 */
struct llm_message *llm_request_add_reply(struct llm_request *req, const struct llm_response *resp);

/** Append a tool result for the call `tool_call_id`. Returns it (borrowed). */
struct llm_message *llm_request_add_tool_result(struct llm_request *req, const char *tool_call_id,
						const char *name, const char *content);

/** Add a function the model may call; takes a reference to `parameters` (may be NULL). */
void llm_request_add_tool(struct llm_request *req, const char *name, const char *description,
			  json_t *parameters);

/** Append a tool call with copies of the strings to `m` (an assistant message). */
void llm_message_add_tool_call(struct llm_message *m, const char *id, const char *name,
			       const char *arguments);

/** Free the contents; leaves `resp` as LLM_RESPONSE_INIT. */
void llm_response_release(struct llm_response *resp);

/**
 * The body of `POST /chat/completions` for `req`: model (req->model, else
 * `model`), messages, tools, tool_choice, temperature, max_tokens, and with
 * `stream` the "stream" flag and stream_options.include_usage. Returns a
 * new reference.
 */
json_t *llm_request_to_json(const struct llm_request *req, const char *model, int stream);

/**
 * The inverse of llm_request_to_json(): messages (roles, contents, tool
 * calls, tool_call_id, name), tools and model of the body `j`. FX_EPARSE
 * naming the first message that is not one (`out` is then empty).
 */
int llm_request_from_json(struct llm_request *out, const json_t *j);

/** The JSON form of a reply, as transcripts record it (new reference). */
json_t *llm_response_to_json(const struct llm_response *resp);

/**
 * Read a reply from its JSON form (llm_response_to_json()). FX_EPARSE
 * when `j` does not have that shape; `*out` is written only on success.
 */
int llm_response_from_json(struct llm_response *out, const json_t *j);

/** Called with each piece of streamed text (`len` bytes, not NUL-terminated). */
typedef void (*llm_text_fn)(void *cb_data, const char *text, size_t len);

struct provider;

/** A provider implementation (openai.c, replay.c). */
struct provider_ops {
	const char *type;
	/**
	 * Answer `req`, whose wire form is `body`. Fill `out` (initialised by
	 * the caller) or return a negative code with an error recorded.
	 */
	int (*chat)(struct provider *p, struct llm_response *out, const struct llm_request *req,
		    const json_t *body, llm_text_fn on_text, void *cb_data);
	/** Free the implementation's state (not `p` itself). */
	void (*release)(struct provider *p);
	/** The request body for `req` (NULL: llm_request_to_json()). New reference. */
	json_t *(*body)(struct provider *p, const struct llm_request *req);
};

/** An open provider. Read-only for callers. */
struct provider {
	const struct provider_ops *ops;
	char *name;		/* [providers.NAME] */
	char *base_url;		/* without a trailing slash */
	char *model;
	char *api_key_env;
	int stream;
	long timeout_seconds;	/* the whole call, every attempt and wait */
	long idle_timeout_seconds;	/* one attempt without a byte: a transient fault */
	long max_retries;
	struct transcript *transcript;	/* borrowed; NULL: no recording */
	const volatile sig_atomic_t *cancel;	/* borrowed; NULL: never cancelled */
	unsigned long exchanges;	/* provider_chat() calls so far */
	/* during chat(): NULL, or its `body` encoded with JSON_COMPACT, to send as is */
	const struct buf *wire;
	void *impl;		/* the implementation's state */

	/* the model's context window (provider_context_window()) */
	long config_window;	/* [providers.NAME] context_window; 0: ask the server */
	long context_window;	/* tokens, once known */
	char *window_source;
	char *window_warning;	/* NULL, or what the user should fix */
	int window_probed;
	char *probe_window;	/* [providers.NAME] probe_window: "local", "always", "never" */
	int window_warned;	/* the warning was shown (agent_run() shows it once) */
	long num_ctx;		/* "ollama": options.num_ctx sent with every request */
};

/** Tokens forgex needs for useful work; a smaller window is warned about. */
#define LLM_WINDOW_NEEDED 16384
/** The num_ctx forgex asks Ollama for when the model allows it and nothing is configured. */
#define LLM_OLLAMA_NUM_CTX 32768
/** What Ollama uses when a model sets no num_ctx (its default on small GPUs). */
#define LLM_OLLAMA_DEFAULT_CTX 4096

/**
 * Open the provider `name` of `cfg` (NULL: the one called "default", else
 * the first). `tr` (may be NULL, borrowed, must outlive the provider)
 * receives every exchange; the key's value is registered with it for
 * redaction. FX_ENOTFOUND when there is no such provider, FX_EINVAL for a
 * bad type or setting.
 */
int provider_open(struct provider **out, const struct config *cfg, const char *name,
		  struct transcript *tr);

/**
 * Make requests stop as soon as `*flag` becomes non-zero (checked at
 * least every 100 ms while waiting); they then fail with FX_EINTR.
 */
void provider_set_cancel(struct provider *p, const volatile sig_atomic_t *flag);

/**
 * Send `req` and wait for the whole reply, filling `out` (which must be
 * LLM_RESPONSE_INIT or released). `on_text` (may be NULL) is called with
 * each piece of text as it arrives. Retries transient failures as the
 * configuration says. The exchange, failed or not, is appended to the
 * transcript. On failure `out` is left empty.
 */
int provider_chat(struct provider *p, struct llm_response *out, const struct llm_request *req,
		  llm_text_fn on_text, void *cb_data);

/** Close `p` (NULL is fine). */
void provider_free(struct provider *p);

/**
 * The model's context window in tokens. The first call decides, once per
 * provider: `context_window` of the configuration when set; else what the
 * server says (vLLM: GET {base_url}/models, the model's max_model_len;
 * llama.cpp: GET {root}/props, default_generation_settings.n_ctx; Ollama:
 * POST {root}/api/show, the num_ctx in force, or for type "ollama" the
 * num_ctx forgex will send, bounded by <arch>.context_length), where
 * {root} is base_url without a trailing /v1; else 32768 for a server on
 * this machine and 131072 elsewhere. `*source` (may be NULL) says which;
 * `*warning` (may be NULL) is set when the window is smaller than
 * LLM_WINDOW_NEEDED or Ollama would cut prompts, with the fix. Both are
 * owned by `p`.
 */
long provider_context_window(struct provider *p, const char **source, const char **warning);

/** {base_url} without a trailing "/v1" (or "/api"): where /props and /api/ live. New string. */
char *provider_root_url(const char *base_url);

/**
 * The models a server lists at GET {base_url}/models, waiting at most
 * `timeout_ms`. For `forgex doctor`. Pushes the ids onto `out`.
 * FX_EPROVIDER with the reason when the server cannot be reached or
 * answers with an error.
 */
int provider_list_models(struct strvec *out, const struct provider_config *pc, long timeout_ms);

/**
 * Whether the server of `pc` can be connected to (host and port; nothing is
 * sent) within `timeout_ms`. FX_EPROVIDER "cannot reach URL: why" when not.
 */
int provider_reachable(const struct provider_config *pc, long timeout_ms);

/**
 * How long to wait before retry number `attempt` (0 for the first retry):
 * `retry_after_ms` when the server asked (>= 0), else exponential backoff
 * from 500 ms doubling to at most 30 s, with "equal jitter" (half fixed,
 * half drawn from `rnd`).
 */
long llm_backoff_ms(int attempt, long retry_after_ms, unsigned int rnd);

/**
 * Parse a Retry-After header value, seconds ("120") or an HTTP date
 * ("Wed, 21 Oct 2015 07:28:00 GMT", relative to `now`). Returns the
 * milliseconds to wait (0 for a date in the past), or -1 when it is
 * neither form.
 */
long llm_parse_retry_after(const char *value, long long now);

/* Implementations, for provider_open(). */
/** Set `p` up as an "openai" provider: reads the key, prepares curl handles and headers. */
int openai_open(struct provider *p, const struct provider_config *pc);
/** Set `p` up as an "ollama" provider: Ollama's own POST {root}/api/chat, num_ctx per request. */
int ollama_open(struct provider *p, const struct provider_config *pc);
/**
 * Set `p` up as a "replay" provider: loads the whole transcript. A relative
 * path is taken from `workspace` (NULL: the current folder).
 */
int replay_open(struct provider *p, const struct provider_config *pc, const char *workspace);

#endif
