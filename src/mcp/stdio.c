/*
 * The stdio transport: the server is a child process reading JSON-RPC
 * messages, one per line, on its standard input and writing them on its
 * standard output.
 *
 * The child is started through base/proc.h: both streams are one end of a
 * socket pair (PROC_IO_SOCKET), so writing to a server that died is EPIPE
 * from send(MSG_NOSIGNAL), never SIGPIPE. The child gets the sanitized
 * environment of commands (proc_env_build()) plus what [mcp_servers.NAME]
 * env names, its own process group, and dies with forgex
 * (PROC_DIE_WITH_PARENT). Its standard error is drained whenever the
 * client waits: the last STDERR_TAIL bytes are kept for error messages,
 * and up to STDERR_LOG_MAX bytes go to the log file.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/path.h"
#include "base/proc.h"
#include "base/strvec.h"
#include "mcp/transport.h"

#define STDERR_TAIL 2048
#define STDERR_LOG_MAX (1024 * 1024)
#define POLL_SLICE_MS 50
#define STOP_GRACE_MS 500

struct stdio_transport {
	struct mcp_transport base;
	struct proc proc;		/* the server */
	int sock;			/* our end: read answers, write requests */
	int err;			/* the server's stderr; -1 at EOF */
	int log;			/* the stderr log file, or -1 */
	size_t logged;
	struct buf in;			/* bytes read, not yet a whole line */
	struct buf tail;		/* last STDERR_TAIL bytes of stderr */
};

static void keep_tail(struct stdio_transport *t, const char *data, size_t n)
{
	if (n >= STDERR_TAIL) {
		buf_reset(&t->tail);
		buf_add(&t->tail, data + n - STDERR_TAIL, STDERR_TAIL);
		return;
	}
	if (t->tail.len + n > STDERR_TAIL) {
		size_t drop = t->tail.len + n - STDERR_TAIL;

		memmove(t->tail.buf, t->tail.buf + drop, t->tail.len - drop);
		buf_setlen(&t->tail, t->tail.len - drop);
	}
	buf_add(&t->tail, data, n);
}

static void drain_stderr(struct stdio_transport *t)
{
	char chunk[4096];

	while (t->err >= 0) {
		ssize_t n = read(t->err, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return;	/* EAGAIN: nothing more for now */
		if (n == 0) {
			close(t->err);
			t->err = -1;
			return;
		}
		keep_tail(t, chunk, (size_t)n);
		if (t->log >= 0 && t->logged < STDERR_LOG_MAX) {
			size_t w = (size_t)n;

			if (w > STDERR_LOG_MAX - t->logged)
				w = STDERR_LOG_MAX - t->logged;
			if (fsutil_write_all(t->log, chunk, w) == 0)
				t->logged += w;
			if (t->logged >= STDERR_LOG_MAX) {
				static const char cut[] = "\n[forgex: the rest of the server's stderr was not kept]\n";

				fsutil_write_all(t->log, cut, sizeof(cut) - 1);
			}
		}
	}
}

static void stdio_describe_exit(struct mcp_transport *base, struct buf *out)
{
	struct stdio_transport *t = (struct stdio_transport *)base;
	struct buf tail = BUF_INIT;

	drain_stderr(t);
	if (proc_wait(&t->proc, 0)) {
		if (WIFEXITED(t->proc.status))
			buf_addf(out, " (it exited with status %d)", WEXITSTATUS(t->proc.status));
		else if (WIFSIGNALED(t->proc.status))
			buf_addf(out, " (it was killed by signal %d)", WTERMSIG(t->proc.status));
	}
	buf_addbuf(&tail, &t->tail);
	buf_trim(&tail);
	if (tail.len) {
		/* the last few lines are what says why */
		const char *start = tail.buf;
		int lines = 0;
		size_t i;

		for (i = tail.len; i > 0; i--)
			if (tail.buf[i - 1] == '\n' && ++lines == 5) {
				start = tail.buf + i;
				break;
			}
		buf_addstr(out, "; its stderr ends: ");
		for (; *start; start++)
			buf_addch(out, *start == '\n' ? '|' : (unsigned char)*start < 0x20 ? '?' : *start);
	}
	buf_release(&tail);
}

static int gone(struct stdio_transport *t)
{
	struct buf why = BUF_INIT;
	int64_t until = clk_mono_ms() + 200;
	int ret;

	/* its output closes as it exits: give the exit a moment to be seen */
	while (!proc_wait(&t->proc, 0) && clk_mono_ms() < until)
		usleep(5000);
	stdio_describe_exit(&t->base, &why);
	ret = err_set(FX_EOS, "MCP server '%s' closed its output%s", t->base.server, why.buf);
	buf_release(&why);
	return ret;
}

/*
 * Wait for input on the socket (and drain stderr) until `deadline`, for at
 * most one slice. 1: the socket is readable; 0: not yet; < 0: an error.
 */
static int wait_input(struct stdio_transport *t, int64_t deadline, const volatile sig_atomic_t *cancel,
		      short events)
{
	struct pollfd p[2];
	int64_t left = deadline - clk_mono_ms();
	int n, timeout;

	if (cancel && *cancel)
		return err_set(FX_EINTR, "interrupted");
	if (left <= 0)
		return err_set(FX_ETIMEOUT, "MCP server '%s' did not answer in time", t->base.server);
	timeout = left < POLL_SLICE_MS ? (int)left : POLL_SLICE_MS;
	p[0].fd = t->sock;
	p[0].events = events;
	p[1].fd = t->err;
	p[1].events = POLLIN;
	n = poll(p, t->err >= 0 ? 2 : 1, timeout);
	if (n < 0 && errno == EINTR)
		return 0;
	if (n < 0)
		return err_set_errno(FX_EOS, "poll");
	if (t->err >= 0 && p[1].revents)
		drain_stderr(t);
	return p[0].revents != 0;
}

/* Read what the socket has into t->in. 1: read something; 0: nothing now; FX_EOS at EOF. */
static int read_some(struct stdio_transport *t)
{
	char chunk[65536];
	ssize_t n;

	do
		n = recv(t->sock, chunk, sizeof(chunk), MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	if (n <= 0)
		return gone(t);
	buf_add(&t->in, chunk, (size_t)n);
	return 1;
}

static int stdio_send(struct mcp_transport *base, const char *msg, size_t len, int64_t deadline,
		      const volatile sig_atomic_t *cancel)
{
	struct stdio_transport *t = (struct stdio_transport *)base;
	struct buf line = BUF_INIT;
	size_t off = 0;
	int ret = 0;

	buf_add(&line, msg, len);
	buf_addch(&line, '\n');
	while (off < line.len) {
		ssize_t n = send(t->sock, line.buf + off, line.len - off, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n > 0) {
			off += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			ret = gone(t);
			break;
		}
		/* full: keep reading its output so that it can go on reading ours */
		ret = wait_input(t, deadline, cancel, POLLIN | POLLOUT);
		if (ret < 0)
			break;
		if (t->in.len < MCP_MESSAGE_MAX) {
			ret = read_some(t);
			if (ret < 0 && t->in.len == 0)
				break;
		}
		ret = 0;
	}
	buf_release(&line);
	return ret;
}

static int stdio_recv(struct mcp_transport *base, struct buf *msg, int64_t deadline,
		      const volatile sig_atomic_t *cancel)
{
	struct stdio_transport *t = (struct stdio_transport *)base;
	size_t scanned = 0;

	for (;;) {
		char *nl = t->in.len > scanned ? memchr(t->in.buf + scanned, '\n', t->in.len - scanned)
					       : NULL;
		int r;

		if (nl) {
			size_t n = (size_t)(nl - t->in.buf), rest = t->in.len - n - 1;

			buf_reset(msg);
			buf_add(msg, t->in.buf, n);
			memmove(t->in.buf, nl + 1, rest);
			buf_setlen(&t->in, rest);
			scanned = 0;
			buf_rtrim(msg);
			if (!msg->len)
				continue;	/* blank lines carry nothing */
			return 1;
		}
		scanned = t->in.len;
		if (t->in.len > MCP_MESSAGE_MAX) {
			buf_reset(&t->in);
			return err_set(FX_ELIMIT, "MCP server '%s' sent a message over %d MiB (or output "
				       "that is not line-delimited JSON-RPC)", t->base.server,
				       MCP_MESSAGE_MAX / (1024 * 1024));
		}
		r = read_some(t);
		if (r < 0)
			return r;
		if (r > 0)
			continue;
		r = wait_input(t, deadline, cancel, POLLIN);
		if (r < 0)
			return r;
	}
}

static void stdio_set_version(struct mcp_transport *t, const char *version)
{
	(void)t;
	(void)version;
}

static void stdio_close(struct mcp_transport *base)
{
	struct stdio_transport *t = (struct stdio_transport *)base;
	int64_t until;

	if (t->sock >= 0)
		shutdown(t->sock, SHUT_WR);	/* the spec's first step: close its input */
	until = clk_mono_ms() + STOP_GRACE_MS;
	while (clk_mono_ms() < until) {
		drain_stderr(t);
		if (proc_wait(&t->proc, 0))
			break;
		usleep(10000);
	}
	if (!proc_wait(&t->proc, 0)) {
		proc_kill(&t->proc, SIGTERM);
		until = clk_mono_ms() + STOP_GRACE_MS;
		while (!proc_wait(&t->proc, 0) && clk_mono_ms() < until)
			usleep(10000);
	}
	/* whatever is left of its group goes too (SIGKILL), and it is reaped */
	proc_release(&t->proc);
	drain_stderr(t);
	if (t->sock >= 0)
		close(t->sock);
	if (t->err >= 0)
		close(t->err);
	if (t->log >= 0)
		close(t->log);
	buf_release(&t->in);
	buf_release(&t->tail);
	free(t);
}

static const struct mcp_transport_ops stdio_ops = {
	stdio_send, stdio_recv, stdio_set_version, stdio_describe_exit, stdio_close,
};

/*
 * How a server is started: through forgex's own `mcp __serve` (the front,
 * src/cli/cmd_mcp.c), which runs it with the executor, in the sandbox.
 * `sandboxed` 0 (tests of this folder only) starts it directly.
 */
static int sandboxed = 1;

void mcp_stdio_set_sandboxed(int on)
{
	sandboxed = on;
}

int mcp_stdio_open(struct mcp_transport **out, const struct mcp_server_config *cfg,
		   const struct mcp_start_opts *opts)
{
	struct stdio_transport *t;
	struct strvec env = STRVEC_INIT;
	struct buf cwd = BUF_INIT;
	char self[4096];
	struct proc p;
	int ret, safepath = 0;
	size_t i;
	ssize_t n;

	proc_init(&p);
	if (sandboxed) {
		/* the launcher starts in the workspace, for its configuration */
		buf_addstr(&cwd, opts->workspace);
	} else if (!cfg->cwd || !*cfg->cwd) {
		buf_addstr(&cwd, opts->workspace);
	} else if (cfg->cwd[0] == '/') {
		buf_addstr(&cwd, cfg->cwd);
	} else {
		path_join(&cwd, opts->workspace, cfg->cwd);
	}
	if (!fsutil_is_dir(cwd.buf)) {
		ret = err_set(FX_ENOTFOUND, "MCP server '%s': working folder %s is not a folder",
			      cfg->name, cwd.buf);
		goto out;
	}
	proc_env_build(&env, NULL);
	for (i = 0; i < cfg->env.nr; i++) {
		const char *e = cfg->env.v[i];

		if (strchr(e, '=')) {
			proc_env_set(&env, e);
		} else if (getenv(e)) {
			char *kv = xstrfmt("%s=%s", e, getenv(e));

			proc_env_set(&env, kv);
			free(kv);
		}
	}
	for (i = 0; i < env.nr; i++)
		if (!strncmp(env.v[i], "PYTHONSAFEPATH=", 15))
			safepath = 1;
	/* `python3 -m NAME` never imports a NAME.py from its working folder */
	if (!safepath)
		proc_env_set(&env, "PYTHONSAFEPATH=1");
	if (sandboxed) {
		n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n <= 0 || (size_t)n >= sizeof(self) - 1) {
			ret = err_set_errno(FX_EOS, "MCP server '%s': cannot find forgex itself to "
					    "start it in the sandbox", cfg->name);
			goto out;
		}
		self[n] = '\0';
		strvec_push(&p.argv, self);
		strvec_push(&p.argv, "mcp");
		strvec_push(&p.argv, "__serve");
		if (cfg->cwd && *cfg->cwd) {
			strvec_push(&p.argv, "--cwd");
			strvec_push(&p.argv, cfg->cwd);
		}
		if (cfg->writable)
			strvec_push(&p.argv, "--writable");
		/* its own network: the egress proxy with only these domains (none: no network) */
		strvec_push(&p.argv, "--name");
		strvec_push(&p.argv, cfg->name);
		for (i = 0; i < cfg->allowed_domains.nr; i++) {
			strvec_push(&p.argv, "--allow-domain");
			strvec_push(&p.argv, cfg->allowed_domains.v[i]);
		}
		strvec_push(&p.argv, "--");
		/*
		 * Where forgex's own configuration and state are, for the
		 * launcher only (it takes them out of the server's environment).
		 */
		if (getenv("XDG_CONFIG_HOME")) {
			char *kv = xstrfmt("FX_SERVE_XDG_CONFIG_HOME=%s", getenv("XDG_CONFIG_HOME"));

			proc_env_set(&env, kv);
			free(kv);
		}
		if (getenv("XDG_STATE_HOME")) {
			char *kv = xstrfmt("FX_SERVE_XDG_STATE_HOME=%s", getenv("XDG_STATE_HOME"));

			proc_env_set(&env, kv);
			free(kv);
		}
	}
	strvec_push(&p.argv, cfg->command);
	for (i = 0; i < cfg->args.nr; i++)
		strvec_push(&p.argv, cfg->args.v[i]);
	p.env = env.v;
	p.dir = cwd.buf;
	p.in = PROC_IO_SOCKET;
	p.err = PROC_IO_PIPE;
	p.flags = PROC_NEW_GROUP | PROC_DIE_WITH_PARENT;
	ret = proc_start(&p);
	if (ret < 0) {
		ret = err_prefix(ret, "MCP server '%s'", cfg->name);
		goto out;
	}

	t = xcalloc(1, sizeof(*t));
	t->base.ops = &stdio_ops;
	t->base.server = cfg->name;
	t->sock = p.in_fd;
	t->err = p.err_fd;
	p.in_fd = p.err_fd = -1;
	fcntl(t->err, F_SETFL, O_NONBLOCK);
	/* the settings the child was started with are not needed any more */
	p.env = NULL;
	p.dir = NULL;
	t->proc = p;
	proc_init(&p);
	t->log = -1;
	if (opts->stderr_log)
		t->log = open(opts->stderr_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	buf_init(&t->in, 0);
	buf_init(&t->tail, 0);
	*out = &t->base;
	ret = 0;
out:
	proc_release(&p);
	strvec_clear(&env);
	buf_release(&cwd);
	return ret;
}
