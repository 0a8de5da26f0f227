/*
 * Applying configuration layers (see config.h): a TOML file or string
 * (each key through the trust gate when the file is an untrusted project
 * file), the environment (FORGEX_<SECTION>_<KEY>) and -c KEY=VALUE.
 */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "config/config.h"
#include "config/config_internal.h"

extern char **environ;

/* ---- files ---- */

struct apply_ctx {
	struct config *cfg;
	const char *name;		/* file name for messages */
	enum cfg_origin origin;
	int apply;			/* 0: validate only */
	int gated;			/* an untrusted project file: the trust gate applies */
};

static void format_cfg_value(struct buf *out, const struct cfg_key *k, const struct cfg_value *v)
{
	size_t i;

	switch (k->type) {
	case T_STR:
		cfg_add_toml_string(out, v->s);
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
			cfg_add_toml_string(out, v->list.v[i]);
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

	ret = cfg_value_from_toml(&v, k, kv->value);
	if (ret < 0) {
		err_prefix(ret, "%s:%d: key '%s'", c->name, kv->line, dotted);
		goto out;
	}
	if (c->apply) {
		const struct trust_gate *g = c->gated ? cfg_find_gate(k->section, k->key) : NULL;
		int ok = 1;

		snprintf(where, sizeof(where), "%s:%d", c->name, kv->line);
		if (g) {
			struct buf why = BUF_INIT;
			size_t i;

			ok = cfg_tightens(g, base, k, &v, &why);
			if (ok == 2) {
				for (i = 0; i < v.list.nr; i++)
					if (!cfg_in_list(&c->cfg->terminal.denied_add, v.list.v[i]))
						strvec_push(&c->cfg->terminal.denied_add, v.list.v[i]);
				note_ignored(c->cfg, dotted, where, k, &v, "an untrusted file may only add "
					     "names: they were added to the deny list, which keeps its own", 1);
			} else if (!ok) {
				note_ignored(c->cfg, dotted, where, k, &v, why.buf, 0);
			}
			buf_release(&why);
		}
		if (ok == 1) {
			cfg_store(base, k, &v);
			cfg_record(c->cfg, dotted, c->origin, where);
		}
	}
out:
	cfg_value_release(&v);
	return ret;
}

static int apply_keys(struct apply_ctx *c, void *base, enum cfg_scope scope,
		      const char *section, const char *prefix, const struct toml_value *tab)
{
	size_t i;

	for (i = 0; i < tab->u.tab.nr; i++) {
		const struct toml_kv *kv = &tab->u.tab.items[i];
		const struct cfg_key *k = cfg_find_key(scope, section, kv->key);
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
				base = cfg_add_mcp_server(c->cfg, kv->key, c->origin);
			if (!base) {
				/* checked (and, untrusted, noted as ignored) but kept nowhere */
				size_t k;

				memset(&dummy_m, 0, sizeof(dummy_m));
				cfg_scope_defaults(&dummy_m, S_MCP);
				ret = apply_keys(c, &dummy_m, S_MCP, "mcp_servers", prefix, kv->value);
				for (k = 0; k < cfg_schema_nr; k++)
					if (cfg_schema[k].scope == S_MCP)
						cfg_release_field(&dummy_m, &cfg_schema[k]);
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
				base = cfg_add_provider(c->cfg, kv->key);
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
			cfg_add_toml_string(&val, cmd->u.arr.items[i]->u.str.ptr);
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
		if (!cfg_known_section(sec->key) || strlen(sec->key) != sec->keylen) {
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
	int ret = cfg_value_from_text(&v, k, text);

	if (!ret) {
		cfg_store(base, k, &v);
		cfg_record(cfg, dotted, origin, where);
	}
	cfg_value_release(&v);
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

	for (i = 0; i < cfg_schema_nr; i++) {
		const struct cfg_key *k = &cfg_schema[i];
		size_t count = k->scope == S_MCP ? 0 : k->scope == S_ROOT ? 1 :
			       k->scope == S_PROVIDER ? cfg->providers_nr : ROLE__COUNT;

		for (j = 0; j < count; j++) {
			const char *tname = k->scope == S_PROVIDER ? cfg->providers[j].name :
					    k->scope == S_AGENT ? cfg_role_names[j] : NULL;

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
			ret = cfg_value_from_text(&v, hit->key, eq + 1);
			if (ret < 0)
				err_prefix(ret, "environment variable %s (%s)", hit->name, hit->dotted);
			else if (pass == 1) {
				cfg_store(hit->base, hit->key, &v);
				cfg_record(cfg, hit->dotted, CFG_ENV, hit->name);
			}
			cfg_value_release(&v);
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
		k = cfg_find_key(section[0] == 'p' ? S_PROVIDER : section[0] == 'm' ? S_MCP : S_AGENT,
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
				base = cfg_add_mcp_server(cfg, name, origin);
			}
		} else if (section[0] == 'p') {
			base = config_provider(cfg, name);
			if (!base) {
				if (!*name || strchr(name, '.')) {
					ret = err_set(FX_EINVAL, "bad provider name in '%s'", key);
					goto out;
				}
				base = cfg_add_provider(cfg, name);
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
		k = cfg_find_key(S_ROOT, section, dot + 1);
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
