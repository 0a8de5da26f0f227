/*
 * Issue 20, items 1 (network only through forgex's egress proxy) and the
 * network half of "Done when", against the real kernel, as root and as
 * the unprivileged uid 65534: a sandboxed curl to a listener on the
 * host's 127.0.0.1, to the metadata address and to a domain not on the
 * list fails, and each test asserts why (the proxy's 403 and its reason,
 * the event, the note on stderr); `pip download` from a registry on the
 * list works through the proxy (a local PEP 503 index standing in for
 * the registry, named through proxy_test_hosts); network = false gives
 * no network at all in mode auto and after a yes in mode ask; in mode
 * ask an unlisted domain is asked about once per command; an executor
 * with a profile of its own (an MCP server's list, its name in the
 * reasons, each decision logged as it is made) reaches only that list.
 *
 * The executor runs in a forked child (which first becomes uid 65534
 * when asked) and writes its result and events back over a pipe.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/socket.h>

#include "base/fsutil.h"
#include "config/config.h"
#include "helpers/testutil.h"
#include "sandbox/approval.h"
#include "sandbox/executor.h"
#include "sandbox/proxy.h"
#include "sandbox/sandbox.h"

#define NOBODY 65534
#define PY "/usr/bin/python3"

#define skip_msg(...) do { print_message("SKIP: " __VA_ARGS__); print_message("\n"); skip(); } while (0)
#define ARGV(...) ((const char *const[]){ __VA_ARGS__, NULL })

static char *ws, *site;		/* the workspace; the host's web server's folder */
static struct config cfg;
static pid_t server = -1;
static int port;
static struct strvec test_hosts = STRVEC_INIT;
/* An MCP server's profile: its list's name and where each decision is written (NULL: none) */
static const char *profile_name;
static char *profile_log;

/* ---- the person, in the child ----------------------------------------- */

static int answer = APPROVE_NO;	/* what the fake person answers */
static int asked;

static int fake_person(void *data, struct approval_answer *out, const struct approval_request *rq,
		       const volatile sig_atomic_t *cancel)
{
	(void)data;
	(void)cancel;
	asked++;
	if (rq->kind != APPROVAL_NETWORK_DOMAIN)
		out->verdict = APPROVE_ONCE;	/* the command itself */
	else
		out->verdict = answer;
	return out->verdict;
}

static struct buf *events_out;

static void on_event(void *data, const char *type, json_t *fields)
{
	char *s = json_dumps(fields, JSON_SORT_KEYS);

	(void)data;
	buf_addf(events_out, "%s %s\n", type, s);
	free(s);
	json_decref(fields);
}

/* ---- running a command ------------------------------------------------- */

struct outcome {
	int ret, exit_code, asked;
	struct buf out, err, events;
};

static void outcome_release(struct outcome *o)
{
	buf_release(&o->out);
	buf_release(&o->err);
	buf_release(&o->events);
}

/* Run `argv` through a native executor in mode `mode`, in a child that first becomes `uid`. */
static void run_as(struct outcome *o, uid_t uid, const char *mode, const char *const *argv)
{
	struct buf all = BUF_INIT;
	int p[2], st;
	pid_t pid;

	memset(o, 0, sizeof(*o));
	buf_init(&o->out, 0);
	buf_init(&o->err, 0);
	buf_init(&o->events, 0);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct exec_request req = { argv, 0, NULL, 60000, NULL };
		struct exec_result r = EXEC_RESULT_INIT;
		struct buf ev = BUF_INIT;
		struct approver ap;
		struct executor ex;
		int ret, log_fd = -1;

		close(p[0]);
		/* the log is the test's, opened before the child gives up root */
		if (profile_log)
			log_fd = open(profile_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (uid && (setgroups(0, NULL) < 0 || setgid(uid) < 0 || setuid(uid) < 0)) {
			dprintf(p[1], "99 0 0 0 0 0\ncannot become %d", (int)uid);
			_exit(0);
		}
		while (argv[req.argc])
			req.argc++;
		free(cfg.permissions.mode);
		cfg.permissions.mode = xstrdup(mode);
		if (executor_init(&ex, &cfg, ws) < 0) {
			dprintf(p[1], "99 0 0 0 %zu 0\n%s", strlen(err_last()), err_last());
			_exit(0);
		}
		approver_init(&ap, fake_person, NULL, NULL);
		ex.approver = &ap;
		if (profile_log) {
			ex.allowed_domains_name = profile_name;
			ex.proxy_log_fd = log_fd;
		}
		events_out = &ev;
		ex.on_event = on_event;
		ret = executor_run(&r, &ex, &req);
		if (ret < 0) {
			dprintf(p[1], "%d 0 0 0 %zu 0\n%s", ret, strlen(err_last()), err_last());
			_exit(0);
		}
		dprintf(p[1], "0 %d %d %zu %zu %zu\n", r.exit_code, asked, r.out.len, r.err.len,
			ev.len);
		fsutil_write_all(p[1], r.out.buf, r.out.len);
		fsutil_write_all(p[1], r.err.buf, r.err.len);
		fsutil_write_all(p[1], ev.buf, ev.len);
		exec_result_release(&r);
		executor_release(&ex);
		approver_release(&ap);
		_exit(0);
	}
	close(p[1]);
	fsutil_read_fd(&all, p[0], 1 << 24);
	close(p[0]);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	{
		size_t outlen = 0, errlen = 0, evlen = 0;
		int n = 0;

		assert_int_equal(sscanf(all.buf, "%d %d %d %zu %zu %zu\n%n", &o->ret, &o->exit_code,
					&o->asked, &outlen, &errlen, &evlen, &n), 6);
		buf_add(&o->out, all.buf + n, outlen);
		buf_add(&o->err, all.buf + n + outlen, errlen);
		buf_add(&o->events, all.buf + n + outlen + errlen, evlen);
	}
	buf_release(&all);
	if (o->ret == 99 && strstr(o->err.buf, "cannot enforce"))
		skip_msg("native cannot run as uid %d here: %s", (int)uid, o->err.buf);
	if (o->ret)
		print_message("executor: %d %s\n", o->ret, o->err.buf);
	assert_int_equal(o->ret, 0);
}

static void assert_has(const struct buf *b, const char *needle)
{
	if (!strstr(b->buf, needle))
		fail_msg("expected '%s' in:\n%s", needle, b->buf);
}

static void assert_lacks(const struct buf *b, const char *needle)
{
	if (strstr(b->buf, needle))
		fail_msg("did not expect '%s' in:\n%s", needle, b->buf);
}

/* ---- the host side: a web server on 127.0.0.1 ------------------------- */

static int free_port(void)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);
	int s = socket(AF_INET, SOCK_STREAM, 0), p;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&a, &len), 0);
	p = ntohs(a.sin_port);
	close(s);
	return p;
}

static int can_connect(int p)
{
	struct sockaddr_in a;
	int s = socket(AF_INET, SOCK_STREAM, 0), ok;

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)p);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ok = connect(s, (struct sockaddr *)&a, sizeof(a)) == 0;
	close(s);
	return ok;
}

/* A PEP 503 index with one small wheel, and a file only the host should serve. */
static const char make_index_py[] =
	"import os, sys, zipfile, hashlib, base64\n"
	"root = sys.argv[1]\n"
	"os.makedirs(root + '/simple/tinypkg', exist_ok=True)\n"
	"open(root + '/secret.txt', 'w').write('HOST-SECRET\\n')\n"
	"name = 'tinypkg-0.1-py3-none-any.whl'\n"
	"files = {'tinypkg/__init__.py': 'VALUE = 1\\n',\n"
	"  'tinypkg-0.1.dist-info/METADATA': 'Metadata-Version: 2.1\\nName: tinypkg\\nVersion: 0.1\\n',\n"
	"  'tinypkg-0.1.dist-info/WHEEL': 'Wheel-Version: 1.0\\nGenerator: t\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n'}\n"
	"rec = []\n"
	"with zipfile.ZipFile(root + '/simple/tinypkg/' + name, 'w') as z:\n"
	"  for k, v in files.items():\n"
	"    z.writestr(k, v)\n"
	"    h = base64.urlsafe_b64encode(hashlib.sha256(v.encode()).digest()).rstrip(b'=').decode()\n"
	"    rec.append('%s,sha256=%s,%d' % (k, h, len(v)))\n"
	"  rec.append('tinypkg-0.1.dist-info/RECORD,,')\n"
	"  z.writestr('tinypkg-0.1.dist-info/RECORD', '\\n'.join(rec) + '\\n')\n"
	"open(root + '/simple/index.html', 'w').write('<a href=\"tinypkg/\">tinypkg</a>\\n')\n"
	"open(root + '/simple/tinypkg/index.html', 'w').write('<a href=\"%s\">%s</a>\\n' % (name, name))\n";

static void start_server(void)
{
	char *script = xstrfmt("%s/make_index.py", site), *ps;
	int i;

	tu_write(site, "make_index.py", make_index_py);
	ps = xstrfmt("%s %s %s", PY, script, site);
	assert_int_equal(system(ps), 0);
	free(ps);
	free(script);
	port = free_port();
	server = fork();
	assert_true(server >= 0);
	if (!server) {
		char p[16];
		int devnull = open("/dev/null", O_WRONLY);

		snprintf(p, sizeof(p), "%d", port);
		dup2(devnull, 1);
		dup2(devnull, 2);
		execl(PY, PY, "-m", "http.server", "--bind", "127.0.0.1", "--directory", site, p,
		      (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 100 && !can_connect(port); i++)
		usleep(50000);
	assert_true(can_connect(port));
}

static void need_native(void)
{
	struct executor ex;

	if (!sandbox_kernel_caps()->landlock_abi || !sandbox_kernel_caps()->netns)
		skip_msg("needs Landlock and network namespaces");
	if (access("/usr/bin/curl", X_OK) || access(PY, X_OK))
		skip_msg("needs /usr/bin/curl and %s", PY);
	if (executor_init(&ex, &cfg, ws) < 0)
		skip_msg("the native backend cannot run here: %s", err_last());
	executor_release(&ex);
}

static void need_root(void)
{
	if (geteuid() != 0)
		skip_msg("needs root (to run one part as root and one as uid %d)", NOBODY);
}

static int setup(void **state)
{
	(void)state;
	ws = tu_mkdtemp();
	site = tu_mkdtemp();
	assert_int_equal(chmod(ws, 0777), 0);
	assert_int_equal(chmod(site, 0755), 0);
	config_init(&cfg);
	free(cfg.sandbox.backend);
	cfg.sandbox.backend = xstrdup("native");
	strvec_push(&cfg.terminal.denied, "rm");	/* replaces the default list */
	free(cfg.sandbox.memory_limit);
	cfg.sandbox.memory_limit = xstrdup("");
	cfg.sandbox.network = 1;
	strvec_push(&cfg.sandbox.allowed_domains, "registry.test");
	strvec_push(&cfg.sandbox.allowed_domains, "*.allowed.test");
	strvec_push(&cfg.sandbox.denied_domains, "bad.allowed.test");
	strvec_clear(&test_hosts);
	strvec_push(&test_hosts, "registry.test=127.0.0.1");
	strvec_push(&test_hosts, "lo.allowed.test=127.0.0.1");
	strvec_push(&test_hosts, "meta.allowed.test=169.254.169.254");
	strvec_push(&test_hosts, "asked.test=127.0.0.1");
	proxy_test_hosts = &test_hosts;
	sandbox_probe_mask(0);
	answer = APPROVE_NO;
	asked = 0;
	start_server();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (server > 0) {
		kill(server, SIGKILL);
		waitpid(server, NULL, 0);
		server = -1;
	}
	config_release(&cfg);
	tu_rmtree(ws);
	tu_rmtree(site);
	proxy_test_hosts = NULL;
	strvec_clear(&test_hosts);
	free(profile_log);
	profile_log = NULL;
	profile_name = NULL;
	return 0;
}

/* ---- 1. what network = true cannot reach --------------------------------- */

static void refusals(uid_t uid)
{
	struct outcome o;
	char *direct = xstrfmt("http://127.0.0.1:%d/secret.txt", port);
	char *lo = xstrfmt("http://lo.allowed.test:%d/secret.txt", port);
	char *reg = xstrfmt("http://registry.test:%d/secret.txt", port);

	/* the host's 127.0.0.1 directly (NO_PROXY has it): the sandbox's own loopback */
	run_as(&o, uid, "auto", ARGV("curl", "-sS", "-m", "20", direct));
	assert_int_equal(o.exit_code, 7);
	assert_has(&o.err, "Couldn't connect");
	assert_lacks(&o.out, "HOST-SECRET");
	outcome_release(&o);

	/* ... and through the proxy: 127.0.0.1 is no domain on the list */
	run_as(&o, uid, "auto", ARGV("curl", "-sS", "-m", "20", "--noproxy", "", direct));
	assert_lacks(&o.out, "HOST-SECRET");
	assert_has(&o.out, "forgex proxy: 127.0.0.1:");
	assert_has(&o.out, "not in [sandbox] allowed_domains");
	assert_has(&o.err, "forgex: the network proxy refused 127.0.0.1:");
	assert_has(&o.events, "network {\"decision\": \"refused\", \"domain\": \"127.0.0.1\"");
	outcome_release(&o);

	/* a listed (wildcard) name that resolves to loopback: refused by address */
	run_as(&o, uid, "auto", ARGV("curl", "-sS", "-m", "20", lo));
	assert_lacks(&o.out, "HOST-SECRET");
	assert_has(&o.out, "resolves to 127.0.0.1, a loopback address");
	assert_has(&o.events, "\"domain\": \"lo.allowed.test\"");
	outcome_release(&o);

	/* the metadata address, by number and by a listed name, over http and https */
	run_as(&o, uid, "auto", ARGV("curl", "-sS", "-m", "20",
				     "http://169.254.169.254/latest/meta-data/"));
	assert_has(&o.out, "forgex proxy: 169.254.169.254:80: not in [sandbox] allowed_domains");
	outcome_release(&o);
	run_as(&o, uid, "auto", ARGV("curl", "-sS", "-m", "20", "https://meta.allowed.test/"));
	assert_int_equal(o.exit_code, 56);
	assert_has(&o.err, "CONNECT tunnel failed, response 403");
	assert_has(&o.err, "resolves to 169.254.169.254, a cloud metadata address");
	assert_has(&o.events, "\"protocol\": \"connect\"");
	outcome_release(&o);

	/* a domain not on the list, and one on the deny list */
	run_as(&o, uid, "auto", ARGV("curl", "-sS", "-m", "20", "https://not-listed.example/"));
	assert_int_equal(o.exit_code, 56);
	assert_has(&o.err, "CONNECT tunnel failed, response 403");
	assert_has(&o.err, "refused not-listed.example:443: not in [sandbox] allowed_domains");
	outcome_release(&o);
	run_as(&o, uid, "auto", ARGV("curl", "-sS", "-m", "20", "https://bad.allowed.test/"));
	assert_has(&o.err, "refused bad.allowed.test:443: in [sandbox] denied_domains");
	outcome_release(&o);

	/* SOCKS5 (ALL_PROXY) decides the same */
	run_as(&o, uid, "auto", ARGV("curl", "-sS", "-m", "20", "--proxy",
				     "socks5h://127.0.0.1:3128", "https://not-listed.example/"));
	assert_int_not_equal(o.exit_code, 0);
	assert_has(&o.events, "\"protocol\": \"socks5\"");
	assert_has(&o.err, "refused not-listed.example:443: not in [sandbox] allowed_domains");
	outcome_release(&o);

	/* control: the name listed exactly reaches it (the stand-in registry) */
	run_as(&o, uid, "auto", ARGV("curl", "-sS", "-m", "20", reg));
	assert_int_equal(o.exit_code, 0);
	assert_string_equal(o.out.buf, "HOST-SECRET\n");
	assert_has(&o.events, "\"decision\": \"allowed\", \"domain\": \"registry.test\"");
	outcome_release(&o);
	free(direct);
	free(lo);
	free(reg);
}

static void test_refusals_root(void **state)
{
	(void)state;
	need_native();
	refusals(0);
}

static void test_refusals_unprivileged(void **state)
{
	(void)state;
	need_native();
	need_root();
	refusals(NOBODY);
}

/*
 * ---- 1b. a profile of its own (an MCP server's: docs/internals/mcp.md) ----
 *
 * The executor's allowed_domains replaced by the server's list, its name
 * in every reason, and each decision written to the server's log as it is
 * made - not kept for events and stderr notes after the command, which
 * for a server lasts as long as forgex.
 */
static void own_profile(uid_t uid)
{
	struct outcome o;
	char *reg = xstrfmt("http://registry.test:%d/secret.txt", port);
	char *other = xstrfmt("http://lo.allowed.test:%d/secret.txt", port);
	char *log, *line;

	strvec_clear(&cfg.sandbox.allowed_domains);
	strvec_push(&cfg.sandbox.allowed_domains, "registry.test");
	profile_name = "[mcp_servers.t] allowed_domains";
	profile_log = xstrfmt("%s/mcp-t.stderr", site);
	run_as(&o, uid, "auto", ARGV("curl", "-sS", "-m", "20", reg));
	assert_int_equal(o.exit_code, 0);
	assert_string_equal(o.out.buf, "HOST-SECRET\n");
	outcome_release(&o);
	/* a name [sandbox] allows (by its wildcard) is not on the server's list */
	run_as(&o, uid, "auto", ARGV("curl", "-sS", "-m", "20", other));
	assert_lacks(&o.out, "HOST-SECRET");
	assert_has(&o.out, "not in [mcp_servers.t] allowed_domains (mode auto asks nobody)");
	/* logged at once, not after the command */
	assert_lacks(&o.err, "forgex: the network proxy refused");
	assert_int_equal(o.events.len, 0);
	outcome_release(&o);
	log = tu_read(site, "mcp-t.stderr");
	assert_non_null(log);
	line = xstrfmt("forgex: the network proxy allowed registry.test:%d: named in "
		       "[mcp_servers.t] allowed_domains (127.0.0.1)\n", port);
	if (!strstr(log, line))
		fail_msg("no '%s' in:\n%s", line, log);
	free(line);
	line = xstrfmt("forgex: the network proxy refused lo.allowed.test:%d: not in "
		       "[mcp_servers.t] allowed_domains (mode auto asks nobody)\n", port);
	if (!strstr(log, line))
		fail_msg("no '%s' in:\n%s", line, log);
	free(line);
	free(log);
	free(reg);
	free(other);
}

static void test_own_profile_root(void **state)
{
	(void)state;
	need_native();
	own_profile(0);
}

static void test_own_profile_unprivileged(void **state)
{
	(void)state;
	need_native();
	need_root();
	own_profile(NOBODY);
}

/* ---- 2. pip download through the proxy ------------------------------------ */

static void pip_download(uid_t uid)
{
	struct outcome o;
	char *index = xstrfmt("http://registry.test:%d/simple/", port);
	char *whl = xstrfmt("%s/dl/tinypkg-0.1-py3-none-any.whl", ws);

	run_as(&o, uid, "auto", ARGV(PY, "-m", "pip", "download", "--no-cache-dir",
				     "--disable-pip-version-check", "--no-deps", "--trusted-host",
				     "registry.test", "--index-url",
				     index, "--dest", "dl", "tinypkg"));
	if (o.exit_code)
		print_message("pip: %s\n%s\n", o.out.buf, o.err.buf);
	assert_int_equal(o.exit_code, 0);
	assert_true(fsutil_exists(whl));
	assert_has(&o.events, "\"decision\": \"allowed\", \"domain\": \"registry.test\"");
	assert_has(&o.events, "\"protocol\": \"http\"");
	outcome_release(&o);
	free(index);
	free(whl);
}

static void test_pip_download_root(void **state)
{
	(void)state;
	need_native();
	pip_download(0);
}

static void test_pip_download_unprivileged(void **state)
{
	(void)state;
	need_native();
	need_root();
	pip_download(NOBODY);
}

/* ---- 3. mode ask: once per domain ------------------------------------------ */

static void test_ask_once_per_domain(void **state)
{
	struct outcome o;
	char *u = xstrfmt("http://asked.test:%d/secret.txt", port);

	(void)state;
	need_native();
	/* n: refused, asked once for two connections (plus once for curl itself) */
	answer = APPROVE_NO;
	run_as(&o, 0, "ask", ARGV("curl", "-sS", "-m", "20", u, u));
	assert_int_equal(o.asked, 2);
	assert_has(&o.out, "the person said no");
	assert_lacks(&o.out, "HOST-SECRET");
	outcome_release(&o);
	/*
	 * y: the domain is allowed for the command, and still its address is
	 * judged: a yes does not open loopback (only a domain named in
	 * allowed_domains does)
	 */
	answer = APPROVE_ONCE;
	run_as(&o, 0, "ask", ARGV("curl", "-sS", "-m", "20", u, u));
	assert_int_equal(o.asked, 2);
	assert_has(&o.out, "resolves to 127.0.0.1, a loopback address");
	assert_lacks(&o.out, "HOST-SECRET");
	outcome_release(&o);
	/* mode auto: nobody is asked, refused */
	answer = APPROVE_ONCE;
	run_as(&o, 0, "auto", ARGV("curl", "-sS", "-m", "20", u));
	assert_int_equal(o.asked, 0);
	assert_has(&o.out, "not in [sandbox] allowed_domains (mode auto asks nobody)");
	outcome_release(&o);
	free(u);
}

/* ---- 4. network = false: nothing, whatever the mode ----------------------- */

static void no_network(uid_t uid)
{
	struct outcome o;
	char *direct = xstrfmt("http://127.0.0.1:%d/secret.txt", port);
	static const char *const modes[] = { "auto", "ask" };
	size_t i;

	cfg.sandbox.network = 0;
	for (i = 0; i < 2; i++) {
		/* curl is a network command: mode auto runs it, mode ask asks (yes) */
		answer = APPROVE_ONCE;
		run_as(&o, uid, modes[i], ARGV("curl", "-sS", "-m", "20", direct));
		assert_int_equal(o.exit_code, 7);
		assert_lacks(&o.out, "HOST-SECRET");
		assert_int_equal(o.asked, i == 1);
		outcome_release(&o);
		/* no proxy either: nothing listens on the bridge's port, no variables */
		run_as(&o, uid, modes[i], ARGV("curl", "-sS", "-m", "20", "--proxy",
					       "http://127.0.0.1:3128", "http://registry.test/"));
		assert_int_equal(o.exit_code, 7);
		assert_has(&o.err, "Couldn't connect");
		assert_int_equal(o.events.len, 0);
		outcome_release(&o);
		run_as(&o, uid, modes[i], ARGV(PY, "-c", "import os; print(sorted(k for k in "
					       "os.environ if 'proxy' in k.lower()))"));
		assert_string_equal(o.out.buf, "[]\n");
		outcome_release(&o);
	}
	free(direct);
}

static void test_no_network_root(void **state)
{
	(void)state;
	need_native();
	no_network(0);
}

static void test_no_network_unprivileged(void **state)
{
	(void)state;
	need_native();
	need_root();
	no_network(NOBODY);
}

/* ---- 5. the proxy's rules, without a sandbox ------------------------------- */

static void test_rules(void **state)
{
	struct sockaddr_in in;
	struct sockaddr_in6 in6;
	static const struct { const char *a; const char *why; } v4[] = {
		{ "127.0.0.1", "loopback" }, { "10.1.2.3", "private (RFC 1918)" },
		{ "172.16.0.1", "private (RFC 1918)" }, { "172.32.0.1", NULL },
		{ "192.168.1.1", "private (RFC 1918)" }, { "169.254.169.254", "cloud metadata" },
		{ "169.254.1.1", "link-local" }, { "100.64.0.1", "CGNAT (100.64.0.0/10)" },
		{ "224.0.0.1", "multicast" }, { "0.0.0.0", "unspecified (0.0.0.0/8)" },
		{ "8.8.8.8", NULL }, { "151.101.0.223", NULL },
	};
	static const struct { const char *a; const char *why; } v6[] = {
		{ "::1", "loopback" }, { "fd00:ec2::254", "cloud metadata" },
		{ "fd12::1", "private (unique local, fc00::/7)" }, { "fe80::1", "link-local" },
		{ "::ffff:127.0.0.1", "loopback" }, { "::ffff:10.0.0.1", "private (RFC 1918)" },
		{ "ff02::1", "multicast" }, { "2a04:4e42::223", NULL },
	};
	size_t i;

	(void)state;
	assert_true(proxy_domain_matches("pypi.org", "pypi.org"));
	assert_true(proxy_domain_matches("pypi.org.", "pypi.org"));
	assert_false(proxy_domain_matches("pypi.org", "files.pypi.org"));
	assert_true(proxy_domain_matches("*.pypi.org", "files.pypi.org"));
	assert_true(proxy_domain_matches("*.pypi.org", "a.b.pypi.org"));
	assert_false(proxy_domain_matches("*.pypi.org", "pypi.org"));
	assert_false(proxy_domain_matches("*.pypi.org", "evilpypi.org"));
	for (i = 0; i < ARRAY_SIZE(v4); i++) {
		const char *why;

		memset(&in, 0, sizeof(in));
		in.sin_family = AF_INET;
		assert_int_equal(inet_pton(AF_INET, v4[i].a, &in.sin_addr), 1);
		why = proxy_address_refused((struct sockaddr *)&in);
		if (v4[i].why)
			assert_string_equal(why, v4[i].why);
		else
			assert_null(why);
	}
	for (i = 0; i < ARRAY_SIZE(v6); i++) {
		const char *why;

		memset(&in6, 0, sizeof(in6));
		in6.sin6_family = AF_INET6;
		assert_int_equal(inet_pton(AF_INET6, v6[i].a, &in6.sin6_addr), 1);
		why = proxy_address_refused((struct sockaddr *)&in6);
		if (v6[i].why)
			assert_string_equal(why, v6[i].why);
		else
			assert_null(why);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules),
		cmocka_unit_test_setup_teardown(test_refusals_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refusals_unprivileged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_profile_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_own_profile_unprivileged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pip_download_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pip_download_unprivileged, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ask_once_per_domain, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_network_root, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_network_unprivileged, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
