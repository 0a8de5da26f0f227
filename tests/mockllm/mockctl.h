#ifndef FX_MOCKCTL_H
#define FX_MOCKCTL_H

/*
 * Starting and stopping build/mockllm from a test (header-only, so the
 * mock's own sources stay the only .c files in this folder).
 *
 * The test:
 *   1. mock_start() with the script's JSON text: the mock runs as a child
 *      process on a free port of 127.0.0.1; m->base_url is ".../v1";
 *   2. talks to it;
 *   3. mock_requests() for the model requests the mock received (a JSON
 *      array, one object per POST .../chat/completions or /api/chat:
 *      method, path, headers, body, raw, step), mock_all_requests() for
 *      everything (forgex also asks GET .../models, GET /props and POST
 *      /api/show once per provider, to learn the model's window);
 *   4. mock_stop() (the log stays readable) and mock_release().
 */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/xdg.h"
#include "helpers/testutil.h"
#include "llm/transcript.h"

struct mock {
	pid_t pid;
	int port;
	char *dir;		/* holds script.json, port, log.jsonl */
	char *base_url;		/* http://127.0.0.1:PORT/v1 */
	char *log;
};

static inline const char *mock_binary(void)
{
	const char *b = getenv("FORGEX_MOCKLLM");

	return b && *b ? b : "build/mockllm";
}

static inline void mock_start(struct mock *m, const char *script)
{
	struct buf sp = BUF_INIT, pp = BUF_INIT;
	char *port_text = NULL;
	int i;

	memset(m, 0, sizeof(*m));
	m->dir = tu_mkdtemp();
	tu_write(m->dir, "script.json", script);
	buf_addf(&sp, "%s/script.json", m->dir);
	buf_addf(&pp, "%s/port", m->dir);
	m->log = xstrfmt("%s/log.jsonl", m->dir);
	m->pid = fork();
	if (m->pid < 0)
		die("fork");
	if (!m->pid) {
		const char *bin = mock_binary();
		int null = open("/dev/null", O_WRONLY);

		/* a failing test longjmps past mock_stop(): die with it */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() == 1)
			_exit(127);
		if (null >= 0)
			dup2(null, 1);
		execl(bin, bin, "--script", sp.buf, "--port-file", pp.buf, "--log", m->log,
		      (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 500 && !port_text; i++) {
		struct timespec ts = { 0, 10000000L };
		int st;

		port_text = tu_read(m->dir, "port");
		if (port_text)
			break;
		if (waitpid(m->pid, &st, WNOHANG) == m->pid)
			die("mockllm exited before listening (is %s built?)", mock_binary());
		nanosleep(&ts, NULL);
	}
	if (!port_text)
		die("mockllm did not start");
	m->port = atoi(port_text);
	free(port_text);
	m->base_url = xstrfmt("http://127.0.0.1:%d/v1", m->port);
	{
		/*
		 * forgex keeps a server's window a day in the user's cache, by
		 * base URL: a new mock on a port an earlier one used must not
		 * find that one's answer there.
		 */
		char *cache = xdg_path(XDG_DIR_CACHE, "forgex/windows.json");

		if (cache)
			unlink(cache);
		free(cache);
	}
	buf_release(&sp);
	buf_release(&pp);
}

static inline void mock_stop(struct mock *m)
{
	if (m->pid > 0) {
		kill(m->pid, SIGTERM);
		while (waitpid(m->pid, NULL, 0) < 0 && errno == EINTR)
			;
		m->pid = 0;
	}
}

static inline void mock_release(struct mock *m)
{
	mock_stop(m);
	tu_rmtree(m->dir);
	free(m->base_url);
	free(m->log);
	memset(m, 0, sizeof(*m));
}

static inline int mock_is_model_request(const json_t *r)
{
	const char *p = jsonx_str(r, "path");
	size_t n = p ? strlen(p) : 0;

	return n && ((n >= 17 && !strcmp(p + n - 17, "/chat/completions")) ||
		     !strcmp(p, "/api/chat"));
}

/* Everything the mock received: a JSON array of request objects (new reference). */
static inline json_t *mock_all_requests(const struct mock *m)
{
	json_t *arr = json_array();
	struct buf b = BUF_INIT;
	size_t pos = 0;

	if (fsutil_read_file(&b, m->log, 0) < 0) {
		buf_release(&b);
		return arr;
	}
	while (pos < b.len) {
		const char *nl = memchr(b.buf + pos, '\n', b.len - pos);
		size_t n = nl ? (size_t)(nl - b.buf - pos) : b.len - pos;
		json_t *j = NULL;

		if (n && !jsonx_parse(&j, b.buf + pos, n, "mock log"))
			json_array_append_new(arr, j);
		pos += n + 1;
	}
	buf_release(&b);
	return arr;
}

/* The model requests the mock received, in order (new reference). */
static inline json_t *mock_requests(const struct mock *m)
{
	json_t *all = mock_all_requests(m), *arr = json_array(), *r;
	size_t i;

	json_array_foreach(all, i, r)
		if (mock_is_model_request(r))
			json_array_append(arr, r);
	json_decref(all);
	return arr;
}

/* How many requests to paths ending in `suffix` the mock received. */
static inline size_t mock_count(const struct mock *m, const char *suffix)
{
	json_t *arr = mock_all_requests(m), *r;
	size_t i, n = 0, sl = strlen(suffix);

	json_array_foreach(arr, i, r) {
		const char *p = jsonx_str(r, "path");

		if (p && strlen(p) >= sl && !strcmp(p + strlen(p) - sl, suffix))
			n++;
	}
	json_decref(arr);
	return n;
}

#endif
