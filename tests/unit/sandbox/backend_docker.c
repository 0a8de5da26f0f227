/*
 * The docker backend against a fake `docker` (a shell script first on
 * PATH) that records its argv and environment and plays the engine: it
 * prints, exits with a status, or sleeps until `docker kill` stops it.
 * The argv must be the seed's build_docker_argv(), flag for flag.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "config/config.h"
#include "helpers/testutil.h"
#include "sandbox/executor.h"
#include "sandbox/sandbox.h"

static char *ws, *fake, *old_path;
static struct config cfg;

static void cfg_setup(struct config *c)
{
	/* the built-in defaults, as a user without a config file has them */
	config_init(c);
	free(c->sandbox.backend);
	c->sandbox.backend = xstrdup("docker");
}

static void cfg_teardown(struct config *c)
{
	config_release(c);
}

static void set_str(char **field, const char *v)
{
	free(*field);
	*field = xstrdup(v);
}

static const char fake_docker[] =
	"#!/bin/sh\n"
	"d='%s'\n"
	"case \"$1\" in\n"
	"version) echo 99.0.0; exit 0 ;;\n"
	"kill) printf '%%s\\n' \"$2\" >> \"$d/killed\"\n"
	"      [ -s \"$d/run.pid\" ] && kill \"$(cat \"$d/run.pid\")\"; exit 0 ;;\n"
	"run) printf '%%s\\0' \"$@\" > \"$d/argv\"; env > \"$d/env\"; echo $$ > \"$d/run.pid\"\n"
	"     eval \"last=\\${$#}\"\n"
	"     case \"$last\" in\n"
	"     nap) exec sleep 30 ;;\n"
	"     *) echo 'container says hi'; echo 'container warns' >&2; exit 3 ;;\n"
	"     esac ;;\n"
	"esac\n"
	"echo \"fake docker: unexpected $1\" >&2; exit 125\n";

static int setup(void **state)
{
	char *script, *path;

	(void)state;
	ws = tu_mkdtemp();
	fake = tu_mkdtemp();
	script = xstrfmt(fake_docker, fake);
	tu_write(fake, "bin/docker", script);
	free(script);
	path = xstrfmt("%s/bin/docker", fake);
	assert_int_equal(chmod(path, 0755), 0);
	free(path);
	old_path = xstrdup(getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
	path = xstrfmt("%s/bin:%s", fake, old_path);
	setenv("PATH", path, 1);
	free(path);
	cfg_setup(&cfg);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	setenv("PATH", old_path, 1);
	FREE_AND_NULL(old_path);
	cfg_teardown(&cfg);
	tu_rmtree(ws);
	tu_rmtree(fake);
	ws = fake = NULL;
	return 0;
}

/* The argv the fake recorded (NUL-separated). */
static void recorded_argv(struct strvec *out)
{
	struct buf b = BUF_INIT;
	char *p = xstrfmt("%s/argv", fake);
	size_t i = 0;

	if (fsutil_read_file(&b, p, 0) < 0)
		fail_msg("the fake docker did not record an argv");
	while (i < b.len) {
		strvec_push(out, b.buf + i);
		i += strlen(b.buf + i) + 1;
	}
	buf_release(&b);
	free(p);
}

static int matches(const char *re, const char *s)
{
	regex_t r;
	int ok;

	assert_int_equal(regcomp(&r, re, REG_EXTENDED | REG_NOSUB), 0);
	ok = regexec(&r, s, 0, NULL, 0) == 0;
	regfree(&r);
	return ok;
}

/*
 * Run `argv` in `cwd` with `env` under docker and compare what the fake
 * saw with `want` (NAME stands for the container name, WS for the
 * workspace). Returns the container name (caller frees).
 */
static char *check_argv(const char *cwd, const char *const *env, const char *const *argv,
			const char *const *want)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct exec_request req = { argv, 0, cwd, 0, env };
	struct strvec got = STRVEC_INIT;
	struct executor ex;
	char *name;
	size_t i, n = 0;

	while (argv[req.argc])
		req.argc++;
	if (executor_init(&ex, &cfg, ws) < 0)
		fail_msg("executor_init: %s", err_last());
	assert_string_equal(executor_backend_name(&ex), "docker");
	assert_int_equal(executor_run(&r, &ex, &req), 0);
	assert_int_equal(r.exit_code, 3);
	assert_string_equal(r.out.buf, "container says hi\n");
	assert_string_equal(r.err.buf, "container warns\n");
	recorded_argv(&got);
	while (want[n])
		n++;
	/* argv[0] is how the client was started; the seed's list starts with "docker" */
	assert_int_equal(got.nr + 1, n);
	assert_true(matches("^forgex-[0-9a-f]{8}$", got.v[3]));
	name = xstrdup(got.v[3]);
	for (i = 1; i < n; i++) {
		const char *w = want[i];
		char *exp = NULL;

		if (!strcmp(w, "NAME"))
			w = name;
		else if (!strcmp(w, "WS:/workspace"))
			w = exp = xstrfmt("%s:/workspace", ws);
		if (strcmp(got.v[i - 1], w))
			fail_msg("argv[%zu]: got '%s', want '%s'", i, got.v[i - 1], w);
		free(exp);
	}
	strvec_clear(&got);
	exec_result_release(&r);
	executor_release(&ex);
	return name;
}

static void test_docker_argv_defaults(void **state)
{
	char *user = xstrfmt("%ld:%ld", (long)getuid(), (long)getgid());
	const char *want[] = {
		"docker", "run", "--rm", "--name", "NAME", "--network", "none", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--read-only", "--tmpfs", "/tmp",
		"--memory", "4g",	/* [sandbox] memory_limit has a default */
		"--user", user, "-v", "WS:/workspace", "-w", "/workspace", "python:3.12-slim",
		"echo", "hi", NULL,
	};
	char *name;

	(void)state;
	name = check_argv(NULL, NULL, (const char *const[]){ "echo", "hi", NULL }, want);
	free(name);
	free(user);
}

static void test_docker_argv_everything_set(void **state)
{
	const char *env[] = { "FOO=1", "BAR=two words", "EMPTY=", NULL };
	const char *want[] = {
		"docker", "run", "--rm", "--name", "NAME", "--network", "none", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--cpus", "1.5", "--memory", "512m",
		"--user", "1000:1000", "-v", "WS:/workspace", "-w", "/workspace/sub/dir",
		"-e", "FOO=1", "-e", "BAR=two words", "-e", "EMPTY=", "img:tag", "ls", "-la",
		"a b", NULL,
	};
	char *name;

	(void)state;
	tu_write(ws, "sub/dir/f", "");
	cfg.sandbox.read_only = 0;
	set_str(&cfg.sandbox.cpu_limit, "1.5");
	set_str(&cfg.sandbox.memory_limit, "512m");
	set_str(&cfg.sandbox.user, "1000:1000");
	set_str(&cfg.sandbox.image, "img:tag");
	name = check_argv("sub/dir", env, (const char *const[]){ "ls", "-la", "a b", NULL }, want);
	free(name);
}

/*
 * Issue 20: docker never gives the network. Its bridge would reach every
 * address the host routes to, and forgex's egress proxy cannot be brought
 * into a container: a network command (mode auto lets it through the gate)
 * runs with --network none, and network = true is refused at init, with
 * the reason, whether docker is configured or chosen by auto.
 */
static void test_docker_network_is_none_or_refused(void **state)
{
	char *user = xstrfmt("%ld:%ld", (long)getuid(), (long)getgid());
	const char *want_off[] = {
		"docker", "run", "--rm", "--name", "NAME", "--network", "none", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--read-only", "--tmpfs", "/tmp",
		"--memory", "4g", "--user", user, "-v", "WS:/workspace", "-w", "/workspace",
		"python:3.12-slim", "curl", "-s", "x", NULL,
	};
	const char *want_none[] = {
		"docker", "run", "--rm", "--name", "NAME", "--network", "none", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--read-only", "--tmpfs", "/tmp",
		"--memory", "4g", "--user", user, "-v", "WS:/workspace", "-w", "/workspace",
		"python:3.12-slim", "echo", "hi", NULL,
	};
	struct executor ex;
	char *name;

	(void)state;
	set_str(&cfg.permissions.mode, "auto");
	name = check_argv(NULL, NULL, (const char *const[]){ "curl", "-s", "x", NULL }, want_off);
	free(name);
	name = check_argv(NULL, NULL, (const char *const[]){ "echo", "hi", NULL }, want_none);
	free(name);

	cfg.sandbox.network = 1;
	assert_int_equal(executor_init(&ex, &cfg, ws), FX_EUNSUPPORTED);
	assert_non_null(strstr(err_last(), "the docker backend cannot route the network through "
			       "forgex's egress proxy"));
	assert_non_null(strstr(err_last(), "needs the native backend"));
	/* auto does not fall back to docker for it either: both reasons are named */
	sandbox_probe_mask(SB_FEAT_LANDLOCK);
	set_str(&cfg.sandbox.backend, "auto");
	assert_int_equal(executor_init(&ex, &cfg, ws), FX_EUNSUPPORTED);
	assert_non_null(strstr(err_last(), "native: "));
	assert_non_null(strstr(err_last(), "; docker: the docker backend cannot route the network"));
	sandbox_probe_mask(0);
	/* the fake engine never ran */
	{
		char *argv_file = xstrfmt("%s/argv", fake);

		assert_int_equal(unlink(argv_file), 0);
		free(argv_file);
	}
	assert_null(tu_read(fake, "argv"));
	cfg.sandbox.network = 0;
	free(user);
}

static void test_docker_argv_some_set(void **state)
{
	char *user = xstrfmt("%ld:%ld", (long)getuid(), (long)getgid());
	/* a later duplicate replaces the value in place, as in a Python dict */
	const char *env[] = { "A=1", "B=2", "A=3", NULL };
	const char *want_cpu[] = {
		"docker", "run", "--rm", "--name", "NAME", "--network", "none", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--read-only", "--tmpfs", "/tmp",
		"--cpus", "2", "--memory", "4g", "--user", user, "-v", "WS:/workspace",
		"-w", "/workspace/sub",
		"-e", "A=3", "-e", "B=2", "python:3.12-slim", "make", "test", NULL,
	};
	const char *want_mem[] = {
		"docker", "run", "--rm", "--name", "NAME", "--network", "none", "--cap-drop", "ALL",
		"--security-opt", "no-new-privileges", "--memory", "2g", "--user", user,
		"-v", "WS:/workspace", "-w", "/workspace", "python:3.12-slim", "make", NULL,
	};
	char *n1, *n2;

	(void)state;
	tu_write(ws, "sub/x", "");
	set_str(&cfg.sandbox.cpu_limit, "2");
	n1 = check_argv("sub", env, (const char *const[]){ "make", "test", NULL }, want_cpu);
	set_str(&cfg.sandbox.cpu_limit, "");
	set_str(&cfg.sandbox.memory_limit, "2g");
	cfg.sandbox.read_only = 0;
	/* the workspace root given as "sub/.." maps to /workspace */
	n2 = check_argv("sub/..", NULL, (const char *const[]){ "make", NULL }, want_mem);
	/* a new container name each time */
	assert_string_not_equal(n1, n2);
	free(n1);
	free(n2);
	free(user);
}

static void test_docker_client_environment(void **state)
{
	const char *env[] = { "FOO=inside", NULL };
	struct exec_result r = EXEC_RESULT_INIT;
	struct exec_request req = { (const char *const[]){ "echo", NULL }, 1, NULL, 0, env };
	struct executor ex;
	char *seen;

	(void)state;
	setenv("OPENAI_API_KEY", "sk-test-secret", 1);
	setenv("DOCKER_HOST", "unix:///tmp/forgex-test-docker.sock", 1);
	assert_int_equal(executor_init(&ex, &cfg, ws), 0);
	assert_int_equal(executor_run(&r, &ex, &req), 0);
	seen = tu_read(fake, "env");
	assert_non_null(seen);
	assert_null(strstr(seen, "OPENAI_API_KEY"));
	/* overrides go into the container (-e), not into the client */
	assert_null(strstr(seen, "FOO=inside"));
	assert_non_null(strstr(seen, "DOCKER_HOST=unix:///tmp/forgex-test-docker.sock"));
	free(seen);
	exec_result_release(&r);
	executor_release(&ex);
	unsetenv("OPENAI_API_KEY");
	unsetenv("DOCKER_HOST");
}

static void test_docker_timeout_kills_container(void **state)
{
	struct exec_result r = EXEC_RESULT_INIT;
	/* the fake sleeps when the last argument is "nap" */
	struct exec_request req = { (const char *const[]){ "nap", NULL }, 1, NULL, 800, NULL };
	struct strvec got = STRVEC_INIT;
	struct executor ex;
	char *killed;

	(void)state;
	assert_int_equal(executor_init(&ex, &cfg, ws), 0);
	assert_int_equal(executor_run(&r, &ex, &req), 0);
	assert_true(r.timed_out);
	assert_true(r.duration_ms < 5000);
	recorded_argv(&got);
	killed = tu_read(fake, "killed");
	assert_non_null(killed);
	/* `docker kill NAME` with the name given to `docker run --name` */
	killed[strcspn(killed, "\n")] = '\0';
	assert_string_equal(killed, got.v[3]);
	free(killed);
	strvec_clear(&got);
	exec_result_release(&r);
	executor_release(&ex);
}

static void test_docker_refusals(void **state)
{
	struct exec_result r = EXEC_RESULT_INIT;
	struct exec_request req = { (const char *const[]){ "rm", "-rf", "/", NULL }, 3, NULL, 0,
				    NULL };
	struct executor ex;
	char *path;

	(void)state;
	assert_int_equal(executor_init(&ex, &cfg, ws), 0);
	/* policy first: the fake never runs */
	assert_int_equal(executor_run(&r, &ex, &req), FX_EDENIED);
	req.argv = (const char *const[]){ "ls", NULL };
	req.argc = 1;
	req.cwd = "..";
	assert_int_equal(executor_run(&r, &ex, &req), FX_EDENIED);
	assert_null(tu_read(fake, "argv"));
	/* the client vanished after init: the seed's 125 */
	path = xstrfmt("%s/bin/docker", fake);
	assert_int_equal(unlink(path), 0);
	free(path);
	path = xstrfmt("%s/bin", fake);	/* and no real one further on */
	setenv("PATH", path, 1);
	req.cwd = NULL;
	assert_int_equal(executor_run(&r, &ex, &req), 0);
	assert_int_equal(r.exit_code, 125);
	assert_non_null(strstr(r.err.buf, "docker execution failed"));
	exec_result_release(&r);
	executor_release(&ex);
	/* and without a client, the backend is refused */
	assert_int_equal(executor_init(&ex, &cfg, ws), FX_EUNSUPPORTED);
	assert_non_null(strstr(err_last(), "docker"));
	free(path);
}

static void test_docker_probe_and_auto(void **state)
{
	struct sandbox_caps caps;
	struct executor ex;

	(void)state;
	sandbox_probe(&caps, 1);
	assert_true(caps.docker_client);
	assert_true(caps.docker_engine);
	assert_string_equal(caps.docker_version, "99.0.0");
	/* auto picks docker when native is impossible and an engine answers */
	sandbox_probe_mask(SB_FEAT_LANDLOCK);
	set_str(&cfg.sandbox.backend, "auto");
	assert_int_equal(executor_init(&ex, &cfg, ws), 0);
	assert_string_equal(executor_backend_name(&ex), "docker");
	assert_non_null(strstr(executor_warnings(&ex)->v[0], "chose docker"));
	executor_release(&ex);
	sandbox_probe_mask(0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_docker_argv_defaults, setup, teardown),
		cmocka_unit_test_setup_teardown(test_docker_argv_everything_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_docker_network_is_none_or_refused, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_docker_argv_some_set, setup, teardown),
		cmocka_unit_test_setup_teardown(test_docker_client_environment, setup, teardown),
		cmocka_unit_test_setup_teardown(test_docker_timeout_kills_container, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_docker_refusals, setup, teardown),
		cmocka_unit_test_setup_teardown(test_docker_probe_and_auto, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
