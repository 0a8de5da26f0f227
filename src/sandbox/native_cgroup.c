/*
 * The native backend's cgroups (see native.h): for root, a pids cgroup
 * (RLIMIT_NPROC does not bind root), and where one can be made a memory
 * cgroup for memory_limit. Each is made at an executor's first command,
 * reused by the next ones, and removed with the executor; those of forgex
 * processes that died without cleaning up are collected.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "sandbox/native.h"

void native_cgroup_remove(const char *dir)
{
	int i;

	/* empty once every process is reaped; zombies may take a moment */
	for (i = 0; i < 200 && rmdir(dir) < 0 && errno == EBUSY; i++) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
}

int native_write_file(const char *path, const char *text)
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
 * cleaning up (killed outright): "forgex-PID-N" and the kernel probe's
 * "forgex-probe-PID" whose PID is gone.
 */
static void collect_stale_cgroups(const char *parent)
{
	DIR *d = opendir(parent);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		const char *num = de->d_name + 7;
		char *end;
		long pid;
		int probe;

		if (strncmp(de->d_name, "forgex-", 7))
			continue;
		probe = !strncmp(num, "probe-", 6);
		num += probe ? 6 : 0;
		pid = strtol(num, &end, 10);
		if (end == num || *end != (probe ? '\0' : '-') || pid <= 0 || pid == (long)getpid())
			continue;
		if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
	}
	if (d)
		closedir(d);
}

/*
 * mkdir() a cgroup named with this process's pid. One already there was
 * left by a process that had the same pid before and was killed before it
 * removed it (no live process but this one has the pid): it is removed
 * (it fails while tasks are in it) and made again.
 */
static int mkdir_own(const char *dir)
{
	if (!mkdir(dir, 0755))
		return 0;
	if (errno != EEXIST || rmdir(dir) < 0)
		return -1;
	return mkdir(dir, 0755);
}

/*
 * One pids cgroup per executor, made when the first command runs and
 * reused: commands run one at a time and nothing of a command survives it,
 * so each starts with the cgroup empty.
 */
int native_cgroup_pids(struct native_state *st, long max_processes)
{
	char *dir, *max, *val;
	int ret;

	if (st->cgroup_dir)
		return 0;
	collect_stale_cgroups(st->cgroup_parent);
	/* numbered across the process: two executors may run commands at once (the map's ctags) */
	dir = xstrfmt("%s/forgex-%ld-%lu", st->cgroup_parent, (long)getpid(),
		      __atomic_add_fetch(&native_name_seq, 1, __ATOMIC_RELAXED));
	if (mkdir_own(dir) < 0) {
		ret = err_set_errno(FX_EOS, "cannot create the pids cgroup '%s'", dir);
		free(dir);
		return ret;
	}
	max = xstrfmt("%s/pids.max", dir);
	val = xstrfmt("%ld", max_processes + 1);	/* +1: the supervisor */
	ret = native_write_file(max, val);
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

int native_cgroup_memory(struct native_state *st, uint64_t limit)
{
	char *dir, *f, *val;
	int ret;

	if (st->memcg_dir)
		return 0;
	collect_stale_cgroups(st->memcg_parent);
	dir = xstrfmt("%s/forgex-%ld-%lu", st->memcg_parent, (long)getpid(),
		      __atomic_add_fetch(&native_name_seq, 1, __ATOMIC_RELAXED));
	if (mkdir_own(dir) < 0) {
		ret = err_set_errno(FX_EOS, "cannot create the memory cgroup '%s'", dir);
		free(dir);
		return ret;
	}
	val = xstrfmt("%llu", (unsigned long long)limit);
	f = xstrfmt("%s/%s", dir, st->memcg_v2 ? "memory.max" : "memory.limit_in_bytes");
	ret = native_write_file(f, val);
	free(f);
	if (ret >= 0) {
		/* no swapping around the limit (where the kernel accounts swap) */
		f = xstrfmt("%s/%s", dir, st->memcg_v2 ? "memory.swap.max" :
			    "memory.memsw.limit_in_bytes");
		if (access(f, W_OK) == 0)
			native_write_file(f, st->memcg_v2 ? "0" : val);
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
unsigned long native_cgroup_oom_kills(const struct native_state *st)
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
