#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/path.h"
#include "base/sha256.h"
#include "config/config.h"
#include "config/toml.h"

extern char **environ;

#define CONFIG_FILE_MAX (1024 * 1024)

/* T_MAP: strings "NAME=value" (or "NAME"), from a TOML table of strings or an array */
enum cfg_type { T_STR, T_INT, T_FLOAT, T_BOOL, T_LIST, T_MAP };
enum cfg_scope { S_ROOT, S_PROVIDER, S_AGENT, S_MCP };

struct cfg_key {
	const char *section;		/* "permissions"; "providers"/"agents" for named tables */
	const char *key;
	enum cfg_type type;
	enum cfg_scope scope;
	size_t offset;			/* into struct config / provider_config / agent_config */
	const char *def_str;		/* T_STR */
	double def_num;			/* T_INT, T_FLOAT, T_BOOL */
	const char *const *def_list;	/* T_LIST, NULL-terminated */
	const char *const *choices;	/* T_STR: the allowed values, NULL-terminated */
	double min, max;		/* T_INT, T_FLOAT */
	const char *doc;
};

struct cfg_set_record {
	char *key;			/* "providers.default.model" */
	enum cfg_origin origin;
	char *where;			/* "FILE:LINE", "FORGEX_X", "-c" */
};

static const char *const modes[] = { "safe", "ask", "auto", NULL };
static const char *const backends[] = { "auto", "native", "docker", "none", NULL };
static const char *const provider_types[] = { "openai", "ollama", "replay", NULL };
static const char *const tool_modes[] = { "native", "text", NULL };
static const char *const edit_tools[] = { "auto", "edit_file", "apply_patch", "both", NULL };
static const char *const replay_modes[] = { "strict", "lenient", NULL };
static const char *const on_failures[] = { "rollback", "keep", NULL };
static const char *const quorums[] = { "majority", "unanimous", "any", NULL };
static const char *const def_instructions[] = {
	"AGENTS.md", "FORGEX.md", "CLAUDE.md", ".github/copilot-instructions.md", NULL,
};
static const char *const empty_list[] = { NULL };

#define R(field) S_ROOT, offsetof(struct config, field)
#define P(field) S_PROVIDER, offsetof(struct provider_config, field)
#define A(field) S_AGENT, offsetof(struct agent_config, field)
#define M(field) S_MCP, offsetof(struct mcp_server_config, field)
#define BIG 1e15

static const struct cfg_key schema[] = {
	{ "permissions", "mode", T_STR, R(permissions.mode), "ask", 0, NULL, modes, 0, 0,
	  "approval of commands that need it: safe (never), ask (on the terminal), auto (always)" },

	{ "terminal", "allowed", T_LIST, R(terminal.allowed), NULL, 0, empty_list, NULL, 0, 0,
	  "non-empty: only these commands may run (allowlist mode)" },
	{ "terminal", "denied", T_LIST, R(terminal.denied), NULL, 0, empty_list, NULL, 0, 0,
	  "non-empty: replaces the built-in deny list" },
	{ "terminal", "timeout_seconds", T_INT, R(terminal.timeout_seconds), NULL, 120, NULL, NULL, 1, 86400,
	  "a command is stopped after this many seconds" },
	{ "terminal", "max_output_bytes", T_INT, R(terminal.max_output_bytes), NULL, 1000000, NULL, NULL, 1024, 1073741824,
	  "output kept per stream (head and tail); the rest is dropped and counted" },

	{ "sandbox", "backend", T_STR, R(sandbox.backend), "auto", 0, NULL, backends, 0, 0,
	  "confinement: auto, native (kernel), docker, none (policy only)" },
	{ "sandbox", "network", T_BOOL, R(sandbox.network), NULL, 0, NULL, NULL, 0, 0,
	  "may commands use the network?" },
	{ "sandbox", "writable_roots", T_LIST, R(sandbox.writable_roots), NULL, 0, empty_list, NULL, 0, 0,
	  "folders writable beyond the workspace and a private tmp" },
	{ "sandbox", "max_processes", T_INT, R(sandbox.max_processes), NULL, 512, NULL, NULL, 1, 1000000,
	  "process limit for a command and its children" },
	{ "sandbox", "memory_limit", T_STR, R(sandbox.memory_limit), "4g", 0, NULL, NULL, 0, 0,
	  "memory of a command and its children, e.g. \"2g\"; \"\" for none; native and docker" },
	{ "sandbox", "tmp_size", T_STR, R(sandbox.tmp_size), "1g", 0, NULL, NULL, 0, 0,
	  "native: size of the private /tmp and of /dev/shm (each, in memory)" },
	{ "sandbox", "max_write_bytes", T_STR, R(sandbox.max_write_bytes), "8g", 0, NULL, NULL, 0, 0,
	  "a command that wrote this much to a writable file system is stopped; \"\" for none" },
	{ "sandbox", "hidden", T_LIST, R(sandbox.hidden), NULL, 0, empty_list, NULL, 0, 0,
	  "native: more files or folders commands cannot see (\"~/\" is the home folder)" },
	{ "sandbox", "cpu_limit", T_STR, R(sandbox.cpu_limit), "", 0, NULL, NULL, 0, 0,
	  "docker --cpus" },
	{ "sandbox", "image", T_STR, R(sandbox.image), "python:3.12-slim", 0, NULL, NULL, 0, 0,
	  "docker only" },
	{ "sandbox", "read_only", T_BOOL, R(sandbox.read_only), NULL, 1, NULL, NULL, 0, 0,
	  "docker: read-only root file system" },
	{ "sandbox", "user", T_STR, R(sandbox.user), "", 0, NULL, NULL, 0, 0,
	  "docker --user; default uid:gid of the caller" },
	{ "sandbox", "allow_unconfined", T_BOOL, R(sandbox.allow_unconfined), NULL, 0, NULL, NULL, 0, 0,
	  "may auto fall back to policy-only execution?" },

	{ "providers", "type", T_STR, P(type), "openai", 0, NULL, provider_types, 0, 0,
	  "openai (any OpenAI-compatible server), ollama (Ollama's own API) or replay (a transcript)" },
	{ "providers", "base_url", T_STR, P(base_url), "http://127.0.0.1:11434/v1", 0, NULL, NULL, 0, 0,
	  "any OpenAI-compatible endpoint" },
	{ "providers", "api_key_env", T_STR, P(api_key_env), "OPENAI_API_KEY", 0, NULL, NULL, 0, 0,
	  "the NAME of the variable holding the key, never the key" },
	{ "providers", "model", T_STR, P(model), "qwen2.5-coder", 0, NULL, NULL, 0, 0,
	  "model name sent to the server" },
	{ "providers", "timeout_seconds", T_INT, P(timeout_seconds), NULL, 300, NULL, NULL, 1, 86400,
	  "the longest one model call may take, retries and waits included" },
	{ "providers", "max_retries", T_INT, P(max_retries), NULL, 4, NULL, NULL, 0, 100,
	  "retries on 429, 5xx, resets and timeouts" },
	{ "providers", "tool_mode", T_STR, P(tool_mode), "native", 0, NULL, tool_modes, 0, 0,
	  "native function calling, or text (JSON blocks)" },
	{ "providers", "edit_tools", T_STR, P(edit_tools), "auto", 0, NULL, edit_tools, 0, 0,
	  "edit_file, apply_patch, both, or auto (apply_patch for GPT-4.1/5, o-series, codex)" },
	{ "providers", "stream", T_BOOL, P(stream), NULL, 1, NULL, NULL, 0, 0,
	  "stream replies (SSE)" },
	{ "providers", "headers", T_LIST, P(headers), NULL, 0, empty_list, NULL, 0, 0,
	  "extra request headers, \"Name: value\"" },
	{ "providers", "transcript", T_STR, P(transcript), "", 0, NULL, NULL, 0, 0,
	  "replay: the transcript to answer from" },
	{ "providers", "replay_mode", T_STR, P(replay_mode), "strict", 0, NULL, replay_modes, 0, 0,
	  "replay: strict (a changed request is an error) or lenient" },
	{ "providers", "context_window", T_INT, P(context_window), NULL, 0, NULL, NULL, 0, 10000000,
	  "the model's context window in tokens; 0: ask the server (ollama: the num_ctx sent)" },

	{ "agents", "provider", T_STR, A(provider), "default", 0, NULL, NULL, 0, 0,
	  "which [providers.NAME] this role uses" },
	{ "agents", "model", T_STR, A(model), "", 0, NULL, NULL, 0, 0,
	  "empty: the provider's model" },
	{ "agents", "max_turns", T_INT, A(max_turns), NULL, 30, NULL, NULL, 1, 10000,
	  "model calls before the role gives up" },
	{ "agents", "temperature", T_FLOAT, A(temperature), NULL, 0.2, NULL, NULL, 0, 2,
	  "sampling temperature" },

	{ "mcp_servers", "command", T_STR, M(command), "", 0, NULL, NULL, 0, 0,
	  "stdio server: the program to start (argv[0])" },
	{ "mcp_servers", "args", T_LIST, M(args), NULL, 0, empty_list, NULL, 0, 0,
	  "stdio server: its arguments" },
	{ "mcp_servers", "env", T_MAP, M(env), NULL, 0, empty_list, NULL, 0, 0,
	  "stdio server: environment beyond the sanitized one ({ NAME = \"value\" }, or [\"NAME\"] to pass yours on)" },
	{ "mcp_servers", "cwd", T_STR, M(cwd), "", 0, NULL, NULL, 0, 0,
	  "stdio server: working folder, relative to the workspace" },
	{ "mcp_servers", "url", T_STR, M(url), "", 0, NULL, NULL, 0, 0,
	  "Streamable HTTP server: its endpoint" },
	{ "mcp_servers", "bearer_token_env", T_STR, M(bearer_token_env), "", 0, NULL, NULL, 0, 0,
	  "HTTP server: the NAME of the variable holding a bearer token" },
	{ "mcp_servers", "enabled", T_BOOL, M(enabled), NULL, 1, NULL, NULL, 0, 0,
	  "false: configured but not started" },
	{ "mcp_servers", "startup_timeout_seconds", T_INT, M(startup_timeout_seconds), NULL, 10, NULL, NULL, 1, 600,
	  "time for the start and the initialize handshake" },
	{ "mcp_servers", "tool_timeout_seconds", T_INT, M(tool_timeout_seconds), NULL, 60, NULL, NULL, 1, 86400,
	  "time for one tool call" },
	{ "mcp_servers", "enabled_tools", T_LIST, M(enabled_tools), NULL, 0, empty_list, NULL, 0, 0,
	  "non-empty: only these tools" },
	{ "mcp_servers", "disabled_tools", T_LIST, M(disabled_tools), NULL, 0, empty_list, NULL, 0, 0,
	  "tools never offered" },
	{ "mcp_servers", "roles", T_LIST, M(roles), NULL, 0, empty_list, NULL, 0, 0,
	  "roles that see the tools; empty: builder, expert_coder (and all roles for readOnlyHint tools)" },

	{ "pipeline", "max_iterations", T_INT, R(pipeline.max_iterations), NULL, 3, NULL, NULL, 1, 100,
	  "reviews in all, the first attempt's and each repair's (3: two repairs)" },
	{ "pipeline", "test_command", T_LIST, R(pipeline.test_command), NULL, 0, empty_list, NULL, 0, 0,
	  "argv of the test command; empty: detect" },
	{ "pipeline", "baseline", T_BOOL, R(pipeline.baseline), NULL, 1, NULL, NULL, 0, 0,
	  "run the tests once before changing anything" },
	{ "pipeline", "on_failure", T_STR, R(pipeline.on_failure), "rollback", 0, NULL, on_failures, 0, 0,
	  "rollback (restore the tree) or keep (leave the last attempt)" },
	{ "pipeline", "commit", T_BOOL, R(pipeline.commit), NULL, 0, NULL, NULL, 0, 0,
	  "commit the passing change on the current branch" },

	{ "review", "voters", T_LIST, R(review.voters), NULL, 0, empty_list, NULL, 0, 0,
	  "extra \"provider:model\" reviewers" },
	{ "review", "quorum", T_STR, R(review.quorum), "majority", 0, NULL, quorums, 0, 0,
	  "majority, unanimous or any" },

	{ "context", "map_tokens", T_INT, R(context.map_tokens), NULL, 2048, NULL, NULL, 0, 1000000,
	  "size of the repository map in the agents' first requests (0: none)" },
	{ "context", "instructions", T_LIST, R(context.instructions), NULL, 0, def_instructions, NULL, 0, 0,
	  "project instruction files given to every role" },

	{ "budget", "max_tokens", T_INT, R(budget.max_tokens), NULL, 0, NULL, NULL, 0, BIG,
	  "0: unlimited; per run" },
	{ "budget", "max_cost_usd", T_FLOAT, R(budget.max_cost_usd), NULL, 0, NULL, NULL, 0, BIG,
	  "0: unlimited; per run" },
	{ "budget", "max_wall_seconds", T_INT, R(budget.max_wall_seconds), NULL, 0, NULL, NULL, 0, BIG,
	  "0: unlimited; per run" },
	{ "budget", "prices", T_LIST, R(budget.prices), NULL, 0, empty_list, NULL, 0, 0,
	  "model prices for max_cost_usd: \"MODEL=PROMPT/COMPLETION\" in USD per million tokens; MODEL * for any other" },
};

const char *const config_hook_events[] = {
	"session_start", "user_prompt", "pre_tool", "post_tool", "pre_verify", "post_verify", "stop",
	NULL,
};

static const char *const role_names[ROLE__COUNT] = {
	"architect", "builder", "expert_coder", "supervisor",
};

const char *config_role_name(enum agent_role role)
{
	return (unsigned)role < ROLE__COUNT ? role_names[role] : "unknown";
}

int config_role_from_name(const char *name)
{
	int i;

	for (i = 0; i < ROLE__COUNT; i++)
		if (!strcmp(role_names[i], name))
			return i;
	return -1;
}

const char *config_origin_name(enum cfg_origin o)
{
	static const char *const names[] = { "default", "user", "project", "env", "flag" };

	return (unsigned)o < ARRAY_SIZE(names) ? names[o] : "unknown";
}

/* ---- typed storage ---- */

static void *field(void *base, const struct cfg_key *k)
{
	return (char *)base + k->offset;
}

static void set_default(void *base, const struct cfg_key *k)
{
	void *f = field(base, k);

	switch (k->type) {
	case T_STR:
		free(*(char **)f);
		*(char **)f = xstrdup(k->def_str);
		break;
	case T_INT:
		*(long *)f = (long)k->def_num;
		break;
	case T_FLOAT:
		*(double *)f = k->def_num;
		break;
	case T_BOOL:
		*(int *)f = (int)k->def_num;
		break;
	case T_LIST:
	case T_MAP:
		strvec_clear(f);
		strvec_pushv(f, (const char *const *)k->def_list);
		break;
	}
}

static void release_field(void *base, const struct cfg_key *k)
{
	void *f = field(base, k);

	if (k->type == T_STR)
		FREE_AND_NULL(*(char **)f);
	else if (k->type == T_LIST || k->type == T_MAP)
		strvec_clear(f);
}

static void scope_defaults(void *base, enum cfg_scope scope)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(schema); i++)
		if (schema[i].scope == scope)
			set_default(base, &schema[i]);
}

static struct provider_config *add_provider(struct config *cfg, const char *name)
{
	struct provider_config *p;

	ALLOC_GROW(cfg->providers, cfg->providers_nr + 1, cfg->providers_alloc);
	p = &cfg->providers[cfg->providers_nr++];
	memset(p, 0, sizeof(*p));
	strvec_init(&p->headers);
	p->name = xstrdup(name);
	scope_defaults(p, S_PROVIDER);
	return p;
}

static struct mcp_server_config *add_mcp_server(struct config *cfg, const char *name,
						enum cfg_origin origin)
{
	struct mcp_server_config *m;

	ALLOC_GROW(cfg->mcp_servers, cfg->mcp_servers_nr + 1, cfg->mcp_servers_alloc);
	m = &cfg->mcp_servers[cfg->mcp_servers_nr++];
	memset(m, 0, sizeof(*m));
	strvec_init(&m->args);
	strvec_init(&m->env);
	strvec_init(&m->enabled_tools);
	strvec_init(&m->disabled_tools);
	strvec_init(&m->roles);
	m->name = xstrdup(name);
	m->origin = origin;
	scope_defaults(m, S_MCP);
	return m;
}

void config_init(struct config *cfg)
{
	int r;

	memset(cfg, 0, sizeof(*cfg));
	strvec_init(&cfg->terminal.allowed);
	strvec_init(&cfg->terminal.denied);
	strvec_init(&cfg->terminal.denied_add);
	strvec_init(&cfg->nested_ignored);
	strvec_init(&cfg->sandbox.writable_roots);
	strvec_init(&cfg->sandbox.hidden);
	strvec_init(&cfg->pipeline.test_command);
	strvec_init(&cfg->review.voters);
	strvec_init(&cfg->context.instructions);
	strvec_init(&cfg->budget.prices);
	scope_defaults(cfg, S_ROOT);
	for (r = 0; r < ROLE__COUNT; r++)
		scope_defaults(&cfg->agents[r], S_AGENT);
	add_provider(cfg, "default");
}

void config_release(struct config *cfg)
{
	size_t i, j;
	int r;

	for (i = 0; i < ARRAY_SIZE(schema); i++) {
		if (schema[i].scope == S_ROOT) {
			release_field(cfg, &schema[i]);
		} else if (schema[i].scope == S_AGENT) {
			for (r = 0; r < ROLE__COUNT; r++)
				release_field(&cfg->agents[r], &schema[i]);
		} else if (schema[i].scope == S_MCP) {
			for (j = 0; j < cfg->mcp_servers_nr; j++)
				release_field(&cfg->mcp_servers[j], &schema[i]);
		} else {
			for (j = 0; j < cfg->providers_nr; j++)
				release_field(&cfg->providers[j], &schema[i]);
		}
	}
	for (j = 0; j < cfg->providers_nr; j++)
		free(cfg->providers[j].name);
	free(cfg->providers);
	for (j = 0; j < cfg->mcp_servers_nr; j++)
		free(cfg->mcp_servers[j].name);
	free(cfg->mcp_servers);
	for (j = 0; j < cfg->hooks_nr; j++) {
		free(cfg->hooks[j].event);
		strvec_clear(&cfg->hooks[j].command);
		free(cfg->hooks[j].matcher);
		free(cfg->hooks[j].where);
	}
	free(cfg->hooks);
	for (i = 0; i < cfg->records_nr; i++) {
		free(cfg->records[i].key);
		free(cfg->records[i].where);
	}
	free(cfg->records);
	for (i = 0; i < cfg->ignored_nr; i++) {
		free(cfg->ignored[i].key);
		free(cfg->ignored[i].where);
		free(cfg->ignored[i].value);
		free(cfg->ignored[i].reason);
	}
	free(cfg->ignored);
	free(cfg->trust_error);
	strvec_clear(&cfg->terminal.denied_add);
	strvec_clear(&cfg->nested_ignored);
	free(cfg->workspace);
	free(cfg->project_file);
	free(cfg->user_file);
	memset(cfg, 0, sizeof(*cfg));
}

struct provider_config *config_provider(struct config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->providers_nr; i++)
		if (!strcmp(cfg->providers[i].name, name))
			return &cfg->providers[i];
	return NULL;
}

struct mcp_server_config *config_mcp_server(struct config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->mcp_servers_nr; i++)
		if (!strcmp(cfg->mcp_servers[i].name, name))
			return &cfg->mcp_servers[i];
	return NULL;
}

struct agent_config *config_agent(struct config *cfg, enum agent_role role)
{
	if ((unsigned)role >= ROLE__COUNT)
		BUG("bad role %d", (int)role);
	return &cfg->agents[role];
}

static const struct cfg_key *find_key(enum cfg_scope scope, const char *section, const char *key)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(schema); i++)
		if (schema[i].scope == scope && !strcmp(schema[i].key, key) &&
		    (scope != S_ROOT || !strcmp(schema[i].section, section)))
			return &schema[i];
	return NULL;
}

static int known_section(const char *s)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(schema); i++)
		if (!strcmp(schema[i].section, s))
			return 1;
	return 0;
}

static void record(struct config *cfg, const char *key, enum cfg_origin origin, const char *where)
{
	struct cfg_set_record *r = NULL;
	size_t i;

	for (i = 0; i < cfg->records_nr; i++)
		if (!strcmp(cfg->records[i].key, key))
			r = &cfg->records[i];
	if (!r) {
		ALLOC_GROW(cfg->records, cfg->records_nr + 1, cfg->records_alloc);
		r = &cfg->records[cfg->records_nr++];
		r->key = xstrdup(key);
	} else {
		free(r->where);
	}
	r->origin = origin;
	r->where = xstrdup(where ? where : "");
}

static const struct cfg_set_record *find_record(const struct config *cfg, const char *key)
{
	size_t i;

	for (i = 0; i < cfg->records_nr; i++)
		if (!strcmp(cfg->records[i].key, key))
			return &cfg->records[i];
	return NULL;
}

/* ---- values ---- */

/* A parsed value, before it is stored. */
struct cfg_value {
	char *s;
	double num;
	struct strvec list;
};

static const char *type_name(enum cfg_type t)
{
	switch (t) {
	case T_STR: return "a string";
	case T_INT: return "an integer";
	case T_FLOAT: return "a number";
	case T_BOOL: return "a boolean (true or false)";
	case T_LIST: return "an array of strings";
	case T_MAP: return "a table of strings (or an array of \"NAME=value\" strings)";
	}
	return "?";
}

static int check_value(const struct cfg_key *k, const struct cfg_value *v)
{
	const char *const *c;

	if (k->type == T_STR && k->choices) {
		struct buf allowed = BUF_INIT;

		for (c = k->choices; *c; c++)
			if (!strcmp(*c, v->s))
				return 0;
		for (c = k->choices; *c; c++)
			buf_addf(&allowed, "%s%s", c == k->choices ? "" : ", ", *c);
		err_set(FX_EINVAL, "invalid value \"%s\" (allowed: %s)", v->s, allowed.buf);
		buf_release(&allowed);
		return FX_EINVAL;
	}
	if ((k->type == T_INT || k->type == T_FLOAT) && (v->num < k->min || v->num > k->max ||
							  isnan(v->num))) {
		if (k->type == T_INT)
			return err_set(FX_EINVAL, "value %.0f out of range (%.0f to %.0f)",
				       v->num, k->min, k->max);
		return err_set(FX_EINVAL, "value %g out of range (%g to %g)", v->num, k->min, k->max);
	}
	return 0;
}

/* An environment variable's name: [A-Za-z_][A-Za-z0-9_]*. */
static int env_name_ok(const char *s, size_t n)
{
	size_t i;

	if (!n || (s[0] >= '0' && s[0] <= '9'))
		return 0;
	for (i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '_')
			return 0;
	return 1;
}

/* "NAME=value" or "NAME" with a valid NAME. */
static int map_entry_ok(const char *s)
{
	const char *eq = strchr(s, '=');

	return env_name_ok(s, eq ? (size_t)(eq - s) : strlen(s));
}

static int map_from_toml(struct cfg_value *out, const struct toml_value *tv)
{
	size_t i;

	if (tv->type == TOML_TABLE) {
		for (i = 0; i < tv->u.tab.nr; i++) {
			const struct toml_kv *kv = &tv->u.tab.items[i];
			const struct toml_value *e = kv->value;

			if (!env_name_ok(kv->key, kv->keylen) || strlen(kv->key) != kv->keylen)
				return err_set(FX_EINVAL, "'%s' is not a variable name", kv->key);
			if (e->type != TOML_STRING || memchr(e->u.str.ptr, '\0', e->u.str.len))
				return err_set(FX_EINVAL, "the value of '%s' must be a string", kv->key);
		}
		for (i = 0; i < tv->u.tab.nr; i++) {
			char *kvs = xstrfmt("%s=%s", tv->u.tab.items[i].key,
					    tv->u.tab.items[i].value->u.str.ptr);

			strvec_push(&out->list, kvs);
			free(kvs);
		}
		return 0;
	}
	if (tv->type != TOML_ARRAY)
		return err_set(FX_EINVAL, "expected %s, got %s", type_name(T_MAP),
			       toml_type_name(tv->type));
	for (i = 0; i < tv->u.arr.nr; i++) {
		const struct toml_value *e = tv->u.arr.items[i];

		if (e->type != TOML_STRING || memchr(e->u.str.ptr, '\0', e->u.str.len) ||
		    !map_entry_ok(e->u.str.ptr))
			return err_set(FX_EINVAL, "element %zu: expected \"NAME=value\" or \"NAME\"", i + 1);
	}
	for (i = 0; i < tv->u.arr.nr; i++)
		strvec_push(&out->list, tv->u.arr.items[i]->u.str.ptr);
	return 0;
}

static int value_from_toml(struct cfg_value *out, const struct cfg_key *k, const struct toml_value *tv)
{
	size_t i;

	switch (k->type) {
	case T_STR:
		if (tv->type != TOML_STRING)
			break;
		if (memchr(tv->u.str.ptr, '\0', tv->u.str.len))
			return err_set(FX_EINVAL, "string contains a NUL character");
		out->s = xstrdup(tv->u.str.ptr);
		return check_value(k, out);
	case T_INT:
		if (tv->type != TOML_INTEGER)
			break;
		out->num = (double)tv->u.i;
		return check_value(k, out);
	case T_FLOAT:
		if (tv->type == TOML_INTEGER)
			out->num = (double)tv->u.i;
		else if (tv->type == TOML_FLOAT)
			out->num = tv->u.f;
		else
			break;
		return check_value(k, out);
	case T_BOOL:
		if (tv->type != TOML_BOOL)
			break;
		out->num = tv->u.b;
		return 0;
	case T_LIST:
		if (tv->type != TOML_ARRAY)
			break;
		for (i = 0; i < tv->u.arr.nr; i++) {
			const struct toml_value *e = tv->u.arr.items[i];

			if (e->type != TOML_STRING || memchr(e->u.str.ptr, '\0', e->u.str.len))
				return err_set(FX_EINVAL, "expected an array of strings; element %zu is %s",
					       i + 1, e->type == TOML_STRING ? "a string with a NUL" :
					       toml_type_name(e->type));
		}
		for (i = 0; i < tv->u.arr.nr; i++)
			strvec_push(&out->list, tv->u.arr.items[i]->u.str.ptr);
		return 0;
	case T_MAP:
		return map_from_toml(out, tv);
	}
	return err_set(FX_EINVAL, "expected %s, got %s", type_name(k->type), toml_type_name(tv->type));
}

static int value_from_text(struct cfg_value *out, const struct cfg_key *k, const char *text)
{
	char *end;

	switch (k->type) {
	case T_STR:
		out->s = xstrdup(text);
		return check_value(k, out);
	case T_INT:
		errno = 0;
		out->num = (double)strtoll(text, &end, 10);
		if (!*text || *end || errno)
			return err_set(FX_EINVAL, "expected an integer, got \"%s\"", text);
		return check_value(k, out);
	case T_FLOAT:
		errno = 0;
		out->num = strtod(text, &end);
		if (!*text || *end || errno)
			return err_set(FX_EINVAL, "expected a number, got \"%s\"", text);
		return check_value(k, out);
	case T_BOOL:
		if (!strcmp(text, "true") || !strcmp(text, "1") || !strcmp(text, "yes"))
			out->num = 1;
		else if (!strcmp(text, "false") || !strcmp(text, "0") || !strcmp(text, "no"))
			out->num = 0;
		else
			return err_set(FX_EINVAL, "expected true or false, got \"%s\"", text);
		return 0;
	case T_MAP:
	case T_LIST:
		if (text[0] == '[' || (k->type == T_MAP && text[0] == '{')) {
			/* a TOML array, e.g. ["make", "check"] */
			struct toml_value *root = NULL;
			char *doc = xstrfmt("v = %s\n", text);
			int ret = toml_parse(&root, doc, strlen(doc), "value");

			free(doc);
			if (ret < 0)
				return err_set(FX_EINVAL, "expected a TOML array of strings, got '%s'", text);
			ret = value_from_toml(out, k, toml_table_get(root, "v"));
			toml_free(root);
			return ret;
		}
		/* else comma-separated; "" is the empty list */
		while (*text) {
			size_t n = strcspn(text, ",");
			char *item = xstrndup(text, n);
			struct buf t = BUF_INIT;

			buf_addstr(&t, item);
			buf_trim(&t);
			if (t.len)
				strvec_push(&out->list, t.buf);
			buf_release(&t);
			free(item);
			text += n;
			if (*text == ',')
				text++;
		}
		if (k->type == T_MAP) {
			size_t i;

			for (i = 0; i < out->list.nr; i++)
				if (!map_entry_ok(out->list.v[i]))
					return err_set(FX_EINVAL, "'%s': expected NAME=value or NAME",
						       out->list.v[i]);
		}
		return 0;
	}
	BUG("bad type");
}

static void value_release(struct cfg_value *v)
{
	FREE_AND_NULL(v->s);
	strvec_clear(&v->list);
}

static void store(void *base, const struct cfg_key *k, struct cfg_value *v)
{
	void *f = field(base, k);

	switch (k->type) {
	case T_STR:
		free(*(char **)f);
		*(char **)f = v->s;
		v->s = NULL;
		break;
	case T_INT:
		*(long *)f = (long)v->num;
		break;
	case T_FLOAT:
		*(double *)f = v->num;
		break;
	case T_BOOL:
		*(int *)f = v->num != 0;
		break;
	case T_LIST:
	case T_MAP:
		strvec_clear(f);
		*(struct strvec *)f = v->list;
		strvec_init(&v->list);
		break;
	}
}

/* ---- files ---- */

struct apply_ctx {
	struct config *cfg;
	const char *name;		/* file name for messages */
	enum cfg_origin origin;
	int apply;			/* 0: validate only */
	int gated;			/* an untrusted project file: the trust gate applies */
};

/* ---- project trust ---- */

/*
 * What an untrusted project file may do with a key that changes where
 * commands run, what they may touch, or where data and secrets go. New
 * gated keys (mcp_servers.*, hooks.*) get a row here; a section row with
 * key NULL covers every key of the section not listed before it, so a key
 * added to [sandbox] later is gated (never taken) until someone decides
 * what tightening means for it.
 */
enum tighten {
	TIGHTEN_NEVER,		/* never taken from an untrusted file */
	TIGHTEN_MODE,		/* safe < ask < auto: may only move towards safe */
	TIGHTEN_OFF,		/* a boolean that may only be turned off */
	TIGHTEN_ON,		/* a boolean that may only be turned on */
	TIGHTEN_LOWER,		/* a number that may only go down */
	TIGHTEN_SIZE,		/* a size ("2g"; "" unlimited) that may only go down */
	TIGHTEN_SUBSET,		/* a list that may only lose entries */
	TIGHTEN_SUPERSET,	/* a list that may only gain entries */
	TIGHTEN_ALLOWLIST,	/* none -> any list; a list -> a non-empty part of it */
	TIGHTEN_ADD,		/* names are added to the list, never removed */
	TIGHTEN_BACKEND,	/* none or auto -> native */
};

struct trust_gate {
	const char *section;	/* "providers" and "agents" match any NAME */
	const char *key;	/* NULL: every other key of the section */
	enum tighten how;
	const char *rule;	/* what an untrusted file may do, for people */
};

static const struct trust_gate trust_gates[] = {
	{ "permissions", "mode", TIGHTEN_MODE, "may only move towards safe (safe < ask < auto)" },
	{ "terminal", "allowed", TIGHTEN_ALLOWLIST,
	  "may set an allowlist when there is none, or keep a non-empty part of the one there is" },
	{ "terminal", "denied", TIGHTEN_ADD,
	  "its names are added to the effective deny list; none is removed" },
	{ "terminal", "timeout_seconds", TIGHTEN_LOWER, "may only go down" },
	{ "terminal", "max_output_bytes", TIGHTEN_LOWER, "may only go down" },
	{ "terminal", NULL, TIGHTEN_NEVER, "never taken" },
	{ "sandbox", "backend", TIGHTEN_BACKEND,
	  "may only change from none (to anything) or from auto to native" },
	{ "sandbox", "network", TIGHTEN_OFF, "may only turn network access off" },
	{ "sandbox", "writable_roots", TIGHTEN_SUBSET, "may only drop folders" },
	{ "sandbox", "max_processes", TIGHTEN_LOWER, "may only go down" },
	{ "sandbox", "tmp_size", TIGHTEN_SIZE, "may only go down" },
	{ "sandbox", "max_write_bytes", TIGHTEN_SIZE, "may only go down" },
	{ "sandbox", "hidden", TIGHTEN_SUPERSET, "may only hide more places" },
	{ "sandbox", "memory_limit", TIGHTEN_SIZE, "may only go down (set one when there is none)" },
	{ "sandbox", "read_only", TIGHTEN_ON, "may only turn it on" },
	{ "sandbox", "allow_unconfined", TIGHTEN_OFF, "may only turn it off" },
	{ "sandbox", NULL, TIGHTEN_NEVER, "never taken" },
	{ "providers", "base_url", TIGHTEN_NEVER, "never taken" },
	{ "providers", "api_key_env", TIGHTEN_NEVER, "never taken" },
	{ "providers", "headers", TIGHTEN_NEVER, "never taken" },
	/* a server or a hook is a program forgex would start: never from an untrusted file */
	{ "mcp_servers", NULL, TIGHTEN_NEVER, "never taken: it would start a program or reach a server" },
};

static const struct trust_gate *find_gate(const char *section, const char *key)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(trust_gates); i++)
		if (!strcmp(trust_gates[i].section, section) &&
		    (!trust_gates[i].key || !strcmp(trust_gates[i].key, key)))
			return &trust_gates[i];
	return NULL;
}

const char *config_trust_rule(const char *key)
{
	const char *dot = strchr(key, '.'), *last = strrchr(key, '.');
	const struct trust_gate *g;
	char *section;

	if (!dot)
		return NULL;
	section = xstrndup(key, (size_t)(dot - key));
	g = find_gate(section, last + 1);
	free(section);
	return g ? g->rule : NULL;
}

static int mode_rank(const char *m)
{
	return !strcmp(m, "safe") ? 0 : !strcmp(m, "ask") ? 1 : 2;
}

/* "2g", "512m", "1048576": bytes, or -1 when it cannot be read. */
static double size_bytes(const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || errno || v < 0)
		return -1;
	switch (tolower((unsigned char)*end)) {
	case '\0': return v;
	case 'b': break;
	case 'k': v *= 1024; break;
	case 'm': v *= 1024.0 * 1024; break;
	case 'g': v *= 1024.0 * 1024 * 1024; break;
	case 't': v *= 1024.0 * 1024 * 1024 * 1024; break;
	default: return -1;
	}
	end++;
	if (*end == 'i')
		end++;
	if (*end == 'b' || *end == 'B')
		end++;
	return *end ? -1 : v;
}

static int in_list(const struct strvec *l, const char *s)
{
	return strvec_find(l, s) >= 0;
}

static int subset(const struct strvec *a, const struct strvec *b)
{
	size_t i;

	for (i = 0; i < a->nr; i++)
		if (!in_list(b, a->v[i]))
			return 0;
	return 1;
}

static int same_value(const void *base, const struct cfg_key *k, const struct cfg_value *v)
{
	const void *f = (const char *)base + k->offset;
	const struct strvec *l = f;
	size_t i;

	switch (k->type) {
	case T_STR:
		return !strcmp(*(char *const *)f, v->s);
	case T_INT:
		return *(const long *)f == (long)v->num;
	case T_FLOAT:
		return *(const double *)f == v->num;
	case T_BOOL:
		return (*(const int *)f != 0) == (v->num != 0);
	case T_LIST:
	case T_MAP:
		if (l->nr != v->list.nr)
			return 0;
		for (i = 0; i < l->nr; i++)
			if (strcmp(l->v[i], v->list.v[i]))
				return 0;
		return 1;
	}
	return 0;
}

/*
 * May an untrusted file set `k` (in `base`) to `v`? 1 yes; 0 no, with the
 * reason in `why`; 2 only as additions (TIGHTEN_ADD: the caller adds the
 * names to cfg->terminal.denied_add instead of replacing the list).
 */
static int tightens(const struct trust_gate *g, const void *base, const struct cfg_key *k,
		    const struct cfg_value *v, struct buf *why)
{
	const void *f = (const char *)base + k->offset;
	const char *cur_s = k->type == T_STR ? *(char *const *)f : NULL;
	const struct strvec *cur_l = f;
	double a, b;

	if (same_value(base, k, v))
		return 1;
	switch (g->how) {
	case TIGHTEN_NEVER:
		buf_addstr(why, "an untrusted project file may not set it");
		return 0;
	case TIGHTEN_MODE:
		if (mode_rank(v->s) <= mode_rank(cur_s))
			return 1;
		buf_addf(why, "\"%s\" is looser than \"%s\"", v->s, cur_s);
		return 0;
	case TIGHTEN_OFF:
		if (!v->num)
			return 1;
		buf_addstr(why, "it may only be turned off");
		return 0;
	case TIGHTEN_ON:
		if (v->num)
			return 1;
		buf_addstr(why, "it may only be turned on");
		return 0;
	case TIGHTEN_LOWER:
		if (v->num <= (double)*(const long *)f)
			return 1;
		buf_addf(why, "%.0f is more than %ld", v->num, *(const long *)f);
		return 0;
	case TIGHTEN_SIZE:
		if (!*cur_s && *v->s && size_bytes(v->s) >= 0)
			return 1;
		a = size_bytes(v->s);
		b = size_bytes(cur_s);
		if (*v->s && *cur_s && a >= 0 && b >= 0 && a <= b)
			return 1;
		if (!*v->s)
			buf_addf(why, "it would remove the limit of \"%s\"", cur_s);
		else
			buf_addf(why, "\"%s\" is not below \"%s\"", v->s, *cur_s ? cur_s : "no limit");
		return 0;
	case TIGHTEN_SUBSET:
		if (subset(&v->list, cur_l))
			return 1;
		buf_addstr(why, "it may only drop entries, and this adds some");
		return 0;
	case TIGHTEN_SUPERSET:
		if (subset(cur_l, &v->list))
			return 1;
		buf_addstr(why, "it may only add entries, and this drops some");
		return 0;
	case TIGHTEN_ALLOWLIST:
		if (v->list.nr && (!cur_l->nr || subset(&v->list, cur_l)))
			return 1;
		buf_addstr(why, v->list.nr ? "it names commands the allowlist does not allow"
				       : "it would remove the allowlist");
		return 0;
	case TIGHTEN_ADD:
		return v->list.nr ? 2 : 1;
	case TIGHTEN_BACKEND:
		/* none confines nothing; auto may fall back to it, native never does */
		if (!strcmp(cur_s, "none") || (!strcmp(cur_s, "auto") && !strcmp(v->s, "native")))
			return 1;
		buf_addf(why, "\"%s\" does not confine more than \"%s\"", v->s, cur_s);
		return 0;
	}
	return 0;
}

static void add_toml_string(struct buf *out, const char *s);

static void format_cfg_value(struct buf *out, const struct cfg_key *k, const struct cfg_value *v)
{
	size_t i;

	switch (k->type) {
	case T_STR:
		add_toml_string(out, v->s);
		break;
	case T_INT:
		buf_addf(out, "%.0f", v->num);
		break;
	case T_FLOAT:
		buf_addf(out, "%g", v->num);
		break;
	case T_BOOL:
		buf_addstr(out, v->num ? "true" : "false");
		break;
	case T_LIST:
	case T_MAP:
		buf_addch(out, '[');
		for (i = 0; i < v->list.nr; i++) {
			if (i)
				buf_addstr(out, ", ");
			add_toml_string(out, v->list.v[i]);
		}
		buf_addch(out, ']');
		break;
	}
}

static void note_ignored(struct config *cfg, const char *dotted, const char *where,
			 const struct cfg_key *k, const struct cfg_value *v, const char *reason,
			 int partly)
{
	struct cfg_ignored *ig;
	struct buf val = BUF_INIT;

	format_cfg_value(&val, k, v);
	ALLOC_GROW(cfg->ignored, cfg->ignored_nr + 1, cfg->ignored_alloc);
	ig = &cfg->ignored[cfg->ignored_nr++];
	ig->key = xstrdup(dotted);
	ig->where = xstrdup(where);
	ig->value = buf_detach(&val, NULL);
	ig->reason = xstrdup(reason);
	ig->partly = partly;
}

static int apply_toml_key(struct apply_ctx *c, void *base, const struct cfg_key *k,
			  const struct toml_kv *kv, const char *dotted)
{
	struct cfg_value v = { NULL, 0, STRVEC_INIT };
	char where[PATH_MAX + 32];
	int ret;

	ret = value_from_toml(&v, k, kv->value);
	if (ret < 0) {
		err_prefix(ret, "%s:%d: key '%s'", c->name, kv->line, dotted);
		goto out;
	}
	if (c->apply) {
		const struct trust_gate *g = c->gated ? find_gate(k->section, k->key) : NULL;
		int ok = 1;

		snprintf(where, sizeof(where), "%s:%d", c->name, kv->line);
		if (g) {
			struct buf why = BUF_INIT;
			size_t i;

			ok = tightens(g, base, k, &v, &why);
			if (ok == 2) {
				for (i = 0; i < v.list.nr; i++)
					if (!in_list(&c->cfg->terminal.denied_add, v.list.v[i]))
						strvec_push(&c->cfg->terminal.denied_add, v.list.v[i]);
				note_ignored(c->cfg, dotted, where, k, &v, "an untrusted file may only add "
					     "names: they were added to the deny list, which keeps its own", 1);
			} else if (!ok) {
				note_ignored(c->cfg, dotted, where, k, &v, why.buf, 0);
			}
			buf_release(&why);
		}
		if (ok == 1) {
			store(base, k, &v);
			record(c->cfg, dotted, c->origin, where);
		}
	}
out:
	value_release(&v);
	return ret;
}

static int apply_keys(struct apply_ctx *c, void *base, enum cfg_scope scope,
		      const char *section, const char *prefix, const struct toml_value *tab)
{
	size_t i;

	for (i = 0; i < tab->u.tab.nr; i++) {
		const struct toml_kv *kv = &tab->u.tab.items[i];
		const struct cfg_key *k = find_key(scope, section, kv->key);
		char *dotted = xstrfmt("%s.%s", prefix, kv->key);
		int ret;

		if (!k)
			ret = err_set(FX_EINVAL, "%s:%d: unknown key '%s'", c->name, kv->line, dotted);
		else
			ret = apply_toml_key(c, base, k, kv, dotted);
		free(dotted);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int apply_named(struct apply_ctx *c, const struct toml_kv *sec)
{
	const struct toml_value *tab = sec->value;
	int providers = !strcmp(sec->key, "providers");
	int mcp = !strcmp(sec->key, "mcp_servers");
	size_t i;

	for (i = 0; i < tab->u.tab.nr; i++) {
		const struct toml_kv *kv = &tab->u.tab.items[i];
		char *prefix = xstrfmt("%s.%s", sec->key, kv->key);
		struct provider_config dummy_p;
		struct agent_config dummy_a;
		struct mcp_server_config dummy_m;
		void *base;
		int ret;

		if (kv->value->type != TOML_TABLE) {
			ret = err_set(FX_EINVAL, "%s:%d: '%s' must be a table ([%s])",
				      c->name, kv->line, prefix, prefix);
			goto next;
		}
		if (mcp) {
			/* the name prefixes the tools' names (NAME__TOOL): no "__" in it */
			if (!kv->key[0] || strlen(kv->key) != kv->keylen || kv->keylen > 32 ||
			    strstr(kv->key, "__") || strspn(kv->key,
			    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != kv->keylen) {
				ret = err_set(FX_EINVAL, "%s:%d: MCP server name '%s' must use letters, digits, "
					      "'_' and '-' (at most 32, no \"__\")", c->name, kv->line, kv->key);
				goto next;
			}
			base = config_mcp_server(c->cfg, kv->key);
			/* untrusted: every key is gated; the server is not even named */
			if (!base && c->apply && !c->gated)
				base = add_mcp_server(c->cfg, kv->key, c->origin);
			if (!base) {
				/* checked (and, untrusted, noted as ignored) but kept nowhere */
				size_t k;

				memset(&dummy_m, 0, sizeof(dummy_m));
				scope_defaults(&dummy_m, S_MCP);
				ret = apply_keys(c, &dummy_m, S_MCP, "mcp_servers", prefix, kv->value);
				for (k = 0; k < ARRAY_SIZE(schema); k++)
					if (schema[k].scope == S_MCP)
						release_field(&dummy_m, &schema[k]);
			} else {
				ret = apply_keys(c, base, S_MCP, "mcp_servers", prefix, kv->value);
			}
		} else if (providers) {
			if (!kv->key[0] || strlen(kv->key) != kv->keylen || strspn(kv->key,
			    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") != kv->keylen) {
				ret = err_set(FX_EINVAL, "%s:%d: provider name '%s' must use letters, digits, '_' and '-'",
					      c->name, kv->line, kv->key);
				goto next;
			}
			base = config_provider(c->cfg, kv->key);
			if (!base && c->apply)
				base = add_provider(c->cfg, kv->key);
			if (!base) {
				memset(&dummy_p, 0, sizeof(dummy_p));
				base = &dummy_p;
			}
			ret = apply_keys(c, base, S_PROVIDER, "providers", prefix, kv->value);
		} else {
			int role = config_role_from_name(kv->key);

			if (role < 0) {
				ret = err_set(FX_EINVAL, "%s:%d: unknown role '%s' (architect, builder, expert_coder, supervisor)",
					      c->name, kv->line, prefix);
				goto next;
			}
			memset(&dummy_a, 0, sizeof(dummy_a));
			base = c->apply ? (void *)&c->cfg->agents[role] : (void *)&dummy_a;
			ret = apply_keys(c, base, S_AGENT, "agents", prefix, kv->value);
		}
next:
		free(prefix);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * [[hooks.EVENT]]: an array of tables per event, each {command = [argv],
 * matcher = "...", timeout_seconds = N}.
 */
static int apply_hook(struct apply_ctx *c, const char *event, const struct toml_value *t)
{
	const struct toml_value *cmd = NULL, *matcher = NULL, *timeout = NULL;
	struct hook_config *h;
	size_t i;

	for (i = 0; i < t->u.tab.nr; i++) {
		const struct toml_kv *kv = &t->u.tab.items[i];

		if (!strcmp(kv->key, "command"))
			cmd = kv->value;
		else if (!strcmp(kv->key, "matcher"))
			matcher = kv->value;
		else if (!strcmp(kv->key, "timeout_seconds"))
			timeout = kv->value;
		else
			return err_set(FX_EINVAL, "%s:%d: unknown key 'hooks.%s.%s' (command, matcher, "
				       "timeout_seconds)", c->name, kv->line, event, kv->key);
	}
	if (!cmd || cmd->type != TOML_ARRAY || !cmd->u.arr.nr)
		return err_set(FX_EINVAL, "%s:%d: [[hooks.%s]] needs command = [\"program\", \"arg\", ...]",
			       c->name, cmd ? cmd->line : t->line, event);
	for (i = 0; i < cmd->u.arr.nr; i++) {
		const struct toml_value *e = cmd->u.arr.items[i];

		if (e->type != TOML_STRING || memchr(e->u.str.ptr, '\0', e->u.str.len) ||
		    (i == 0 && !e->u.str.len))
			return err_set(FX_EINVAL, "%s:%d: key 'hooks.%s.command': expected an array of "
				       "strings (element %zu)", c->name, cmd->line, event, i + 1);
	}
	if (matcher && (matcher->type != TOML_STRING || memchr(matcher->u.str.ptr, '\0',
							     matcher->u.str.len)))
		return err_set(FX_EINVAL, "%s:%d: key 'hooks.%s.matcher': expected a string",
			       c->name, matcher->line, event);
	if (timeout && (timeout->type != TOML_INTEGER || timeout->u.i < 1 || timeout->u.i > 3600))
		return err_set(FX_EINVAL, "%s:%d: key 'hooks.%s.timeout_seconds': expected an "
			       "integer from 1 to 3600", c->name, timeout->line, event);
	if (!c->apply)
		return 0;
	if (c->gated) {
		/* a hook is a program forgex would run: never from an untrusted file */
		struct cfg_ignored *ig;
		struct buf val = BUF_INIT;

		buf_addch(&val, '[');
		for (i = 0; i < cmd->u.arr.nr; i++) {
			if (i)
				buf_addstr(&val, ", ");
			add_toml_string(&val, cmd->u.arr.items[i]->u.str.ptr);
		}
		buf_addch(&val, ']');
		ALLOC_GROW(c->cfg->ignored, c->cfg->ignored_nr + 1, c->cfg->ignored_alloc);
		ig = &c->cfg->ignored[c->cfg->ignored_nr++];
		ig->key = xstrfmt("hooks.%s.command", event);
		ig->where = xstrfmt("%s:%d", c->name, t->line);
		ig->value = buf_detach(&val, NULL);
		ig->reason = xstrdup("never taken: it would run a program");
		ig->partly = 0;
		return 0;
	}
	ALLOC_GROW(c->cfg->hooks, c->cfg->hooks_nr + 1, c->cfg->hooks_alloc);
	h = &c->cfg->hooks[c->cfg->hooks_nr++];
	memset(h, 0, sizeof(*h));
	h->event = xstrdup(event);
	strvec_init(&h->command);
	for (i = 0; i < cmd->u.arr.nr; i++)
		strvec_push(&h->command, cmd->u.arr.items[i]->u.str.ptr);
	h->matcher = xstrdup(matcher ? matcher->u.str.ptr : "");
	h->timeout_seconds = timeout ? (long)timeout->u.i : 60;
	h->origin = c->origin;
	h->where = xstrfmt("%s:%d", c->name, t->line);
	return 0;
}

static int apply_hooks(struct apply_ctx *c, const struct toml_kv *sec)
{
	const struct toml_value *tab = sec->value;
	size_t i, j;
	int ret;

	if (tab->type != TOML_TABLE)
		return err_set(FX_EINVAL, "%s:%d: 'hooks' must hold [[hooks.EVENT]] tables",
			       c->name, sec->line);
	for (i = 0; i < tab->u.tab.nr; i++) {
		const struct toml_kv *kv = &tab->u.tab.items[i];
		const char *const *e;

		for (e = config_hook_events; *e; e++)
			if (!strcmp(*e, kv->key))
				break;
		if (!*e || strlen(kv->key) != kv->keylen)
			return err_set(FX_EINVAL, "%s:%d: unknown hook event '%s' (session_start, "
				       "user_prompt, pre_tool, post_tool, pre_verify, post_verify, stop)",
				       c->name, kv->line, kv->key);
		if (kv->value->type != TOML_ARRAY)
			return err_set(FX_EINVAL, "%s:%d: 'hooks.%s' must be written [[hooks.%s]]",
				       c->name, kv->line, kv->key, kv->key);
		for (j = 0; j < kv->value->u.arr.nr; j++) {
			const struct toml_value *t = kv->value->u.arr.items[j];

			if (t->type != TOML_TABLE)
				return err_set(FX_EINVAL, "%s:%d: 'hooks.%s' must be written [[hooks.%s]]",
					       c->name, kv->line, kv->key, kv->key);
			ret = apply_hook(c, kv->key, t);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

static int apply_root(struct apply_ctx *c, const struct toml_value *root)
{
	size_t i;
	int ret;

	for (i = 0; i < root->u.tab.nr; i++) {
		const struct toml_kv *sec = &root->u.tab.items[i];

		if (!strcmp(sec->key, "hooks") && strlen(sec->key) == sec->keylen) {
			ret = apply_hooks(c, sec);
			if (ret < 0)
				return ret;
			continue;
		}
		if (!known_section(sec->key) || strlen(sec->key) != sec->keylen) {
			if (sec->value->type == TOML_TABLE)
				return err_set(FX_EINVAL, "%s:%d: unknown section '[%s]'",
					       c->name, sec->line, sec->key);
			return err_set(FX_EINVAL, "%s:%d: unknown key '%s' (keys belong in a [section])",
				       c->name, sec->line, sec->key);
		}
		if (sec->value->type != TOML_TABLE)
			return err_set(FX_EINVAL, "%s:%d: '%s' must be a table ([%s])",
				       c->name, sec->line, sec->key, sec->key);
		if (!strcmp(sec->key, "providers") || !strcmp(sec->key, "agents") ||
		    !strcmp(sec->key, "mcp_servers"))
			ret = apply_named(c, sec);
		else
			ret = apply_keys(c, c->cfg, S_ROOT, sec->key, sec->key, sec->value);
		if (ret < 0)
			return ret;
	}
	return 0;
}

int config_apply_string(struct config *cfg, const char *text, size_t len,
			const char *name, enum cfg_origin origin)
{
	struct apply_ctx c = { cfg, name, origin, 0, origin == CFG_PROJECT && !cfg->project_trusted };
	struct toml_value *root = NULL;
	int ret;

	ret = toml_parse(&root, text, len, name);
	if (ret < 0)
		return ret;
	/* Validate everything first, so a bad file changes nothing. */
	ret = apply_root(&c, root);
	if (!ret) {
		c.apply = 1;
		ret = apply_root(&c, root);
		if (ret < 0)
			BUG("config layer failed after validation: %s", err_last());
	}
	toml_free(root);
	return ret;
}

int config_apply_file(struct config *cfg, const char *path, enum cfg_origin origin)
{
	struct buf b = BUF_INIT;
	int ret = fsutil_read_file(&b, path, CONFIG_FILE_MAX);

	if (!ret)
		ret = config_apply_string(cfg, b.buf, b.len, path, origin);
	buf_release(&b);
	return ret;
}

/* ---- environment and flags ---- */

static void env_name(struct buf *out, const char *a, const char *b, const char *c)
{
	const char *parts[3] = { a, b, c };
	const char *p;
	int i;

	buf_addstr(out, "FORGEX");
	for (i = 0; i < 3; i++) {
		if (!parts[i])
			continue;
		buf_addch(out, '_');
		for (p = parts[i]; *p; p++)
			buf_addch(out, *p == '-' ? '_' : toupper((unsigned char)*p));
	}
}

static int set_text(struct config *cfg, void *base, const struct cfg_key *k, const char *dotted,
		    const char *text, enum cfg_origin origin, const char *where)
{
	struct cfg_value v = { NULL, 0, STRVEC_INIT };
	int ret = value_from_text(&v, k, text);

	if (!ret) {
		store(base, k, &v);
		record(cfg, dotted, origin, where);
	}
	value_release(&v);
	return ret;
}

/* One environment variable a key can be set from. */
struct env_candidate {
	char *name;			/* FORGEX_SANDBOX_BACKEND */
	char *dotted;			/* sandbox.backend */
	void *base;
	const struct cfg_key *key;
};

static size_t env_candidates(struct config *cfg, struct env_candidate **out)
{
	struct env_candidate *c = NULL;
	size_t nr = 0, alloc = 0, i, j;
	struct buf name = BUF_INIT;

	for (i = 0; i < ARRAY_SIZE(schema); i++) {
		const struct cfg_key *k = &schema[i];
		size_t count = k->scope == S_MCP ? 0 : k->scope == S_ROOT ? 1 :
			       k->scope == S_PROVIDER ? cfg->providers_nr : ROLE__COUNT;

		for (j = 0; j < count; j++) {
			const char *tname = k->scope == S_PROVIDER ? cfg->providers[j].name :
					    k->scope == S_AGENT ? role_names[j] : NULL;

			ALLOC_GROW(c, nr + 1, alloc);
			buf_reset(&name);
			env_name(&name, k->section, tname ? tname : k->key, tname ? k->key : NULL);
			c[nr].name = xstrdup(name.buf);
			c[nr].dotted = tname ? xstrfmt("%s.%s.%s", k->section, tname, k->key) :
					       xstrfmt("%s.%s", k->section, k->key);
			c[nr].base = k->scope == S_PROVIDER ? (void *)&cfg->providers[j] :
				     k->scope == S_AGENT ? (void *)&cfg->agents[j] : (void *)cfg;
			c[nr].key = k;
			nr++;
		}
	}
	buf_release(&name);
	*out = c;
	return nr;
}

int config_apply_env(struct config *cfg, const char *const *envp)
{
	struct env_candidate *cand;
	size_t nr = env_candidates(cfg, &cand), i;
	struct buf prefix = BUF_INIT;
	int ret = 0, pass;
	const char *const *e;

	if (!envp)
		envp = (const char *const *)environ;
	/* Pass 0 validates every FORGEX_<SECTION>_* variable, pass 1 applies. */
	for (pass = 0; pass < 2 && !ret; pass++) {
		for (e = envp; *e && !ret; e++) {
			const char *eq = strchr(*e, '=');
			size_t n = eq ? (size_t)(eq - *e) : 0;
			struct cfg_value v = { NULL, 0, STRVEC_INIT };
			struct env_candidate *hit = NULL;
			int in_section = 0;

			if (!eq || strncmp(*e, "FORGEX_", 7))
				continue;
			for (i = 0; i < nr && !hit; i++) {
				if (strlen(cand[i].name) == n && !strncmp(*e, cand[i].name, n))
					hit = &cand[i];
				buf_reset(&prefix);
				env_name(&prefix, cand[i].key->section, NULL, NULL);
				buf_addch(&prefix, '_');
				if (!strncmp(*e, prefix.buf, prefix.len))
					in_section = 1;
			}
			if (!hit) {
				if (in_section)
					ret = err_set(FX_EINVAL, "environment variable %.*s: unknown configuration key",
						      (int)n, *e);
				continue;
			}
			ret = value_from_text(&v, hit->key, eq + 1);
			if (ret < 0)
				err_prefix(ret, "environment variable %s (%s)", hit->name, hit->dotted);
			else if (pass == 1) {
				store(hit->base, hit->key, &v);
				record(cfg, hit->dotted, CFG_ENV, hit->name);
			}
			value_release(&v);
		}
	}
	for (i = 0; i < nr; i++) {
		free(cand[i].name);
		free(cand[i].dotted);
	}
	free(cand);
	buf_release(&prefix);
	return ret;
}

int config_set(struct config *cfg, const char *key, const char *value, enum cfg_origin origin)
{
	const char *dot = strchr(key, '.'), *dot2;
	const struct cfg_key *k;
	char *section, *name = NULL;
	void *base = cfg;
	int ret;

	if (!dot)
		return err_set(FX_EINVAL, "unknown key '%s' (expected SECTION.KEY)", key);
	section = xstrndup(key, (size_t)(dot - key));
	if (!strcmp(section, "providers") || !strcmp(section, "agents") ||
	    !strcmp(section, "mcp_servers")) {
		dot2 = strchr(dot + 1, '.');
		if (!dot2) {
			ret = err_set(FX_EINVAL, "unknown key '%s' (expected %s.NAME.KEY)", key, section);
			goto out;
		}
		name = xstrndup(dot + 1, (size_t)(dot2 - dot - 1));
		k = find_key(section[0] == 'p' ? S_PROVIDER : section[0] == 'm' ? S_MCP : S_AGENT,
			     section, dot2 + 1);
		if (!k) {
			ret = err_set(FX_EINVAL, "unknown key '%s'", key);
			goto out;
		}
		if (section[0] == 'm') {
			base = config_mcp_server(cfg, name);
			if (!base) {
				if (!*name || strstr(name, "__") || strlen(name) > 32 ||
				    strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
					   "0123456789_-") != strlen(name)) {
					ret = err_set(FX_EINVAL, "bad MCP server name in '%s'", key);
					goto out;
				}
				base = add_mcp_server(cfg, name, origin);
			}
		} else if (section[0] == 'p') {
			base = config_provider(cfg, name);
			if (!base) {
				if (!*name || strchr(name, '.')) {
					ret = err_set(FX_EINVAL, "bad provider name in '%s'", key);
					goto out;
				}
				base = add_provider(cfg, name);
			}
		} else {
			int role = config_role_from_name(name);

			if (role < 0) {
				ret = err_set(FX_EINVAL, "unknown role '%s' in '%s'", name, key);
				goto out;
			}
			base = &cfg->agents[role];
		}
	} else {
		k = find_key(S_ROOT, section, dot + 1);
		if (!k) {
			ret = err_set(FX_EINVAL, "unknown key '%s'", key);
			goto out;
		}
	}
	ret = set_text(cfg, base, k, key, value, origin,
		       origin == CFG_FLAG ? "command line" : config_origin_name(origin));
	if (ret < 0)
		err_prefix(ret, "key '%s'", key);
out:
	free(section);
	free(name);
	return ret;
}

/* ---- finding files ---- */

/*
 * The workspace is the top of the git working tree the start folder is in
 * (the nearest folder holding .git, as git finds it). Outside git, it is
 * the outermost folder holding .forgex/, so a .forgex/ a command made in
 * a subfolder never becomes a workspace of its own; with neither, the
 * start folder itself. The walk stops below $HOME (unless it starts
 * there): a dotfiles repository in ~, or a stray ~/.forgex, must not make
 * the whole home folder the workspace of every project under it.
 */
int config_find_workspace(char **out, const char *start)
{
	struct buf dir = BUF_INIT, probe = BUF_INIT;
	const char *h = getenv("HOME");
	char *abs, *forgex_top = NULL, *home = h && *h == '/' ? realpath(h, NULL) : NULL;

	abs = realpath(start ? start : ".", NULL);
	if (!abs) {
		free(home);
		return err_set_errno(FX_ENOTFOUND, "cannot resolve '%s'", start ? start : ".");
	}
	buf_addstr(&dir, abs);
	for (;;) {
		if (home && !strcmp(dir.buf, home) && strcmp(abs, home)) {
			buf_reset(&dir);
			buf_addstr(&dir, forgex_top ? forgex_top : abs);
			break;
		}
		buf_reset(&probe);
		path_join(&probe, dir.buf, ".git");
		if (fsutil_exists(probe.buf))
			break;
		buf_reset(&probe);
		path_join(&probe, dir.buf, ".forgex");
		if (fsutil_is_dir(probe.buf)) {
			free(forgex_top);
			forgex_top = xstrdup(dir.buf);
		}
		if (dir.len == 1) {
			buf_reset(&dir);
			buf_addstr(&dir, forgex_top ? forgex_top : abs);
			break;
		}
		buf_reset(&probe);
		path_dirname(&probe, dir.buf);
		buf_reset(&dir);
		buf_addbuf(&dir, &probe);
	}
	free(forgex_top);
	free(home);
	free(abs);
	buf_release(&probe);
	*out = buf_detach(&dir, NULL);
	return 0;
}

char *config_user_file(void)
{
	const char *xdg = getenv("XDG_CONFIG_HOME"), *home = getenv("HOME");

	if (xdg && *xdg == '/')
		return xstrfmt("%s/forgex/config.toml", xdg);
	if (home && *home)
		return xstrfmt("%s/.config/forgex/config.toml", home);
	return NULL;
}

static int validate_mcp(struct config *cfg)
{
	size_t i, j;

	for (i = 0; i < cfg->mcp_servers_nr; i++) {
		const struct mcp_server_config *m = &cfg->mcp_servers[i];
		const struct cfg_set_record *rec;
		char *key = xstrfmt("mcp_servers.%s.%s", m->name, *m->url ? "url" : "command");
		int ret = 0;

		rec = find_record(cfg, key);
		if (!*m->command == !*m->url)
			ret = err_set(FX_EINVAL, "%s%s[mcp_servers.%s] needs exactly one of 'command' "
				      "(a stdio server) and 'url' (a Streamable HTTP server)",
				      rec ? rec->where : "", rec ? ": " : "", m->name);
		else if (*m->url && strncmp(m->url, "http://", 7) && strncmp(m->url, "https://", 8))
			ret = err_set(FX_EINVAL, "%s%skey '%s': expected an http:// or https:// URL",
				      rec ? rec->where : "", rec ? ": " : "", key);
		for (j = 0; !ret && j < m->roles.nr; j++)
			if (config_role_from_name(m->roles.v[j]) < 0)
				ret = err_set(FX_EINVAL, "[mcp_servers.%s] roles: unknown role '%s' "
					      "(architect, builder, expert_coder, supervisor)",
					      m->name, m->roles.v[j]);
		free(key);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int validate(struct config *cfg)
{
	int r;

	if (validate_mcp(cfg) < 0)
		return FX_EINVAL;

	for (r = 0; r < ROLE__COUNT; r++) {
		const char *p = cfg->agents[r].provider;

		if (!config_provider(cfg, p)) {
			const struct cfg_set_record *rec;
			char *key = xstrfmt("agents.%s.provider", role_names[r]);

			rec = find_record(cfg, key);
			err_set(FX_EINVAL, "%s%skey '%s': no provider named \"%s\" (add a [providers.%s] table)",
				rec ? rec->where : "", rec ? ": " : "", key, p, p);
			free(key);
			return FX_EINVAL;
		}
	}
	return 0;
}

/*
 * Read the project file into `out`: FX_ENOTFOUND when there is none; an
 * error naming a symbolic link, a FIFO or anything but a regular file.
 */
static int read_project_file(struct buf *out, const char *workspace, const char *shown)
{
	struct stat st;
	int wfd, fd, ret;

	wfd = open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (wfd < 0)
		return err_set_errno(FX_EOS, "cannot open the workspace %s", workspace);
	fd = fsutil_open_beneath(wfd, ".forgex/config.toml");
	if (fd < 0) {
		ret = errno == ENOENT ? FX_ENOTFOUND
		      : errno == ELOOP || errno == EXDEV
		      ? err_set(FX_EDENIED, "%s: it or its folder .forgex is a symbolic link; forgex "
				"reads its own files without following links (replace the link with "
				"the file itself)", shown)
		      : errno == ENOTDIR
		      ? err_set(FX_EINVAL, "%s: .forgex in the workspace is not a folder", shown)
		      : err_set_errno(FX_EOS, "cannot read %s", shown);
		close(wfd);
		return ret;
	}
	close(wfd);
	if (fstat(fd, &st) < 0)
		ret = err_set_errno(FX_EOS, "cannot read %s", shown);
	else if (!S_ISREG(st.st_mode))
		ret = err_set(FX_EINVAL, "%s is not a regular file", shown);
	else if (st.st_size > CONFIG_FILE_MAX)
		ret = err_set(FX_ELIMIT, "%s is larger than %d bytes", shown, CONFIG_FILE_MAX);
	else
		ret = fsutil_read_fd(out, fd, CONFIG_FILE_MAX);
	close(fd);
	return ret;
}

int config_read_project(struct buf *out, const char *workspace)
{
	char *shown = xstrfmt("%s/.forgex/config.toml", workspace);
	int ret = read_project_file(out, workspace, shown);

	free(shown);
	return ret;
}

/* Every .forgex/config.toml from `start` up to, not including, the workspace. */
static void find_nested(struct config *cfg, const char *start)
{
	char *abs = realpath(start ? start : ".", NULL);
	struct buf dir = BUF_INIT, probe = BUF_INIT;
	size_t wl = strlen(cfg->workspace);

	if (!abs)
		return;
	buf_addstr(&dir, abs);
	while (dir.len > wl && !strncmp(dir.buf, cfg->workspace, wl) &&
	       (wl == 1 || dir.buf[wl] == '/')) {
		buf_reset(&probe);
		path_join(&probe, dir.buf, ".forgex/config.toml");
		if (fsutil_exists(probe.buf))
			strvec_push(&cfg->nested_ignored, probe.buf);
		buf_reset(&probe);
		path_dirname(&probe, dir.buf);
		buf_reset(&dir);
		buf_addbuf(&dir, &probe);
	}
	free(abs);
	buf_release(&dir);
	buf_release(&probe);
}

int config_load(struct config *cfg, const char *start)
{
	struct buf text = BUF_INIT;
	int ret;

	ret = config_find_workspace(&cfg->workspace, start);
	if (ret < 0)
		return ret;
	find_nested(cfg, start);
	cfg->user_file = config_user_file();
	if (cfg->user_file && fsutil_exists(cfg->user_file)) {
		ret = config_apply_file(cfg, cfg->user_file, CFG_USER);
		if (ret < 0)
			return ret;
	}
	cfg->project_file = xstrfmt("%s/.forgex/config.toml", cfg->workspace);
	ret = read_project_file(&text, cfg->workspace, cfg->project_file);
	if (ret == FX_ENOTFOUND) {
		ret = 0;
	} else if (!ret) {
		int changed = 0, t;

		cfg->project_exists = 1;
		sha256_hex(cfg->project_hash, text.buf, text.len);
		t = cfg->trust_fn ? cfg->trust_fn(cfg->project_file, cfg->project_hash, &changed,
						  cfg->trust_data) : 0;
		if (t < 0)
			cfg->trust_error = xstrdup(err_last());
		cfg->project_trusted = t > 0;
		cfg->project_changed = t == 0 && changed;
		ret = config_apply_string(cfg, text.buf, text.len, cfg->project_file, CFG_PROJECT);
	}
	buf_release(&text);
	if (ret < 0)
		return ret;
	ret = config_apply_env(cfg, NULL);
	if (ret < 0)
		return ret;
	return validate(cfg);
}

int config_from_untrusted_project(const struct config *cfg, const char *key)
{
	const struct cfg_set_record *r = find_record(cfg, key);

	return r && r->origin == CFG_PROJECT && !cfg->project_trusted;
}

int config_validate(struct config *cfg)
{
	return validate(cfg);
}

/* ---- presenting ---- */

static void add_toml_string(struct buf *out, const char *s)
{
	buf_addch(out, '"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			buf_addf(out, "\\%c", ch);
		else if (ch == '\n')
			buf_addstr(out, "\\n");
		else if (ch == '\t')
			buf_addstr(out, "\\t");
		else if (ch < 0x20 || ch == 0x7f)
			buf_addf(out, "\\u%04x", ch);
		else
			buf_addch(out, ch);
	}
	buf_addch(out, '"');
}

static void format_value(struct buf *out, const void *base, const struct cfg_key *k)
{
	const void *f = (const char *)base + k->offset;
	const struct strvec *sv;
	size_t i;

	switch (k->type) {
	case T_STR:
		add_toml_string(out, *(char *const *)f);
		break;
	case T_INT:
		buf_addf(out, "%ld", *(const long *)f);
		break;
	case T_FLOAT: {
		double d = *(const double *)f;

		if (d == floor(d) && fabs(d) < 1e15)
			buf_addf(out, "%.1f", d);
		else
			buf_addf(out, "%.17g", d);
		break;
	}
	case T_BOOL:
		buf_addstr(out, *(const int *)f ? "true" : "false");
		break;
	case T_LIST:
	case T_MAP:
		sv = f;
		buf_addch(out, '[');
		for (i = 0; i < sv->nr; i++) {
			if (i)
				buf_addstr(out, ", ");
			add_toml_string(out, sv->v[i]);
		}
		buf_addch(out, ']');
		break;
	}
}

static void visit_one(const struct config *cfg, const void *base, const struct cfg_key *k,
		      const char *dotted, config_visit_fn fn, void *data)
{
	const struct cfg_set_record *r = find_record(cfg, dotted);
	struct buf v = BUF_INIT;

	format_value(&v, base, k);
	fn(dotted, v.buf, r ? r->origin : CFG_DEFAULT, r ? r->where : "", k->doc, data);
	buf_release(&v);
}

void config_visit(const struct config *cfg, config_visit_fn fn, void *data)
{
	struct buf dotted = BUF_INIT;
	size_t i, j;

	for (i = 0; i < ARRAY_SIZE(schema); i++) {
		const struct cfg_key *k = &schema[i];

		if (k->scope == S_ROOT) {
			buf_reset(&dotted);
			buf_addf(&dotted, "%s.%s", k->section, k->key);
			visit_one(cfg, cfg, k, dotted.buf, fn, data);
			continue;
		}
		/* named tables: visit the whole table once, at its first key */
		if (i && schema[i - 1].scope == k->scope)
			continue;
		if (k->scope == S_MCP) {
			for (j = 0; j < cfg->mcp_servers_nr; j++) {
				size_t m;

				for (m = i; m < ARRAY_SIZE(schema) && schema[m].scope == S_MCP; m++) {
					buf_reset(&dotted);
					buf_addf(&dotted, "mcp_servers.%s.%s", cfg->mcp_servers[j].name,
						 schema[m].key);
					visit_one(cfg, &cfg->mcp_servers[j], &schema[m], dotted.buf, fn, data);
				}
			}
		} else if (k->scope == S_PROVIDER) {
			for (j = 0; j < cfg->providers_nr; j++) {
				size_t m;

				for (m = i; m < ARRAY_SIZE(schema) && schema[m].scope == S_PROVIDER; m++) {
					buf_reset(&dotted);
					buf_addf(&dotted, "providers.%s.%s", cfg->providers[j].name, schema[m].key);
					visit_one(cfg, &cfg->providers[j], &schema[m], dotted.buf, fn, data);
				}
			}
		} else {
			for (j = 0; j < ROLE__COUNT; j++) {
				size_t m;

				for (m = i; m < ARRAY_SIZE(schema) && schema[m].scope == S_AGENT; m++) {
					buf_reset(&dotted);
					buf_addf(&dotted, "agents.%s.%s", role_names[j], schema[m].key);
					visit_one(cfg, &cfg->agents[j], &schema[m], dotted.buf, fn, data);
				}
			}
		}
	}
	for (i = 0; i < cfg->hooks_nr; i++) {
		const struct hook_config *h = &cfg->hooks[i];
		struct buf v = BUF_INIT;
		size_t k, nth = 0;

		for (k = 0; k < i; k++)
			nth += !strcmp(cfg->hooks[k].event, h->event);
		buf_reset(&dotted);
		buf_addf(&dotted, "hooks.%s.%zu.command", h->event, nth);
		buf_addch(&v, '[');
		for (k = 0; k < h->command.nr; k++) {
			if (k)
				buf_addstr(&v, ", ");
			add_toml_string(&v, h->command.v[k]);
		}
		buf_addch(&v, ']');
		if (*h->matcher) {
			buf_addstr(&v, "  # matcher = ");
			add_toml_string(&v, h->matcher);
		}
		fn(dotted.buf, v.buf, h->origin, h->where, "a hook", data);
		buf_release(&v);
	}
	buf_release(&dotted);
}

struct get_ctx {
	const char *key;
	struct buf *out;
	enum cfg_origin origin;
	int found;
};

static void get_cb(const char *key, const char *value, enum cfg_origin origin,
		   const char *where, const char *doc, void *data)
{
	struct get_ctx *g = data;

	(void)where;
	(void)doc;
	if (g->found || strcmp(key, g->key))
		return;
	buf_addstr(g->out, value);
	g->origin = origin;
	g->found = 1;
}

int config_get(const struct config *cfg, const char *key, struct buf *out, enum cfg_origin *origin)
{
	struct get_ctx g = { key, out, CFG_DEFAULT, 0 };

	config_visit(cfg, get_cb, &g);
	if (!g.found)
		return err_set(FX_ENOTFOUND, "unknown key '%s'", key);
	if (origin)
		*origin = g.origin;
	return 0;
}

static void template_section(struct buf *out, const char *header, enum cfg_scope scope,
			     const char *section)
{
	struct config defaults;
	const void *base;
	size_t i;

	config_init(&defaults);
	base = scope == S_ROOT ? (const void *)&defaults :
	       scope == S_PROVIDER ? (const void *)&defaults.providers[0] : (const void *)&defaults.agents[0];
	buf_addf(out, "\n# [%s]\n", header);
	for (i = 0; i < ARRAY_SIZE(schema); i++) {
		const struct cfg_key *k = &schema[i];
		size_t start;

		if (k->scope != scope || (scope == S_ROOT && strcmp(k->section, section)))
			continue;
		start = out->len;
		buf_addf(out, "# %s = ", k->key);
		format_value(out, base, k);
		while (out->len - start < 40)
			buf_addch(out, ' ');
		buf_addf(out, " # %s\n", k->doc);
	}
	config_release(&defaults);
}

void config_write_template(struct buf *out)
{
	static const char *const sections[] = { "permissions", "terminal", "sandbox" };
	static const char *const later[] = { "pipeline", "review", "context", "budget" };
	size_t i;
	int r;

	buf_addstr(out,
		   "# forgex project configuration.\n"
		   "#\n"
		   "# Every key is shown with its default, commented out. Uncomment a line\n"
		   "# (and its [section] header) to change it. Precedence, lowest first:\n"
		   "# defaults < ~/.config/forgex/config.toml < this file <\n"
		   "# FORGEX_<SECTION>_<KEY> environment variables < command-line flags.\n"
		   "# 'forgex config show' prints every effective value and its origin.\n");
	for (i = 0; i < ARRAY_SIZE(sections); i++)
		template_section(out, sections[i], S_ROOT, sections[i]);
	buf_addstr(out, "\n# Model endpoints: any OpenAI-compatible server. Add more tables\n"
			"# ([providers.groq], ...) and point roles at them.");
	template_section(out, "providers.default", S_PROVIDER, "providers");
	for (r = 0; r < ROLE__COUNT; r++) {
		char *h = xstrfmt("agents.%s", role_names[r]);

		template_section(out, h, S_AGENT, "agents");
		free(h);
	}
	for (i = 0; i < ARRAY_SIZE(later); i++)
		template_section(out, later[i], S_ROOT, later[i]);
	buf_addstr(out, "\n# MCP servers whose tools the agents may call, and hooks: commands run\n"
			"# around each step (see docs/configuration.md). For example:\n"
			"#   [mcp_servers.docs]\n"
			"#   command = \"python3\"                 # a stdio server (or url = \"http://...\")\n"
			"#   args = [\"tools/docs_server.py\"]\n"
			"#   [[hooks.pre_tool]]\n"
			"#   matcher = \"write_file|edit_file\"\n"
			"#   command = [\"python3\", \"tools/guard.py\"]\n");
}
