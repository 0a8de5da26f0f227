/*
 * The attacks of issue 10 against the native backend, for real: each test
 * sets up a victim outside the sandbox (or a daemon, a shared-memory
 * segment, a key, a hard link), runs the attack as a command through the
 * executor, asserts that it failed and why, and that the victim is as it
 * was. As root and, where the answer differs, as the unprivileged uid
 * 65534 with a workspace of its own.
 *
 * Attacks that need system calls no shell tool makes run this binary
 * itself inside the sandbox: `native_attacks attack OP ARGS...` prints one
 * line per attempt, "WHAT: ok" or "WHAT: <strerror>".
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/path.h"
#include "config/config.h"
#include "helpers/testutil.h"
#include "sandbox/executor.h"
#include "sandbox/sandbox.h"

#define NOBODY 65534
#ifndef SYS_fchmodat2
#define SYS_fchmodat2 452
#endif
#define KEYCTL_READ 11
#define KEYCTL_UPDATE 2
#define KEY_SPEC_SESSION_KEYRING -3

#define skip_msg(...) do { print_message("SKIP: " __VA_ARGS__); print_message("\n"); skip(); } while (0)

static char self_exe[4096];
static char *ws;
static struct config cfg;

/* ------------------------------------------------ the attacking side */

static char *helper_dir;
static pid_t helper_owner;

static void helper_remove(void)
{
	/* a forked child that calls exit() must leave the helper alone */
	if (getpid() == helper_owner)
		tu_rmtree(helper_dir);
	helper_dir = NULL;
}

/*
 * The attack helper is this binary, run inside the sandbox as
 * `self_exe attack OP ARGS...`. It runs from a copy in a folder of its own
 * under /var/tmp, which every command sees (read-only): the binary itself
 * may live anywhere, and under /tmp (a checkout there) the sandbox, giving
 * each command a /tmp of its own, would hide it. The folder is readable
 * by all for the tests that attack as uid NOBODY, and goes at exit.
 */
static void place_helper(void)
{
	struct buf self = BUF_INIT;

	helper_dir = xstrdup("/var/tmp/forgex-attack-helper-XXXXXX");
	if (!mkdtemp(helper_dir))
		die("mkdtemp in /var/tmp: %s", strerror(errno));
	helper_owner = getpid();
	atexit(helper_remove);
	if (chmod(helper_dir, 0755) < 0)
		die("chmod %s: %s", helper_dir, strerror(errno));
	if (fsutil_read_file(&self, "/proc/self/exe", 0) < 0)
		die("%s", err_last());
	if ((size_t)snprintf(self_exe, sizeof(self_exe), "%s/native_attacks", helper_dir) >=
	    sizeof(self_exe))
		die("%s: path too long", helper_dir);
	if (fsutil_write_atomic(self_exe, self.buf, self.len, 0755) < 0)
		die("%s", err_last());
	buf_release(&self);
}

static void say(const char *what, int r)
{
	printf("%s: %s\n", what, r < 0 ? strerror(errno) : "ok");
}

static int attack(int argc, char **argv)
{
	const char *op = argv[0];

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(op, "chmod-suid") && argc == 2) {
		int fd = open(argv[1], O_RDONLY | O_CLOEXEC);

		say("chmod", chmod(argv[1], 04755));
		say("fchmodat", fchmodat(AT_FDCWD, argv[1], 02755, 0));
		say("fchmodat2", (int)syscall(SYS_fchmodat2, AT_FDCWD, argv[1], 04755, 0));
		say("fchmod", fd < 0 ? -1 : fchmod(fd, 04755));
		if (fd >= 0)
			close(fd);
	} else if (!strcmp(op, "create-suid") && argc == 2) {
		char *f = xstrfmt("%s/suid-file", argv[1]), *d = xstrfmt("%s/sgid-dir", argv[1]);
		int fd = open(f, O_CREAT | O_WRONLY | O_CLOEXEC, 04755);

		say("open O_CREAT 04755", fd);
		if (fd >= 0)
			close(fd);
		say("mkdir 02755", mkdir(d, 02755));
		free(f);
		free(d);
	} else if (!strcmp(op, "fcap") && argc == 2) {
		/* vfs_cap_data v2: cap_setuid (7) permitted and effective */
		static const unsigned char cap[20] = { 0x01, 0x00, 0x00, 0x02, 0x80 };

		say("setxattr security.capability",
		    setxattr(argv[1], "security.capability", cap, sizeof(cap), 0));
		say("setxattr user.x", setxattr(argv[1], "user.x", "1", 1, 0));
	} else if (!strcmp(op, "chmod") && argc == 3) {
		say("chmod", chmod(argv[1], (mode_t)strtol(argv[2], NULL, 8)));
	} else if (!strcmp(op, "shm") && argc == 2) {
		int id = shmget((key_t)strtol(argv[1], NULL, 0), 0, 0);
		char *p;

		say("shmget", id);
		if (id >= 0) {
			p = shmat(id, NULL, 0);
			if (p != (void *)-1) {
				printf("read: %.6s\n", p);
				memcpy(p, "PWNED", 6);
				say("write", 0);
			}
		}
	} else if (!strcmp(op, "shm-pin") && argc == 2) {
		size_t size = 64u << 20;
		int id = shmget((key_t)strtol(argv[1], NULL, 0), size, IPC_CREAT | 0666);
		char *p;

		say("shmget create", id);
		if (id >= 0 && (p = shmat(id, NULL, 0)) != (void *)-1)
			memset(p, 1, size);
	} else if (!strcmp(op, "key") && argc == 2) {
		long serial = strtol(argv[1], NULL, 10);
		char buf[64];

		say("keyctl read", (int)syscall(SYS_keyctl, KEYCTL_READ, serial, buf, sizeof(buf)));
		say("keyctl update", (int)syscall(SYS_keyctl, KEYCTL_UPDATE, serial, "PWNED", 5));
		say("add_key", (int)syscall(SYS_add_key, "user", "forgex-planted", "x", 1,
					    KEY_SPEC_SESSION_KEYRING));
	} else if (!strcmp(op, "connect") && argc == 2) {
		struct sockaddr_un a;
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		char got[32];
		ssize_t n;

		memset(&a, 0, sizeof(a));
		a.sun_family = AF_UNIX;
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", argv[1]);
		say("connect", connect(s, (struct sockaddr *)&a, sizeof(a)));
		/* a server that answers does so at once; one that never does must not hold the test */
		setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &(struct timeval){ 1, 0 }, sizeof(struct timeval));
		n = read(s, got, sizeof(got) - 1);
		if (n > 0) {
			got[n] = '\0';
			printf("read: %s\n", got);
		}
	} else if (!strcmp(op, "dgram") && argc == 2) {
		struct sockaddr_un a;
		int s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), sv[2];

		say("socket(AF_UNIX, SOCK_DGRAM)", s);
		say("socketpair(AF_UNIX, SOCK_DGRAM)", socketpair(AF_UNIX, SOCK_DGRAM, 0, sv));
		memset(&a, 0, sizeof(a));
		a.sun_family = AF_UNIX;
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", argv[1]);
		s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		say("sendto on a stream socket", (int)sendto(s, "x", 1, 0, (struct sockaddr *)&a,
							      sizeof(a)));
	} else if (!strcmp(op, "serve-and-connect") && argc == 2) {
		/* a test server in the workspace: bind, listen, connect by a relative path */
		struct sockaddr_un a;
		int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

		memset(&a, 0, sizeof(a));
		a.sun_family = AF_UNIX;
		snprintf(a.sun_path, sizeof(a.sun_path), "%s", argv[1]);
		unlink(argv[1]);
		say("bind", bind(l, (struct sockaddr *)&a, sizeof(a)));
		say("listen", listen(l, 1));
		say("connect", connect(c, (struct sockaddr *)&a, sizeof(a)));
		unlink(argv[1]);
	} else {
		fprintf(stderr, "attack: bad arguments\n");
		return 2;
	}
	return 0;
}

/* --------------------------------------------------- the test side */

struct outcome {
	int ret;		/* executor_run()'s answer; 99: could not set up */
	int exit_code;
	int write_limited;
	struct buf out, err;
};

static void outcome_release(struct outcome *o)
{
	buf_release(&o->out);
	buf_release(&o->err);
}

/*
 * Run `argv` through a native executor on `dir`, in a child process that
 * first becomes `uid` (when not 0), with `env` overrides for the command.
 */
static void run_as(struct outcome *o, uid_t uid, const char *dir, const char *const *env,
		   const char *const *argv)
{
	int p[2], st;
	pid_t pid;
	struct buf all = BUF_INIT;

	memset(o, 0, sizeof(*o));
	buf_init(&o->out, 0);
	buf_init(&o->err, 0);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct exec_request req = { argv, 0, NULL, 60000, env };
		struct exec_result r = EXEC_RESULT_INIT;
		struct executor ex;
		int ret;

		close(p[0]);
		if (uid && (setgroups(0, NULL) < 0 || setgid(uid) < 0 || setuid(uid) < 0)) {
			dprintf(p[1], "99 0 0 0 0\ncannot become %d", (int)uid);
			_exit(0);
		}
		while (argv[req.argc])
			req.argc++;
		if (executor_init(&ex, &cfg, dir) < 0) {
			dprintf(p[1], "99 0 0 0 %zu\n%s", strlen(err_last()), err_last());
			_exit(0);
		}
		ret = executor_run(&r, &ex, &req);
		if (ret < 0) {
			dprintf(p[1], "%d 0 0 0 %zu\n%s", ret, strlen(err_last()), err_last());
			_exit(0);
		}
		dprintf(p[1], "0 %d %d %zu %zu\n", r.exit_code, r.write_limited, r.out.len,
			r.err.len);
		fsutil_write_all(p[1], r.out.buf, r.out.len);
		fsutil_write_all(p[1], r.err.buf, r.err.len);
		exec_result_release(&r);
		executor_release(&ex);
		_exit(0);
	}
	close(p[1]);
	fsutil_read_fd(&all, p[0], 1 << 24);
	close(p[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	{
		size_t outlen = 0, errlen = 0;
		int n = 0;

		assert_int_equal(sscanf(all.buf, "%d %d %d %zu %zu\n%n", &o->ret, &o->exit_code,
					&o->write_limited, &outlen, &errlen, &n), 5);
		buf_add(&o->out, all.buf + n, outlen);
		buf_add(&o->err, all.buf + n + outlen, errlen);
	}
	buf_release(&all);
	if (o->ret == 99 && strstr(o->err.buf, "cannot enforce"))
		skip_msg("native cannot run as uid %d here: %s", (int)uid, o->err.buf);
	if (o->ret)
		print_message("executor: %d %s\n", o->ret, o->err.buf);
	assert_int_equal(o->ret, 0);
}

#define ARGV(...) ((const char *const[]){ __VA_ARGS__, NULL })

static void need_native(void)
{
	struct executor ex;

	if (!sandbox_kernel_caps()->landlock_abi)
		skip_msg("Landlock is not available on this kernel");
	if (executor_init(&ex, &cfg, ws) < 0)
		skip_msg("the native backend cannot run here: %s", err_last());
	executor_release(&ex);
}

static void need_root(void)
{
	if (geteuid() != 0)
		skip_msg("needs root (to run one part as root and one as uid %d)", NOBODY);
}

/* The outside folders of the current test, removed by teardown() even when it fails. */
static struct strvec outside = STRVEC_INIT;

/* A folder the sandbox can see but not write (/tmp is the command's own). */
static char *outside_dir(uid_t owner)
{
	char *d = xstrdup("/var/tmp/forgex-attack-XXXXXX");

	if (!mkdtemp(d))
		fail_msg("mkdtemp: %s", strerror(errno));
	strvec_push(&outside, d);
	if (owner)
		assert_int_equal(chown(d, owner, owner), 0);
	return d;
}

static char *make_file(const char *dir, const char *name, const char *content, mode_t mode,
		       uid_t owner)
{
	char *p = xstrfmt("%s/%s", dir, name);

	tu_write(dir, name, content);
	assert_int_equal(chmod(p, mode), 0);
	if (owner)
		assert_int_equal(chown(p, owner, owner), 0);
	return p;
}

static mode_t mode_of(const char *p)
{
	struct stat sb;

	assert_int_equal(lstat(p, &sb), 0);
	return sb.st_mode & 07777;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (; (hay = strstr(hay, needle)); hay += strlen(needle))
		n++;
	return n;
}

static void assert_has(const struct buf *b, const char *needle)
{
	if (!strstr(b->buf, needle))
		fail_msg("expected '%s' in:\n%s", needle, b->buf);
}

static void assert_lacks(const struct buf *b, const char *needle)
{
	if (strstr(b->buf, needle))
		fail_msg("did not expect '%s' in:\n%s", needle, b->buf);
}

static int setup(void **state)
{
	(void)state;
	ws = tu_mkdtemp();
	config_init(&cfg);
	free(cfg.sandbox.backend);
	cfg.sandbox.backend = xstrdup("native");
	strvec_push(&cfg.terminal.denied, "rm");	/* replaces the default list: sh allowed */
	/* the attack helper is this (maybe ASan) binary: no address-space limit */
	free(cfg.sandbox.memory_limit);
	cfg.sandbox.memory_limit = xstrdup("");
	sandbox_probe_mask(0);
	return 0;
}

static int teardown(void **state)
{
	size_t i;

	(void)state;

	config_release(&cfg);
	tu_rmtree(ws);
	ws = NULL;
	for (i = 0; i < outside.nr; i++)
		if (fsutil_exists(outside.v[i]))
			fsutil_remove_tree(outside.v[i]);
	strvec_clear(&outside);
	return 0;
}

/* ------------------------------------------- 1. metadata outside */

static void metadata_outside(uid_t uid)
{
	struct outcome o;
	char *out = outside_dir(uid), *home, *bin, *key, *script;
	struct stat before, after;
	char cap[64];

	if (uid)
		assert_int_equal(chown(ws, uid, uid), 0);
	bin = make_file(out, "tool", "#!/bin/sh\necho tool\n", 0755, uid);
	home = xstrfmt("%s/home", out);
	assert_int_equal(mkdir(home, 0700), 0);
	if (uid)
		assert_int_equal(chown(home, uid, uid), 0);
	key = make_file(home, "id_ed25519", "PRIVATE KEY\n", 0600, uid);
	assert_int_equal(stat(bin, &before), 0);

	run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "chmod-suid", bin));
	assert_int_equal(count(o.out.buf, ": Operation not permitted"), 4);
	outcome_release(&o);
	{
		/* control: the same calls on a copy, unconfined, succeed */
		char *copy = make_file(out, "copy", "#!/bin/sh\n", 0755, 0);
		struct tu_result r;

		tu_run(&r, ARGV(self_exe, "attack", "chmod-suid", copy), NULL, NULL, NULL);
		assert_int_equal(count(r.out.buf, ": ok"), 4);
		assert_true(mode_of(copy) & S_ISUID);
		tu_result_release(&r);
		unlink(copy);
		free(copy);
	}
	run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "fcap", bin));
	/* seccomp answers before the mount does: no xattr write reaches a file system */
	assert_has(&o.out, "setxattr security.capability: Operation not supported");
	assert_has(&o.out, "setxattr user.x: Operation not supported");
	outcome_release(&o);
	run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "chmod", home, "777"));
	assert_has(&o.out, "chmod: Read-only file system");
	outcome_release(&o);
	run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "chmod", key, "644"));
	assert_has(&o.out, "chmod: Read-only file system");
	outcome_release(&o);
	/* the shell tools a model would use */
	script = xstrfmt("chmod 777 %s; chown %d %s; touch -d 2001-01-01 %s; "
			 "setcap cap_setuid+ep %s; chmod u+s %s; echo done", home,
			 uid ? 0 : NOBODY, bin, bin, bin, bin);
	run_as(&o, uid, ws, NULL, ARGV("sh", "-c", script));
	assert_has(&o.out, "done");
	assert_int_equal(count(o.err.buf, "Read-only file system"), 3);
	assert_has(&o.err, "Operation not permitted");	/* u+s: seccomp */
	outcome_release(&o);

	/* nothing changed */
	assert_int_equal(mode_of(home), 0700);
	assert_int_equal(mode_of(key), 0600);
	assert_int_equal(mode_of(bin), 0755);
	assert_int_equal(stat(bin, &after), 0);
	assert_int_equal(after.st_uid, before.st_uid);
	assert_true(after.st_mtim.tv_sec == before.st_mtim.tv_sec);
	assert_true(getxattr(bin, "security.capability", cap, sizeof(cap)) < 0);
	assert_int_equal(errno, ENODATA);
	free(script);
	free(bin);
	free(key);
	free(home);
	tu_rmtree(out);
}

static void test_metadata_outside_root(void **state)
{
	(void)state;
	need_native();
	need_root();
	metadata_outside(0);
}

static void test_metadata_outside_unprivileged(void **state)
{
	(void)state;
	need_native();
	need_root();
	metadata_outside(NOBODY);
}

/* Inside the workspace: no setuid/setgid bits, no file capabilities either. */
static void metadata_inside(uid_t uid)
{
	struct outcome o;
	char *f, *suid, *sgid;

	if (uid)
		assert_int_equal(chown(ws, uid, uid), 0);
	f = make_file(ws, "prog", "#!/bin/sh\n", 0755, uid);
	run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "chmod-suid", f));
	assert_int_equal(count(o.out.buf, ": Operation not permitted"), 4);
	outcome_release(&o);
	run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "create-suid", ws));
	assert_has(&o.out, "open O_CREAT 04755: Operation not permitted");
	assert_has(&o.out, "mkdir 02755: Operation not permitted");
	outcome_release(&o);
	run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "fcap", f));
	assert_has(&o.out, "setxattr security.capability: Operation not supported");
	outcome_release(&o);
	run_as(&o, uid, ws, NULL, ARGV("sh", "-c", "chmod 4755 prog; install -m 4755 prog p2; "
				       "setcap cap_setuid+ep prog; chmod 700 prog && echo plain"));
	/* an ordinary chmod still works */
	assert_has(&o.out, "plain");
	assert_has(&o.err, "Operation not permitted");
	outcome_release(&o);
	assert_int_equal(mode_of(f), 0700);
	suid = xstrfmt("%s/suid-file", ws);
	sgid = xstrfmt("%s/sgid-dir", ws);
	assert_false(fsutil_exists(suid));
	assert_false(fsutil_exists(sgid));
	{
		char *p2 = xstrfmt("%s/p2", ws);
		char cap[64];

		if (fsutil_exists(p2))
			assert_false(mode_of(p2) & (S_ISUID | S_ISGID));
		assert_true(getxattr(f, "security.capability", cap, sizeof(cap)) < 0);
		free(p2);
	}
	free(f);
	free(suid);
	free(sgid);
}

static void test_metadata_inside_root(void **state)
{
	(void)state;
	need_native();
	metadata_inside(0);
}

static void test_metadata_inside_unprivileged(void **state)
{
	(void)state;
	need_native();
	need_root();
	metadata_inside(NOBODY);
}

/* ------------------------------------------------- 6. UNIX sockets */

static int listen_unix(const char *path)
{
	struct sockaddr_un a;
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(s >= 0);
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "%s", path);
	unlink(path);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(s, 8), 0);
	return s;
}

static void sockets(uid_t uid)
{
	struct outcome o;
	char *home = outside_dir(uid), *ssh, *sock, *run, *inside, *tmux;
	char *old_home = xstrdup(getenv("HOME"));
	int s1, s2, s3, s4;
	pid_t answerer;

	if (uid)
		assert_int_equal(chown(ws, uid, uid), 0);
	ssh = xstrfmt("%s/.ssh", home);
	assert_int_equal(mkdir(ssh, 0700), 0);
	if (uid)
		assert_int_equal(chown(ssh, uid, uid), 0);
	sock = xstrfmt("%s/agent.sock", ssh);
	run = xstrfmt("/run/forgex-attack-%ld.sock", (long)getpid());
	inside = xstrfmt("%s/inside.sock", ws);
	s1 = listen_unix(sock);
	s2 = listen_unix(run);
	s3 = listen_unix(inside);
	tmux = xstrfmt("%s/.tmux-sessions/default", home);
	{
		char *d = xstrfmt("%s/.tmux-sessions", home);

		assert_int_equal(mkdir(d, 0777), 0);
		free(d);
	}
	s4 = listen_unix(tmux);
	assert_int_equal(chmod(tmux, 0777), 0);
	/* the "server": runs whatever comes, here it only says so */
	answerer = fork();
	assert_true(answerer >= 0);
	if (!answerer) {
		for (;;) {
			int c = accept(s4, NULL, NULL);

			if (c >= 0) {
				(void)!write(c, "HOST-SHELL", 10);
				close(c);
			}
		}
	}
	assert_int_equal(chmod(sock, 0777), 0);
	assert_int_equal(chmod(run, 0777), 0);
	assert_int_equal(chmod(inside, 0777), 0);
	setenv("HOME", home, 1);

	/* control: a socket inside the workspace is reachable */
	run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "connect", inside));
	assert_has(&o.out, "connect: ok");
	outcome_release(&o);
	/* an agent socket under ~/.ssh, a daemon's under /run: gone */
	run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "connect", sock));
	assert_has(&o.out, "connect: No such file or directory");
	outcome_release(&o);
	run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "connect", run));
	assert_has(&o.out, "connect: No such file or directory");
	outcome_release(&o);

	/*
	 * Issue 20, item 2: a tmux-like server under a home folder that is on
	 * no hidden list (its socket visible in the sandbox, and mode 0777)
	 * answers whoever connects; the UNIX socket guard refuses the
	 * connect(), by its absolute path, by a relative one, and through a
	 * symlink planted in the workspace.
	 */
	if (sandbox_kernel_caps()->unix_guard) {
		char *link = xstrfmt("%s/tmux-link.sock", ws), *rel;

		assert_int_equal(symlink(tmux, link), 0);
		rel = xstrfmt("../../../../../../../../../..%s", tmux);
		run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "connect", tmux));
		assert_has(&o.out, "connect: Permission denied");
		assert_lacks(&o.out, "read: HOST-SHELL");
		outcome_release(&o);
		run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "connect", rel));
		assert_has(&o.out, "connect: Permission denied");
		outcome_release(&o);
		run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "connect", "tmux-link.sock"));
		assert_has(&o.out, "connect: Permission denied");
		outcome_release(&o);
		/* datagram sockets, which reach a path without connect(), cannot be made */
		run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "dgram", tmux));
		assert_has(&o.out, "socket(AF_UNIX, SOCK_DGRAM): Permission denied");
		assert_has(&o.out, "socketpair(AF_UNIX, SOCK_DGRAM): Permission denied");
		assert_lacks(&o.out, "sendto on a stream socket: ok");
		outcome_release(&o);
		/* the host side still reaches it: the guard is the sandbox's, not the socket's */
		assert_true(fsutil_exists(tmux));
		/* a test server the command starts in its workspace or /tmp works */
		run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "serve-and-connect", "srv.sock"));
		assert_has(&o.out, "bind: ok");
		assert_has(&o.out, "connect: ok");
		outcome_release(&o);
		run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "serve-and-connect",
					       "/tmp/srv.sock"));
		assert_has(&o.out, "connect: ok");
		outcome_release(&o);
		unlink(link);
		free(link);
		free(rel);
	} else {
		print_message("note: no UNIX socket guard on this kernel: %s is reachable\n", tmux);
	}

	setenv("HOME", old_home, 1);
	close(s1);
	close(s2);
	close(s3);
	close(s4);
	unlink(tmux);
	unlink(run);
	unlink(inside);
	free(old_home);
	free(ssh);
	free(sock);
	free(run);
	free(inside);
	kill(answerer, SIGKILL);
	waitpid(answerer, NULL, 0);
	free(tmux);
	tu_rmtree(home);
}

static void test_sockets_root(void **state)
{
	(void)state;
	need_native();
	need_root();
	sockets(0);
}

static void test_sockets_unprivileged(void **state)
{
	(void)state;
	need_native();
	need_root();
	sockets(NOBODY);
}

/* The real daemons: git's credential cache and ssh-agent. */
static void test_sockets_git_credential_cache_and_ssh_agent(void **state)
{
	struct tu_result r;
	struct outcome o;
	char *home = outside_dir(0), *old_home = xstrdup(getenv("HOME"));
	char *agent_dir = xstrfmt("/tmp/forgex-agent-%ld", (long)getpid());
	char *agent = xstrfmt("%s/agent.sock", agent_dir), *env_home, *env_sock;
	static const char fill[] =
		"printf 'protocol=https\\nhost=forgex.example\\n\\n' | "
		"git -c credential.helper=cache credential fill";
	const char *env[4];

	(void)state;
	need_native();
	env_home = xstrfmt("HOME=%s", home);
	env_sock = xstrfmt("SSH_AUTH_SOCK=%s", agent);
	env[0] = env_home;
	env[1] = "GIT_TERMINAL_PROMPT=0";
	env[2] = env_sock;
	env[3] = NULL;
	/* a password in the cache, an agent on its socket */
	tu_run(&r, ARGV("sh", "-c", "printf 'protocol=https\\nhost=forgex.example\\n"
			"username=u\\npassword=CACHEDSECRET\\n\\n' | "
			"git -c credential.helper=cache credential approve"), NULL, env, NULL);
	assert_int_equal(r.status, 0);
	tu_result_release(&r);
	tu_run(&r, ARGV("sh", "-c", fill), NULL, env, NULL);
	assert_non_null(strstr(r.out.buf, "CACHEDSECRET"));	/* control: it is there */
	tu_result_release(&r);
	assert_int_equal(mkdir(agent_dir, 0700), 0);
	tu_run(&r, ARGV("ssh-agent", "-a", agent), NULL, env, NULL);
	if (r.status != 0) {
		tu_result_release(&r);
		skip_msg("ssh-agent cannot start here");
	}
	tu_result_release(&r);
	tu_run(&r, ARGV("ssh-add", "-l"), NULL, env, NULL);
	assert_int_equal(r.status, 1);	/* control: "The agent has no identities." */
	tu_result_release(&r);

	setenv("HOME", home, 1);
	run_as(&o, 0, ws, env, ARGV("sh", "-c", fill));
	assert_lacks(&o.out, "CACHEDSECRET");
	outcome_release(&o);
	run_as(&o, 0, ws, env, ARGV("ssh-add", "-l"));
	assert_int_equal(o.exit_code, 2);
	assert_has(&o.err, "Error connecting to agent: No such file or directory");
	outcome_release(&o);
	setenv("HOME", old_home, 1);

	tu_run(&r, ARGV("git", "credential-cache", "exit"), NULL, env, NULL);
	tu_result_release(&r);
	tu_run(&r, ARGV("sh", "-c", "SSH_AGENT_PID=$(pgrep -f \"ssh-agent -a $SSH_AUTH_SOCK\") "
			"ssh-agent -k"), NULL, env, NULL);
	tu_result_release(&r);
	tu_rmtree(agent_dir);
	free(agent);
	free(env_home);
	free(env_sock);
	free(old_home);
	tu_rmtree(home);
}

/* ------------------------------------------- 7. SysV IPC, keyring */

static void ipc(uid_t uid)
{
	struct outcome o;
	key_t k1 = 0x46580000 + (getpid() & 0xffff), k2 = k1 + 0x10000, k3 = k1 + 0x20000;
	char *seg, *keyarg, *shmfile;
	int id, id_open;
	long serial;
	char buf[64];

	if (uid)
		assert_int_equal(chown(ws, uid, uid), 0);
	/* root's private segment and a world-writable one */
	id = shmget(k1, 4096, IPC_CREAT | IPC_EXCL | 0600);
	id_open = shmget(k2, 4096, IPC_CREAT | IPC_EXCL | 0666);
	assert_true(id >= 0 && id_open >= 0);
	seg = shmat(id, NULL, 0);
	memcpy(seg, "SECRET", 7);
	{
		char *s2 = shmat(id_open, NULL, 0);

		memcpy(s2, "SHARED", 7);
		shmdt(s2);
	}
	serial = syscall(SYS_add_key, "user", "forgex-attack", "KEYSECRET", 9,
			 KEY_SPEC_SESSION_KEYRING);
	shmfile = xstrfmt("/dev/shm/forgex-attack-%ld", (long)getpid());
	tu_write("/dev/shm", shmfile + 9, "POSIXSHM\n");
	assert_int_equal(chmod(shmfile, 0666), 0);

	{
		char *a1 = xstrfmt("%d", (int)k1), *a2 = xstrfmt("%d", (int)k2);

		run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "shm", a1));
		assert_has(&o.out, "shmget: No such file or directory");
		assert_lacks(&o.out, "read:");
		outcome_release(&o);
		run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "shm", a2));
		assert_has(&o.out, "shmget: No such file or directory");
		outcome_release(&o);
		free(a1);
		free(a2);
	}
	/* a segment left behind dies with the sandbox's IPC namespace */
	{
		char *a3 = xstrfmt("%d", (int)k3);

		run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "shm-pin", a3));
		assert_has(&o.out, "shmget create: ok");
		outcome_release(&o);
		assert_true(shmget(k3, 0, 0) < 0);
		assert_int_equal(errno, ENOENT);
		free(a3);
	}
	if (serial > 0) {
		keyarg = xstrfmt("%ld", serial);
		run_as(&o, uid, ws, NULL, ARGV(self_exe, "attack", "key", keyarg));
		assert_has(&o.out, "keyctl read: Function not implemented");
		assert_has(&o.out, "keyctl update: Function not implemented");
		assert_has(&o.out, "add_key: Function not implemented");
		outcome_release(&o);
		free(keyarg);
		memset(buf, 0, sizeof(buf));
		assert_int_equal(syscall(SYS_keyctl, KEYCTL_READ, serial, buf, sizeof(buf)), 9);
		assert_string_equal(buf, "KEYSECRET");
	} else {
		print_message("note: no session keyring here (%s): keyring part not run\n",
			      strerror(errno));
	}
	/* POSIX shared memory: /dev/shm is the sandbox's own */
	{
		char *script = xstrfmt("cat %s; echo PWNED > %s; cat %s", shmfile, shmfile,
				       shmfile);

		run_as(&o, uid, ws, NULL, ARGV("sh", "-c", script));
		assert_has(&o.err, "No such file or directory");
		assert_lacks(&o.out, "POSIXSHM");
		outcome_release(&o);
		free(script);
	}

	/* nothing changed */
	assert_string_equal(seg, "SECRET");
	{
		char *s2 = shmat(id_open, NULL, 0), *c = tu_read("/dev/shm", shmfile + 9);

		assert_string_equal(s2, "SHARED");
		assert_string_equal(c, "POSIXSHM\n");
		shmdt(s2);
		free(c);
	}
	shmdt(seg);
	shmctl(id, IPC_RMID, NULL);
	shmctl(id_open, IPC_RMID, NULL);
	unlink(shmfile);
	free(shmfile);
}

static void test_ipc_root(void **state)
{
	(void)state;
	need_native();
	need_root();
	ipc(0);
}

static void test_ipc_unprivileged(void **state)
{
	(void)state;
	need_native();
	need_root();
	ipc(NOBODY);
}

/* ----------------------------------------------- 8. hard links */

static void hard_links(uid_t uid)
{
	struct outcome o;
	char *store = outside_dir(uid), *blob, *other, *link_path, *script;
	int i;

	if (uid)
		assert_int_equal(chown(ws, uid, uid), 0);
	blob = make_file(store, "blob", "ORIGINAL\n", 0644, uid);
	other = make_file(store, "other", "OTHER\n", 0644, uid);
	/* one linked file in a folder, and a pnpm-like folder full of them */
	tu_write(ws, "node_modules/pkg/index.js", "own file\n");
	link_path = xstrfmt("%s/node_modules/pkg/blob", ws);
	assert_int_equal(link(blob, link_path), 0);
	for (i = 0; i < 20; i++) {
		char *src = xstrfmt("f%d", i), *dst = xstrfmt("%s/store/f%d", ws, i);
		char *s = make_file(store, src, "STORE\n", 0644, uid);

		tu_write(ws, "store/.keep", "");
		assert_int_equal(link(s, dst), 0);
		free(src);
		free(dst);
		free(s);
	}
	if (uid) {
		char *cmd = xstrfmt("chown -R %d:%d %s", (int)uid, (int)uid, ws);
		struct tu_result r;

		tu_run(&r, ARGV("sh", "-c", cmd), NULL, NULL, NULL);
		tu_result_release(&r);
		free(cmd);
	}

	script = xstrfmt("echo PWNED > node_modules/pkg/blob; echo PWNED >> node_modules/pkg/blob; "
			 "truncate -s 0 node_modules/pkg/blob; chmod 666 node_modules/pkg/blob; "
			 "echo PWNED > store/f3; echo mine > node_modules/pkg/index.js; "
			 "ln %s stolen; echo end", other);
	run_as(&o, uid, ws, NULL, ARGV("sh", "-c", script));
	assert_has(&o.out, "end");
	assert_true(count(o.err.buf, "Read-only file system") >= 5);
	/* a new link to a file outside cannot be made either */
	assert_has(&o.err, "Invalid cross-device link");
	outcome_release(&o);
	{
		char *c = tu_read(store, "blob"), *c3 = tu_read(store, "f3");
		char *own = tu_read(ws, "node_modules/pkg/index.js");
		char *stolen = xstrfmt("%s/stolen", ws);

		assert_string_equal(c, "ORIGINAL\n");
		assert_string_equal(c3, "STORE\n");
		assert_int_equal(mode_of(blob), 0644);
		/* files with one link are as writable as ever */
		assert_string_equal(own, "mine\n");
		assert_false(fsutil_exists(stolen));
		free(c);
		free(c3);
		free(own);
		free(stolen);
	}
	free(script);
	free(blob);
	free(other);
	free(link_path);
	tu_rmtree(store);
}

static void test_hard_links_root(void **state)
{
	(void)state;
	need_native();
	hard_links(0);
}

static void test_hard_links_unprivileged(void **state)
{
	(void)state;
	need_native();
	need_root();
	hard_links(NOBODY);
}

/* ------------------------------------------------- 9. limits */

static void set_cfg(char **field, const char *v)
{
	free(*field);
	*field = xstrdup(v);
}

static void limits(uid_t uid)
{
	struct outcome o;
	struct stat sb;
	char *big;

	if (uid)
		assert_int_equal(chown(ws, uid, uid), 0);
	/* memory: a cgroup for root here, RLIMIT_AS for others */
	set_cfg(&cfg.sandbox.memory_limit, "200m");
	run_as(&o, uid, ws, NULL, ARGV("sh", "-c", "head -c 1500m /dev/zero | tail -c 1400m | "
				       "wc -c"));
	assert_lacks(&o.out, "1468006400");
	if (!uid && sandbox_kernel_caps()->cgroup_memory)
		assert_has(&o.err, "forgex: the command ran out of memory: [sandbox] memory_limit "
			   "is 200m");
	else
		assert_has(&o.err, "memory exhausted");
	outcome_release(&o);
	set_cfg(&cfg.sandbox.memory_limit, "");

	/* disk: one file cannot exceed the budget (RLIMIT_FSIZE)... */
	set_cfg(&cfg.sandbox.max_write_bytes, "64m");
	run_as(&o, uid, ws, NULL, ARGV("sh", "-c", "head -c 6G /dev/zero > big"));
	assert_int_equal(o.exit_code, 128 + SIGXFSZ);
	outcome_release(&o);
	big = xstrfmt("%s/big", ws);
	assert_int_equal(stat(big, &sb), 0);
	assert_true(sb.st_size == 64LL << 20);
	unlink(big);
	/* ...and many files are stopped by the parent watching the file system */
	run_as(&o, uid, ws, NULL, ARGV("sh", "-c", "i=0; while [ $i -lt 100 ]; do "
				       "head -c 50m /dev/zero > w$i; i=$((i+1)); done; echo all"));
	assert_int_equal(o.write_limited, 1);
	assert_has(&o.err, "wrote more than 64m to the file system of");
	assert_lacks(&o.out, "all");
	outcome_release(&o);
	{
		struct tu_result r;
		long long kb;

		tu_run(&r, ARGV("sh", "-c", "du -sk . && rm -f w*"), ws, NULL, NULL);
		kb = atoll(r.out.buf);
		print_message("disk: writes stopped at %lld MiB (budget 64 MiB, asked 5000)\n",
			      kb >> 10);
		assert_true(kb < 1024LL * 1024);
		tu_result_release(&r);
	}
	/* fallocate takes blocks without writing: refused, so nothing escapes the count */
	run_as(&o, uid, ws, NULL, ARGV("sh", "-c", "fallocate -l 60m f1; fallocate -l 10g f2; "
				       "du -sk ."));
	assert_int_equal(count(o.err.buf, "Operation not supported"), 2);
	assert_true(atoll(o.out.buf) < 1024);
	outcome_release(&o);
	set_cfg(&cfg.sandbox.max_write_bytes, "8g");

	/* the private /tmp and /dev/shm have a size */
	set_cfg(&cfg.sandbox.tmp_size, "16m");
	run_as(&o, uid, ws, NULL, ARGV("sh", "-c", "head -c 64m /dev/zero > /tmp/fill; "
				       "head -c 64m /dev/zero > /dev/shm/x; echo end"));
	assert_int_equal(count(o.err.buf, "No space left on device"), 2);
	outcome_release(&o);
	set_cfg(&cfg.sandbox.tmp_size, "1g");
	free(big);
}

static void test_limits_root(void **state)
{
	(void)state;
	need_native();
	limits(0);
}

static void test_limits_unprivileged(void **state)
{
	(void)state;
	need_native();
	need_root();
	limits(NOBODY);
}

/* The defaults bound a runaway command without any configuration. */
static void test_limits_default(void **state)
{
	struct config c;
	struct executor ex;

	(void)state;
	config_init(&c);
	free(c.sandbox.backend);
	c.sandbox.backend = xstrdup("none");
	assert_int_equal(executor_init(&ex, &c, ws), 0);
	assert_true(ex.memory_limit == 4ULL << 30);
	assert_true(ex.max_write_bytes == 8ULL << 30);
	assert_true(ex.tmp_size == 1ULL << 30);
	assert_int_equal(ex.max_processes, 512);
	executor_release(&ex);
	config_release(&c);
}

/* ------------------------------ .git, .forgex, hidden places, TMPDIR */

static void test_git_and_forgex_read_only(void **state)
{
	struct tu_result r;
	struct outcome o;
	char *before, *after;

	(void)state;
	need_native();
	tu_run(&r, ARGV("git", "init", "-q", "."), ws, NULL, NULL);
	assert_int_equal(r.status, 0);
	tu_result_release(&r);
	tu_write(ws, ".forgex/checkpoints/HEAD", "ref\n");
	before = tu_read(ws, ".git/config");
	run_as(&o, 0, ws, NULL, ARGV("sh", "-c",
		"git config core.fsmonitor 'touch /var/tmp/pwned'; "
		"echo x > .git/hooks/post-checkout; rm -rf .git/objects; "
		"ln -s /etc .forgex/checkpoints/info; echo '[sandbox]' > .forgex/config.toml; "
		"mv .git git-moved; echo end"));
	assert_has(&o.out, "end");
	assert_has(&o.err, "Read-only file system");
	outcome_release(&o);
	after = tu_read(ws, ".git/config");
	assert_string_equal(before, after);
	assert_null(tu_read(ws, ".git/hooks/post-checkout"));
	assert_null(tu_read(ws, ".forgex/config.toml"));
	{
		char *objects = xstrfmt("%s/.git/objects", ws);

		assert_true(fsutil_is_dir(objects));
		free(objects);
	}
	free(before);
	free(after);
}

static void test_git_planted_where_missing(void **state)
{
	struct outcome o;
	char *git, *forgex;

	(void)state;
	need_native();
	run_as(&o, 0, ws, NULL, ARGV("sh", "-c",
		"mkdir .git && printf '[core]\\n\\tfsmonitor = touch /var/tmp/pwned\\n' > .git/config"
		" && mkdir .forgex && echo x > .forgex/config.toml && echo planted"));
	assert_has(&o.out, "planted");
	assert_has(&o.err, "forgex: the command created '");
	assert_has(&o.err, "/.git', which would steer git or forgex outside the sandbox");
	outcome_release(&o);
	git = xstrfmt("%s/.git", ws);
	forgex = xstrfmt("%s/.forgex", ws);
	assert_false(fsutil_exists(git));
	assert_false(fsutil_exists(forgex));
	free(git);
	free(forgex);
}

/*
 * Issue 20, item 3: a nested .git runs code at the user's next git status.
 * The workspace is a repository with a submodule that was never
 * initialised (a gitlink in the index, an empty sub/) and a nested
 * repository lib/ that exists when the executor starts. The command makes
 * sub/.git a repository whose core.fsmonitor is a script it wrote (and a
 * .git file pointing elsewhere in deep/x/, and tries lib/.git/config),
 * then the user runs a plain `git status` at the top on the host, as the
 * same uid: the script never runs, because forgex moved the .git entries
 * the command made away when it ended (native_mounts_quarantine()) and
 * lib/.git was read-only to it (bound so by the mount plan).
 */
static void nested_git(uid_t uid)
{
	struct outcome o;
	struct tu_result t;
	char *marker_dir = outside_dir(uid), *marker = xstrfmt("%s/pwned", marker_dir);
	char *setup = xstrfmt(
		"set -e; git init -q .; git config user.email t@e; git config user.name t;"
		" git init -q lib; echo data > lib/f; git -C lib add f;"
		" git -C lib -c user.email=t@e -c user.name=t commit -qm lib;"
		" printf '[submodule \"sub\"]\\n\\tpath = sub\\n\\turl = ./nowhere\\n' > .gitmodules;"
		" git update-index --add --cacheinfo 160000,$(git -C lib rev-parse HEAD),sub;"
		" mkdir sub; echo top > top.txt; git add .gitmodules top.txt; git commit -qm top");
	char *attack = xstrfmt(
		"printf '#!/bin/sh\\ntouch %s\\n' > hook.sh; chmod +x hook.sh;"
		" git init -q sub && git -C sub config core.fsmonitor \"$PWD/hook.sh\" && echo sub-made;"
		" mkdir -p deep/x elsewhere && git init -q --bare elsewhere/evil.git &&"
		" git -C elsewhere/evil.git config core.fsmonitor \"$PWD/hook.sh\" &&"
		" printf 'gitdir: ../../elsewhere/evil.git\\n' > deep/x/.git && echo file-made;"
		" printf '[core]\\n\\tfsmonitor = %%s\\n' \"$PWD/hook.sh\" >> lib/.git/config"
		" || echo lib-refused", marker);
	char *as_user = uid ? xstrfmt("%d", (int)uid) : NULL;
	const char *host_git[] = { "setpriv", "--reuid", as_user ? as_user : "0", "--regid",
				   as_user ? as_user : "0", "--clear-groups", "git", "status",
				   "--porcelain", NULL };
	const char *host_git_lib[] = { "setpriv", "--reuid", as_user ? as_user : "0", "--regid",
				       as_user ? as_user : "0", "--clear-groups", "git", "-C", "lib",
				       "status", "--porcelain", NULL };

	tu_run(&t, ARGV("sh", "-c", setup), ws, NULL, NULL);
	if (t.status)
		fail_msg("setup: %s%s", t.out.buf, t.err.buf);
	tu_result_release(&t);
	if (uid) {
		char *cmd = xstrfmt("chown -R %d:%d %s", (int)uid, (int)uid, ws);

		tu_run(&t, ARGV("sh", "-c", cmd), NULL, NULL, NULL);
		tu_result_release(&t);
		free(cmd);
	}
	run_as(&o, uid, ws, ARGV("GIT_CONFIG_NOSYSTEM=1"), ARGV("sh", "-c", attack));
	assert_has(&o.out, "sub-made");
	assert_has(&o.out, "file-made");
	/* lib/.git existed when the executor started: read-only to the command */
	assert_has(&o.out, "lib-refused");
	assert_has(&o.err, "Read-only file system");
	/* why: the .git entries the command made were moved away when it ended */
	assert_has(&o.err, "/sub/.git', which would steer git or forgex outside the sandbox; "
		   "it was moved to '");
	assert_has(&o.err, "/deep/x/.git', which would steer git");
	outcome_release(&o);
	{
		char *sub_git = xstrfmt("%s/sub/.git", ws), *deep_git = xstrfmt("%s/deep/x/.git", ws);

		assert_false(fsutil_exists(sub_git));
		assert_false(fsutil_exists(deep_git));
		free(sub_git);
		free(deep_git);
	}
	/* the user's plain git status at the top, and in the nested repository, on the host */
	tu_run(&t, host_git, ws, ARGV("GIT_CONFIG_NOSYSTEM=1"), NULL);
	assert_int_equal(t.status, 0);
	tu_result_release(&t);
	tu_run(&t, host_git_lib, ws, ARGV("GIT_CONFIG_NOSYSTEM=1"), NULL);
	tu_result_release(&t);
	{
		struct stat sb;

		if (stat(marker, &sb) == 0)
			fail_msg("git status on the host ran the command's fsmonitor script");
	}
	/* the same git status does run it when sub/.git is put back: the attack is real */
	{
		char *cmd = xstrfmt("for q in sub/.git-quarantined-by-forgex-*; do mv \"$q\" sub/.git; done");

		tu_run(&t, ARGV("sh", "-c", cmd), ws, NULL, NULL);
		tu_result_release(&t);
		free(cmd);
		tu_run(&t, host_git, ws, ARGV("GIT_CONFIG_NOSYSTEM=1"), NULL);
		tu_result_release(&t);
		assert_true(fsutil_exists(marker));
	}
	free(as_user);
	free(attack);
	free(setup);
	free(marker);
	tu_rmtree(marker_dir);
}

static void test_nested_git_root(void **state)
{
	(void)state;
	need_native();
	nested_git(0);
}

static void test_nested_git_unprivileged(void **state)
{
	(void)state;
	need_native();
	need_root();
	nested_git(NOBODY);
}

/* A .git the user makes between two commands is protected, not quarantined. */
static void test_git_made_by_user_between_commands(void **state)
{
	const char *true_argv[] = { "true", NULL };
	const char *write_argv[] = { "sh", "-c", "echo x >> .git/config", NULL };
	struct exec_request req = { true_argv, 1, NULL, 30000, NULL };
	struct exec_result r = EXEC_RESULT_INIT;
	struct executor ex;
	struct tu_result t;
	char *c;

	(void)state;
	need_native();
	assert_int_equal(executor_init(&ex, &cfg, ws), 0);
	assert_int_equal(executor_run(&r, &ex, &req), 0);
	assert_int_equal(r.exit_code, 0);
	exec_result_release(&r);
	tu_run(&t, ARGV("git", "init", "-q", "."), ws, NULL, NULL);
	assert_int_equal(t.status, 0);
	tu_result_release(&t);
	req.argv = write_argv;
	req.argc = 3;
	assert_int_equal(executor_run(&r, &ex, &req), 0);
	assert_int_not_equal(r.exit_code, 0);
	assert_has(&r.err, "Read-only file system");
	assert_lacks(&r.err, "quarantined");
	exec_result_release(&r);
	executor_release(&ex);
	c = tu_read(ws, ".git/config");
	assert_non_null(c);
	assert_null(strstr(c, "\nx\n"));
	free(c);
}

static void test_hidden_places(void **state)
{
	struct outcome o;
	char *home = outside_dir(0), *old_home = xstrdup(getenv("HOME"));

	(void)state;
	need_native();
	tu_write(home, ".ssh/id_ed25519", "SSHKEY\n");
	tu_write(home, ".aws/credentials", "AWSKEY\n");
	tu_write(home, ".netrc", "machine x password NETRC\n");
	tu_write(home, ".config/forgex/config.toml", "api = FORGEXCFG\n");
	tu_write(home, ".cargo/credentials.toml", "token = CARGOTOKEN\n");
	tu_write(home, ".cargo/bin/tool", "TOOLCHAIN\n");
	tu_write(home, ".pyenv/version", "PYENV\n");
	tu_write(home, "notes/secret.txt", "EXTRA\n");
	setenv("HOME", home, 1);
	strvec_push(&cfg.sandbox.hidden, "~/notes");
	run_as(&o, 0, ws, NULL, ARGV("sh", "-c",
		"cat ~/.ssh/id_ed25519 ~/.aws/credentials ~/.netrc ~/.config/forgex/config.toml "
		"~/.cargo/credentials.toml ~/notes/secret.txt; ls -A ~/.ssh; "
		"cat ~/.cargo/bin/tool ~/.pyenv/version; ls /dev; echo x > /dev/null && echo devnull"));
	setenv("HOME", old_home, 1);
	assert_lacks(&o.out, "SSHKEY");
	assert_lacks(&o.out, "AWSKEY");
	assert_lacks(&o.out, "NETRC");
	assert_lacks(&o.out, "FORGEXCFG");
	assert_lacks(&o.out, "CARGOTOKEN");
	assert_lacks(&o.out, "EXTRA");
	/* toolchains under home stay readable */
	assert_has(&o.out, "TOOLCHAIN");
	assert_has(&o.out, "PYENV");
	/* a /dev of its own: no disks to read the hidden files from, no kmsg */
	assert_has(&o.out, "devnull");
	assert_lacks(&o.out, "kmsg");
	assert_lacks(&o.out, "loop");
	assert_lacks(&o.out, "autofs");
	outcome_release(&o);
	free(old_home);
	tu_rmtree(home);
}

/* Where a fresh /proc cannot be mounted (a container masking parts of it), native still runs. */
static void test_fresh_proc_or_not(void **state)
{
	struct outcome o;
	int own, host;

	(void)state;
	need_native();
	run_as(&o, 0, ws, NULL, ARGV("sh", "-c", "ls /proc | grep -c '^[0-9]'"));
	own = atoi(o.out.buf);
	outcome_release(&o);
	sandbox_probe_mask(SB_FEAT_FRESH_PROC);
	run_as(&o, 0, ws, NULL, ARGV("sh", "-c", "ls /proc | grep -c '^[0-9]'"));
	host = atoi(o.out.buf);
	outcome_release(&o);
	sandbox_probe_mask(0);
	if (sandbox_kernel_caps()->mount_fs & SB_MOUNT_PROC)
		assert_true(own > 0 && own < 10);	/* sh, ls, grep and the supervisor */
	assert_true(host > own);
}

/* A SIGKILLed forgex leaves its host TMPDIR (no mount namespace): the next one collects it. */
static void test_stale_tmpdir_collected(void **state)
{
	struct outcome o;
	const char *base = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	char *dead, *alive;
	pid_t pid;

	(void)state;
	need_native();
	pid = fork();
	if (!pid)
		_exit(0);
	waitpid(pid, NULL, 0);
	dead = xstrfmt("forgex-tmp-%ld-AbCdEf", (long)pid);
	alive = xstrfmt("forgex-tmp-1-AbCdEf");
	{
		char *l1 = xstrfmt("%s/left", dead), *l2 = xstrfmt("%s/left", alive);

		tu_write(base, l1, "x");
		tu_write(base, l2, "x");
		free(l1);
		free(l2);
	}
	sandbox_probe_mask(SB_FEAT_MNTNS);
	cfg.sandbox.allow_unconfined = 1;
	run_as(&o, 0, ws, NULL, ARGV("sh", "-c", "echo $TMPDIR"));
	assert_has(&o.out, "/forgex-tmp-");
	outcome_release(&o);
	sandbox_probe_mask(0);
	{
		char *d = xstrfmt("%s/%s", base, dead), *a = xstrfmt("%s/%s", base, alive);

		assert_false(fsutil_exists(d));
		assert_true(fsutil_exists(a));
		tu_rmtree(a);
		free(d);
	}
	free(dead);
	free(alive);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_metadata_outside_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metadata_outside_unprivileged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metadata_inside_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_metadata_inside_unprivileged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sockets_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sockets_unprivileged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sockets_git_credential_cache_and_ssh_agent,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_ipc_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ipc_unprivileged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hard_links_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hard_links_unprivileged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limits_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limits_unprivileged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_limits_default, setup, teardown),
		cmocka_unit_test_setup_teardown(test_git_and_forgex_read_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_git_planted_where_missing, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nested_git_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_nested_git_unprivileged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_git_made_by_user_between_commands, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_hidden_places, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fresh_proc_or_not, setup, teardown),
		cmocka_unit_test_setup_teardown(test_stale_tmpdir_collected, setup, teardown),
	};

	if (argc > 2 && !strcmp(argv[1], "attack"))
		return attack(argc - 2, argv + 2);
	place_helper();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
