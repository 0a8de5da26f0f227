#include <ctype.h>
#include <errno.h>
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
#include "config/config.h"
#include "config/toml.h"

extern char **environ;

#define CONFIG_FILE_MAX (1024 * 1024)

enum cfg_type { T_STR, T_INT, T_FLOAT, T_BOOL, T_LIST };
enum cfg_scope { S_ROOT, S_PROVIDER, S_AGENT };

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
static const char *const provider_types[] = { "openai", "replay", NULL };
static const char *const tool_modes[] = { "native", "text", NULL };
static const char *const replay_modes[] = { "strict", "lenient", NULL };
static const char *const on_failures[] = { "rollback", "keep", NULL };
static const char *const quorums[] = { "majority", "unanimous", "any", NULL };
static const char *const def_instructions[] = { "AGENTS.md", "FORGEX.md", NULL };
static const char *const empty_list[] = { NULL };

#define R(field) S_ROOT, offsetof(struct config, field)
#define P(field) S_PROVIDER, offsetof(struct provider_config, field)
#define A(field) S_AGENT, offsetof(struct agent_config, field)
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
	  "openai (any OpenAI-compatible server) or replay (answer from a transcript)" },
	{ "providers", "base_url", T_STR, P(base_url), "http://127.0.0.1:11434/v1", 0, NULL, NULL, 0, 0,
	  "any OpenAI-compatible endpoint" },
	{ "providers", "api_key_env", T_STR, P(api_key_env), "OPENAI_API_KEY", 0, NULL, NULL, 0, 0,
	  "the NAME of the variable holding the key, never the key" },
	{ "providers", "model", T_STR, P(model), "qwen2.5-coder", 0, NULL, NULL, 0, 0,
	  "model name sent to the server" },
	{ "providers", "timeout_seconds", T_INT, P(timeout_seconds), NULL, 300, NULL, NULL, 1, 86400,
	  "a request with no progress for this long is retried" },
	{ "providers", "max_retries", T_INT, P(max_retries), NULL, 4, NULL, NULL, 0, 100,
	  "retries on 429, 5xx, resets and timeouts" },
	{ "providers", "tool_mode", T_STR, P(tool_mode), "native", 0, NULL, tool_modes, 0, 0,
	  "native function calling, or text (JSON blocks)" },
	{ "providers", "stream", T_BOOL, P(stream), NULL, 1, NULL, NULL, 0, 0,
	  "stream replies (SSE)" },
	{ "providers", "headers", T_LIST, P(headers), NULL, 0, empty_list, NULL, 0, 0,
	  "extra request headers, \"Name: value\"" },
	{ "providers", "transcript", T_STR, P(transcript), "", 0, NULL, NULL, 0, 0,
	  "replay: the transcript to answer from" },
	{ "providers", "replay_mode", T_STR, P(replay_mode), "strict", 0, NULL, replay_modes, 0, 0,
	  "replay: strict (a changed request is an error) or lenient" },

	{ "agents", "provider", T_STR, A(provider), "default", 0, NULL, NULL, 0, 0,
	  "which [providers.NAME] this role uses" },
	{ "agents", "model", T_STR, A(model), "", 0, NULL, NULL, 0, 0,
	  "empty: the provider's model" },
	{ "agents", "max_turns", T_INT, A(max_turns), NULL, 30, NULL, NULL, 1, 10000,
	  "model calls before the role gives up" },
	{ "agents", "temperature", T_FLOAT, A(temperature), NULL, 0.2, NULL, NULL, 0, 2,
	  "sampling temperature" },

	{ "pipeline", "max_iterations", T_INT, R(pipeline.max_iterations), NULL, 3, NULL, NULL, 1, 100,
	  "repair rounds before giving up" },
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
	  "size of the repository map given to the model" },
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
	else if (k->type == T_LIST)
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

void config_init(struct config *cfg)
{
	int r;

	memset(cfg, 0, sizeof(*cfg));
	strvec_init(&cfg->terminal.allowed);
	strvec_init(&cfg->terminal.denied);
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
		} else {
			for (j = 0; j < cfg->providers_nr; j++)
				release_field(&cfg->providers[j], &schema[i]);
		}
	}
	for (j = 0; j < cfg->providers_nr; j++)
		free(cfg->providers[j].name);
	free(cfg->providers);
	for (i = 0; i < cfg->records_nr; i++) {
		free(cfg->records[i].key);
		free(cfg->records[i].where);
	}
	free(cfg->records);
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
	case T_LIST:
		if (text[0] == '[') {
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
};

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
		store(base, k, &v);
		snprintf(where, sizeof(where), "%s:%d", c->name, kv->line);
		record(c->cfg, dotted, c->origin, where);
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
	size_t i;

	for (i = 0; i < tab->u.tab.nr; i++) {
		const struct toml_kv *kv = &tab->u.tab.items[i];
		char *prefix = xstrfmt("%s.%s", sec->key, kv->key);
		struct provider_config dummy_p;
		struct agent_config dummy_a;
		void *base;
		int ret;

		if (kv->value->type != TOML_TABLE) {
			ret = err_set(FX_EINVAL, "%s:%d: '%s' must be a table ([%s])",
				      c->name, kv->line, prefix, prefix);
			goto next;
		}
		if (providers) {
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

static int apply_root(struct apply_ctx *c, const struct toml_value *root)
{
	size_t i;
	int ret;

	for (i = 0; i < root->u.tab.nr; i++) {
		const struct toml_kv *sec = &root->u.tab.items[i];

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
		if (!strcmp(sec->key, "providers") || !strcmp(sec->key, "agents"))
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
	struct apply_ctx c = { cfg, name, origin, 0 };
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
		size_t count = k->scope == S_ROOT ? 1 :
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
	if (!strcmp(section, "providers") || !strcmp(section, "agents")) {
		dot2 = strchr(dot + 1, '.');
		if (!dot2) {
			ret = err_set(FX_EINVAL, "unknown key '%s' (expected %s.NAME.KEY)", key, section);
			goto out;
		}
		name = xstrndup(dot + 1, (size_t)(dot2 - dot - 1));
		k = find_key(section[0] == 'p' ? S_PROVIDER : S_AGENT, section, dot2 + 1);
		if (!k) {
			ret = err_set(FX_EINVAL, "unknown key '%s'", key);
			goto out;
		}
		if (section[0] == 'p') {
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

int config_find_workspace(char **out, const char *start)
{
	struct buf dir = BUF_INIT, probe = BUF_INIT;
	char *abs;

	abs = realpath(start ? start : ".", NULL);
	if (!abs)
		return err_set_errno(FX_ENOTFOUND, "cannot resolve '%s'", start ? start : ".");
	buf_addstr(&dir, abs);
	for (;;) {
		buf_reset(&probe);
		path_join(&probe, dir.buf, ".forgex");
		if (fsutil_is_dir(probe.buf))
			break;
		buf_reset(&probe);
		path_join(&probe, dir.buf, ".git");
		if (fsutil_exists(probe.buf))
			break;
		if (dir.len == 1) {
			buf_reset(&dir);
			buf_addstr(&dir, abs);
			break;
		}
		buf_reset(&probe);
		path_dirname(&probe, dir.buf);
		buf_reset(&dir);
		buf_addbuf(&dir, &probe);
	}
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

static int validate(struct config *cfg)
{
	int r;

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

int config_load(struct config *cfg, const char *start)
{
	int ret;

	ret = config_find_workspace(&cfg->workspace, start);
	if (ret < 0)
		return ret;
	cfg->user_file = config_user_file();
	if (cfg->user_file && fsutil_exists(cfg->user_file)) {
		ret = config_apply_file(cfg, cfg->user_file, CFG_USER);
		if (ret < 0)
			return ret;
	}
	cfg->project_file = xstrfmt("%s/.forgex/config.toml", cfg->workspace);
	if (fsutil_exists(cfg->project_file)) {
		ret = config_apply_file(cfg, cfg->project_file, CFG_PROJECT);
		if (ret < 0)
			return ret;
	}
	ret = config_apply_env(cfg, NULL);
	if (ret < 0)
		return ret;
	return validate(cfg);
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
		if (k->scope == S_PROVIDER) {
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
}
