/*
 * verify_run(): run the test command through a verify_run_fn and parse
 * what it printed.
 */
#include <string.h>

#include "base/err.h"
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
