/*
 * Rollbacks of real `forgex run`s that fail, on trees that broke the first
 * wave: a repository that commits .forgex/config.toml, and folders 200
 * deep (one the user had, one a command of the run made). After the FAIL
 * the tree is byte-identical to before the run, and git sees nothing
 * changed; write_file refuses an absurd depth with the reason.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "helpers/scripted.h"
#include "mockllm/mockctl.h"

#define PLAN "{\"summary\": \"Change things\", \"steps\": [{\"id\": \"1\", \"title\": \"Change\"," \
	" \"description\": \"change them\", \"files\": [\"calc.py\"]}], \"acceptance\": [\"tests pass\"]}"
#define FINISH "{\"summary\": \"done\"}"
#define FAIL "{\"verdict\": \"FAIL\", \"reasons\": [\"not right\"], \"required_fixes\": [\"undo it\"]}"
#define DEPTH 200

static int strcmp_ptr(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Every entry under `dirfd` (but .git and forgex's own run data) with its
 * type, mode and bytes, walked through descriptors so no depth is too deep.
 */
static void snap_at(struct buf *out, int dirfd, const char *rel)
{
	DIR *d = fdopendir(dup(dirfd));
	struct dirent *e;
	struct strvec names = STRVEC_INIT;
	size_t i;

	assert_non_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			strvec_push(&names, e->d_name);
	closedir(d);
	qsort(names.v, names.nr, sizeof(*names.v), strcmp_ptr);
	for (i = 0; i < names.nr; i++) {
		const char *n = names.v[i];
		char *sub = *rel ? xstrfmt("%s/%s", rel, n) : xstrdup(n);
		struct stat st;

		if (!strcmp(sub, ".git") || !strcmp(sub, ".forgex/runs") ||
		    !strcmp(sub, ".forgex/checkpoints") || !strcmp(sub, ".forgex/map") ||
		    fstatat(dirfd, n, &st, AT_SYMLINK_NOFOLLOW)) {
			free(sub);
			continue;
		}
		buf_addf(out, "== %s %o\n", sub, st.st_mode);
		if (S_ISDIR(st.st_mode)) {
			int fd = openat(dirfd, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			assert_true(fd >= 0);
			snap_at(out, fd, sub);
			close(fd);
		} else if (S_ISREG(st.st_mode)) {
			int fd = openat(dirfd, n, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

			assert_true(fd >= 0);
			fsutil_read_fd(out, fd, 0);
			close(fd);
		}
		free(sub);
	}
	strvec_clear(&names);
}

static char *snapshot(const char *dir)
{
	struct buf b = BUF_INIT;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	assert_true(fd >= 0);
	snap_at(&b, fd, "");
	close(fd);
	return buf_detach(&b, NULL);
}

static void git_is_clean(const char *dir)
{
	const char *argv[] = { "git", "status", "--porcelain", "--untracked-files=all", NULL };
	struct tu_result r;

	tu_run(&r, argv, dir, NULL, NULL);
	assert_int_equal(r.status, 0);
	if (r.out.len)
		fail_msg("git status after the rollback: %s", r.out.buf);
	tu_result_release(&r);
}

static void sh(const char *dir, const char *cmd)
{
	const char *argv[] = { "sh", "-c", cmd, NULL };
	struct tu_result r;

	tu_run(&r, argv, dir, NULL, NULL);
	if (r.status)
		fail_msg("%s: %s%s", cmd, r.out.buf, r.err.buf);
	tu_result_release(&r);
}

/* "d/d/.../d" with `n` names */
static char *deep_path(int n)
{
	struct buf b = BUF_INIT;
	int i;

	for (i = 0; i < n; i++)
		buf_addstr(&b, i ? "/d" : "d");
	return buf_detach(&b, NULL);
}

/* The repository commits .forgex/config.toml; a failed run leaves it, and everything, as it was. */
static void test_rollback_with_a_committed_project_config(void **state)
{
	json_t *steps = json_array();
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	char *s, *before, *after, *cfg_before, *cfg_after;

	(void)state;
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "write_file", "{\"path\": \"calc.py\", \"content\": \"def add(a, b):\\n    return 0\\n\"}");
	sc_call(steps, "write_file", "{\"path\": \"new_module.py\", \"content\": \"x = 1\\n\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", FAIL);
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_init(&p, &m, "auto", "");
	/* the project's own, committed configuration (only keys a project may set) */
	tu_write(p.dir, ".forgex/config.toml", "[pipeline]\ntest_command = [\"python3\", \"-m\", "
		 "\"unittest\"]\nmax_iterations = 1\n\n[context]\nmap_tokens = 512\n");
	sh(p.dir, "git add .forgex/config.toml && git -c user.name=t -c user.email=t@e "
		  "commit -qm 'project config'");
	before = snapshot(p.dir);
	cfg_before = tu_read(p.dir, ".forgex/config.toml");
	SC_FORGEX(&r, &p, "run", "break it");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out.buf, "FAIL"));
	assert_non_null(strstr(r.out.buf, "The tree was restored to how it was before the run."));
	after = snapshot(p.dir);
	assert_string_equal(after, before);
	cfg_after = tu_read(p.dir, ".forgex/config.toml");
	assert_string_equal(cfg_after, cfg_before);
	git_is_clean(p.dir);
	tu_result_release(&r);
	/* and a checkpoint restore of such a tree works too (it refused "unsafe path") */
	SC_FORGEX(&r, &p, "checkpoint", "create", "-m", "with config");
	assert_int_equal(r.status, 0);
	tu_result_release(&r);
	mock_release(&m);
	sc_proj_release(&p);
	free(before);
	free(after);
	free(cfg_before);
	free(cfg_after);
	free(s);
}

/* A user's folder 200 deep, and one a command of the run made: the rollback holds both cases. */
static void test_rollback_with_folders_200_deep(void **state)
{
	json_t *steps = json_array();
	struct sc_proj p;
	struct mock m;
	struct tu_result r;
	char *s, *before, *after, *deep = deep_path(DEPTH), *mine, *made, *args, *refused_id;
	const char *res;
	json_t *reqs;

	(void)state;
	made = xstrfmt("made/%s", deep);
	args = xstrfmt("{\"argv\": [\"mkdir\", \"-p\", \"%s\"]}", made);
	sc_call(steps, "submit_plan", PLAN);
	sc_call(steps, "run_command", args);
	free(args);
	args = xstrfmt("{\"path\": \"%s/x.txt\", \"content\": \"deep\\n\"}", made);
	refused_id = sc_next_id();
	sc_call(steps, "write_file", args);
	free(args);
	sc_call(steps, "write_file", "{\"path\": \"calc.py\", \"content\": \"def add(a, b):\\n    return 0\\n\"}");
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "finish", FINISH);
	sc_call(steps, "submit_verdict", FAIL);
	s = sc_script(steps);
	mock_start(&m, s);
	sc_proj_init(&p, &m, "auto", "");
	tu_write(p.dir, ".forgex/config.toml", "[pipeline]\ntest_command = [\"python3\", \"-m\", "
		 "\"unittest\"]\nmax_iterations = 1\n");
	/* the user's own deep folder, untracked and not ignored: checkpoints hold it */
	mine = xstrfmt("%s/mine/%s", p.dir, deep);
	assert_int_equal(fsutil_mkdir_p(mine, 0755), 0);
	free(mine);
	mine = xstrfmt("mine/%s/notes.txt", deep);
	tu_write(p.dir, mine, "the user's, 200 deep\n");
	before = snapshot(p.dir);
	SC_FORGEX(&r, &p, "run", "go deep");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out.buf, "The tree was restored to how it was before the run."));
	after = snapshot(p.dir);
	assert_string_equal(after, before);
	/* write_file said why it would not go 201 deep */
	reqs = sc_chat_requests(&m);
	res = sc_tool_result(reqs, refused_id);
	assert_non_null(res);
	assert_non_null(strstr(res, "folders deep; write_file makes at most 64 levels"));
	json_decref(reqs);
	tu_result_release(&r);
	/* every later command still works on this tree */
	SC_FORGEX(&r, &p, "checkpoint", "create", "-m", "deep");
	assert_int_equal(r.status, 0);
	tu_result_release(&r);
	SC_FORGEX(&r, &p, "diff", "--stat");
	assert_int_equal(r.status, 0);
	tu_result_release(&r);
	mock_release(&m);
	sc_proj_release(&p);
	free(before);
	free(after);
	free(deep);
	free(mine);
	free(made);
	free(refused_id);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rollback_with_a_committed_project_config),
		cmocka_unit_test(test_rollback_with_folders_200_deep),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
