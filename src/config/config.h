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
	char *type;		/* "openai" (any OpenAI-compatible server) | "replay" */
	char *base_url;
	char *api_key_env;	/* the NAME of the variable holding the key */
	char *model;
	long timeout_seconds;
	long max_retries;
	char *tool_mode;	/* "native" | "text" */
	int stream;		/* SSE streaming (default true) */
	struct strvec headers;	/* extra request headers, "Name: value" */
	char *transcript;	/* replay: the transcript to answer from */
	char *replay_mode;	/* replay: "strict" | "lenient" */
};

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

struct config {
	struct {
		char *mode;	/* "safe" | "ask" | "auto" */
	} permissions;
	struct {
		struct strvec allowed;
		struct strvec denied;
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
		char *cpu_limit;
		char *image;
		int read_only;
		char *user;
		int allow_unconfined;
	} sandbox;
	struct provider_config *providers;
	size_t providers_nr, providers_alloc;
	struct agent_config agents[ROLE__COUNT];
	struct {
		long max_iterations;
		struct strvec test_command;
		int baseline;
		char *on_failure;	/* "rollback" | "keep" */
		int commit;
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
		long max_tokens;
		double max_cost_usd;
		long max_wall_seconds;
		struct strvec prices;	/* "MODEL=PROMPT/COMPLETION" USD per million tokens */
	} budget;

	/* Where things are. All absolute; NULL when unknown. */
	char *workspace;	/* the project root */
	char *project_file;	/* <workspace>/.forgex/config.toml */
	char *user_file;

	/* Origin of every key that was set, for `config show` (private). */
	struct cfg_set_record *records;
	size_t records_nr, records_alloc;
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

/** The user file's path from XDG_CONFIG_HOME or HOME (caller frees); NULL if neither is set. */
char *config_user_file(void);

/**
 * Set cfg->workspace from `start` and apply, in order, the user file, the
 * project file (each when it exists) and the environment.
 */
int config_load(struct config *cfg, const char *start);

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

/** The provider called `name`, or NULL. */
struct provider_config *config_provider(struct config *cfg, const char *name);

/** The agent settings of `role`. */
struct agent_config *config_agent(struct config *cfg, enum agent_role role);

/** "architect", "builder", "expert_coder", "supervisor". */
const char *config_role_name(enum agent_role role);
/** The role called `name`, or -1. */
int config_role_from_name(const char *name);

/** "default", "user", "project", "env", "flag". */
const char *config_origin_name(enum cfg_origin o);

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
