/*
 * forgex on a terminal, end to end: the real binary in a new session whose
 * controlling terminal is a pseudo-terminal (so /dev/tty is the pty), with
 * build/mockllm playing the roles. Approval prompts in line with the
 * progress, `forgex` alone opening a session, the spinner, and the same
 * run with no terminal.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "base/jsonx.h"
#include "base/strvec.h"
#include "helpers/scripted.h"
#include "helpers/testutil.h"
#include "mockllm/mockctl.h"

extern char **environ;

/* A prompt to wait for and what to type once it shows (the nth time it shows). */
struct reply {
	const char *prompt;
	const char *type;
};

struct ptyrun {
	int status;		/* exit status, or 128+signal */
	struct buf tty;		/* everything written to the terminal (stdout and stderr) */
	struct buf out;		/* stdout when it is a pipe */
};

/*
 * Run forgex with `args` in `cwd` as the leader of a new session whose
 * controlling terminal is a new pty: stdin and stderr are the pty; stdout
 * too unless `stdout_pipe`. Each `replies[i].prompt` is answered with its
 * text once it appears (in order). Killed after `deadline` seconds.
 */
static void run_pty(struct ptyrun *r, const char *cwd, const char *const *args,
		    const struct reply *replies, size_t nreplies, int stdout_pipe, double deadline)
{
	struct strvec argv = STRVEC_INIT;
	int master, out[2] = { -1, -1 }, st;
	size_t next = 0, seen = 0;
	double started = tu_now();
	char *abs = realpath(tu_forgex(), NULL);
	pid_t pid;

	memset(r, 0, sizeof(*r));
	buf_init(&r->tty, 0);
	buf_init(&r->out, 0);
	strvec_push(&argv, abs ? abs : tu_forgex());
	free(abs);
	strvec_pushv(&argv, args);
	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (master < 0 || grantpt(master) || unlockpt(master))
		die("posix_openpt");
	if (stdout_pipe && pipe2(out, O_CLOEXEC))
		die("pipe");
	pid = fork();
	if (pid < 0)
		die("fork");
	if (!pid) {
		struct termios t;
		int slave;

		if (setsid() < 0)
			_exit(124);
		slave = open(ptsname(master), O_RDWR);
		if (slave < 0 || ioctl(slave, TIOCSCTTY, 0) < 0)
			_exit(124);
		/* keep "\n" as written, so the test sees what forgex wrote */
		if (!tcgetattr(slave, &t)) {
			t.c_oflag &= ~(tcflag_t)OPOST;
			tcsetattr(slave, TCSANOW, &t);
		}
		dup2(slave, 0);
		dup2(stdout_pipe ? out[1] : slave, 1);
		dup2(slave, 2);
		if (slave > 2)
			close(slave);
		if (chdir(cwd))
			_exit(125);
		execve(argv.v[0], (char *const *)argv.v, environ);
		_exit(127);
	}
	if (stdout_pipe)
		close(out[1]);
	for (;;) {
		struct pollfd p[2] = { { master, POLLIN, 0 }, { out[0], POLLIN, 0 } };
		char chunk[4096];
		ssize_t n;

		if (tu_now() - started > deadline) {
			kill(pid, SIGKILL);
			break;
		}
		if (poll(p, 2, 20) < 0 && errno != EINTR)
			die("poll");
		if (out[0] >= 0 && p[1].revents) {
			n = read(out[0], chunk, sizeof(chunk));
			if (n > 0) {
				buf_add(&r->out, chunk, (size_t)n);
			} else if (n == 0 || errno != EINTR) {
				close(out[0]);
				out[0] = -1;
			}
		}
		if (p[0].revents) {
			n = read(master, chunk, sizeof(chunk));
			if (n > 0)
				buf_add(&r->tty, chunk, (size_t)n);
			else if (n == 0 || errno != EINTR)
				break;	/* EIO: every holder of the terminal is gone */
		}
		if (next < nreplies) {
			const char *at = strstr(r->tty.buf + seen, replies[next].prompt);

			if (at) {
				/* take longer than a person's glance: a spinner would redraw */
				usleep(400000);
				seen = (size_t)(at - r->tty.buf) + strlen(replies[next].prompt);
				if (write(master, replies[next].type, strlen(replies[next].type)) < 0)
					die("write to the pty");
				next++;
			}
		}
	}
	while (out[0] >= 0) {
		char chunk[4096];
		ssize_t n = read(out[0], chunk, sizeof(chunk));

		if (n > 0)
			buf_add(&r->out, chunk, (size_t)n);
		else if (n == 0 || errno != EINTR) {
			close(out[0]);
			out[0] = -1;
		}
	}
	close(master);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid");
	r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
	strvec_clear(&argv);
}

static void ptyrun_release(struct ptyrun *r)
{
	buf_release(&r->tty);
	buf_release(&r->out);
}

/* A git repository with a passing Python test and a config for the mock. */
static char *project(const struct mock *m, const char *mode)
{
	char *dir = tu_mkdtemp();
	char *prov = sc_provider_toml(m, mode);
	char *cfg = xstrfmt("%s[pipeline]\ntest_command = [\"python3\", \"-m\", \"unittest\"]\n",
			    prov);

	tu_write(dir, "calc.py", "def add(a, b):\n    return a + b\n");
	tu_write(dir, "test_calc.py", "import unittest\nfrom calc import add\n\n\n"
		 "class T(unittest.TestCase):\n    def test_add(self):\n"
		 "        self.assertEqual(add(2, 3), 5)\n");
	tu_write(dir, ".gitignore", "__pycache__/\n");
	tu_git_init(dir);
	tu_write(dir, ".forgex/config.toml", cfg);
	tu_trust(dir, NULL);
	free(cfg);
	free(prov);
	return dir;
}

/* the id of the last call() */
static char last_id[32];

static void call(json_t *steps, const char *name, const char *args)
{
	static int n;
	json_t *a = NULL;
	char *id = last_id;

	if (jsonx_parse(&a, args, strlen(args), "step"))
		die("bad args: %s", args);
	snprintf(last_id, sizeof(last_id), "call_%d", ++n);
	json_array_append_new(steps, json_pack("{s:[{s:s, s:s, s:o}]}", "tool_calls", "id", id,
					       "name", name, "arguments", a));
}

static char *script(json_t *steps)
{
	struct buf b = BUF_INIT;
	json_t *s = json_pack("{s:o}", "steps", steps);

	jsonx_dump(&b, s, 0);
	json_decref(s);
	return buf_detach(&b, NULL);
}

#define PLAN "{\"summary\": \"Check pip\", \"steps\": [{\"id\": \"1\", \"title\": \"Ask pip\"," \
	" \"description\": \"run pip\", \"files\": []}], \"acceptance\": [\"ok\"]}"
#define FINISH "{\"summary\": \"done\"}"
#define PASS "{\"verdict\": \"PASS\", \"reasons\": [\"fine\"], \"required_fixes\": []}"
#define PIP "{\"argv\": [\"pip\", \"--version\", \"it's\"]}"

/* A run whose Builder asks to run a command that needs approval. */
static char *approval_script(void)
{
	json_t *steps = json_array();

	call(steps, "submit_plan", PLAN);
	call(steps, "run_command", PIP);
	call(steps, "finish", FINISH);
	call(steps, "finish", FINISH);
	call(steps, "submit_verdict", PASS);
	return script(steps);
}

/* The body of the mock's `n`th chat request, as JSON text (caller frees). */
static char *request_body(const struct mock *m, size_t n)
{
	json_t *reqs = mock_requests(m);
	struct buf b = BUF_INIT;

	jsonx_dump(&b, json_object_get(json_array_get(reqs, n), "body"), 0);
	json_decref(reqs);
	return buf_detach(&b, NULL);
}

/* `text` without the spinner's redraws ("\r" up to "\033[K"); caller frees. */
static char *without_spinner(const char *text)
{
	struct buf b = BUF_INIT;

	while (*text) {
		const char *cr = strchr(text, '\r'), *end;

		if (!cr) {
			buf_addstr(&b, text);
			break;
		}
		buf_add(&b, text, (size_t)(cr - text));
		end = strstr(cr, "\033[K");
		assert_non_null(end);	/* every redraw ends by clearing the rest of the line */
		text = end + 3;
	}
	return buf_detach(&b, NULL);
}

/* `text` without carriage returns and bracketed paste on/off (caller frees). */
static char *without_cr(const char *text)
{
	struct buf b = BUF_INIT;

	for (; *text; text++) {
		if (!strncmp(text, "\033[?2004h", 8) || !strncmp(text, "\033[?2004l", 8))
			text += 7;
		else if (*text != '\r')
			buf_addch(&b, *text);
	}
	return buf_detach(&b, NULL);
}

static void approval_case(const char *answer, int approved)
{
	struct mock m;
	struct ptyrun r;
	char *s = approval_script(), *dir, *body;
	const char *args[] = { "run", "check pip", NULL };
	struct reply replies[] = { { "Run it? [y/a/N/e] ", answer } };
	const char *prompt, *builder, *after;

	mock_start(&m, s);
	dir = project(&m, "ask");
	run_pty(&r, dir, args, replies, 1, 0, 120);
	if (r.status)
		fail_msg("run failed (%d):\n%s", r.status, r.tty.buf);
	prompt = strstr(r.tty.buf, "forgex: this command needs approval");
	assert_non_null(prompt);
	/* in line: after the progress that led to it, on a line of its own */
	builder = strstr(r.tty.buf, "==> builder");
	assert_non_null(builder);
	assert_true(builder < prompt);
	assert_true(prompt[-1] == '\n');
	/* the spinner left the line to the question and stayed away until the answer */
	{
		char *clean = without_spinner(r.tty.buf);
		const char *q = strstr(prompt, "Run it? [y/a/N/e] ");

		assert_non_null(strstr(clean, " so far)\n\nforgex: this command needs approval"));
		assert_non_null(q);
		assert_null(memchr(prompt, '\r', (size_t)(q - prompt) + 16));
		free(clean);
	}
	/* the exact argv, quoted for a shell, where it runs; network = false: no network */
	assert_non_null(strstr(prompt, "  $ pip --version 'it'\"'\"'s'\n  in . (of the workspace)\n"
			       "  y: yes, once"));
	/* the run went on after the answer */
	after = strstr(prompt, "==> expert");
	assert_non_null(after);
	assert_non_null(strstr(r.tty.buf, "PASS: "));
	/* the model was told the outcome (request 2 answers the run_command call) */
	body = request_body(&m, 2);
	if (approved) {
		/* it ran: its exit code and output came back */
		assert_null(strstr(body, "not approved"));
		assert_non_null(strstr(body, "exit_code: "));
		assert_non_null(strstr(body, "--- stdout"));
	} else {
		assert_non_null(strstr(body, "Command not approved: pip --version"));
		assert_null(strstr(body, "exit_code: "));
	}
	free(body);
	ptyrun_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
}

static void test_tty_approval_no_goes_back_to_model(void **state)
{
	(void)state;
	approval_case("n\n", 0);
}

static void test_tty_approval_yes_runs(void **state)
{
	(void)state;
	approval_case("y\n", 1);
}

/* The text the model was sent as the result of tool call `id`; caller frees. */
static char *tool_result(const struct mock *m, const char *id)
{
	json_t *reqs = mock_requests(m), *msgs;
	size_t i, j;
	char *out = NULL;

	for (i = 0; i < json_array_size(reqs) && !out; i++) {
		msgs = json_object_get(json_object_get(json_array_get(reqs, i), "body"), "messages");
		for (j = 0; j < json_array_size(msgs) && !out; j++) {
			json_t *msg = json_array_get(msgs, j);
			const char *cid = jsonx_str(msg, "tool_call_id");

			if (cid && !strcmp(cid, id) && jsonx_str(msg, "content"))
				out = xstrdup(jsonx_str(msg, "content"));
		}
	}
	json_decref(reqs);
	return out;
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/* A Builder that runs `first` then `second` (run_command arguments). */
static char *two_commands_script(const char *first, const char *second, char id1[32],
				 char id2[32])
{
	json_t *steps = json_array();

	call(steps, "submit_plan", PLAN);
	call(steps, "run_command", first);
	memcpy(id1, last_id, sizeof(last_id));
	call(steps, "run_command", second);
	memcpy(id2, last_id, sizeof(last_id));
	call(steps, "finish", FINISH);
	call(steps, "finish", FINISH);
	call(steps, "submit_verdict", PASS);
	return script(steps);
}

/* e: not run, and the reason the person typed is what the model reads. */
static void test_tty_approval_e_tells_the_model_why(void **state)
{
	struct mock m;
	struct ptyrun r;
	char *s = approval_script(), *dir, *res, id[32];
	const char *args[] = { "run", "check pip", NULL };
	struct reply replies[] = {
		{ "Run it? [y/a/N/e] ", "e\n" },
		{ "Tell the model why: ", "use the vendored copy\n" },
	};

	(void)state;
	mock_start(&m, s);
	dir = project(&m, "ask");
	run_pty(&r, dir, args, replies, 2, 0, 120);
	if (r.status)
		fail_msg("run failed (%d):\n%s", r.status, r.tty.buf);
	/* approval_script(): the run_command call is the last but three */
	snprintf(id, sizeof(id), "call_%d", atoi(last_id + 5) - 3);
	res = tool_result(&m, id);
	assert_non_null(res);
	assert_string_equal(res, "error: Command not approved: pip --version 'it'\"'\"'s' "
			    "\xe2\x80\x94 the person said: \"use the vendored copy\"");
	assert_non_null(strstr(r.tty.buf, "PASS: "));
	free(res);
	ptyrun_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
}

/* a: the second command of the same name runs without a question. */
static void test_tty_approval_always_asks_once(void **state)
{
	struct mock m;
	struct ptyrun r;
	char id1[32], id2[32];
	/* one shape, "pip list" (an `a` covers the command's shape, not every pip) */
	char *s = two_commands_script("{\"argv\": [\"pip\", \"list\"]}",
				      "{\"argv\": [\"pip\", \"list\", \"--format=json\"]}", id1,
				      id2);
	char *dir, *r1, *r2;
	const char *args[] = { "run", "check pip", NULL };
	struct reply replies[] = { { "Run it? [y/a/N/e] ", "a\n" } };

	(void)state;
	mock_start(&m, s);
	dir = project(&m, "ask");
	run_pty(&r, dir, args, replies, 1, 0, 120);
	if (r.status)
		fail_msg("run failed (%d):\n%s", r.status, r.tty.buf);
	assert_int_equal(count(r.tty.buf, "this command needs approval"), 1);
	r1 = tool_result(&m, id1);
	r2 = tool_result(&m, id2);
	assert_non_null(r1);
	assert_non_null(r2);
	/* both ran */
	assert_non_null(strstr(r1, "$ pip list\nexit_code: "));
	assert_non_null(strstr(r2, "$ pip list --format=json\nexit_code: "));
	assert_non_null(strstr(r.tty.buf, "a: yes, and 'pip list' without asking"));
	free(r1);
	free(r2);
	ptyrun_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
}

/*
 * Ctrl-C at the question: no at once (no Enter is ever typed, so a
 * question that waited for one would never end), and the run goes on to
 * PASS instead of being interrupted.
 */
static void test_tty_approval_ctrl_c_is_no(void **state)
{
	struct mock m;
	struct ptyrun r;
	char id1[32], id2[32];
	char *s = two_commands_script("{\"argv\": [\"pip\", \"--version\"]}",
				      "{\"argv\": [\"python3\", \"-c\", \"print(6 * 7)\"]}",
				      id1, id2);
	char *dir, *r1, *r2;
	const char *args[] = { "run", "check pip", NULL };
	struct reply replies[] = { { "Run it? [y/a/N/e] ", "\x03" } };

	(void)state;
	mock_start(&m, s);
	dir = project(&m, "ask");
	run_pty(&r, dir, args, replies, 1, 0, 120);
	if (r.status)
		fail_msg("run failed (%d):\n%s", r.status, r.tty.buf);
	assert_non_null(strstr(r.tty.buf, "Run it? [y/a/N/e] ^C\nNot run.\n"));
	r1 = tool_result(&m, id1);
	r2 = tool_result(&m, id2);
	assert_non_null(r1);
	assert_non_null(r2);
	assert_string_equal(r1, "error: Command not approved: pip --version");
	/* the next command ran: the run was not interrupted */
	assert_non_null(strstr(r2, "exit_code: 0\n"));
	assert_non_null(strstr(r2, "42"));
	assert_non_null(strstr(r.tty.buf, "PASS: "));
	free(r1);
	free(r2);
	ptyrun_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
}

/*
 * Issue 20: with network = false an approved network command gets no
 * network: a real curl does not reach a server on the host's 127.0.0.1
 * (a second mock), any more than a command allowed without approval (its
 * own network namespace: nothing listens on its loopback).
 */
static void test_tty_approved_network_command_stays_offline(void **state)
{
	struct mock m, target;
	struct ptyrun r;
	json_t *steps = json_array();
	char id1[32], id2[32], *s, *dir, *a1, *a2, *r1, *r2;
	const char *args[] = { "run", "check pip", NULL };
	struct reply replies[] = { { "Run it? [y/a/N/e] ", "y\n" } };

	(void)state;
	mock_start(&target, "{\"steps\": []}");
	a1 = xstrfmt("{\"argv\": [\"curl\", \"-s\", \"--max-time\", \"10\", \"%s/models\"]}",
		     target.base_url);
	a2 = xstrfmt("{\"argv\": [\"python3\", \"-c\", \"import socket; "
		     "socket.create_connection(('127.0.0.1', %d), timeout=5)\"]}", target.port);
	call(steps, "submit_plan", PLAN);
	call(steps, "run_command", a1);
	memcpy(id1, last_id, sizeof(id1));
	call(steps, "run_command", a2);
	memcpy(id2, last_id, sizeof(id2));
	call(steps, "finish", FINISH);
	call(steps, "finish", FINISH);
	call(steps, "submit_verdict", PASS);
	s = script(steps);
	mock_start(&m, s);
	dir = project(&m, "ask");
	run_pty(&r, dir, args, replies, 1, 0, 120);
	if (r.status)
		fail_msg("run failed (%d):\n%s", r.status, r.tty.buf);
	assert_null(strstr(r.tty.buf, "  approved, it runs with network access\n"));
	r1 = tool_result(&m, id1);
	r2 = tool_result(&m, id2);
	assert_non_null(r1);
	assert_non_null(r2);
	/* curl did not get the list of models from the host's 127.0.0.1 */
	assert_non_null(strstr(r1, "exit_code: 7\n"));
	assert_null(strstr(r1, "mock-model"));
	/*
	 * python3 is not a network command: refused by its own empty loopback
	 * (or, where there are no network namespaces, by the seccomp rule)
	 */
	assert_non_null(strstr(r2, "exit_code: 1\n"));
	assert_true(strstr(r2, "ConnectionRefusedError") || strstr(r2, "PermissionError"));
	free(r1);
	free(r2);
	free(a1);
	free(a2);
	ptyrun_release(&r);
	mock_release(&m);
	mock_release(&target);
	free(s);
	tu_rmtree(dir);
}

/*
 * Ctrl-C typed on the terminal (SIGINT to the foreground process group)
 * while the Builder's model call is slow, or while its command runs: the
 * run is restored and exits 130, and `forgex resume` on the same
 * terminal finishes it.
 */
static void ctrl_c_then_resume(int during_command)
{
	json_t *steps = json_array(), *again;
	struct mock m;
	struct ptyrun r;
	char *s, *dir;
	const char *args[] = { "run", "check pip", NULL };
	const char *resume[] = { "resume", NULL };
	struct reply replies[] = {
		{ during_command ? "run_command python3 -c" : "builder turn 1: asking", "\x03" },
	};
	double t0;

	call(steps, "submit_plan", PLAN);
	if (during_command) {
		call(steps, "run_command", "{\"argv\": [\"python3\", \"-c\", "
		     "\"import time; time.sleep(60)\"]}");
		call(steps, "run_command", "{\"argv\": [\"python3\", \"-c\", \"print(6 * 7)\"]}");
	} else {
		call(steps, "run_command", "{\"argv\": [\"python3\", \"-c\", \"print(6 * 7)\"]}");
		again = json_deep_copy(json_array_get(steps, 1));
		json_object_set_new(json_array_get(steps, 1), "delay_ms", json_integer(4000));
		json_array_append_new(steps, again);
	}
	call(steps, "finish", FINISH);
	call(steps, "finish", FINISH);
	call(steps, "submit_verdict", PASS);
	s = script(steps);
	mock_start(&m, s);
	dir = project(&m, "ask");
	t0 = tu_now();
	run_pty(&r, dir, args, replies, 1, 0, 120);
	if (r.status != 130)
		fail_msg("run: %d\n%s", r.status, r.tty.buf);
	/* a 60 s command: stopped at once */
	assert_true(tu_now() - t0 < 40);
	ptyrun_release(&r);
	run_pty(&r, dir, resume, NULL, 0, 0, 120);
	if (r.status)
		fail_msg("resume: %d\n%s", r.status, r.tty.buf);
	assert_non_null(strstr(r.tty.buf, "PASS: "));
	ptyrun_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
}

static void test_tty_ctrl_c_in_model_call_then_resume(void **state)
{
	(void)state;
	ctrl_c_then_resume(0);
}

static void test_tty_ctrl_c_in_command_then_resume(void **state)
{
	(void)state;
	ctrl_c_then_resume(1);
}

static void test_tty_no_args_opens_a_session(void **state)
{
	struct mock m;
	struct ptyrun r;
	char *s = xstrdup("{\"steps\": [{\"text\": \"Hello, tests.\"}]}"), *dir, *parent, *body;
	const char *slash, *banner, *answer;
	char *text;
	/* the prompt each time it shows: a message, then /exit */
	struct reply replies[] = { { "forgex>", "say hello to the tests\n" },
				   { "forgex>", "/exit\n" } };

	(void)state;
	mock_start(&m, s);
	dir = project(&m, "auto");
	/* from the parent folder, with a relative -C: the folder is entered once */
	slash = strrchr(dir, '/');
	parent = xstrndup(dir, (size_t)(slash - dir));
	{
		const char *args[] = { "-C", slash + 1, NULL };

		run_pty(&r, parent, args, replies, 2, 0, 120);
	}
	if (r.status)
		fail_msg("forgex alone failed (%d):\n%s", r.status, r.tty.buf);
	/* the line editor turns the terminal's output processing back on ("\r\n") */
	text = without_cr(r.tty.buf);
	/* a session, not a run: its banner, the turn, and no pipeline */
	assert_null(strstr(text, "What should forgex do?"));
	banner = strstr(text, "\033[1mforgex\033[m session ");
	assert_non_null(banner);
	if (!strstr(banner, ": model mock-model, permissions auto.\n"))
		fail_msg("the banner:\n%s", text);
	answer = strstr(text, "forgex>\033[m say hello to the tests\n");
	assert_non_null(answer);
	assert_true(banner < answer);
	assert_non_null(strstr(answer, "\nHello, tests.\n"));
	assert_null(strstr(text, "==> architect"));
	assert_null(tu_read(dir, ".forgex/runs"));
	assert_non_null(strstr(text, "saved; 'forgex chat --continue' picks it up"));
	free(text);
	/* the model was given what was typed, as the session's message */
	body = request_body(&m, 0);
	assert_null(strstr(body, "You are the Architect"));
	free(body);
	{
		json_t *reqs = mock_requests(&m);
		json_t *msgs = json_object_get(json_object_get(json_array_get(reqs, 0), "body"),
					       "messages");
		json_t *last = json_array_get(msgs, json_array_size(msgs) - 1);

		assert_int_equal(json_array_size(reqs), 1);
		assert_string_equal(jsonx_str(last, "role"), "user");
		assert_string_equal(jsonx_str(last, "content"), "say hello to the tests");
		json_decref(reqs);
	}
	free(parent);
	ptyrun_release(&r);
	mock_release(&m);
	free(s);
	tu_rmtree(dir);
}

static void test_tty_no_args_without_terminal_prints_help(void **state)
{
	const char *argv[] = { tu_forgex(), NULL };
	struct tu_result r;
	char *dir = tu_mkdtemp();
	char *abs = realpath(tu_forgex(), NULL);

	(void)state;
	argv[0] = abs;
	tu_run(&r, argv, dir, NULL, "make it so\n");
	assert_int_equal(r.status, 2);
	assert_non_null(strstr(r.out.buf, "usage: forgex"));
	assert_null(strstr(r.err.buf, "What should forgex do?"));
	assert_null(strstr(r.out.buf, "What should forgex do?"));
	/* nothing ran: no session was made */
	assert_null(tu_read(dir, ".forgex/runs"));
	tu_result_release(&r);
	free(abs);
	tu_rmtree(dir);
}

/* A passing run whose Architect takes 0.8 s to answer. */
static char *slow_script(void)
{
	json_t *steps = json_array();

	call(steps, "submit_plan", PLAN);
	json_object_set_new(json_array_get(steps, 0), "delay_ms", json_integer(800));
	call(steps, "finish", FINISH);
	call(steps, "finish", FINISH);
	call(steps, "submit_verdict", PASS);
	return script(steps);
}

static void test_tty_spinner_on_terminal_only(void **state)
{
	struct mock m;
	struct ptyrun r;
	struct tu_result piped;
	char *s = slow_script(), *dir, *clean, *abs = realpath(tu_forgex(), NULL);
	const char *args[] = { "run", "wait for it", NULL };
	const char *json_args[] = { "run", "--json", "wait for it", NULL };
	const char *piped_argv[] = { abs, "run", "wait for it", NULL };
	const char *spin;

	(void)state;
	mock_start(&m, s);
	dir = project(&m, "auto");
	/* no colours (e2e/chat_show tests them): every escape left is the spinner's */
	setenv("NO_COLOR", "1", 1);
	run_pty(&r, dir, args, NULL, 0, 0, 120);
	unsetenv("NO_COLOR");
	if (r.status)
		fail_msg("run failed (%d):\n%s", r.status, r.tty.buf);
	/* the wait for the Architect: role, turn, what it waits for, seconds */
	{
		const char *fr = "|/-\\";
		char want[128];

		for (spin = NULL; !spin && *fr; fr++) {
			snprintf(want, sizeof(want), "\r%c architect turn 1: asking mock-model  0.", *fr);
			spin = strstr(r.tty.buf, want);
		}
	}
	assert_non_null(spin);
	assert_non_null(strstr(spin, "s\033[K"));
	/* erased before the next line: with the redraws taken out the lines are whole */
	clean = without_spinner(r.tty.buf);
	assert_null(strchr(clean, '\033'));
	assert_non_null(strstr(clean, "\n==> architect\n    architect turn 1: asking mock-model"));
	assert_non_null(strstr(clean, "\n    architect turn 1: submit_plan Check pip"));
	assert_non_null(strstr(clean, "\nPASS: "));
	free(clean);
	ptyrun_release(&r);
	mock_release(&m);
	tu_rmtree(dir);

	/* stderr piped: no spinner */
	mock_start(&m, s);
	dir = project(&m, "auto");
	tu_run(&piped, piped_argv, dir, NULL, NULL);
	if (piped.status)
		fail_msg("run failed (%d):\n%s", piped.status, piped.err.buf);
	assert_non_null(strstr(piped.err.buf, "architect turn 1: asking mock-model"));
	assert_null(strchr(piped.err.buf, '\r'));
	assert_null(strstr(piped.err.buf, "\033[K"));
	tu_result_release(&piped);
	mock_release(&m);
	tu_rmtree(dir);

	/* --json on a terminal: events on stdout, no spinner on stderr */
	mock_start(&m, s);
	dir = project(&m, "auto");
	run_pty(&r, dir, json_args, NULL, 0, 1, 120);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "\"type\":\"run_end\""));
	assert_null(strchr(r.tty.buf, '\r'));
	assert_null(strstr(r.tty.buf, "\033[K"));
	ptyrun_release(&r);
	mock_release(&m);
	tu_rmtree(dir);
	free(abs);
	free(s);
}

/*
 * Issue 20, item 7: what forgex map and forgex mcp list print on a real
 * terminal. A repository whose file names and lines hold escapes (OSC 52
 * clipboard write, CSI clear, 8-bit CSI, DCS, BEL, BS) and an MCP server
 * whose name, version and tool description hold the same: none of it
 * reaches the terminal raw, text or --json; the escapes are shown instead.
 */
#define NASTY "\033]52;c;cHduZWQ=\007\033[2J\302\23331m\302\220x\302\234\010"

static void assert_no_raw_escapes(const char *what, const struct buf *tty)
{
	static const char *const raw[] = { "\033]52", "\033[2J", "\302\233", "\302\220",
					   "\302\234", "\007", "\010" };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(raw); i++)
		if (memmem(tty->buf, tty->len, raw[i], strlen(raw[i])))
			fail_msg("%s: a raw escape (#%zu) reached the terminal:\n%s", what, i,
				 tty->buf);
}

static void test_tty_map_and_mcp_list_are_terminal_safe(void **state)
{
	static const char server[] =
		"import json, sys\n"
		"E = '\\x1b]52;c;cHduZWQ=\\x07\\x1b[2J\\x9b31m\\x90x\\x9c\\x08'\n"
		"for line in sys.stdin:\n"
		"    m = json.loads(line)\n"
		"    if 'id' not in m:\n"
		"        continue\n"
		"    if m.get('method') == 'initialize':\n"
		"        r = {'protocolVersion': '2025-11-25', 'capabilities': {'tools': {}},\n"
		"             'serverInfo': {'name': 'srv' + E, 'version': '1.0' + E}}\n"
		"    elif m.get('method') == 'tools/list':\n"
		"        r = {'tools': [{'name': 'look', 'description': 'Looks' + E,\n"
		"                        'inputSchema': {'type': 'object'}}]}\n"
		"    else:\n"
		"        r = {}\n"
		"    print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': r}), flush=True)\n";
	static const char *const map[] = { "map", NULL };
	static const char *const map_json[] = { "map", "--json", NULL };
	static const char *const list[] = { "mcp", "list", NULL };
	static const char *const list_json[] = { "mcp", "list", "--json", NULL };
	struct mock m;
	struct ptyrun r;
	/* the server runs in the sandbox, whose /tmp is its own: its script lives elsewhere */
	char *dir, *tools = xstrdup("/var/tmp/forgex-tty-XXXXXX"), *cfg, *py;

	(void)state;
	if (!mkdtemp(tools))
		fail_msg("mkdtemp: %s", strerror(errno));
	mock_start(&m, "{\"steps\": []}");
	dir = project(&m, "auto");
	tu_write(dir, "evil" NASTY ".py", "# " NASTY "\ndef evil():\n    return '" NASTY "'\n");
	tu_sh(dir, "git add -A && git -c user.name=t -c user.email=t@e commit -qm evil");
	tu_write(tools, "srv.py", server);
	py = xstrfmt("%s/srv.py", tools);
	cfg = xstrfmt("[providers.default]\nbase_url = \"%s\"\nmodel = \"mock-model\"\n"
		      "api_key_env = \"FX_E2E_NO_KEY\"\n[permissions]\nmode = \"auto\"\n"
		      "[mcp_servers.evil]\ncommand = \"python3\"\nargs = [\"%s\"]\n", m.base_url, py);
	tu_write(dir, ".forgex/config.toml", cfg);
	tu_trust(dir, NULL);

	run_pty(&r, dir, map, NULL, 0, 0, 60);
	assert_int_equal(r.status, 0);
	assert_no_raw_escapes("forgex map", &r.tty);
	/* the name is there, escaped */
	assert_non_null(strstr(r.tty.buf, "evil\\e]52;c;cHduZWQ="));
	ptyrun_release(&r);
	run_pty(&r, dir, map_json, NULL, 0, 0, 60);
	assert_int_equal(r.status, 0);
	assert_no_raw_escapes("forgex map --json", &r.tty);
	assert_non_null(strcasestr(r.tty.buf, "\\u009b"));
	ptyrun_release(&r);

	run_pty(&r, dir, list, NULL, 0, 0, 60);
	assert_int_equal(r.status, 0);
	assert_no_raw_escapes("forgex mcp list", &r.tty);
	assert_non_null(strstr(r.tty.buf, "ready, protocol 2025-11-25, srv"));
	assert_non_null(strstr(r.tty.buf, "evil__look"));
	ptyrun_release(&r);
	run_pty(&r, dir, list_json, NULL, 0, 0, 60);
	assert_int_equal(r.status, 0);
	assert_no_raw_escapes("forgex mcp list --json", &r.tty);
	ptyrun_release(&r);

	mock_release(&m);
	tu_rmtree(dir);
	tu_rmtree(tools);
	free(cfg);
	free(py);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tty_approval_no_goes_back_to_model),
		cmocka_unit_test(test_tty_approval_yes_runs),
		cmocka_unit_test(test_tty_approval_e_tells_the_model_why),
		cmocka_unit_test(test_tty_approval_always_asks_once),
		cmocka_unit_test(test_tty_approval_ctrl_c_is_no),
		cmocka_unit_test(test_tty_approved_network_command_stays_offline),
		cmocka_unit_test(test_tty_ctrl_c_in_model_call_then_resume),
		cmocka_unit_test(test_tty_ctrl_c_in_command_then_resume),
		cmocka_unit_test(test_tty_no_args_opens_a_session),
		cmocka_unit_test(test_tty_no_args_without_terminal_prints_help),
		cmocka_unit_test(test_tty_spinner_on_terminal_only),
		cmocka_unit_test(test_tty_map_and_mcp_list_are_terminal_safe),
	};

	if (getenv("TU_FILTER"))
		cmocka_set_test_filter(getenv("TU_FILTER"));
	return tu_run_group_tests(tests, NULL, NULL);
}
