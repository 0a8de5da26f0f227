#ifndef FX_AGENTS_AGENT_H
#define FX_AGENTS_AGENT_H

/*
 * The agent loop: one role talking to a model that calls tools, until the
 * role hands in its result.
 *
 * agent_run() builds the conversation (the system prompt, then the task as
 * the user's message), offers the role's tools (agents/roles.h), and
 * repeats: check the budget and the cancel flag, call the model
 * (provider_chat(), streamed or not), report the call, then dispatch the
 * reply's tool calls in order (tool_dispatch(), tools/registry.h; every
 * refusal and failure goes back to the model as the call's result) and
 * append their results. It ends when:
 *
 *   AGENT_DONE            the role's terminal tool was called and accepted;
 *                         its arguments are in `terminal_args`
 *   AGENT_ANSWERED        a reply without tool calls, for a loop without a
 *                         terminal tool (`plain_answer`): `answer`
 *   AGENT_NO_TERMINAL     a role with a terminal tool kept answering in
 *                         plain text: it was told to call its tool
 *                         AGENT_NUDGES_MAX times and did not
 *   AGENT_MAX_TURNS       `max_turns` model calls were made
 *   AGENT_BUDGET          tokens, cost or wall time of the shared budget
 *                         are spent (checked before each model call)
 *   AGENT_LOOP_GUARD      the same call (tool name and arguments) failed
 *                         the same way (same status and result)
 *                         AGENT_LOOP_REPEATS times in a row
 *   AGENT_PROVIDER_ERROR  the provider failed (after its own retries);
 *                         `error` and `error_code` say how
 *   AGENT_INTERRUPTED     the cancel flag was set
 *
 * Context control: the model's window (`context_window`, else what the
 * provider learnt from the server, provider_context_window()) bounds every
 * request. A tool result longer than `tool_result_max` bytes (at most an
 * eighth of the window) is cut (head and tail kept, with a note saying how
 * much was left out). Each request begins with the previous one byte for
 * byte (messages are only appended), so servers' prefix caches hit, except
 * at a compaction step: when the next request would not leave room for
 * the reply, old tool results become stubs, then old assistant texts and
 * large arguments, then the oldest turns are replaced by a summary the
 * model writes, until the request is at most half the window. The system
 * prompt, the task and the latest turn stay. A request that cannot fit
 * even so is never sent (AGENT_PROVIDER_ERROR, FX_ELIMIT).
 *
 * A conversation with a person (`conversation` set) is compacted as a
 * conversation, not as a task: the person's latest message stays whole
 * (it is the request being worked on), and what came before it is
 * shortened (old tool results become stubs, a message too large for any
 * request keeps its head and tail) and then, from the oldest exchange on,
 * summed up by the model as what happened earlier in this conversation;
 * the summary ends the system prompt, under "# Earlier in this
 * conversation" (a later compaction sums up the old summary with the
 * rest). When the person's message cannot be sent even so, before the
 * first model call of the call to agent_run(), it is taken out of the
 * conversation again (`refused` in the result; agent_fit() says so before
 * the call).
 *
 * tool_mode AGENT_TOOLS_TEXT serves models without function calling: no
 * `tools` are sent; the tools are described in the system prompt, and the
 * model calls one by answering with a fenced block
 *     ```json
 *     {"tool": "read_file", "arguments": {"path": "src/main.c"}}
 *     ```
 * (several blocks: several calls, in order; the other dialects of
 * llm/textcalls.h are read too); results come back as user messages
 * "Result of read_file (call text-1-1): ...". In native mode, a reply
 * without a structured call whose text holds one in any of those dialects
 * runs it the same way; a call that cannot be read is answered with what
 * to fix ("text_call_error").
 *
 * The caller:
 *   1. a tool registry with the tools (roles.h lists the order) and a
 *      tool_ctx on the workspace; a provider (provider_open()); a budget
 *      shared by every run of a session (agent_budget_init(), prices with
 *      agent_budget_set_price());
 *   2. fills `struct agent_opts` (AGENT_OPTS_INIT first) and calls
 *      agent_run(); it blocks until the loop ends, calling `on_event` and
 *      `on_text` on the calling thread as things happen;
 *   3. reads the result, then agent_result_release();
 *   4. agent_budget_release() at the end of the session.
 *
 * The agent layer never prints: everything a person or events.jsonl
 * should see goes through `on_event` (the events below) and `on_text`.
 *
 * Events (`type`, then the members of `fields`; every event has "role"
 * and "turn", the number of the model call it belongs to, 0 before the
 * first). The callee owns `fields` (json_decref() it) and may add members
 * (the session adds "seq" and "time"):
 *
 *   "agent_start"   model, provider, max_turns, tool_mode ("native" |
 *                   "text"), terminal (name or null), tools [names]
 *   "model_call"    model, duration_ms, finish_reason, usage
 *                   {prompt_tokens, completion_tokens, total_tokens,
 *                   estimated}, cost_usd (this call; null without a
 *                   price), tool_calls (count), text_bytes, retries,
 *                   budget {tokens_used, cost_usd, max_tokens,
 *                   max_cost_usd}
 *   "tool_call"     id, name, arguments (the parsed JSON, or the text the
 *                   model sent when it is not JSON)
 *   "tool_result"   id, name, status ("ok" | "failed" | "refused"), bytes
 *                   (of the full result), preview (its first
 *                   AGENT_PREVIEW_MAX bytes), cut (bool: shortened before
 *                   it went to the model), terminal (bool: the loop ends)
 *   "agent_nudge"   message (the user message sent), nudges (so far)
 *   "context_window" tokens, source ("config", "llama.cpp /props", "vLLM
 *                   /v1/models", "Ollama /api/show", "default"), reserve
 *                   (tokens kept for the reply), warning (string or null)
 *   "context_compact" stubbed (messages), summarised (messages replaced by
 *                   the summary), tokens_before, tokens_after (estimates),
 *                   window, summary ("model" | "list" | null)
 *   "text_call_error" errors [messages sent back to the model]
 *   "agent_end"     status (agent_status_name()), turns, tool_calls,
 *                   usage {prompt_tokens, completion_tokens,
 *                   total_tokens}, cost_usd, error (string or null)
 *   "progress"      message (one line for a person: "builder turn 3:
 *                   read_file src/main.c (12.4k tokens so far)"), tokens,
 *                   kind ("model": a call to the model begins; "tool": a
 *                   tool call begins) — for display; a session need not
 *                   store it
 */

#include <jansson.h>
#include <signal.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/strvec.h"
#include "config/config.h"
#include "llm/provider.h"
#include "tools/registry.h"

/** How a loop ended; see the overview. */
enum agent_status {
	AGENT_DONE = 0,
	AGENT_ANSWERED,
	AGENT_NO_TERMINAL,
	AGENT_MAX_TURNS,
	AGENT_BUDGET,
	AGENT_LOOP_GUARD,
	AGENT_PROVIDER_ERROR,
	AGENT_INTERRUPTED,
	AGENT_STATUS__COUNT,
};

/** How many times a role that answers in plain text is told to call its terminal tool. */
#define AGENT_NUDGES_MAX 2
/** How many identical failing calls in a row end the loop (AGENT_LOOP_GUARD). */
#define AGENT_LOOP_REPEATS 3
/** Default `max_turns`. */
#define AGENT_MAX_TURNS_DEFAULT 30
/** Default `tool_result_max`: bytes of one tool result the model sees. */
#define AGENT_TOOL_RESULT_MAX (32u << 10)
/**
 * Tokens a byte of request is taken for before the server says (about 4
 * bytes a token, with a margin); raised, never lowered, by the counts the
 * server reports.
 */
#define AGENT_TOKENS_PER_BYTE 0.2875
/** Bytes of a tool result in a "tool_result" event's preview. */
#define AGENT_PREVIEW_MAX 240

/**
 * The price of a model, in US dollars per million tokens. `model` "*"
 * prices every model without a price of its own.
 */
struct agent_price {
	char *model;
	double prompt_per_mtok;
	double completion_per_mtok;
};

/**
 * What a session may spend, shared by every agent_run() of the session
 * (all roles, all iterations). Limits of 0 are unlimited. agent_run()
 * checks it before each model call and charges each call's usage after it
 * (when the server sends no usage, the tokens are estimated at 4
 * characters each and `estimated` is set). Not thread-safe: one loop at a
 * time.
 */
struct agent_budget {
	long max_tokens;		/* total tokens (prompt + completion); 0: unlimited */
	double max_cost_usd;		/* 0: unlimited */
	double deadline;		/* CLOCK_MONOTONIC seconds (clk_mono_s()); 0: none */

	long tokens_used;		/* prompt + completion, all calls */
	long prompt_tokens, completion_tokens;
	double cost_used;		/* USD, of the calls whose model has a price */
	long calls;			/* model calls charged */
	int estimated;			/* some usage was estimated */
	int unpriced;			/* some call's model had no price */

	struct agent_price *prices;
	size_t prices_nr, prices_alloc;
};

#define AGENT_BUDGET_INIT { 0, 0.0, 0.0, 0, 0, 0, 0.0, 0, 0, 0, NULL, 0, 0 }

/**
 * Start a budget with the limits of `[budget]` (0: unlimited): the
 * deadline is `max_wall_seconds` from now.
 */
void agent_budget_init(struct agent_budget *b, long max_tokens, double max_cost_usd,
		       double max_wall_seconds);

/** Free the prices; the budget is left as AGENT_BUDGET_INIT. */
void agent_budget_release(struct agent_budget *b);

/**
 * Set the price of `model` (exact name as requested or as the server
 * names it; "*": any other), replacing an earlier one. FX_EINVAL for a
 * negative price or an empty name.
 */
int agent_budget_set_price(struct agent_budget *b, const char *model, double prompt_per_mtok,
			   double completion_per_mtok);

/**
 * Read prices from text: entries "MODEL=PROMPT/COMPLETION" (USD per
 * million tokens) separated by commas or whitespace, e.g.
 * "gpt-4o=2.5/10, *=1/2". FX_EINVAL naming the bad entry (nothing is
 * set then).
 */
int agent_budget_parse_prices(struct agent_budget *b, const char *text);

/** The price of `model`, else the "*" price, else NULL. Borrowed. */
const struct agent_price *agent_budget_price(const struct agent_budget *b, const char *model);

/**
 * Charge one call of `model` using `usage`. Returns the call's cost in
 * USD, or -1 when the model has no price (the tokens still count).
 */
double agent_budget_charge(struct agent_budget *b, const char *model,
			   const struct llm_usage *usage);

/**
 * Whether the budget is spent: appends why to `why` (may be NULL;
 * "token budget spent: 10240 of 10000 tokens", "cost budget spent: ...",
 * "wall-clock budget spent: ...") and returns 1; else 0.
 */
int agent_budget_spent(const struct agent_budget *b, struct buf *why);

/** Receives an event (see the overview); owns `fields`. */
typedef void (*agent_event_fn)(void *data, const char *type, json_t *fields);

/** How tools are offered to the model. */
enum agent_tool_mode {
	AGENT_TOOLS_NATIVE = 0,	/* OpenAI function calling */
	AGENT_TOOLS_TEXT,	/* described in the prompt, called with ```json blocks */
};

/** What agent_run() needs. Everything is borrowed for the call. */
struct agent_opts {
	enum agent_role role;
	const char *system_prompt;	/* NULL: role_prompt(role) */
	const char *task;		/* the user's message: required, non-empty */
	int plain_answer;		/* no terminal tool: a reply without calls ends the loop (ask) */

	struct provider *provider;	/* required */
	const char *model;		/* NULL or "": the provider's model */
	double temperature;		/* < 0: not sent */
	long max_turns;			/* model calls at most; <= 0: AGENT_MAX_TURNS_DEFAULT */
	enum agent_tool_mode tool_mode;
	const char *edit_tools;		/* [providers.NAME] edit_tools; NULL: by the model's name */

	struct tool_ctx *tools;		/* required: the registry and the workspace */
	struct agent_budget *budget;	/* NULL: unlimited */

	agent_event_fn on_event;	/* NULL: no events */
	void *event_data;
	const volatile sig_atomic_t *cancel;	/* non-zero: stop (NULL: never) */
	int stream;			/* 1: streamed reply, 0: not (overrides the provider's
					 * `stream` for each call; pass provider->stream to keep it) */
	llm_text_fn on_text;		/* streamed text of every reply (may be NULL) */
	void *text_data;

	size_t tool_result_max;		/* 0: AGENT_TOOL_RESULT_MAX */
	long context_window;		/* tokens; 0: the provider's (provider_context_window()) */

	/*
	 * A conversation that goes on across calls (the interactive session):
	 * NULL, a fresh request per call. Else, when it holds messages, its
	 * system prompt and tools are kept (`system_prompt` is not used) and
	 * `task` is appended as the next user message; when empty, it is
	 * started as a fresh request would be. Either way it holds the whole
	 * conversation (compacted, as every request is) when agent_run()
	 * returns, whatever the status.
	 */
	struct llm_request *conversation;
};

#define AGENT_OPTS_INIT { .role = ROLE_ARCHITECT, .temperature = -1.0 }

/** The outcome of agent_run(). Everything is owned. */
struct agent_result {
	enum agent_status status;
	json_t *terminal_args;	/* AGENT_DONE: the terminal tool's arguments; else NULL */
	char *terminal_tool;	/* AGENT_DONE: its name; else NULL */
	char *answer;		/* the text of the last reply ("" when none; never NULL) */
	struct llm_usage usage;	/* summed over this run's model calls */
	double cost_usd;	/* of this run's calls that had a price */
	int turns;		/* model calls made */
	int tool_calls;		/* tool calls dispatched (refusals included) */
	char *error;		/* why it ended when not DONE/ANSWERED (never NULL then); else NULL */
	int error_code;		/* AGENT_PROVIDER_ERROR: the provider's FX_E* code; else 0 */
	char *finish_reason;	/* of the last reply ("" when none; never NULL) */
	char *model;		/* the model that gave the last reply, as the server named it */
	struct strvec warnings;	/* for the person, from the provider (lenient replay) */
	long trimmed;		/* messages shortened or summarised by compaction */
	int compactions;	/* compaction steps */
	/*
	 * A conversation: the person's message could not fit the window, even
	 * with the conversation compacted; nothing was sent and the message is
	 * not in the conversation (AGENT_PROVIDER_ERROR, FX_ELIMIT).
	 */
	int refused;
};

#define AGENT_RESULT_INIT { AGENT_DONE, NULL, NULL, NULL, { 0, 0, 0, 0 }, 0.0, 0, 0, NULL, 0, \
			    NULL, NULL, STRVEC_INIT, 0, 0, 0 }

/**
 * Run the loop described in the overview for `opts->role`. Blocks until it
 * ends; fills `out` (AGENT_RESULT_INIT or released) and returns 0 whatever
 * the status. Returns FX_EINVAL, with `out` untouched, when the options
 * are unusable (no provider, no tools, no task, an unknown role).
 */
int agent_run(struct agent_result *out, const struct agent_opts *opts);

/** What a request with a person's message takes of the model's window (agent_fit()). */
struct agent_fit {
	long window;		/* tokens */
	const char *window_source;	/* static: "config", "llama.cpp /props", ... */
	long limit;		/* tokens a request may take: the window less the reply's reserve */
	long request;		/* tokens of the request: the conversation and the message */
	long least;		/* tokens of the least request with it: system prompt, tools, message */
	long message;		/* tokens of the message alone */
};

/**
 * Whether `opts->task` can be sent on `opts->conversation` (or as a first
 * message): 1 when the least request holding it fits the window less the
 * reply's reserve (the rest of the conversation is then compacted as
 * needed), 0 when it cannot fit however the conversation is compacted.
 * Fills `fit` (estimates: AGENT_TOKENS_PER_BYTE). The conversation is left
 * as it was; nothing is sent but, the first time, the provider's question
 * of the server's window (provider_context_window()). FX_EINVAL as
 * agent_run() for unusable options.
 */
int agent_fit(struct agent_fit *fit, const struct agent_opts *opts);

/**
 * Compact `opts->conversation` at once (/compact): every message before
 * the person's latest message is summed up by the model (the plain list
 * of what was done when it cannot) at the end of the system prompt, as
 * "earlier in this conversation"; that message and what followed it stay,
 * their tool results as stubs and a message too large for the window
 * shortened to its head and tail. Uses
 * `provider`, `model`, `budget`, `tool_mode`, `context_window` and
 * `on_event` of `opts` (a "model_call" for the summary, then
 * "context_compact"). Fills `out` (usage; `trimmed`: messages replaced).
 * FX_EINVAL without a provider or conversation.
 */
int agent_compact(struct agent_result *out, const struct agent_opts *opts);

/** Free the contents of `r`; it is left as AGENT_RESULT_INIT. */
void agent_result_release(struct agent_result *r);

/** "done", "answered", "no_terminal", "max_turns", "budget", "loop_guard", "provider_error", "interrupted". */
const char *agent_status_name(enum agent_status s);

/**
 * Find the tool calls written in a reply's text (textcalls_parse(): the
 * Hermes/Qwen, Llama 3, Mistral, DeepSeek, fenced and bare JSON dialects)
 * naming one of `tools`; each becomes a call with id "text-TURN-N"
 * appended to `resp`. Messages for calls that could not be read are
 * pushed to `errors` (may be NULL). Returns the number of calls found.
 */
size_t agent_parse_text_calls(struct llm_response *resp, int turn, const struct strvec *tools,
			      struct strvec *errors);

#endif
