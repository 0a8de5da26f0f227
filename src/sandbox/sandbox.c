/*
 * What the backends share: the backend table, the kernel probe, the
 * docker engine's answer, and the async-signal-safe child sweep.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/path.h"
#include "base/proc.h"
#include "sandbox/sandbox.h"

const struct sandbox_backend *sandbox_backend_find(const char *name)
{
	static const struct sandbox_backend *const all[] = {
		&sandbox_backend_native, &sandbox_backend_docker, &sandbox_backend_none,
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(all); i++)
		if (!strcmp(all[i]->name, name))
			return all[i];
	return NULL;
}

/* ------------------------------------------------ children, AS-safe */

struct fx_dirent64 {
	uint64_t d_ino;
	int64_t d_off;
	unsigned short d_reclen;
	unsigned char d_type;
	char d_name[];
};

/* Append the pids listed in the open "children" file `fd` to `pids`. */
static size_t read_pid_list(int fd, pid_t *pids, size_t n, size_t max)
{
	char chunk[512];
	long cur = -1;
	ssize_t got, i;

	while ((got = read(fd, chunk, sizeof(chunk))) != 0) {
		if (got < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (i = 0; i < got; i++) {
			if (chunk[i] >= '0' && chunk[i] <= '9') {
				cur = (cur < 0 ? 0 : cur * 10) + (chunk[i] - '0');
			} else if (cur >= 0) {
				if (n < max)
					pids[n++] = (pid_t)cur;
				cur = -1;
			}
		}
	}
	if (cur >= 0 && n < max)
		pids[n++] = (pid_t)cur;
	return n;
}

size_t sb_list_children(pid_t *pids, size_t max)
{
	char dents[2048];
	size_t n = 0;
	int dfd;
	long got;

	dfd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return 0;
	while ((got = syscall(SYS_getdents64, dfd, dents, sizeof(dents))) > 0) {
		long off = 0;

		while (off < got) {
			struct fx_dirent64 d;
			const char *name = dents + off + offsetof(struct fx_dirent64, d_name);
			char path[48];
			size_t k = 0;
			int cfd;

			memcpy(&d, dents + off, sizeof(d));
			off += d.d_reclen;
			if (name[0] < '0' || name[0] > '9')
				continue;
			while (name[k] && k < 24) {
				path[k] = name[k];
				k++;
			}
			memcpy(path + k, "/children", sizeof("/children"));
			cfd = openat(dfd, path, O_RDONLY | O_CLOEXEC);
			if (cfd < 0)
				continue;
			n = read_pid_list(cfd, pids, n, max);
			close(cfd);
		}
	}
	close(dfd);
	return n;
}

int sb_kill_children(pid_t except, const pid_t *keep, size_t keep_nr)
{
	pid_t kids[256];
	int killed = 0, round;

	for (round = 0; round < 100000; round++) {
		size_t n = sb_list_children(kids, ARRAY_SIZE(kids)), i, j, left = 0;

		for (i = 0; i < n; i++) {
			int skip = kids[i] == except;

			for (j = 0; j < keep_nr && !skip; j++)
				skip = kids[i] == keep[j];
			if (skip)
				continue;
			kill(kids[i], SIGKILL);
			kids[left++] = kids[i];
			killed++;
		}
		if (!left)
			break;
		for (i = 0; i < left; i++)
			while (waitpid(kids[i], NULL, __WALL) < 0 && errno == EINTR)
				;
	}
	return killed;
}

/* -------------------------------------------------------------- probe */

static unsigned probe_mask;

void sandbox_probe_mask(unsigned mask)
{
	probe_mask = mask;
}

/*
 * What a probe's failure may owe to the moment rather than to the kernel:
 * no process slot or memory for the child, or the user's namespace count
 * full while other sandboxes (a batch, a test suite) are running. Such a
 * probe is tried again before the feature counts as missing, since a
 * missing namespace makes the native sandbox refuse to start at all.
 */
#define PROBE_TRIES 6	/* 310 ms at most: a user namespace is freed some 60 ms after its end */

/* Set once a probe failed every try: what it met is lasting, the others try once. */
static int probe_gave_up;

/* The user namespace count's limit here; 0 when it is 0 (set so: no user namespaces, ever). */
static long userns_limit(void)
{
	char b[32];
	ssize_t n;
	int fd = open("/proc/sys/user/max_user_namespaces", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, b, sizeof(b) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	b[n] = '\0';
	return strtol(b, NULL, 10);
}

static int transient_errno(int e)
{
	if (e == ENOSPC || e == EUSERS)
		return userns_limit() != 0;	/* the count full, not the feature off */
	return e == EAGAIN || e == ENOMEM;
}

static void probe_backoff(int try)
{
	struct timespec ts = { 0, 10000000L << try };	/* 10, 20, 40, 80, 160 ms */

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/*
 * Whether a child can unshare(flags); the child only calls unshare and
 * _exit (with unshare's errno when it fails, stored in *why).
 */
static int can_unshare(int flags, int *why)
{
	int st, try, e = 0;

	for (try = 0; try < (probe_gave_up ? 1 : PROBE_TRIES); try++) {
		pid_t pid;

		if (try)
			probe_backoff(try - 1);
		pid = fork();
		if (pid < 0) {
			e = errno;
			if (transient_errno(e))
				continue;
			break;
		}
		if (!pid)
			_exit(unshare(flags) < 0 ? (errno > 0 && errno < 126 ? errno : 125) : 0);
		while (waitpid(pid, &st, 0) < 0)
			if (errno != EINTR)
				return 0;
		if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
			return 1;
		e = WIFEXITED(st) ? WEXITSTATUS(st) : EINTR;
		if (!transient_errno(e))
			break;
	}
	if (try == PROBE_TRIES)
		probe_gave_up = 1;
	if (why && !*why)
		*why = e;
	return 0;
}

/* Whether `list` (words separated by `sep` or white space) holds `word`. */
static int has_word(const char *list, const char *word, char sep)
{
	size_t n = strlen(word);
	const char *p = list;

	while ((p = strstr(p, word))) {
		int start = p == list || p[-1] == sep || p[-1] == ' ' || p[-1] == '\n';
		char end = p[n];

		if (start && (end == '\0' || end == sep || end == ' ' || end == '\n'))
			return 1;
		p += n;
	}
	return 0;
}

/*
 * Which file systems a sandbox can mount in its own namespaces (bits of
 * enum sb_mount_fs): a child enters new user, mount, PID and IPC
 * namespaces, and its child (in the PID namespace) tries each. A fresh
 * /proc is refused where the host's /proc has parts covered (containers
 * mask /proc/kcore and friends).
 */
#define MOUNTS_AGAIN 64	/* the child's status: a transient failure, try again */

static unsigned probe_mounts_once(void)
{
	int st;
	pid_t pid = fork();

	if (pid < 0)
		return transient_errno(errno) ? MOUNTS_AGAIN : 0;
	if (!pid) {
		char map[64];
		uid_t uid = geteuid();
		gid_t gid = getegid();
		pid_t inner;
		int fd;

		if (unshare(CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC) < 0)
			_exit(transient_errno(errno) ? MOUNTS_AGAIN : 0);
		/* map ourselves, as the supervisor does (devpts wants mapped ids) */
		snprintf(map, sizeof(map), "%ld %ld 1\n", (long)uid, (long)uid);
		if ((fd = open("/proc/self/uid_map", O_WRONLY)) >= 0) {
			if (write(fd, map, strlen(map)) < 0)
				_exit(0);
			close(fd);
		}
		if ((fd = open("/proc/self/setgroups", O_WRONLY)) >= 0) {
			if (write(fd, "deny", 4) < 0)
				_exit(0);
			close(fd);
		}
		snprintf(map, sizeof(map), "%ld %ld 1\n", (long)gid, (long)gid);
		if ((fd = open("/proc/self/gid_map", O_WRONLY)) >= 0) {
			if (write(fd, map, strlen(map)) < 0)
				_exit(0);
			close(fd);
		}
		inner = fork();
		if (inner < 0)
			_exit(transient_errno(errno) ? MOUNTS_AGAIN : 0);
		if (!inner) {
			int bits = 0;

			if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
				_exit(0);
			if (!mount("tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=64k"))
				bits |= SB_MOUNT_TMPFS;
			if (!mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
				bits |= SB_MOUNT_PROC;
			if ((bits & SB_MOUNT_TMPFS) && !mkdir("/tmp/pts", 0755) &&
			    !mount("devpts", "/tmp/pts", "devpts", MS_NOSUID | MS_NOEXEC,
				   "newinstance,ptmxmode=0666,mode=0620"))
				bits |= SB_MOUNT_DEVPTS;
			if ((bits & SB_MOUNT_TMPFS) && !mkdir("/tmp/mq", 0755) &&
			    !mount("mqueue", "/tmp/mq", "mqueue", MS_NOSUID | MS_NODEV | MS_NOEXEC,
				   NULL))
				bits |= SB_MOUNT_MQUEUE;
			_exit(bits);
		}
		while (waitpid(inner, &st, 0) < 0)
			if (errno != EINTR)
				_exit(0);
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 0);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			return 0;
	return WIFEXITED(st) ? (unsigned)WEXITSTATUS(st) : 0;
}

static unsigned probe_mounts(void)
{
	unsigned bits = MOUNTS_AGAIN;
	int try;

	for (try = 0; try < (probe_gave_up ? 1 : PROBE_TRIES) && bits == MOUNTS_AGAIN; try++) {
		if (try)
			probe_backoff(try - 1);
		bits = probe_mounts_once();
	}
	return bits == MOUNTS_AGAIN ? 0 : bits;
}

/*
 * The `controller` cgroup folder forgex is in, from /proc/self/mountinfo and
 * /proc/self/cgroup: cgroup v1 with that controller, or v2 where our own
 * cgroup delegates it to its children (*v2 set).
 */
static int find_cgroup(const char *controller, char *out, size_t outlen, int *v2)
{
	struct buf mi = BUF_INIT, cg = BUF_INIT, dir = BUF_INIT, ctl = BUF_INIT;
	char v1mnt[256] = "", v2mnt[256] = "", v1path[256] = "", v2path[256] = "";
	const char *line;
	int found = 0;

	if (fsutil_read_file(&mi, "/proc/self/mountinfo", 1 << 20) < 0 ||
	    fsutil_read_file(&cg, "/proc/self/cgroup", 1 << 16) < 0)
		goto out;
	for (line = mi.buf; *line; line = strchrnul(line, '\n'), line += !!*line) {
		char mnt[256], fstype[64], opts[256];
		const char *sep = strstr(line, " - ");

		if (!sep || sscanf(line, "%*s %*s %*s %*s %255s", mnt) != 1 ||
		    sscanf(sep + 3, "%63s %*s %255s", fstype, opts) != 2)
			continue;
		if (!strcmp(fstype, "cgroup2") && !*v2mnt)
			snprintf(v2mnt, sizeof(v2mnt), "%s", mnt);
		else if (!strcmp(fstype, "cgroup") && !*v1mnt) {
			char *o, *save = NULL;

			for (o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save))
				if (!strcmp(o, controller))
					snprintf(v1mnt, sizeof(v1mnt), "%s", mnt);
		}
	}
	for (line = cg.buf; *line; line = strchrnul(line, '\n'), line += !!*line) {
		const char *c1 = strchr(line, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		const char *end = strchrnul(line, '\n');
		size_t n;

		if (!c2)
			continue;
		n = (size_t)(end - c2 - 1);
		if (n >= sizeof(v1path))
			continue;
		if (c2 == c1 + 1 && line[0] == '0') {
			memcpy(v2path, c2 + 1, n);
			v2path[n] = '\0';
		} else {
			char ctrls[128];
			size_t cn = (size_t)(c2 - c1 - 1);

			if (cn >= sizeof(ctrls))
				continue;
			memcpy(ctrls, c1 + 1, cn);
			ctrls[cn] = '\0';
			if (has_word(ctrls, controller, ',')) {
				memcpy(v1path, c2 + 1, n);
				v1path[n] = '\0';
			}
		}
	}
	*v2 = 0;
	if (*v1mnt && *v1path) {
		path_join(&dir, v1mnt, v1path);
	} else if (*v2mnt && *v2path) {
		path_join(&dir, v2mnt, v2path);
		path_join(&ctl, dir.buf, "cgroup.subtree_control");
		buf_reset(&mi);
		if (fsutil_read_file(&mi, ctl.buf, 4096) < 0 || !has_word(mi.buf, controller, ' '))
			buf_reset(&dir);
		*v2 = 1;
	}
	if (dir.len && dir.len < outlen) {
		/*
		 * Can we really make one? (read-only mounts, missing delegation.)
		 * One of this name already there was left by a killed process that
		 * had this pid: removed, and made again.
		 */
		char *probe = xstrfmt("%s/forgex-probe-%ld", dir.buf, (long)getpid());
		int made = !mkdir(probe, 0755);

		if (!made && errno == EEXIST && !rmdir(probe))
			made = !mkdir(probe, 0755);
		if (made) {
			rmdir(probe);
			memcpy(out, dir.buf, dir.len + 1);
			found = 1;
		}
		free(probe);
	}
out:
	buf_release(&mi);
	buf_release(&cg);
	buf_release(&dir);
	buf_release(&ctl);
	return found;
}

static void set_guarantee(struct sandbox_guarantee *g, const char *what, int enforced,
			  const char *fmt, ...) FX_PRINTF(4, 5);
static void set_guarantee(struct sandbox_guarantee *g, const char *what, int enforced,
			  const char *fmt, ...)
{
	va_list ap;

	g->what = what;
	g->enforced = enforced;
	va_start(ap, fmt);
	vsnprintf(g->how, sizeof(g->how), fmt, ap);
	va_end(ap);
}

static void fill_guarantees(struct sandbox_caps *c)
{
	int root = c->euid == 0, abi = c->landlock_abi, n = 0;
	struct sandbox_guarantee *g = c->native;

	if (abi > 0)
		set_guarantee(&g[n++], "filesystem", 1, "Landlock ABI %d: writes only to "
			      "the workspace, the private /tmp and writable_roots", abi);
	else
		set_guarantee(&g[n++], "filesystem", 0, "Landlock is not available "
			      "(kernel older than 5.13, or not in the lsm= list)");
	set_guarantee(&g[n++], "read-only system", c->mntns, "%s", c->mntns ?
		      "own mount namespace: every mount outside the writable roots read-only "
		      "and nosuid (chmod, chown, utime, xattrs there fail: EROFS)" :
		      "no mount namespace (needs user namespaces and Linux 5.12+)");
	set_guarantee(&g[n++], ".git and .forgex", c->mntns, "%s", c->mntns ?
		      "read-only in every writable root, and every .git below it at any depth "
		      "(nested repositories, submodules); a .git a command creates or changes "
		      "anywhere below a root: moved away afterwards" :
		      "writable: no mount namespace");
	set_guarantee(&g[n++], "hidden places", c->mntns, "%s", c->mntns ?
		      "~/.ssh, ~/.gnupg, ~/.aws, ~/.kube, ~/.docker, ~/.netrc, credential "
		      "caches, $XDG_RUNTIME_DIR, /run and [sandbox] hidden look empty; "
		      "/tmp, /dev/shm private" :
		      "readable: no mount namespace");
	if (c->unix_guard)
		set_guarantee(&g[n++], "UNIX sockets", 1, "seccomp user notification: the "
			      "supervisor does each connect(), refusing pathname sockets outside the "
			      "writable roots, /tmp, /dev/shm, /run; no unix datagram sockets");
	else
		set_guarantee(&g[n++], "UNIX sockets", 0, "pathname sockets outside /run, /tmp "
			      "and the hidden places reachable (needs seccomp user notification "
			      "and pidfd_getfd, Linux 5.6+)");
	if (c->netns)
		set_guarantee(&g[n++], "network", 1, "own network namespace (loopback only); "
			      "network = true: only through forgex's egress proxy, allowed_domains, "
			      "no private or metadata addresses");
	else if (c->seccomp)
		set_guarantee(&g[n++], "network", 1, "no network namespace; a seccomp "
			      "filter refuses AF_INET/AF_INET6 sockets%s", abi >= 4 ?
			      " and Landlock denies TCP bind/connect" : "");
	else
		set_guarantee(&g[n++], "network", 0, "neither network namespaces nor "
			      "seccomp are available");
	set_guarantee(&g[n++], "metadata", c->seccomp, "%s", c->seccomp ?
		      "seccomp: no setuid/setgid bits, no xattr writes (file capabilities); "
		      "CAP_CHOWN, CAP_FOWNER, CAP_FSETID, CAP_SETFCAP, CAP_SYS_ADMIN dropped" :
		      "no seccomp: setuid bits and file capabilities can be set in writable roots");
	set_guarantee(&g[n++], "IPC and keyring", c->ipcns && c->seccomp, "%s%s",
		      c->ipcns ? "own IPC namespace (SysV IPC, POSIX queues), private /dev/shm" :
		      "the host's SysV IPC", c->seccomp ? "; keyring calls refused, new "
		      "session keyring" : "; keyring reachable (no seccomp)");
	if (c->pidns && c->mntns && (c->mount_fs & SB_MOUNT_PROC))
		set_guarantee(&g[n++], "kill-all", 1, "own PID namespace and /proc: nothing "
			      "outlives the command, host processes are not seen");
	else if (c->pidns)
		set_guarantee(&g[n++], "kill-all", 1, "own PID namespace: nothing outlives the "
			      "command; /proc is the host's (a fresh one cannot be mounted here: "
			      "parts of it are covered), host processes are seen, not signalled");
	else
		set_guarantee(&g[n++], "kill-all", 1, "no PID namespace; a subreaper "
			      "supervisor kills every adopted descendant");
	if (!root)
		set_guarantee(&g[n++], "process limit", 1, "RLIMIT_NPROC%s",
			      c->userns ? " (counted inside the sandbox's user namespace)" :
			      " (counts all of the user's processes)");
	else if (c->cgroup_pids)
		set_guarantee(&g[n++], "process limit", 1, "pids cgroup under %s "
			      "(RLIMIT_NPROC does not bind root)", c->cgroup_pids_dir);
	else
		set_guarantee(&g[n++], "process limit", 0, "running as root, where "
			      "RLIMIT_NPROC does not bind, and no writable pids cgroup");
	if (c->cgroup_memory)
		set_guarantee(&g[n++], "memory", 1, "memory_limit through a cgroup %s memory "
			      "controller under %s", c->cgroup_memory_v2 ? "v2" : "v1",
			      c->cgroup_memory_dir);
	else
		set_guarantee(&g[n++], "memory", 1, "memory_limit as RLIMIT_AS (address "
			      "space, per process: no writable memory cgroup)");
	set_guarantee(&g[n++], "disk writes", 1, "max_write_bytes: forgex watches the "
		      "writable file systems every 20 ms and stops the command; RLIMIT_FSIZE; "
		      "/tmp and /dev/shm sized by tmp_size");
	set_guarantee(&g[n++], "hard links", c->mntns, "%s", c->mntns ? "files with "
		      "several links in writable roots read-only (scanned once per executor)" :
		      "writable: no mount namespace");
	set_guarantee(&g[n++], "no_new_privs", c->no_new_privs, "%s", c->no_new_privs ?
		      "setuid programs cannot gain privileges" : "PR_SET_NO_NEW_PRIVS missing");
	set_guarantee(&g[n++], "scoping", abi >= 6, "%s", abi >= 6 ?
		      "Landlock ABI 6: no signals or abstract UNIX sockets outside the sandbox" :
		      "needs Landlock ABI 6 (Linux 6.12)");
	set_guarantee(&g[n++], "parent death", 1, "%s", c->pidns ?
		      "dies with forgex: PR_SET_PDEATHSIG on the namespace's init" :
		      "dies with forgex: PR_SET_PDEATHSIG; the supervisor kills what is left");
	if (n != SB_GUARANTEES)
		BUG("%d guarantees, SB_GUARANTEES is %d", n, (int)SB_GUARANTEES);
}

static struct sandbox_caps kernel_caps;
static int kernel_probed;

static void probe_kernel(struct sandbox_caps *c)
{
	unsigned int act = SECCOMP_RET_ERRNO;
	long abi;
	int nsuser;

	memset(c, 0, sizeof(*c));
	probe_gave_up = 0;
	c->euid = geteuid();
	abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	c->landlock_abi = abi > 0 ? (int)abi : 0;
	c->seccomp = syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &act) == 0;
	c->no_new_privs = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) >= 0;
	c->unix_guard = c->seccomp && sb_unix_guard_supported();
	/* one child for the usual answer (all of them), one per namespace otherwise */
	if (can_unshare(CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWNS |
			CLONE_NEWIPC, NULL)) {
		c->userns = c->pidns = c->netns = c->mntns = c->ipcns = 1;
	} else {
		c->userns = can_unshare(CLONE_NEWUSER, &c->unshare_errno);
		nsuser = c->euid == 0 ? 0 : CLONE_NEWUSER;
		c->pidns = can_unshare(nsuser | CLONE_NEWPID, &c->unshare_errno);
		c->netns = can_unshare(nsuser | CLONE_NEWNET, &c->unshare_errno);
		c->mntns = c->userns && can_unshare(CLONE_NEWUSER | CLONE_NEWNS, &c->unshare_errno);
		c->ipcns = can_unshare(nsuser | CLONE_NEWIPC, &c->unshare_errno);
	}
	/* the new mount API: mount_setattr() (5.12) answers EINVAL to bad flags, not ENOSYS */
	if (c->mntns && syscall(SYS_mount_setattr, -1, "", ~0U, NULL, 0) < 0 && errno == ENOSYS)
		c->mntns = 0;
	if (c->mntns) {
		c->mount_fs = probe_mounts();
		if (!(c->mount_fs & SB_MOUNT_TMPFS))
			c->mntns = 0;
	}
	{
		int v2;

		if (c->euid == 0)
			c->cgroup_pids = find_cgroup("pids", c->cgroup_pids_dir,
						     sizeof(c->cgroup_pids_dir), &v2);
		c->cgroup_memory = find_cgroup("memory", c->cgroup_memory_dir,
					       sizeof(c->cgroup_memory_dir), &v2);
		c->cgroup_memory_v2 = c->cgroup_memory && v2;
	}
}

const struct sandbox_caps *sandbox_kernel_caps(void)
{
	static struct sandbox_caps masked;

	/* a process that changed identity since (tests, su) gets a fresh answer */
	if (!kernel_probed || kernel_caps.euid != geteuid()) {
		probe_kernel(&kernel_caps);
		kernel_probed = 1;
	}
	masked = kernel_caps;
	if (probe_mask & SB_FEAT_USERNS)
		masked.userns = 0;
	if (probe_mask & SB_FEAT_PIDNS || (!masked.userns && masked.euid))
		masked.pidns = 0;
	if (probe_mask & SB_FEAT_NETNS || (!masked.userns && masked.euid))
		masked.netns = 0;
	if (probe_mask & SB_FEAT_LANDLOCK)
		masked.landlock_abi = 0;
	if (probe_mask & SB_FEAT_SECCOMP)
		masked.seccomp = 0;
	if (probe_mask & (SB_FEAT_SECCOMP | SB_FEAT_UNIX_GUARD))
		masked.unix_guard = 0;
	if (probe_mask & SB_FEAT_CGROUP)
		masked.cgroup_pids = 0;
	if (probe_mask & SB_FEAT_MNTNS || !masked.userns)
		masked.mntns = 0;
	if (probe_mask & SB_FEAT_FRESH_PROC)
		masked.mount_fs &= ~(unsigned)SB_MOUNT_PROC;
	if (probe_mask & SB_FEAT_IPCNS || (!masked.userns && masked.euid))
		masked.ipcns = 0;
	if (probe_mask & SB_FEAT_MEMCG)
		masked.cgroup_memory = 0;
	fill_guarantees(&masked);
	return &masked;
}

int sandbox_docker_engine(struct buf *version)
{
	struct buf v = BUF_INIT;
	struct proc p;
	int ret;

	proc_init(&p);
	strvec_push(&p.argv, "docker");
	strvec_push(&p.argv, "version");
	strvec_push(&p.argv, "--format");
	strvec_push(&p.argv, "{{.Server.Version}}");
	p.out = PROC_IO_CAPTURE;
	p.out_buf = &v;
	p.capture_max = 4096;
	p.timeout_ms = 5000;
	ret = proc_run(&p);
	proc_release(&p);
	if (ret == 0 && version) {
		buf_trim(&v);
		buf_addbuf(version, &v);
	}
	buf_release(&v);
	return ret == 0;
}

void sandbox_probe(struct sandbox_caps *out, int docker)
{
	*out = *sandbox_kernel_caps();
	if (!docker)
		return;
	{
		struct buf v = BUF_INIT;
		char *path = NULL;
		const char *p = getenv("PATH");

		/* is there a client? */
		if (p) {
			const char *s, *e;

			for (s = p;; s = e + 1) {
				struct buf cand = BUF_INIT;

				e = strchrnul(s, ':');
				buf_add(&cand, s, (size_t)(e - s));
				buf_addstr(&cand, "/docker");
				if (cand.buf[0] == '/' && !access(cand.buf, X_OK)) {
					path = buf_detach(&cand, NULL);
					break;
				}
				buf_release(&cand);
				if (!*e)
					break;
			}
		}
		out->docker_client = path != NULL;
		free(path);
		if (!out->docker_client) {
			snprintf(out->docker_version, sizeof(out->docker_version),
				 "no docker client on PATH");
			return;
		}
		if (sandbox_docker_engine(&v)) {
			out->docker_engine = 1;
			snprintf(out->docker_version, sizeof(out->docker_version), "%s", v.buf);
		} else {
			snprintf(out->docker_version, sizeof(out->docker_version),
				 "the docker engine did not answer");
		}
		buf_release(&v);
	}
}
