#ifndef FX_PIPELINE_HOOKS_H
#define FX_PIPELINE_HOOKS_H

/*
 * User hooks: commands configured as [[hooks.EVENT]] that run around the
 * steps of a run, as Claude Code's and Codex's users script their own
 * checks.
 *
 * Events, and what each hook gets on stdin (one JSON object: always
 * "event", "run_id", "workspace", plus):
 *   session_start   "request"
 *   user_prompt     "request"            may block the run
 *   pre_tool        "role", "tool", "arguments"           may block the call
 *   post_tool       "role", "tool", "arguments", "status", "result"
 *   pre_verify      "what" (baseline, verify), "command"
 *   post_verify     "what", "result" (counts and failing tests)
 *   stop            "outcome", "reason"
 *
 * A hook runs through the executor exactly as an agent's command does:
 * the command policy, the approval mode, the sandbox (it cannot write
 * outside the workspace), the output cap, and its own timeout
 * (timeout_seconds, default 60: then it is killed). Its answer:
 *   - exit 0: go on. For post_tool, what it prints on stdout (or the
 *     "message" of a JSON object it prints) is added to the tool's result
 *     for the model. A JSON object {"decision": "block", "reason": R} on
 *     stdout blocks as exit 2 does.
 *   - exit 2: block (pre_tool: the call is refused, and the reason, its
 *     stderr or stdout, goes to the model; user_prompt: the run ends before
 *     anything changes). For other events it is reported, nothing more.
 *   - anything else (another status, a timeout, a refusal by the policy):
 *     reported as an event and on stderr, and the run goes on: a broken
 *     hook never crashes a run and never blocks one.
 * `matcher` ("write_file|edit_file", "git_*") limits pre_tool and
 * post_tool hooks to tools whose name matches one of the patterns
 * (fnmatch); empty: every tool.
 *
 * The caller:
 *   1. hooks_init() with the configuration and the executor;
 *   2. hooks_tool_hooks() into the tool context, and hooks_fire() at the
 *      other events;
 *   3. nothing to release beyond the struct (it borrows everything).
 */

#include <jansson.h>

#include "base/buf.h"
#include "config/config.h"
#include "sandbox/executor.h"
#include "tools/registry.h"

/** Called with each "hook" event: {event, command, exit_code, duration_ms, blocked, error}. */
typedef void (*hooks_event_fn)(void *data, json_t *fields);

struct hooks {
	const struct config *cfg;
	struct executor *ex;
	const char *run_id;
	hooks_event_fn on_event;	/* may be NULL */
	void *event_data;
	size_t ran;			/* hooks run so far */
};

void hooks_init(struct hooks *h, const struct config *cfg, struct executor *ex, const char *run_id,
		hooks_event_fn on_event, void *event_data);

/** Whether any hook is configured for `event`. */
int hooks_have(const struct hooks *h, const char *event);

/**
 * Run every hook of `event` (for pre_tool/post_tool: whose matcher takes
 * `tool`) with `input` (borrowed; the common members are added to a copy).
 * Returns 1 when one blocked (its reason in `why`), else 0; what hooks
 * said for the model (post_tool) is appended to `message` (may be NULL).
 * Never fails: a hook that could not run is reported through the event.
 */
int hooks_fire(struct hooks *h, const char *event, const char *tool, const json_t *input,
	       struct buf *why, struct buf *message);

/** pre_tool / post_tool as tool_dispatch() calls them. */
void hooks_tool_hooks(struct tool_hooks *out, struct hooks *h);

#endif
