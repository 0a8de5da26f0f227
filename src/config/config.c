/*
 * The configuration's schema and defaults (see config.h): the table of
 * keys, the typed storage it describes, and values read from TOML or from
 * text. Applying files, the environment and -c is in apply.c, finding and
 * loading the files in load.c, the trust gates in trust_gates.c,
 * presenting in show.c; what they share is in config_internal.h.
 */
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
#include "config/config_internal.h"
#include "config/toml.h"

static const char *const modes[] = { "safe", "ask", "auto", NULL };
static const char *const backends[] = { "auto", "native", "docker", "none", NULL };
static const char *const provider_types[] = { "openai", "ollama", "replay", NULL };
static const char *const tool_modes[] = { "native", "text", NULL };
static const char *const edit_tools[] = { "auto", "edit_file", "apply_patch", "both", NULL };
static const char *const replay_modes[] = { "strict", "lenient", NULL };
static const char *const probe_modes[] = { "local", "always", "never", NULL };
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

const struct cfg_key cfg_schema[] = {
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
	  "may commands use the network? Only through forgex's egress proxy, to allowed_domains" },
	{ "sandbox", "allowed_domains", T_LIST, R(sandbox.allowed_domains), NULL, 0, empty_list, NULL, 0, 0,
	  "network = true: domains the proxy lets commands reach (\"*.example.org\": its subdomains)" },
	{ "sandbox", "denied_domains", T_LIST, R(sandbox.denied_domains), NULL, 0, empty_list, NULL, 0, 0,
	  "network = true: domains the proxy always refuses (wins over allowed_domains)" },
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
	{ "providers", "idle_timeout_seconds", T_INT, P(idle_timeout_seconds), NULL, 120, NULL, NULL,
	  1, 86400, "an attempt that receives nothing this long is retried (within timeout_seconds)" },
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
	{ "providers", "probe_window", T_STR, P(probe_window), "local", 0, NULL, probe_modes, 0, 0,
	  "ask the server for the window: local (servers on this machine), always, or never" },

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
	  "stdio server: working folder, relative to the workspace; empty: a private folder outside it" },
	{ "mcp_servers", "writable", T_BOOL, M(writable), NULL, 0, NULL, NULL, 0, 0,
	  "stdio server: the workspace is writable to it (default: read-only)" },
	{ "mcp_servers", "allowed_domains", T_LIST, M(allowed_domains), NULL, 0, empty_list, NULL, 0, 0,
	  "stdio server: the only domains it may reach, through forgex's egress proxy; empty: no network" },
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
	{ "pipeline", "must_pass", T_LIST, R(pipeline.must_pass), NULL, 0, empty_list, NULL, 0, 0,
	  "tests that must pass after the change (pytest node ids, \"test (module.Class)\", dotted); the tests run are narrowed to them" },

	{ "review", "voters", T_LIST, R(review.voters), NULL, 0, empty_list, NULL, 0, 0,
	  "extra \"provider:model\" reviewers" },
	{ "review", "quorum", T_STR, R(review.quorum), "majority", 0, NULL, quorums, 0, 0,
	  "majority, unanimous or any" },

	{ "context", "map_tokens", T_INT, R(context.map_tokens), NULL, 2048, NULL, NULL, 0, 1000000,
	  "size of the repository map in the agents' first requests (0: none)" },
	{ "context", "instructions", T_LIST, R(context.instructions), NULL, 0, def_instructions, NULL, 0, 0,
	  "project instruction files given to every role" },

	{ "checkpoints", "max_file_bytes", T_INT, R(checkpoints.max_file_bytes), NULL, 268435456, NULL, NULL, 0, BIG,
	  "a larger file is not stored in checkpoints: listed as too large, left as it is by a restore" },

	{ "budget", "max_tokens", T_INT, R(budget.max_tokens), NULL, 0, NULL, NULL, 0, BIG,
	  "0: unlimited; per run" },
	{ "budget", "max_cost_usd", T_FLOAT, R(budget.max_cost_usd), NULL, 0, NULL, NULL, 0, BIG,
	  "0: unlimited; per run" },
	{ "budget", "max_wall_seconds", T_INT, R(budget.max_wall_seconds), NULL, 0, NULL, NULL, 0, BIG,
	  "0: unlimited; per run" },
	{ "budget", "prices", T_LIST, R(budget.prices), NULL, 0, empty_list, NULL, 0, 0,
	  "model prices for max_cost_usd: \"MODEL=PROMPT/COMPLETION\" in USD per million tokens; MODEL * for any other" },

	{ "batch", "jobs", T_INT, R(batch.jobs), NULL, 0, NULL, NULL, 0, 1024,
	  "forgex batch: tasks at once; 0: the number of cores (-j)" },
	{ "batch", "wall_seconds", T_INT, R(batch.wall_seconds), NULL, 0, NULL, NULL, 0, BIG,
	  "per task: stopped after this long (TIMEOUT); 0: no limit (--wall-time)" },
	{ "batch", "grace_seconds", T_INT, R(batch.grace_seconds), NULL, 30, NULL, NULL, 0, 86400,
	  "per task: SIGKILL this long after the SIGTERM of its wall time (--grace)" },
	{ "batch", "max_tokens", T_INT, R(batch.max_tokens), NULL, 0, NULL, NULL, 0, BIG,
	  "per task: its run's budget.max_tokens; 0: the run's own (--max-tokens)" },
	{ "batch", "max_cost_usd", T_FLOAT, R(batch.max_cost_usd), NULL, 0, NULL, NULL, 0, BIG,
	  "per task: its run's budget.max_cost_usd; 0: the run's own (--max-cost)" },
	{ "batch", "max_cost_total_usd", T_FLOAT, R(batch.max_cost_total_usd), NULL, 0, NULL, NULL, 0, BIG,
	  "the whole batch: no task starts once this is spent (SKIPPED); 0: no limit (--max-cost-total)" },
	{ "batch", "url_template", T_STR, R(batch.url_template), "https://github.com/{repo}.git", 0, NULL, NULL, 0, 0,
	  "SWE-bench tasks: the clone URL of \"owner/name\", which replaces {repo} (--repo-url)" },
	{ "batch", "keep", T_BOOL, R(batch.keep), NULL, 0, NULL, NULL, 0, 0,
	  "keep each task's worktree and run folder after it ends (--keep)" },
};

const size_t cfg_schema_nr = ARRAY_SIZE(cfg_schema);

const char *const config_hook_events[] = {
	"session_start", "user_prompt", "pre_tool", "post_tool", "pre_verify", "post_verify", "stop",
	NULL,
};

const char *const cfg_role_names[ROLE__COUNT] = {
	"architect", "builder", "expert_coder", "supervisor",
};

const char *config_role_name(enum agent_role role)
{
	return (unsigned)role < ROLE__COUNT ? cfg_role_names[role] : "unknown";
}

int config_role_from_name(const char *name)
{
	int i;

	for (i = 0; i < ROLE__COUNT; i++)
		if (!strcmp(cfg_role_names[i], name))
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

void cfg_release_field(void *base, const struct cfg_key *k)
{
	void *f = field(base, k);

	if (k->type == T_STR)
		FREE_AND_NULL(*(char **)f);
	else if (k->type == T_LIST || k->type == T_MAP)
		strvec_clear(f);
}

void cfg_scope_defaults(void *base, enum cfg_scope scope)
{
	size_t i;

	for (i = 0; i < cfg_schema_nr; i++)
		if (cfg_schema[i].scope == scope)
			set_default(base, &cfg_schema[i]);
}

struct provider_config *cfg_add_provider(struct config *cfg, const char *name)
{
	struct provider_config *p;

	ALLOC_GROW(cfg->providers, cfg->providers_nr + 1, cfg->providers_alloc);
	p = &cfg->providers[cfg->providers_nr++];
	memset(p, 0, sizeof(*p));
	strvec_init(&p->headers);
	p->name = xstrdup(name);
	cfg_scope_defaults(p, S_PROVIDER);
	return p;
}

struct mcp_server_config *cfg_add_mcp_server(struct config *cfg, const char *name,
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
	strvec_init(&m->allowed_domains);
	m->name = xstrdup(name);
	m->origin = origin;
	cfg_scope_defaults(m, S_MCP);
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
	strvec_init(&cfg->sandbox.allowed_domains);
	strvec_init(&cfg->sandbox.denied_domains);
	strvec_init(&cfg->pipeline.test_command);
	strvec_init(&cfg->pipeline.must_pass);
	strvec_init(&cfg->review.voters);
	strvec_init(&cfg->context.instructions);
	strvec_init(&cfg->budget.prices);
	cfg_scope_defaults(cfg, S_ROOT);
	for (r = 0; r < ROLE__COUNT; r++)
		cfg_scope_defaults(&cfg->agents[r], S_AGENT);
	cfg_add_provider(cfg, "default");
}

void config_release(struct config *cfg)
{
	size_t i, j;
	int r;

	for (i = 0; i < cfg_schema_nr; i++) {
		if (cfg_schema[i].scope == S_ROOT) {
			cfg_release_field(cfg, &cfg_schema[i]);
		} else if (cfg_schema[i].scope == S_AGENT) {
			for (r = 0; r < ROLE__COUNT; r++)
				cfg_release_field(&cfg->agents[r], &cfg_schema[i]);
		} else if (cfg_schema[i].scope == S_MCP) {
			for (j = 0; j < cfg->mcp_servers_nr; j++)
				cfg_release_field(&cfg->mcp_servers[j], &cfg_schema[i]);
		} else {
			for (j = 0; j < cfg->providers_nr; j++)
				cfg_release_field(&cfg->providers[j], &cfg_schema[i]);
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

const struct cfg_key *cfg_find_key(enum cfg_scope scope, const char *section, const char *key)
{
	size_t i;

	for (i = 0; i < cfg_schema_nr; i++)
		if (cfg_schema[i].scope == scope && !strcmp(cfg_schema[i].key, key) &&
		    (scope != S_ROOT || !strcmp(cfg_schema[i].section, section)))
			return &cfg_schema[i];
	return NULL;
}

int cfg_known_section(const char *s)
{
	size_t i;

	for (i = 0; i < cfg_schema_nr; i++)
		if (!strcmp(cfg_schema[i].section, s))
			return 1;
	return 0;
}

void cfg_record(struct config *cfg, const char *key, enum cfg_origin origin, const char *where)
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

const struct cfg_set_record *cfg_find_record(const struct config *cfg, const char *key)
{
	size_t i;

	for (i = 0; i < cfg->records_nr; i++)
		if (!strcmp(cfg->records[i].key, key))
			return &cfg->records[i];
	return NULL;
}

/* ---- values ---- */

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

int cfg_value_from_toml(struct cfg_value *out, const struct cfg_key *k, const struct toml_value *tv)
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

int cfg_value_from_text(struct cfg_value *out, const struct cfg_key *k, const char *text)
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
			ret = cfg_value_from_toml(out, k, toml_table_get(root, "v"));
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

void cfg_value_release(struct cfg_value *v)
{
	FREE_AND_NULL(v->s);
	strvec_clear(&v->list);
}

void cfg_store(void *base, const struct cfg_key *k, struct cfg_value *v)
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
