#ifndef FX_SANDBOX_NATIVE_H
#define FX_SANDBOX_NATIVE_H

/*
 * Private to the native backend (src/sandbox/native_*.c and
 * backend_native.c): the backend's state and the pieces each file builds.
 * The lifecycle (backend_native.c) calls them:
 *   init     native_seccomp_build()          (native_seccomp.c)
 *   prepare  native_mounts_plan()            (native_mounts.c), once
 *            native_landlock_ruleset()       (native_landlock.c)
 *            native_cgroup_pids(), native_cgroup_memory(),
 *            native_cgroup_oom_kills()       (native_cgroup.c)
 *   attach   native_write_file() into the cgroups and id maps
 *   child    native_mounts_apply() in the supervisor, which grants
 *            Landlock rights with native_landlock_grant() as it mounts
 *   finish   native_cgroup_oom_kills(), native_mounts_quarantine()
 *   release  native_cgroup_remove()
 * Parent-side functions return 0 or a negative FX_E* code with err_set();
 * child-side ones (marked) are async-signal-safe and return -1 with errno.
 */

#include <linux/filter.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <time.h>

#include "base/strvec.h"
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

struct native_state {
	int landlock_abi;		/* 0: not used (allow_unconfined) */
	int userns, pidns, netns, mntns, ipcns;
	unsigned mount_fs;		/* enum sb_mount_fs */
	int landlock_net;		/* Landlock denies TCP too (no network namespace) */
	int netns_proxy;		/* network = true: the proxy is bridged into the namespace */
	struct sock_filter *filter;	/* seccomp program, or NULL */
	unsigned short filter_len;
	int unix_guard;			/* the filter sends connect() to the supervisor */
	const char *sock_roots[SB_MAX_TREES + 4];	/* where sockets may be reached */
	size_t sock_roots_nr;
	struct proxy *proxy;		/* the egress proxy, started at the first command */
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
	/* native_mounts_mark(): when the command starts, for the nested .git search */
	struct timespec git_since;
	const struct executor *git_ex;	/* borrowed: its roots are searched */
	char tmpfs_opts[64];
};

/** Names this process makes (cgroups, quarantined folders) are numbered from it, atomically. */
extern unsigned long native_name_seq;

/* ---- lifecycle (backend_native.c) ---- */

/** Write `text` to the existing file `path` (a cgroup or /proc control file). */
int native_write_file(const char *path, const char *text);

/** Child side: whether the test hook sandbox_inject_child_failure fails step `step` (errno EPERM). */
int native_injected(int step);

/* ---- seccomp (native_seccomp.c) ---- */

/**
 * Build the command's seccomp program (the rules are listed in
 * native_seccomp.c); `with_net`: AF_INET and AF_INET6 sockets are refused
 * too; `unix_guard`: connect() is sent to the supervisor and AF_UNIX
 * datagram sockets are refused. `*out` (xmalloc'd, the caller frees it)
 * holds `*out_len` instructions.
 */
int native_seccomp_build(struct sock_filter **out, unsigned short *out_len, int with_net,
			 int unix_guard);

/* ---- Landlock (native_landlock.c) ---- */

/** The filesystem rights Landlock ABI `abi` knows (all handled, so all denied unless granted). */
uint64_t native_landlock_handled(int abi);

/**
 * Make the command's ruleset in `*out` (a descriptor the caller closes):
 * everything readable and executable; writable the workspace (unless
 * read-only), the writable roots, `tmpdir` and a few devices; TCP denied
 * when the state says so (no network namespace).
 */
int native_landlock_ruleset(int *out, const struct native_state *st, const struct executor *ex,
			    const char *tmpdir);

/** Child side: grant `rights` beneath `path` in `ruleset` (no-op when < 0). */
int native_landlock_grant(int ruleset, const char *path, uint64_t rights);

/* ---- cgroups (native_cgroup.c) ---- */

/** Make (once per executor) the pids cgroup allowing `max_processes` and the supervisor. */
int native_cgroup_pids(struct native_state *st, long max_processes);

/** Make (once per executor) the memory cgroup limited to `limit` bytes, without swap. */
int native_cgroup_memory(struct native_state *st, uint64_t limit);

/** How many times the memory cgroup's OOM killer has struck so far (0 without one). */
unsigned long native_cgroup_oom_kills(const struct native_state *st);

/** Remove the cgroup `dir`, waiting a little for its last processes to be reaped. */
void native_cgroup_remove(const char *dir);

/* ---- mounts (native_mounts.c) ---- */

/** Build the mount plan of the executor into `st->ops` (see native_mounts.c). */
int native_mounts_plan(struct native_state *st, struct executor *ex);

/**
 * Before a command: note the time (the kernel's coarse clock, the one
 * inode change times use) and the executor, so that
 * native_mounts_quarantine() can tell which .git entries the command
 * created or changed.
 */
void native_mounts_mark(struct native_state *st, const struct executor *ex);

/**
 * After a command: move away a .git or .forgex it created where the plan
 * had none, and every .git below a writable root (at any depth: a
 * submodule's, a nested repository's) that it created or changed (its
 * change time, or that of anything in it but its objects, is after the
 * mark), each with a note.
 */
void native_mounts_quarantine(struct native_state *st, struct sb_spawn *sp);

/** Child side (the supervisor): apply the plan's mounts; on failure -1 with `*stage` naming the step. */
int native_mounts_apply(const struct sb_plan *plan, const char **stage);

#endif
