/*
 * What a new user met, end to end: doctor with -c, doctor against a
 * server that refuses the key or is not a model server, a run against a
 * server that is not there (it says so at once, before any test runs),
 * init in a subfolder of a repository, the instruction files other tools
 * write, and the help's words on max_iterations and cost.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "helpers/testutil.h"

static void forgex(struct tu_result *r, const char *cwd, const char *const *args)
{
	struct strvec argv = STRVEC_INIT;
	char *abs = realpath(tu_forgex(), NULL);

	strvec_push(&argv, abs ? abs : tu_forgex());
	free(abs);
	strvec_pushv(&argv, args);
	tu_run(r, (const char *const *)argv.v, cwd, NULL, NULL);
	strvec_clear(&argv);
}

#define FORGEX(r, cwd, ...) \
	do { \
		const char *a_[] = { __VA_ARGS__, NULL }; \
		forgex((r), (cwd), a_); \
	} while (0)

/* An HTTP server on 127.0.0.1 answering every GET with `status`; its port in *port. */
static pid_t http_status_server(int status, int *port)
{
	char *dir = tu_mkdtemp(), *pf = xstrfmt("%s/port", dir);
	char *code = xstrfmt(
		"import http.server, os\n"
		"class H(http.server.BaseHTTPRequestHandler):\n"
		"    def do_GET(self):\n"
		"        b = b'{\"error\": {\"message\": \"nope\"}}'\n"
		"        self.send_response(%d)\n"
		"        self.send_header('Content-Type', 'application/json')\n"
		"        self.send_header('Content-Length', str(len(b)))\n"
		"        self.end_headers()\n"
		"        self.wfile.write(b)\n"
		"    def log_message(self, *a):\n"
		"        pass\n"
		"s = http.server.HTTPServer(('127.0.0.1', 0), H)\n"
		"open('%s.tmp', 'w').write(str(s.server_address[1]))\n"
		"os.rename('%s.tmp', '%s')\n"
		"s.serve_forever()\n", status, pf, pf, pf);
	pid_t pid = fork();
	int i;

	if (pid < 0)
		die("fork");
	if (!pid) {
		execlp("python3", "python3", "-c", code, (char *)NULL);
		_exit(127);
	}
	*port = 0;
	for (i = 0; i < 500 && !*port; i++) {
		char *t;

		usleep(10000);
		t = fsutil_exists(pf) ? tu_read(dir, "port") : NULL;
		if (t)
			*port = atoi(t);
		free(t);
	}
	if (!*port)
		fail_msg("the test HTTP server did not start");
	free(code);
	free(pf);
	tu_rmtree(dir);
	return pid;
}

static void stop(pid_t pid)
{
	int st;

	kill(pid, SIGTERM);
	waitpid(pid, &st, 0);
}

static void test_doctor_takes_c_and_judges_what_the_server_says(void **state)
{
	char *ws = tu_mkdtemp(), *url;
	struct tu_result r;
	int port;
	pid_t pid;

	(void)state;
	/* -c reaches doctor: the configured address is the one checked */
	FORGEX(&r, ws, "-c", "providers.default.base_url=http://127.0.0.1:1/v1", "doctor");
	assert_non_null(strstr(r.out.buf, "cannot reach http://127.0.0.1:1/v1/models"));
	assert_int_equal(r.status, 0);	/* nothing answering: a warning */
	tu_result_release(&r);
	FORGEX(&r, ws, "-c", "sandbox.backend=bogus", "doctor");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out.buf, "-c sandbox.backend=bogus: key 'sandbox.backend': "
			       "invalid value \"bogus\""));
	tu_result_release(&r);

	/* a server that refuses the key: a failure, exit 1 */
	pid = http_status_server(401, &port);
	url = xstrfmt("providers.default.base_url=http://127.0.0.1:%d/v1", port);
	FORGEX(&r, ws, "-c", url, "doctor");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out.buf, "HTTP 401"));
	assert_non_null(strstr(r.out.buf, "the server refused the key; set $OPENAI_API_KEY"));
	tu_result_release(&r);
	stop(pid);
	free(url);

	/* not a model server at this address */
	pid = http_status_server(404, &port);
	url = xstrfmt("providers.default.base_url=http://127.0.0.1:%d/v1", port);
	FORGEX(&r, ws, "-c", url, "doctor");
	assert_int_equal(r.status, 1);
	assert_non_null(strstr(r.out.buf, "no model server at this address; is "
			       "providers.default.base_url right"));
	tu_result_release(&r);
	stop(pid);
	free(url);
	tu_rmtree(ws);
}

static void test_run_against_no_server_stops_at_once(void **state)
{
	char *ws = tu_mkdtemp();
	struct tu_result r;
	double t0;

	(void)state;
	tu_write(ws, "test_x.py", "import unittest\n\n\nclass T(unittest.TestCase):\n"
		 "    def test_slow(self):\n        import time; time.sleep(3)\n");
	tu_git_init(ws);
	t0 = tu_now();
	FORGEX(&r, ws, "-c", "providers.default.base_url=http://127.0.0.1:1/v1", "-c",
	       "permissions.mode=auto", "run", "fix it");
	assert_true(tu_now() - t0 < 3);	/* the baseline (3 s of tests) never ran */
	assert_int_equal(r.status, 3);
	assert_non_null(strstr(r.err.buf, "cannot reach http://127.0.0.1:1/v1: "));
	assert_non_null(strstr(r.err.buf, "hint: is the model server running? Or point "
			       "providers.default.base_url at one"));
	assert_null(strstr(r.err.buf, "==> baseline"));
	/* said once, and no run was started */
	assert_null(strstr(strstr(r.err.buf, "cannot reach") + 1, "cannot reach"));
	{
		char *runs = xstrfmt("%s/.forgex/runs", ws);

		assert_false(fsutil_is_dir(runs));
		free(runs);
	}
	tu_result_release(&r);
	tu_rmtree(ws);
}

static void test_init_in_a_subfolder_finds_the_repository(void **state)
{
	char *ws = tu_mkdtemp(), *sub = xstrfmt("%s/src/deep", ws);
	struct tu_result r;
	char *p;

	(void)state;
	tu_sh(ws, "git init -q && mkdir -p src/deep");
	FORGEX(&r, sub, "init");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "the folder above holding .git"));
	p = xstrfmt("%s/.forgex/config.toml", ws);
	assert_true(fsutil_exists(p));
	free(p);
	p = xstrfmt("%s/.forgex", sub);
	assert_false(fsutil_exists(p));
	free(p);
	tu_result_release(&r);
	/* every other command finds the same project from there */
	FORGEX(&r, sub, "config", "show", "--json");
	assert_int_equal(r.status, 0);
	tu_result_release(&r);
	/* --here: this folder, on purpose */
	FORGEX(&r, sub, "init", "--here");
	assert_int_equal(r.status, 0);
	p = xstrfmt("%s/.forgex/config.toml", sub);
	assert_true(fsutil_exists(p));
	free(p);
	tu_result_release(&r);
	free(sub);
	tu_rmtree(ws);
}

static void test_help_and_defaults_say_what_is_true(void **state)
{
	char *ws = tu_mkdtemp();
	struct tu_result r;

	(void)state;
	FORGEX(&r, ws, "config", "get", "context.instructions");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "\"CLAUDE.md\""));
	assert_non_null(strstr(r.out.buf, "\".github/copilot-instructions.md\""));
	tu_result_release(&r);
	FORGEX(&r, ws, "help", "run");
	assert_non_null(strstr(r.out.buf, "max_iterations reviews in all (3: the first attempt and\n"
			       "two repairs)"));
	tu_result_release(&r);
	tu_rmtree(ws);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_doctor_takes_c_and_judges_what_the_server_says),
		cmocka_unit_test(test_run_against_no_server_stops_at_once),
		cmocka_unit_test(test_init_in_a_subfolder_finds_the_repository),
		cmocka_unit_test(test_help_and_defaults_say_what_is_true),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
