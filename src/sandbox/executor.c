/*
 * The executor: policy gate, working folder, environment, and the
 * supervised child (see executor.h and docs/internals/executor.md).
 *
 * Process tree of one command:
 *
 *   forgex (child subreaper)
 *     `- supervisor   cloned with the backend's namespaces; PID 1 of its
 *        |            own PID namespace when there is one, else a child
 *        |            subreaper; new session (no controlling terminal)
 *        `- command   own process group; rlimits, no_new_privs, seccomp,
 *                     Landlock applied just before execve()
 *
 * The supervisor reaps everything that is orphaned below it, forwards
 * SIGTERM, and when the command exits kills whatever is left (leaving its
 * PID namespace does that at once) and reports the command's wait status
 * over the report pipe. Everything between clone and execve uses only
 * async-signal-safe calls: forgex may have other threads holding locks.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/path.h"
#include "sandbox/approval.h"
#include "sandbox/executor.h"
#include "sandbox/sandbox.h"

#define DEFAULT_PATH "/bin:/usr/bin"
#define DEFAULT_GRACE_MS 1000
#define DRAIN_MS 2000		/* after SIGKILL, how long to wait for pipes to close */
#define CANCEL_POLL_MS 100
#define CANCEL_GRACE_MS 200	/* an interrupt: SIGTERM -> SIGKILL, so all is gone within 1 s */
#define WRITE_POLL_MS 20	/* how often the writable file systems are looked at */
#define WRITE_MAX_FS 8
#define DISK_RESERVE (1ULL << 30)	/* never let a command take the last GiB */
#define DISK_RESERVE_SLACK (64ULL << 20)
#define DISK_COUNT_SLACK (1ULL << 20)

/* Records on the report pipe; each is written with one write() (< PIPE_BUF). */
enum {
	REC_PID = 'P',		/* value: the command's pid (as the supervisor sees it) */
	REC_FATAL = 'F',	/* sandbox setup failed; stage, err */
	REC_EXEC = 'X',		/* execve failed; err */
	REC_STATUS = 'S',	/* value: the command's wait status */
};

struct sb_record {
	int type;
	int err;
	int value;
	char stage[116];
};

/* ---------------------------------------------------------------- sizes */

int executor_parse_size(uint64_t *out, const char *text)
{
	const char *p = text;
	uint64_t v = 0, mult = 1;

	while (*p == ' ')
		p++;
	if (*p < '0' || *p > '9')
		return err_set(FX_EINVAL, "invalid size '%s' (expected e.g. 512m, 2g)", text);
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			return err_set(FX_EINVAL, "size '%s' is too large", text);
		v = v * 10 + (uint64_t)(*p - '0');
	}
	switch (*p) {
	case 'b': case 'B': p++; break;
	case 'k': case 'K': mult = 1ULL << 10; p++; break;
	case 'm': case 'M': mult = 1ULL << 20; p++; break;
	case 'g': case 'G': mult = 1ULL << 30; p++; break;
	case 't': case 'T': mult = 1ULL << 40; p++; break;
	default: break;
	}
	if (mult > 1 && (*p == 'b' || *p == 'B'))
		p++;
	while (*p == ' ')
		p++;
	if (*p)
		return err_set(FX_EINVAL, "invalid size '%s' (expected e.g. 512m, 2g)", text);
	if (v && mult > UINT64_MAX / v)
		return err_set(FX_EINVAL, "size '%s' is too large", text);
	if (!v)
		return err_set(FX_EINVAL, "size '%s' must be more than zero", text);
	*out = v * mult;
	return 0;
}

/* ---------------------------------------------------------- init/release */

/* A closed 0, 1 or 2 would be reused by our pipes and then clobbered by dup2. */
static void ensure_std_fds(void)
{
	int fd;

	for (fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) >= 0)
			continue;
		if (open("/dev/null", fd ? O_WRONLY : O_RDONLY) < 0)
			die("cannot open /dev/null: %s", strerror(errno));
	}
}

static int select_backend(struct executor *ex, const char *name)
{
	const struct sandbox_backend *b;
	struct buf why = BUF_INIT;
	int ret;

	if (strcmp(name, "auto")) {
		b = sandbox_backend_find(name);
		if (!b)
			return err_set(FX_EINVAL, "unknown sandbox backend '%s' "
				       "(expected auto, native, docker or none)", name);
		ex->backend = b;
		ex->caps = b->caps;
		if (b->init && (ret = b->init(ex)) < 0) {
			ex->backend = NULL;
			return ret;
		}
		if (b == &sandbox_backend_none)
			strvec_push(&ex->warnings, "sandbox backend 'none': commands run with "
				    "policy checks and hygiene only, without confinement");
		return 0;
	}

	/* "native when the kernel allows it": all of it, unconfined never */
	ex->backend = &sandbox_backend_native;
	ex->caps = sandbox_backend_native.caps;
	ex->auto_select = 1;
	ret = sandbox_backend_native.init(ex);
	ex->auto_select = 0;
	if (ret >= 0)
		return 0;
	buf_addf(&why, "native: %s", err_last());
	ex->backend = &sandbox_backend_docker;
	ex->caps = sandbox_backend_docker.caps;
	if ((ret = sandbox_backend_docker.init(ex)) >= 0 &&
	    !sandbox_docker_engine(NULL))
		ret = err_set(FX_EUNSUPPORTED, "the docker engine does not answer "
			      "('docker version' failed)");
	if (ret >= 0) {
		strvec_pushf(&ex->warnings, "sandbox backend 'auto' chose docker (%s)", why.buf);
		buf_release(&why);
		return 0;
	}
	buf_addf(&why, "; docker: %s", err_last());
	if (ex->allow_unconfined) {
		ex->backend = &sandbox_backend_none;
		ex->caps = sandbox_backend_none.caps;
		strvec_pushf(&ex->warnings, "no sandbox is available (%s); allow_unconfined = "
			     "true: commands run with policy checks and hygiene only", why.buf);
		buf_release(&why);
		return 0;
	}
	ex->backend = NULL;
	ret = err_set(FX_EUNSUPPORTED, "no sandbox backend can run here (%s); set "
		      "[sandbox] allow_unconfined = true to run without one", why.buf);
	buf_release(&why);
	return ret;
}

static char *xstrdup_or_empty(const char *s)
{
	return xstrdup(s ? s : "");
}

int executor_init(struct executor *ex, const struct config *cfg, const char *workspace)
{
	size_t i;
	int ret;

	memset(ex, 0, sizeof(*ex));
	strvec_init(&ex->writable_roots);
	strvec_init(&ex->readonly_paths);
	strvec_init(&ex->warnings);
	strvec_init(&ex->hidden);
	strvec_init(&ex->allowed_domains);
	strvec_init(&ex->denied_domains);
	ex->cancel_fd = -1;
	ex->proxy_log_fd = -1;
	ex->grace_ms = DEFAULT_GRACE_MS;

	ex->workspace = realpath(workspace, NULL);
	if (!ex->workspace)
		return err_set_errno(FX_ENOTFOUND, "cannot resolve workspace '%s'", workspace);
	if (!fsutil_is_dir(ex->workspace)) {
		ret = err_set(FX_ENOTFOUND, "workspace '%s' is not a folder", workspace);
		goto fail_ws;
	}
	ret = policy_init_from_config(&ex->policy, cfg);
	if (ret < 0)
		goto fail_ws;

	ex->default_timeout_ms = cfg->terminal.timeout_seconds > 0 &&
		cfg->terminal.timeout_seconds < INT_MAX / 1000 ?
		(int)cfg->terminal.timeout_seconds * 1000 : 120 * 1000;
	ex->max_output_bytes = cfg->terminal.max_output_bytes > 0 ?
		(size_t)cfg->terminal.max_output_bytes : 1000000;
	ex->network = cfg->sandbox.network;
	ex->max_processes = cfg->sandbox.max_processes;
	ex->cpu_limit = xstrdup_or_empty(cfg->sandbox.cpu_limit);
	ex->image = xstrdup(cfg->sandbox.image && *cfg->sandbox.image ?
			    cfg->sandbox.image : "python:3.12-slim");
	ex->read_only = cfg->sandbox.read_only;
	ex->user = xstrdup_or_empty(cfg->sandbox.user);
	ex->allow_unconfined = cfg->sandbox.allow_unconfined;
	ex->memory_limit_text = xstrdup_or_empty(cfg->sandbox.memory_limit);
	if (*ex->memory_limit_text &&
	    (ret = executor_parse_size(&ex->memory_limit, ex->memory_limit_text)) < 0) {
		err_prefix(ret, "[sandbox] memory_limit");
		goto fail;
	}
	ex->tmp_size = 1ULL << 30;
	if (cfg->sandbox.tmp_size && *cfg->sandbox.tmp_size &&
	    (ret = executor_parse_size(&ex->tmp_size, cfg->sandbox.tmp_size)) < 0) {
		err_prefix(ret, "[sandbox] tmp_size");
		goto fail;
	}
	ex->max_write_text = xstrdup_or_empty(cfg->sandbox.max_write_bytes);
	if (*ex->max_write_text &&
	    (ret = executor_parse_size(&ex->max_write_bytes, ex->max_write_text)) < 0) {
		err_prefix(ret, "[sandbox] max_write_bytes");
		goto fail;
	}
	for (i = 0; i < cfg->sandbox.hidden.nr; i++) {
		const char *h = cfg->sandbox.hidden.v[i], *home = getenv("HOME");

		if (!strncmp(h, "~/", 2) && home && *home == '/')
			strvec_pushf(&ex->hidden, "%s/%s", home, h + 2);
		else if (*h == '/')
			strvec_push(&ex->hidden, h);
		else {
			ret = err_set(FX_EINVAL, "[sandbox] hidden: '%s' is neither absolute nor "
				      "under ~/", h);
			goto fail;
		}
	}
	for (i = 0; i < cfg->sandbox.allowed_domains.nr; i++)
		strvec_push(&ex->allowed_domains, cfg->sandbox.allowed_domains.v[i]);
	for (i = 0; i < cfg->sandbox.denied_domains.nr; i++)
		strvec_push(&ex->denied_domains, cfg->sandbox.denied_domains.v[i]);
	for (i = 0; i < cfg->sandbox.writable_roots.nr; i++) {
		const char *root = cfg->sandbox.writable_roots.v[i];
		char *real = realpath(root, NULL);

		if (!real) {
			ret = err_set_errno(FX_ENOTFOUND, "[sandbox] writable_roots: cannot "
					    "resolve '%s'", root);
			goto fail;
		}
		strvec_push(&ex->writable_roots, real);
		free(real);
	}

	ensure_std_fds();
	/*
	 * Anything that escapes its supervisor (say the supervisor is killed)
	 * is re-parented to us instead of to init, where we can still kill it.
	 */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
		ret = err_set_errno(FX_EOS, "prctl(PR_SET_CHILD_SUBREAPER)");
		goto fail;
	}

	ret = select_backend(ex, cfg->sandbox.backend && *cfg->sandbox.backend ?
			     cfg->sandbox.backend : "auto");
	if (ret < 0)
		goto fail;
	return 0;

fail:
	policy_release(&ex->policy);
fail_ws:
	strvec_clear(&ex->warnings);
	free(ex->workspace);
	free(ex->cpu_limit);
	free(ex->image);
	free(ex->user);
	free(ex->memory_limit_text);
	free(ex->max_write_text);
	strvec_clear(&ex->writable_roots);
	strvec_clear(&ex->readonly_paths);
	strvec_clear(&ex->hidden);
	strvec_clear(&ex->allowed_domains);
	strvec_clear(&ex->denied_domains);
	memset(ex, 0, sizeof(*ex));
	ex->cancel_fd = -1;
	ex->proxy_log_fd = -1;
	return ret;
}

void executor_release(struct executor *ex)
{
	if (ex->backend && ex->backend->release)
		ex->backend->release(ex);
	policy_release(&ex->policy);
	free(ex->workspace);
	free(ex->cpu_limit);
	free(ex->image);
	free(ex->user);
	free(ex->memory_limit_text);
	free(ex->max_write_text);
	strvec_clear(&ex->writable_roots);
	strvec_clear(&ex->readonly_paths);
	strvec_clear(&ex->hidden);
	strvec_clear(&ex->allowed_domains);
	strvec_clear(&ex->denied_domains);
	strvec_clear(&ex->warnings);
	memset(ex, 0, sizeof(*ex));
	ex->cancel_fd = -1;
}

void executor_set_cancel(struct executor *ex, int fd, const volatile sig_atomic_t *flag)
{
	ex->cancel_fd = fd;
	ex->cancel_flag = flag;
}

const char *executor_backend_name(const struct executor *ex)
{
	return ex->backend ? ex->backend->name : "(none)";
}

unsigned executor_caps(const struct executor *ex)
{
	return ex->caps;
}

const struct strvec *executor_warnings(const struct executor *ex)
{
	return &ex->warnings;
}

/* ------------------------------------------------------ env and lookup */

static int is_executable_file(const char *path, int *err)
{
	struct stat st;

	if (stat(path, &st) < 0) {
		*err = errno == ENOTDIR ? ENOENT : errno;
		return 0;
	}
	if (S_ISDIR(st.st_mode) || access(path, X_OK) < 0) {
		*err = EACCES;
		return 0;
	}
	return 1;
}

/*
 * execvp()'s search, done in the parent with the child's PATH: the first
 * executable candidate wins; a candidate that exists but cannot run makes
 * the answer EACCES (126) rather than ENOENT (127). Relative entries (and
 * the empty entry) are taken from the working folder, as the child sees it.
 */
static char *lookup_program(const char *name, const char *path_var, const char *workdir,
			    int *err_out)
{
	struct buf cand = BUF_INIT, dir = BUF_INIT;
	const char *p, *end;
	int err = ENOENT, e = ENOENT;

	if (!*name) {
		*err_out = ENOENT;
		return NULL;
	}
	if (strchr(name, '/')) {
		if (name[0] == '/')
			buf_addstr(&cand, name);
		else
			path_join(&cand, workdir, name);
		if (is_executable_file(cand.buf, &e)) {
			buf_release(&cand);
			return xstrdup(name);	/* exec'd as given, after chdir */
		}
		buf_release(&cand);
		*err_out = e;
		return NULL;
	}
	for (p = path_var ? path_var : DEFAULT_PATH;; p = end + 1) {
		end = strchrnul(p, ':');
		buf_reset(&dir);
		buf_reset(&cand);
		if (end == p)
			buf_addstr(&dir, workdir);
		else if (*p != '/') {
			struct buf rel = BUF_INIT;

			buf_add(&rel, p, (size_t)(end - p));
			path_join(&dir, workdir, rel.buf);
			buf_release(&rel);
		} else
			buf_add(&dir, p, (size_t)(end - p));
		path_join(&cand, dir.buf, name);
		if (is_executable_file(cand.buf, &e)) {
			buf_release(&dir);
			return buf_detach(&cand, NULL);
		}
		if (e == EACCES)
			err = EACCES;
		if (!*end)
			break;
	}
	buf_release(&cand);
	buf_release(&dir);
	*err_out = err;
	return NULL;
}

/* ------------------------------------------- async-signal-safe helpers */

static size_t as_strlen(const char *s)
{
	size_t n = 0;

	while (s[n])
		n++;
	return n;
}

static void as_report(int fd, int type, int err, int value, const char *stage)
{
	struct sb_record r;
	size_t n = stage ? as_strlen(stage) : 0;

	memset(&r, 0, sizeof(r));
	r.type = type;
	r.err = err;
	r.value = value;
	if (n >= sizeof(r.stage))
		n = sizeof(r.stage) - 1;
	if (n)
		memcpy(r.stage, stage, n);
	while (write(fd, &r, sizeof(r)) < 0 && errno == EINTR)
		;
}

static pid_t raw_clone(unsigned long flags)
{
	/* fork() semantics without glibc's fork handlers (see the top) */
	return (pid_t)syscall(SYS_clone, flags | SIGCHLD, NULL, NULL, NULL, NULL);
}

/* Close every descriptor from 3 up except those in `keep` (sorted here). */
static void close_all_except(int *keep, size_t n)
{
	unsigned int from = 3;
	size_t i, j;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];

			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	for (i = 0; i <= n; i++) {
		unsigned int to = i < n ? (unsigned int)keep[i] : ~0U;

		if (i < n && (keep[i] < 3 || (unsigned int)keep[i] < from))
			continue;
		if (to > from) {
			if (syscall(SYS_close_range, from, to - 1, 0) < 0) {
				unsigned int fd, last = to - 1 > 65535 ? 65535 : to - 1;

				for (fd = from; fd <= last; fd++)
					close((int)fd);
			}
		}
		if (i < n)
			from = to + 1;
	}
}

/* State of the supervisor (a separate process: its own copy). */
static volatile sig_atomic_t sup_term, sup_hup;

static void sup_on_signal(int sig)
{
	if (sig == SIGTERM || sig == SIGINT)
		sup_term = 1;
	else if (sig == SIGHUP || sig == SIGUSR1)
		sup_hup = 1;
}

struct child_ctx {
	const struct sandbox_backend *ops;
	const struct sb_plan *plan;
	const char *path;
	char *const *argv;
	char *const *envp;
	const char *workdir;
	int in_fd, out_fd, err_fd, report_fd, sync_fd;
};

static FX_NORETURN void command_main(const struct child_ctx *c, pid_t supervisor)
{
	struct sigaction sa;
	sigset_t none;
	const char *stage = NULL;
	int sig, e;

	setpgid(0, 0);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != supervisor)
		_exit(126);
	/* exec keeps ignored signals and the mask: start from the defaults */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	for (sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			sigaction(sig, &sa, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);

	if (dup2(c->in_fd, 0) < 0 || dup2(c->out_fd, 1) < 0 || dup2(c->err_fd, 2) < 0) {
		as_report(c->report_fd, REC_FATAL, errno, 0, "dup2");
		_exit(126);
	}
	if (chdir(c->workdir) < 0) {
		as_report(c->report_fd, REC_FATAL, errno, 0, "chdir to the working folder");
		_exit(126);
	}
	if (c->ops->apply && c->ops->apply(c->plan, &stage) < 0) {
		as_report(c->report_fd, REC_FATAL, errno, 0, stage ? stage : "sandbox");
		_exit(126);
	}
	/* nothing of forgex's leaks into the command, whoever opened it */
	if (syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) < 0) {
		int fd;

		for (fd = 3; fd < 65536; fd++)
			if (fd != c->report_fd)
				close(fd);
	}
	execve(c->path, c->argv, c->envp);
	e = errno;
	as_report(c->report_fd, REC_EXEC, e, 0, "execve");
	_exit(e == ENOENT ? 127 : 126);
}

static void sup_signal_children(const struct sb_plan *plan, pid_t cmd, int sig)
{
	pid_t kids[256];
	size_t i, n;

	kill(-cmd, sig);
	/*
	 * As PID 1 of our own namespace, -1 means exactly the processes of
	 * the sandbox. Never outside one: there it means every process we
	 * may signal.
	 */
	if (plan->pid_namespace && getpid() == 1) {
		kill(-1, sig);
		return;
	}
	n = sb_list_children(kids, ARRAY_SIZE(kids));
	for (i = 0; i < n; i++)
		kill(kids[i], sig);
}

static FX_NORETURN void supervisor_main(struct child_ctx *c)
{
	static const int sigs[] = { SIGCHLD, SIGTERM, SIGINT, SIGHUP, SIGUSR1 };
	struct sigaction sa;
	sigset_t block, old;
	const char *stage = NULL;
	int keep[10], status = 0, done = 0, listener = -1;
	size_t nkeep = 0, i;
	struct pollfd pfd;
	pid_t self, cmd, p;
	ssize_t n;
	char go;

	if (prctl(PR_SET_PDEATHSIG, c->plan->pid_namespace ? SIGKILL : SIGHUP, 0, 0, 0) < 0)
		_exit(1);
	/* the parent writes the uid/gid maps and cgroup, then says go */
	do
		n = read(c->sync_fd, &go, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1 || go != 'g')
		_exit(1);
	close(c->sync_fd);
	keep[nkeep++] = c->report_fd;
	keep[nkeep++] = c->in_fd;
	keep[nkeep++] = c->out_fd;
	keep[nkeep++] = c->err_fd;
	if (c->plan->landlock_fd >= 0)
		keep[nkeep++] = c->plan->landlock_fd;
	if (c->plan->notify_sock[0] >= 0) {
		keep[nkeep++] = c->plan->notify_sock[0];
		keep[nkeep++] = c->plan->notify_sock[1];
	}
	if (c->plan->proxy_fd >= 0)
		keep[nkeep++] = c->plan->proxy_fd;
	close_all_except(keep, nkeep);

	if (c->ops->apply_supervisor && c->ops->apply_supervisor(c->plan, &stage) < 0) {
		as_report(c->report_fd, REC_FATAL, errno, 0, stage ? stage : "sandbox");
		_exit(1);
	}
	setsid();	/* no controlling terminal for anything below */
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
		as_report(c->report_fd, REC_FATAL, errno, 0, "prctl(PR_SET_CHILD_SUBREAPER)");
		_exit(1);
	}
	/* network = true: the forwarder to the egress proxy, in our network namespace */
	if (c->plan->proxy_fd >= 0) {
		if (sb_bridge_start(c->plan->proxy_fd) < 0) {
			as_report(c->report_fd, REC_FATAL, errno, 0, "start the bridge to the "
				  "egress proxy on 127.0.0.1");
			_exit(1);
		}
		close(c->plan->proxy_fd);
	}

	sigemptyset(&block);
	for (i = 0; i < ARRAY_SIZE(sigs); i++)
		sigaddset(&block, sigs[i]);
	sigprocmask(SIG_BLOCK, &block, &old);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sup_on_signal;
	for (i = 1; i < ARRAY_SIZE(sigs); i++)
		sigaction(sigs[i], &sa, NULL);
	sa.sa_handler = sup_on_signal;	/* SIGCHLD only needs to wake sigsuspend */
	sigaction(SIGCHLD, &sa, NULL);
	for (i = 0; i < ARRAY_SIZE(sigs); i++)
		sigdelset(&old, sigs[i]);

	self = getpid();
	cmd = raw_clone(0);
	if (cmd < 0) {
		as_report(c->report_fd, REC_FATAL, errno, 0, "fork");
		_exit(1);
	}
	if (!cmd)
		command_main(c, self);
	as_report(c->report_fd, REC_PID, 0, (int)cmd, NULL);
	if (c->plan->notify_sock[1] >= 0)
		close(c->plan->notify_sock[1]);

	for (;;) {
		while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
			if (p == cmd) {
				done = 1;
				break;
			}
		}
		if (done || sup_hup)
			break;
		if (sup_term) {
			sup_term = 0;
			sup_signal_children(c->plan, cmd, SIGTERM);
		}
		if (c->plan->notify_sock[0] < 0 || listener == -2) {
			sigsuspend(&old);
			continue;
		}
		/* the UNIX socket guard: first its listener, then each connect() */
		pfd.fd = listener >= 0 ? listener : c->plan->notify_sock[0];
		pfd.events = POLLIN;
		pfd.revents = 0;
		if (ppoll(&pfd, 1, NULL, &old) <= 0)
			continue;
		if (listener < 0) {
			listener = sb_unix_guard_take(c->plan->notify_sock[0]);
			close(c->plan->notify_sock[0]);
			if (listener < 0)
				listener = -2;	/* none came: the command failed before */
		} else if ((pfd.revents & (POLLHUP | POLLERR | POLLNVAL)) ||
			   sb_unix_guard_serve(listener, c->plan) < 0) {
			close(listener);
			listener = -2;
		}
	}
	/* the command is over (or forgex is gone): nothing it started may stay */
	sup_signal_children(c->plan, cmd, SIGKILL);
	if (!c->plan->pid_namespace)
		sb_kill_children(0, NULL, 0);
	if (done)
		as_report(c->report_fd, REC_STATUS, 0, status, NULL);
	_exit(0);
}

/* --------------------------------------------------------------- spawn */

/*
 * The disk a command may fill: the file systems of the workspace and the
 * writable roots, their used space when the command started.
 */
struct disk_watch {
	size_t n;
	const char *path[WRITE_MAX_FS];
	uint64_t used0[WRITE_MAX_FS];
	uint64_t limit;
	double next;
	int unknown;			/* rounds in a row the command's count was unreadable */
	const char *hit;		/* the file system that grew too much */
	int low;			/* ... or ran out of room */
};

static int fs_usage(const char *path, uint64_t *used, uint64_t *avail)
{
	struct statvfs v;

	if (statvfs(path, &v) < 0)
		return -1;
	*used = (uint64_t)(v.f_blocks - v.f_bfree) * v.f_frsize;
	*avail = (uint64_t)v.f_bavail * v.f_frsize;
	return 0;
}

static void disk_watch_add(struct disk_watch *dw, const char *path, dev_t *devs)
{
	struct stat sb;
	uint64_t avail;
	size_t i;

	if (dw->n >= WRITE_MAX_FS || stat(path, &sb) < 0)
		return;
	for (i = 0; i < dw->n; i++)
		if (devs[i] == sb.st_dev)
			return;
	if (fs_usage(path, &dw->used0[dw->n], &avail) < 0)
		return;
	devs[dw->n] = sb.st_dev;
	dw->path[dw->n++] = path;
}

static void disk_watch_init(struct disk_watch *dw, const struct executor *ex)
{
	dev_t devs[WRITE_MAX_FS];
	size_t i;

	memset(dw, 0, sizeof(*dw));
	dw->limit = ex->max_write_bytes;
	if (!dw->limit)
		return;
	disk_watch_add(dw, ex->workspace, devs);
	for (i = 0; i < ex->writable_roots.nr; i++)
		disk_watch_add(dw, ex->writable_roots.v[i], devs);
}

/* "write_bytes" less "cancelled_write_bytes" of /proc/PID/io, or -1. */
static int64_t proc_io_written(pid_t pid)
{
	struct buf b = BUF_INIT;
	char path[64];
	const char *w, *c;
	int64_t n = -1;

	snprintf(path, sizeof(path), "/proc/%ld/io", (long)pid);
	if (fsutil_read_file(&b, path, 4096) >= 0 && (w = strstr(b.buf, "\nwrite_bytes: ")) &&
	    (c = strstr(b.buf, "cancelled_write_bytes: ")))
		n = strtoll(w + 14, NULL, 10) - strtoll(c + 23, NULL, 10);
	buf_release(&b);
	return n;
}

/*
 * What the process tree under `pid` has written to disks (page cache
 * dirtied, less what was truncated before write-back): the live
 * processes' own counts, each of which holds what its reaped descendants
 * wrote. -1 when a count cannot be read.
 */
static int64_t tree_written(pid_t pid, int depth)
{
	struct buf kids = BUF_INIT;
	char path[64];
	int64_t total = proc_io_written(pid), sub;
	const char *p;

	if (total < 0 || depth > 64)
		return total;
	snprintf(path, sizeof(path), "/proc/%ld/task/%ld/children", (long)pid, (long)pid);
	if (fsutil_read_file(&kids, path, 1 << 20) >= 0) {
		for (p = kids.buf; *p; ) {
			char *end;
			long k = strtol(p, &end, 10);

			if (end == p)
				break;
			sub = tree_written((pid_t)k, depth + 1);
			if (sub > 0)
				total += sub;	/* a child gone meanwhile was reaped: counted above */
			p = end;
		}
	}
	buf_release(&kids);
	return total;
}

/*
 * Whether the command must be stopped for what it wrote: a writable file
 * system grew by more than the limit (or is down to its last GiB) and the
 * command's own processes wrote that much (so that other programs writing
 * to the same disk do not count against it). `sup` is 0 when the writers
 * are not our descendants (docker): then the growth alone decides.
 */
static int disk_watch_check(struct disk_watch *dw, double now, pid_t sup)
{
	size_t i;

	if (!dw->n || now < dw->next)
		return 0;
	dw->next = now + WRITE_POLL_MS;
	for (i = 0; i < dw->n; i++) {
		uint64_t used, avail, grew, need;
		int64_t own;

		if (fs_usage(dw->path[i], &used, &avail) < 0 || used <= dw->used0[i])
			continue;
		grew = used - dw->used0[i];
		if (grew > dw->limit)
			need = dw->limit;
		else if (avail < DISK_RESERVE && grew > DISK_RESERVE_SLACK)
			need = DISK_RESERVE_SLACK;
		else
			continue;
		own = sup > 0 ? tree_written(sup, 0) : -1;
		/*
		 * The counts are page-granular and race with reaping: allow a
		 * MiB of slack, and a count that cannot be read (a process
		 * exiting meanwhile) a few more rounds before failing closed.
		 */
		if (own >= 0 && (uint64_t)own <= need + DISK_COUNT_SLACK) {
			dw->unknown = 0;
			continue;
		}
		if (own < 0 && sup > 0 && ++dw->unknown < 5)
			continue;
		dw->hit = dw->path[i];
		dw->low = need != dw->limit;
		return 1;
	}
	return 0;
}

struct watch {
	struct disk_watch disk;
	struct headtail out, err;
	struct buf rec;		/* partial report records */
	int timed_out, cancelled;
	int abandoned;		/* stopped reading before the supervisor was done */
	int have_status, status;
	int fatal_err, exec_err, have_fatal, have_exec;
	char fatal_stage[sizeof(((struct sb_record *)0)->stage)];
	pid_t cmd_pid;
};

static void take_records(struct watch *w)
{
	struct sb_record r;

	while (w->rec.len >= sizeof(r)) {
		memcpy(&r, w->rec.buf, sizeof(r));
		memmove(w->rec.buf, w->rec.buf + sizeof(r), w->rec.len - sizeof(r));
		buf_setlen(&w->rec, w->rec.len - sizeof(r));
		r.stage[sizeof(r.stage) - 1] = '\0';
		switch (r.type) {
		case REC_PID:
			w->cmd_pid = r.value;
			break;
		case REC_FATAL:
			w->have_fatal = 1;
			w->fatal_err = r.err;
			memcpy(w->fatal_stage, r.stage, sizeof(r.stage));
			break;
		case REC_EXEC:
			w->have_exec = 1;
			w->exec_err = r.err;
			break;
		case REC_STATUS:
			w->have_status = 1;
			w->status = r.value;
			break;
		default:
			break;
		}
	}
}

static int cancel_requested(const struct executor *ex, int cancel_ready)
{
	return cancel_ready || (ex->cancel_flag && *ex->cancel_flag);
}

/*
 * Read the three pipes until they close, enforcing the deadline and the
 * cancel hook: SIGTERM through the supervisor, then SIGKILL after the
 * grace, then give up on pipes after DRAIN_MS.
 */
static void watch_child(struct watch *w, struct executor *ex, struct sb_spawn *sp,
			pid_t sup, int fds[3], double deadline)
{
	enum { RUNNING, TERMINATING, KILLED } phase = RUNNING;
	double phase_end = deadline;
	char chunk[65536];
	int k;

	for (;;) {
		struct pollfd pfd[4];
		nfds_t n = 0, i;
		double now = clk_mono_ms(), left;
		int timeout, r, cancel_ready = 0;

		for (i = 0; i < 3; i++) {
			pfd[i].fd = fds[i];
			pfd[i].events = POLLIN;
			pfd[i].revents = 0;
		}
		n = 3;
		if (ex->cancel_fd >= 0 && phase == RUNNING) {
			pfd[3].fd = ex->cancel_fd;
			pfd[3].events = POLLIN;
			pfd[3].revents = 0;
			n = 4;
		}
		if (fds[0] < 0 && fds[1] < 0 && fds[2] < 0)
			break;

		if (phase == RUNNING && cancel_requested(ex, 0)) {
			w->cancelled = 1;
			goto stop;
		}
		if (phase == RUNNING &&
		    disk_watch_check(&w->disk, now, ex->caps & SB_CAP_CONTAINER ? 0 : sup))
			goto stop;
		if (now >= phase_end) {
			if (phase == RUNNING) {
				w->timed_out = 1;
				goto stop;
			} else if (phase == TERMINATING) {
				/*
				 * Grace is over. In a PID namespace, killing its init
				 * kills everything. Otherwise the supervisor is told
				 * to kill all now (SIGUSR1): it knows what it adopted.
				 */
				if (sp->plan.pid_namespace) {
					kill(sup, SIGKILL);
				} else {
					if (w->cmd_pid > 0)
						kill(-w->cmd_pid, SIGKILL);
					kill(sup, SIGUSR1);
				}
				phase = KILLED;
				phase_end = clk_mono_ms() + DRAIN_MS;
				continue;
			} else {
				/* the supervisor did not finish: take over (see the caller) */
				kill(sup, SIGKILL);
				w->abandoned = 1;
				break;
			}
		}
		left = phase_end - now;
		timeout = left > INT_MAX ? INT_MAX : (int)left + 1;
		if (phase == RUNNING && ex->cancel_flag && timeout > CANCEL_POLL_MS)
			timeout = CANCEL_POLL_MS;
		if (phase == RUNNING && w->disk.n && timeout > WRITE_POLL_MS)
			timeout = WRITE_POLL_MS;
		r = poll(pfd, n, timeout);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			kill(sup, SIGKILL);
			w->abandoned = 1;
			break;
		}
		if (n == 4 && pfd[3].revents)
			cancel_ready = 1;
		for (i = 0; i < 3; i++) {
			ssize_t got;

			if (pfd[i].fd < 0 || !pfd[i].revents)
				continue;
			got = read(pfd[i].fd, chunk, sizeof(chunk));
			if (got < 0 && (errno == EINTR || errno == EAGAIN))
				continue;
			if (got <= 0) {
				close(fds[i]);
				fds[i] = -1;
				continue;
			}
			if (i == 0)
				headtail_add(&w->out, chunk, (size_t)got);
			else if (i == 1)
				headtail_add(&w->err, chunk, (size_t)got);
			else {
				buf_add(&w->rec, chunk, (size_t)got);
				take_records(w);
			}
		}
		if (phase == RUNNING && cancel_requested(ex, cancel_ready)) {
			w->cancelled = 1;
			goto stop;
		}
		continue;
stop:
		if (ex->backend->stop)
			ex->backend->stop(ex, sp);
		kill(sup, SIGTERM);
		phase = TERMINATING;
		/* a person who pressed Ctrl-C waits for the prompt: a short grace */
		phase_end = clk_mono_ms() + (w->cancelled && ex->grace_ms > CANCEL_GRACE_MS ?
					CANCEL_GRACE_MS : ex->grace_ms);
	}
	for (k = 0; k < 3; k++)
		if (fds[k] >= 0) {
			close(fds[k]);
			fds[k] = -1;
		}
}

static int spawn_and_watch(struct watch *w, struct executor *ex, struct sb_spawn *sp,
			   double deadline)
{
	int out[2] = { -1, -1 }, err[2] = { -1, -1 }, rep[2] = { -1, -1 };
	int sync[2] = { -1, -1 }, in_fd = -1, fds[3], ret = 0, st;
	int pass_out = -1, pass_err = -1;
	pid_t kids_before[512], sup;
	size_t nkids_before;
	struct child_ctx c;

	if (sp->pass_fds) {
		/* the caller's descriptors, copied above 2 so that dup2() in the child cannot clobber them */
		in_fd = fcntl(sp->pass_fds[0], F_DUPFD_CLOEXEC, 3);
		pass_out = fcntl(sp->pass_fds[1], F_DUPFD_CLOEXEC, 3);
		pass_err = fcntl(sp->pass_fds[2], F_DUPFD_CLOEXEC, 3);
		if (in_fd < 0 || pass_out < 0 || pass_err < 0) {
			ret = err_set_errno(FX_EOS, "cannot pass the command its descriptors");
			goto out;
		}
	} else if (sp->stdin_data) {
		/* a memory file: the child reads it at its own pace, nothing blocks */
		in_fd = memfd_create("forgex-stdin", MFD_CLOEXEC);
		if (in_fd < 0 || fsutil_write_all(in_fd, sp->stdin_data, sp->stdin_len) < 0 ||
		    lseek(in_fd, 0, SEEK_SET) < 0) {
			if (in_fd >= 0)
				close(in_fd);
			return err_set_errno(FX_EOS, "cannot prepare the command's input");
		}
	} else {
		in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	}
	if (in_fd < 0)
		return err_set_errno(FX_EOS, "cannot open /dev/null");
	if (pipe2(out, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0 ||
	    pipe2(rep, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sync) < 0) {
		ret = err_set_errno(FX_EOS, "cannot create pipes");
		goto out;
	}
	c.ops = ex->backend;
	c.plan = &sp->plan;
	c.path = sp->path;
	c.argv = (char *const *)sp->argv.v;
	c.envp = (char *const *)sp->env.v;
	c.workdir = sp->workdir;
	c.in_fd = in_fd;
	/* passed descriptors: the pipes are left without a writer and read EOF at once */
	c.out_fd = pass_out >= 0 ? pass_out : out[1];
	c.err_fd = pass_err >= 0 ? pass_err : err[1];
	c.report_fd = rep[1];
	c.sync_fd = sync[1];

	nkids_before = sb_list_children(kids_before, ARRAY_SIZE(kids_before));
	sup = raw_clone(sp->plan.clone_flags);
	if (sup < 0) {
		ret = err_set_errno(FX_EOS, "cannot start the command's supervisor (clone)");
		goto out;
	}
	if (!sup) {
		close(sync[0]);
		supervisor_main(&c);
	}
	close(sync[1]);
	sync[1] = -1;
	close(out[1]);
	close(err[1]);
	close(rep[1]);
	out[1] = err[1] = rep[1] = -1;

	if (ex->backend->attach && (ret = ex->backend->attach(ex, sp, sup)) < 0) {
		close(sync[0]);	/* the supervisor reads EOF and exits */
		sync[0] = -1;
		while (waitpid(sup, &st, 0) < 0 && errno == EINTR)
			;
		goto out;
	}
	if (send(sync[0], "g", 1, MSG_NOSIGNAL) != 1) {
		ret = err_set_errno(FX_EOS, "cannot start the command's supervisor");
		kill(sup, SIGKILL);
		while (waitpid(sup, &st, 0) < 0 && errno == EINTR)
			;
		goto out;
	}
	close(sync[0]);
	sync[0] = -1;

	fds[0] = out[0];
	fds[1] = err[0];
	fds[2] = rep[0];
	out[0] = err[0] = rep[0] = -1;
	watch_child(w, ex, sp, sup, fds, deadline);

	while (waitpid(sup, &st, 0) < 0) {
		if (errno != EINTR)
			break;
	}
	if (!w->have_status) {
		/*
		 * The supervisor died before it could clean up (killed by us
		 * after the grace, or by someone else): what it left was
		 * re-parented to us, the subreaper. Kill and reap it.
		 */
		if (!sp->plan.pid_namespace && w->cmd_pid > 0)
			kill(-w->cmd_pid, SIGKILL);
		sb_kill_children(0, kids_before, nkids_before);
	}
out:
	if (in_fd >= 0)
		close(in_fd);
	if (pass_out >= 0)
		close(pass_out);
	if (pass_err >= 0)
		close(pass_err);
	for (st = 0; st < 2; st++) {
		if (out[st] >= 0)
			close(out[st]);
		if (err[st] >= 0)
			close(err[st]);
		if (rep[st] >= 0)
			close(rep[st]);
		if (sync[st] >= 0)
			close(sync[st]);
	}
	return ret;
}

/* -------------------------------------------------------------- result */

static void add_note(struct buf *b, const char *fmt, ...) FX_PRINTF(2, 3);
static void add_note(struct buf *b, const char *fmt, ...)
{
	va_list ap;

	if (b->len && b->buf[b->len - 1] != '\n')
		buf_addch(b, '\n');
	va_start(ap, fmt);
	buf_vaddf(b, fmt, ap);
	va_end(ap);
	buf_addch(b, '\n');
}

static const char *signal_name(int sig)
{
	const char *abbrev = sigabbrev_np(sig);
	static _Thread_local char name[32];

	if (!abbrev) {
		snprintf(name, sizeof(name), "signal %d", sig);
		return name;
	}
	snprintf(name, sizeof(name), "SIG%s", abbrev);
	return name;
}

static void result_start(struct exec_result *r, const struct exec_request *req)
{
	size_t i;

	strvec_init(&r->argv);
	for (i = 0; i < req->argc; i++)
		strvec_push(&r->argv, req->argv[i]);
	r->exit_code = 0;
	buf_init(&r->out, 0);
	buf_init(&r->err, 0);
	r->timed_out = 0;
	r->duration_ms = 0;
	r->truncated = 0;
	r->term_signal = 0;
	r->out_total = r->err_total = 0;
	r->write_limited = 0;
}

void exec_result_release(struct exec_result *r)
{
	strvec_clear(&r->argv);
	buf_release(&r->out);
	buf_release(&r->err);
	r->exit_code = 0;
	r->timed_out = r->truncated = r->term_signal = 0;
	r->duration_ms = 0;
	r->out_total = r->err_total = 0;
}

json_t *exec_result_to_json(const struct exec_result *r)
{
	json_t *o = json_object();

	if (!o)
		die("out of memory");
	jsonx_set(o, "argv", jsonx_from_strvec(&r->argv));
	jsonx_set(o, "exit_code", json_integer(r->exit_code));
	jsonx_set(o, "stdout", jsonx_stringn_lossy(r->out.buf, r->out.len));
	jsonx_set(o, "stderr", jsonx_stringn_lossy(r->err.buf, r->err.len));
	jsonx_set(o, "timed_out", json_boolean(r->timed_out));
	jsonx_set(o, "duration_ms", json_real(r->duration_ms));
	jsonx_set(o, "truncated", json_boolean(r->truncated));
	return o;
}

/* ---------------------------------------------------------------- run */

static void spawn_release(struct sb_spawn *sp)
{
	strvec_clear(&sp->notes);
	strvec_clear(&sp->argv);
	strvec_clear(&sp->env);
	free(sp->path);
	sp->path = NULL;
}

/* `workdir` as the person should see it: relative to the workspace, "." for its top. */
static const char *shown_workdir(const struct executor *ex, const char *workdir)
{
	size_t n = strlen(ex->workspace);

	if (!strncmp(workdir, ex->workspace, n) && (workdir[n] == '/' || !workdir[n])) {
		workdir += n;
		while (*workdir == '/')
			workdir++;
		return *workdir ? workdir : ".";
	}
	return workdir;
}

/*
 * The approval gate, for a command whose verdict `v` is not a deny:
 * FX_EDENIED when it needs approval and is not approved (with what the
 * person said, for the model). A yes grants nothing about the network:
 * [sandbox] network alone decides whether the egress proxy is there, and
 * the proxy decides each connection. `workdir` (resolved) is shown in the
 * question.
 */
static int check_approval(struct executor *ex, const struct exec_request *req,
			  const struct policy_verdict *v, const char *workdir)
{
	struct buf q = BUF_INIT;
	struct approval_answer a = APPROVAL_ANSWER_INIT;
	int ret = 0;

	if (v->decision == POLICY_APPROVAL) {
		struct approval_request rq = { APPROVAL_COMMAND, v->reason.buf, req->argv, req->argc,
					       shown_workdir(ex, workdir), v->network && ex->network,
					       NULL, NULL, NULL };
		enum approval_mode mode = ex->policy.mode == APPROVAL_AUTO && v->always_ask ?
			APPROVAL_ASK : ex->policy.mode;

		if (approver_decide(ex->approver, &a, mode, &rq) == APPROVE_NO) {
			approval_add_refusal(&q, req->argv, req->argc, &a);
			ret = err_set(FX_EDENIED, "%s", q.buf);
		}
	}
	approval_answer_release(&a);
	buf_release(&q);
	return ret;
}

int executor_run(struct exec_result *out, struct executor *ex, const struct exec_request *req)
{
	struct sb_spawn sp = { STRVEC_INIT, STRVEC_INIT, NULL, 0, NULL, NULL, 0, NULL, 0, 0, 0,
			       STRVEC_INIT, SB_PLAN_INIT };
	struct exec_result res = EXEC_RESULT_INIT;
	struct policy_verdict verdict = POLICY_VERDICT_INIT;
	struct watch w;
	char *workdir = NULL;
	double start, deadline;
	size_t head, i;
	int ret, timeout_ms, prepared = 0;

	if (!ex->backend)
		BUG("executor_run() before executor_init()");
	if (!req->argc || !req->argv || !req->argv[0])
		return err_set(FX_EDENIED, "Empty command");
	for (i = 0; i < req->argc; i++)
		if (!req->argv[i])
			return err_set(FX_EINVAL, "argv[%zu] is NULL", i);

	/* 1. policy: a denied command is refused before anything else */
	if (policy_check(&verdict, &ex->policy, req->argv, req->argc) == POLICY_DENY) {
		ret = err_set(FX_EDENIED, "Command denied by policy: %s", verdict.reason.buf);
		policy_verdict_release(&verdict);
		return ret;
	}

	/* 2. working folder: nobody is asked about a command that cannot run */
	ret = path_resolve_in_workspace(&workdir, ex->workspace, req->cwd ? req->cwd : ".");
	if (ret < 0) {
		policy_verdict_release(&verdict);
		return err_prefix(FX_EDENIED, "Working directory escapes workspace");
	}

	/* 3. approval */
	ret = check_approval(ex, req, &verdict, workdir);
	policy_verdict_release(&verdict);
	if (ret < 0) {
		free(workdir);
		return ret;
	}

	memset(&w, 0, sizeof(w));
	disk_watch_init(&w.disk, ex);
	head = ex->max_output_bytes / 2;
	headtail_init(&w.out, head, ex->max_output_bytes - head);
	headtail_init(&w.err, head, ex->max_output_bytes - head);
	buf_init(&w.rec, 0);
	result_start(&res, req);
	timeout_ms = req->timeout_ms > 0 ? req->timeout_ms : ex->default_timeout_ms;
	start = clk_mono_ms();
	deadline = start + timeout_ms;

	/* 4. the child: environment, program, backend plan */
	proc_env_build(&sp.env, req->env_overrides);
	sp.network = ex->network;
	for (i = 0; i < req->argc; i++)
		strvec_push(&sp.argv, req->argv[i]);
	sp.workdir = workdir;
	sp.user_argv = req->argv;
	sp.user_argc = req->argc;
	sp.env_overrides = req->env_overrides;
	sp.timeout_ms = timeout_ms;
	sp.stdin_data = req->stdin_data;
	sp.stdin_len = req->stdin_len;
	sp.pass_fds = req->stdio_fds;

	if (!fsutil_is_dir(workdir)) {
		res.exit_code = 127;
		buf_addf(&res.err, "cannot change to working directory '%s': %s", workdir,
			 strerror(ENOENT));
		goto done;
	}
	ret = ex->backend->prepare(ex, &sp);
	prepared = 1;
	if (ret < 0)
		goto fail;
	if (!sp.path) {
		sp.path = lookup_program(sp.argv.v[0], proc_env_get(&sp.env, "PATH"), workdir,
					 &sp.lookup_errno);
	}
	if (!sp.path) {
		if (sp.spawn_fail_status) {
			res.exit_code = sp.spawn_fail_status;
			buf_addf(&res.err, "docker execution failed: [Errno %d] %s: '%s'",
				 sp.lookup_errno, strerror(sp.lookup_errno), sp.argv.v[0]);
		} else if (sp.lookup_errno == ENOENT) {
			res.exit_code = 127;
			buf_addf(&res.err, "command not found: %s", req->argv[0]);
		} else {
			res.exit_code = 126;
			buf_addf(&res.err, "failed to execute command: [Errno %d] %s: '%s'",
				 sp.lookup_errno, strerror(sp.lookup_errno), req->argv[0]);
		}
		goto done;
	}

	ret = spawn_and_watch(&w, ex, &sp, deadline);
	sp.started = 1;
	if (ret < 0)
		goto fail;
	if (w.cancelled) {
		ret = err_set(FX_EINTR, "interrupted: the command was stopped");
		goto fail;
	}
	if (w.have_fatal) {
		errno = w.fatal_err;
		ret = err_set(FX_EDENIED, "sandbox setup failed in the child (%s backend), "
			      "the command did not run: %s: %s", ex->backend->name,
			      w.fatal_stage, strerror(w.fatal_err));
		goto fail;
	}

	headtail_render(&w.out, &res.out);
	headtail_render(&w.err, &res.err);
	res.out_total = w.out.total;
	res.err_total = w.err.total;
	res.truncated = headtail_dropped(&w.out) || headtail_dropped(&w.err);
	res.timed_out = w.timed_out;
	if (w.have_exec) {
		res.exit_code = w.exec_err == ENOENT ? 127 : 126;
		if (w.exec_err == ENOENT)
			add_note(&res.err, "command not found: %s", req->argv[0]);
		else
			add_note(&res.err, "failed to execute command: [Errno %d] %s: '%s'",
				 w.exec_err, strerror(w.exec_err), req->argv[0]);
	} else if (w.have_status && WIFEXITED(w.status)) {
		res.exit_code = WEXITSTATUS(w.status);
	} else if (w.have_status && WIFSIGNALED(w.status)) {
		res.term_signal = WTERMSIG(w.status);
		res.exit_code = 128 + res.term_signal;
	} else {
		/* the supervisor was killed before it could report */
		res.term_signal = SIGKILL;
		res.exit_code = 128 + SIGKILL;
	}
	if (res.timed_out)
		add_note(&res.err, "forgex: timed out after %.1f s; the command and "
			 "everything it started were stopped", timeout_ms / 1000.0);
	if (w.disk.hit) {
		res.write_limited = 1;
		if (w.disk.low)
			add_note(&res.err, "forgex: stopped: the file system of '%s' has less than "
				 "1 GiB free; the command and everything it started were stopped",
				 w.disk.hit);
		else
			add_note(&res.err, "forgex: stopped: the command wrote more than %s to the "
				 "file system of '%s' ([sandbox] max_write_bytes); it and everything "
				 "it started were stopped", ex->max_write_text, w.disk.hit);
	}
	if (res.term_signal)
		add_note(&res.err, "forgex: command killed by signal %d (%s)",
			 res.term_signal, signal_name(res.term_signal));
done:
	res.duration_ms = clk_mono_ms() - start;
	if (prepared && ex->backend->finish)
		ex->backend->finish(ex, &sp);
	for (i = 0; i < sp.notes.nr; i++)
		add_note(&res.err, "%s", sp.notes.v[i]);
	spawn_release(&sp);
	headtail_release(&w.out);
	headtail_release(&w.err);
	buf_release(&w.rec);
	free(workdir);
	*out = res;
	return 0;

fail:
	if (prepared && ex->backend->finish)
		ex->backend->finish(ex, &sp);
	spawn_release(&sp);
	headtail_release(&w.out);
	headtail_release(&w.err);
	buf_release(&w.rec);
	free(workdir);
	exec_result_release(&res);
	return ret;
}
