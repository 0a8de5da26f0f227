/*
 * The "native" backend: kernel confinement without a container.
 *
 * Planned in the parent (prepare): the namespaces to clone the supervisor
 * into (user, mount, PID, IPC, network); the mount plan (built once per
 * executor: "/" read-only and nosuid, the writable roots put back, .git
 * and .forgex and files with several hard links read-only, private /tmp,
 * /dev/shm, /run and /dev, a fresh /proc, the credential and socket
 * places hidden - see native_mounts_plan()); a Landlock ruleset
 * (everything readable and executable, writable only the writable roots
 * and a few devices); the seccomp program (no setuid bits, no xattr writes, no
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
 *
 * This file keeps the lifecycle (init, prepare, attach, apply_supervisor,
 * apply, finish, release) and the rlimits, capabilities and private
 * TMPDIR; each confinement is built in its own file, as OpenSSH keeps
 * sandbox-seccomp-filter.c and bubblewrap bind-mount.c apart:
 * native_seccomp.c, native_landlock.c, native_cgroup.c, native_mounts.c
 * (their calls and the shared state: native.h).
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
#include "sandbox/native.h"
#include "sandbox/proxy.h"
#include "sandbox/sandbox.h"

#define FSIZE_LIMIT (8ULL << 30)	/* no single file above 8 GiB */

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

unsigned long native_name_seq;

/* ---------------------------------------------------------------- init */

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
	if (!caps->netns && !caps->seccomp)
		buf_addstr(&missing, ", network isolation (neither network namespaces nor "
			   "seccomp)");
	if (ex->network && !caps->netns)
		buf_addstr(&missing, ", a network namespace (network = true reaches only forgex's "
			   "egress proxy, bridged into one; without it commands get no network)");
	if (ex->max_processes > 0 && geteuid() == 0 && !caps->cgroup_pids)
		buf_addstr(&missing, ", a process limit for root (RLIMIT_NPROC does not bind "
			   "root and no pids cgroup is writable)");
	if (missing.len && caps->unshare_errno)
		buf_addf(&missing, " (unshare: %s)", strerror(caps->unshare_errno));
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
	 * Every command gets its own network namespace with loopback only;
	 * with network = true the egress proxy is bridged into it
	 * (sandbox/proxy.h). Where there is no network namespace, the seccomp
	 * socket rule and Landlock's TCP rights leave no network at all.
	 */
	st->netns = caps->netns;
	st->netns_proxy = ex->network && caps->netns;
	st->mntns = caps->mntns;
	st->ipcns = caps->ipcns;
	st->mount_fs = caps->mount_fs;
	if (!caps->netns)
		st->landlock_net = caps->landlock_abi >= 4;
	st->unix_guard = caps->seccomp && caps->unix_guard;
	if (caps->seccomp &&
	    (ret = native_seccomp_build(&st->filter, &st->filter_len, !caps->netns,
					st->unix_guard)) < 0) {
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
	if (!st->netns && !st->filter)
		ex->caps &= ~(unsigned)SB_CAP_NET;
	if (!st->pidns)
		ex->caps &= ~(unsigned)SB_CAP_PIDNS;
	if (ex->max_processes > 0 && geteuid() == 0 && !st->cgroup)
		ex->caps &= ~(unsigned)SB_CAP_LIMITS;
	ex->backend_data = st;
	return 0;
}

static void native_release(struct executor *ex)
{
	struct native_state *st = ex->backend_data;

	if (!st)
		return;
	if (st->cgroup_dir) {
		native_cgroup_remove(st->cgroup_dir);
		free(st->cgroup_dir);
	}
	if (st->memcg_dir) {
		native_cgroup_remove(st->memcg_dir);
		free(st->memcg_dir);
	}
	proxy_stop(st->proxy);
	free(st->filter);
	free(st->ops);
	strvec_clear(&st->paths);
	strvec_clear(&st->absent);
	free(st);
	ex->backend_data = NULL;
}

/* ------------------------------------------------------------- prepare */

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

/* Where a command may reach pathname sockets: its own roots and private places. */
static int plan_unix_guard(struct native_state *st, struct executor *ex, struct sb_plan *plan)
{
	size_t i;

	st->sock_roots_nr = 0;
	if (!ex->workspace_read_only) {
		st->sock_roots[st->sock_roots_nr++] = ex->workspace;
		for (i = 0; i < ex->writable_roots.nr && i < SB_MAX_TREES; i++)
			st->sock_roots[st->sock_roots_nr++] = ex->writable_roots.v[i];
	}
	if (st->mntns) {
		st->sock_roots[st->sock_roots_nr++] = "/tmp";
		st->sock_roots[st->sock_roots_nr++] = "/dev/shm";
		st->sock_roots[st->sock_roots_nr++] = "/run";
	} else if (plan->tmpdir) {
		st->sock_roots[st->sock_roots_nr++] = plan->tmpdir;
	}
	plan->sock_roots = st->sock_roots;
	plan->sock_roots_nr = st->sock_roots_nr;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, plan->notify_sock) < 0) {
		plan->notify_sock[0] = plan->notify_sock[1] = -1;
		return err_set_errno(FX_EOS, "socketpair for the UNIX socket guard");
	}
	return 0;
}

/*
 * network = true: the egress proxy (started at the first such command),
 * its socket for the bridge, and the proxy variables every common client
 * reads (curl, pip, npm, cargo, git take the lower- or upper-case ones).
 */
static int plan_proxy(struct native_state *st, struct executor *ex, struct sb_spawn *sp)
{
	static const char *const names[] = { "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
					     "https_proxy" };
	struct proxy_rules rules = { &ex->allowed_domains, &ex->denied_domains, ex->policy.mode,
				     ex->approver, ex->allowed_domains_name, ex->proxy_log_fd };
	char *kv;
	size_t i;
	int ret;

	if (!st->proxy && (ret = proxy_start(&st->proxy, &rules)) < 0)
		return err_prefix(ret, "egress proxy");
	proxy_begin_command(st->proxy, sp->user_argv, sp->user_argc);
	sp->plan.proxy_fd = open(proxy_socket_path(st->proxy), O_PATH | O_CLOEXEC);
	if (sp->plan.proxy_fd < 0)
		return err_set_errno(FX_EOS, "cannot open the proxy's socket");
	for (i = 0; i < ARRAY_SIZE(names); i++) {
		kv = xstrfmt("%s=http://127.0.0.1:%d", names[i], SB_PROXY_PORT);
		proc_env_set(&sp->env, kv);
		free(kv);
	}
	kv = xstrfmt("ALL_PROXY=socks5h://127.0.0.1:%d", SB_PROXY_PORT);
	proc_env_set(&sp->env, kv);
	free(kv);
	kv = xstrfmt("all_proxy=socks5h://127.0.0.1:%d", SB_PROXY_PORT);
	proc_env_set(&sp->env, kv);
	free(kv);
	proc_env_set(&sp->env, "NO_PROXY=localhost,127.0.0.1,::1");
	proc_env_set(&sp->env, "no_proxy=localhost,127.0.0.1,::1");
	return 0;
}

static int native_prepare(struct executor *ex, struct sb_spawn *sp)
{
	struct native_state *st = ex->backend_data;
	struct sb_plan *plan = &sp->plan;
	uint64_t cpu, fsize;
	long ncpu;
	size_t i;
	int ret, netns = st->netns;

	native_mounts_mark(st, ex);
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
	plan->landlock_rw = native_landlock_handled(st->landlock_abi);

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
			if ((ret = native_mounts_plan(st, ex)) < 0)
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
	    (ret = native_landlock_ruleset(&plan->landlock_fd, st, ex, plan->tmpdir)) < 0)
		return ret;
	if (st->filter) {
		plan->seccomp.len = st->filter_len;
		plan->seccomp.filter = st->filter;
	}
	if (st->unix_guard && (ret = plan_unix_guard(st, ex, plan)) < 0)
		return ret;
	if (sp->network && st->netns_proxy && (ret = plan_proxy(st, ex, sp)) < 0)
		return ret;

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

	if (st->cgroup && (ret = native_cgroup_pids(st, ex->max_processes)) < 0)
		return ret;
	if (st->memcg) {
		if ((ret = native_cgroup_memory(st, ex->memory_limit)) < 0)
			return ret;
		st->oom_before = native_cgroup_oom_kills(st);
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
		if ((ret = native_write_file(path, map)) < 0)
			return ret;
		snprintf(path, sizeof(path), "/proc/%ld/gid_map", (long)pid);
		if ((ret = native_write_file(path, map)) < 0)
			return ret;
	}
	if (st->cgroup_dir) {
		char *procs = xstrfmt("%s/cgroup.procs", st->cgroup_dir);

		snprintf(map, sizeof(map), "%ld", (long)pid);
		ret = native_write_file(procs, map);
		free(procs);
		if (ret < 0)
			return ret;
	}
	if (st->memcg_dir) {
		char *procs = xstrfmt("%s/cgroup.procs", st->memcg_dir);

		snprintf(map, sizeof(map), "%ld", (long)pid);
		ret = native_write_file(procs, map);
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

int native_injected(int step)
{
	if (sandbox_inject_child_failure != step)
		return 0;
	errno = EPERM;
	return 1;
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
	if (plan->mounts && native_mounts_apply(plan, stage) < 0)
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
		if (native_injected(1) ||
		    setrlimit(plan->rlimits[i].resource, &plan->rlimits[i].lim) < 0) {
			*stage = "setrlimit";
			return -1;
		}
	}
	if (plan->drop_caps && (native_injected(6) || drop_capabilities(plan->drop_caps) < 0)) {
		*stage = "drop capabilities (CAP_CHOWN, CAP_FOWNER, CAP_FSETID, CAP_SETFCAP, "
			 "CAP_SYS_ADMIN)";
		return -1;
	}
	if (plan->no_new_privs && (native_injected(2) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)) {
		*stage = "prctl(PR_SET_NO_NEW_PRIVS): no_new_privs";
		return -1;
	}
	if (plan->seccomp.len && plan->notify_sock[1] >= 0) {
		int listener;

		*stage = "seccomp filter with a listener (the UNIX socket guard)";
		if (native_injected(3))
			return -1;
		listener = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
					SECCOMP_FILTER_FLAG_NEW_LISTENER, &plan->seccomp);
		if (listener < 0)
			return -1;
		if (sb_unix_guard_give(plan->notify_sock[1], listener) < 0)
			return -1;
		close(listener);
	} else if (plan->seccomp.len && (native_injected(3) ||
		   prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &plan->seccomp, 0, 0) < 0)) {
		*stage = "seccomp filter";
		return -1;
	}
	if (plan->landlock_fd >= 0 && (native_injected(4) ||
	    syscall(SYS_landlock_restrict_self, plan->landlock_fd, 0) < 0)) {
		*stage = "landlock_restrict_self";
		return -1;
	}
	return 0;
}

/* -------------------------------------------------------------- finish */

/*
 * The proxy's decisions during the command: each one an event for the
 * run (executor's on_event), and a line on the command's stderr for each
 * host refused, so that the model knows why its download failed.
 */
static void report_connections(struct executor *ex, struct native_state *st, struct sb_spawn *sp)
{
	json_t *evs = json_array(), *ev;
	struct strvec said = STRVEC_INIT;
	size_t i;

	proxy_take_events(st->proxy, evs);
	json_array_foreach(evs, i, ev) {
		const char *host = json_string_value(json_object_get(ev, "domain"));
		const char *why = json_string_value(json_object_get(ev, "reason"));
		int port = (int)json_integer_value(json_object_get(ev, "port"));
		struct buf key = BUF_INIT;

		if (strcmp(json_string_value(json_object_get(ev, "decision")), "allowed")) {
			buf_addf(&key, "%s:%d", host, port);
			if (strvec_find(&said, key.buf) < 0) {
				strvec_push(&said, key.buf);
				strvec_pushf(&sp->notes, "forgex: the network proxy refused %s: %s",
					     key.buf, why);
			}
			buf_release(&key);
		}
		if (ex->on_event)
			ex->on_event(ex->event_data, "network", json_incref(ev));
	}
	strvec_clear(&said);
	json_decref(evs);
}

static void native_finish(struct executor *ex, struct sb_spawn *sp)
{
	struct native_state *st = ex->backend_data;
	struct sb_plan *plan = &sp->plan;
	size_t i;

	if (st->memcg_dir && sp->started && native_cgroup_oom_kills(st) > st->oom_before)
		strvec_pushf(&sp->notes, "forgex: the command ran out of memory: [sandbox] "
			     "memory_limit is %s", ex->memory_limit_text);
	if (sp->started)
		native_mounts_quarantine(st, sp);
	for (i = 0; i < 2; i++)
		if (plan->notify_sock[i] >= 0) {
			close(plan->notify_sock[i]);
			plan->notify_sock[i] = -1;
		}
	if (plan->proxy_fd >= 0) {
		close(plan->proxy_fd);
		plan->proxy_fd = -1;
		report_connections(ex, st, sp);
	}
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
