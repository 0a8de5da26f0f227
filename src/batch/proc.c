/*
 * The batch's settings for its children (see proc.h); base/proc starts,
 * waits for and kills them.
 */
#include <string.h>

#include "base/err.h"
#include "base/strvec.h"
#include "batch/proc.h"

extern char **environ;

/* forgex's environment, with git told never to ask on a terminal. */
static void batch_env(struct strvec *env)
{
	char **e;

	for (e = environ; e && *e; e++)
		strvec_push(env, *e);
	proc_env_set(env, "GIT_TERMINAL_PROMPT=0");
}

/* `p` proc_init()ed with `argv` and the settings every batch child has. */
static void batch_proc(struct proc *p, const char *const *argv, const struct strvec *env)
{
	proc_init(p);
	strvec_pushv(&p->argv, argv);
	p->env = env->v;
	p->flags = PROC_NEW_GROUP | PROC_DIE_WITH_PARENT;
}

int batch_spawn(struct proc *p, const char *const *argv, const char *out_path,
		const char *err_path)
{
	struct strvec env = STRVEC_INIT;
	int ret;

	batch_env(&env);
	batch_proc(p, argv, &env);
	p->out = p->err = PROC_IO_FILE;
	p->out_path = out_path;
	p->err_path = err_path;
	ret = proc_start(p);
	/* the environment is copied by the exec: proc_start() is done with it */
	p->env = NULL;
	strvec_clear(&env);
	return ret;
}

int batch_command(struct buf *out, const char *const *argv)
{
	struct strvec env = STRVEC_INIT;
	struct buf err = BUF_INIT;
	struct proc p;
	int code;

	batch_env(&env);
	batch_proc(&p, argv, &env);
	p.out = out ? PROC_IO_CAPTURE : PROC_IO_NULL;
	p.out_buf = out;
	p.err = PROC_IO_CAPTURE;
	p.err_buf = &err;
	/* a patch (`git diff`) is kept whole; without it, the default cap bounds stderr */
	p.capture_max = out ? PROC_CAPTURE_ALL : 0;
	code = proc_run(&p);
	proc_release(&p);
	strvec_clear(&env);
	if (code > 0) {
		const char *last;

		buf_rtrim(&err);
		last = strrchr(err.buf, '\n');
		code = err_set(FX_ERROR, "%s %s: exit status %d%s%s", argv[0],
			       argv[1] ? argv[1] : "", code, err.len ? ": " : "",
			       last ? last + 1 : err.buf);
	}
	buf_release(&err);
	return code;
}
