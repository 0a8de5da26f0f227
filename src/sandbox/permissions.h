#ifndef FX_PERMISSIONS_H
#define FX_PERMISSIONS_H

/*
 * Role permissions: the first of the three gates of DESIGN.md section 4,
 * ported from the seed's permissions.py.
 *
 * A permission set is an unsigned of `enum permission` bits. Every tool
 * declares the permissions it needs; the agent's role grants a fixed set
 * (permissions_for_role()); a call whose needs are not all granted is
 * refused with the reason of permissions_deny_reason(), which goes back to
 * the model as the tool's result. A role forgex does not know gets nothing:
 * the gate fails closed.
 *
 * The caller:
 *   1. granted = permissions_for_role(role);
 *   2. for each tool call: if (permissions_deny_reason(&why, granted,
 *      tool->needs)) refuse with `why`.
 */

#include "base/buf.h"

/** The seed's nine permissions, in the seed's order (which is also the order of messages). */
enum permission {
	PERM_READ = 1u << 0,
	PERM_WRITE = 1u << 1,
	PERM_DELETE = 1u << 2,
	PERM_TERMINAL = 1u << 3,
	PERM_GIT = 1u << 4,
	PERM_TEST = 1u << 5,
	PERM_BUILD = 1u << 6,
	PERM_RESEARCH = 1u << 7,
	PERM_NETWORK = 1u << 8,
};

/** Every permission there is. */
#define PERM_ALL 0x1ffu

/**
 * The seed's permission_set_for(): architect {read, research}; builder and
 * expert_coder {read, write, delete, terminal, git, test, build};
 * supervisor {read, test, build, git}; any other name, or NULL, nothing.
 * Names are exact ("Builder" is not a role).
 */
unsigned permissions_for_role(const char *role);

/** Whether `granted` holds every permission of `needed` (the seed's permits()). */
int permissions_permit(unsigned granted, unsigned needed);

/**
 * The seed's deny_reason(): when `needed` holds permissions `granted`
 * lacks, append "missing permissions: a, b" to `out` (in enum order) and
 * return 1; else leave `out` alone and return 0. A bit that names no
 * permission counts as missing and shows as "unknown(0x...)": a tool that
 * declares nonsense is refused, not let through.
 */
int permissions_deny_reason(struct buf *out, unsigned granted, unsigned needed);

/** "read", "write", ...; NULL when `p` is not exactly one permission. */
const char *permission_name(enum permission p);

/** The permission called `name` ("read" ... "network", exact). FX_EINVAL otherwise. */
int permission_parse(enum permission *out, const char *name);

/**
 * Parse a list of names separated by commas and/or spaces ("read, write")
 * into a set. FX_EINVAL naming the first unknown name; "" is the empty set.
 */
int permissions_parse(unsigned *out, const char *list);

/** Append the names of `set`, in enum order, separated by ", " ("" when empty). */
void permissions_format(struct buf *out, unsigned set);

#endif
