/* The real binary: forgex checkpoint create|list|restore and forgex diff. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fsutil.h"
#include "base/path.h"
#include "helpers/testutil.h"
#include "unit/vcs/vcs_testutil.h"

/* Run forgex in `cwd` with NULL-terminated arguments. */
static void fx(struct tu_result *r, const char *cwd, const char *const *env, ...)
{
	const char *argv[32];
	va_list ap;
	int n = 0;

	argv[n++] = tu_forgex();
	va_start(ap, env);
	while (n < 31 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	tu_run(r, argv, cwd, env, NULL);
}

static void expect_ok(struct tu_result *r, const char *what)
{
	if (r->status != 0)
		fprintf(stderr, "%s: status %d\nstdout: %s\nstderr: %s\n", what, r->status,
			r->out.buf, r->err.buf);
	assert_int_equal(r->status, 0);
}

static json_t *parse(const struct buf *b)
{
	json_error_t e;
	json_t *j = json_loadb(b->buf, b->len, 0, &e);

	if (!j)
		fprintf(stderr, "not JSON (%s): %s\n", e.text, b->buf);
	assert_non_null(j);
	return j;
}

/*
 * The whole story on a real repository through the binary: checkpoint,
 * agent-like edits, diff, restore; the tree is back byte for byte and git
 * sees nothing (state and .git bytes).
 */
static void test_e2e_checkpoint_restore_repository(void **state)
{
	char *ws = vt_make_repo(), *dotgit = xstrfmt("%s/.git", ws), *id, *c;
	struct buf tree1 = BUF_INIT, tree2 = BUF_INIT, git1 = BUF_INIT, git2 = BUF_INIT;
	struct buf d1 = BUF_INIT, d2 = BUF_INIT;
	struct tu_result r;
	json_t *j, *list;

	(void)state;
	vt_git_state(&git1, ws);
	vt_manifest(&d1, dotgit, VT_TIMES | VT_ALL);
	vt_manifest(&tree1, ws, 0);

	fx(&r, ws, NULL, "checkpoint", "create", "-m", "before the agent", "--json", NULL);
	expect_ok(&r, "checkpoint create");
	j = parse(&r.out);
	assert_string_equal(json_string_value(json_object_get(j, "message")), "before the agent");
	assert_int_equal(json_integer_value(json_object_get(j, "files")), 7);
	id = xstrdup(json_string_value(json_object_get(j, "short_id")));
	assert_int_equal(strlen(id), 12);
	json_decref(j);
	tu_result_release(&r);

	tu_write(ws, "src/util.c", "int util(void) { return 7; }\n");
	vt_rm(ws, "docs");
	tu_write(ws, "added/deep/file.txt", "new\n");
	vt_chmod(ws, "run.sh", 0600);
	vt_rm(ws, "README.md");
	vt_symlink(ws, "README.md", "/etc/passwd");
	tu_write(ws, "build/more.o", "ignored\n");

	fx(&r, ws, NULL, "diff", "--color=never", NULL);
	expect_ok(&r, "diff");
	assert_non_null(strstr(r.out.buf, "+int util(void) { return 7; }\n"));
	assert_non_null(strstr(r.out.buf, "deleted file mode 100644\nindex "));
	assert_non_null(strstr(r.out.buf, "+++ b/added/deep/file.txt\n"));
	assert_non_null(strstr(r.out.buf, "old mode 100755\nnew mode 100644\n"));
	assert_non_null(strstr(r.out.buf, "+/etc/passwd\n"));
	assert_null(strstr(r.out.buf, "more.o"));
	assert_null(strstr(r.out.buf, "\033["));
	tu_result_release(&r);

	fx(&r, ws, NULL, "checkpoint", "restore", id, NULL);
	expect_ok(&r, "checkpoint restore");
	assert_non_null(strstr(r.out.buf, "restored checkpoint"));
	tu_result_release(&r);

	c = tu_read(ws, "build/more.o");	/* ignored: left alone */
	assert_string_equal(c, "ignored\n");
	free(c);
	vt_rm(ws, "build/more.o");
	vt_manifest(&tree2, ws, 0);
	vt_assert_same(&tree1, &tree2, "working tree");
	vt_manifest(&d2, dotgit, VT_TIMES | VT_ALL);
	vt_assert_same(&d1, &d2, ".git");
	vt_git_state(&git2, ws);
	vt_assert_same(&git1, &git2, "git state");

	fx(&r, ws, NULL, "diff", id, NULL);
	expect_ok(&r, "diff after restore");
	assert_int_equal(r.out.len, 0);
	tu_result_release(&r);

	fx(&r, ws, NULL, "checkpoint", "list", "--json", NULL);
	expect_ok(&r, "checkpoint list");
	list = parse(&r.out);
	assert_int_equal(json_array_size(list), 2);
	c = xstrfmt("before restore of %.12s", id);
	assert_string_equal(json_string_value(json_object_get(json_array_get(list, 0), "message")), c);
	free(c);
	assert_string_equal(json_string_value(json_object_get(json_array_get(list, 1), "short_id")), id);
	json_decref(list);
	tu_result_release(&r);

	fx(&r, ws, NULL, "checkpoint", "list", NULL);
	expect_ok(&r, "checkpoint list");
	assert_non_null(strstr(r.out.buf, "before the agent\n"));
	assert_non_null(strstr(r.out.buf, id));
	tu_result_release(&r);

	free(id);
	free(dotgit);
	buf_release(&tree1);
	buf_release(&tree2);
	buf_release(&git1);
	buf_release(&git2);
	buf_release(&d1);
	buf_release(&d2);
	tu_rmtree(ws);
}

static void test_e2e_errors_and_usage(void **state)
{
	char *ws = tu_mkdtemp();
	struct tu_result r;

	(void)state;
	tu_write(ws, "f.txt", "x\n");
	fx(&r, ws, NULL, "diff", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "no checkpoints yet"));
	tu_result_release(&r);
	fx(&r, ws, NULL, "checkpoint", "create", NULL);
	expect_ok(&r, "create");
	assert_non_null(strstr(r.out.buf, "(1 file): checkpoint\n"));
	tu_result_release(&r);

	fx(&r, ws, NULL, "checkpoint", "restore", "deadbeef", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "no checkpoint 'deadbeef'"));
	tu_result_release(&r);
	fx(&r, ws, NULL, "checkpoint", "restore", "not-hex", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "is not a checkpoint id"));
	tu_result_release(&r);

	fx(&r, ws, NULL, "checkpoint", NULL);
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "usage: forgex checkpoint"));
	tu_result_release(&r);
	fx(&r, ws, NULL, "checkpoint", "frob", NULL);
	assert_int_equal(r.status, 2);
	tu_result_release(&r);
	fx(&r, ws, NULL, "checkpoint", "restore", NULL);
	assert_int_equal(r.status, 2);
	tu_result_release(&r);
	fx(&r, ws, NULL, "checkpoint", "list", "extra", NULL);
	assert_int_equal(r.status, 2);
	tu_result_release(&r);
	fx(&r, ws, NULL, "diff", "a", "b", NULL);
	assert_int_equal(r.status, 2);
	tu_result_release(&r);
	fx(&r, ws, NULL, "diff", "--color=sometimes", NULL);
	assert_int_equal(r.status, 2);
	tu_result_release(&r);
	fx(&r, ws, NULL, "checkpoint", "--help", NULL);
	expect_ok(&r, "help");
	assert_non_null(strstr(r.out.buf, "forgex checkpoint restore ID"));
	tu_result_release(&r);
	fx(&r, ws, NULL, "help", "diff", NULL);
	expect_ok(&r, "help diff");
	assert_non_null(strstr(r.out.buf, "--stat"));
	tu_result_release(&r);
	tu_rmtree(ws);
}

static void test_e2e_diff_color_and_stat(void **state)
{
	char *ws = tu_mkdtemp();
	static const char *const no_color[] = { "NO_COLOR=1", NULL };
	struct tu_result r;

	(void)state;
	tu_write(ws, "a.txt", "old\n");
	fx(&r, NULL, NULL, "-C", ws, "checkpoint", "create", "-m", "x", NULL);
	expect_ok(&r, "create");
	tu_result_release(&r);
	tu_write(ws, "a.txt", "new\n");
	fx(&r, ws, NULL, "diff", "--color=always", NULL);
	expect_ok(&r, "diff");
	assert_non_null(strstr(r.out.buf, "\033[32m+new\033[m"));
	tu_result_release(&r);
	fx(&r, ws, NULL, "diff", "--color", NULL);
	expect_ok(&r, "diff");
	assert_non_null(strstr(r.out.buf, "\033[31m-old\033[m"));
	tu_result_release(&r);
	/* auto: stdout is a pipe here, so no colour (and none under NO_COLOR) */
	fx(&r, ws, no_color, "diff", "--color=auto", NULL);
	expect_ok(&r, "diff");
	assert_null(strstr(r.out.buf, "\033["));
	assert_non_null(strstr(r.out.buf, "-old\n+new\n"));
	tu_result_release(&r);
	fx(&r, ws, NULL, "diff", "--stat", NULL);
	expect_ok(&r, "diff --stat");
	assert_non_null(strstr(r.out.buf, " a.txt | 2 +-\n 1 file changed, 1 insertion(+), 1 deletion(-)\n"));
	tu_result_release(&r);
	tu_rmtree(ws);
}

/* The user's global core.excludesFile (from $HOME/.gitconfig) applies in a repository. */
static void test_e2e_global_excludes_file(void **state)
{
	char *ws = tu_mkdtemp(), *home = tu_mkdtemp(), *cfg, *c;
	const char *env[3];
	struct tu_result r;
	char *home_env;

	(void)state;
	cfg = xstrfmt("[core]\n\texcludesFile = %s/global-ignore\n", home);
	tu_write(home, ".gitconfig", cfg);
	tu_write(home, "global-ignore", "*.swp\n");
	home_env = xstrfmt("HOME=%s", home);
	env[0] = home_env;
	env[1] = "XDG_CONFIG_HOME";
	env[2] = NULL;
	vt_git(ws, "init", "-q");
	tu_write(ws, "code.c", "code\n");
	tu_write(ws, "code.c.swp", "swap 1\n");
	fx(&r, ws, env, "checkpoint", "create", "--json", NULL);
	expect_ok(&r, "create");
	assert_non_null(strstr(r.out.buf, "\"files\": 1"));
	tu_result_release(&r);
	tu_write(ws, "code.c.swp", "swap 2\n");
	tu_write(ws, "code.c", "changed\n");
	fx(&r, ws, env, "diff", NULL);
	expect_ok(&r, "diff");
	assert_null(strstr(r.out.buf, "swp"));
	tu_result_release(&r);
	fx(&r, ws, env, "checkpoint", "list", "--json", NULL);
	expect_ok(&r, "list");
	{
		json_t *l = parse(&r.out);
		const char *id = json_string_value(json_object_get(json_array_get(l, 0), "id"));
		struct tu_result r2;

		fx(&r2, ws, env, "checkpoint", "restore", id, NULL);
		expect_ok(&r2, "restore");
		tu_result_release(&r2);
		json_decref(l);
	}
	tu_result_release(&r);
	c = tu_read(ws, "code.c.swp");
	assert_string_equal(c, "swap 2\n");
	free(c);
	c = tu_read(ws, "code.c");
	assert_string_equal(c, "code\n");
	free(c);
	free(cfg);
	free(home_env);
	tu_rmtree(home);
	tu_rmtree(ws);
}

/* Several forgex processes at once on one workspace: every checkpoint lands, in a chain. */
static void test_e2e_concurrent_creates(void **state)
{
	char *ws = tu_mkdtemp();
	struct tu_result r;
	pid_t pids[6];
	json_t *list;
	size_t i;

	(void)state;
	for (i = 0; i < 50; i++) {
		char name[32];

		snprintf(name, sizeof(name), "d%zu/f%zu.txt", i % 7, i);
		tu_write(ws, name, name);
	}
	for (i = 0; i < ARRAY_SIZE(pids); i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (!pids[i]) {
			struct tu_result cr;
			char msg[16];

			snprintf(msg, sizeof(msg), "p%zu", i);
			fx(&cr, ws, NULL, "checkpoint", "create", "-m", msg, NULL);
			_exit(cr.status);
		}
	}
	for (i = 0; i < ARRAY_SIZE(pids); i++) {
		int st;

		assert_int_equal(waitpid(pids[i], &st, 0), pids[i]);
		assert_true(WIFEXITED(st));
		assert_int_equal(WEXITSTATUS(st), 0);
	}
	fx(&r, ws, NULL, "checkpoint", "list", "--json", NULL);
	expect_ok(&r, "list");
	list = parse(&r.out);
	assert_int_equal(json_array_size(list), ARRAY_SIZE(pids));
	json_decref(list);
	tu_result_release(&r);
	tu_rmtree(ws);
}

/* Start forgex with NULL-terminated arguments in `cwd`, not waiting. */
static pid_t fx_start(const char *cwd, ...)
{
	const char *argv[16];
	va_list ap;
	int n = 0;
	pid_t pid;

	argv[n++] = tu_forgex();
	va_start(ap, cwd);
	while (n < 15 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 1);
		dup2(null, 2);
		if (chdir(cwd) < 0)
			_exit(127);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* Run forgex under timeout(1): a command stuck on a damaged store fails the test. */
static void fx_bounded(struct tu_result *r, const char *cwd, ...)
{
	const char *argv[20];
	va_list ap;
	int n = 0;

	argv[n++] = "timeout";
	argv[n++] = "-s";
	argv[n++] = "KILL";
	argv[n++] = "30";
	argv[n++] = tu_forgex();
	va_start(ap, cwd);
	while (n < 19 && (argv[n] = va_arg(ap, const char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	tu_run(r, argv, cwd, NULL, NULL);
	if (r->status == 128 + 9 || r->status == 124)
		fprintf(stderr, "forgex %s hung (killed after 30 s)\n", argv[5]);
	assert_int_not_equal(r->status, 128 + 9);
	assert_int_not_equal(r->status, 124);
}

static char *first_id(const char *ws)
{
	struct tu_result r;
	json_t *list;
	char *id;

	fx(&r, ws, NULL, "checkpoint", "list", "--json", NULL);
	expect_ok(&r, "list");
	list = parse(&r.out);
	id = xstrdup(json_string_value(json_object_get(
		json_array_get(list, json_array_size(list) - 1), "id")));
	json_decref(list);
	tu_result_release(&r);
	return id;
}

/*
 * SIGKILL at many moments of a checkpoint (in the middle of writing
 * objects, the index — index.lock held — or the ref), and once more with
 * an index.lock left behind for certain: afterwards create, list, diff
 * and restore all work, and the restore puts the tree back byte for byte.
 */
static void test_e2e_sigkill_then_commands_work(void **state)
{
	static const int delays_ms[] = { 5, 20, 40, 80, 150, 300 };
	char *ws = tu_mkdtemp(), *id;
	struct buf before = BUF_INIT, after = BUF_INIT;
	struct tu_result r;
	size_t i, k;

	(void)state;
	vt_git(ws, "init", "-q");
	for (i = 0; i < 1500; i++) {
		char name[32], content[64];

		snprintf(name, sizeof(name), "d%zu/f%zu.txt", i % 30, i);
		snprintf(content, sizeof(content), "content of file %zu\n", i);
		tu_write(ws, name, content);
	}
	fx(&r, ws, NULL, "checkpoint", "create", "-m", "base", NULL);
	expect_ok(&r, "create base");
	tu_result_release(&r);
	vt_manifest(&before, ws, 0);
	id = first_id(ws);
	for (k = 0; k < ARRAY_SIZE(delays_ms); k++) {
		struct timespec ts = { 0, delays_ms[k] * 1000L * 1000L };
		pid_t pid;
		int st;

		/* every file changed: the capture has real work to be killed in */
		for (i = 0; i < 1500; i += 7) {
			char name[32], content[64];

			snprintf(name, sizeof(name), "d%zu/f%zu.txt", i % 30, i);
			snprintf(content, sizeof(content), "round %zu of file %zu\n", k, i);
			tu_write(ws, name, content);
		}
		pid = fx_start(ws, "checkpoint", "create", "-m", "killed", NULL);
		nanosleep(&ts, NULL);
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &st, 0), pid);
	}
	/* and the case of the issue for certain: a lock left by a dead process */
	tu_write(ws, ".forgex/checkpoints/index.lock", "");
	fx_bounded(&r, ws, "checkpoint", "create", "-m", "after the kills", NULL);
	expect_ok(&r, "create after SIGKILL");
	tu_result_release(&r);
	tu_write(ws, ".forgex/checkpoints/index.lock", "");
	fx_bounded(&r, ws, "checkpoint", "list", NULL);
	expect_ok(&r, "list after SIGKILL");
	tu_result_release(&r);
	tu_write(ws, ".forgex/checkpoints/index.lock", "");
	fx_bounded(&r, ws, "diff", "--stat", NULL);
	expect_ok(&r, "diff after SIGKILL");
	tu_result_release(&r);
	tu_write(ws, ".forgex/checkpoints/index.lock", "");
	fx_bounded(&r, ws, "checkpoint", "restore", id, NULL);
	expect_ok(&r, "restore after SIGKILL");
	tu_result_release(&r);
	vt_manifest(&after, ws, 0);
	vt_assert_same(&before, &after, "tree after the kills and a restore");
	free(id);
	buf_release(&before);
	buf_release(&after);
	tu_rmtree(ws);
}

/*
 * A half-written loose object, as a crash leaves it: every checkpoint
 * command returns (libgit2 spun forever in inflate()), with a clear error
 * where the object is needed and without one where it is not.
 */
static void test_e2e_truncated_object_no_hang(void **state)
{
	char *ws = tu_mkdtemp(), *id, *obj;
	struct tu_result r;
	struct buf before = BUF_INIT, after = BUF_INIT;

	(void)state;
	tu_write(ws, "a.txt", "one\n");
	fx(&r, ws, NULL, "checkpoint", "create", "-m", "one", NULL);
	expect_ok(&r, "create");
	tu_result_release(&r);
	id = first_id(ws);
	obj = xstrfmt("%s/.forgex/checkpoints/objects/%.2s/%s", ws, id, id + 2);
	assert_int_equal(chmod(obj, 0644), 0);
	assert_int_equal(truncate(obj, 40), 0);
	tu_write(ws, "a.txt", "two\n");
	vt_manifest(&before, ws, VT_TIMES);
	fx_bounded(&r, ws, "checkpoint", "list", NULL);
	assert_int_not_equal(r.status, 0);
	assert_non_null(strstr(r.err.buf, "damaged"));
	tu_result_release(&r);
	fx_bounded(&r, ws, "diff", NULL);
	assert_int_not_equal(r.status, 0);
	assert_non_null(strstr(r.err.buf, "damaged"));
	tu_result_release(&r);
	fx_bounded(&r, ws, "checkpoint", "restore", id, NULL);
	assert_int_not_equal(r.status, 0);
	assert_non_null(strstr(r.err.buf, "damaged"));
	tu_result_release(&r);
	vt_manifest(&after, ws, VT_TIMES);
	vt_assert_same(&before, &after, "tree after the refused commands");
	fx_bounded(&r, ws, "checkpoint", "create", "-m", "new chain", NULL);
	expect_ok(&r, "create after the damage");
	tu_result_release(&r);
	free(obj);
	free(id);
	buf_release(&before);
	buf_release(&after);
	tu_rmtree(ws);
}

/*
 * As a user meets it: a repository that commits .forgex/config.toml, a
 * run's edits, an empty folder gone and a new one made; `checkpoint
 * restore` (what a failed run's rollback and `undo` do) puts the tree back
 * byte for byte and leaves the committed config as the user has it.
 */
static void test_e2e_restore_with_committed_config_and_empty_folders(void **state)
{
	char *ws = tu_mkdtemp(), *id, *c;
	struct buf before = BUF_INIT, after = BUF_INIT, p = BUF_INIT;
	struct tu_result r;

	(void)state;
	vt_git(ws, "init", "-q");
	tu_write(ws, ".forgex/config.toml", "[pipeline]\n");
	tu_write(ws, "calc.py", "def add(a, b):\n    return a + b\n");
	vt_git(ws, "add", "-A");
	vt_git(ws, "commit", "-q", "-m", "project");
	path_join(&p, ws, "data/empty");
	assert_int_equal(fsutil_mkdir_p(p.buf, 0755), 0);
	vt_manifest(&before, ws, 0);
	fx(&r, ws, NULL, "checkpoint", "create", "-m", "before the run", NULL);
	expect_ok(&r, "create");
	tu_result_release(&r);
	id = first_id(ws);
	tu_write(ws, "calc.py", "def add(a, b):\n    return a - b\n");
	tu_write(ws, "new_module.py", "x = 1\n");
	vt_rm(ws, "data/empty");
	buf_reset(&p);
	path_join(&p, ws, "made/by/the/run");
	assert_int_equal(fsutil_mkdir_p(p.buf, 0755), 0);
	tu_write(ws, ".forgex/config.toml", "[pipeline]\n# edited by the user meanwhile\n");
	fx(&r, ws, NULL, "checkpoint", "restore", id, NULL);
	expect_ok(&r, "restore");
	tu_result_release(&r);
	c = tu_read(ws, ".forgex/config.toml");
	assert_string_equal(c, "[pipeline]\n# edited by the user meanwhile\n");
	free(c);
	vt_manifest(&after, ws, 0);
	vt_assert_same(&before, &after, "the tree after the restore");
	free(id);
	buf_release(&before);
	buf_release(&after);
	buf_release(&p);
	tu_rmtree(ws);
}

/* Run `forgex checkpoint create --json` in `ws`: its peak RSS in KiB and wall time in ms. */
static void create_measured(const char *ws, long *maxrss_kb, long *ms)
{
	struct rusage ru;
	struct timespec a, b;
	int status;
	pid_t pid;

	clock_gettime(CLOCK_MONOTONIC, &a);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		if (chdir(ws) < 0)
			_exit(126);
		dup2(null, 1);
		execl(tu_forgex(), tu_forgex(), "-q", "checkpoint", "create", "-m", "sparse", NULL);
		_exit(127);
	}
	assert_int_equal(wait4(pid, &status, 0, &ru), pid);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	*maxrss_kb = ru.ru_maxrss;
	*ms = (b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000;
}

/*
 * Peak RSS of a checkpoint, whatever the files: 64 MiB. AddressSanitizer's
 * shadow memory and quarantine add a constant of their own (about 140 MiB
 * seen), so a sanitizer build gets a bound that still catches a file read
 * whole (2 GiB).
 */
#if defined(__SANITIZE_ADDRESS__)
#define RSS_BOUND_KIB (512 * 1024)
#else
#define RSS_BOUND_KIB (64 * 1024)
#endif

/*
 * The sparse-file attack (issue 20): a sandboxed command makes a 2 GiB
 * sparse file that uses no disk; the next checkpoint must neither read it
 * into memory nor take long. It is larger than [checkpoints]
 * max_file_bytes, so it is listed as too large, and a restore of that
 * checkpoint leaves it as it is and says so. A holey file under the limit
 * (over the streaming threshold) is stored and restored byte for byte.
 */
static void test_e2e_sparse_file_bounded_memory(void **state)
{
	char *ws = vt_make_repo(), *big = xstrfmt("%s/big.bin", ws), *holey, *id, *before, *after;
	struct tu_result r;
	struct stat st;
	long rss, ms;
	json_t *j;
	int fd;

	(void)state;
	fx(&r, ws, NULL, "-q", "exec", "--", "truncate", "-s", "2G", "big.bin", NULL);
	expect_ok(&r, "sandboxed truncate");
	tu_result_release(&r);
	assert_int_equal(stat(big, &st), 0);
	assert_int_equal(st.st_size, (off_t)2 << 30);

	/* 6 MiB with data at both ends and a hole between: streamed, holes not read */
	holey = xstrfmt("%s/holey.bin", ws);
	fd = open(holey, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(pwrite(fd, "head", 4, 0), 4);
	assert_int_equal(pwrite(fd, "tail", 4, ((off_t)6 << 20) - 4), 4);
	close(fd);
	before = tu_read(ws, "holey.bin");

	create_measured(ws, &rss, &ms);
	fprintf(stderr, "checkpoint with a 2 GiB sparse file: %ld KiB peak RSS, %ld ms\n", rss, ms);
	assert_true(rss < RSS_BOUND_KIB);
	assert_true(ms < 20000);

	fx(&r, ws, NULL, "checkpoint", "list", "--json", NULL);
	expect_ok(&r, "checkpoint list");
	j = parse(&r.out);
	id = xstrdup(json_string_value(json_object_get(json_array_get(j, 0), "short_id")));
	json_decref(j);
	tu_result_release(&r);

	tu_write(ws, "holey.bin", "changed\n");
	fx(&r, ws, NULL, "checkpoint", "restore", id, NULL);
	expect_ok(&r, "checkpoint restore");
	assert_non_null(strstr(r.out.buf, "not restored: 'big.bin' (2147483648 bytes) was too large "
				      "to record (over [checkpoints] max_file_bytes); left as it is"));
	tu_result_release(&r);
	assert_int_equal(stat(big, &st), 0);
	assert_int_equal(st.st_size, (off_t)2 << 30);
	assert_int_equal(stat(holey, &st), 0);
	assert_int_equal(st.st_size, (off_t)6 << 20);
	after = tu_read(ws, "holey.bin");
	assert_memory_equal(before, after, (size_t)6 << 20);

	/*
	 * The limit is a setting: at 1 MiB the holey file is too large as
	 * well. It is in no backup now, so the checkpoint's version is not
	 * written over it: it is left as it is, and listed.
	 */
	fx(&r, ws, (const char *const[]){ "FORGEX_CHECKPOINTS_MAX_FILE_BYTES=1048576", NULL },
	   "checkpoint", "create", "-m", "small limit", NULL);
	expect_ok(&r, "checkpoint create with a small limit");
	tu_result_release(&r);
	fx(&r, ws, (const char *const[]){ "FORGEX_CHECKPOINTS_MAX_FILE_BYTES=1048576", NULL },
	   "checkpoint", "restore", "--json", id, NULL);
	expect_ok(&r, "checkpoint restore --json");
	j = parse(&r.out);
	assert_int_equal(json_array_size(json_object_get(j, "too_large")), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
				    json_object_get(j, "too_large"), 0), "path")), "big.bin");
	assert_string_equal(json_string_value(json_object_get(json_array_get(
				    json_object_get(j, "too_large"), 1), "path")), "holey.bin");
	json_decref(j);
	tu_result_release(&r);

	free(before);
	free(after);
	free(id);
	free(holey);
	free(big);
	free(ws);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_e2e_checkpoint_restore_repository),
		cmocka_unit_test(test_e2e_errors_and_usage),
		cmocka_unit_test(test_e2e_diff_color_and_stat),
		cmocka_unit_test(test_e2e_global_excludes_file),
		cmocka_unit_test(test_e2e_concurrent_creates),
		cmocka_unit_test(test_e2e_sigkill_then_commands_work),
		cmocka_unit_test(test_e2e_truncated_object_no_hang),
		cmocka_unit_test(test_e2e_restore_with_committed_config_and_empty_folders),
		cmocka_unit_test(test_e2e_sparse_file_bounded_memory),
	};

	return cmocka_run_group_tests_name("e2e/checkpoint", tests, vt_group_setup, vt_group_teardown);
}
