/*
 * The UNIX socket guard of the native backend: a pathname socket outside
 * the command's own roots (writable roots, private /tmp, /dev/shm, /run)
 * cannot be connected to, whatever its path. Why this mechanism, and not
 * another, is in docs/internals/executor.md ("UNIX sockets").
 *
 * The command's seccomp program sends every connect() to the supervisor
 * (SECCOMP_RET_USER_NOTIF; the listener descriptor comes over a socket
 * pair right after the command loaded the program), and refuses unix
 * datagram sockets (socket() and socketpair() of AF_UNIX SOCK_DGRAM,
 * EACCES), the only kind that reaches a path without connect(): sendto()
 * and sendmsg() on stream and seqpacket sockets ignore or refuse an
 * address.
 *
 * The supervisor does each connect() itself, on a copy of the caller's
 * socket (pidfd_getfd), with the address it copied once: nothing the
 * caller changes in its memory afterwards counts (SECCOMP_USER_NOTIF_FLAG_CONTINUE
 * would be racy). For a pathname it opens the socket file O_PATH as the
 * caller would find it (relative to /proc/PID/cwd, absolute through
 * /proc/PID/root), checks where that inode is (/proc/self/fd/N: no
 * symlink or rename can change it any more), and connects through that
 * descriptor. Other addresses (abstract and unnamed UNIX ones, the
 * internet ones - which, in the sandbox's network namespace, reach
 * loopback only - netlink, AF_UNSPEC to disconnect) are connected as
 * asked; every other family (vsock, which is not per network namespace,
 * and the rest) is refused; an abstract one is refused
 * where the sandbox shares the host's network namespace (the abstract
 * names are per namespace, and the supervisor is outside the command's
 * Landlock scope).
 *
 * Async-signal-safe only (the supervisor).
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include "sandbox/sandbox.h"

#ifndef SECCOMP_IOCTL_NOTIF_RECV
#error "linux/seccomp.h too old for user notification"
#endif

/* Append the decimal `v` to `out` at `*n` (at most `cap`). */
static void put_num(char *out, size_t *n, size_t cap, unsigned long v)
{
	char d[24];
	size_t k = 0;

	do
		d[k++] = (char)('0' + v % 10);
	while ((v /= 10) && k < sizeof(d));
	while (k && *n + 1 < cap)
		out[(*n)++] = d[--k];
	out[*n] = '\0';
}

static void put_str(char *out, size_t *n, size_t cap, const char *s)
{
	while (*s && *n + 1 < cap)
		out[(*n)++] = *s++;
	out[*n] = '\0';
}

static int under(const char *path, const char *root)
{
	size_t n = 0;

	while (root[n])
		n++;
	while (n > 1 && root[n - 1] == '/')
		n--;
	return !strncmp(path, root, n) && (path[n] == '/' || path[n] == '\0');
}

/* Whether the socket inode open as `ofd` lies beneath one of the plan's roots. */
static int inside_roots(const struct sb_plan *plan, int ofd)
{
	char link[64], where[4096];
	size_t n = 0, i;
	ssize_t len;

	put_str(link, &n, sizeof(link), "/proc/self/fd/");
	put_num(link, &n, sizeof(link), (unsigned long)ofd);
	len = readlink(link, where, sizeof(where) - 1);
	if (len <= 0 || where[0] != '/')
		return 0;
	where[len] = '\0';
	for (i = 0; i < plan->sock_roots_nr; i++)
		if (under(where, plan->sock_roots[i]))
			return 1;
	return 0;
}

/*
 * connect(sfd) to the pathname `path` as the process `pid` sees it, when
 * the socket lies inside the roots: 0 or -errno.
 */
static int connect_path(const struct sb_plan *plan, int sfd, unsigned long pid, const char *path)
{
	char full[4200];
	struct sockaddr_un sun;
	struct stat sb;
	size_t n = 0;
	int ofd, r;

	put_str(full, &n, sizeof(full), "/proc/");
	put_num(full, &n, sizeof(full), pid);
	put_str(full, &n, sizeof(full), "/");
	put_str(full, &n, sizeof(full), path[0] == '/' ? "root" : "cwd/");
	put_str(full, &n, sizeof(full), path);
	ofd = open(full, O_PATH | O_CLOEXEC);
	if (ofd < 0)
		return -errno;
	if (fstat(ofd, &sb) < 0 || !S_ISSOCK(sb.st_mode)) {
		close(ofd);
		return -ECONNREFUSED;	/* what connect() says for a file that is no socket */
	}
	if (!inside_roots(plan, ofd)) {
		close(ofd);
		return -EACCES;
	}
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	n = 0;
	put_str(sun.sun_path, &n, sizeof(sun.sun_path), "/proc/self/fd/");
	put_num(sun.sun_path, &n, sizeof(sun.sun_path), (unsigned long)ofd);
	r = connect(sfd, (struct sockaddr *)&sun, sizeof(sun));
	r = r < 0 ? -errno : 0;
	close(ofd);
	return r;
}

int sb_unix_guard_take(int sock)
{
	char data, cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &data, 1 };
	struct msghdr msg;
	struct cmsghdr *cm;
	int fd = -1;

	memset(&msg, 0, sizeof(msg));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	if (recvmsg(sock, &msg, MSG_CMSG_CLOEXEC) <= 0)
		return -1;
	cm = CMSG_FIRSTHDR(&msg);
	if (cm && cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

int sb_unix_guard_give(int sock, int listener)
{
	char data = 'l', cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { &data, 1 };
	struct msghdr msg;
	struct cmsghdr *cm;

	memset(&msg, 0, sizeof(msg));
	memset(cbuf, 0, sizeof(cbuf));
	msg.msg_iov = &iov;
	msg.msg_iovlen = 1;
	msg.msg_control = cbuf;
	msg.msg_controllen = sizeof(cbuf);
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &listener, sizeof(int));
	return sendmsg(sock, &msg, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

int sb_unix_guard_serve(int listener, const struct sb_plan *plan)
{
	union {
		struct seccomp_notif n;
		char pad[512];		/* a newer kernel's struct may be larger */
	} req;
	struct seccomp_notif_resp resp;
	struct sockaddr_storage ss;
	struct iovec local, remote;
	unsigned long len;
	int pidfd = -1, sfd = -1, r;

	memset(&req, 0, sizeof(req));
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, &req.n) < 0)
		return errno == EINTR || errno == ENOENT ? 0 : -1;
	memset(&resp, 0, sizeof(resp));
	resp.id = req.n.id;
	len = (unsigned long)req.n.data.args[2];
	memset(&ss, 0, sizeof(ss));
	if (len < sizeof(sa_family_t) || len > sizeof(ss)) {
		r = -EINVAL;
		goto reply;
	}
	local.iov_base = &ss;
	local.iov_len = len;
	remote.iov_base = (void *)(uintptr_t)req.n.data.args[1];
	remote.iov_len = len;
	if (process_vm_readv((pid_t)req.n.pid, &local, 1, &remote, 1, 0) != (ssize_t)len) {
		r = -EFAULT;
		goto reply;
	}
	pidfd = (int)syscall(SYS_pidfd_open, (pid_t)req.n.pid, 0);
	/* the pidfd is the caller's only if the notification is still pending */
	if (pidfd < 0 || ioctl(listener, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.n.id) < 0) {
		r = -EACCES;
		goto reply;
	}
	sfd = (int)syscall(SYS_pidfd_getfd, pidfd, (int)req.n.data.args[0], 0);
	if (sfd < 0) {
		r = errno == EBADF ? -EBADF : -EACCES;
		goto reply;
	}
	if (ss.ss_family == AF_UNIX && len > offsetof(struct sockaddr_un, sun_path) &&
	    ((struct sockaddr_un *)&ss)->sun_path[0]) {
		char path[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
		size_t n = len - offsetof(struct sockaddr_un, sun_path);

		memcpy(path, ((struct sockaddr_un *)&ss)->sun_path, n);
		path[n] = '\0';
		r = connect_path(plan, sfd, (unsigned long)req.n.pid, path);
	} else if (ss.ss_family == AF_UNIX && !(plan->clone_flags & CLONE_NEWNET)) {
		/*
		 * An abstract address in the host's network namespace: Landlock's
		 * scoping would refuse the caller, but the supervisor is not in
		 * its domain, so it refuses for it.
		 */
		r = -EACCES;
	} else if (ss.ss_family != AF_UNIX && ss.ss_family != AF_INET &&
		   ss.ss_family != AF_INET6 && ss.ss_family != AF_NETLINK &&
		   ss.ss_family != AF_UNSPEC) {
		/* vsock and the like are not per network namespace: they would reach the host */
		r = -EACCES;
	} else {
		r = connect(sfd, (struct sockaddr *)&ss, (socklen_t)len) < 0 ? -errno : 0;
	}
reply:
	if (r < 0)
		resp.error = r;
	if (sfd >= 0)
		close(sfd);
	if (pidfd >= 0)
		close(pidfd);
	/* ENOENT: the caller is gone or was interrupted (it will ask again) */
	if (ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
		return -1;
	return 0;
}

int sb_unix_guard_supported(void)
{
	struct seccomp_notif_sizes sizes;

	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0 ||
	    sizes.seccomp_notif > 512)
		return 0;
	/* pidfd_getfd (Linux 5.6): EBADF for a bad pidfd, ENOSYS when missing */
	return !(syscall(SYS_pidfd_getfd, -1, 0, 0) < 0 && errno == ENOSYS);
}
