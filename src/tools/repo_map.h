#ifndef FX_TOOLS_REPO_MAP_H
#define FX_TOOLS_REPO_MAP_H

/*
 * The `repo_map` tool: the repository map of a run's context session
 * (context/context.h), centred on what the model names in `focus`, in at
 * most `tokens` tokens. Needs the read permission.
 */

struct ctx_session;
struct tool_registry;

/**
 * Register `repo_map` in `reg`, answering from `s` (borrowed: it must
 * outlive the registry's use of the tool).
 */
int tools_register_repo_map(struct tool_registry *reg, struct ctx_session *s);

#endif
