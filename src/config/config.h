#ifndef FX_CONFIG_H
#define FX_CONFIG_H

/*
 * forgex configuration: the schema of DESIGN.md section 3, its defaults,
 * and the merge of its layers.
 *
 * Precedence, lowest first: built-in defaults < user file
 * ($XDG_CONFIG_HOME/forgex/config.toml, else ~/.config/forgex/config.toml)
 * < project file (.forgex/config.toml in the project root) < environment
 * (FORGEX_<SECTION>_<KEY>, e.g. FORGEX_PERMISSIONS_MODE; for named tables
 * FORGEX_PROVIDERS_<NAME>_<KEY> and FORGEX_AGENTS_<ROLE>_<KEY>) < flags.
 *
 * The caller:
 *   1. config_init() for the defaults;
 *   2. config_load() to find the project and apply the files and the
 *      environment (or config_apply_file() / config_apply_env() one by one);
 *   3. config_set() for each command-line flag, with CFG_FLAG;
 *   4. reads the typed fields below;
 *   5. config_release().
 *
 * Every layer is validated whole before any of it applies, so a bad file
 * changes nothing. Errors (FX_EINVAL, FX_EPARSE) name the file, the line
 * and the key.
 */

#include <stdio.h>

#include "base/buf.h"
#include "base/strvec.h"

enum cfg_origin {
	CFG_DEFAULT = 0,
	CFG_USER,
	CFG_PROJECT,
	CFG_ENV,
	CFG_FLAG,
};

/** One [providers.NAME] table. */
struct provider_config {
	char *name;
	char *type;		/* "openai" (any OpenAI-compatible server) | "ollama" | "replay" */
	char *base_url;
	char *api_key_env;	/* the NAME of the variable holding the key */
	char *model;
	long timeout_seconds;
	long idle_timeout_seconds;	/* an attempt that receives nothing this long is retried */
	long max_retries;
	char *tool_mode;	/* "native" | "text" */
	char *edit_tools;	/* "auto" | "edit_file" | "apply_patch" | "both" */
	int stream;		/* SSE streaming (default true) */
	struct strvec headers;	/* extra request headers, "Name: value" */
	char *transcript;	/* replay: the transcript to answer from */
	char *replay_mode;	/* replay: "strict" | "lenient" */
	long context_window;	/* tokens; 0: ask the server */
	char *probe_window;	/* "local" | "always" | "never": which servers are asked */
};

/**
 * One [mcp_servers.NAME] table: a Model Context Protocol server whose tools
 * the agents may call (src/mcp/). Exactly one of `command` (stdio: a
 * child process) and `url` (Streamable HTTP) is set.
 */
struct mcp_server_config {
	char *name;
	char *command;		/* stdio: the program; "" for an HTTP server */
	struct strvec args;
	struct strvec env;	/* "NAME=value", or "NAME" to pass forgex's own value on */
	char *cwd;		/* relative to the workspace; "": a private folder outside it */
	int writable;		/* stdio: the workspace is writable to it (else read-only) */
	struct strvec allowed_domains;	/* stdio: its network, through the egress proxy; empty: none */
	char *url;		/* Streamable HTTP endpoint; "" for a stdio server */
	char *bearer_token_env;	/* the NAME of the variable holding the token */
	int enabled;
	long startup_timeout_seconds;
	long tool_timeout_seconds;
	struct strvec enabled_tools;	/* empty: every tool */
	struct strvec disabled_tools;
	struct strvec roles;	/* empty: builder and expert_coder (read-only tools: every role) */
	enum cfg_origin origin;	/* the layer that first named this server */
};

/**
 * One [[hooks.EVENT]] entry: a command run around a step (see
 * src/pipeline/hooks.h). Hooks of the user file and the project file all
 * run, in that order.
 */
struct hook_config {
	char *event;		/* session_start, user_prompt, pre_tool, post_tool, pre_verify, post_verify, stop */
	struct strvec command;	/* argv */
	char *matcher;		/* tool name patterns "a|b*" (pre_tool, post_tool); "": every tool */
	long timeout_seconds;
	enum cfg_origin origin;
	char *where;		/* "FILE:LINE" */
};

/** The events a hook may be configured for, NULL-terminated. */
extern const char *const config_hook_events[];

/** One [agents.ROLE] table. */
struct agent_config {
	char *provider;
	char *model;		/* "": the provider's model */
	long max_turns;
	double temperature;
};

enum agent_role {
	ROLE_ARCHITECT = 0,
	ROLE_BUILDER,
	ROLE_EXPERT_CODER,
	ROLE_SUPERVISOR,
	ROLE__COUNT,
};

/**
 * Whether the project file `path` with content hash `hash` (hex SHA-256)
 * is trusted: 1 yes, 0 no (`*changed` = 1 when it was trusted with other
 * content), negative when that cannot be told (error in err_last()).
 */
typedef int (*config_trust_fn)(const char *path, const char *hash, int *changed, void *data);

struct config {
	struct {
		char *mode;	/* "safe" | "ask" | "auto" */
	} permissions;
	struct {
		struct strvec allowed;
		struct strvec denied;
		/* names an untrusted project file adds to the deny list (see trust) */
		struct strvec denied_add;
		long timeout_seconds;
		long max_output_bytes;
	} terminal;
	struct {
		char *backend;	/* "auto" | "native" | "docker" | "none" */
		int network;
		struct strvec writable_roots;
		long max_processes;
		char *memory_limit;
		char *tmp_size;
		char *max_write_bytes;
		struct strvec hidden;
		struct strvec allowed_domains;	/* the egress proxy's lists (network = true) */
		struct strvec denied_domains;
		char *cpu_limit;
		char *image;
		int read_only;
		char *user;
		int allow_unconfined;
	} sandbox;
	struct provider_config *providers;
	size_t providers_nr, providers_alloc;
	struct agent_config agents[ROLE__COUNT];
	struct mcp_server_config *mcp_servers;
	size_t mcp_servers_nr, mcp_servers_alloc;
	struct hook_config *hooks;
	size_t hooks_nr, hooks_alloc;
	struct {
		long max_iterations;
		struct strvec test_command;
		int baseline;
		char *on_failure;	/* "rollback" | "keep" */
		int commit;
		struct strvec must_pass;	/* test ids the gate requires to pass */
	} pipeline;
	struct {
		struct strvec voters;
		char *quorum;	/* "majority" | "unanimous" | "any" */
	} review;
	struct {
		long map_tokens;
		struct strvec instructions;
	} context;
	struct {
		long max_file_bytes;	/* a larger file is listed as too large, not stored */
	} checkpoints;
	struct {
		long max_tokens;
		double max_cost_usd;
		long max_wall_seconds;
		struct strvec prices;	/* "MODEL=PROMPT/COMPLETION" USD per million tokens */
	} budget;
	struct {		/* forgex batch; its flags override these */
		long jobs;	/* 0: the cores */
		long wall_seconds, grace_seconds;	/* per task */
		long max_tokens;	/* per task */
		double max_cost_usd;	/* per task */
		double max_cost_total_usd;	/* the whole batch */
		char *url_template;	/* holds "{repo}" */
		int keep;
	} batch;

	/* Where things are. All absolute; NULL when unknown. */
	char *workspace;	/* the project root */
	char *project_file;	/* <workspace>/.forgex/config.toml */
	char *user_file;

	/* Origin of every key that was set, for `config show` (private). */
	struct cfg_set_record *records;
	size_t records_nr, records_alloc;

	/*
	 * Project trust (DESIGN.md section 4). config_load() reads the project
	 * file beneath the workspace without following links, hashes it, and
	 * asks `trust_fn` (NULL: nothing is trusted) whether the user trusted
	 * it as it is. An untrusted file's keys in the trust gate may only
	 * tighten; the others are listed in `ignored`.
	 */
	config_trust_fn trust_fn;
	void *trust_data;
	int project_exists;	/* there is a project file */
	int project_trusted;	/* ... and it is trusted (config_apply_*() honours it) */
	int project_changed;	/* it was trusted with other content */
	char project_hash[65];	/* SHA-256 of its content, hex; "" when none */
	char *trust_error;	/* why the trust store could not be read, or NULL */
	struct cfg_ignored *ignored;
	size_t ignored_nr, ignored_alloc;
	/* .forgex/config.toml files below the workspace root, never read */
	struct strvec nested_ignored;
};

/** A key of an untrusted project file that was not taken (or taken only in part). */
struct cfg_ignored {
	char *key;		/* "sandbox.backend" */
	char *where;		/* "FILE:LINE" */
	char *value;		/* as written, TOML */
	char *reason;		/* "would loosen \"auto\"" */
	int partly;		/* 1: applied in its tightening part (the deny list's additions) */
};

#define CONFIG_INIT { 0 }


/** Fill `cfg` with the built-in defaults (one provider, "default"). */
void config_init(struct config *cfg);
void config_release(struct config *cfg);

/**
 * Find the project root by walking up from `start` (NULL: the current
 * folder) to the first folder holding `.forgex/` or `.git`; when none,
 * `start` itself. `*out` is absolute (caller frees).
 */
int config_find_workspace(char **out, const char *start);

/** The user file's path from XDG_CONFIG_HOME or HOME (base/xdg.h; caller frees); NULL if neither is an absolute path. */
char *config_user_file(void);

/**
 * Set cfg->workspace from `start` and apply, in order, the user file, the
 * project file (each when it exists) and the environment.
 */
int config_load(struct config *cfg, const char *start);

/**
 * Read `workspace`/.forgex/config.toml as config_load() does: beneath the
 * workspace, following no symbolic link, regular files only, at most 1 MiB.
 * FX_ENOTFOUND when there is none, FX_EDENIED naming a link.
 */
int config_read_project(struct buf *out, const char *workspace);

/** Apply one TOML file as layer `origin` (CFG_USER or CFG_PROJECT). */
int config_apply_file(struct config *cfg, const char *path, enum cfg_origin origin);

/** Apply TOML text (tests); `name` is used in messages as the file name. */
int config_apply_string(struct config *cfg, const char *text, size_t len,
			const char *name, enum cfg_origin origin);

/** Apply the FORGEX_* variables of `envp` (NULL: environ). */
int config_apply_env(struct config *cfg, const char *const *envp);

/**
 * Set one key from text, as a flag would ("sandbox.backend", "none";
 * "terminal.allowed", "[\"ls\", \"cat\"]" or "ls,cat"). `origin` is
 * usually CFG_FLAG.
 */
int config_set(struct config *cfg, const char *key, const char *value, enum cfg_origin origin);

/**
 * Check what no single key can: every role's provider exists. config_load()
 * calls it; call it again after config_set().
 */
int config_validate(struct config *cfg);

/**
 * Whether `key`'s value came from a project file nobody trusted. An
 * ungated key applies from there, but what it would approve on the user's
 * behalf must not: `pipeline.test_command` counts as approved only from a
 * trusted layer.
 */
int config_from_untrusted_project(const struct config *cfg, const char *key);

/** The provider called `name`, or NULL. */
struct provider_config *config_provider(struct config *cfg, const char *name);

/** The MCP server called `name`, or NULL. */
struct mcp_server_config *config_mcp_server(struct config *cfg, const char *name);

/** The agent settings of `role`. */
struct agent_config *config_agent(struct config *cfg, enum agent_role role);

/** "architect", "builder", "expert_coder", "supervisor". */
const char *config_role_name(enum agent_role role);
/** The role called `name`, or -1. */
int config_role_from_name(const char *name);

/** "default", "user", "project", "env", "flag". */
const char *config_origin_name(enum cfg_origin o);

/**
 * How an untrusted project file may change gated key `key` ("sandbox.backend",
 * "providers.NAME.base_url"): a sentence for documentation and messages,
 * or NULL when the key is not gated.
 */
const char *config_trust_rule(const char *key);

/** Calls `fn` for each key in schema order with its TOML-formatted value and origin. */
typedef void (*config_visit_fn)(const char *key, const char *value, enum cfg_origin origin,
				const char *where, const char *doc, void *data);
void config_visit(const struct config *cfg, config_visit_fn fn, void *data);

/**
 * Append the TOML form of `key`'s effective value to `out`, and its
 * origin to `*origin` (may be NULL). FX_ENOTFOUND for an unknown key.
 */
int config_get(const struct config *cfg, const char *key, struct buf *out, enum cfg_origin *origin);

/** Write the commented template of `forgex init` (every key, default, and a line of help). */
void config_write_template(struct buf *out);

#endif
