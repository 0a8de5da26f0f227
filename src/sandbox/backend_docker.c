/*
 * The "docker" backend: the seed's DockerExecutor. The command runs as
 *
 *   docker run --rm --name forgex-<8 hex> --network none
 *       --cap-drop ALL --security-opt no-new-privileges
 *       [--read-only --tmpfs /tmp] [--cpus C] [--memory M]
 *       --user USER|UID:GID -v WORKSPACE:/workspace -w /workspace[/REL]
 *       [-e NAME=value]... IMAGE ARGV...
 *
 * flag for flag as build_docker_argv() builds it. The docker client is the
 * supervised child (own process group, output cap, kill-all); on timeout
 * or interrupt `docker kill NAME` stops the container first. The client
 * gets the sanitized environment plus the DOCKER_* variables that say
 * where the engine is; explicit overrides go into the container with -e,
 * never into the client.
 *
 * The network: `--network none`, always. Docker's bridge would give a
 * command every address the host routes to (the host's services on its
 * bridge address, the cloud metadata service, every domain), which is
 * what forgex's egress proxy exists to refuse; and the proxy cannot be
 * brought into a container without an engine that mounts its socket and
 * a forwarder inside the image. So `[sandbox] network = true` is refused
 * by docker_init() with the reason, and `auto` does not pick docker for
 * it (docs/internals/executor.md, "docker").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/path.h"
#include "sandbox/executor.h"
#include "sandbox/sandbox.h"

#define DOCKER_KILL_TIMEOUT_MS 10000

static const char *const client_vars[] = {
	"DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "DOCKER_CERT_PATH",
	"DOCKER_TLS_VERIFY", "XDG_RUNTIME_DIR",
};

static int docker_on_path(void)
{
	const char *p = getenv("PATH"), *s, *e;
	int found = 0;

	for (s = p ? p : "/bin:/usr/bin"; !found; s = e + 1) {
		struct buf cand = BUF_INIT;

		e = strchrnul(s, ':');
		buf_add(&cand, s, (size_t)(e - s));
		buf_addstr(&cand, "/docker");
		found = cand.buf[0] == '/' && access(cand.buf, X_OK) == 0;
		buf_release(&cand);
		if (!*e)
			break;
	}
	return found;
}

static int docker_init(struct executor *ex)
{
	if (!docker_on_path())
		return err_set(FX_EUNSUPPORTED, "the docker backend needs a 'docker' client on "
			       "PATH");
	if (ex->network)
		return err_set(FX_EUNSUPPORTED, "the docker backend cannot route the network "
			       "through forgex's egress proxy, and docker's bridge would give "
			       "commands the host's network: [sandbox] network = true needs the "
			       "native backend (or set network = false to run under docker "
			       "without network)");
	if (!*ex->cpu_limit && !*ex->memory_limit_text)
		ex->caps &= ~(unsigned)SB_CAP_LIMITS;	/* nothing asked of docker */
	return 0;
}

/* "forgex-" and 8 hex digits, like uuid4().hex[:8] */
static void container_name(char *out, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	unsigned char rnd[4];
	char h[9];
	size_t i;

	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		die("getrandom: %s", strerror(errno));
	for (i = 0; i < 4; i++) {
		h[2 * i] = hex[rnd[i] >> 4];
		h[2 * i + 1] = hex[rnd[i] & 15];
	}
	h[8] = '\0';
	snprintf(out, len, "forgex-%s", h);
}

/**
 * The seed's build_docker_argv(): `user_argv` in `workdir` (inside
 * ex->workspace), container `name`, `env` ("NAME=value", in order, later
 * duplicates replacing earlier ones as a Python dict would).
 */
static void build_docker_argv(struct strvec *out, const struct executor *ex,
			      const char *const *user_argv, size_t argc, const char *workdir,
			      const char *name, const char *const *env)
{
	struct strvec vars = STRVEC_INIT;
	struct buf w = BUF_INIT;
	size_t i;

	strvec_push(out, "docker");
	strvec_push(out, "run");
	strvec_push(out, "--rm");
	strvec_push(out, "--name");
	strvec_push(out, name);
	strvec_push(out, "--network");
	strvec_push(out, "none");	/* always: see the top of this file */
	strvec_push(out, "--cap-drop");
	strvec_push(out, "ALL");
	strvec_push(out, "--security-opt");
	strvec_push(out, "no-new-privileges");
	if (ex->read_only) {
		strvec_push(out, "--read-only");
		strvec_push(out, "--tmpfs");
		strvec_push(out, "/tmp");
	}
	if (*ex->cpu_limit) {
		strvec_push(out, "--cpus");
		strvec_push(out, ex->cpu_limit);
	}
	if (*ex->memory_limit_text) {
		strvec_push(out, "--memory");
		strvec_push(out, ex->memory_limit_text);
	}
	strvec_push(out, "--user");
	if (*ex->user)
		strvec_push(out, ex->user);
	else
		strvec_pushf(out, "%ld:%ld", (long)getuid(), (long)getgid());
	strvec_push(out, "-v");
	strvec_pushf(out, "%s:/workspace%s", ex->workspace, ex->workspace_read_only ? ":ro" : "");

	/* working folder inside the container */
	if (path_is_within(workdir, ex->workspace) && strcmp(workdir, ex->workspace)) {
		path_relative(&w, workdir, ex->workspace);
		strvec_push(out, "-w");
		strvec_pushf(out, "/workspace/%s", w.buf);
	} else {
		strvec_push(out, "-w");
		strvec_push(out, "/workspace");
	}

	for (; env && *env; env++)
		if (strchr(*env, '=') && **env != '=')
			proc_env_set(&vars, *env);
	for (i = 0; i < vars.nr; i++) {
		strvec_push(out, "-e");
		strvec_push(out, vars.v[i]);
	}
	strvec_push(out, ex->image);
	for (i = 0; i < argc; i++)
		strvec_push(out, user_argv[i]);
	strvec_clear(&vars);
	buf_release(&w);
}

static int docker_prepare(struct executor *ex, struct sb_spawn *sp)
{
	size_t i;

	/*
	 * The container has a file system of its own (the workspace at
	 * /workspace): a host path named for the command is not carried in.
	 */
	if (ex->readonly_paths.nr)
		return err_set(FX_EUNSUPPORTED, "the docker backend does not carry host paths "
			       "into the container ('%s' is needed read-only); use the native "
			       "backend", ex->readonly_paths.v[0]);
	container_name(sp->plan.name, sizeof(sp->plan.name));
	strvec_clear(&sp->argv);
	build_docker_argv(&sp->argv, ex, sp->user_argv, sp->user_argc, sp->workdir,
			  sp->plan.name, sp->env_overrides);
	/* the client: safe variables and where the engine is, no overrides */
	strvec_clear(&sp->env);
	proc_env_build(&sp->env, NULL);
	for (i = 0; i < ARRAY_SIZE(client_vars); i++) {
		const char *v = getenv(client_vars[i]);

		if (v) {
			char *kv = xstrfmt("%s=%s", client_vars[i], v);

			proc_env_set(&sp->env, kv);
			free(kv);
		}
	}
	sp->spawn_fail_status = 125;
	sp->plan.pid_namespace = 0;
	sp->plan.clone_flags = 0;
	return 0;
}

static void docker_stop(struct executor *ex, struct sb_spawn *sp)
{
	struct proc p;

	(void)ex;
	if (sp->plan.stopped || !sp->plan.name[0])
		return;
	sp->plan.stopped = 1;
	proc_init(&p);
	strvec_push(&p.argv, sp->path ? sp->path : "docker");
	strvec_push(&p.argv, "kill");
	strvec_push(&p.argv, sp->plan.name);
	p.env = sp->env.v;
	p.timeout_ms = DOCKER_KILL_TIMEOUT_MS;
	proc_run(&p);
	proc_release(&p);
}

const struct sandbox_backend sandbox_backend_docker = {
	.name = "docker",
	.caps = SB_CAP_FS | SB_CAP_NET | SB_CAP_LIMITS | SB_CAP_CONTAINER,
	.init = docker_init,
	.prepare = docker_prepare,
	.stop = docker_stop,
};
