#ifndef FX_TOOLS_VERIFY_EXECUTOR_H
#define FX_TOOLS_VERIFY_EXECUTOR_H

/*
 * The test runner of verify/ wired to the sandbox executor: verify_run()
 * takes any verify_run_fn (tests hand it captured output); forgex hands
 * it this one. Used by the run_tests tool, the pipeline's gate and
 * `forgex verify`.
 */

#include "verify/verify.h"

/**
 * A verify_run_fn that runs the command through the sandbox executor
 * `data` (a `struct executor *` from executor_init(), bound to the
 * workspace): the command policy, approval, then the sandbox, in the
 * workspace's top folder, with `req->timeout_seconds` (0: the executor's
 * default, [terminal] timeout_seconds). A command from the configuration
 * (`cmd->configured`) counts as approved by the user: it is not asked
 * about again, but the deny list and the sandbox still apply. Blocks
 * until the command ends. FX_EDENIED when refused, FX_EINTR when
 * cancelled through the executor.
 */
int verify_executor_run(struct verify_capture *out, const struct verify_request *req,
			void *data);

#endif
