/*
 * The "native" backend: kernel confinement without a container.
 *
 * Planned in the parent (prepare): a Landlock ruleset (everything readable
 * and executable, writable only the workspace, a private TMPDIR made for
 * this command, writable_roots and a few harmless devices), the
 * namespaces to clone the supervisor into (user, PID, network), a seccomp
 * program refusing AF_INET/AF_INET6 sockets where network namespaces are
 * impossible, rlimits, and for root a pids cgroup (RLIMIT_NPROC does not
 * bind root). Applied in the command's process just before execve()
 * (apply): rlimits, no_new_privs, seccomp, landlock_restrict_self. Each
 * failure there is fatal for the command.
 *
 * When the kernel cannot enforce what the configuration asks for, init()
 * refuses and names the missing feature, unless allow_unconfined = true
 * (then it warns).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <net/if.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
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

struct native_state {
	int landlock_abi;		/* 0: not used (allow_unconfined) */
	int userns, pidns, netns;
	int landlock_net;		/* Landlock denies TCP too (no network namespace) */
	struct sock_filter *filter;	/* seccomp program, or NULL */
	unsigned short filter_len;
	int cgroup;			/* limit root's processes with a pids cgroup */
	char cgroup_parent[256];
	char *cgroup_dir;		/* made at the first command, reused (one at a time) */
	unsigned long seq;
};

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

static int build_seccomp(struct native_state *st)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	off_t size;
	int rc, fd = -1, ret = 0;

	if (!ctx)
		return err_set(FX_EOS, "seccomp_init failed");
	rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 1,
			      SCMP_A0(SCMP_CMP_EQ, AF_INET));
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EACCES), SCMP_SYS(socket), 1,
				      SCMP_A0(SCMP_CMP_EQ, AF_INET6));
	/* io_uring can open sockets without socket(2) */
	if (!rc)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(io_uring_setup), 0);
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
	st->filter = xmalloc((size_t)size);
	if (pread(fd, st->filter, (size_t)size, 0) != size) {
		ret = err_set_errno(FX_EOS, "cannot read the seccomp filter");
		FREE_AND_NULL(st->filter);
		goto out;
	}
	st->filter_len = (unsigned short)(size / (off_t)sizeof(struct sock_filter));
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
	st->landlock_abi = caps->landlock_abi;
	st->userns = caps->userns;
	st->pidns = caps->pidns;
	st->netns = !ex->network && caps->netns;
	if (!ex->network && !caps->netns) {
		st->landlock_net = caps->landlock_abi >= 4;
		if (caps->seccomp && (ret = build_seccomp(st)) < 0) {
			free(st);
			return ret;
		}
	}
	if (ex->max_processes > 0 && geteuid() == 0 && caps->cgroup_pids) {
		st->cgroup = 1;
		snprintf(st->cgroup_parent, sizeof(st->cgroup_parent), "%s",
			 caps->cgroup_pids_dir);
	}
	if (!st->landlock_abi)
		ex->caps &= ~(unsigned)SB_CAP_FS;
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
	free(st->filter);
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
			 const char *tmpdir)
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
	    (ret = add_rule(fd, ex->workspace, all, 1)) < 0 ||
	    (ret = add_rule(fd, tmpdir, all, 1)) < 0)
		goto fail;
	for (i = 0; i < ex->writable_roots.nr; i++)
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

static unsigned long cgroup_seq;

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
	/* numbered across executors: two of them may run commands at once (the map's ctags) */
	st->seq = __atomic_add_fetch(&cgroup_seq, 1, __ATOMIC_RELAXED);
	dir = xstrfmt("%s/forgex-%ld-%lu", st->cgroup_parent, (long)getpid(), st->seq);
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

static int make_tmpdir(struct sb_plan *plan)
{
	const char *base = getenv("TMPDIR");
	char *tmpl;

	if (!base || base[0] != '/' || !fsutil_is_dir(base))
		base = "/tmp";
	tmpl = xstrfmt("%s/forgex-tmp-XXXXXX", base);
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

static int native_prepare(struct executor *ex, struct sb_spawn *sp)
{
	struct native_state *st = ex->backend_data;
	struct sb_plan *plan = &sp->plan;
	uint64_t cpu;
	long ncpu;
	int ret;

	plan->clone_flags = (st->userns ? CLONE_NEWUSER : 0) |
			    (st->pidns ? CLONE_NEWPID : 0) |
			    (st->netns ? CLONE_NEWNET : 0);
	plan->pid_namespace = st->pidns;
	plan->loopback_up = st->netns;
	if (st->userns && geteuid() != 0) {
		snprintf(plan->uid_map, sizeof(plan->uid_map), "%ld %ld 1\n", (long)geteuid(),
			 (long)geteuid());
		snprintf(plan->gid_map, sizeof(plan->gid_map), "%ld %ld 1\n", (long)getegid(),
			 (long)getegid());
	}
	plan->no_new_privs = 1;

	if ((ret = make_tmpdir(plan)) < 0)
		return ret;
	{
		char *kv = xstrfmt("TMPDIR=%s", plan->tmpdir);

		sb_env_set(&sp->env, kv);
		free(kv);
		if (sb_env_get(&sp->env, "TMP")) {
			kv = xstrfmt("TMP=%s", plan->tmpdir);
			sb_env_set(&sp->env, kv);
			free(kv);
		}
		if (sb_env_get(&sp->env, "TEMP")) {
			kv = xstrfmt("TEMP=%s", plan->tmpdir);
			sb_env_set(&sp->env, kv);
			free(kv);
		}
	}
	if (st->landlock_abi &&
	    (ret = build_ruleset(&plan->landlock_fd, st, ex, plan->tmpdir)) < 0)
		return ret;
	if (st->filter) {
		plan->seccomp.len = st->filter_len;
		plan->seccomp.filter = st->filter;
	}

	if (ex->max_processes > 0 && geteuid() != 0)
		add_rlimit(plan, RLIMIT_NPROC, (uint64_t)ex->max_processes,
			   (uint64_t)ex->max_processes);
	add_rlimit(plan, RLIMIT_FSIZE, FSIZE_LIMIT, FSIZE_LIMIT);
	/*
	 * CPU seconds: a backstop behind the wall-clock timeout (should forgex
	 * be stopped, say). One process cannot use more than the timeout
	 * times the CPUs before the timeout hits, so builds are never cut.
	 */
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu = ((uint64_t)sp->timeout_ms / 1000 + 1) * (uint64_t)(ncpu > 0 ? ncpu : 1) + 5;
	add_rlimit(plan, RLIMIT_CPU, cpu, cpu + 5);
	if (ex->memory_limit)
		add_rlimit(plan, RLIMIT_AS, ex->memory_limit, ex->memory_limit);
	add_rlimit(plan, RLIMIT_CORE, 0, 0);

	if (st->cgroup && (ret = make_cgroup(st, ex->max_processes)) < 0)
		return ret;
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

int sandbox_inject_child_failure;

static int injected(int step)
{
	if (sandbox_inject_child_failure != step)
		return 0;
	errno = EPERM;
	return 1;
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
	struct sb_plan *plan = &sp->plan;

	(void)ex;
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
	.caps = SB_CAP_FS | SB_CAP_NET | SB_CAP_PIDNS | SB_CAP_LIMITS | SB_CAP_DIES_WITH_FORGEX,
	.init = native_init,
	.prepare = native_prepare,
	.attach = native_attach,
	.apply_supervisor = native_apply_supervisor,
	.apply = native_apply,
	.finish = native_finish,
	.release = native_release,
};
