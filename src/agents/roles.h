#ifndef FX_AGENTS_ROLES_H
#define FX_AGENTS_ROLES_H

/*
 * The four roles of the pipeline (enum agent_role, config/config.h): what
 * each is told (its system prompt), what it may do (its permission set,
 * sandbox/permissions.h), and how it ends (its terminal tool).
 *
 *   role          permissions                                  terminal tool
 *   architect     read, research                               submit_plan
 *   builder       read, write, delete, terminal, git, test,    finish
 *                 build
 *   expert_coder  (as builder)                                 finish
 *   supervisor    read, test, build, git                       submit_verdict
 *
 * The terminal tools are registered here (roles_register_tools()), with
 * the same registry mechanism as every other tool, flagged TOOL_TERMINAL.
 * Their handlers only check what a schema cannot (a plan has at least one
 * step, a FAIL verdict says what to fix) and answer "accepted"; the agent
 * loop (agents/agent.h) hands the arguments to its caller.
 *
 * The JSON the terminal tools take (and agent_run() returns):
 *   submit_plan     {"summary": str, "steps": [{"id": str, "title": str,
 *                    "description": str, "files": [str]}], "acceptance": [str],
 *                    "test_command": [str] (optional)}
 *   finish          {"summary": str}
 *   submit_verdict  {"verdict": "PASS" | "FAIL", "reasons": [str],
 *                    "required_fixes": [str]}
 *
 * The caller (the pipeline, `forgex ask`):
 *   1. registry_init(); tools_register_builtin(); tools_register_shell()
 *      (tools/shell.h); roles_register_tools();
 *   2. for a role: role_tools() (or role_tools_json() for a custom set) for
 *      what the model is offered, role_permissions() for tool_dispatch(),
 *      role_build_prompt() for the system prompt;
 *   3. agent_run() (agents/agent.h) does 2. itself when given only the role.
 *
 * Nothing here blocks or prints.
 */

#include <jansson.h>

#include "base/buf.h"
#include "config/config.h"
#include "tools/registry.h"

/** Names of the terminal tools. */
#define ROLE_TOOL_SUBMIT_PLAN "submit_plan"
#define ROLE_TOOL_FINISH "finish"
#define ROLE_TOOL_SUBMIT_VERDICT "submit_verdict"

/**
 * The role's system prompt: what it must do, which tools it has, that paths
 * are relative to the workspace, that it must end with its terminal tool.
 * A static string; "" for a role forgex does not know.
 */
const char *role_prompt(enum agent_role role);

/**
 * The prompt of `forgex ask`: answer a question about the project with
 * the read-only tools, ending with a plain answer (no terminal tool).
 * A static string.
 */
const char *role_ask_prompt(void);

/**
 * The prompt of the interactive session (`forgex chat`): the Builder's
 * tools, a conversation that goes on, each turn ending with a plain
 * answer. A static string.
 */
const char *role_chat_prompt(void);

/**
 * Append the full system prompt of `role` to `out`: role_prompt(), then a
 * line naming the workspace folder `workspace` (may be NULL), then `extra`
 * (may be NULL or ""; project instructions, a repository map) under a
 * heading.
 */
void role_build_prompt(struct buf *out, enum agent_role role, const char *workspace,
		       const char *extra);

/**
 * The permission set of `role` (permissions_for_role() of its name):
 * enum permission bits; 0 for a role forgex does not know.
 */
unsigned role_permissions(enum agent_role role);

/**
 * The name of the tool that ends `role`'s loop ("submit_plan", "finish",
 * "submit_verdict"); NULL for a role forgex does not know.
 */
const char *role_terminal_tool(enum agent_role role);

/**
 * The tools `role` is offered, as the OpenAI `tools` array (see
 * tools_for_role()): exactly the non-terminal tools of `reg` its
 * permissions allow, plus its own terminal tool when `reg` holds it.
 * role_tools_json(reg, role_permissions(role), role_terminal_tool(role)).
 * New reference.
 */
json_t *role_tools(const struct tool_registry *reg, enum agent_role role);

/** Which edit tools a role is offered: bits of these. */
enum role_edit_tools {
	ROLE_EDIT_FILE = 1 << 0,	/* edit_file */
	ROLE_APPLY_PATCH = 1 << 1,	/* apply_patch */
};

/**
 * The edit tools for `[providers.NAME] edit_tools` = `setting`
 * ("edit_file", "apply_patch", "both"; anything else, "auto" or NULL:
 * chosen by the model's name): apply_patch for the families trained on it
 * (GPT-4.1, GPT-5, the o-series, the codex models; a "provider/" prefix is
 * ignored, gpt-oss is not one of them), edit_file for every other model.
 */
unsigned role_edit_tools(const char *setting, const char *model);

/**
 * A sentence for the system prompt when the edit tools are not edit_file
 * alone (the role prompts name edit_file), or NULL. Static.
 */
const char *role_edit_note(unsigned edit);

/**
 * The tools of `reg` that `granted` allows, except the TOOL_TERMINAL ones,
 * plus the terminal tool called `terminal` (NULL: none; it is offered
 * even when `granted` lacks what it needs — terminal tools need nothing).
 * Registration order. New reference.
 */
json_t *role_tools_json(const struct tool_registry *reg, unsigned granted, const char *terminal);

/**
 * The same for the role `role` (enum agent_role; -1: none): a tool whose
 * `roles` bits are set is listed only for those roles.
 */
json_t *role_tools_json_for(const struct tool_registry *reg, int role, unsigned granted,
			    const char *terminal);

/**
 * role_tools_json_for() offering the edit tools `edit` (enum
 * role_edit_tools bits) and leaving the other one out.
 * role_tools_json_for() is this with ROLE_EDIT_FILE. New reference.
 */
json_t *role_tools_json_edit(const struct tool_registry *reg, int role, unsigned granted,
			     const char *terminal, unsigned edit);

/**
 * Whether a call of the tool `name` is open to a loop holding `granted`
 * whose terminal tool is `terminal` (NULL: none): a terminal tool only
 * when it is that one. When not, appends the refusal the model gets
 * ("refused: submit_plan is not available to this role; end with finish")
 * to `why` and returns 0. Non-terminal and unknown tools return 1:
 * tool_dispatch() judges them.
 */
int role_tool_allowed(const struct tool_registry *reg, const char *name, const char *terminal,
		      struct buf *why);

/**
 * Register submit_plan, finish and submit_verdict (TOOL_TERMINAL, needing
 * no permission) in `reg`. FX_EEXISTS when one is already there.
 */
int roles_register_tools(struct tool_registry *reg);

#endif
