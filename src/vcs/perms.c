/* Permission bits of a checkpoint; see perms.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <fcntl.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/strvec.h"
#include "vcs/perms.h"
#include "vcs/vcs_internal.h"

/* ----------------------------------------------------------- permissions */

int vcs_is_file_mode(uint32_t mode)
{
	return mode == GIT_FILEMODE_BLOB || mode == GIT_FILEMODE_BLOB_EXECUTABLE;
}

void perm_map_release(struct perm_map *m)
{
	size_t i;

	for (i = 0; i < m->nr; i++)
		free(m->v[i].path);
	FREE_AND_NULL(m->v);
	m->nr = m->alloc = 0;
}

void perm_map_add(struct perm_map *m, const char *path, unsigned perms)
{
	ALLOC_GROW(m->v, m->nr + 1, m->alloc);
	m->v[m->nr].path = xstrdup(path);
	m->v[m->nr].perms = perms;
	m->nr++;
}

static int perm_entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct perm_entry *)a)->path, ((const struct perm_entry *)b)->path);
}

void perm_map_sort(struct perm_map *m)
{
	if (m->nr)
		qsort(m->v, m->nr, sizeof(*m->v), perm_entry_cmp);
}

/* The kind of a map key, given the git mode of a file (ignored for a folder). */
static int perm_kind(const char *path, uint32_t mode)
{
	size_t n = strlen(path);

	if (n && path[n - 1] == '/')
		return PERM_DIR;
	return mode == GIT_FILEMODE_BLOB_EXECUTABLE ? PERM_EXEC : PERM_FILE;
}

/* The bits recorded for `path` (a folder: "a/b/"), whose git mode is `mode`. */
unsigned perm_map_get(const struct perm_map *m, const char *path, uint32_t mode)
{
	struct perm_entry key, *e;

	key.path = (char *)path;
	e = m->nr ? bsearch(&key, m->v, m->nr, sizeof(*m->v), perm_entry_cmp) : NULL;
	return e ? e->perms : m->def[perm_kind(path, mode)];
}

int vcs_strcmp_ptr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Folders above paths, as "a/", "a/b/": vcs_add_parent_dirs() for each path in
 * sorted order, then vcs_finish_dirs() sorts and drops duplicates.
 */
void vcs_add_parent_dirs(struct strvec *all, const char *path, const char **prev)
{
	const char *slash;

	for (slash = strchr(path, '/'); slash; slash = strchr(slash + 1, '/')) {
		size_t len = (size_t)(slash - path) + 1;
		char *d;

		/* sorted input: a prefix shared with the last path is in already */
		if (*prev && !strncmp(*prev, path, len))
			continue;
		d = xstrndup(path, len);
		strvec_push(all, d);
		free(d);
	}
	*prev = path;
}

void vcs_finish_dirs(struct strvec *out, struct strvec *all)
{
	size_t i;

	if (all->nr)
		qsort(all->v, all->nr, sizeof(*all->v), vcs_strcmp_ptr);
	for (i = 0; i < all->nr; i++)
		if (!i || strcmp(all->v[i], all->v[i - 1]))
			strvec_push(out, all->v[i]);
	strvec_clear(all);
}

static unsigned most_common(const unsigned *counts, unsigned fallback)
{
	unsigned i, best = fallback;

	for (i = 0; i < 01000; i++)
		if (counts[i] > counts[best])
			best = i;
	return best;
}

/* The kind of an entry of a full map of index `idx`. */
static int perm_kind_in(git_index *idx, const char *path)
{
	const git_index_entry *e;
	size_t n = strlen(path);

	if (n && path[n - 1] == '/')
		return PERM_DIR;
	e = git_index_get_bypath(idx, path, 0);
	return e && e->mode == GIT_FILEMODE_BLOB_EXECUTABLE ? PERM_EXEC : PERM_FILE;
}

/* Format the full map `m` of index `idx` as the header value. */
char *perm_map_format(const struct perm_map *m, git_index *idx)
{
	static const unsigned fallback[3] = { 0644, 0755, 0755 };
	unsigned *counts = xcalloc(3 * 01000, sizeof(*counts)), def[3];
	struct buf b = BUF_INIT;
	size_t i;
	int k;

	for (i = 0; i < m->nr; i++)
		counts[perm_kind_in(idx, m->v[i].path) * 01000 + m->v[i].perms]++;
	for (k = 0; k < 3; k++)
		def[k] = most_common(counts + k * 01000, fallback[k]);
	buf_addf(&b, "1 %o %o %o", def[0], def[1], def[2]);
	for (i = 0; i < m->nr; i++) {
		const char *p;

		if (m->v[i].perms == def[perm_kind_in(idx, m->v[i].path)])
			continue;
		buf_addf(&b, "\n%o ", m->v[i].perms);
		for (p = m->v[i].path; *p; p++) {
			if (*p == '\\')
				buf_addstr(&b, "\\\\");
			else if (*p == '\n')
				buf_addstr(&b, "\\n");
			else
				buf_addch(&b, *p);
		}
	}
	free(counts);
	return buf_detach(&b, NULL);
}

/* Read the header of commit `c` into `out`; a commit without one leaves out->known 0. */
int perm_map_load(struct perm_map *out, const git_commit *c)
{
	git_buf hv = GIT_BUF_INIT;
	const char *p, *end;
	unsigned version;
	int gerr = git_commit_header_field(&hv, c, PERMS_HEADER);

	if (gerr == GIT_ENOTFOUND) {
		git_error_clear();
		return 0;
	}
	if (gerr < 0)
		return vcs_git_error(gerr, "cannot read the modes of checkpoint %s",
				     git_oid_tostr_s(git_commit_id(c)));
	p = hv.ptr;
	end = hv.ptr + hv.size;
	if (sscanf(p, "%u %o %o %o", &version, &out->def[0], &out->def[1], &out->def[2]) != 4 ||
	    version != 1)
		goto bad;
	p += strcspn(p, "\n");
	while (p < end && *p == '\n') {
		struct buf path = BUF_INIT;
		unsigned perms;
		char *sp;

		p++;
		perms = (unsigned)strtoul(p, &sp, 8);
		if (sp == p || *sp != ' ' || perms > 0777)
			goto bad;
		for (p = sp + 1; p < end && *p != '\n'; p++) {
			if (*p == '\\' && p + 1 < end && (p[1] == '\\' || p[1] == 'n')) {
				buf_addch(&path, p[1] == 'n' ? '\n' : '\\');
				p++;
			} else {
				buf_addch(&path, *p);
			}
		}
		perm_map_add(out, path.buf, perms);
		buf_release(&path);
	}
	if (out->def[0] > 0777 || out->def[1] > 0777 || out->def[2] > 0777)
		goto bad;
	perm_map_sort(out);
	out->known = 1;
	git_buf_dispose(&hv);
	return 0;
bad:
	git_buf_dispose(&hv);
	perm_map_release(out);
	return err_set(FX_EPARSE, "checkpoint %s has a damaged " PERMS_HEADER " header",
		       git_oid_tostr_s(git_commit_id(c)));
}

