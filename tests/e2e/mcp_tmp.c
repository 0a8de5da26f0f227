/*
 * An MCP stdio server that lives under /tmp, end to end: the sandbox
 * gives the server fresh empty /tmp, /run and /dev/shm, and the launcher
 * (forgex mcp __serve) carries in, read-only, the server's program and
 * the files its arguments name. The tests make a folder under /tmp with
 * a small MCP server of their own that reports what it sees: it starts
 * and answers, it reads the file it was given, it cannot write to its
 * script or that file (EROFS), and a file beside them that nobody named
 * is not there. A named path inside a hidden place or a .git is refused
 * with a message naming it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fsutil.h"
#include "helpers/testutil.h"
#include "helpers/scripted.h"

/*
 * The server: newline-delimited JSON-RPC on stdio, one tool "probe". It
 * reads argv[1], tries to append to its own script and to argv[1], looks
 * for secret.txt beside argv[1] and lists that folder.
 */
static const char server_src[] =
	"#!/usr/bin/env python3\n"
	"import errno, json, os, sys\n"
	"def tries(p):\n"
	"    try:\n"
	"        with open(p, 'a') as f:\n"
	"            f.write('changed by the server\\n')\n"
	"        return 'wrote'\n"
	"    except OSError as e:\n"
	"        return errno.errorcode.get(e.errno, str(e.errno))\n"
	"def probe():\n"
	"    here = os.path.dirname(sys.argv[1])\n"
	"    with open(sys.argv[1]) as f:\n"
	"        data = f.read().strip()\n"
	"    sib = os.path.exists(os.path.join(here, 'secret.txt'))\n"
	"    return ('data=%s script=%s file=%s sibling=%s listing=%s' %\n"
	"            (data, tries(os.path.realpath(__file__)), tries(sys.argv[1]),\n"
	"             'visible' if sib else 'absent', ','.join(sorted(os.listdir(here)))))\n"
	"def answer(m):\n"
	"    meth, mid = m.get('method'), m.get('id')\n"
	"    if mid is None:\n"
	"        return None\n"
	"    if meth == 'initialize':\n"
	"        r = {'protocolVersion': m['params']['protocolVersion'],\n"
	"             'capabilities': {'tools': {}},\n"
	"             'serverInfo': {'name': 'tmp-probe', 'version': '1'}}\n"
	"    elif meth == 'tools/list':\n"
	"        r = {'tools': [{'name': 'probe', 'description': 'What the server sees.',\n"
	"                        'inputSchema': {'type': 'object'}}]}\n"
	"    elif meth == 'tools/call':\n"
	"        r = {'content': [{'type': 'text', 'text': probe()}]}\n"
	"    else:\n"
	"        return {'jsonrpc': '2.0', 'id': mid, 'error': {'code': -32601, 'message': meth}}\n"
	"    return {'jsonrpc': '2.0', 'id': mid, 'result': r}\n"
	"for line in sys.stdin:\n"
	"    if line.strip():\n"
	"        a = answer(json.loads(line))\n"
	"        if a is not None:\n"
	"            sys.stdout.write(json.dumps(a) + '\\n')\n"
	"            sys.stdout.flush()\n";

/* A folder right under /tmp (not $TMPDIR: the place the sandbox replaces). */
static char *tmp_folder(void)
{
	char tmpl[] = "/tmp/forgex-mcp-tmp-XXXXXX";
	char *real;

	if (!mkdtemp(tmpl))
		fail_msg("mkdtemp under /tmp: %s", strerror(errno));
	real = realpath(tmpl, NULL);
	assert_non_null(real);
	return real;
}

/* D/server.py (executable), D/data.txt and the unnamed D/secret.txt. */
static void make_server(const char *d)
{
	char *py;

	tu_write(d, "server.py", server_src);
	tu_write(d, "data.txt", "hello from /tmp\n");
	tu_write(d, "secret.txt", "nobody named me\n");
	py = xstrfmt("%s/server.py", d);
	assert_int_equal(chmod(py, 0755), 0);
	free(py);
}

static void assert_unchanged(const char *d)
{
	char *s = tu_read(d, "server.py"), *t = tu_read(d, "data.txt");

	assert_string_equal(s, server_src);
	assert_string_equal(t, "hello from /tmp\n");
	free(s);
	free(t);
}

/* python3 SCRIPT FILE, both under /tmp: starts, reads FILE, writes nothing, sees no sibling */
static void test_script_under_tmp(void **state)
{
	struct sc_proj p;
	struct tu_result r;
	char *d = tmp_folder(), *srv;

	(void)state;
	make_server(d);
	sc_proj_init(&p, NULL, "auto", "");
	srv = xstrfmt("[mcp_servers.t]\ncommand = \"python3\"\n"
		      "args = [\"%s/server.py\", \"%s/data.txt\"]\n", d, d);
	sc_proj_config(&p, NULL, "auto", srv);
	SC_FORGEX(&r, &p, "mcp", "list");
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "t (stdio python3): ready"));
	assert_non_null(strstr(r.out.buf, "t__probe"));
	tu_result_release(&r);

	SC_FORGEX(&r, &p, "mcp", "call", "t", "probe");
	assert_int_equal(r.status, 0);
	/* read-only binds: EROFS, not EACCES (Landlock) nor ENOENT (not there) */
	assert_string_equal(r.out.buf, "data=hello from /tmp script=EROFS file=EROFS "
			    "sibling=absent listing=data.txt,server.py\n");
	tu_result_release(&r);
	assert_unchanged(d);
	sc_proj_release(&p);
	tu_rmtree(d);
	free(srv);
}

/* The program itself under /tmp, found on the server's PATH through a link */
static void test_program_on_path_under_tmp(void **state)
{
	struct sc_proj p;
	struct tu_result r;
	char *d = tmp_folder(), *srv, *bin, *target, *lnk;

	(void)state;
	make_server(d);
	bin = xstrfmt("%s/bin", d);
	assert_int_equal(mkdir(bin, 0755), 0);
	target = xstrfmt("%s/server.py", d);
	lnk = xstrfmt("%s/fx-probe", bin);
	assert_int_equal(symlink(target, lnk), 0);
	sc_proj_init(&p, NULL, "auto", "");
	srv = xstrfmt("[mcp_servers.t]\ncommand = \"fx-probe\"\nargs = [\"%s/data.txt\"]\n"
		      "env = { PATH = \"%s:%s\" }\n", d, bin, getenv("PATH"));
	sc_proj_config(&p, NULL, "auto", srv);
	SC_FORGEX(&r, &p, "mcp", "call", "t", "probe");
	assert_int_equal(r.status, 0);
	/*
	 * the link's place is a read-only bind of the script it leads to, and
	 * the script's own place too; bin/ holds only that
	 */
	assert_string_equal(r.out.buf, "data=hello from /tmp script=EROFS file=EROFS "
			    "sibling=absent listing=bin,data.txt,server.py\n");
	tu_result_release(&r);
	assert_unchanged(d);
	sc_proj_release(&p);
	tu_rmtree(d);
	free(srv);
	free(bin);
	free(target);
	free(lnk);
}

/* A named path in a hidden place, holding one, or in a .git: refused, the message names it */
static void test_hidden_and_git_refused(void **state)
{
	struct sc_proj p;
	struct tu_result r;
	char *d = tmp_folder(), *srv, *want;

	(void)state;
	make_server(d);
	tu_write(d, "vault/key.txt", "a key\n");
	tu_write(d, "repo/.git/config", "[core]\n");
	tu_write(d, "conf/keys/id", "a key\n");
	sc_proj_init(&p, NULL, "auto", "");
	srv = xstrfmt("[sandbox]\nhidden = [\"%s/vault\", \"%s/conf/keys\"]\n"
		      "[mcp_servers.h]\ncommand = \"python3\"\n"
		      "args = [\"%s/server.py\", \"%s/vault/key.txt\"]\n"
		      "[mcp_servers.g]\ncommand = \"python3\"\n"
		      "args = [\"%s/server.py\", \"%s/repo/.git/config\"]\n"
		      "[mcp_servers.f]\ncommand = \"python3\"\n"
		      "args = [\"%s/server.py\", \"%s/conf\"]\n", d, d, d, d, d, d, d, d);
	sc_proj_config(&p, NULL, "auto", srv);
	SC_FORGEX(&r, &p, "mcp", "list");
	assert_int_equal(r.status, 1);
	want = xstrfmt("read-only path '%s/vault/key.txt': it lies in the hidden place '%s/vault'",
		       d, d);
	assert_non_null(strstr(r.out.buf, want));
	free(want);
	want = xstrfmt("read-only path '%s/repo/.git/config': it lies in a .git or .forgex "
		       "folder", d);
	assert_non_null(strstr(r.out.buf, want));
	free(want);
	/* a folder holding a hidden place would show it: refused too */
	want = xstrfmt("read-only path '%s/conf': it holds the hidden place '%s/conf/keys'", d, d);
	assert_non_null(strstr(r.out.buf, want));
	free(want);
	assert_null(strstr(r.out.buf, "ready"));
	tu_result_release(&r);
	sc_proj_release(&p);
	tu_rmtree(d);
	free(srv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_script_under_tmp),
		cmocka_unit_test(test_program_on_path_under_tmp),
		cmocka_unit_test(test_hidden_and_git_refused),
	};

	signal(SIGPIPE, SIG_IGN);
	return tu_run_group_tests(tests, NULL, NULL);
}
