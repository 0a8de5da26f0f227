/*
 * verify_run(): run the test command through a verify_run_fn and parse
 * what it printed.
 */
#include <limits.h>
#include <string.h>

#include "base/err.h"
#include "sandbox/executor.h"
#include "verify/verify.h"

static void capture_release(struct verify_capture *c)
{
	buf_release(&c->out);
	buf_release(&c->err);
}

int verify_run(struct verify_result *out, const struct verify_request *req,
	       verify_run_fn run, void *data)
{
	struct verify_capture cap = VERIFY_CAPTURE_INIT;
	struct verify_output o;
	int ret;

	if (!req->cmd || !req->cmd->argv.nr)
		return err_set(FX_EINVAL, "no test command to run");
	ret = run(&cap, req, data);
	if (ret < 0) {
		capture_release(&cap);
		return ret;
	}
	memset(&o, 0, sizeof(o));
	o.out = cap.out.buf;
	o.out_len = cap.out.len;
	o.err = cap.err.buf;
	o.err_len = cap.err.len;
	o.exit_code = cap.exit_code;
	o.timed_out = cap.timed_out;
	o.truncated = cap.truncated;
	o.duration_ms = cap.duration_ms;
	verify_parse(out, &o);
	capture_release(&cap);
	return 0;
}

int verify_executor_run(struct verify_capture *out, const struct verify_request *req,
			void *data)
{
	struct executor *ex = data;
	struct exec_result r = EXEC_RESULT_INIT;
	struct exec_request er;
	enum approval_mode mode = ex->policy.mode;
	int ret;

	memset(&er, 0, sizeof(er));
	er.argv = req->cmd->argv.v;
	er.argc = req->cmd->argv.nr;
	er.cwd = NULL;	/* the workspace's top, where detection looked */
	if (req->timeout_seconds > 0)
		er.timeout_ms = req->timeout_seconds > INT_MAX / 1000 ? INT_MAX
			      : (int)(req->timeout_seconds * 1000);
	/*
	 * The user wrote this command into the configuration: that is the
	 * approval. Only the approval step is skipped; a denied program is
	 * still denied and the sandbox still confines it.
	 */
	if (req->cmd->configured)
		ex->policy.mode = APPROVAL_AUTO;
	ret = executor_run(&r, ex, &er);
	ex->policy.mode = mode;
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
	return ret;
}
