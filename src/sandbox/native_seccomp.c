/*
 * The native backend's seccomp program (see native.h), built once per
 * executor in the parent; the command loads it just before execve().
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/seccomp.h>
#include <seccomp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/native.h"

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#ifndef SYS_setxattrat
#define SYS_setxattrat 463
#endif
#ifndef SYS_removexattrat
#define SYS_removexattrat 466
#endif

/*
 * The command's seccomp filter (built once per executor):
 *  - setuid and setgid mode bits are refused (EPERM) wherever a mode is
 *    given: chmod, fchmod, fchmodat, fchmodat2, creat, open and openat
 *    with O_CREAT or O_TMPFILE, mkdir, mkdirat, mknod, mknodat; openat2
 *    carries its mode in memory seccomp cannot read, so it is ENOSYS
 *    (callers fall back to openat);
 *  - extended attributes cannot be written or removed (EOPNOTSUPP, what a
 *    file system without them says): seccomp sees the address of the
 *    name, not the name, so "security.*" (file capabilities, LSM labels)
 *    cannot be told from "user.*"; refusing all of them is the only rule
 *    that holds. Reading them stays possible;
 *  - the kernel keyring (add_key, request_key, keyctl: ENOSYS);
 *  - fallocate (EOPNOTSUPP, as on file systems without it; posix_fallocate
 *    then writes zeros): blocks it takes are not counted as written by
 *    the process, and [sandbox] max_write_bytes relies on that count;
 *  - io_uring (EPERM): it can open, set xattrs and make sockets without
 *    the system calls above;
 *  - mount-changing calls (EPERM; Landlock refuses them too);
 *  - without a network namespace (`with_net`): AF_INET/AF_INET6 sockets
 *    (EACCES);
 *  - with the UNIX socket guard (`unix_guard`, native_unix.c): connect()
 *    goes to the supervisor (SECCOMP_RET_USER_NOTIF), and AF_UNIX
 *    SOCK_DGRAM sockets, which reach a path through sendto() without
 *    connect(), cannot be made by socket() or socketpair() (EACCES).
 * System calls of another architecture (32-bit x86) kill the process:
 * their numbers differ and the rules above would not apply to them.
 */
static int add_mode_rules(scmp_filter_ctx ctx, int nr, unsigned mode_arg, int flags_arg)
{
	static const unsigned bits[] = { S_ISUID, S_ISGID };
	static const unsigned creat[] = { O_CREAT, __O_TMPFILE };
	size_t b, c;
	int rc = 0;

	for (b = 0; b < ARRAY_SIZE(bits) && !rc; b++) {
		struct scmp_arg_cmp m = SCMP_CMP(mode_arg, SCMP_CMP_MASKED_EQ, bits[b], bits[b]);

		if (flags_arg < 0) {
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, m);
			continue;
		}
		for (c = 0; c < ARRAY_SIZE(creat) && !rc; c++)
			rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 2, m,
					      SCMP_CMP((unsigned)flags_arg, SCMP_CMP_MASKED_EQ,
						       creat[c], creat[c]));
	}
	return rc;
}

int native_seccomp_build(struct sock_filter **out, unsigned short *out_len, int with_net,
			 int unix_guard)
{
	static const struct { int nr; int mode_arg, flags_arg; } modes[] = {
		{ SCMP_SYS(chmod), 1, -1 }, { SCMP_SYS(fchmod), 1, -1 },
		{ SCMP_SYS(fchmodat), 2, -1 }, { SYS_fchmodat2, 2, -1 },
		{ SCMP_SYS(creat), 1, -1 }, { SCMP_SYS(mkdir), 1, -1 },
		{ SCMP_SYS(mkdirat), 2, -1 }, { SCMP_SYS(mknod), 1, -1 },
		{ SCMP_SYS(mknodat), 2, -1 },
		{ SCMP_SYS(open), 2, 1 }, { SCMP_SYS(openat), 3, 2 },
	};
	static const int xattr_writes[] = {
		SCMP_SYS(setxattr), SCMP_SYS(lsetxattr), SCMP_SYS(fsetxattr),
		SCMP_SYS(removexattr), SCMP_SYS(lremovexattr), SCMP_SYS(fremovexattr),
		SYS_setxattrat, SYS_removexattrat,
	};
	static const int keyring[] = {
		SCMP_SYS(add_key), SCMP_SYS(request_key), SCMP_SYS(keyctl),
	};
	static const int mounts[] = {
		SCMP_SYS(mount), SCMP_SYS(umount2), SCMP_SYS(pivot_root),
		SCMP_SYS(move_mount), SCMP_SYS(open_tree), SCMP_SYS(fsopen),
		SCMP_SYS(fsmount), SCMP_SYS(fsconfig), SCMP_SYS(fspick),
		SCMP_SYS(mount_setattr),
	};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	off_t size;
	size_t i;
	int rc = 0, fd = -1, ret = 0;

	if (!ctx)
		return err_set(FX_EOS, "seccomp_init failed");
	for (i = 0; i < ARRAY_SIZE(modes) && !rc; i++)
		rc = add_mode_rules(ctx, modes[i].nr, (unsigned)modes[i].mode_arg,
				    modes[i].flags_arg);
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(openat2), 0);
	for (i = 0; i < ARRAY_SIZE(xattr_writes) && !rc; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EOPNOTSUPP), xattr_writes[i], 0);
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EOPNOTSUPP), SCMP_SYS(fallocate), 0);
	for (i = 0; i < ARRAY_SIZE(keyring) && !rc; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), keyring[i], 0);
	for (i = 0; i < ARRAY_SIZE(mounts) && !rc; i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), mounts[i], 0);
	/* io_uring can open files and sockets without the system calls above */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(io_uring_setup), 0);
	if (!rc && with_net)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 1,
				      SCMP_A0(SCMP_CMP_EQ, AF_INET));
	if (!rc && with_net)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 1,
				      SCMP_A0(SCMP_CMP_EQ, AF_INET6));
	if (!rc && unix_guard)
		rc = seccomp_rule_add(ctx, SCMP_ACT_NOTIFY, SCMP_SYS(connect), 0);
	if (!rc && unix_guard)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 2,
				      SCMP_A0(SCMP_CMP_EQ, AF_UNIX),
				      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_DGRAM));
	if (!rc && unix_guard)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socketpair), 2,
				      SCMP_A0(SCMP_CMP_EQ, AF_UNIX),
				      SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_DGRAM));
	if (!rc)
		rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);	/* we set it ourselves */
	if (rc) {
		ret = err_set(FX_EOS, "cannot build the seccomp filter: %s", strerror(-rc));
		goto out;
	}
	fd = memfd_create("forgex-seccomp", MFD_CLOEXEC);
	if (fd < 0) {
		ret = err_set_errno(FX_EOS, "memfd_create");
		goto out;
	}
	rc = seccomp_export_bpf(ctx, fd);
	size = lseek(fd, 0, SEEK_END);
	if (rc || size <= 0 || size % (off_t)sizeof(struct sock_filter) ||
	    size / (off_t)sizeof(struct sock_filter) > 0xffff) {
		ret = err_set(FX_EOS, "cannot export the seccomp filter");
		goto out;
	}
	*out = xmalloc((size_t)size);
	if (pread(fd, *out, (size_t)size, 0) != size) {
		ret = err_set_errno(FX_EOS, "cannot read the seccomp filter");
		FREE_AND_NULL(*out);
		goto out;
	}
	*out_len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
out:
	if (fd >= 0)
		close(fd);
	seccomp_release(ctx);
	return ret;
}
