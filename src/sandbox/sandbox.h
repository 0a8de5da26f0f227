#ifndef FX_SANDBOX_H
#define FX_SANDBOX_H

/*
 * Sandbox backends and the kernel probe.
 *
 * A backend is one table of function pointers with capability bits (after
 * curl's lib/vtls/vtls_int.h), with OpenSSH's lifecycle: the parent plans,
 * the child applies, the parent watches. For each command the executor:
 *   1. calls ops->prepare() in the parent: it fills a `struct sb_plan`
 *      (namespaces to create, the mount plan, the Landlock ruleset fd, the
 *      seccomp program, capabilities to drop, rlimits) and may rewrite
 *      the program and argv (docker);
 *   2. clones the supervisor with plan->clone_flags; ops->attach() runs in
 *      the parent before the supervisor may go on (uid/gid maps, cgroups);
 *   3. in the supervisor, ops->apply_supervisor() (maps, keyring, the
 *      mount plan, loopback);
 *   4. in the command's process, ops->apply() before execve(): only
 *      async-signal-safe system calls, reading the plan; a failure is
 *      fatal for the command (the sandbox fails closed) and reported to
 *      the parent with the stage that failed;
 *   5. on timeout or interrupt, ops->stop() (docker kill);
 *   6. ops->finish() when the command is over (remove a host TMPDIR,
 *      report an OOM kill, move a planted .git away: lines in sp->notes).
 *
 * sandbox_probe() says what this kernel offers; `forgex doctor` and
 * backend selection use it.
 */

#include <linux/filter.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "base/buf.h"
#include "base/proc.h"	/* the child's environment: proc_env_build() */
#include "base/strvec.h"

struct executor;

enum sandbox_cap {
	SB_CAP_FS = 1 << 0,		/* writes only to workspace, private tmp, writable_roots */
	SB_CAP_NET = 1 << 1,		/* no network unless configured */
	SB_CAP_PIDNS = 1 << 2,		/* own PID namespace: nothing outlives the command */
	SB_CAP_LIMITS = 1 << 3,		/* processes, file size, CPU time, memory */
	SB_CAP_CONTAINER = 1 << 4,	/* runs in a container image */
	SB_CAP_DIES_WITH_FORGEX = 1 << 5, /* killed when forgex dies */
	SB_CAP_MOUNTS = 1 << 6,		/* own mount tree: read-only system, hidden secrets */
};

#define SB_MAX_RLIMITS 6
#define SB_MAX_TREES 40		/* writable roots (and files) carried into the new mount tree */

/*
 * One step of the native backend's mount plan (bubblewrap's SetupOp):
 * built in the parent by prepare(), applied in order by the supervisor
 * right after it entered its new mount namespace. Paths are absolute and
 * resolved by the parent.
 */
enum sb_mount_kind {
	SB_MNT_PRIVATE,		/* "/" recursively private: nothing propagates to the host */
	SB_MNT_CLONE,		/* tree[slot] = detached recursive copy of `path` */
	SB_MNT_ROOT_RO,		/* every mount read-only and nosuid */
	SB_MNT_TMPFS,		/* a fresh tmpfs at `path` (`data`: options); writable */
	SB_MNT_PROC,		/* a fresh /proc for the new PID namespace */
	SB_MNT_MQUEUE,		/* a fresh mqueue file system (new IPC namespace) */
	SB_MNT_PLACE,		/* tree[slot] -> `path` (made in a tmpfs when missing) */
	SB_MNT_RO_BIND,		/* `path` bound read-only over itself */
	SB_MNT_HIDE_DIR,	/* an empty read-only tmpfs over the folder `path` */
	SB_MNT_HIDE_FILE,	/* /dev/null bound over `path`, nodev: opening it fails */
	SB_MNT_DEVPTS,		/* a new devpts instance at `path` */
	SB_MNT_SYMLINK,		/* a symbolic link `path` -> `data` */
	SB_MNT_READ_ONLY,	/* the mount at `path` (only it) read-only */
};

enum sb_mount_flag {
	SB_MNTF_OPTIONAL = 1 << 0,	/* a missing `path` is not an error */
	SB_MNTF_FILE = 1 << 1,		/* PLACE: the tree is a file, not a folder */
	SB_MNTF_LANDLOCK = 1 << 2,	/* TMPFS, DEVPTS: grant it every Landlock right */
	SB_MNTF_MKDIR = 1 << 3,		/* make the mount point first (in a fresh tmpfs) */
};

struct sb_mount_op {
	int kind;			/* enum sb_mount_kind */
	int flags;			/* enum sb_mount_flag bits */
	int slot;			/* CLONE, PLACE: index into the detached trees */
	const char *path;
	const char *data;		/* TMPFS: mount options */
};

struct sb_rlimit {
	int resource;
	struct rlimit lim;
};

/** What the child applies; built in the parent. */
struct sb_plan {
	unsigned long clone_flags;	/* CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET */
	int loopback_up;		/* bring "lo" up in the new network namespace */
	char uid_map[32], gid_map[32];	/* written by the supervisor itself when set */
	int pid_namespace;		/* the supervisor is PID 1 of a new namespace */

	struct sb_mount_op *mounts;	/* applied by the supervisor; NULL: no mount namespace */
	size_t mounts_nr;
	uint64_t landlock_rw;		/* rights SB_MNTF_LANDLOCK grants */
	int new_keyring;		/* the supervisor joins a new session keyring */
	uint64_t drop_caps;		/* capability bits the command loses (all sets) */

	int no_new_privs;
	int landlock_fd;		/* ruleset to restrict_self with; -1: none */
	struct sock_fprog seccomp;	/* len 0: no filter */
	struct sb_rlimit rlimits[SB_MAX_RLIMITS];
	size_t rlimits_nr;

	/* parent side */
	char *tmpdir;			/* private TMPDIR, removed by finish() */
	char name[32];			/* docker container name */
	int stopped;			/* stop() ran */

	/*
	 * The UNIX socket guard (native_unix.c): the command loads its seccomp
	 * program with a listener and hands it over notify_sock[1]; the
	 * supervisor receives it on notify_sock[0] and decides each connect().
	 */
	int notify_sock[2];		/* -1, -1: no guard */
	const char *const *sock_roots;	/* pathname sockets beneath these may be reached */
	size_t sock_roots_nr;
	int proxy_fd;			/* O_PATH of the egress proxy's socket; -1: no bridge */
};

#define SB_PLAN_INIT { 0, 0, "", "", 0, NULL, 0, 0, 0, 0, 0, -1, { 0, NULL }, \
			{ { 0, { 0, 0 } } }, 0, NULL, "", 0, { -1, -1 }, NULL, 0, -1 }

/* The port the bridge listens on in the sandbox's own network namespace (127.0.0.1). */
#define SB_PROXY_PORT 3128

/**
 * The child as the executor describes it to a backend; prepare() may
 * replace `path` and `argv` (docker runs "docker run ... IMAGE ARGV") and
 * add to `env`.
 */
struct sb_spawn {
	struct strvec argv;		/* what is executed */
	struct strvec env;		/* "NAME=value" */
	char *path;			/* resolved program, or NULL when not found */
	int lookup_errno;		/* why `path` is NULL: ENOENT or EACCES */
	const char *workdir;		/* resolved, inside the workspace */
	const char *const *user_argv;	/* the command as requested */
	size_t user_argc;
	const char *const *env_overrides;
	int timeout_ms;
	int spawn_fail_status;		/* exit status when `path` is NULL (docker: 125) */
	int started;			/* the command was started (finish() may look at what it did) */
	struct strvec notes;		/* finish(): lines for the command's stderr */
	struct sb_plan plan;
	const char *stdin_data;		/* NULL: stdin is /dev/null */
	size_t stdin_len;
	int network;			/* [sandbox] network: the egress proxy is bridged in */
	const int *pass_fds;		/* NULL, or the command's stdin, stdout, stderr (exec_request) */
};

struct sandbox_backend {
	const char *name;
	unsigned caps;			/* enum sandbox_cap bits it can provide */
	/** Parent, once: check the kernel, keep reusable state in ex->backend_data. */
	int (*init)(struct executor *ex);
	/** Parent, per command: fill sp->plan (and maybe argv, path, env). */
	int (*prepare)(struct executor *ex, struct sb_spawn *sp);
	/** Parent, after the supervisor is cloned and before it goes on. */
	int (*attach)(struct executor *ex, struct sb_spawn *sp, pid_t supervisor);
	/** Supervisor, async-signal-safe; returns 0 or sets *stage and errno. */
	int (*apply_supervisor)(const struct sb_plan *plan, const char **stage);
	/** Command process before execve, async-signal-safe; same convention. */
	int (*apply)(const struct sb_plan *plan, const char **stage);
	/** Parent, on timeout or interrupt, before signals are sent. */
	void (*stop)(struct executor *ex, struct sb_spawn *sp);
	/** Parent, when the command is over (always called after prepare). */
	void (*finish)(struct executor *ex, struct sb_spawn *sp);
	/** Parent, from executor_release(). */
	void (*release)(struct executor *ex);
};

extern const struct sandbox_backend sandbox_backend_none;
extern const struct sandbox_backend sandbox_backend_native;
extern const struct sandbox_backend sandbox_backend_docker;

/** The backend called `name`, or NULL. */
const struct sandbox_backend *sandbox_backend_find(const char *name);

/** One guarantee of the native backend and whether this kernel enforces it. */
struct sandbox_guarantee {
	const char *what;		/* "filesystem", "network", ... */
	int enforced;
	char how[200];			/* the mechanism, or why not */
};

enum { SB_GUARANTEES = 16 };

/** File systems a sandbox can mount in its own namespaces. */
enum sb_mount_fs {
	SB_MOUNT_TMPFS = 1 << 0,
	SB_MOUNT_PROC = 1 << 1,		/* a fresh /proc for a new PID namespace */
	SB_MOUNT_DEVPTS = 1 << 2,
	SB_MOUNT_MQUEUE = 1 << 3,
};

struct sandbox_caps {
	uid_t euid;
	int userns;			/* a user namespace can be created */
	int pidns;			/* a PID namespace can be created (with userns when not root) */
	int netns;			/* a network namespace can be created (same) */
	int landlock_abi;		/* 0: none */
	int seccomp;			/* seccomp filters are available */
	int no_new_privs;
	int mntns;			/* a mount namespace with the new mount API (Linux 5.12+) */
	int ipcns;			/* an IPC namespace */
	int unix_guard;			/* seccomp user notification and pidfd_getfd (UNIX socket guard) */
	unsigned mount_fs;		/* enum sb_mount_fs: what a sandbox can mount */
	int unshare_errno;		/* why the first namespace probe that failed did (0: none) */
	int cgroup_pids;		/* a pids cgroup can be created (needed for root) */
	char cgroup_pids_dir[256];	/* where */
	int cgroup_memory;		/* a memory cgroup can be created (v2 memory.max or v1) */
	int cgroup_memory_v2;
	char cgroup_memory_dir[256];
	struct sandbox_guarantee native[SB_GUARANTEES];
	int docker_client;		/* `docker` is on PATH */
	int docker_engine;		/* `docker version` answered */
	char docker_version[64];	/* server version, or the error */
};

/**
 * Find out what this kernel and machine offer. The namespace and Landlock
 * answers are cached for the life of the process; the docker answer is
 * asked each time only when `docker` is true (it runs `docker version`,
 * which may take up to 5 s). Never fails.
 */
void sandbox_probe(struct sandbox_caps *out, int docker);

/** The kernel part of sandbox_probe(), cached (no docker). Borrowed. */
const struct sandbox_caps *sandbox_kernel_caps(void);

/**
 * Whether the docker engine answers `docker version` within 5 s (run
 * quietly, outside the sandbox, through base/proc.h); its server version
 * is appended to `version` when not NULL. Never fails.
 */
int sandbox_docker_engine(struct buf *version);

/**
 * For tests: pretend the kernel lacks the features in `mask` (bits of
 * enum sandbox_feature) from now on, so that fallbacks and refusals can
 * be exercised on a kernel that has everything. 0 restores the truth.
 */
enum sandbox_feature {
	SB_FEAT_USERNS = 1 << 0,
	SB_FEAT_PIDNS = 1 << 1,
	SB_FEAT_NETNS = 1 << 2,
	SB_FEAT_LANDLOCK = 1 << 3,
	SB_FEAT_SECCOMP = 1 << 4,
	SB_FEAT_CGROUP = 1 << 5,
	SB_FEAT_MNTNS = 1 << 6,
	SB_FEAT_IPCNS = 1 << 7,
	SB_FEAT_MEMCG = 1 << 8,
	SB_FEAT_FRESH_PROC = 1 << 9,
	SB_FEAT_UNIX_GUARD = 1 << 10,
};
void sandbox_probe_mask(unsigned mask);

/**
 * For tests: when 1-6, the native backend's setup fails (EPERM) at that
 * step - 1 rlimits, 2 no_new_privs, 3 seccomp, 4 Landlock, 5 the first
 * mount (in the supervisor), 6 dropping capabilities - to show that the
 * sandbox fails closed.
 */
extern int sandbox_inject_child_failure;

/* Async-signal-safe helpers shared by the supervisor and the parent. */

/**
 * SIGKILL every child of the calling process (as listed in
 * /proc/self/task/TID/children) that is not `except`, and reap what has
 * exited; repeat until no child is left but `except` and those listed in
 * `keep` (`keep_nr` pids). Returns the number of processes killed.
 */
int sb_kill_children(pid_t except, const pid_t *keep, size_t keep_nr);

/** List up to `max` children of the calling process into `pids`; returns how many. */
size_t sb_list_children(pid_t *pids, size_t max);

/**
 * The supervisor, in the sandbox's network namespace (bridge.c): listen on
 * 127.0.0.1:SB_PROXY_PORT and fork the forwarder that relays each
 * connection to the egress proxy's socket, open O_PATH as `proxy_fd`.
 * Returns the forwarder's pid, or -1 with errno.
 */
pid_t sb_bridge_start(int proxy_fd);

/* The UNIX socket guard (native_unix.c); all async-signal-safe. */

/** Whether this kernel has what the guard needs (seccomp user notification, pidfd_getfd). */
int sb_unix_guard_supported(void);

/** The command: send its seccomp listener over `sock`. 0 or -1 with errno. */
int sb_unix_guard_give(int sock, int listener);

/** The supervisor: receive the listener from `sock`; -1 when none came. */
int sb_unix_guard_take(int sock);

/**
 * The supervisor: answer one connect() of the sandbox on `listener`,
 * doing it on the caller's behalf when the plan allows it (see
 * native_unix.c). 0, or -1 when the listener is unusable.
 */
int sb_unix_guard_serve(int listener, const struct sb_plan *plan);

#endif
