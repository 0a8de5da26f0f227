/*
 * The verify_run_fn forgex runs test commands with: through the sandbox
 * executor, with toolchain caches in the forgex-owned folder of
 * verify_cache_dir() (see docs/internals/verify.md). It sits here, above
 * both services, so that verify/ never includes sandbox/.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/beneath.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/path.h"
#include "sandbox/executor.h"
#include "tools/verify_executor.h"

/*
 * The environment of a test run: every toolchain cache in `dir` (see
 * docs/internals/verify.md). Python's bytecode goes to a prefix whose
 * part for the workspace is emptied before each run, so a same-size edit
 * within the second of the last run can never be answered from an old
 * .pyc.
 */
static void cache_env(struct strvec *env, const char *dir)
{
	strvec_pushf(env, "PYTHONPYCACHEPREFIX=%s/pycache", dir);
	strvec_push(env, "PYTEST_ADDOPTS=-p no:cacheprovider");
	strvec_pushf(env, "PIP_CACHE_DIR=%s/pip", dir);
	strvec_pushf(env, "GOCACHE=%s/go-build", dir);
	strvec_pushf(env, "CARGO_TARGET_DIR=%s/cargo-target", dir);
	strvec_pushf(env, "npm_config_cache=%s/npm", dir);
	strvec_push(env, "npm_config_update_notifier=false");
	strvec_pushf(env, "XDG_CACHE_HOME=%s/xdg", dir);
}

/*
 * Empty the part of the bytecode prefix `prefix` that mirrors `workspace`
 * (Python keeps a source's .pyc under the prefix joined with the source's
 * absolute path). The rest is the bytecode of the standard library and of
 * packages outside the workspace, which no run edits: kept, Python does
 * not compile them again on every run (a third of a second of CPU or more
 * each time). Test commands can write the prefix, so the way down follows
 * no link; < 0 when it is not a plain folder path (the caller then empties
 * the whole prefix).
 */
static int clear_workspace_bytecode(const char *prefix, const char *workspace)
{
	struct buf parent = BUF_INIT;
	const char *rel = workspace, *last;
	int top, dfd, ret;

	while (*rel == '/')
		rel++;
	last = strrchr(rel, '/');
	if (!*rel || (last && !last[1]))
		return -1;
	top = open(prefix, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (top < 0)
		return errno == ENOENT ? 0 : -1;
	if (last)
		buf_add(&parent, rel, (size_t)(last - rel));
	dfd = beneath_open(top, parent.len ? parent.buf : ".", O_RDONLY | O_DIRECTORY, 0);
	buf_release(&parent);
	if (dfd < 0) {
		ret = errno == ENOENT ? 0 : -1;
	} else {
		ret = fsutil_remove_tree_at(dfd, last ? last + 1 : rel);
		close(dfd);
	}
	close(top);
	return ret;
}

int verify_executor_run(struct verify_capture *out, const struct verify_request *req,
			void *data)
{
	struct executor *ex = data;
	struct exec_result r = EXEC_RESULT_INIT;
	struct exec_request er;
	struct strvec env = STRVEC_INIT;
	struct buf dir = BUF_INIT;
	enum approval_mode mode = ex->policy.mode;
	int ret, root = 0;

	memset(&er, 0, sizeof(er));
	er.argv = req->cmd->argv.v;
	er.argc = req->cmd->argv.nr;
	er.cwd = NULL;	/* the workspace's top, where detection looked */
	if (req->timeout_seconds > 0)
		er.timeout_ms = req->timeout_seconds > INT_MAX / 1000 ? INT_MAX
			      : (int)(req->timeout_seconds * 1000);
	if (!strcmp(executor_backend_name(ex), "docker")) {
		/* the container sees the workspace only: nothing to point at */
		free(out->note);
		out->note = xstrdup("toolchain caches are not kept with the docker backend");
		strvec_push(&env, "PYTHONDONTWRITEBYTECODE=1");
	} else if (verify_cache_dir(&dir, ex->workspace) < 0) {
		free(out->note);
		out->note = xstrfmt("no forgex cache folder (%s): Python writes no bytecode, "
				    "toolchain caches are the defaults", err_last());
		err_clear();
		strvec_push(&env, "PYTHONDONTWRITEBYTECODE=1");
	} else {
		struct buf py = BUF_INIT;

		buf_addf(&py, "%s/pycache", dir.buf);
		if (clear_workspace_bytecode(py.buf, ex->workspace) < 0) {
			err_clear();
			if (fsutil_remove_tree(py.buf) < 0) {
				/* never read what may be stale: no bytecode this time */
				err_clear();
				strvec_push(&env, "PYTHONDONTWRITEBYTECODE=1");
			}
		}
		buf_release(&py);
		cache_env(&env, dir.buf);
		if (!path_is_within(dir.buf, ex->workspace)) {
			strvec_push(&ex->writable_roots, dir.buf);
			root = 1;
		}
	}
	er.env_overrides = env.v;
	/*
	 * The user wrote this command into the configuration: that is the
	 * approval. Only the approval step is skipped; a denied program is
	 * still denied and the sandbox still confines it.
	 */
	if (req->cmd->configured)
		ex->policy.mode = APPROVAL_AUTO;
	ret = executor_run(&r, ex, &er);
	ex->policy.mode = mode;
	if (root)
		strvec_pop(&ex->writable_roots);
	if (ret < 0)
		goto out;
	buf_release(&out->out);
	buf_release(&out->err);
	out->out = r.out;
	out->err = r.err;
	buf_init(&r.out, 0);
	buf_init(&r.err, 0);
	out->exit_code = r.exit_code;
	out->timed_out = r.timed_out;
	out->truncated = r.truncated;
	out->duration_ms = (long)r.duration_ms;
out:
	exec_result_release(&r);
	strvec_clear(&env);
	buf_release(&dir);
	return ret;
}
