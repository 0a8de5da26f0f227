/*
 * The "none" backend: policy checks and hygiene only (argv, working folder
 * inside the workspace, sanitized environment, timeout, output cap, own
 * process group, kill-all through the subreaper supervisor). No
 * confinement: the command can write wherever the user can and reach the
 * network. Used only when configured, or when allow_unconfined lets
 * "auto" fall back to it - always with a warning.
 */
#include "sandbox/executor.h"
#include "sandbox/sandbox.h"

static int none_prepare(struct executor *ex, struct sb_spawn *sp)
{
	(void)ex;
	/* the supervisor is not PID 1 of anything: it sweeps what it adopts */
	sp->plan.pid_namespace = 0;
	sp->plan.clone_flags = 0;
	return 0;
}

const struct sandbox_backend sandbox_backend_none = {
	.name = "none",
	.caps = 0,
	.prepare = none_prepare,
};
