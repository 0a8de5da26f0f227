/*
 * Approval of commands and MCP tool calls; see approval.h. The question
 * itself is the front's (src/cli/approve_tty.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"
#include "sandbox/approval.h"

/* ---- showing the command ---------------------------------------------- */

/* Code points that are invisible, or reorder or break the text around them. */
static int hidden_cp(uint32_t c)
{
	return (c >= 0x80 && c <= 0x9f) || c == 0xad || c == 0x61c || c == 0x180e ||
	       (c >= 0x200b && c <= 0x200f) || (c >= 0x2028 && c <= 0x202e) ||
	       (c >= 0x2060 && c <= 0x206f) || c == 0xfeff || (c >= 0xfff9 && c <= 0xfffb) ||
	       (c >= 0xe0000 && c <= 0xe007f);
}

/*
 * Walk `s`: for each piece, `plain` bytes are shown as they are; else the
 * piece is one control byte, invalid byte, or hidden code point `*cp`.
 */
static size_t next_piece(const char *s, int *plain, uint32_t *cp)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n;

	if (u[0] < 0x20 || u[0] == 0x7f) {
		*plain = 0;
		*cp = u[0];
		return 1;
	}
	n = utf8_decode(s, strnlen(s, 4), cp);
	if (!n) {
		*plain = 0;
		*cp = 0x80000000u | u[0];	/* a raw byte */
		return 1;
	}
	*plain = !hidden_cp(*cp);
	return n;
}

static int needs_escapes(const char *s)
{
	int plain;
	uint32_t cp;

	while (*s) {
		s += next_piece(s, &plain, &cp);
		if (!plain)
			return 1;
	}
	return 0;
}

static void add_escape(struct buf *out, uint32_t cp)
{
	if (cp & 0x80000000u)
		buf_addf(out, "\\x%02x", cp & 0xff);
	else if (cp == '\n')
		buf_addstr(out, "\\n");
	else if (cp == '\t')
		buf_addstr(out, "\\t");
	else if (cp == '\r')
		buf_addstr(out, "\\r");
	else if (cp < 0x80)
		buf_addf(out, "\\x%02x", cp);
	else if (cp < 0x10000)
		buf_addf(out, "\\u%04x", cp);
	else
		buf_addf(out, "\\U%08x", cp);
}

void approval_add_visible(struct buf *out, const char *s)
{
	int plain;
	uint32_t cp;

	while (*s) {
		size_t n = next_piece(s, &plain, &cp);

		if (plain)
			buf_add(out, s, n);
		else
			add_escape(out, cp);
		s += n;
	}
}

/* bash's $'...': every byte as written, with escapes for what must not reach the terminal. */
static void add_ansi_c_quoted(struct buf *out, const char *s)
{
	int plain;
	uint32_t cp;

	buf_addstr(out, "$'");
	while (*s) {
		size_t n = next_piece(s, &plain, &cp);

		if (plain && (*s == '\\' || *s == '\''))
			buf_addch(out, '\\');
		if (plain)
			buf_add(out, s, n);
		else
			add_escape(out, cp);
		s += n;
	}
	buf_addch(out, '\'');
}

void approval_format_argv(struct buf *out, const char *const *argv, size_t argc)
{
	size_t i;

	for (i = 0; i < argc; i++) {
		const char *a = argv[i] ? argv[i] : "";

		if (i)
			buf_addch(out, ' ');
		if (needs_escapes(a))
			add_ansi_c_quoted(out, a);
		else
			buf_add_shell_quoted(out, a);
	}
}

/* ---- answers ---------------------------------------------------------- */

void approval_answer_release(struct approval_answer *a)
{
	free(a->reason);
	a->reason = NULL;
	a->verdict = APPROVE_NO;
	a->interrupted = 0;
	a->remembered = 0;
}

void approval_add_refusal(struct buf *out, const char *const *argv, size_t argc,
			  const struct approval_answer *a)
{
	buf_addstr(out, "Command not approved: ");
	approval_format_argv(out, argv, argc);
	if (a && a->reason && *a->reason)
		buf_addf(out, " \xe2\x80\x94 the person said: \"%s\"", a->reason);
}

/* ---- the approver ----------------------------------------------------- */

void approver_init(struct approver *ap, approval_ask_fn ask, void *data,
		   const volatile sig_atomic_t *cancel)
{
	memset(ap, 0, sizeof(*ap));
	ap->ask = ask;
	ap->data = data;
	ap->cancel = cancel;
	pthread_mutex_init(&ap->ask_lock, NULL);
	pthread_mutex_init(&ap->always_lock, NULL);
	strvec_init(&ap->always_commands);
	strvec_init(&ap->always_tools);
	strvec_init(&ap->always_domains);
}

void approver_forget(struct approver *ap)
{
	pthread_mutex_lock(&ap->always_lock);
	strvec_clear(&ap->always_commands);
	strvec_clear(&ap->always_tools);
	strvec_clear(&ap->always_domains);
	pthread_mutex_unlock(&ap->always_lock);
}

void approver_release(struct approver *ap)
{
	strvec_clear(&ap->always_commands);
	strvec_clear(&ap->always_tools);
	strvec_clear(&ap->always_domains);
	pthread_mutex_destroy(&ap->ask_lock);
	pthread_mutex_destroy(&ap->always_lock);
	memset(ap, 0, sizeof(*ap));
}

/* ---- the shape of a command ------------------------------------------ */

/*
 * Programs whose first word that is not an option names what they do (a
 * subcommand, a make target, the package npx runs), and their options
 * before it that take the next argument as a value ("git -C DIR push").
 */
static const struct shape_rule {
	const char *name;
	const char *const *value_opts;	/* NULL-terminated, or NULL */
} subcommand_programs[] = {
#define VOPTS(...) (const char *const[]){ __VA_ARGS__, NULL }
	{ "git", VOPTS("-C", "-c", "--git-dir", "--work-tree", "--namespace",
		       "--super-prefix", "--config-env", "--exec-path") },
	{ "npm", VOPTS("-C", "--prefix", "-w", "--workspace") },
	{ "npx", VOPTS("-p", "--package", "-c", "--call") },
	{ "pnpm", VOPTS("-C", "--dir", "--filter", "-F") },
	{ "yarn", VOPTS("--cwd") },
	{ "bun", VOPTS("--cwd") },
	{ "cargo", VOPTS("-C", "--config", "-Z", "--color") },
	{ "rustup", VOPTS("--toolchain") },
	{ "go", VOPTS("-C") },
	{ "pip", VOPTS("--python") },
	{ "pip3", VOPTS("--python") },
	{ "uv", VOPTS("--directory", "--project", "--config-file", "--cache-dir") },
	{ "poetry", VOPTS("-C", "--directory", "-P", "--project") },
	{ "pipenv", NULL },
	{ "conda", NULL },
	{ "docker", VOPTS("-H", "--host", "-c", "--context", "--config", "-l", "--log-level") },
	{ "podman", VOPTS("--connection", "-c", "--url", "--root", "--runroot") },
	{ "kubectl", VOPTS("-n", "--namespace", "--context", "--kubeconfig", "-s", "--server") },
	{ "helm", VOPTS("-n", "--namespace", "--kube-context", "--kubeconfig") },
	{ "terraform", NULL },
	{ "gh", VOPTS("-R", "--repo") },
	{ "make", VOPTS("-C", "-f", "-I", "-j", "-l", "-o", "-W", "--directory", "--file",
			"--include-dir", "--jobs", "--load-average") },
	{ "gmake", VOPTS("-C", "-f", "-I", "-j", "-l", "-o", "-W", "--directory", "--file") },
	{ "cmake", NULL },
	{ "ninja", VOPTS("-C", "-f", "-j", "-k", "-l", "-d", "-t", "-w") },
	{ "apt", VOPTS("-o", "-c", "-t") },
	{ "apt-get", VOPTS("-o", "-c", "-t") },
	{ "dnf", NULL },
	{ "brew", NULL },
	{ "gem", NULL },
	{ "bundle", NULL },
	{ "composer", VOPTS("-d", "--working-dir") },
	{ "dotnet", NULL },
	{ "deno", NULL },
	{ "mvn", VOPTS("-f", "--file", "-s", "--settings", "-P", "-pl", "-D") },
	{ "gradle", VOPTS("-p", "--project-dir", "-b", "--build-file") },
	{ "systemctl", VOPTS("-H", "--host", "-M", "--machine", "-t", "--type") },
	{ "hg", VOPTS("-R", "--repository", "--cwd", "--config") },
	{ "svn", NULL },
#undef VOPTS
};

/* Interpreters: the shape is the script (or "-m MODULE"); code given inline is the whole command. */
static const char *const interpreters[] = {
	"python", "python3", "pypy", "pypy3", "node", "ruby", "perl", "php", "lua", "rscript",
};

/*
 * Programs that run another program named in their arguments: what they
 * run cannot be told from their name, so only this exact command is
 * remembered.
 */
static const char *const runners[] = {
	"env", "sudo", "doas", "nice", "nohup", "timeout", "stdbuf", "xargs", "time", "strace",
	"ltrace", "ionice", "setsid", "chroot", "unshare", "nsenter", "flock", "watch", "script",
	"busybox", "toybox", "command", "exec", "builtin", "eval", "parallel", "find", "su",
};

static int in_list(const char *const *list, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(list[i], name))
			return 1;
	return 0;
}

static const struct shape_rule *subcommand_rule(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(subcommand_programs); i++)
		if (!strcmp(subcommand_programs[i].name, name))
			return &subcommand_programs[i];
	return NULL;
}

static int takes_value(const struct shape_rule *r, const char *opt)
{
	size_t i;

	if (!r->value_opts || strchr(opt, '='))
		return 0;
	for (i = 0; r->value_opts[i]; i++)
		if (!strcmp(r->value_opts[i], opt))
			return 1;
	return 0;
}

/* How many arguments after argv[0] belong to the shape; argc - 1 for the whole command. */
static size_t shape_words(const char *name, const char *const *argv, size_t argc)
{
	const struct shape_rule *r = subcommand_rule(name);
	size_t i;

	if (r) {
		/* the options before the subcommand stay in the shape, as they are */
		for (i = 1; i < argc; i++) {
			const char *a = argv[i] ? argv[i] : "";

			if (!strcmp(a, "--"))
				return argc - 1;
			if (a[0] != '-')
				return i;
			if (takes_value(r, a))
				i++;
		}
		return argc - 1;
	}
	if (in_list(interpreters, ARRAY_SIZE(interpreters), name)) {
		for (i = 1; i < argc; i++) {
			const char *a = argv[i] ? argv[i] : "";

			if (!strcmp(a, "-m") && i + 1 < argc)
				return i + 1;
			if (a[0] != '-')
				return i;
		}
		/* -c CODE, -e CODE, or only options: the exact command */
		return argc - 1;
	}
	if (in_list(runners, ARRAY_SIZE(runners), name))
		return argc - 1;
	return 0;
}

void approval_command_shape(struct buf *out, const char *const *argv, size_t argc)
{
	struct buf name = BUF_INIT;
	const char *first;
	size_t n;

	if (!argc)
		return;
	policy_base_name(&name, argv[0] ? argv[0] : "");
	if (!name.len) {
		buf_release(&name);
		return;
	}
	n = shape_words(name.buf, argv, argc);
	first = name.buf;
	approval_format_argv(out, &first, 1);
	if (n) {
		buf_addch(out, ' ');
		approval_format_argv(out, argv + 1, n);
	}
	buf_release(&name);
}

/*
 * What an `a` answer to `rq` remembers, in `key`, and in which list: the
 * shape of a command (approval_command_shape(), as the question says:
 * "a: yes, and 'git push' without asking"), the registry name of an MCP
 * tool. NULL when there is nothing to remember by (an empty name).
 */
static struct strvec *always_list(struct approver *ap, const struct approval_request *rq,
				  struct buf *key)
{
	if (rq->kind == APPROVAL_MCP_TOOL || rq->kind == APPROVAL_NETWORK_DOMAIN) {
		buf_addstr(key, rq->tool ? rq->tool : "");
		return !key->len ? NULL : rq->kind == APPROVAL_MCP_TOOL ? &ap->always_tools
			: &ap->always_domains;
	}
	approval_command_shape(key, rq->argv, rq->argc);
	return key->len ? &ap->always_commands : NULL;
}

static int remembered(struct approver *ap, const struct approval_request *rq)
{
	struct buf key = BUF_INIT;
	struct strvec *list;
	int found = 0;

	pthread_mutex_lock(&ap->always_lock);
	list = always_list(ap, rq, &key);
	if (list)
		found = strvec_find(list, key.buf) >= 0;
	pthread_mutex_unlock(&ap->always_lock);
	buf_release(&key);
	return found;
}

static void remember(struct approver *ap, const struct approval_request *rq)
{
	struct buf key = BUF_INIT;
	struct strvec *list;

	pthread_mutex_lock(&ap->always_lock);
	list = always_list(ap, rq, &key);
	if (list && strvec_find(list, key.buf) < 0)
		strvec_push(list, key.buf);
	pthread_mutex_unlock(&ap->always_lock);
	buf_release(&key);
}

int approver_decide(struct approver *ap, struct approval_answer *out, enum approval_mode mode,
		    const struct approval_request *rq)
{
	memset(out, 0, sizeof(*out));
	switch (mode) {
	case APPROVAL_SAFE:
		if (rq->kind == APPROVAL_MCP_TOOL)
			err_set(FX_EDENIED, "permissions.mode is safe: MCP tool calls need "
				"approval and do not run");
		else
			err_set(FX_EDENIED, "approval mode is safe: commands that need approval "
				"do not run");
		return APPROVE_NO;
	case APPROVAL_AUTO:
		out->verdict = APPROVE_ONCE;
		return APPROVE_ONCE;
	case APPROVAL_ASK:
		if (ap && remembered(ap, rq)) {
			out->verdict = APPROVE_ONCE;
			out->remembered = 1;
			return APPROVE_ONCE;
		}
		if (!ap || !ap->ask) {
			err_set(FX_EDENIED, "nobody to ask for approval");
			return APPROVE_NO;
		}
		pthread_mutex_lock(&ap->ask_lock);
		ap->ask(ap->data, out, rq, ap->cancel);
		pthread_mutex_unlock(&ap->ask_lock);
		if (out->verdict == APPROVE_ALWAYS)
			remember(ap, rq);
		return out->verdict;
	}
	err_set(FX_EDENIED, "unknown approval mode %d", (int)mode);
	return APPROVE_NO;
}
