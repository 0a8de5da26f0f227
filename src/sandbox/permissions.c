/*
 * Role permissions, ported from the seed's permissions.py; see
 * permissions.h.
 */
#include <stdlib.h>
#include <string.h>

#include "sandbox/permissions.h"

/* In enum order: bit i is names[i]. */
static const char *const names[] = {
	"read", "write", "delete", "terminal", "git", "test", "build", "research", "network",
};

static const struct {
	const char *role;
	unsigned grant;
} roles[] = {
	{ "architect", PERM_READ | PERM_RESEARCH },
	{ "builder", PERM_READ | PERM_WRITE | PERM_DELETE | PERM_TERMINAL | PERM_GIT |
		     PERM_TEST | PERM_BUILD },
	{ "expert_coder", PERM_READ | PERM_WRITE | PERM_DELETE | PERM_TERMINAL | PERM_GIT |
			  PERM_TEST | PERM_BUILD },
	{ "supervisor", PERM_READ | PERM_TEST | PERM_BUILD | PERM_GIT },
};

unsigned permissions_for_role(const char *role)
{
	size_t i;

	if (!role)
		return 0;
	for (i = 0; i < ARRAY_SIZE(roles); i++)
		if (!strcmp(roles[i].role, role))
			return roles[i].grant;
	return 0;
}

int permissions_permit(unsigned granted, unsigned needed)
{
	return (needed & ~(granted & PERM_ALL)) == 0;
}

int permissions_deny_reason(struct buf *out, unsigned granted, unsigned needed)
{
	unsigned missing = needed & ~(granted & PERM_ALL);

	if (!missing)
		return 0;
	buf_addstr(out, "missing permissions: ");
	permissions_format(out, missing & PERM_ALL);
	if (missing & ~PERM_ALL)
		buf_addf(out, "%sunknown(0x%x)", missing & PERM_ALL ? ", " : "",
			 missing & ~PERM_ALL);
	return 1;
}

const char *permission_name(enum permission p)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++)
		if ((unsigned)p == 1u << i)
			return names[i];
	return NULL;
}

int permission_parse(enum permission *out, const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		if (!strcmp(names[i], name)) {
			*out = (enum permission)(1u << i);
			return 0;
		}
	}
	return err_set(FX_EINVAL, "unknown permission '%s' (expected read, write, delete, "
		       "terminal, git, test, build, research or network)", name);
}

int permissions_parse(unsigned *out, const char *list)
{
	unsigned set = 0;
	const char *p = list;

	for (;;) {
		size_t n;
		char *name;
		enum permission one = PERM_READ;
		int ret;

		p += strspn(p, ", \t");
		if (!*p)
			break;
		n = strcspn(p, ", \t");
		name = xstrndup(p, n);
		ret = permission_parse(&one, name);
		free(name);
		if (ret < 0)
			return ret;
		set |= one;
		p += n;
	}
	*out = set;
	return 0;
}

void permissions_format(struct buf *out, unsigned set)
{
	size_t i;
	int first = 1;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		if (!(set & (1u << i)))
			continue;
		if (!first)
			buf_addstr(out, ", ");
		buf_addstr(out, names[i]);
		first = 0;
	}
}
