#ifndef FX_TOOLS_REGISTRY_H
#define FX_TOOLS_REGISTRY_H

/*
 * The tools a model may call: each has a name, a description, a JSON
 * Schema of its arguments, the permissions it needs (sandbox/permissions.h
 * bits), a handler and flags. One mechanism for every tool: the file,
 * search and git tools of this folder register themselves with
 * tools_register_builtin(); run_command, run_tests, submit_plan, finish
 * and submit_verdict are registered the same way by the layers that own
 * them (TOOL_TERMINAL marks the ones that end an agent's turn loop).
 *
 * The caller:
 *   1. registry_init(), tools_register_builtin() and registry_add() for
 *      any further tool;
 *   2. tool_ctx_init() with the registry and the workspace;
 *   3. tools_for_role(reg, granted) for the `tools` of a model request;
 *   4. for each call the model makes: tool_dispatch(ctx, granted, name,
 *      arguments, &result), and send `result` back as the call's result,
 *      whatever the status;
 *   5. tool_ctx_release(), registry_release().
 *
 * tool_dispatch() never lets a call through that the role may not make,
 * that names no tool, or whose arguments do not match the schema: the
 * refusal is the result, with the status TOOL_REFUSED. The handler never
 * sees arguments its schema does not allow.
 *
 * The schema language is the subset of JSON Schema that the validator
 * here implements, and registry_add() refuses a schema that uses
 * anything else: "type" (a name or a list of names: object, array,
 * string, integer, number, boolean, null), "properties", "required",
 * "items", "enum", "minimum", "maximum", "minLength", "minItems",
 * "additionalProperties": false, and "description" (not checked).
 * Parameters are always an object; unknown properties are refused.
 */

#include <jansson.h>

#include "base/buf.h"
#include "base/strvec.h"
#include "ws/wspath.h"

struct tool_ctx;
struct tool_registry;

/**
 * A handler. `args` has been validated against the tool's schema. On
 * success it appends its output to `result` and returns 0. On failure it
 * returns a negative FX_E* code, and either appends its explanation to
 * `result` or leaves `result` empty and records it with err_set().
 */
typedef int (*tool_fn)(struct tool_ctx *ctx, const json_t *args, struct buf *result);

enum tool_flags {
	TOOL_TERMINAL = 1 << 0,	/* a call ends the agent's loop (finish, submit_plan, ...) */
	/*
	 * The schema is someone else's (an MCP server's): it goes to the model
	 * as it is, is not held to the subset below, and arguments are only
	 * checked to be an object; the handler validates (or the server does).
	 */
	TOOL_OPEN_SCHEMA = 1 << 1,
};

/** `roles` of a tool: bit (1u << ROLE_X) for each role that sees it. */
#define TOOL_ROLE(r) (1u << (r))

/** What registry_add() copies. */
struct tool_def {
	const char *name;		/* [a-zA-Z0-9_-]{1,64}, as the OpenAI API wants */
	const char *description;
	const char *parameters;		/* the JSON Schema of the arguments, as text */
	unsigned needs;			/* enum permission bits */
	unsigned flags;			/* enum tool_flags */
	tool_fn fn;
	void *data;			/* for the handler: tool_ctx_data() */
	unsigned roles;			/* TOOL_ROLE() bits; 0: any role `needs` allows */
};

/** A registered tool (read-only for callers). */
struct tool {
	char *name;
	char *description;
	json_t *schema;			/* parsed parameters (owned) */
	unsigned needs;
	unsigned flags;
	tool_fn fn;
	void *data;
	unsigned roles;
};

struct tool_registry {
	struct tool *tools;
	size_t nr, alloc;
};

#define TOOL_REGISTRY_INIT { NULL, 0, 0 }

/** An empty registry (same as TOOL_REGISTRY_INIT). */
void registry_init(struct tool_registry *reg);
/** Free every tool; leaves the registry empty. */
void registry_release(struct tool_registry *reg);

/**
 * Add a tool. FX_EINVAL when the name is not a valid function name, the
 * description is empty, or the schema is not JSON, not an object schema,
 * or uses a keyword the validator does not implement; FX_EEXISTS when the
 * name is taken. Registration order is the order tools_for_role() lists.
 */
int registry_add(struct tool_registry *reg, const struct tool_def *def);

/** The tool called `name`, or NULL. Borrowed from the registry. */
const struct tool *registry_find(const struct tool_registry *reg, const char *name);

/**
 * The tools whose needs `granted` covers, as the OpenAI `tools` array:
 * [{"type":"function","function":{"name","description","parameters"}}].
 * A new reference (caller decrefs).
 */
json_t *tools_for_role(const struct tool_registry *reg, unsigned granted);

/** Limits of what tools return, in bytes, lines and entries. */
struct tool_limits {
	size_t read_bytes;	/* read_file: bytes of file content shown */
	size_t read_lines;	/* read_file: lines shown */
	size_t file_bytes;	/* largest file edit_file and read_file will load */
	size_t list_entries;	/* list_dir */
	size_t search_results;	/* search: default max_results */
	size_t search_line;	/* search: bytes of a matching line shown */
	size_t output_bytes;	/* git_status, git_diff */
};

#define TOOL_LIMITS_DEFAULT { 256 * 1024, 2000, 16 * 1024 * 1024, 1000, 200, 300, 128 * 1024 }

/**
 * Called by tool_dispatch() around a call that passed its checks (user
 * hooks, src/pipeline/hooks.h). `pre` returns 1 to block the call, with
 * the reason in `why` (the model is told); `post` may append a message for
 * the model to `note`. Both may be NULL.
 */
struct tool_user_hooks {
	int (*pre)(void *data, const char *tool, int role, const json_t *args, struct buf *why);
	void (*post)(void *data, const char *tool, int role, const json_t *args, int status,
		     const struct buf *result, struct buf *note);
	void *data;
};

/*
 * Hooks a run sets so that it knows (and can undo) everything the tools
 * change (pipeline/journal.h). Every tool that writes, replaces, moves or
 * deletes an entry of the workspace calls tool_ctx_before_change() on it
 * before, and tool_ctx_changed() after; a non-zero return refuses the
 * change (the message says why). around_call is called before (after = 0)
 * and after (after = 1) every dispatched call.
 */
struct tool_hooks {
	int (*before_change)(void *data, const struct wspath_loc *loc);
	void (*after_change)(void *data, const char *rel);
	void (*around_call)(void *data, const struct tool *t, int after);
	void *data;
	/* before the temporary file `tmp` beside `rel` is created (< 0 refuses the write) */
	int (*before_tmp)(void *data, const char *rel, const char *tmp);
};

/** What every handler gets: the workspace and the record of changes. */
struct tool_ctx {
	const struct tool_hooks *hooks;	/* NULL: none */
	const struct tool_registry *registry;
	struct wspath_root root;	/* the workspace */
	struct strvec changed;		/* relative paths the tools changed, first change first */
	struct tool_limits limits;
	const struct tool *current;	/* the tool being dispatched */
	int role;			/* enum agent_role of the caller; -1: none (see `roles`) */
	struct tool_user_hooks user_hooks;	/* zero: none */
};

/**
 * Open the workspace folder `workspace` for tools of `reg`. FX_ENOTFOUND
 * when it is not a folder.
 */
int tool_ctx_init(struct tool_ctx *ctx, const struct tool_registry *reg, const char *workspace);
/** Close the workspace and free the record of changes. */
void tool_ctx_release(struct tool_ctx *ctx);

/** Record that the tools changed (or removed) `rel`; each path is kept once. */
void tool_ctx_changed(struct tool_ctx *ctx, const char *rel);

/**
 * Before a tool changes the entry `loc` (which may not exist yet): the
 * hook's answer (0, or a negative code refusing the change).
 */
int tool_ctx_before_change(struct tool_ctx *ctx, const struct wspath_loc *loc);

/**
 * Before a tool creates the temporary file `tmp` in the folder of `rel`
 * (fsutil_tmp_create()): the hook's answer (0, or a negative code refusing
 * the write).
 */
int tool_ctx_before_tmp(struct tool_ctx *ctx, const char *rel, const char *tmp);

/** The `data` of the tool being dispatched (NULL outside a handler). */
void *tool_ctx_data(const struct tool_ctx *ctx);

enum tool_status {
	TOOL_OK = 0,		/* the tool ran; `result` is its output */
	TOOL_FAILED = 1,	/* the tool ran and failed; `result` says why ("error: ...") */
	TOOL_REFUSED = 2,	/* not run: unknown tool, missing permissions, bad arguments, or the
				 * tool said FX_EDENIED (the policy, the person, a path outside) */
};

/**
 * Run the call `name`(`arguments`) for a role holding `granted`, and
 * append what goes back to the model to `result`. `arguments` is the JSON
 * text the model sent; NULL or blank counts as {}. Returns an enum
 * tool_status, never a negative code: refusals and failures are results.
 * Refusals read "refused: unknown tool 'x' ...", "refused: missing
 * permissions: write", "refused: invalid arguments for read_file: ...".
 */
int tool_dispatch(struct tool_ctx *ctx, unsigned granted, const char *name,
		  const char *arguments, struct buf *result);

/**
 * Check `value` against `schema` (the subset above). On a mismatch append
 * one message naming the place ("start_line: expected integer, got
 * string") to `why` and return FX_EINVAL.
 */
int schema_validate(const json_t *schema, const json_t *value, struct buf *why);

/** Whether `schema` uses only the subset above; FX_EINVAL naming the first problem. */
int schema_check(const json_t *schema);

/*
 * Arguments, for handlers (after validation): a missing optional member
 * gives the default.
 */
/** The string member `key`, or NULL. */
const char *tool_arg_str(const json_t *args, const char *key);
/** The integer member `key` (an integral number counts), or `def`. */
long long tool_arg_int(const json_t *args, const char *key, long long def);
/** The boolean member `key`, or `def`. */
int tool_arg_bool(const json_t *args, const char *key, int def);

/** Register read_file, list_dir, write_file, delete_file, move_file (fs.c). */
int tools_register_fs(struct tool_registry *reg);
/** Register edit_file (edit.c). */
int tools_register_edit(struct tool_registry *reg);
/** Register search (search.c). */
int tools_register_search(struct tool_registry *reg);
/** Register git_status and git_diff (git.c). */
int tools_register_git(struct tool_registry *reg);
/** All of the above, in that order, with apply_patch (tools/patch.h) after edit_file. */
int tools_register_builtin(struct tool_registry *reg);

#endif
