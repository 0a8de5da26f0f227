#ifndef FX_CONFIG_INTERNAL_H
#define FX_CONFIG_INTERNAL_H

/*
 * Private to src/config/: what the schema (config.c), applying (apply.c),
 * loading (load.c), the trust gates (trust_gates.c) and presenting
 * (show.c) share. The schema table describes every key: its section, type,
 * scope (the root, a [providers.NAME], an [agents.ROLE] or an
 * [mcp_servers.NAME] table), where it is stored and its default. A value
 * is read into a struct cfg_value, checked against its key, then (when the
 * trust gate lets it) stored with cfg_store() and its origin recorded with
 * cfg_record().
 */

#include <stddef.h>

#include "base/buf.h"
#include "base/strvec.h"
#include "config/config.h"
#include "config/toml.h"

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

/* A parsed value, before it is stored. */
struct cfg_value {
	char *s;
	double num;
	struct strvec list;
};

/* ---- the schema and storage (config.c) ---- */

/** Every key, grouped by scope (a scope's keys are consecutive); cfg_schema_nr of them. */
extern const struct cfg_key cfg_schema[];
extern const size_t cfg_schema_nr;

/** Role names by enum agent_role ("architect", ...). */
extern const char *const cfg_role_names[ROLE__COUNT];

/** The key `key` of `scope` (for S_ROOT, in `section`), or NULL. */
const struct cfg_key *cfg_find_key(enum cfg_scope scope, const char *section, const char *key);

/** Whether some key of the schema lives in section `s`. */
int cfg_known_section(const char *s);

/** Set every key of `scope` in `base` (the struct that scope's offsets point into) to its default. */
void cfg_scope_defaults(void *base, enum cfg_scope scope);

/** Free the storage of `k` in `base`. */
void cfg_release_field(void *base, const struct cfg_key *k);

/** The provider `name`, added with its defaults when it is not there yet. */
struct provider_config *cfg_add_provider(struct config *cfg, const char *name);

/** The MCP server `name`, added with its defaults (and `origin`) when it is not there yet. */
struct mcp_server_config *cfg_add_mcp_server(struct config *cfg, const char *name,
					     enum cfg_origin origin);

/** Record that `key` was set from `origin` at `where` ("FILE:LINE", a variable, "-c"). */
void cfg_record(struct config *cfg, const char *key, enum cfg_origin origin, const char *where);

/** The record of `key`, or NULL when it has its default. */
const struct cfg_set_record *cfg_find_record(const struct config *cfg, const char *key);

/** Read `tv` as a value of `k`; FX_EINVAL with the reason when it is not one. */
int cfg_value_from_toml(struct cfg_value *out, const struct cfg_key *k,
			const struct toml_value *tv);

/** Read `text` (an environment variable or -c) as a value of `k`. */
int cfg_value_from_text(struct cfg_value *out, const struct cfg_key *k, const char *text);

/** Store `v` in `k`'s place in `base`; `v` is emptied (its strings move). */
void cfg_store(void *base, const struct cfg_key *k, struct cfg_value *v);

void cfg_value_release(struct cfg_value *v);

/* ---- the trust gates (trust_gates.c) ---- */

struct trust_gate;

/** The gate of `key` in `section` for an untrusted project file, or NULL when it is not gated. */
const struct trust_gate *cfg_find_gate(const char *section, const char *key);

/**
 * May an untrusted file set `k` (in `base`) to `v`? 1 yes; 0 no, with the
 * reason in `why`; 2 only as additions (the caller adds the names to
 * cfg->terminal.denied_add instead of replacing the list).
 */
int cfg_tightens(const struct trust_gate *g, const void *base, const struct cfg_key *k,
		 const struct cfg_value *v, struct buf *why);

/** Whether `s` is in `l`. */
int cfg_in_list(const struct strvec *l, const char *s);

/* ---- presenting (show.c) ---- */

/** Append `s` as a TOML basic string, quoted and escaped. */
void cfg_add_toml_string(struct buf *out, const char *s);

#endif
