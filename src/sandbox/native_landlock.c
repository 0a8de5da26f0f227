/*
 * The native backend's Landlock ruleset (see native.h): built in the
 * parent for each command; the supervisor grants the places it mounts
 * fresh (tmpfs, devpts) as it mounts them, and the command restricts
 * itself with it just before execve().
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/native.h"

uint64_t native_landlock_handled(int abi)
{
	uint64_t r = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;	/* ABI 1: bits 0-12 */

	if (abi >= 2)
		r |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		r |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return r;
}

static int add_rule(int ruleset, const char *path, uint64_t access, int must_exist)
{
	struct landlock_path_beneath_attr pb;
	struct stat sb;
	int fd, ret = 0;

	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0) {
		if (!must_exist && errno == ENOENT)
			return 0;
		return err_set_errno(FX_EOS, "Landlock: cannot open '%s'", path);
	}
	if (fstat(fd, &sb) == 0 && !S_ISDIR(sb.st_mode))
		access &= FS_FILE;	/* directory rights on a file are EINVAL */
	memset(&pb, 0, sizeof(pb));
	pb.allowed_access = access;
	pb.parent_fd = fd;
	if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0)
		ret = err_set_errno(FX_EOS, "Landlock: cannot add a rule for '%s'", path);
	close(fd);
	return ret;
}

int native_landlock_ruleset(int *out, const struct native_state *st, const struct executor *ex,
			    const char *tmpdir)
{
	static const char *const devices[] = { "/dev/null", "/dev/zero", "/dev/full" };
	struct fx_ruleset_attr attr;
	uint64_t all = native_landlock_handled(st->landlock_abi);
	size_t size, i;
	int fd, ret;

	memset(&attr, 0, sizeof(attr));
	attr.handled_access_fs = all;
	size = sizeof(attr.handled_access_fs);
	if (st->landlock_abi >= 4) {
		if (st->landlock_net)
			attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP |
						  LANDLOCK_ACCESS_NET_CONNECT_TCP;
		size = offsetof(struct fx_ruleset_attr, scoped);
	}
	if (st->landlock_abi >= 6) {
		attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
		size = sizeof(attr);
	}
	fd = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (fd < 0)
		return err_set_errno(FX_EOS, "landlock_create_ruleset (ABI %d)", st->landlock_abi);
	if ((ret = add_rule(fd, "/", FS_READ, 1)) < 0 ||
	    (!ex->workspace_read_only && (ret = add_rule(fd, ex->workspace, all, 1)) < 0) ||
	    (tmpdir && (ret = add_rule(fd, tmpdir, all, 1)) < 0))
		goto fail;
	for (i = 0; !ex->workspace_read_only && i < ex->writable_roots.nr; i++)
		if ((ret = add_rule(fd, ex->writable_roots.v[i], all, 1)) < 0)
			goto fail;
	for (i = 0; i < ARRAY_SIZE(devices); i++)
		if ((ret = add_rule(fd, devices[i], DEV_RW & all, 0)) < 0)
			goto fail;
	*out = fd;
	return 0;
fail:
	close(fd);
	return ret;
}

/* ---- child side: async-signal-safe ---- */

int native_landlock_grant(int ruleset, const char *path, uint64_t rights)
{
	struct landlock_path_beneath_attr pb;
	int fd, r;

	if (ruleset < 0)
		return 0;
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return -1;
	memset(&pb, 0, sizeof(pb));
	pb.allowed_access = rights;
	pb.parent_fd = fd;
	r = (int)syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	close(fd);
	return r;
}
