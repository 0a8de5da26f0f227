/*
 * forgex batch, end to end: 20 tasks on generated repositories against
 * four mock model servers, one per kind of task, each answering by the
 * role it is asked as (its script is "on_match" only, so any number of
 * tasks may talk to it at once, in any order):
 *   pass    the Builder fixes add(), the Supervisor says PASS;
 *   fail    the Builder breaks add() another way, the Supervisor says FAIL
 *           (the run rolls back);
 *   refuse  the Builder asks run_command for `sudo ls` (the policy's deny
 *           list refuses it), finishes, and the Supervisor says FAIL;
 *   hang    the model never answers: the task passes its wall time.
 * The batch runs with -j 4, is killed with SIGKILL midway and run again;
 * meanwhile the same tasks run as 4 shard processes of -j 2
 * (JOB_COMPLETION_INDEX 0..3, as an Indexed Job's pods would), which are
 * merged with `batch collect` and compared with the one batch's results.
 * The shards start with the one batch rather than after it: each has a
 * hang task that waits out its wall time, and one after the other the
 * two waits made this the longest suite of `make test`.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/strvec.h"
#include "batch/task.h"
#include "helpers/scripted.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"

#define NTASKS 20
#define NREPOS 4
#define WALL "25"

extern char **environ;

enum kind { K_PASS, K_FAIL, K_REFUSE, K_HANG, K__N };
static const char *const kind_names[] = { "pass", "fail", "refuse", "hang" };
static const char *const kind_status[] = { "PASS", "FAIL", "FAIL", "TIMEOUT" };

#define PLAN "{\"id\": \"ar\", \"name\": \"submit_plan\", \"arguments\": {\"summary\": \"Fix add\"," \
	" \"steps\": [{\"id\": \"1\", \"title\": \"fix\", \"description\": \"a + b\"," \
	" \"files\": [\"calc.py\"]}], \"acceptance\": [\"test_add passes\"]}}"
#define FINISH(id) "{\"id\": \"" id "\", \"name\": \"finish\", \"arguments\": {\"summary\": \"done\"}}"
#define VERDICT(v) "{\"id\": \"sv\", \"name\": \"submit_verdict\", \"arguments\": {\"verdict\": \"" v \
	"\", \"reasons\": [\"r\"], \"required_fixes\": []}}"
#define EDIT(to) "{\"id\": \"bx-edit-1\", \"name\": \"edit_file\", \"arguments\": {\"path\": \"calc.py\"," \
	" \"old_string\": \"return a - b\", \"new_string\": \"" to "\"}}"
#define SUDO "{\"id\": \"bx-sudo-1\", \"name\": \"run_command\", \"arguments\": {\"argv\": [\"sudo\", \"ls\"]}}"

/* First match wins: the later roles first, the Builder's second turn before its first. */
#define ROLES(verdict, marker, first) \
	"{\"on_match\": [" \
	"{\"body_contains\": \"You are the Supervisor\", \"tool_calls\": [" VERDICT(verdict) "]}," \
	"{\"body_contains\": \"You are the Expert Coder\", \"tool_calls\": [" FINISH("ex") "]}," \
	"{\"body_contains\": \"" marker "\", \"tool_calls\": [" FINISH("bf") "]}," \
	"{\"body_contains\": \"You are the Builder\", \"tool_calls\": [" first "]}," \
	"{\"body_contains\": \"You are the Architect\", \"tool_calls\": [" PLAN "]}" \
	"], \"steps\": []}"

static const char *const scripts[] = {
	ROLES("PASS", "bx-edit-1", EDIT("return a + b")),
	ROLES("FAIL", "bx-edit-1", EDIT("return a * b")),
	ROLES("FAIL", "bx-sudo-1", SUDO),
	"{\"steps\": [{\"hang\": true, \"repeat\": -1}]}",
};

static struct mock mocks[K__N];
static struct sc_proj proj;		/* the user's configuration (HOME) */
static char *root;			/* repositories, tasks, results */
static char *commits[NREPOS][2];

static void shards_stop(void);

static enum kind kind_of(int i)
{
	return i == 7 ? K_HANG : i == 12 ? K_REFUSE : i % 2 ? K_FAIL : K_PASS;
}

/* NREPOS repositories of two commits each, add() wrong in both. */
static void make_repos(void)
{
	int r;

	for (r = 0; r < NREPOS; r++) {
		char *dir = tu_fmt("%s/repo%d", root, r);

		fsutil_mkdir_p(dir, 0755);
		tu_write(dir, "calc.py", "def add(a, b):\n    return a - b\n");
		tu_write(dir, "test_calc.py", "import unittest\nfrom calc import add\n\n\n"
			 "class T(unittest.TestCase):\n    def test_add(self):\n"
			 "        self.assertEqual(add(2, 3), 5)\n");
		tu_write(dir, ".gitignore", "__pycache__/\n");
		free(tu_sh_out(dir, "git init -q && git add -A && git -c user.name=t -c user.email=t@e "
			    "commit -qm one"));
		commits[r][0] = tu_sh_out(dir, "git rev-parse HEAD");
		tu_write(dir, tu_fmt("notes-%d.txt", r), "a second commit\n");
		free(tu_sh_out(dir, "git add -A && git -c user.name=t -c user.email=t@e commit -qm two"));
		commits[r][1] = tu_sh_out(dir, "git rev-parse HEAD");
	}
}

static void write_tasks(void)
{
	struct buf b = BUF_INIT;
	int i;

	for (i = 0; i < NTASKS; i++) {
		enum kind k = kind_of(i);
		int r = i % NREPOS;

		buf_addf(&b, "{\"id\": \"t%02d-%s\", \"repo\": \"repo%d\", \"commit\": \"%s\", "
			 "\"request\": \"make add add (%s)\", \"test_command\": [\"python3\", \"-m\", "
			 "\"unittest\"], \"config\": {\"providers.default.base_url\": \"%s\"}}\n", i,
			 kind_names[k], r, commits[r][i / NREPOS % 2], kind_names[k],
			 mocks[k].base_url);
	}
	tu_write(root, "tasks.jsonl", b.buf);
	buf_release(&b);
}

/* The worktree of each task, in one batch and in the shard that takes it, has the seed. */
static void seed_worktrees(void)
{
	int i;

	for (i = 0; i < NTASKS; i++) {
		const char *id = tu_fmt("t%02d-%s", i, kind_names[kind_of(i)]);

		tu_seed_bytecode(tu_fmt("%s/one/work/%s", root, id));
		tu_seed_bytecode(tu_fmt("%s/shards/shard-%u/work/%s", root, batch_shard_of(id, 4), id));
	}
}

static int setup(void **state)
{
	int k;

	(void)state;
	for (k = 0; k < K__N; k++)
		mock_start(&mocks[k], scripts[k]);
	sc_proj_init(&proj, NULL, "auto", "[pipeline]\nmax_iterations = 1\n");
	root = tu_mkdtemp();
	make_repos();
	write_tasks();
	seed_worktrees();
	return 0;
}

static int teardown(void **state)
{
	int k, r;

	(void)state;
	shards_stop();
	for (k = 0; k < K__N; k++)
		mock_release(&mocks[k]);
	sc_proj_release(&proj);
	for (r = 0; r < NREPOS; r++) {
		free(commits[r][0]);
		free(commits[r][1]);
	}
	tu_rmtree(root);
	return 0;
}

/* forgex in `root` with the project's environment, not waited for. */
static pid_t start_forgex(const char *const *args, const char *extra_env, const char *log)
{
	struct strvec argv = STRVEC_INIT;
	char *abs = realpath(tu_forgex(), NULL);
	pid_t pid;

	strvec_push(&argv, abs ? abs : tu_forgex());
	free(abs);
	strvec_pushv(&argv, args);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int null = open("/dev/null", O_RDWR), out = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		size_t i;

		for (i = 0; i < proj.env_nr; i++)
			putenv((char *)proj.env[i]);
		if (extra_env)
			putenv((char *)extra_env);
		dup2(null, 0);
		dup2(out, 1);
		dup2(out, 2);
		if (chdir(root))
			_exit(125);
		execve(argv.v[0], (char *const *)argv.v, environ);
		_exit(127);
	}
	strvec_clear(&argv);
	return pid;
}

static int wait_status(pid_t pid)
{
	int st;

	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			fail_msg("waitpid: %s", strerror(errno));
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static size_t count_lines(const char *path)
{
	char *s = tu_read("/", path + 1);
	size_t n = 0;
	const char *p;

	for (p = s; p && *p; p++)
		n += *p == '\n';
	free(s);
	return n;
}

static json_t *read_results(const char *path)
{
	char *s = tu_read("/", path + 1);
	json_t *arr = json_array();
	const char *p = s;

	if (!s)
		fail_msg("no %s", path);
	while (*p) {
		const char *nl = strchr(p, '\n');
		json_t *l = NULL;

		assert_non_null(nl);
		assert_int_equal(jsonx_parse(&l, p, (size_t)(nl - p), "result"), 0);
		json_array_append_new(arr, l);
		p = nl + 1;
	}
	free(s);
	return arr;
}

/* Every task once, with the status of its kind; the line of task i in by_task[i]. */
static void check_results(json_t *res, json_t **by_task)
{
	size_t i;
	json_t *l;

	assert_int_equal(json_array_size(res), NTASKS);
	memset(by_task, 0, NTASKS * sizeof(*by_task));
	json_array_foreach(res, i, l) {
		int t = atoi(jsonx_str(l, "id") + 1);
		enum kind k;

		assert_true(t >= 0 && t < NTASKS);
		assert_null(by_task[t]);	/* exactly once */
		by_task[t] = l;
		k = kind_of(t);
		assert_string_equal(jsonx_str(l, "id"), tu_fmt("t%02d-%s", t, kind_names[k]));
		if (strcmp(jsonx_str(l, "status"), kind_status[k]))
			fail_msg("%s: %s, expected %s (%s)", jsonx_str(l, "id"), jsonx_str(l, "status"),
				 kind_status[k], jsonx_str(l, "error") ? jsonx_str(l, "error") : "");
		if (k == K_REFUSE)
			assert_true(jsonx_int(l, "refused", 0) >= 1);
		else
			assert_int_equal(jsonx_int(l, "refused", -1), 0);
		if (k == K_PASS)
			assert_non_null(strstr(jsonx_str(l, "model_patch"), "+    return a + b"));
		if (k == K_PASS || k == K_FAIL)
			assert_string_equal(json_string_value(json_array_get(
				json_object_get(l, "files_changed"), 0)), "calc.py");
	}
}

/* The tree at `wt` is `commit` exactly: HEAD there, nothing changed, added or removed. */
static void assert_pristine(const char *wt, const char *commit)
{
	char *head = tu_sh_out(wt, "git rev-parse HEAD");
	char *st = tu_sh_out(wt, "git status --porcelain --untracked-files=all");
	char *calc = tu_read(wt, "calc.py");

	assert_string_equal(head, commit);
	if (*st)
		fail_msg("%s is not its commit:\n%s", wt, st);
	assert_string_equal(calc, "def add(a, b):\n    return a - b\n");
	free(head);
	free(st);
	free(calc);
}

/* The run's workspace lock is free (nobody holds .forgex/runs/.lock). */
static void assert_unlocked(const char *wt)
{
	char *p = tu_fmt("%s/.forgex/runs/.lock", wt);
	int fd = open(p, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	close(fd);
}

static size_t entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* No pids cgroup a sandbox made (forgex-PID-N) is left for a process that is gone. */
static void assert_no_stale_cgroups(void)
{
	char *cg = tu_read("/", "proc/self/cgroup"), *path, *nl;
	DIR *d;
	struct dirent *e;

	if (!cg || strncmp(cg, "0::", 3)) {
		free(cg);
		return;
	}
	nl = strchr(cg, '\n');
	if (nl)
		*nl = '\0';
	path = xstrfmt("/sys/fs/cgroup%s", cg + 3);
	d = opendir(path);
	while (d && (e = readdir(d))) {
		long pid;

		if (strncmp(e->d_name, "forgex-", 7))
			continue;
		pid = strtol(e->d_name + 7, NULL, 10);
		if (pid > 0 && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
			fail_msg("cgroup %s/%s left behind", path, e->d_name);
	}
	if (d)
		closedir(d);
	free(path);
	free(cg);
}

/* Worktrees a mirror still knows, itself excluded. */
static size_t mirror_worktrees(const char *mirrors)
{
	DIR *d = opendir(mirrors);
	struct dirent *e;
	size_t n = 0;

	assert_non_null(d);
	while ((e = readdir(d))) {
		char *list, *p;

		if (e->d_name[0] == '.')
			continue;
		list = tu_sh_out(mirrors, tu_fmt("git -C '%s' worktree list --porcelain", e->d_name));
		for (p = list; (p = strstr(p, "worktree ")); p++)
			n++;
		free(list);
		n--;		/* the mirror itself */
	}
	closedir(d);
	return n;
}

static json_t *one_run[NTASKS];
static json_t *one_res;
static pid_t shard_pids[4];
static char *shard_envs[4];
static char *shard_mirrors;

/* The 4 shard processes of test_batch_shards_and_collect, not waited for. */
static void shards_start(void)
{
	size_t i;

	shard_mirrors = xstrfmt("%s/mirrors", root);
	fsutil_mkdir_p(shard_mirrors, 0755);
	for (i = 0; i < 4; i++) {
		const char *args[] = { "batch", "tasks.jsonl", "--shards", "4", "-j", "2", "--out",
				       "shards", "--wall-time", WALL, "--grace", "5", "--mirrors",
				       shard_mirrors, NULL };

		shard_envs[i] = xstrfmt("JOB_COMPLETION_INDEX=%zu", i);
		shard_pids[i] = start_forgex(args, shard_envs[i], tu_fmt("%s/shard-%zu.log", root, i));
	}
}

/* Those still running killed (a test that failed midway), all reaped. */
static void shards_stop(void)
{
	size_t i;

	for (i = 0; i < 4; i++) {
		if (shard_pids[i] > 0) {
			kill(shard_pids[i], SIGKILL);
			wait_status(shard_pids[i]);
			shard_pids[i] = 0;
		}
		free(shard_envs[i]);
		shard_envs[i] = NULL;
	}
	free(shard_mirrors);
	shard_mirrors = NULL;
}

static void test_batch_killed_and_resumed(void **state)
{
	const char *args[] = { "batch", "tasks.jsonl", "-j", "4", "--out", "one", "--keep",
			       "--wall-time", WALL, "--grace", "5", "--predictions", "one/pred.json",
			       NULL };
	char *results = xstrfmt("%s/one/results.jsonl", root), *log = xstrfmt("%s/one.log", root);
	char *log2 = xstrfmt("%s/one-resumed.log", root), *out;
	json_t *pred, *p;
	size_t before, i;
	pid_t pid;
	int status;

	(void)state;
	shards_start();
	pid = start_forgex(args, NULL, log);
	/* kill it once some tasks are done and others run */
	for (i = 0; i < 6000 && count_lines(results) < 5; i++) {
		struct timespec ts = { 0, 20000000L };

		if (waitpid(pid, &status, WNOHANG) == pid)
			fail_msg("the batch ended before it was killed: %s", tu_read("/", log + 1));
		nanosleep(&ts, NULL);
	}
	before = count_lines(results);
	assert_true(before >= 5 && before < NTASKS);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(wait_status(pid), 128 + SIGKILL);
	/* its tasks went with it: no forgex run holds a workspace lock a moment later */
	{
		struct timespec ts = { 0, 300000000L };

		nanosleep(&ts, NULL);
	}
	for (i = 0; i < NTASKS; i++)
		assert_unlocked(tu_fmt("%s/one/work/t%02d-%s", root, (int)i, kind_names[kind_of((int)i)]));

	pid = start_forgex(args, NULL, log2);
	status = wait_status(pid);
	out = tu_read("/", log2 + 1);
	if (status != 1)
		fail_msg("resumed batch: status %d:\n%s", status, out);	/* every task has its result, some did not pass */
	/* the worktrees of the tasks the kill cut short were removed, and those tasks run again */
	assert_non_null(strstr(out, "a stopped batch left behind"));
	assert_non_null(strstr(out, tu_fmt("%zu of 20 tasks finished", (size_t)NTASKS)));
	free(out);

	one_res = read_results(results);
	check_results(one_res, one_run);
	/* the lines written before the kill are still there, first, as they were */
	for (i = 0; i < before; i++)
		assert_true(json_array_get(one_res, i) != NULL);
	for (i = 0; i < NTASKS; i++) {
		enum kind k = kind_of((int)i);
		char *wt = tu_fmt("%s/one/work/t%02d-%s", root, (int)i, kind_names[k]);

		assert_unlocked(wt);
		if (k != K_PASS)
			assert_pristine(wt, commits[i % NREPOS][i / NREPOS % 2]);
		else {
			char *calc = tu_read(wt, "calc.py");

			assert_non_null(calc);
			assert_non_null(strstr(calc, "return a + b"));
			free(calc);
		}
	}
	assert_no_stale_cgroups();
	/* SWE-bench predictions: one per task, the passing ones with their patch */
	assert_int_equal(jsonx_load_file(&pred, tu_fmt("%s/one/pred.json", root), 1 << 20), 0);
	assert_int_equal(json_array_size(pred), NTASKS);
	json_array_foreach(pred, i, p) {
		const char *id = jsonx_str(p, "instance_id");
		enum kind k = kind_of(atoi(id + 1));

		assert_string_equal(jsonx_str(p, "model_name_or_path"), "forgex");
		if (k == K_PASS)
			assert_non_null(strstr(jsonx_str(p, "model_patch"), "diff --git a/calc.py"));
		else
			assert_string_equal(jsonx_str(p, "model_patch"), "");
	}
	json_decref(pred);

	/* a third time: nothing left to do */
	pid = start_forgex(args, NULL, log2);
	assert_int_equal(wait_status(pid), 1);
	assert_int_equal(count_lines(results), NTASKS);
	free(log2);
	free(log);
	free(results);
}

static void test_batch_shards_and_collect(void **state)
{
	json_t *merged, *by[NTASKS];
	size_t i, total = 0;
	const char *margs[] = { "batch", "collect", "--out", "merged", "shards", NULL };
	struct tu_result r;

	(void)state;
	if (!one_res || !shard_mirrors) {
		shards_stop();
		skip();
	}
	for (i = 0; i < 4; i++) {
		int st = wait_status(shard_pids[i]);
		char *dir = tu_fmt("%s/shards/shard-%zu", root, i);

		shard_pids[i] = 0;
		if (st != 0 && st != 1)
			fail_msg("shard %zu: status %d:\n%s", i, st,
				 tu_read("/", tu_fmt("%s/shard-%zu.log", root, i) + 1));
		total += count_lines(tu_fmt("%s/results.jsonl", dir));
		/* nothing left behind: no worktree, in the folder or in the mirror */
		assert_int_equal(entries(tu_fmt("%s/work", dir)), 0);
	}
	assert_int_equal(total, NTASKS);	/* each task in exactly one shard */
	assert_int_equal(mirror_worktrees(shard_mirrors), 0);
	assert_no_stale_cgroups();

	{
		char *abs = realpath(tu_forgex(), NULL);
		struct strvec argv = STRVEC_INIT;

		strvec_push(&argv, abs);
		strvec_pushv(&argv, margs);
		tu_run(&r, (const char *const *)argv.v, root, proj.env, NULL);
		strvec_clear(&argv);
		free(abs);
	}
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out.buf, "20 of 20 tasks finished"));
	tu_result_release(&r);
	merged = read_results(tu_fmt("%s/merged/results.jsonl", root));
	check_results(merged, by);
	/* the same results as one process: status, tests, files, refusals, patch */
	for (i = 0; i < NTASKS; i++) {
		static const char *const same[] = { "status", "repo", "commit", "tests_after",
						    "files_changed", "refused", "model_patch" };
		size_t k;

		for (k = 0; k < sizeof(same) / sizeof(same[0]); k++)
			if (!json_equal(json_object_get(by[i], same[k]),
					json_object_get(one_run[i], same[k])) &&
			    (json_object_get(by[i], same[k]) || json_object_get(one_run[i], same[k])))
				fail_msg("%s: %s differs between the shards and one batch",
					 jsonx_str(by[i], "id"), same[k]);
	}
	/* merged in id order */
	for (i = 1; i < NTASKS; i++)
		assert_true(strcmp(jsonx_str(json_array_get(merged, i - 1), "id"),
				   jsonx_str(json_array_get(merged, i), "id")) < 0);
	json_decref(merged);
}

static void test_batch_bad_task_file(void **state)
{
	struct tu_result r;

	(void)state;
	tu_write(root, "bad.jsonl", "{\"id\": \"a\", \"repo\": \"repo0\", \"commit\": \"HEAD\", "
		 "\"request\": \"x\"}\n{\"id\": \"a\", \"repo\": \"repo0\", \"commit\": \"HEAD\", "
		 "\"request\": \"y\"}\n");
	SC_FORGEX(&r, &proj, "batch", tu_fmt("%s/bad.jsonl", root), "--out", tu_fmt("%s/bad", root));
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "bad.jsonl:2"));
	assert_non_null(strstr(r.err.buf, "repeats line 1"));
	tu_result_release(&r);
	SC_FORGEX(&r, &proj, "batch", tu_fmt("%s/tasks.jsonl", root), "--shards", "4");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.err.buf, "JOB_COMPLETION_INDEX"));
	tu_result_release(&r);
}

/* A schema file: in tests/fixtures/k8s, or beside the checkout in ../shared/testdata/k8s. */
static const char *k8s_schema(void)
{
	static const char *const where[] = {
		"tests/fixtures/k8s/apis__batch__v1_openapi.json",
		"../shared/testdata/k8s/apis__batch__v1_openapi.json",
	};
	size_t i;

	for (i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		if (fsutil_exists(where[i]))
			return where[i];
	return NULL;
}

static void test_batch_k8s_manifest(void **state)
{
	struct tu_result r;
	json_t *job = NULL, *spec, *pod, *c, *rules, *v;
	const char *schema = k8s_schema();
	char *path, *args, *abs;
	size_t i;
	int saw_secret = 0;

	(void)state;
	SC_FORGEX(&r, &proj, "batch", "k8s", tu_fmt("%s/tasks.jsonl", root), "--image",
		  "registry.example/forgex:0.1", "--shards", "8", "--parallelism", "3", "--configmap",
		  "forgex-tasks", "-j", "2", "--", "--wall-time", "1800");
	assert_int_equal(r.status, 0);
	assert_int_equal(jsonx_parse(&job, r.out.buf, r.out.len, "manifest"), 0);
	assert_non_null(strstr(r.err.buf, "kubectl create configmap forgex-tasks"));
	assert_string_equal(jsonx_str(job, "apiVersion"), "batch/v1");
	assert_string_equal(jsonx_str(job, "kind"), "Job");
	spec = json_object_get(job, "spec");
	assert_string_equal(jsonx_str(spec, "completionMode"), "Indexed");
	assert_int_equal(jsonx_int(spec, "completions", 0), 8);
	assert_int_equal(jsonx_int(spec, "parallelism", 0), 3);
	assert_true(jsonx_int(spec, "backoffLimitPerIndex", -1) >= 0);
	rules = json_object_get(json_object_get(spec, "podFailurePolicy"), "rules");
	assert_string_equal(jsonx_str(json_array_get(rules, 0), "action"), "FailIndex");
	v = json_object_get(json_object_get(json_array_get(rules, 0), "onExitCodes"), "values");
	assert_int_equal(json_integer_value(json_array_get(v, 0)), 1);
	pod = json_object_get(json_object_get(spec, "template"), "spec");
	assert_string_equal(jsonx_str(pod, "restartPolicy"), "Never");
	c = json_array_get(json_object_get(pod, "containers"), 0);
	assert_string_equal(jsonx_str(c, "image"), "registry.example/forgex:0.1");
	{
		struct buf b = BUF_INIT;

		jsonx_dump(&b, json_object_get(c, "args"), JSON_COMPACT);
		args = buf_detach(&b, NULL);
	}
	/* the sandbox choice is explicit; the shard comes from JOB_COMPLETION_INDEX */
	assert_non_null(strstr(args, "\"-c\",\"sandbox.backend=none\",\"batch\",\"/tasks/tasks.jsonl\""));
	assert_non_null(strstr(args, "\"--shards\",\"8\""));
	assert_non_null(strstr(args, "\"--out\",\"/results\""));
	assert_non_null(strstr(args, "\"--wall-time\",\"1800\""));
	free(args);
	assert_non_null(json_object_get(json_object_get(c, "resources"), "requests"));
	json_array_foreach(json_object_get(c, "env"), i, v)
		saw_secret |= json_object_get(json_object_get(v, "valueFrom"), "secretKeyRef") != NULL;
	assert_true(saw_secret);
	tu_result_release(&r);

	/* bad options are usage errors */
	SC_FORGEX(&r, &proj, "batch", "k8s", "/tasks.jsonl", "--image", "x", "--shards", "2",
		  "--parallelism", "1", "--name", "Not_A_Name");
	assert_int_equal(r.status, 2);
	tu_result_release(&r);

	if (!schema) {
		json_decref(job);
		fprintf(stderr, "note: no apis__batch__v1_openapi.json (see "
			"tests/fixtures/k8s/README.md): the schema check is skipped\n");
		skip();
	}
	path = xstrfmt("%s/job.json", root);
	{
		struct buf b = BUF_INIT;

		jsonx_dump(&b, job, JSON_INDENT(2));
		tu_write(root, "job.json", b.buf);
		buf_release(&b);
	}
	abs = realpath(schema, NULL);
	{
		const char *argv[] = { "python3", "tests/fixtures/k8s/validate.py", abs, path, NULL };

		tu_run(&r, argv, NULL, NULL, NULL);
	}
	if (r.status)
		fail_msg("the manifest does not validate against %s:\n%s%s", schema, r.out.buf,
			 r.err.buf);
	tu_result_release(&r);
	/* and the check can fail: a misspelt field is caught */
	json_object_set_new(json_object_get(job, "spec"), "parallelizm", json_integer(3));
	{
		struct buf b = BUF_INIT;
		const char *argv[] = { "python3", "tests/fixtures/k8s/validate.py", abs, path, NULL };

		jsonx_dump(&b, job, JSON_INDENT(2));
		tu_write(root, "job.json", b.buf);
		buf_release(&b);
		tu_run(&r, argv, NULL, NULL, NULL);
	}
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.err.buf, "parallelizm"));
	tu_result_release(&r);
	free(abs);
	free(path);
	json_decref(job);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_batch_bad_task_file),
		cmocka_unit_test(test_batch_k8s_manifest),
		cmocka_unit_test(test_batch_killed_and_resumed),
		cmocka_unit_test(test_batch_shards_and_collect),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
