/*
 * The bridge from a sandbox's network namespace to the egress proxy
 * (sandbox/proxy.h): a forwarder process, forked by the supervisor after
 * it brought loopback up and before it starts the command, listening on
 * 127.0.0.1:SB_PROXY_PORT and relaying each connection, in a process of
 * its own, to the proxy's UNIX socket.
 *
 * The socket's folder is not visible in the sandbox (its /tmp is a fresh
 * tmpfs): the parent opens the socket O_PATH before the clone and the
 * forwarder connects through /proc/self/fd/N, which reaches exactly that
 * inode. The forwarder is forgex code that never loads the command's
 * seccomp program or Landlock domain; the command cannot signal or trace
 * it (Landlock scoping, ABI 6) and reaches nothing through it but the
 * proxy, which decides every connection.
 *
 * Async-signal-safe only: it runs between clone() and the supervisor's end.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "sandbox/sandbox.h"

static pid_t bridge_clone(void)
{
	return (pid_t)syscall(SYS_clone, SIGCHLD, NULL, NULL, NULL, NULL);
}

static int send_all(int fd, const char *d, size_t n)
{
	while (n) {
		ssize_t w = send(fd, d, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		d += w;
		n -= (size_t)w;
	}
	return 0;
}

static void copy_both_ways(int a, int b)
{
	struct pollfd pfd[2];
	char buf[16384];
	int open_[2] = { 1, 1 }, fds[2] = { a, b };

	while (open_[0] || open_[1]) {
		int i;

		for (i = 0; i < 2; i++) {
			pfd[i].fd = open_[i] ? fds[i] : -1;
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		for (i = 0; i < 2; i++) {
			ssize_t r;

			if (!pfd[i].revents)
				continue;
			r = read(fds[i], buf, sizeof(buf));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				shutdown(fds[!i], SHUT_WR);
				open_[i] = 0;
				continue;
			}
			if (send_all(fds[!i], buf, (size_t)r) < 0)
				return;
		}
	}
}

/* "/proc/self/fd/N" into `sun`, by hand (no snprintf here). */
static void fd_path(struct sockaddr_un *sun, int fd)
{
	static const char pre[] = "/proc/self/fd/";
	char digits[12];
	size_t n = 0, i;

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	memcpy(sun->sun_path, pre, sizeof(pre) - 1);
	do
		digits[n++] = (char)('0' + fd % 10);
	while ((fd /= 10) && n < sizeof(digits));
	for (i = 0; i < n; i++)
		sun->sun_path[sizeof(pre) - 1 + i] = digits[n - 1 - i];
}

static FX_NORETURN void forward_one(int client, int proxy_fd)
{
	struct sockaddr_un sun;
	int up;

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	fd_path(&sun, proxy_fd);
	up = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (up < 0 || connect(up, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		_exit(1);
	copy_both_ways(client, up);
	_exit(0);
}

/* Close every descriptor but `a` and `b`: the forwarder holds no pipe of the command's. */
static void close_others(int a, int b)
{
	int lo = a < b ? a : b, hi = a < b ? b : a;

	if (lo > 0)
		syscall(SYS_close_range, 0U, (unsigned)lo - 1, 0U);
	if (hi > lo + 1)
		syscall(SYS_close_range, (unsigned)lo + 1, (unsigned)hi - 1, 0U);
	syscall(SYS_close_range, (unsigned)hi + 1, ~0U, 0U);
}

static FX_NORETURN void forwarder_main(int listen_fd, int proxy_fd)
{
	struct sigaction sa;

	prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	close_others(listen_fd, proxy_fd);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_IGN;	/* connection processes reap themselves */
	sigaction(SIGCHLD, &sa, NULL);
	for (;;) {
		int c = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
		pid_t pid;

		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE)
				continue;
			_exit(1);
		}
		pid = bridge_clone();
		if (pid == 0) {
			close(listen_fd);
			forward_one(c, proxy_fd);
		}
		close(c);
	}
}

pid_t sb_bridge_start(int proxy_fd)
{
	struct sockaddr_in in;
	int one = 1, fd, e;
	pid_t pid;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memset(&in, 0, sizeof(in));
	in.sin_family = AF_INET;
	in.sin_port = htons(SB_PROXY_PORT);
	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&in, sizeof(in)) < 0 || listen(fd, 128) < 0)
		goto fail;
	pid = bridge_clone();
	if (pid < 0)
		goto fail;
	if (pid == 0)
		forwarder_main(fd, proxy_fd);
	close(fd);
	return pid;
fail:
	e = errno;
	close(fd);
	errno = e;
	return -1;
}
