/*
 * The "native" backend: kernel confinement without a container.
 *
 * Planned in the parent (prepare): the namespaces to clone the supervisor
 * into (user, mount, PID, IPC, network); the mount plan (built once per
 * executor: "/" read-only and nosuid, the writable roots put back, .git
 * and .forgex and files with several hard links read-only, private /tmp,
 * /dev/shm, /run and /dev, a fresh /proc, the credential and socket
 * places hidden - see plan_mounts()); a Landlock ruleset (everything
 * readable and executable, writable only the writable roots and a few
 * devices); the seccomp program (no setuid bits, no xattr writes, no
 * keyring, no io_uring, no fallocate, no mount calls, and no AF_INET
 * sockets where network namespaces are impossible); the capabilities the
 * command loses; rlimits; for root a pids cgroup (RLIMIT_NPROC does not
 * bind root) and, where one can be made, a memory cgroup.
 *
 * Applied in the supervisor (apply_supervisor): uid/gid maps, a new
 * session keyring, the mount plan, loopback. Applied in the command just
 * before execve() (apply): rlimits, capabilities, no_new_privs, seccomp,
 * landlock_restrict_self. Each failure is fatal for the command.
 *
 * After the command (finish): an OOM kill is reported, and a .git or
 * .forgex the command created where there was none is moved away.
 *
 * When the kernel cannot enforce what the configuration asks for, init()
 * refuses and names the missing feature, unless allow_unconfined = true
 * (then it warns).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <pwd.h>
#include <net/if.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/path.h"
#include "sandbox/executor.h"
#include "sandbox/sandbox.h"

/* Landlock rights newer than the kernel headers we build with. */
#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

/* struct landlock_ruleset_attr as of ABI 6; the size passed follows the ABI. */
struct fx_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

#define FS_READ (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | \
		 LANDLOCK_ACCESS_FS_READ_DIR)
#define FS_FILE (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | \
		 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE | \
		 LANDLOCK_ACCESS_FS_IOCTL_DEV)
#define DEV_RW (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE | \
		LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)

#define FSIZE_LIMIT (8ULL << 30)	/* no single file above 8 GiB */

#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#ifndef SYS_setxattrat
#define SYS_setxattrat 463
#endif
#ifndef SYS_removexattrat
#define SYS_removexattrat 466
#endif
#ifndef KEYCTL_JOIN_SESSION_KEYRING
#define KEYCTL_JOIN_SESSION_KEYRING 1
#endif

#define CAPBIT(c) (1ULL << (c))
/*
 * What the command loses: ownership and mode changes of files it does not
 * own, keeping setuid bits on write, setting file capabilities, and
 * CAP_SYS_ADMIN (mount changes, which would uncover what is hidden).
 */
#define DROP_CAPS (CAPBIT(CAP_CHOWN) | CAPBIT(CAP_FOWNER) | CAPBIT(CAP_FSETID) | \
		   CAPBIT(CAP_SETFCAP) | CAPBIT(CAP_SYS_ADMIN))

#define HARDLINK_SCAN_MAX 200000	/* directory entries looked at, per executor */
#define HARDLINK_MOUNTS_MAX 2048	/* read-only binds for files with several links */
#define HARDLINK_DIR_COLLAPSE 16	/* this many in one folder: bind the folder */

struct native_state {
	int landlock_abi;		/* 0: not used (allow_unconfined) */
	int userns, pidns, netns, mntns, ipcns;
	unsigned mount_fs;		/* enum sb_mount_fs */
	int landlock_net;		/* Landlock denies TCP too (no network namespace) */
	struct sock_filter *filter;	/* seccomp program, or NULL */
	unsigned short filter_len;
	struct sock_filter *filter_net;	/* the same without the socket rule, for commands
					   that may use the network; NULL: `filter` has none */
	unsigned short filter_net_len;
	int cgroup;			/* limit root's processes with a pids cgroup */
	char cgroup_parent[256];
	char *cgroup_dir;		/* made at the first command, reused (one at a time) */
	int memcg, memcg_v2;		/* memory_limit through a memory cgroup */
	char memcg_parent[256];
	char *memcg_dir;
	unsigned long oom_before;	/* oom_kill count before the command */
	int tmp_swept;			/* stale private TMPDIRs collected */

	/* the mount plan, built at the first command and reused */
	int planned;
	struct strvec paths;		/* strings the plan points into */
	struct sb_mount_op *ops;
	size_t ops_nr, ops_alloc;
	struct strvec absent;		/* .git/.forgex missing in a writable root */
	char tmpfs_opts[64];
};

/* names made by this process (cgroups, quarantined folders) stay unique */
static unsigned long name_seq;

static uint64_t fs_handled(int abi)
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

/* ---------------------------------------------------------------- init */

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
 *    (EACCES).
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

static int build_seccomp(struct sock_filter **out, unsigned short *out_len, int with_net)
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

static int native_init(struct executor *ex)
{
	const struct sandbox_caps *caps = sandbox_kernel_caps();
	struct native_state *st;
	struct buf missing = BUF_INIT;
	int ret;

	if (!caps->landlock_abi)
		buf_addstr(&missing, ", Landlock (filesystem confinement; Linux 5.13+ with "
			   "landlock in lsm=)");
	if (!caps->no_new_privs)
		buf_addstr(&missing, ", no_new_privs");
	if (!caps->mntns)
		buf_addstr(&missing, ", a mount namespace (read-only system, hidden credentials "
			   "and sockets, private /tmp; needs user namespaces and Linux 5.12+)");
	if (!caps->ipcns)
		buf_addstr(&missing, ", an IPC namespace (the host's SysV IPC would be shared)");
	if (!caps->seccomp)
		buf_addstr(&missing, ", seccomp (refusing setuid bits, xattrs and the keyring)");
	if (!ex->network && !caps->netns && !caps->seccomp)
		buf_addstr(&missing, ", network isolation (neither network namespaces nor "
			   "seccomp)");
	if (ex->max_processes > 0 && geteuid() == 0 && !caps->cgroup_pids)
		buf_addstr(&missing, ", a process limit for root (RLIMIT_NPROC does not bind "
			   "root and no pids cgroup is writable)");
	if (missing.len) {
		if (!ex->allow_unconfined || ex->auto_select) {
			ret = err_set(FX_EUNSUPPORTED, "the native sandbox cannot enforce the "
				      "configuration on this kernel; missing: %s",
				      missing.buf + 2);
			buf_release(&missing);
			return ret;
		}
		strvec_pushf(&ex->warnings, "native sandbox: not enforced here (allow_unconfined "
			     "= true): %s", missing.buf + 2);
	}
	buf_release(&missing);

	st = xcalloc(1, sizeof(*st));
	strvec_init(&st->paths);
	strvec_init(&st->absent);
	st->landlock_abi = caps->landlock_abi;
	st->userns = caps->userns;
	st->pidns = caps->pidns;
	/*
	 * Without [sandbox] network, a command gets no network unless it is
	 * an approved network command (sp->network): its own network
	 * namespace, or where there is none, the seccomp socket rule and
	 * Landlock's TCP rights. Both filters are built here, once.
	 */
	st->netns = !ex->network && caps->netns;
	st->mntns = caps->mntns;
	st->ipcns = caps->ipcns;
	st->mount_fs = caps->mount_fs;
	if (!ex->network && !caps->netns)
		st->landlock_net = caps->landlock_abi >= 4;
	if (caps->seccomp &&
	    ((ret = build_seccomp(&st->filter, &st->filter_len, !ex->network && !caps->netns)) < 0 ||
	     (!ex->network && !caps->netns &&
	      (ret = build_seccomp(&st->filter_net, &st->filter_net_len, 0)) < 0))) {
		free(st->filter);
		strvec_clear(&st->paths);
		strvec_clear(&st->absent);
		free(st);
		return ret;
	}
	if (ex->max_processes > 0 && geteuid() == 0 && caps->cgroup_pids) {
		st->cgroup = 1;
		snprintf(st->cgroup_parent, sizeof(st->cgroup_parent), "%s",
			 caps->cgroup_pids_dir);
	}
	if (ex->memory_limit && caps->cgroup_memory) {
		st->memcg = 1;
		st->memcg_v2 = caps->cgroup_memory_v2;
		snprintf(st->memcg_parent, sizeof(st->memcg_parent), "%s",
			 caps->cgroup_memory_dir);
	}
	snprintf(st->tmpfs_opts, sizeof(st->tmpfs_opts), "size=%llu,mode=1777",
		 (unsigned long long)ex->tmp_size);
	if (!st->landlock_abi)
		ex->caps &= ~(unsigned)SB_CAP_FS;
	if (!st->mntns)
		ex->caps &= ~(unsigned)SB_CAP_MOUNTS;
	if (!ex->network && !st->netns && !st->filter)
		ex->caps &= ~(unsigned)SB_CAP_NET;
	if (!st->pidns)
		ex->caps &= ~(unsigned)SB_CAP_PIDNS;
	if (ex->max_processes > 0 && geteuid() == 0 && !st->cgroup)
		ex->caps &= ~(unsigned)SB_CAP_LIMITS;
	ex->backend_data = st;
	return 0;
}

static void rmdir_cgroup(const char *dir)
{
	int i;

	/* empty once every process is reaped; zombies may take a moment */
	for (i = 0; i < 200 && rmdir(dir) < 0 && errno == EBUSY; i++) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
}

static void native_release(struct executor *ex)
{
	struct native_state *st = ex->backend_data;

	if (!st)
		return;
	if (st->cgroup_dir) {
		rmdir_cgroup(st->cgroup_dir);
		free(st->cgroup_dir);
	}
	if (st->memcg_dir) {
		rmdir_cgroup(st->memcg_dir);
		free(st->memcg_dir);
	}
	free(st->filter);
	free(st->filter_net);
	free(st->ops);
	strvec_clear(&st->paths);
	strvec_clear(&st->absent);
	free(st);
	ex->backend_data = NULL;
}

/* ------------------------------------------------------------- prepare */

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

static int build_ruleset(int *out, const struct native_state *st, const struct executor *ex,
			 const char *tmpdir, int network)
{
	static const char *const devices[] = { "/dev/null", "/dev/zero", "/dev/full" };
	struct fx_ruleset_attr attr;
	uint64_t all = fs_handled(st->landlock_abi);
	size_t size, i;
	int fd, ret;

	memset(&attr, 0, sizeof(attr));
	attr.handled_access_fs = all;
	size = sizeof(attr.handled_access_fs);
	if (st->landlock_abi >= 4) {
		if (st->landlock_net && !network)
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

static void add_rlimit(struct sb_plan *plan, int resource, uint64_t soft, uint64_t hard)
{
	struct rlimit cur;
	struct sb_rlimit *r;

	if (plan->rlimits_nr >= SB_MAX_RLIMITS)
		BUG("too many rlimits");
	/* an unprivileged process cannot raise a hard limit: stay under it */
	if (getrlimit(resource, &cur) == 0 && cur.rlim_max != RLIM_INFINITY) {
		if (hard > cur.rlim_max)
			hard = cur.rlim_max;
		if (soft > hard)
			soft = hard;
	}
	r = &plan->rlimits[plan->rlimits_nr++];
	r->resource = resource;
	r->lim.rlim_cur = (rlim_t)soft;
	r->lim.rlim_max = (rlim_t)hard;
}

static int write_file(const char *path, const char *text)
{
	size_t len = strlen(text);
	int fd = open(path, O_WRONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return err_set_errno(FX_EOS, "cannot open '%s'", path);
	if (write(fd, text, len) != (ssize_t)len)
		ret = err_set_errno(FX_EOS, "cannot write '%s' to '%s'", text, path);
	close(fd);
	return ret;
}

/*
 * Remove the (empty) cgroups of forgex processes that died without
 * cleaning up (killed outright): "forgex-PID-N" whose PID is gone.
 */
static void collect_stale_cgroups(const char *parent)
{
	DIR *d = opendir(parent);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		char *end;
		long pid;

		if (strncmp(de->d_name, "forgex-", 7))
			continue;
		pid = strtol(de->d_name + 7, &end, 10);
		if (end == de->d_name + 7 || *end != '-' || pid <= 0 || pid == (long)getpid())
			continue;
		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
	}
	if (d)
		closedir(d);
}

/*
 * One pids cgroup per executor, made when the first command runs and
 * reused: commands run one at a time and nothing of a command survives it,
 * so each starts with the cgroup empty.
 */
static int make_cgroup(struct native_state *st, long max_processes)
{
	char *dir, *max, *val;
	int ret;

	if (st->cgroup_dir)
		return 0;
	collect_stale_cgroups(st->cgroup_parent);
	/* numbered across the process: two executors may run commands at once (the map's ctags) */
	dir = xstrfmt("%s/forgex-%ld-%lu", st->cgroup_parent, (long)getpid(),
		      __atomic_add_fetch(&name_seq, 1, __ATOMIC_RELAXED));
	if (mkdir(dir, 0755) < 0) {
		ret = err_set_errno(FX_EOS, "cannot create the pids cgroup '%s'", dir);
		free(dir);
		return ret;
	}
	max = xstrfmt("%s/pids.max", dir);
	val = xstrfmt("%ld", max_processes + 1);	/* +1: the supervisor */
	ret = write_file(max, val);
	free(max);
	free(val);
	if (ret < 0) {
		rmdir(dir);
		free(dir);
		return ret;
	}
	st->cgroup_dir = dir;
	return 0;
}

/*
 * Remove the private TMPDIRs ("forgex-tmp-PID-XXXXXX") of forgex
 * processes that are gone (killed before they could clean up).
 */
static void collect_stale_tmpdirs(const char *base)
{
	DIR *d = opendir(base);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		char *end, *path;
		long pid;

		if (strncmp(de->d_name, "forgex-tmp-", 11))
			continue;
		pid = strtol(de->d_name + 11, &end, 10);
		if (end == de->d_name + 11 || *end != '-' || pid <= 0 || pid == (long)getpid())
			continue;
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		path = xstrfmt("%s/%s", base, de->d_name);
		fsutil_remove_tree(path);
		free(path);
	}
	if (d)
		closedir(d);
}

/* Without a mount namespace: a private TMPDIR on the host, removed afterwards. */
static int make_tmpdir(struct native_state *st, struct sb_plan *plan)
{
	const char *base = getenv("TMPDIR");
	char *tmpl;

	if (!base || base[0] != '/' || !fsutil_is_dir(base))
		base = "/tmp";
	if (!st->tmp_swept++)
		collect_stale_tmpdirs(base);
	tmpl = xstrfmt("%s/forgex-tmp-%ld-XXXXXX", base, (long)getpid());
	if (!mkdtemp(tmpl)) {
		int ret = err_set_errno(FX_EOS, "cannot create a private TMPDIR in '%s'", base);

		free(tmpl);
		return ret;
	}
	plan->tmpdir = realpath(tmpl, NULL);
	if (!plan->tmpdir) {
		rmdir(tmpl);
		free(tmpl);
		return err_set_errno(FX_EOS, "cannot resolve the private TMPDIR");
	}
	free(tmpl);
	return 0;
}

static int make_memcg(struct native_state *st, uint64_t limit)
{
	char *dir, *f, *val;
	int ret;

	if (st->memcg_dir)
		return 0;
	collect_stale_cgroups(st->memcg_parent);
	dir = xstrfmt("%s/forgex-%ld-%lu", st->memcg_parent, (long)getpid(),
		      __atomic_add_fetch(&name_seq, 1, __ATOMIC_RELAXED));
	if (mkdir(dir, 0755) < 0) {
		ret = err_set_errno(FX_EOS, "cannot create the memory cgroup '%s'", dir);
		free(dir);
		return ret;
	}
	val = xstrfmt("%llu", (unsigned long long)limit);
	f = xstrfmt("%s/%s", dir, st->memcg_v2 ? "memory.max" : "memory.limit_in_bytes");
	ret = write_file(f, val);
	free(f);
	if (ret >= 0) {
		/* no swapping around the limit (where the kernel accounts swap) */
		f = xstrfmt("%s/%s", dir, st->memcg_v2 ? "memory.swap.max" :
			    "memory.memsw.limit_in_bytes");
		if (access(f, W_OK) == 0)
			write_file(f, st->memcg_v2 ? "0" : val);
		free(f);
	}
	free(val);
	if (ret < 0) {
		rmdir(dir);
		free(dir);
		return ret;
	}
	st->memcg_dir = dir;
	return 0;
}

/* How many times the memory cgroup's OOM killer has struck so far. */
static unsigned long memcg_oom_kills(const struct native_state *st)
{
	struct buf b = BUF_INIT;
	char *f;
	const char *p;
	unsigned long n = 0;

	if (!st->memcg_dir)
		return 0;
	f = xstrfmt("%s/%s", st->memcg_dir, st->memcg_v2 ? "memory.events" :
		    "memory.oom_control");
	if (fsutil_read_file(&b, f, 1 << 16) >= 0 && (p = strstr(b.buf, "oom_kill ")))
		n = strtoul(p + 9, NULL, 10);
	free(f);
	buf_release(&b);
	return n;
}

/* ---------------------------------------------------------- mount plan */

static const char *keep_path(struct native_state *st, const char *path)
{
	return strvec_push(&st->paths, path);
}

static void add_op(struct native_state *st, int kind, int flags, int slot, const char *path,
		   const char *data)
{
	struct sb_mount_op *op;

	ALLOC_GROW(st->ops, st->ops_nr + 1, st->ops_alloc);
	op = &st->ops[st->ops_nr++];
	op->kind = kind;
	op->flags = flags;
	op->slot = slot;
	op->path = path;
	op->data = data;
}

/* Home folder places that hold credentials or agent sockets. */
static const char *const hidden_in_home[] = {
	".ssh", ".gnupg", ".aws", ".kube", ".docker", ".netrc", ".git-credentials",
	".config/forgex", ".cache/git/credential", ".config/gh", ".config/hub",
	".config/gcloud", ".azure", ".password-store", ".local/share/keyrings",
	".pypirc", ".cargo/credentials", ".cargo/credentials.toml", ".vault-token",
	".terraform.d/credentials.tfrc.json",
};

static int in_writable_root(const struct executor *ex, const char *path)
{
	size_t i;

	if (path_is_within(path, ex->workspace))
		return 1;
	for (i = 0; i < ex->writable_roots.nr; i++)
		if (path_is_within(path, ex->writable_roots.v[i]))
			return 1;
	return 0;
}

static int is_ancestor_of_root(const struct executor *ex, const char *path)
{
	size_t i;

	if (path_is_within(ex->workspace, path))
		return 1;
	for (i = 0; i < ex->writable_roots.nr; i++)
		if (path_is_within(ex->writable_roots.v[i], path))
			return 1;
	return 0;
}

/*
 * Resolve one place to hide and plan its mount: an empty read-only tmpfs
 * over a folder, /dev/null (nodev: every open fails) over anything else.
 * Missing places are left alone; so is /run (replaced as a whole) and a
 * place that holds a writable root (hiding it would hide the workspace).
 */
static void plan_hide(struct native_state *st, struct executor *ex, struct strvec *seen,
		      const char *path)
{
	struct stat sb;
	char *real;
	size_t i;

	if (!path || path[0] != '/' || lstat(path, &sb) < 0)
		return;
	real = realpath(path, NULL);
	if (!real || stat(real, &sb) < 0) {
		free(real);
		return;
	}
	/* /run, /tmp and /dev/shm are fresh and empty in the sandbox */
	if (!strcmp(real, "/") || ((path_is_within(real, "/run") || path_is_within(real, "/tmp") ||
				    path_is_within(real, "/dev/shm")) && !in_writable_root(ex, real))) {
		free(real);
		return;
	}
	for (i = 0; i < seen->nr; i++)
		if (path_is_within(real, seen->v[i])) {
			free(real);
			return;
		}
	if (is_ancestor_of_root(ex, real)) {
		strvec_pushf(&ex->warnings, "native sandbox: '%s' is not hidden: a writable "
			     "root is inside it", real);
		free(real);
		return;
	}
	strvec_push(seen, real);
	add_op(st, S_ISDIR(sb.st_mode) ? SB_MNT_HIDE_DIR : SB_MNT_HIDE_FILE, 0, 0,
	       keep_path(st, real), NULL);
	free(real);
}

static void plan_hidden(struct native_state *st, struct executor *ex)
{
	struct strvec homes = STRVEC_INIT, seen = STRVEC_INIT;
	const char *home = getenv("HOME"), *v;
	struct passwd *pw = getpwuid(geteuid());
	size_t h, i;

	if (home && home[0] == '/')
		strvec_push(&homes, home);
	if (pw && pw->pw_dir && pw->pw_dir[0] == '/' && (!home || strcmp(home, pw->pw_dir)))
		strvec_push(&homes, pw->pw_dir);
	for (h = 0; h < homes.nr; h++)
		for (i = 0; i < ARRAY_SIZE(hidden_in_home); i++) {
			char *p = xstrfmt("%s/%s", homes.v[h], hidden_in_home[i]);

			plan_hide(st, ex, &seen, p);
			free(p);
		}
	if ((v = getenv("XDG_CONFIG_HOME")) && *v == '/') {
		char *p = xstrfmt("%s/forgex", v);

		plan_hide(st, ex, &seen, p);
		free(p);
	}
	if ((v = getenv("XDG_CACHE_HOME")) && *v == '/') {
		char *p = xstrfmt("%s/git/credential", v);

		plan_hide(st, ex, &seen, p);
		free(p);
	}
	/* the agents' sockets, wherever they are (under /tmp and /run: replaced anyway) */
	plan_hide(st, ex, &seen, getenv("XDG_RUNTIME_DIR"));
	plan_hide(st, ex, &seen, getenv("SSH_AUTH_SOCK"));
	plan_hide(st, ex, &seen, "/var/run/docker.sock");
	for (i = 0; i < ex->hidden.nr; i++)
		plan_hide(st, ex, &seen, ex->hidden.v[i]);
	strvec_clear(&homes);
	strvec_clear(&seen);
}

struct link_scan {
	struct native_state *st;
	size_t entries;
	int truncated;
	size_t mounts;
	dev_t dev;
};

/*
 * Files below `dir` with more than one link: another name of the same file
 * may be outside every writable root (a local clone's objects, a pnpm
 * store, cp -al), so they are bound read-only. A folder holding many is
 * bound read-only as a whole. The walk does not follow links or cross
 * mount points and stops after HARDLINK_SCAN_MAX entries.
 */
static void scan_links(struct link_scan *ls, int dfd, const char *path, int depth, int top)
{
	DIR *d;
	struct dirent *de;
	struct strvec files = STRVEC_INIT;
	size_t i;

	if (depth > 64 || ls->truncated)
		goto out_fd;
	d = fdopendir(dfd);
	if (!d)
		goto out_fd;
	while ((de = readdir(d))) {
		struct stat sb;
		char *sub;
		int fd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (++ls->entries > HARDLINK_SCAN_MAX) {
			ls->truncated = 1;
			break;
		}
		/* already read-only as a whole */
		if (top && (!strcmp(de->d_name, ".git") || !strcmp(de->d_name, ".forgex")))
			continue;
		if (de->d_type != DT_UNKNOWN && de->d_type != DT_DIR && de->d_type != DT_REG)
			continue;
		if (fstatat(dirfd(d), de->d_name, &sb, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISREG(sb.st_mode) && sb.st_nlink > 1) {
			strvec_pushf(&files, "%s/%s", path, de->d_name);
			continue;
		}
		if (!S_ISDIR(sb.st_mode) || sb.st_dev != ls->dev)
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		sub = xstrfmt("%s/%s", path, de->d_name);
		scan_links(ls, fd, sub, depth + 1, 0);
		free(sub);
	}
	closedir(d);
	if (files.nr >= HARDLINK_DIR_COLLAPSE) {
		if (ls->mounts < HARDLINK_MOUNTS_MAX) {
			add_op(ls->st, SB_MNT_RO_BIND, SB_MNTF_OPTIONAL, 0, keep_path(ls->st, path),
			       NULL);
			ls->mounts++;
		} else {
			ls->truncated = 1;
		}
	} else {
		for (i = 0; i < files.nr; i++) {
			if (ls->mounts >= HARDLINK_MOUNTS_MAX) {
				ls->truncated = 1;
				break;
			}
			add_op(ls->st, SB_MNT_RO_BIND, SB_MNTF_OPTIONAL, 0,
			       keep_path(ls->st, files.v[i]), NULL);
			ls->mounts++;
		}
	}
	strvec_clear(&files);
	return;
out_fd:
	close(dfd);
}

static void plan_links(struct native_state *st, struct executor *ex, const char *root)
{
	struct link_scan ls = { st, 0, 0, 0, 0 };
	struct stat sb;
	int fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &sb) < 0) {
		if (fd >= 0)
			close(fd);
		return;
	}
	ls.dev = sb.st_dev;
	scan_links(&ls, fd, root, 0, 1);
	if (ls.truncated)
		strvec_pushf(&ex->warnings, "native sandbox: files with several hard links in "
			     "'%s' are only partly protected (more than %d entries or %d files)",
			     root, HARDLINK_SCAN_MAX, HARDLINK_MOUNTS_MAX);
}

/* The writable roots, shortest first (a root inside another goes on top of it). */
static void sorted_roots(struct strvec *out, const struct executor *ex)
{
	size_t i, j;

	strvec_push(out, ex->workspace);
	/* read-only commands: the workspace alone, bound read-only (plan_mounts()) */
	for (i = 0; !ex->workspace_read_only && i < ex->writable_roots.nr; i++)
		strvec_push(out, ex->writable_roots.v[i]);
	for (i = 1; i < out->nr; i++)
		for (j = i; j > 0 && strlen(out->v[j - 1]) > strlen(out->v[j]); j--) {
			const char *t = out->v[j];

			out->v[j] = out->v[j - 1];
			out->v[j - 1] = t;
		}
}

/*
 * The mount plan, in the order the supervisor applies it (see
 * docs/internals/executor.md, "Mount namespace"):
 *   1. "/" private; detached copies of each writable root (and of the
 *      resolver configuration when it lives under /run), taken before
 *      anything covers them;
 *   2. every mount read-only and nosuid;
 *   3. fresh tmpfs on /tmp, /dev/shm and /run, fresh /proc and mqueue;
 *   4. the writable roots put back, read-write (nosuid);
 *   5. .git and .forgex in each writable root read-only; files with
 *      several links read-only;
 *   6. the hidden places covered.
 */
static int plan_mounts(struct native_state *st, struct executor *ex)
{
	struct strvec roots = STRVEC_INIT;
	static const char *const devices[] = {
		"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
	};
	const char *resolv = NULL, *kept[SB_MAX_TREES];
	int dev_slot[ARRAY_SIZE(devices)];
	char *real;
	size_t i, k;
	int resolv_slot = -1;

	sorted_roots(&roots, ex);
	if (roots.nr + 1 + ARRAY_SIZE(devices) > SB_MAX_TREES) {
		strvec_clear(&roots);
		return err_set(FX_EINVAL, "[sandbox] writable_roots: at most %d",
			       SB_MAX_TREES - 2 - (int)ARRAY_SIZE(devices));
	}
	add_op(st, SB_MNT_PRIVATE, 0, 0, "/", NULL);
	for (i = 0; i < roots.nr; i++) {
		if (!strcmp(roots.v[i], "/"))
			continue;
		kept[i] = keep_path(st, roots.v[i]);
		add_op(st, SB_MNT_CLONE, 0, (int)i, kept[i], NULL);
	}
	real = realpath("/etc/resolv.conf", NULL);
	if (real && path_is_within(real, "/run")) {
		resolv = keep_path(st, real);
		resolv_slot = (int)roots.nr;
		add_op(st, SB_MNT_CLONE, 0, resolv_slot, resolv, NULL);
	}
	free(real);
	/* the few devices a command needs, taken before /dev is replaced */
	for (k = 0; k < ARRAY_SIZE(devices); k++) {
		struct stat sb;

		dev_slot[k] = -1;
		if (stat(devices[k], &sb) < 0 || !S_ISCHR(sb.st_mode))
			continue;
		dev_slot[k] = (int)roots.nr + 1 + (int)k;
		add_op(st, SB_MNT_CLONE, 0, dev_slot[k], devices[k], NULL);
	}
	add_op(st, SB_MNT_ROOT_RO, 0, 0, "/", NULL);
	add_op(st, SB_MNT_TMPFS, SB_MNTF_LANDLOCK, 0, "/tmp", st->tmpfs_opts);
	add_op(st, SB_MNT_TMPFS, SB_MNTF_LANDLOCK | SB_MNTF_OPTIONAL, 0, "/run",
	       "size=16m,mode=0755");
	if (st->pidns && (st->mount_fs & SB_MOUNT_PROC))
		add_op(st, SB_MNT_PROC, 0, 0, "/proc", NULL);
	/*
	 * A /dev of its own: the host's holds disks and other devices that
	 * root could open for reading (raw disk reads would see every hidden
	 * file).
	 */
	add_op(st, SB_MNT_TMPFS, 0, 0, "/dev", "size=64k,nr_inodes=64,mode=0755");
	for (k = 0; k < ARRAY_SIZE(devices); k++)
		if (dev_slot[k] >= 0)
			add_op(st, SB_MNT_PLACE, SB_MNTF_FILE, dev_slot[k], devices[k], NULL);
	add_op(st, SB_MNT_TMPFS, SB_MNTF_LANDLOCK | SB_MNTF_MKDIR, 0, "/dev/shm",
	       st->tmpfs_opts);
	if (st->mount_fs & SB_MOUNT_DEVPTS)
		add_op(st, SB_MNT_DEVPTS, SB_MNTF_LANDLOCK | SB_MNTF_MKDIR | SB_MNTF_OPTIONAL, 0,
		       "/dev/pts", "newinstance,ptmxmode=0666,mode=0620");
	/* an mqueue belongs to the IPC namespace of who mounts it */
	if (st->ipcns && (st->mount_fs & SB_MOUNT_MQUEUE))
		add_op(st, SB_MNT_MQUEUE, SB_MNTF_MKDIR | SB_MNTF_OPTIONAL, 0, "/dev/mqueue",
		       NULL);
	add_op(st, SB_MNT_SYMLINK, 0, 0, "/dev/ptmx", "pts/ptmx");
	add_op(st, SB_MNT_SYMLINK, 0, 0, "/dev/fd", "/proc/self/fd");
	add_op(st, SB_MNT_SYMLINK, 0, 0, "/dev/stdin", "/proc/self/fd/0");
	add_op(st, SB_MNT_SYMLINK, 0, 0, "/dev/stdout", "/proc/self/fd/1");
	add_op(st, SB_MNT_SYMLINK, 0, 0, "/dev/stderr", "/proc/self/fd/2");
	add_op(st, SB_MNT_READ_ONLY, 0, 0, "/dev", NULL);
	for (i = 0; i < roots.nr; i++) {
		if (!strcmp(roots.v[i], "/"))
			continue;
		add_op(st, SB_MNT_PLACE, 0, (int)i, kept[i], NULL);
	}
	if (resolv)
		add_op(st, SB_MNT_PLACE, SB_MNTF_FILE, resolv_slot, resolv, NULL);
	for (i = 0; i < roots.nr; i++) {
		static const char *const names[] = { ".git", ".forgex" };

		for (k = 0; k < ARRAY_SIZE(names); k++) {
			char *p = xstrfmt("%s/%s", strcmp(roots.v[i], "/") ? roots.v[i] : "",
					  names[k]);
			struct stat sb;

			if (lstat(p, &sb) == 0)
				add_op(st, SB_MNT_RO_BIND, SB_MNTF_OPTIONAL, 0, keep_path(st, p),
				       NULL);
			else
				strvec_push(&st->absent, p);
			free(p);
		}
	}
	if (ex->workspace_read_only)
		/* all of it read-only: no hard-linked file needs its own protection */
		add_op(st, SB_MNT_RO_BIND, 0, 0, keep_path(st, ex->workspace), NULL);
	else
		for (i = 0; i < roots.nr; i++)
			plan_links(st, ex, roots.v[i]);
	plan_hidden(st, ex);
	strvec_clear(&roots);
	return 0;
}

/*
 * A command may create .git or .forgex in a writable root that had none
 * (they cannot be mounted read-only before they exist). Such a folder
 * could plant hooks or fsmonitor commands for the user's git, or links
 * for forgex's own writes: it is renamed out of the way, never used.
 */
static void quarantine_absent(struct native_state *st, struct sb_spawn *sp)
{
	size_t i;

	for (i = 0; i < st->absent.nr; i++) {
		const char *p = st->absent.v[i];
		struct stat sb;
		char *to;

		if (lstat(p, &sb) < 0)
			continue;
		to = xstrfmt("%s-quarantined-by-forgex-%ld-%lu", p, (long)getpid(),
			     __atomic_add_fetch(&name_seq, 1, __ATOMIC_RELAXED));
		if (rename(p, to) == 0)
			strvec_pushf(&sp->notes, "forgex: the command created '%s', which would "
				     "steer git or forgex outside the sandbox; it was moved to '%s'",
				     p, to);
		else
			strvec_pushf(&sp->notes, "forgex: the command created '%s' and forgex "
				     "could not move it away (%s): check it before you run git there",
				     p, strerror(errno));
		free(to);
	}
}

static void set_tmp_env(struct sb_spawn *sp, const char *dir)
{
	static const char *const names[] = { "TMP", "TEMP" };
	char *kv = xstrfmt("TMPDIR=%s", dir);
	size_t i;

	proc_env_set(&sp->env, kv);
	free(kv);
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		if (!proc_env_get(&sp->env, names[i]))
			continue;
		kv = xstrfmt("%s=%s", names[i], dir);
		proc_env_set(&sp->env, kv);
		free(kv);
	}
}

static int native_prepare(struct executor *ex, struct sb_spawn *sp)
{
	struct native_state *st = ex->backend_data;
	struct sb_plan *plan = &sp->plan;
	uint64_t cpu, fsize;
	long ncpu;
	size_t i;
	/* an approved network command shares the host's network (docs/internals/executor.md) */
	int ret, netns = st->netns && !sp->network;

	plan->clone_flags = (st->userns ? CLONE_NEWUSER : 0) |
			    (st->pidns ? CLONE_NEWPID : 0) |
			    (netns ? CLONE_NEWNET : 0) |
			    (st->mntns ? CLONE_NEWNS : 0) |
			    (st->ipcns ? CLONE_NEWIPC : 0);
	plan->pid_namespace = st->pidns;
	plan->loopback_up = netns;
	if (st->userns && geteuid() != 0) {
		snprintf(plan->uid_map, sizeof(plan->uid_map), "%ld %ld 1\n", (long)geteuid(),
			 (long)geteuid());
		snprintf(plan->gid_map, sizeof(plan->gid_map), "%ld %ld 1\n", (long)getegid(),
			 (long)getegid());
	}
	plan->no_new_privs = 1;
	plan->new_keyring = 1;
	plan->drop_caps = DROP_CAPS;
	plan->landlock_rw = fs_handled(st->landlock_abi);

	if (st->mntns) {
		/*
		 * A .git or .forgex that appeared between commands (the user ran
		 * git init) must be bound read-only now, not quarantined later.
		 */
		for (i = 0; st->planned && i < st->absent.nr; i++) {
			struct stat sb;

			if (lstat(st->absent.v[i], &sb) == 0) {
				free(st->ops);
				st->ops = NULL;
				st->ops_nr = st->ops_alloc = 0;
				strvec_clear(&st->paths);
				strvec_clear(&st->absent);
				st->planned = 0;
			}
		}
		if (!st->planned) {
			if ((ret = plan_mounts(st, ex)) < 0)
				return ret;
			st->planned = 1;
		}
		plan->mounts = st->ops;
		plan->mounts_nr = st->ops_nr;
		set_tmp_env(sp, "/tmp");
	} else {
		if ((ret = make_tmpdir(st, plan)) < 0)
			return ret;
		set_tmp_env(sp, plan->tmpdir);
	}
	if (st->landlock_abi &&
	    (ret = build_ruleset(&plan->landlock_fd, st, ex, plan->tmpdir, sp->network)) < 0)
		return ret;
	if (sp->network && st->filter_net) {
		plan->seccomp.len = st->filter_net_len;
		plan->seccomp.filter = st->filter_net;
	} else if (st->filter) {
		plan->seccomp.len = st->filter_len;
		plan->seccomp.filter = st->filter;
	}

	if (ex->max_processes > 0 && geteuid() != 0)
		add_rlimit(plan, RLIMIT_NPROC, (uint64_t)ex->max_processes,
			   (uint64_t)ex->max_processes);
	/* no single file larger than what a command may write at all */
	fsize = ex->max_write_bytes && ex->max_write_bytes < FSIZE_LIMIT ?
		ex->max_write_bytes : FSIZE_LIMIT;
	add_rlimit(plan, RLIMIT_FSIZE, fsize, fsize);
	/*
	 * CPU seconds: a backstop behind the wall-clock timeout (should forgex
	 * be stopped, say). One process cannot use more than the timeout
	 * times the CPUs before the timeout hits, so builds are never cut.
	 */
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu = ((uint64_t)sp->timeout_ms / 1000 + 1) * (uint64_t)(ncpu > 0 ? ncpu : 1) + 5;
	add_rlimit(plan, RLIMIT_CPU, cpu, cpu + 5);
	/* memory: a memory cgroup where we can make one, else the address space */
	if (ex->memory_limit && !st->memcg)
		add_rlimit(plan, RLIMIT_AS, ex->memory_limit, ex->memory_limit);
	add_rlimit(plan, RLIMIT_CORE, 0, 0);

	if (st->cgroup && (ret = make_cgroup(st, ex->max_processes)) < 0)
		return ret;
	if (st->memcg) {
		if ((ret = make_memcg(st, ex->memory_limit)) < 0)
			return ret;
		st->oom_before = memcg_oom_kills(st);
	}
	return 0;
}

/* -------------------------------------------------------------- attach */

static int native_attach(struct executor *ex, struct sb_spawn *sp, pid_t pid)
{
	struct native_state *st = ex->backend_data;
	char path[64], map[64];
	int ret;

	/*
	 * Root maps every id to itself: only a process with CAP_SETUID in
	 * our namespace may write that. Others map just themselves, which
	 * the supervisor does on its own (apply_supervisor): its /proc files
	 * may not be ours to open when forgex changed identity.
	 */
	if ((sp->plan.clone_flags & CLONE_NEWUSER) && geteuid() == 0) {
		snprintf(map, sizeof(map), "0 0 4294967295\n");
		snprintf(path, sizeof(path), "/proc/%ld/uid_map", (long)pid);
		if ((ret = write_file(path, map)) < 0)
			return ret;
		snprintf(path, sizeof(path), "/proc/%ld/gid_map", (long)pid);
		if ((ret = write_file(path, map)) < 0)
			return ret;
	}
	if (st->cgroup_dir) {
		char *procs = xstrfmt("%s/cgroup.procs", st->cgroup_dir);

		snprintf(map, sizeof(map), "%ld", (long)pid);
		ret = write_file(procs, map);
		free(procs);
		if (ret < 0)
			return ret;
	}
	if (st->memcg_dir) {
		char *procs = xstrfmt("%s/cgroup.procs", st->memcg_dir);

		snprintf(map, sizeof(map), "%ld", (long)pid);
		ret = write_file(procs, map);
		free(procs);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/* ------------------------------------------ child side: AS-safe only */

static int write_self(const char *path, const char *text)
{
	size_t len = 0;
	int fd, e;

	while (text[len])
		len++;
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	if (write(fd, text, len) != (ssize_t)len) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	close(fd);
	return 0;
}

int sandbox_inject_child_failure;

static int injected(int step)
{
	if (sandbox_inject_child_failure != step)
		return 0;
	errno = EPERM;
	return 1;
}

/* The failing step, for the report (static: the child's own copy). */
static char mount_stage[112];

static void set_stage(const char *what, const char *path)
{
	size_t n = 0, i;

	for (i = 0; what[i] && n < sizeof(mount_stage) - 1; i++)
		mount_stage[n++] = what[i];
	for (i = 0; path && path[i] && n < sizeof(mount_stage) - 1; i++)
		mount_stage[n++] = path[i];
	mount_stage[n] = '\0';
}

static int set_attr(int dfd, const char *path, unsigned flags, uint64_t set, uint64_t clr)
{
	struct mount_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.attr_set = set;
	attr.attr_clr = clr;
	return mount_setattr(dfd, path, flags, &attr, sizeof(attr));
}

/* mkdir -p inside a fresh tmpfs, for a writable root that lives under it. */
static int make_mountpoint(const char *path, int file)
{
	static char buf[4096];
	size_t n = 0, i;
	int fd;

	while (path[n])
		n++;
	if (n >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(buf, path, n + 1);
	for (i = 1; i <= n; i++) {
		if (buf[i] != '/' && buf[i] != '\0')
			continue;
		if (buf[i] == '\0' && file)
			break;
		buf[i] = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -1;
		if (i < n)
			buf[i] = '/';
	}
	if (!file)
		return 0;
	fd = open(buf, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int landlock_grant(int ruleset, const char *path, uint64_t rights)
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

static int trees[SB_MAX_TREES];

static int apply_one_mount(const struct sb_plan *plan, const struct sb_mount_op *op)
{
	struct stat sb;
	int fd;

	switch (op->kind) {
	case SB_MNT_PRIVATE:
		set_stage("mount: make / private", NULL);
		return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
	case SB_MNT_CLONE:
		set_stage("mount: copy ", op->path);
		fd = open_tree(AT_FDCWD, op->path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC |
			       AT_RECURSIVE);
		if (fd < 0)
			return -1;
		trees[op->slot] = fd;
		/* setuid bits of files in writable roots are not honoured either */
		return set_attr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, MOUNT_ATTR_NOSUID, 0);
	case SB_MNT_ROOT_RO:
		set_stage("mount: make every mount read-only and nosuid", NULL);
		return set_attr(AT_FDCWD, "/", AT_RECURSIVE, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID,
				0);
	case SB_MNT_TMPFS:
		set_stage("mount: tmpfs on ", op->path);
		if ((op->flags & SB_MNTF_MKDIR) && mkdir(op->path, 0755) < 0 && errno != EEXIST)
			return -1;
		if (mount("tmpfs", op->path, "tmpfs", MS_NOSUID | MS_NODEV, op->data) < 0)
			return -1;
		if (op->flags & SB_MNTF_LANDLOCK) {
			set_stage("Landlock: allow writing to ", op->path);
			return landlock_grant(plan->landlock_fd, op->path, plan->landlock_rw);
		}
		return 0;
	case SB_MNT_PROC:
		set_stage("mount: a new /proc", NULL);
		return mount("proc", op->path, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	case SB_MNT_MQUEUE:
		set_stage("mount: a new mqueue on ", op->path);
		if ((op->flags & SB_MNTF_MKDIR) && mkdir(op->path, 0755) < 0 && errno != EEXIST)
			return -1;
		return mount("mqueue", op->path, "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
	case SB_MNT_DEVPTS:
		set_stage("mount: a new devpts on ", op->path);
		if ((op->flags & SB_MNTF_MKDIR) && mkdir(op->path, 0755) < 0 && errno != EEXIST)
			return -1;
		if (mount("devpts", op->path, "devpts", MS_NOSUID | MS_NOEXEC, op->data) < 0)
			return -1;
		if (op->flags & SB_MNTF_LANDLOCK) {
			set_stage("Landlock: allow terminals in ", op->path);
			return landlock_grant(plan->landlock_fd, op->path, plan->landlock_rw &
					      (LANDLOCK_ACCESS_FS_READ_FILE |
					       LANDLOCK_ACCESS_FS_WRITE_FILE |
					       LANDLOCK_ACCESS_FS_READ_DIR |
					       LANDLOCK_ACCESS_FS_IOCTL_DEV));
		}
		return 0;
	case SB_MNT_SYMLINK:
		set_stage("mount: link ", op->path);
		return symlink(op->data, op->path);
	case SB_MNT_READ_ONLY:
		set_stage("mount: read-only ", op->path);
		return set_attr(AT_FDCWD, op->path, 0, MOUNT_ATTR_RDONLY, 0);
	case SB_MNT_PLACE:
		set_stage("mount: put back the writable root ", op->path);
		if (stat(op->path, &sb) < 0 && make_mountpoint(op->path, op->flags & SB_MNTF_FILE) < 0)
			return -1;
		if (move_mount(trees[op->slot], "", AT_FDCWD, op->path,
			       MOVE_MOUNT_F_EMPTY_PATH) < 0)
			return -1;
		close(trees[op->slot]);
		trees[op->slot] = -1;
		return 0;
	case SB_MNT_RO_BIND:
		set_stage("mount: read-only ", op->path);
		if (mount(op->path, op->path, NULL, MS_BIND | MS_REC, NULL) < 0)
			return -1;
		return set_attr(AT_FDCWD, op->path, AT_RECURSIVE, MOUNT_ATTR_RDONLY |
				MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, 0);
	case SB_MNT_HIDE_DIR:
		set_stage("mount: hide ", op->path);
		return mount("tmpfs", op->path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV |
			     MS_NOEXEC, "size=4k,nr_inodes=8,mode=0755");
	case SB_MNT_HIDE_FILE:
		set_stage("mount: hide ", op->path);
		if (mount("/dev/null", op->path, NULL, MS_BIND, NULL) < 0)
			return -1;
		return set_attr(AT_FDCWD, op->path, 0, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
				MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, 0);
	default:
		errno = EINVAL;
		return -1;
	}
}

static int apply_mounts(const struct sb_plan *plan, const char **stage)
{
	size_t i;

	for (i = 0; i < SB_MAX_TREES; i++)
		trees[i] = -1;
	for (i = 0; i < plan->mounts_nr; i++) {
		const struct sb_mount_op *op = &plan->mounts[i];

		if (apply_one_mount(plan, op) < 0 || injected(5)) {
			if ((op->flags & SB_MNTF_OPTIONAL) && (errno == ENOENT || errno == ENOTDIR))
				continue;
			*stage = mount_stage;
			return -1;
		}
	}
	return 0;
}

static int native_apply_supervisor(const struct sb_plan *plan, const char **stage)
{
	struct ifreq ifr;
	int s;

	if (plan->uid_map[0]) {
		/*
		 * A process that changed identity is not dumpable, and then its
		 * /proc files belong to root: make ours ours again (the
		 * command's domain cannot ptrace us anyway: Landlock).
		 */
		*stage = "prctl(PR_SET_DUMPABLE)";
		if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
			return -1;
		*stage = "write /proc/self/uid_map";
		if (write_self("/proc/self/uid_map", plan->uid_map) < 0)
			return -1;
		*stage = "write /proc/self/setgroups";
		if (write_self("/proc/self/setgroups", "deny") < 0)
			return -1;
		*stage = "write /proc/self/gid_map";
		if (write_self("/proc/self/gid_map", plan->gid_map) < 0)
			return -1;
	}
	/* a session keyring of our own: the user's keys are not reachable */
	*stage = "keyctl(KEYCTL_JOIN_SESSION_KEYRING): a new session keyring";
	if (plan->new_keyring && syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) < 0)
		return -1;
	if (plan->mounts && apply_mounts(plan, stage) < 0)
		return -1;
	if (!plan->loopback_up)
		return 0;
	*stage = "bring up loopback in the new network namespace";
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	memcpy(ifr.ifr_name, "lo", 3);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		goto fail;
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		goto fail;
	close(s);
	return 0;
fail:
	{
		int e = errno;

		close(s);
		errno = e;
	}
	return -1;
}

/* Remove `drop` from every capability set, the bounding and ambient ones included. */
static int drop_capabilities(uint64_t drop)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2];
	int c;

	for (c = 0; c < 64; c++)
		if ((drop & (1ULL << c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 &&
		    errno != EINVAL)
			return -1;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -1;
	if (syscall(SYS_capget, &hdr, data) < 0)
		return -1;
	for (c = 0; c < 2; c++) {
		uint32_t keep = ~(uint32_t)(drop >> (32 * c));

		data[c].effective &= keep;
		data[c].permitted &= keep;
		data[c].inheritable &= keep;
	}
	return (int)syscall(SYS_capset, &hdr, data);
}

static int native_apply(const struct sb_plan *plan, const char **stage)
{
	size_t i;

	for (i = 0; i < plan->rlimits_nr; i++) {
		if (injected(1) ||
		    setrlimit(plan->rlimits[i].resource, &plan->rlimits[i].lim) < 0) {
			*stage = "setrlimit";
			return -1;
		}
	}
	if (plan->drop_caps && (injected(6) || drop_capabilities(plan->drop_caps) < 0)) {
		*stage = "drop capabilities (CAP_CHOWN, CAP_FOWNER, CAP_FSETID, CAP_SETFCAP, "
			 "CAP_SYS_ADMIN)";
		return -1;
	}
	if (plan->no_new_privs && (injected(2) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)) {
		*stage = "prctl(PR_SET_NO_NEW_PRIVS): no_new_privs";
		return -1;
	}
	if (plan->seccomp.len && (injected(3) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &plan->seccomp, 0, 0) < 0)) {
		*stage = "seccomp filter";
		return -1;
	}
	if (plan->landlock_fd >= 0 && (injected(4) ||
	    syscall(SYS_landlock_restrict_self, plan->landlock_fd, 0) < 0)) {
		*stage = "landlock_restrict_self";
		return -1;
	}
	return 0;
}

/* -------------------------------------------------------------- finish */

static void native_finish(struct executor *ex, struct sb_spawn *sp)
{
	struct native_state *st = ex->backend_data;
	struct sb_plan *plan = &sp->plan;

	if (st->memcg_dir && sp->started && memcg_oom_kills(st) > st->oom_before)
		strvec_pushf(&sp->notes, "forgex: the command ran out of memory: [sandbox] "
			     "memory_limit is %s", ex->memory_limit_text);
	if (sp->started)
		quarantine_absent(st, sp);
	if (plan->landlock_fd >= 0) {
		close(plan->landlock_fd);
		plan->landlock_fd = -1;
	}
	if (plan->tmpdir) {
		fsutil_remove_tree(plan->tmpdir);
		FREE_AND_NULL(plan->tmpdir);
	}
}

const struct sandbox_backend sandbox_backend_native = {
	.name = "native",
	.caps = SB_CAP_FS | SB_CAP_NET | SB_CAP_PIDNS | SB_CAP_LIMITS | SB_CAP_DIES_WITH_FORGEX |
		SB_CAP_MOUNTS,
	.init = native_init,
	.prepare = native_prepare,
	.attach = native_attach,
	.apply_supervisor = native_apply_supervisor,
	.apply = native_apply,
	.finish = native_finish,
	.release = native_release,
};
