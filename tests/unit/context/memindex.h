#ifndef FX_TEST_CONTEXT_MEMINDEX_H
#define FX_TEST_CONTEXT_MEMINDEX_H

/*
 * An index built in memory for the ranking tests: files with the names
 * they define and the names they use, without ctags or a tree. Files
 * must be added in path order (as the index keeps them).
 */

#include <string.h>

#include "base/err.h"
#include "context/index.h"

static inline uint32_t mi_str(struct ctx_index *idx, const char *s)
{
	uint32_t off = (uint32_t)idx->arena.len;

	if (!idx->arena.len)
		buf_addch(&idx->arena, '\0');
	off = (uint32_t)idx->arena.len;
	buf_addstr(&idx->arena, s);
	buf_addch(&idx->arena, '\0');
	return off;
}

static inline uint32_t mi_sym(struct ctx_index *idx, const char *name)
{
	size_t i;

	for (i = 0; i < idx->nsyms; i++)
		if (!strcmp(idx->arena.buf + idx->syms[i], name))
			return (uint32_t)i;
	ALLOC_GROW(idx->syms, idx->nsyms + 1, idx->asyms);
	idx->syms[idx->nsyms] = mi_str(idx, name);
	return (uint32_t)idx->nsyms++;
}

static inline void mi_init(struct ctx_index *idx)
{
	memset(idx, 0, sizeof(*idx));
	idx->root.fd = -1;
	buf_init(&idx->arena, 0);
	buf_addch(&idx->arena, '\0');
	idx->loaded = 1;
}

/*
 * Add a file. `defs`: "kind name line text" separated by '|', e.g.
 * "function parse 3 int parse(void)|struct cfg 10 struct cfg {";
 * `refs`: "name*count name ..." (count 1 when absent).
 */
static inline void mi_file(struct ctx_index *idx, const char *path, const char *defs,
			   const char *refs)
{
	struct ctx_file *f;
	char *d = xstrdup(defs ? defs : ""), *p, *save = NULL;

	ALLOC_GROW(idx->files, idx->nfiles + 1, idx->afiles);
	f = &idx->files[idx->nfiles++];
	memset(f, 0, sizeof(*f));
	f->path = mi_str(idx, path);
	f->def0 = (uint32_t)idx->ndefs;
	for (p = d; *p;) {
		char *e = strchrnul(p, '|'), kind[32], name[128];
		int line = 0, used = 0;
		struct ctx_def *cd;

		if (*e)
			*e++ = '\0';
		if (sscanf(p, "%31s %127s %d%n", kind, name, &line, &used) < 3)
			fail_msg("bad definition '%s'", p);
		ALLOC_GROW(idx->defs, idx->ndefs + 1, idx->adefs);
		cd = &idx->defs[idx->ndefs++];
		memset(cd, 0, sizeof(*cd));
		cd->sym = mi_sym(idx, name);
		cd->line = (uint32_t)line;
		cd->kind = mi_str(idx, kind);
		cd->text = mi_str(idx, p + used + (p[used] == ' '));
		p = e;
	}
	(void)save;
	f->ndefs = (uint32_t)(idx->ndefs - f->def0);
	free(d);
	d = xstrdup(refs ? refs : "");
	f->ref0 = (uint32_t)idx->nrefs;
	for (p = strtok_r(d, " ", &save); p; p = strtok_r(NULL, " ", &save)) {
		char *star = strchr(p, '*');
		struct ctx_ref *r;

		if (star)
			*star++ = '\0';
		ALLOC_GROW(idx->refs, idx->nrefs + 1, idx->arefs);
		r = &idx->refs[idx->nrefs++];
		r->sym = mi_sym(idx, p);
		r->count = star ? (uint32_t)atoi(star) : 1;
	}
	f->nrefs = (uint32_t)(idx->nrefs - f->ref0);
	free(d);
}

#endif
