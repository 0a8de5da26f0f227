/*
 * Approval: the modes, what an approver remembers and whom it asks, and
 * how a command is shown. The question on a terminal is the front's:
 * tests/unit/cli/approve_tty.c asks it for real on a pseudo-terminal.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sandbox/approval.h"

static const char *const pip[] = { "pip", "install", "requests" };
static const char reason[] = "Command 'pip' may access the network";

/* A person played by the test: answers `verdict` (and `said`), and notes what it was asked. */
struct person {
	int verdict;
	const char *said;		/* the reason of an `e` */
	int asked;
	const struct approval_request *rq;
	const volatile sig_atomic_t *cancel;
	int asking, overlapped;		/* questions at once, for the lock */
};

static int person_ask(void *data, struct approval_answer *out, const struct approval_request *rq,
		      const volatile sig_atomic_t *cancel)
{
	struct person *p = data;

	if (__atomic_add_fetch(&p->asking, 1, __ATOMIC_SEQ_CST) > 1)
		p->overlapped = 1;
	usleep(2000);
	__atomic_fetch_add(&p->asked, 1, __ATOMIC_SEQ_CST);
	p->rq = rq;
	p->cancel = cancel;
	out->verdict = p->verdict;
	out->reason = p->said ? strdup(p->said) : NULL;
	__atomic_sub_fetch(&p->asking, 1, __ATOMIC_SEQ_CST);
	return out->verdict;
}

static struct approval_request command(const char *const *argv, size_t argc)
{
	struct approval_request rq = { APPROVAL_COMMAND, reason, argv, argc, ".", 1,
				       NULL, NULL, NULL };

	return rq;
}

static struct approval_request tool(const char *name)
{
	struct approval_request rq = { APPROVAL_MCP_TOOL, "every MCP tool call is approved",
				       NULL, 0, NULL, 0, name, "the MCP tool x (server s)", "{}" };

	return rq;
}

/* ---- modes ------------------------------------------------------------ */

static void test_approval_safe_never_auto_always(void **state)
{
	struct person who = { APPROVE_ONCE, NULL, 0, NULL, NULL, 0, 0 };
	struct approval_request rq = command(pip, 3), trq = tool("docs__search");
	struct approval_answer a = APPROVAL_ANSWER_INIT;
	struct approver ap;

	(void)state;
	approver_init(&ap, person_ask, &who, NULL);
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_SAFE, &rq), APPROVE_NO);
	assert_non_null(strstr(err_last(), "approval mode is safe"));
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_SAFE, &trq), APPROVE_NO);
	assert_non_null(strstr(err_last(), "permissions.mode is safe: MCP tool calls"));
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_AUTO, &rq), APPROVE_ONCE);
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_AUTO, &trq), APPROVE_ONCE);
	assert_int_equal(approver_decide(&ap, &a, (enum approval_mode)42, &rq), APPROVE_NO);
	/* neither safe nor auto asks anybody */
	assert_int_equal(who.asked, 0);
	/* without an approver, or without anyone in it, ask is no */
	assert_int_equal(approver_decide(NULL, &a, APPROVAL_AUTO, &rq), APPROVE_ONCE);
	assert_int_equal(approver_decide(NULL, &a, APPROVAL_ASK, &rq), APPROVE_NO);
	assert_non_null(strstr(err_last(), "nobody to ask"));
	approver_release(&ap);
	approver_init(&ap, NULL, NULL, NULL);
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &rq), APPROVE_NO);
	approver_release(&ap);
}

/* Mode ask hands the question, and the cancel flag, to the front's function. */
static void test_approval_ask_is_the_fronts(void **state)
{
	static volatile sig_atomic_t flag;
	struct person who = { APPROVE_NO, "use the vendored copy", 0, NULL, NULL, 0, 0 };
	struct approval_request rq = command(pip, 3);
	struct approval_answer a = APPROVAL_ANSWER_INIT;
	struct approver ap;

	(void)state;
	approver_init(&ap, person_ask, &who, &flag);
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &rq), APPROVE_NO);
	assert_int_equal(who.asked, 1);
	assert_ptr_equal(who.rq, &rq);
	assert_ptr_equal(who.cancel, &flag);
	assert_string_equal(a.reason, "use the vendored copy");
	approval_answer_release(&a);
	assert_null(a.reason);
	/* a no is not remembered: the next call asks again */
	who.said = NULL;
	who.verdict = APPROVE_ONCE;
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &rq), APPROVE_ONCE);
	assert_false(a.remembered);
	/* nor is a yes, this once */
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &rq), APPROVE_ONCE);
	assert_int_equal(who.asked, 3);
	approver_release(&ap);
}

/* ---- what is remembered ----------------------------------------------- */

static void test_approval_always_is_remembered_by_shape(void **state)
{
	static const char *const pip_other[] = { "/usr/bin/PIP.exe", "install", "y" };
	static const char *const npm[] = { "npm", "install" };
	static const char *const empty[] = { "" };
	struct person who = { APPROVE_ALWAYS, NULL, 0, NULL, NULL, 0, 0 };
	struct approval_request rq = command(pip, 3), other = command(pip_other, 3);
	struct approval_request n = command(npm, 2), e = command(empty, 1);
	struct approval_answer a = APPROVAL_ANSWER_INIT;
	struct approver ap;

	(void)state;
	approver_init(&ap, person_ask, &who, NULL);
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &rq), APPROVE_ALWAYS);
	assert_int_equal(who.asked, 1);
	/* the same name by any path asks nothing */
	who.verdict = APPROVE_NO;
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &other), APPROVE_ONCE);
	assert_true(a.remembered);
	assert_int_equal(who.asked, 1);
	/* another name is asked */
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &n), APPROVE_NO);
	assert_int_equal(who.asked, 2);
	/* safe still says no */
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_SAFE, &rq), APPROVE_NO);
	/* an empty name is never remembered */
	who.verdict = APPROVE_ALWAYS;
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &e), APPROVE_ALWAYS);
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &e), APPROVE_ALWAYS);
	assert_int_equal(who.asked, 4);
	/* a new session asks again */
	approver_forget(&ap);
	who.verdict = APPROVE_NO;
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &rq), APPROVE_NO);
	assert_int_equal(who.asked, 5);
	approver_release(&ap);
}

/*
 * Issue 20's attack: `a` on one git command approved every git command.
 * The key is the command's shape: `a` on `git status` leaves `git push`
 * (and `git -c core.sshCommand=... status`) to be asked, because their
 * shapes ("git push", "git -c core.sshCommand=x status") differ.
 */
static void test_approval_always_git_status_is_not_git_push(void **state)
{
	static const char *const status[] = { "git", "status", "--short" };
	static const char *const status2[] = { "/usr/bin/git", "status" };
	static const char *const push[] = { "git", "push", "origin", "main" };
	static const char *const sneaky[] = { "git", "-c", "core.sshCommand=x", "status" };
	struct person who = { APPROVE_ALWAYS, NULL, 0, NULL, NULL, 0, 0 };
	struct approval_request s = command(status, 3), s2 = command(status2, 2);
	struct approval_request p = command(push, 4), k = command(sneaky, 4);
	struct approval_answer a = APPROVAL_ANSWER_INIT;
	struct buf shape = BUF_INIT;
	struct approver ap;

	(void)state;
	approver_init(&ap, person_ask, &who, NULL);
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &s), APPROVE_ALWAYS);
	who.verdict = APPROVE_NO;
	/* the same shape by another path and other arguments: remembered */
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &s2), APPROVE_ONCE);
	assert_true(a.remembered);
	assert_int_equal(who.asked, 1);
	/* git push is asked, and the person's no stands */
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &p), APPROVE_NO);
	assert_false(a.remembered);
	assert_int_equal(who.asked, 2);
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &k), APPROVE_NO);
	assert_int_equal(who.asked, 3);
	/* why: the keys differ */
	approval_command_shape(&shape, status, 3);
	assert_string_equal(shape.buf, "git status");
	buf_reset(&shape);
	approval_command_shape(&shape, push, 4);
	assert_string_equal(shape.buf, "git push");
	buf_reset(&shape);
	approval_command_shape(&shape, sneaky, 4);
	assert_string_equal(shape.buf, "git -c core.sshCommand=x status");
	buf_release(&shape);
	approver_release(&ap);
}

static void assert_shape(const char *const *argv, size_t argc, const char *want)
{
	struct buf b = BUF_INIT;

	approval_command_shape(&b, argv, argc);
	assert_string_equal(b.buf ? b.buf : "", want);
	buf_release(&b);
}

static void test_approval_command_shapes(void **state)
{
	static const char *const git_c[] = { "git", "-C", "sub dir", "push", "-f" };
	static const char *const npm[] = { "NPM.exe", "install", "left-pad" };
	static const char *const cargo[] = { "/usr/bin/cargo", "build", "--release" };
	static const char *const make[] = { "make", "-j4", "test" };
	static const char *const py_m[] = { "python3", "-m", "pytest", "-x" };
	static const char *const py_c[] = { "python3", "-c", "print(1)" };
	static const char *const node[] = { "node", "build.js", "--prod" };
	static const char *const env[] = { "env", "A=1", "git", "push" };
	static const char *const ls[] = { "ls", "-la", "src" };
	static const char *const git[] = { "git" };
	static const char *const esc[] = { "git", "st\x1b]52;c;x\x07" };
	static const char *const empty[] = { "" };

	(void)state;
	assert_shape(git_c, 5, "git -C 'sub dir' push");
	assert_shape(npm, 3, "npm install");
	assert_shape(cargo, 3, "cargo build");
	assert_shape(make, 3, "make -j4 test");
	assert_shape(py_m, 4, "python3 -m pytest");
	assert_shape(py_c, 3, "python3 -c 'print(1)'");
	assert_shape(node, 3, "node build.js");
	assert_shape(env, 4, "env A=1 git push");
	assert_shape(ls, 3, "ls");
	assert_shape(git, 1, "git");
	assert_shape(empty, 1, "");
	/* a subcommand full of escapes is shown escaped, as the argv is */
	assert_shape(esc, 2, "git $'st\\x1b]52;c;x\\x07'");
}

/* An MCP tool is remembered by its registry name, apart from commands of the same name. */
static void test_approval_always_tool_by_its_name(void **state)
{
	static const char *const search[] = { "docs__search" };
	struct person who = { APPROVE_ALWAYS, NULL, 0, NULL, NULL, 0, 0 };
	struct approval_request t = tool("docs__search"), t2 = tool("docs__fetch");
	struct approval_request c = command(search, 1);
	struct approval_answer a = APPROVAL_ANSWER_INIT;
	struct approver ap;

	(void)state;
	approver_init(&ap, person_ask, &who, NULL);
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &t), APPROVE_ALWAYS);
	who.verdict = APPROVE_NO;
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &t), APPROVE_ONCE);
	assert_true(a.remembered);
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &t2), APPROVE_NO);
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &c), APPROVE_NO);
	assert_int_equal(who.asked, 3);
	approver_forget(&ap);
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &t), APPROVE_NO);
	approver_release(&ap);
}

/* Issue 20: `a` to a proxy question remembers the domain, apart from tools and commands. */
static void test_approval_always_domain_by_its_name(void **state)
{
	static const char *const cmd[] = { "pypi.org" };
	struct person who = { APPROVE_ALWAYS, NULL, 0, NULL, NULL, 0, 0 };
	struct approval_request d = { APPROVAL_NETWORK_DOMAIN, "not in allowed_domains", NULL, 0,
				      NULL, 0, "pypi.org", "a connection to pypi.org (port 443)",
				      "by: pip install x" };
	struct approval_request d2 = d, t = tool("pypi.org"), c = command(cmd, 1);
	struct approval_answer a = APPROVAL_ANSWER_INIT;
	struct approver ap;

	(void)state;
	d2.tool = "files.pythonhosted.org";
	approver_init(&ap, person_ask, &who, NULL);
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &d), APPROVE_ALWAYS);
	assert_int_equal(who.rq->kind, APPROVAL_NETWORK_DOMAIN);
	who.verdict = APPROVE_NO;
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &d), APPROVE_ONCE);
	assert_true(a.remembered);
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &d2), APPROVE_NO);
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &t), APPROVE_NO);
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &c), APPROVE_NO);
	assert_int_equal(who.asked, 4);
	approver_forget(&ap);
	assert_int_equal(approver_decide(&ap, &a, APPROVAL_ASK, &d), APPROVE_NO);
	approver_release(&ap);
}

/* ---- one question at a time ------------------------------------------- */

struct asker {
	struct approver *ap;
	const char *const *argv;
};

static void *ask_thread(void *arg)
{
	struct asker *k = arg;
	struct approval_request rq = command(k->argv, 1);
	struct approval_answer a = APPROVAL_ANSWER_INIT;

	approver_decide(k->ap, &a, APPROVAL_ASK, &rq);
	approval_answer_release(&a);
	return NULL;
}

static void test_approval_one_question_at_a_time(void **state)
{
	static const char *const names[][1] = { { "pip" }, { "npm" }, { "curl" }, { "wget" } };
	struct person who = { APPROVE_ONCE, NULL, 0, NULL, NULL, 0, 0 };
	struct asker k[4];
	pthread_t t[4];
	struct approver ap;
	size_t i;

	(void)state;
	approver_init(&ap, person_ask, &who, NULL);
	for (i = 0; i < 4; i++) {
		k[i].ap = &ap;
		k[i].argv = names[i];
		assert_int_equal(pthread_create(&t[i], NULL, ask_thread, &k[i]), 0);
	}
	for (i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(who.asked, 4);
	assert_false(who.overlapped);
	approver_release(&ap);
}

/* ---- what the model is told ------------------------------------------- */

static void test_approval_refusal(void **state)
{
	static const char *const npm[] = { "npm", "install" };
	struct approval_answer a = APPROVAL_ANSWER_INIT;
	struct buf b = BUF_INIT;

	(void)state;
	a.reason = strdup("use the vendored copy");
	approval_add_refusal(&b, npm, 2, &a);
	assert_string_equal(b.buf, "Command not approved: npm install \xe2\x80\x94 the person "
			    "said: \"use the vendored copy\"");
	approval_answer_release(&a);
	buf_reset(&b);
	approval_add_refusal(&b, npm, 2, &a);
	assert_string_equal(b.buf, "Command not approved: npm install");
	buf_reset(&b);
	approval_add_refusal(&b, npm, 2, NULL);
	assert_string_equal(b.buf, "Command not approved: npm install");
	buf_release(&b);
}

/* ---- how the command is shown ----------------------------------------- */

static void assert_shown(const char *const *argv, size_t argc, const char *want)
{
	struct buf b = BUF_INIT;

	approval_format_argv(&b, argv, argc);
	assert_string_equal(b.buf, want);
	buf_release(&b);
}

static void test_approval_format_argv(void **state)
{
	const char *plain[] = { "pip", "install", "-r", "req.txt", "a=b,c:d@e%f+g/h" };
	const char *spaces[] = { "git", "commit", "-m", "it's done", "", "$HOME", "*" };
	const char *ctl[] = { "rm", "-rf", "x\r\x1b[2Kls", "a\nb", "tab\there", "q'\\" };
	const char *bidi[] = { "cat", "evil\xe2\x80\xae\x74\x78\x74.exe", "zw\xe2\x80\x8bsp" };
	const char *bytes[] = { "\xff\xfe", "caf\xc3\xa9", "\xc3", "\xed\xa0\x80" };
	const char *with_null[] = { "ls", NULL };

	(void)state;
	assert_shown(plain, 5, "pip install -r req.txt a=b,c:d@e%f+g/h");
	assert_shown(spaces, 7, "git commit -m 'it'\"'\"'s done' '' '$HOME' '*'");
	/* a control character never reaches the terminal as it is */
	assert_shown(ctl, 6, "rm -rf $'x\\r\\x1b[2Kls' $'a\\nb' $'tab\\there' 'q'\"'\"'\\'");
	/* nor does text that reorders or hides what follows */
	assert_shown(bidi, 3, "cat $'evil\\u202etxt.exe' $'zw\\u200bsp'");
	/* bytes that are not UTF-8 are shown as bytes; valid UTF-8 as itself */
	assert_shown(bytes, 4, "$'\\xff\\xfe' 'caf\xc3\xa9' $'\\xc3' $'\\xed\\xa0\\x80'");
	assert_shown(with_null, 2, "ls ''");
	assert_shown(plain, 0, "");
}

static void test_approval_add_visible(void **state)
{
	struct buf b = BUF_INIT;

	(void)state;
	approval_add_visible(&b, "Command 'r\x1b[31mm' is \xc2\x85 in\xe2\x81\xa6 \xf0\x9f\x98\x80");
	assert_string_equal(b.buf,
			    "Command 'r\\x1b[31mm' is \\u0085 in\\u2066 \xf0\x9f\x98\x80");
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_approval_safe_never_auto_always),
		cmocka_unit_test(test_approval_ask_is_the_fronts),
		cmocka_unit_test(test_approval_always_is_remembered_by_shape),
		cmocka_unit_test(test_approval_always_git_status_is_not_git_push),
		cmocka_unit_test(test_approval_command_shapes),
		cmocka_unit_test(test_approval_always_tool_by_its_name),
		cmocka_unit_test(test_approval_always_domain_by_its_name),
		cmocka_unit_test(test_approval_one_question_at_a_time),
		cmocka_unit_test(test_approval_refusal),
		cmocka_unit_test(test_approval_format_argv),
		cmocka_unit_test(test_approval_add_visible),
	};

	return cmocka_run_group_tests_name("sandbox/approval", tests, NULL, NULL);
}
