/*
 * verify_run(): run the test command through a verify_run_fn and parse
 * what it printed; verify_cache_dir(): the forgex-owned folder for the
 * toolchain caches of test runs. The runner that goes through the
 * sandbox executor is tools/verify_executor.c, above both services.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/err.h"
#include "base/fsutil.h"
#include "base/path.h"
#include "base/xdg.h"
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

/* ---- the caches of test runs ---- */

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
	char *base = xdg_path(XDG_DIR_CACHE, "forgex/tests");
	struct buf name = BUF_INIT;
	struct stat st;
	size_t i;
	int ret;

	if (!base)
		return err_set(FX_ENOTFOUND, "no cache folder: neither XDG_CACHE_HOME nor HOME "
			       "is an absolute path");
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
	buf_addf(out, "%s/%s-%016llx", base, name.buf, (unsigned long long)fnv1a(workspace));
	free(base);
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
