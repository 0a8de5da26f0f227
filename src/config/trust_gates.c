/*
 * The trust gates (DESIGN.md section 4, docs/internals/config.md "Project
 * trust"): what a project file nobody trusted may do with each key that
 * changes where commands run, what they may touch, or where data and
 * secrets go. The store of trusted files is trust.c.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "config/config_internal.h"

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
	{ "sandbox", "allowed_domains", TIGHTEN_SUBSET, "may only drop domains" },
	{ "sandbox", "denied_domains", TIGHTEN_SUPERSET, "may only refuse more domains" },
	{ "sandbox", "memory_limit", TIGHTEN_SIZE, "may only go down (set one when there is none)" },
	{ "sandbox", "read_only", TIGHTEN_ON, "may only turn it on" },
	{ "sandbox", "allow_unconfined", TIGHTEN_OFF, "may only turn it off" },
	{ "sandbox", NULL, TIGHTEN_NEVER, "never taken" },
	/*
	 * Neither way: a lower bound would leave files a rollback cannot put
	 * back, a higher one raises the memory a restore takes (it holds a
	 * blob whole) to what a cloned repository chooses
	 */
	{ "checkpoints", "max_file_bytes", TIGHTEN_NEVER,
	  "never taken: it bounds what a rollback can put back and the memory a restore takes" },
	{ "checkpoints", NULL, TIGHTEN_NEVER, "never taken" },
	/* the gate's must-pass tests narrow what it runs: a repository must not choose them */
	{ "pipeline", "must_pass", TIGHTEN_NEVER, "never taken: it narrows the tests the gate runs" },
	/* where a batch clones from is where the code it runs comes from */
	{ "batch", "url_template", TIGHTEN_NEVER, "never taken: it chooses where repositories are cloned from" },
	{ "providers", "base_url", TIGHTEN_NEVER, "never taken" },
	{ "providers", "api_key_env", TIGHTEN_NEVER, "never taken" },
	{ "providers", "headers", TIGHTEN_NEVER, "never taken" },
	/* a server's own network (the egress proxy's list for it): may only shrink */
	{ "mcp_servers", "allowed_domains", TIGHTEN_SUBSET, "may only drop domains" },
	/* a server or a hook is a program forgex would start: never from an untrusted file */
	{ "mcp_servers", NULL, TIGHTEN_NEVER, "never taken: it would start a program or reach a server" },
};

const struct trust_gate *cfg_find_gate(const char *section, const char *key)
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
	g = cfg_find_gate(section, last + 1);
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

int cfg_in_list(const struct strvec *l, const char *s)
{
	return strvec_find(l, s) >= 0;
}

static int subset(const struct strvec *a, const struct strvec *b)
{
	size_t i;

	for (i = 0; i < a->nr; i++)
		if (!cfg_in_list(b, a->v[i]))
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
int cfg_tightens(const struct trust_gate *g, const void *base, const struct cfg_key *k,
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
