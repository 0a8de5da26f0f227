/*
 * Starting a batch's children (see proc.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/err.h"
#include "base/fsutil.h"
#include "batch/proc.h"

/* In the child: point fd `target` at `path` (NULL: /dev/null). */
static void redirect(int target, const char *path, int flags)
{
	int fd = open(path ? path : "/dev/null", flags | O_CLOEXEC, 0644);

	if (fd < 0 || dup2(fd, target) < 0)
		_exit(126);
	close(fd);
}

static void child_setup(pid_t parent, const char *cwd)
{
	sigset_t none;

	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/* the batch died between fork() and prctl(): go with it */
	if (getppid() != parent)
		_exit(126);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	if (cwd && chdir(cwd) < 0)
		_exit(126);
	/* git never asks on a terminal: a batch runs unattended */
	setenv("GIT_TERMINAL_PROMPT", "0", 1);
}

int batch_spawn(pid_t *out, const char *const *argv, const char *cwd, const char *out_path,
		const char *err_path)
{
	pid_t parent = getpid(), pid;

	fflush(NULL);
	pid = fork();
	if (pid < 0)
		return err_set_errno(FX_EOS, "fork");
	if (!pid) {
		child_setup(parent, cwd);
		redirect(0, NULL, O_RDONLY);
		redirect(1, out_path, O_WRONLY | O_CREAT | O_TRUNC);
		redirect(2, err_path, O_WRONLY | O_CREAT | O_TRUNC);
		execvp(argv[0], (char *const *)argv);
		dprintf(2, "forgex batch: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	/* set in both, so a kill(-pid) right after this finds the group */
	setpgid(pid, pid);
	*out = pid;
	return 0;
}

int batch_exit_status(int st)
{
	return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 255;
}

int batch_command(struct buf *out, const char *const *argv, const char *cwd)
{
	int pfd[2], efd, st, code;
	pid_t parent = getpid(), pid;
	struct buf err = BUF_INIT, discard = BUF_INIT;

	efd = memfd_create("forgex-batch-stderr", MFD_CLOEXEC);
	if (efd < 0)
		return err_set_errno(FX_EOS, "memfd_create");
	if (pipe2(pfd, O_CLOEXEC) < 0) {
		close(efd);
		return err_set_errno(FX_EOS, "pipe");
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(efd);
		close(pfd[0]);
		close(pfd[1]);
		return err_set_errno(FX_EOS, "fork");
	}
	if (!pid) {
		child_setup(parent, cwd);
		redirect(0, NULL, O_RDONLY);
		if (dup2(pfd[1], 1) < 0 || dup2(efd, 2) < 0)
			_exit(126);
		execvp(argv[0], (char *const *)argv);
		dprintf(2, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(pfd[1]);
	fsutil_read_fd(out ? out : &discard, pfd[0], 0);
	close(pfd[0]);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR) {
			close(efd);
			return err_set_errno(FX_EOS, "waitpid");
		}
	code = batch_exit_status(st);
	buf_release(&discard);
	if (!code) {
		close(efd);
		return 0;
	}
	lseek(efd, 0, SEEK_SET);
	fsutil_read_fd(&err, efd, 1 << 16);
	close(efd);
	buf_rtrim(&err);
	{
		const char *last = strrchr(err.buf, '\n');

		err_set(FX_ERROR, "%s %s: exit status %d%s%s", argv[0], argv[1] ? argv[1] : "", code,
			err.len ? ": " : "", last ? last + 1 : err.buf);
	}
	buf_release(&err);
	return FX_ERROR;
}
