/*
 * verify_run(): run the test command through a verify_run_fn and parse
 * what it printed. verify_executor_run(): the run through the sandbox
 * executor, with toolchain caches in a forgex-owned folder.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/fsutil.h"
#include "base/path.h"
#include "sandbox/executor.h"
#include "verify/verify.h"

static void capture_release(struct verify_capture *c)
{
	buf_release(&c->out);
	buf_release(&c->err);
	free(c->note);
	c->note = NULL;
}

static void parse_capture(struct verify_result *out, const struct verify_capture *cap)
{
	struct verify_output o;

	memset(&o, 0, sizeof(o));
	o.out = cap->out.buf;
	o.out_len = cap->out.len;
	o.err = cap->err.buf;
	o.err_len = cap->err.len;
	o.exit_code = cap->exit_code;
	o.timed_out = cap->timed_out;
	o.truncated = cap->truncated;
	o.duration_ms = cap->duration_ms;
	verify_parse(out, &o);
}

static void set_stale(struct verify_result *out, char *note)
{
	out->fresh = 0;
	free(out->fresh_note);
	out->fresh_note = note;
}

/*
 * The build the tests need, before them. Returns 1 when it succeeded, 0
 * when it failed (`out` then holds its outcome), < 0 when it could not
 * run.
 */
static int run_build(struct verify_result *out, const struct verify_request *req,
		     verify_run_fn run, void *data)
{
	struct verify_command b = VERIFY_COMMAND_INIT;
	struct verify_capture cap = VERIFY_CAPTURE_INIT;
	struct verify_request br = *req;
	int ret;

	b.argv = req->cmd->build;
	b.kind = (char *)"build";
	b.reason = (char *)"the tests need a build first";
	br.cmd = &b;
	ret = run(&cap, &br, data);
	if (ret >= 0 && (cap.exit_code != 0 || cap.timed_out)) {
		struct buf argv = BUF_INIT;
		size_t i;

		parse_capture(out, &cap);
		for (i = 0; i < b.argv.nr; i++) {
			if (i)
				buf_addch(&argv, ' ');
			buf_add_shell_quoted(&argv, b.argv.v[i]);
		}
		set_stale(out, xstrfmt("the build before the tests failed (%s, exit status %d): "
				       "the tests did not run", argv.buf, cap.exit_code));
		buf_release(&argv);
		ret = 0;
	} else if (ret >= 0) {
		ret = 1;
	}
	capture_release(&cap);
	return ret;
}

int verify_run(struct verify_result *out, const struct verify_request *req,
	       verify_run_fn run, void *data)
{
	struct verify_capture cap = VERIFY_CAPTURE_INIT;
	int ret;

	if (!req->cmd || !req->cmd->argv.nr)
		return err_set(FX_EINVAL, "no test command to run");
	if (req->cmd->build.nr) {
		ret = run_build(out, req, run, data);
		if (ret <= 0)
			return ret;
	}
	ret = run(&cap, req, data);
	if (ret < 0) {
		capture_release(&cap);
		return ret;
	}
	parse_capture(out, &cap);
	if (!req->cmd->fresh)
		set_stale(out, xstrdup(req->cmd->fresh_note ? req->cmd->fresh_note
				       : "fresh results not ensured"));
	if (cap.note)
		set_stale(out, out->fresh_note ? xstrfmt("%s; %s", out->fresh_note, cap.note)
				   : xstrdup(cap.note));
	capture_release(&cap);
	return 0;
}

/* ---- the executor's run, with forgex's caches ---- */

/* FNV-1a, for a short stable folder name per workspace. */
static uint64_t fnv1a(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

int verify_cache_dir(struct buf *out, const char *workspace)
{
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	struct buf base = BUF_INIT, name = BUF_INIT;
	struct stat st;
	size_t i;
	int ret;

	if (xdg && *xdg == '/')
		buf_addstr(&base, xdg);
	else if (home && *home == '/')
		buf_addf(&base, "%s/.cache", home);
	else {
		return err_set(FX_ENOTFOUND, "no cache folder: neither XDG_CACHE_HOME nor HOME "
			       "is an absolute path");
	}
	path_basename(&name, workspace);
	for (i = 0; i < name.len; i++)
		if (!((name.buf[i] >= 'a' && name.buf[i] <= 'z') ||
		      (name.buf[i] >= 'A' && name.buf[i] <= 'Z') ||
		      (name.buf[i] >= '0' && name.buf[i] <= '9') || name.buf[i] == '-' ||
		      name.buf[i] == '_' || name.buf[i] == '.'))
			name.buf[i] = '_';
	if (name.len > 40)
		buf_setlen(&name, 40);
	buf_reset(out);
	buf_addf(out, "%s/forgex/tests/%s-%016llx", base.buf, name.buf,
		 (unsigned long long)fnv1a(workspace));
	buf_release(&base);
	buf_release(&name);
	ret = fsutil_mkdir_p(out->buf, 0700);
	if (ret < 0)
		return err_prefix(ret, "cache folder");
	/* the folder test commands may write: ours, a real folder, no link */
	if (lstat(out->buf, &st) < 0)
		return err_set_errno(FX_EOS, "cannot stat the cache folder '%s'", out->buf);
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid())
		return err_set(FX_EDENIED, "the cache folder '%s' is not a folder of this user",
			       out->buf);
	return 0;
}

/*
 * The environment of a test run: every toolchain cache in `dir` (see
 * docs/internals/verify.md). Python's bytecode goes to a prefix that is
 * emptied before each run, so a same-size edit within the second of the
 * last run can never be answered from an old .pyc.
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
		if (fsutil_remove_tree(py.buf) < 0) {
			/* never read what may be stale: no bytecode this time */
			err_clear();
			strvec_push(&env, "PYTHONDONTWRITEBYTECODE=1");
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
