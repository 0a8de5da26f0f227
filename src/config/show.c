/*
 * Presenting the configuration (see config.h): every key with its value
 * and origin (config_visit(), config_get(), `forgex config show`), and the
 * commented template of `forgex config init`.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_internal.h"

/* ---- presenting ---- */

void cfg_add_toml_string(struct buf *out, const char *s)
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
		cfg_add_toml_string(out, *(char *const *)f);
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
			cfg_add_toml_string(out, sv->v[i]);
		}
		buf_addch(out, ']');
		break;
	}
}

static void visit_one(const struct config *cfg, const void *base, const struct cfg_key *k,
		      const char *dotted, config_visit_fn fn, void *data)
{
	const struct cfg_set_record *r = cfg_find_record(cfg, dotted);
	struct buf v = BUF_INIT;

	format_value(&v, base, k);
	fn(dotted, v.buf, r ? r->origin : CFG_DEFAULT, r ? r->where : "", k->doc, data);
	buf_release(&v);
}

void config_visit(const struct config *cfg, config_visit_fn fn, void *data)
{
	struct buf dotted = BUF_INIT;
	size_t i, j;

	for (i = 0; i < cfg_schema_nr; i++) {
		const struct cfg_key *k = &cfg_schema[i];

		if (k->scope == S_ROOT) {
			buf_reset(&dotted);
			buf_addf(&dotted, "%s.%s", k->section, k->key);
			visit_one(cfg, cfg, k, dotted.buf, fn, data);
			continue;
		}
		/* named tables: visit the whole table once, at its first key */
		if (i && cfg_schema[i - 1].scope == k->scope)
			continue;
		if (k->scope == S_MCP) {
			for (j = 0; j < cfg->mcp_servers_nr; j++) {
				size_t m;

				for (m = i; m < cfg_schema_nr && cfg_schema[m].scope == S_MCP; m++) {
					buf_reset(&dotted);
					buf_addf(&dotted, "mcp_servers.%s.%s", cfg->mcp_servers[j].name,
						 cfg_schema[m].key);
					visit_one(cfg, &cfg->mcp_servers[j], &cfg_schema[m], dotted.buf, fn, data);
				}
			}
		} else if (k->scope == S_PROVIDER) {
			for (j = 0; j < cfg->providers_nr; j++) {
				size_t m;

				for (m = i; m < cfg_schema_nr && cfg_schema[m].scope == S_PROVIDER; m++) {
					buf_reset(&dotted);
					buf_addf(&dotted, "providers.%s.%s", cfg->providers[j].name, cfg_schema[m].key);
					visit_one(cfg, &cfg->providers[j], &cfg_schema[m], dotted.buf, fn, data);
				}
			}
		} else {
			for (j = 0; j < ROLE__COUNT; j++) {
				size_t m;

				for (m = i; m < cfg_schema_nr && cfg_schema[m].scope == S_AGENT; m++) {
					buf_reset(&dotted);
					buf_addf(&dotted, "agents.%s.%s", cfg_role_names[j], cfg_schema[m].key);
					visit_one(cfg, &cfg->agents[j], &cfg_schema[m], dotted.buf, fn, data);
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
			cfg_add_toml_string(&v, h->command.v[k]);
		}
		buf_addch(&v, ']');
		if (*h->matcher) {
			buf_addstr(&v, "  # matcher = ");
			cfg_add_toml_string(&v, h->matcher);
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
	for (i = 0; i < cfg_schema_nr; i++) {
		const struct cfg_key *k = &cfg_schema[i];
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
	static const char *const later[] = { "pipeline", "review", "context", "checkpoints", "budget",
						"batch" };
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
		char *h = xstrfmt("agents.%s", cfg_role_names[r]);

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
