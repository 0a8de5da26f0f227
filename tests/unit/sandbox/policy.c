/*
 * The command policy.
 *
 * Part 1, the seed table: tests/fixtures/policy/cases.tsv holds answers
 * computed by the seed's own policies.py (tests/fixtures/policy/gen.py);
 * every row must come out the same here, decision and reason. One test per
 * config variant of the table.
 *
 * Part 2, hand-written tests: names, set-up, and the wrapper extension
 * (busybox, toybox, command, exec, builtin), where forgex deliberately
 * decides differently from the seed.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/jsonx.h"
#include "config/config.h"
#include "helpers/testutil.h"
#include "sandbox/policy.h"

/* The shells denied beyond the seed's list, along with it. */
/*
 * One walk of policy_check(), seen one field at a time: the decision, with
 * the reason appended to `reason` (may be NULL).
 */
static enum policy_decision check(const struct policy *p, const char *const *argv, size_t argc,
				  struct buf *reason)
{
	struct policy_verdict v = POLICY_VERDICT_INIT;
	enum policy_decision d = policy_check(&v, p, argv, argc);

	assert_int_equal(v.decision, d);
	if (reason)
		buf_addbuf(reason, &v.reason);
	policy_verdict_release(&v);
	return d;
}

/* The verdict's always_ask. */
static int always_ask(const struct policy *p, const char *const *argv, size_t argc)
{
	struct policy_verdict v = POLICY_VERDICT_INIT;
	int always;

	policy_check(&v, p, argv, argc);
	always = v.always_ask;
	policy_verdict_release(&v);
	return always;
}

/* The verdict's network. */
static int needs_network(const struct policy *p, const char *const *argv, size_t argc)
{
	struct policy_verdict v = POLICY_VERDICT_INIT;
	int network;

	policy_check(&v, p, argv, argc);
	network = v.network;
	policy_verdict_release(&v);
	return network;
}

static size_t n_extra_denied(void)
{
	size_t n = 0;

	while (policy_extra_denied[n])
		n++;
	return n;
}

/* ---- the seed table --------------------------------------------------- */

struct row {
	size_t line;
	struct strvec argv;
	char *argv_text;	/* as written in the table, for messages */
	char *decision;
	struct buf reason;
};

struct variant {
	char *name;
	struct config cfg;
	struct row *rows;
	size_t rows_nr, rows_alloc;
};

static struct {
	int loaded;
	char *path;
	char *error;
	struct variant *variants;
	size_t variants_nr, variants_alloc;
	size_t rows_total;
	struct strvec default_denied, default_network;
	char *seed_sha256;
} table;

static char *table_file(const char *name)
{
	const char *top = getenv("FORGEX_TOP");

	if (top && *top)
		return xstrfmt("%s/tests/fixtures/policy/%s", top, name);
	return xstrfmt("tests/fixtures/policy/%s", name);
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* A table string: a JSON string, or {"hex": "..."} for bytes that are not UTF-8. */
static int table_string(struct buf *out, const json_t *j)
{
	const char *hex;
	size_t i, n;

	if (json_is_string(j)) {
		buf_add(out, json_string_value(j), json_string_length(j));
		return 0;
	}
	hex = jsonx_str(j, "hex");
	if (!hex || strlen(hex) % 2)
		return -1;
	for (i = 0, n = strlen(hex); i < n; i += 2) {
		int hi = hexval(hex[i]), lo = hexval(hex[i + 1]);

		if (hi < 0 || lo < 0)
			return -1;
		buf_addch(out, hi * 16 + lo);
	}
	return 0;
}

static int table_strvec(struct strvec *out, const json_t *arr)
{
	size_t i;
	json_t *e;

	if (!json_is_array(arr))
		return -1;
	json_array_foreach(arr, i, e) {
		struct buf s = BUF_INIT;

		if (table_string(&s, e) < 0) {
			buf_release(&s);
			return -1;
		}
		strvec_push(out, s.buf);
		buf_release(&s);
	}
	return 0;
}

static struct variant *table_variant(const char *name)
{
	size_t i;

	for (i = 0; i < table.variants_nr; i++)
		if (!strcmp(table.variants[i].name, name))
			return &table.variants[i];
	return NULL;
}

static int table_fail(size_t line, const char *what)
{
	table.error = xstrfmt("%s:%zu: %s", table.path, line, what);
	return -1;
}

static int table_line(size_t line, char *text)
{
	char *f[5];
	size_t nf = 0;
	json_t *j = NULL;
	char *p = text;
	int ret = -1;

	while (nf < ARRAY_SIZE(f)) {
		f[nf++] = p;
		p = strchr(p, '\t');
		if (!p)
			break;
		*p++ = '\0';
	}
	if (!strcmp(f[0], "@seed_sha256") && nf == 2) {
		table.seed_sha256 = xstrdup(f[1]);
		return 0;
	}
	if ((!strcmp(f[0], "@default_denied") || !strcmp(f[0], "@default_network")) && nf == 2) {
		if (jsonx_parse(&j, f[1], strlen(f[1]), "list") < 0 ||
		    table_strvec(f[0][9] == 'd' ? &table.default_denied : &table.default_network,
				 j) < 0)
			goto out;
		ret = 0;
	} else if (!strcmp(f[0], "@config") && nf == 3) {
		struct variant *v;
		const char *mode;

		if (jsonx_parse(&j, f[2], strlen(f[2]), "config") < 0)
			goto out;
		mode = jsonx_str(j, "mode");
		ALLOC_GROW(table.variants, table.variants_nr + 1, table.variants_alloc);
		v = &table.variants[table.variants_nr++];
		memset(v, 0, sizeof(*v));
		v->name = xstrdup(f[1]);
		strvec_init(&v->cfg.terminal.allowed);
		strvec_init(&v->cfg.terminal.denied);
		v->cfg.permissions.mode = mode ? xstrdup(mode) : NULL;
		if (!mode || table_strvec(&v->cfg.terminal.allowed, json_object_get(j, "allowed")) ||
		    table_strvec(&v->cfg.terminal.denied, json_object_get(j, "denied")))
			goto out;
		ret = 0;
	} else if (f[0][0] != '@' && nf == 4) {
		struct variant *v = table_variant(f[1]);
		struct row *r;

		if (!v || jsonx_parse(&j, f[0], strlen(f[0]), "argv") < 0)
			goto out;
		ALLOC_GROW(v->rows, v->rows_nr + 1, v->rows_alloc);
		r = &v->rows[v->rows_nr++];
		r->line = line;
		strvec_init(&r->argv);
		buf_init(&r->reason, 0);
		r->argv_text = xstrdup(f[0]);
		r->decision = xstrdup(f[2]);
		table.rows_total++;
		if (table_strvec(&r->argv, j) < 0)
			goto out;
		json_decref(j);
		j = NULL;
		if (jsonx_parse(&j, f[3], strlen(f[3]), "reason") < 0 ||
		    table_string(&r->reason, j) < 0)
			goto out;
		ret = 0;
	}
out:
	json_decref(j);
	return ret < 0 ? table_fail(line, "malformed line") : 0;
}

static void table_load(void)
{
	struct buf b = BUF_INIT;
	char *p, *nl;
	size_t line = 0;

	table.path = table_file("cases.tsv");
	if (fsutil_read_file(&b, table.path, 0) < 0) {
		table.error = xstrfmt("%s", err_last());
		goto out;
	}
	for (p = b.buf; *p; p = nl + 1) {
		line++;
		nl = strchr(p, '\n');
		if (!nl) {
			table_fail(line, "no newline at the end");
			goto out;
		}
		*nl = '\0';
		if (*p == '#' || !*p)
			continue;
		if (table_line(line, p) < 0)
			goto out;
	}
	table.loaded = 1;
out:
	buf_release(&b);
}

static void table_free(void)
{
	size_t i, k;

	for (i = 0; i < table.variants_nr; i++) {
		struct variant *v = &table.variants[i];

		for (k = 0; k < v->rows_nr; k++) {
			strvec_clear(&v->rows[k].argv);
			free(v->rows[k].argv_text);
			free(v->rows[k].decision);
			buf_release(&v->rows[k].reason);
		}
		free(v->rows);
		free(v->name);
		strvec_clear(&v->cfg.terminal.allowed);
		strvec_clear(&v->cfg.terminal.denied);
		free(v->cfg.permissions.mode);
	}
	free(table.variants);
	strvec_clear(&table.default_denied);
	strvec_clear(&table.default_network);
	free(table.seed_sha256);
	free(table.path);
	free(table.error);
}

static void test_policy_table_loaded(void **state)
{
	(void)state;
	if (!table.loaded)
		fail_msg("cannot load the seed table: %s", table.error ? table.error : "?");
	assert_true(table.rows_total >= 200);
	assert_true(table.variants_nr >= 8);
	assert_non_null(table.seed_sha256);
	assert_true(table.default_denied.nr > 0 && table.default_network.nr > 0);
}

/* Mismatches shown per variant, and characters shown of a long name. */
#define MAX_SHOWN 10
#define SHOWN 160

/* One config variant of the table: every row, reported together. */
static void test_policy_seed_rows(void **state)
{
	struct variant *v = *state;
	struct policy p = POLICY_INIT;
	size_t i, bad = 0;

	assert_true(table.loaded);
	assert_true(v->rows_nr > 0);
	assert_int_equal(policy_init_from_config(&p, &v->cfg), 0);
	for (i = 0; i < v->rows_nr; i++) {
		struct row *r = &v->rows[i];
		struct buf reason = BUF_INIT, reason1 = BUF_INIT;
		enum policy_decision d, d1;

		d = check(&p, r->argv.v, r->argv.nr, &reason);
		if (strcmp(policy_decision_name(d), r->decision) || reason.len != r->reason.len ||
		    memcmp(reason.buf, r->reason.buf, reason.len)) {
			if (bad++ < MAX_SHOWN)
				print_error("line %zu: %.*s [%s]: got %s \"%.*s\", seed says %s \"%.*s\"\n",
					    r->line, SHOWN, r->argv_text, v->name, policy_decision_name(d),
					    SHOWN, reason.buf, r->decision, SHOWN, r->reason.buf);
		}
		/* no wrapper in the table: the one-name check must agree */
		if (r->argv.nr) {
			d1 = policy_check_name(&p, r->argv.v[0], &reason1);
			if ((d1 != d || strcmp(reason1.buf, reason.buf)) && bad++ < MAX_SHOWN)
				print_error("line %zu: %.*s [%s]: policy_check_name says %s \"%.*s\"\n",
					    r->line, SHOWN, r->argv_text, v->name,
					    policy_decision_name(d1), SHOWN, reason1.buf);
		}
		buf_release(&reason);
		buf_release(&reason1);
	}
	policy_release(&p);
	if (bad)
		fail_msg("%zu of %zu rows of variant '%s' differ from the seed", bad, v->rows_nr,
			 v->name);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void assert_same_set(const char *const *ours, const struct strvec *seed)
{
	size_t n = 0, i;
	const char **sorted;

	while (ours[n])
		n++;
	sorted = xcalloc(n + 1, sizeof(*sorted));
	memcpy(sorted, ours, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_str);
	assert_int_equal(n, seed->nr);
	for (i = 0; i < n; i++)
		assert_string_equal(sorted[i], seed->v[i]);	/* the seed's list is sorted */
	free(sorted);
}

static void test_policy_default_lists_are_the_seeds(void **state)
{
	struct policy p;

	(void)state;
	assert_true(table.loaded);
	assert_same_set(policy_default_denied, &table.default_denied);
	assert_same_set(policy_default_network, &table.default_network);
	assert_int_equal(table.default_denied.nr, 43);
	assert_int_equal(table.default_network.nr, 14);
	policy_init_defaults(&p);
	assert_int_equal(p.denied.nr, 43 + n_extra_denied());
	assert_int_equal(p.network.nr, 14);
	assert_int_equal(p.allowed.nr, 0);
	assert_int_equal(p.network_allowed, 0);
	assert_int_equal(p.mode, APPROVAL_ASK);
	policy_release(&p);
}

/* Run a generator and compare its output with the committed file. */
static void check_generated(const char *const *argv, const char *committed)
{
	struct tu_result r;
	char *path;
	struct buf want = BUF_INIT;

	tu_run(&r, argv, getenv("FORGEX_TOP"), NULL, NULL);
	if (r.status != 0)
		fail_msg("%s exited with %d: %s", argv[1], r.status, r.err.buf);
	if (committed) {
		path = table_file(committed);
		assert_int_equal(fsutil_read_file(&want, path, 0), 0);
		if (want.len != r.out.len || memcmp(want.buf, r.out.buf, want.len))
			fail_msg("%s is stale: run python3 tests/fixtures/policy/gen.py > %s",
				 path, path);
		free(path);
	}
	buf_release(&want);
	tu_result_release(&r);
}

/*
 * The seed lives beside the tree (../shared/seed); a clean clone elsewhere
 * has no seed, and then the freshness tests are not registered at all
 * (main() says so) rather than passing without checking anything.
 */
static char *seed_file(void)
{
	const char *top = getenv("FORGEX_TOP");

	return xstrfmt("%s/../shared/seed/000_1f6f617ec57d0e32.txt", top && *top ? top : ".");
}

static int have_python3(void)
{
	return !access("/usr/bin/python3", X_OK);
}

static void test_policy_table_is_fresh(void **state)
{
	char *seed = seed_file(), *gen = table_file("gen.py");
	const char *argv[] = { "python3", gen, seed, NULL };

	(void)state;
	check_generated(argv, "cases.tsv");
	free(seed);
	free(gen);
}

static void test_policy_lower_tables_are_fresh(void **state)
{
	char *gen = table_file("gen_lower.py");
	const char *argv[] = { "python3", gen, "--check", NULL };

	(void)state;
	check_generated(argv, NULL);
	free(gen);
}

/* ---- names ------------------------------------------------------------ */

static void assert_names(const char *arg, const char *base, const char *norm)
{
	struct buf b = BUF_INIT, n = BUF_INIT;

	policy_base_name(&b, arg);
	policy_norm_name(&n, b.buf);
	if (strcmp(b.buf, base) || strcmp(n.buf, norm))
		fail_msg("'%s': got base '%s' norm '%s', want '%s' '%s'", arg, b.buf, n.buf, base,
			 norm);
	buf_release(&b);
	buf_release(&n);
}

static void test_policy_names(void **state)
{
	(void)state;
	assert_names("/usr/bin/python3.12", "python3.12", "python");
	assert_names("/usr/bin/python3.12//", "python3.12", "python");
	assert_names("pip3.11", "pip3.11", "pip");
	assert_names("bash5.2", "bash5.2", "bash");
	assert_names("bash-5.2", "bash-5.2", "bash-");
	assert_names("RM.EXE", "rm", "rm");
	assert_names("rm.exe.exe", "rm.exe", "rm.exe");
	assert_names("rm2.exe", "rm2", "rm");
	assert_names("rm.exe2", "rm.exe2", "rm.exe");
	assert_names(".exe", "", "");
	assert_names("a/.", "a", "a");
	assert_names("rm/./", "rm", "rm");
	assert_names("a/..", "..", "");
	assert_names("./", "", "");
	assert_names("/", "", "");
	assert_names("", "", "");
	assert_names("1.2", "1.2", "");
	assert_names("rm2\n", "rm2\n", "rm\n");
	assert_names("12\n", "12\n", "\n");
	assert_names("a1\n\n", "a1\n\n", "a1\n\n");
	assert_names("rm ", "rm ", "rm ");
	/* str.lower(), not tolower(): KELVIN SIGN, final sigma, dotted I */
	assert_names("\xe2\x84\xaaILL", "kill", "kill");
	assert_names("\xce\xa3\xce\x91\xce\xa3", "\xcf\x83\xce\xb1\xcf\x82", "\xcf\x83\xce\xb1\xcf\x82");
	assert_names("\xc4\xb0X", "i\xcc\x87x", "i\xcc\x87x");
	/* bytes that are not UTF-8 stay as they are */
	assert_names("\xffRM", "\xffrm", "\xffrm");
	assert_names("\xce\x91\xce\xa3\xff", "\xce\xb1\xcf\x82\xff", "\xce\xb1\xcf\x82\xff");
}

/* ---- set-up ----------------------------------------------------------- */

static void cfg_init(struct config *cfg, const char *mode)
{
	memset(cfg, 0, sizeof(*cfg));
	strvec_init(&cfg->terminal.allowed);
	strvec_init(&cfg->terminal.denied);
	cfg->permissions.mode = mode ? xstrdup(mode) : NULL;
}

static void cfg_release(struct config *cfg)
{
	strvec_clear(&cfg->terminal.allowed);
	strvec_clear(&cfg->terminal.denied);
	free(cfg->permissions.mode);
}

static void test_policy_from_config(void **state)
{
	struct config cfg;
	struct policy p = POLICY_INIT;

	(void)state;
	cfg_init(&cfg, "auto");
	strvec_push(&cfg.terminal.allowed, "ls");
	strvec_push(&cfg.terminal.denied, "git");
	assert_int_equal(policy_init_from_config(&p, &cfg), 0);
	assert_int_equal(p.mode, APPROVAL_AUTO);
	assert_int_equal(p.network_allowed, 1);
	assert_int_equal(p.allowed.nr, 1);
	assert_int_equal(p.denied.nr, 1);
	assert_string_equal(p.denied.v[0], "git");
	assert_int_equal(p.network.nr, 14);
	policy_release(&p);
	assert_int_equal(p.denied.nr, 0);
	cfg_release(&cfg);

	/* NULL mode is the default, ask */
	cfg_init(&cfg, NULL);
	assert_int_equal(policy_init_from_config(&p, &cfg), 0);
	assert_int_equal(p.mode, APPROVAL_ASK);
	assert_int_equal(p.network_allowed, 0);
	assert_int_equal(p.denied.nr, 43 + n_extra_denied());
	policy_release(&p);
	cfg_release(&cfg);
}

/* From a parsed configuration, as the front loads it. */
static void test_policy_from_parsed_config(void **state)
{
	static const char toml[] = "[permissions]\nmode = \"auto\"\n\n"
				   "[terminal]\nallowed = [\"ls\", \"pip\"]\ndenied = [\"git\"]\n";
	const char *pip[] = { "pip", "install", "x" }, *rm[] = { "rm" }, *git[] = { "git" };
	struct config cfg;
	struct policy p;
	struct buf r = BUF_INIT;

	(void)state;
	config_init(&cfg);
	assert_int_equal(policy_init_from_config(&p, &cfg), 0);
	/* the built-in defaults are the seed's CommandPolicy() */
	assert_int_equal(p.mode, APPROVAL_ASK);
	assert_int_equal(p.allowed.nr, 0);
	assert_int_equal(p.denied.nr, 43 + n_extra_denied());
	assert_int_equal(check(&p, pip, 3, NULL), POLICY_APPROVAL);
	policy_release(&p);

	cfg.project_trusted = 1;	/* as after `forgex trust` */
	assert_int_equal(config_apply_string(&cfg, toml, strlen(toml), "test.toml", CFG_PROJECT), 0);
	assert_int_equal(policy_init_from_config(&p, &cfg), 0);
	assert_int_equal(check(&p, pip, 3, NULL), POLICY_ALLOW);
	/* the custom deny list replaced the default one; the allowlist still refuses rm */
	assert_int_equal(check(&p, rm, 1, &r), POLICY_DENY);
	assert_string_equal(r.buf, "Command 'rm' is not in the allowlist");
	buf_reset(&r);
	assert_int_equal(check(&p, git, 1, &r), POLICY_DENY);
	assert_string_equal(r.buf, "Command 'git' is in the deny list");
	policy_release(&p);
	config_release(&cfg);
	buf_release(&r);
}

static void test_policy_from_config_bad_mode(void **state)
{
	struct config cfg;
	struct policy p = POLICY_INIT;

	(void)state;
	cfg_init(&cfg, "yolo");
	strvec_push(&cfg.terminal.allowed, "ls");
	assert_int_equal(policy_init_from_config(&p, &cfg), FX_EINVAL);
	assert_non_null(strstr(err_last(), "unknown approval mode 'yolo'"));
	assert_int_equal(p.allowed.nr, 0);	/* untouched */
	cfg_release(&cfg);
}

static void test_policy_init_is_the_defaults(void **state)
{
	struct policy empty = POLICY_INIT;
	const char *rm[] = { "rm" }, *pip[] = { "pip" }, *ls[] = { "ls" };
	struct buf r = BUF_INIT;

	(void)state;
	/* empty denied and network lists mean the seed's defaults */
	assert_int_equal(check(&empty, rm, 1, &r), POLICY_DENY);
	assert_string_equal(r.buf, "Command 'rm' is in the deny list");
	buf_reset(&r);
	assert_int_equal(check(&empty, pip, 1, &r), POLICY_APPROVAL);
	assert_string_equal(r.buf, "Command 'pip' may access the network");
	buf_reset(&r);
	assert_int_equal(check(&empty, ls, 1, &r), POLICY_ALLOW);
	assert_string_equal(r.buf, "");
	empty.network_allowed = 1;
	assert_int_equal(check(&empty, pip, 1, NULL), POLICY_ALLOW);
	buf_release(&r);
}

static void test_policy_argv_edges(void **state)
{
	struct policy p;
	const char *v[] = { "busybox", "ls", "rm" };
	const char *with_null[] = { NULL, "rm" };
	struct buf r = BUF_INIT;

	(void)state;
	policy_init_defaults(&p);
	assert_int_equal(check(&p, v, 0, &r), POLICY_DENY);
	assert_string_equal(r.buf, "Empty command line");
	assert_int_equal(check(&p, NULL, 0, NULL), POLICY_DENY);
	/* only argc entries are read */
	assert_int_equal(check(&p, v, 2, NULL), POLICY_ALLOW);
	assert_int_equal(check(&p, v + 2, 1, NULL), POLICY_DENY);
	/* a NULL entry is "" */
	assert_int_equal(check(&p, with_null, 1, NULL), POLICY_ALLOW);
	assert_int_equal(check(&p, with_null, 2, NULL), POLICY_ALLOW);
	policy_release(&p);
	buf_release(&r);
}

static void test_policy_names_of_enums(void **state)
{
	enum approval_mode m = APPROVAL_SAFE;

	(void)state;
	assert_string_equal(policy_decision_name(POLICY_ALLOW), "allow");
	assert_string_equal(policy_decision_name(POLICY_DENY), "deny");
	assert_string_equal(policy_decision_name(POLICY_APPROVAL), "approval");
	assert_int_equal(approval_mode_parse(&m, "auto"), 0);
	assert_int_equal(m, APPROVAL_AUTO);
	assert_int_equal(approval_mode_parse(&m, "ask"), 0);
	assert_int_equal(m, APPROVAL_ASK);
	assert_int_equal(approval_mode_parse(&m, "safe"), 0);
	assert_int_equal(m, APPROVAL_SAFE);
	assert_int_equal(approval_mode_parse(&m, "Safe"), FX_EINVAL);
	assert_int_equal(approval_mode_parse(&m, ""), FX_EINVAL);
	assert_int_equal(m, APPROVAL_SAFE);	/* untouched on failure */
	assert_string_equal(approval_mode_name(APPROVAL_SAFE), "safe");
	assert_string_equal(approval_mode_name(APPROVAL_ASK), "ask");
	assert_string_equal(approval_mode_name(APPROVAL_AUTO), "auto");
}

/* ---- the wrapper extension (differs from the seed on purpose) --------- */

struct wcase {
	const char *argv[10];
	enum policy_decision want;
	const char *reason;
};

static void check_wcases(const struct policy *p, const struct wcase *c, size_t n)
{
	size_t i, bad = 0;

	for (i = 0; i < n; i++) {
		struct buf r = BUF_INIT, shown = BUF_INIT;
		size_t argc = 0;
		enum policy_decision d;

		while (c[i].argv[argc])
			argc++;
		d = check(p, c[i].argv, argc, &r);
		if (d != c[i].want || strcmp(r.buf, c[i].reason)) {
			size_t k;

			for (k = 0; k < argc; k++) {
				buf_addstr(&shown, k ? " " : "");
				buf_add_shell_quoted(&shown, c[i].argv[k]);
			}
			print_error("%s: got %s \"%s\", want %s \"%s\"\n", shown.buf,
				    policy_decision_name(d), r.buf, policy_decision_name(c[i].want),
				    c[i].reason);
			bad++;
		}
		buf_release(&r);
		buf_release(&shown);
	}
	if (bad)
		fail_msg("%zu of %zu wrapper cases failed", bad, n);
}

#define DENIED(name, via) "Command '" name "' is in the deny list (run by '" via "')"

#define GIT_CLEAN "Command 'git clean' deletes untracked and ignored files that no checkpoint " \
	"holds; it needs approval in every mode"

/* Restricted and other shells the seed's list misses (issue 10, item 12). */
static void test_policy_extra_shells(void **state)
{
	static const struct wcase c[] = {
		{ { "rbash", "-c", "rm -rf ~" }, POLICY_DENY, "Command 'rbash' is in the deny list" },
		{ { "/bin/ash" }, POLICY_DENY, "Command 'ash' is in the deny list" },
		{ { "mksh", "-c", "id" }, POLICY_DENY, "Command 'mksh' is in the deny list" },
		{ { "yash" }, POLICY_DENY, "Command 'yash' is in the deny list" },
		{ { "busybox", "ash", "-c", "id" }, POLICY_DENY, DENIED("ash", "busybox") },
		{ { "busybox", "sh" }, POLICY_DENY, DENIED("sh", "busybox") },
		{ { "toybox", "sh", "-c", "id" }, POLICY_DENY, DENIED("sh", "toybox") },
		{ { "ls" }, POLICY_ALLOW, "" },
	};
	static const struct wcase custom[] = {
		/* a custom deny list replaces these too, as it replaces the seed's */
		{ { "rbash" }, POLICY_ALLOW, "" },
	};
	struct policy p = POLICY_INIT;

	(void)state;
	check_wcases(&p, c, ARRAY_SIZE(c));	/* the zeroed policy: default lists */
	policy_init_defaults(&p);
	check_wcases(&p, c, ARRAY_SIZE(c));
	policy_release(&p);
	strvec_push(&p.denied, "curl");
	check_wcases(&p, custom, ARRAY_SIZE(custom));
	policy_release(&p);
}

/* git clean needs approval in every mode; other git commands are allowed. */
static void test_policy_git_clean_always_asks(void **state)
{
	static const struct wcase c[] = {
		{ { "git", "clean", "-fdx" }, POLICY_APPROVAL, GIT_CLEAN },
		{ { "git", "-C", "sub", "clean", "-f" }, POLICY_APPROVAL, GIT_CLEAN },
		{ { "git", "-c", "core.x=1", "--no-pager", "clean" }, POLICY_APPROVAL, GIT_CLEAN },
		{ { "git", "--git-dir=.git", "--work-tree", ".", "clean", "-n" }, POLICY_APPROVAL, GIT_CLEAN },
		{ { "/usr/bin/GIT", "clean" }, POLICY_APPROVAL, GIT_CLEAN },
		{ { "command", "git", "clean", "-ffdx" }, POLICY_APPROVAL, GIT_CLEAN },
		{ { "git", "-c", "alias.nuke=clean -fdx", "nuke" }, POLICY_APPROVAL,
		  "Command 'git' defines an alias with -c, which could run anything; it needs approval "
		  "in every mode" },
		{ { "git", "-calias.x=!sh", "x" }, POLICY_APPROVAL,
		  "Command 'git' defines an alias with -c, which could run anything; it needs approval "
		  "in every mode" },
		{ { "git", "status" }, POLICY_ALLOW, "" },
		{ { "git", "-C", "clean", "status" }, POLICY_ALLOW, "" },
		{ { "git", "log", "clean" }, POLICY_ALLOW, "" },
		{ { "git" }, POLICY_ALLOW, "" },
	};
	const char *clean[] = { "git", "clean", "-fdx" }, *status[] = { "git", "status" };
	const char *curl[] = { "curl", "x" };
	struct policy p;

	(void)state;
	policy_init_defaults(&p);
	p.mode = APPROVAL_AUTO;
	p.network_allowed = 1;
	check_wcases(&p, c, ARRAY_SIZE(c));
	assert_true(always_ask(&p, clean, 3));
	assert_false(always_ask(&p, status, 2));
	/* auto needs no approval for the network; that one is not "always" */
	assert_int_equal(check(&p, curl, 2, NULL), POLICY_ALLOW);
	assert_false(always_ask(&p, curl, 2));
	policy_release(&p);
}

/* Which commands the executor gives the network once they pass the gate. */
static void test_policy_needs_network(void **state)
{
	static const char *const pip[] = { "/usr/bin/pip3", "install", "x" };
	static const char *const bb[] = { "busybox", "wget", "http://x" };
	static const char *const cmd[] = { "command", "curl", "-s", "x" };
	static const char *const ls[] = { "ls", "-l" };
	static const char *const bbrm[] = { "busybox", "rm", "x" };
	static const char *const curl_rm[] = { "busybox", "curl" };
	struct policy p;

	(void)state;
	policy_init_defaults(&p);
	assert_true(needs_network(&p, pip, 3));
	assert_true(needs_network(&p, bb, 3));
	assert_true(needs_network(&p, cmd, 4));
	assert_true(needs_network(&p, curl_rm, 2));
	assert_false(needs_network(&p, ls, 2));
	/* denied: never */
	assert_false(needs_network(&p, bbrm, 3));
	assert_false(needs_network(&p, pip, 0));
	/* mode auto: no approval, and still the network */
	p.mode = APPROVAL_AUTO;
	p.network_allowed = 1;
	assert_int_equal(check(&p, pip, 3, NULL), POLICY_ALLOW);
	assert_true(needs_network(&p, pip, 3));
	assert_false(needs_network(&p, ls, 2));
	policy_release(&p);
}

static void test_policy_wrapper_busybox_toybox(void **state)
{
	static const struct wcase c[] = {
		{ { "busybox", "rm", "-rf", "x" }, POLICY_DENY, DENIED("rm", "busybox") },
		{ { "/bin/busybox", "/bin/RM", "x" }, POLICY_DENY, DENIED("rm", "busybox") },
		{ { "BUSYBOX.EXE", "rm.exe" }, POLICY_DENY, DENIED("rm", "busybox") },
		{ { "busybox-x86_64", "sh", "-c", "id" }, POLICY_DENY, DENIED("sh", "busybox-x86_64") },
		{ { "busybox1.36", "dd" }, POLICY_DENY, DENIED("dd", "busybox1.36") },
		{ { "busybox", "ls", "rm" }, POLICY_ALLOW, "" },
		{ { "busybox" }, POLICY_ALLOW, "" },
		{ { "busybox", "--list" }, POLICY_ALLOW, "" },
		{ { "busybox", "--list-full" }, POLICY_ALLOW, "" },
		{ { "busybox", "--install", "-s", "/tmp/bin" }, POLICY_ALLOW, "" },
		{ { "busybox", "--help", "rm" }, POLICY_ALLOW, "" },	/* prints rm's usage */
		{ { "busybox", "wget", "http://x" }, POLICY_APPROVAL,
		  "Command 'wget' may access the network (run by 'busybox')" },
		{ { "busybox", "busybox", "kill", "1" }, POLICY_DENY, DENIED("kill", "busybox") },
		{ { "toybox", "rm", "x" }, POLICY_DENY, DENIED("rm", "toybox") },
		{ { "toybox-x86_64", "chmod", "777", "x" }, POLICY_DENY,
		  DENIED("chmod", "toybox-x86_64") },
		{ { "toybox", "toybox", "rm" }, POLICY_DENY, DENIED("rm", "toybox") },
		{ { "toybox", "--help" }, POLICY_ALLOW, "" },
		{ { "toybox", "--long" }, POLICY_ALLOW, "" },
		{ { "toybox", "cat", "x" }, POLICY_ALLOW, "" },
	};
	struct policy p;

	(void)state;
	policy_init_defaults(&p);
	check_wcases(&p, c, ARRAY_SIZE(c));
	policy_release(&p);
}

static void test_policy_wrapper_command_exec_builtin(void **state)
{
	static const struct wcase c[] = {
		{ { "command", "rm", "x" }, POLICY_DENY, DENIED("rm", "command") },
		{ { "command", "-p", "rm", "x" }, POLICY_DENY, DENIED("rm", "command") },
		{ { "command", "--", "rm" }, POLICY_DENY, DENIED("rm", "command") },
		{ { "command", "-p", "--", "/usr/bin/rm" }, POLICY_DENY, DENIED("rm", "command") },
		{ { "command", "-v", "rm" }, POLICY_ALLOW, "" },	/* only describes rm */
		{ { "command", "-V", "rm" }, POLICY_ALLOW, "" },
		{ { "command", "-pv", "rm" }, POLICY_ALLOW, "" },
		{ { "command", "-p", "-v", "--", "rm" }, POLICY_ALLOW, "" },
		{ { "command", "-x", "rm" }, POLICY_DENY, DENIED("rm", "command") },
		{ { "command" }, POLICY_ALLOW, "" },
		{ { "command", "-p" }, POLICY_ALLOW, "" },
		{ { "command", "curl", "x" }, POLICY_APPROVAL,
		  "Command 'curl' may access the network (run by 'command')" },
		{ { "exec", "rm", "x" }, POLICY_DENY, DENIED("rm", "exec") },
		{ { "exec", "-c", "rm" }, POLICY_DENY, DENIED("rm", "exec") },
		{ { "exec", "-cl", "--", "rm" }, POLICY_DENY, DENIED("rm", "exec") },
		{ { "exec", "-a", "foo", "rm" }, POLICY_DENY, DENIED("rm", "exec") },
		{ { "exec", "-afoo", "rm" }, POLICY_DENY, DENIED("rm", "exec") },
		{ { "exec", "-cla", "foo", "rm" }, POLICY_DENY, DENIED("rm", "exec") },
		{ { "exec", "-a", "--", "rm" }, POLICY_DENY, DENIED("rm", "exec") },
		{ { "exec", "-a", "foo", "ls" }, POLICY_ALLOW, "" },
		{ { "exec" }, POLICY_ALLOW, "" },
		{ { "exec", "-a" }, POLICY_ALLOW, "" },
		/* a multi-call binary runs the applet named by the argv[0] it is given */
		{ { "exec", "-a", "rm", "busybox", "x" }, POLICY_DENY,
		  "Command 'rm' is in the deny list (argv[0] set by 'exec -a')" },
		{ { "exec", "-a", "rm", "ls" }, POLICY_DENY,
		  "Command 'rm' is in the deny list (argv[0] set by 'exec -a')" },
		{ { "exec", "-a", "busybox", "./bb", "rm", "x" }, POLICY_DENY, DENIED("rm", "bb") },
		{ { "builtin", "kill", "1" }, POLICY_DENY, DENIED("kill", "builtin") },
		{ { "builtin", "--", "kill", "1" }, POLICY_DENY, DENIED("kill", "builtin") },
		{ { "builtin", "echo", "rm" }, POLICY_ALLOW, "" },
		{ { "builtin" }, POLICY_ALLOW, "" },
		{ { "/usr/bin/Command", "RM" }, POLICY_DENY, DENIED("rm", "command") },
	};
	struct policy p;

	(void)state;
	policy_init_defaults(&p);
	check_wcases(&p, c, ARRAY_SIZE(c));
	policy_release(&p);
}

static void test_policy_wrapper_nested(void **state)
{
	static const struct wcase c[] = {
		{ { "command", "busybox", "rm" }, POLICY_DENY, DENIED("rm", "busybox") },
		{ { "exec", "-a", "x", "command", "-p", "busybox", "/bin/rm", "x" }, POLICY_DENY,
		  DENIED("rm", "busybox") },
		{ { "builtin", "command", "exec", "rm" }, POLICY_DENY, DENIED("rm", "exec") },
		{ { "command", "-p", "exec", "-a", "y", "toybox", "ls" }, POLICY_ALLOW, "" },
		{ { "command", "-v", "busybox", "rm" }, POLICY_ALLOW, "" },
		/* the first of the most severe answers explains the decision */
		{ { "busybox", "wget", "http://x" }, POLICY_APPROVAL,
		  "Command 'wget' may access the network (run by 'busybox')" },
		{ { "exec", "-a", "curl", "wget" }, POLICY_APPROVAL,
		  "Command 'wget' may access the network (run by 'exec')" },
		{ { "exec", "-a", "rm", "curl" }, POLICY_DENY,
		  "Command 'rm' is in the deny list (argv[0] set by 'exec -a')" },
		{ { "command", "pip", "busybox" }, POLICY_APPROVAL,
		  "Command 'pip' may access the network (run by 'command')" },
	};
	struct policy p;

	(void)state;
	policy_init_defaults(&p);
	check_wcases(&p, c, ARRAY_SIZE(c));
	policy_release(&p);
}

static void test_policy_wrapper_itself_is_checked(void **state)
{
	static const struct wcase only_ls[] = {
		{ { "busybox", "ls" }, POLICY_DENY, "Command 'busybox' is not in the allowlist" },
		{ { "ls", "busybox" }, POLICY_ALLOW, "" },
	};
	static const struct wcase with_busybox[] = {
		{ { "busybox", "ls" }, POLICY_ALLOW, "" },
		{ { "busybox", "cat" }, POLICY_DENY,
		  "Command 'cat' is not in the allowlist (run by 'busybox')" },
		{ { "busybox", "rm" }, POLICY_DENY, DENIED("rm", "busybox") },
		{ { "busybox", "wget" }, POLICY_ALLOW, "" },	/* auto: network allowed */
		{ { "busybox", "curl" }, POLICY_DENY,
		  "Command 'curl' is not in the allowlist (run by 'busybox')" },
	};
	static const struct wcase deny_busybox[] = {
		{ { "busybox", "ls" }, POLICY_DENY, "Command 'busybox' is in the deny list" },
		{ { "command", "busybox", "ls" }, POLICY_DENY,
		  "Command 'busybox' is in the deny list (run by 'command')" },
		{ { "busybox", "rm" }, POLICY_DENY, "Command 'busybox' is in the deny list" },
		{ { "command", "rm" }, POLICY_ALLOW, "" },	/* custom list: rm allowed */
	};
	struct config cfg;
	struct policy p;

	(void)state;
	cfg_init(&cfg, "ask");
	strvec_push(&cfg.terminal.allowed, "ls");
	assert_int_equal(policy_init_from_config(&p, &cfg), 0);
	check_wcases(&p, only_ls, ARRAY_SIZE(only_ls));
	policy_release(&p);
	cfg_release(&cfg);

	cfg_init(&cfg, "auto");
	strvec_push(&cfg.terminal.allowed, "busybox");
	strvec_push(&cfg.terminal.allowed, "ls");
	strvec_push(&cfg.terminal.allowed, "rm");
	strvec_push(&cfg.terminal.allowed, "wget");
	assert_int_equal(policy_init_from_config(&p, &cfg), 0);
	check_wcases(&p, with_busybox, ARRAY_SIZE(with_busybox));
	policy_release(&p);
	cfg_release(&cfg);

	cfg_init(&cfg, "ask");
	strvec_push(&cfg.terminal.denied, "busybox");
	assert_int_equal(policy_init_from_config(&p, &cfg), 0);
	check_wcases(&p, deny_busybox, ARRAY_SIZE(deny_busybox));
	policy_release(&p);
	cfg_release(&cfg);
}

/* The extension is the difference: the seed's one-name check allows these. */
static void test_policy_wrapper_differs_from_seed(void **state)
{
	const char *argv[] = { "busybox", "rm", "-rf", "/" };
	struct policy p;

	(void)state;
	policy_init_defaults(&p);
	assert_int_equal(policy_check_name(&p, argv[0], NULL), POLICY_ALLOW);
	assert_int_equal(check(&p, argv, 4, NULL), POLICY_DENY);
	policy_release(&p);
}

/* One walk answers everything the executor needs about a command. */
static void test_policy_verdict_is_whole(void **state)
{
	static const char *const bb_pip[] = { "busybox", "pip", "install", "x" };
	static const char *const clean[] = { "git", "clean", "-fdx" };
	static const char *const curl_rm[] = { "exec", "curl", "rm" };
	struct policy_verdict v = POLICY_VERDICT_INIT;
	struct policy p;

	(void)state;
	policy_init_defaults(&p);
	assert_int_equal(policy_check(&v, &p, bb_pip, 4), POLICY_APPROVAL);
	assert_int_equal(v.decision, POLICY_APPROVAL);
	assert_string_equal(v.reason.buf, "Command 'pip' may access the network (run by 'busybox')");
	assert_true(v.network);
	assert_false(v.always_ask);
	policy_verdict_release(&v);
	assert_int_equal(v.decision, POLICY_ALLOW);
	assert_int_equal(v.reason.len, 0);
	assert_int_equal(policy_check(&v, &p, clean, 3), POLICY_APPROVAL);
	assert_true(v.always_ask);
	assert_false(v.network);
	policy_verdict_release(&v);
	/* curl runs rm? no: exec runs curl, whose arguments are its own */
	assert_int_equal(policy_check(&v, &p, curl_rm, 3), POLICY_APPROVAL);
	assert_true(v.network);
	policy_verdict_release(&v);
	assert_int_equal(policy_check(&v, &p, NULL, 0), POLICY_DENY);
	assert_string_equal(v.reason.buf, "Empty command line");
	assert_false(v.network);
	policy_verdict_release(&v);
	policy_release(&p);
}

int main(void)
{
	static const struct CMUnitTest fixed[] = {
		cmocka_unit_test(test_policy_table_loaded),
		cmocka_unit_test(test_policy_default_lists_are_the_seeds),
		cmocka_unit_test(test_policy_names),
		cmocka_unit_test(test_policy_from_config),
		cmocka_unit_test(test_policy_from_parsed_config),
		cmocka_unit_test(test_policy_from_config_bad_mode),
		cmocka_unit_test(test_policy_init_is_the_defaults),
		cmocka_unit_test(test_policy_argv_edges),
		cmocka_unit_test(test_policy_names_of_enums),
		cmocka_unit_test(test_policy_wrapper_busybox_toybox),
		cmocka_unit_test(test_policy_extra_shells),
		cmocka_unit_test(test_policy_git_clean_always_asks),
		cmocka_unit_test(test_policy_needs_network),
		cmocka_unit_test(test_policy_verdict_is_whole),
		cmocka_unit_test(test_policy_wrapper_command_exec_builtin),
		cmocka_unit_test(test_policy_wrapper_nested),
		cmocka_unit_test(test_policy_wrapper_itself_is_checked),
		cmocka_unit_test(test_policy_wrapper_differs_from_seed),
	};
	struct CMUnitTest *tests;
	struct strvec names = STRVEC_INIT;
	size_t i, n = ARRAY_SIZE(fixed);
	int ret;

	char *seed = seed_file();

	table_load();
	tests = xcalloc(n + 2 + table.variants_nr, sizeof(*tests));
	memcpy(tests, fixed, sizeof(fixed));
	if (have_python3() && fsutil_exists(seed)) {
		tests[n].name = "test_policy_table_is_fresh";
		tests[n++].test_func = test_policy_table_is_fresh;
	} else {
		printf("# not checked: cases.tsv against the seed (needs python3 and %s)\n", seed);
	}
	if (have_python3()) {
		tests[n].name = "test_policy_lower_tables_are_fresh";
		tests[n++].test_func = test_policy_lower_tables_are_fresh;
	} else {
		printf("# not checked: the lower-case tables of policy.c (needs python3)\n");
	}
	free(seed);
	for (i = 0; i < table.variants_nr; i++) {
		struct variant *v = &table.variants[i];

		tests[n].name = strvec_pushf(&names, "test_policy_seed_table_%s (%zu rows)", v->name,
					     v->rows_nr);
		tests[n].test_func = test_policy_seed_rows;
		tests[n].initial_state = v;
		n++;
	}
	ret = _cmocka_run_group_tests("sandbox/policy", tests, n, NULL, NULL);
	free(tests);
	strvec_clear(&names);
	table_free();
	return ret;
}
