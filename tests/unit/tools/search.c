#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "tools/search.h"
#include "unit/tools/common.h"

static void write_bytes(struct tt *t, const char *rel, const void *data, size_t len)
{
	struct buf dir = BUF_INIT;
	int fd;

	path_dirname(&dir, tt_path(t, rel));
	assert_int_equal(fsutil_mkdir_p(dir.buf, 0755), 0);
	fd = open(tt_path(t, rel), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fsutil_write_all(fd, data, len), 0);
	close(fd);
	buf_release(&dir);
}

static int search(struct tt *t, json_t *args)
{
	return tt_callj(t, permissions_for_role("architect"), "search", args);
}

static void test_search_lines_sorted_by_path_then_line(void **state)
{
	struct tt t;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "b.c", "int needle;\nx\nneedle(); needle();\n");
	tu_write(t.ws, "a/z.c", "/* needle */\n");
	tu_write(t.ws, "a.c", "nothing\nthe needle\n");
	tu_write(t.ws, ".hidden/h.txt", "needle in hidden\n");
	tu_write(t.ws, ".git/objects/x", "needle in git\n");
	assert_int_equal(search(&t, json_pack("{s:s}", "pattern", "needle")), TOOL_OK);
	assert_string_equal(t.out.buf,
			    ".hidden/h.txt:1:needle in hidden\n"
			    "a.c:2:the needle\n"
			    "a/z.c:1:/* needle */\n"
			    "b.c:1:int needle;\n"
			    "b.c:3:needle(); needle();\n");
	/* Regular expressions, anchors at line boundaries, and (?i). */
	assert_int_equal(search(&t, json_pack("{s:s}", "pattern", "^needle\\(\\)")), TOOL_OK);
	assert_string_equal(t.out.buf, "b.c:3:needle(); needle();\n");
	assert_int_equal(search(&t, json_pack("{s:s}", "pattern", "(?i)THE NEEDLE$")), TOOL_OK);
	assert_string_equal(t.out.buf, "a.c:2:the needle\n");
	/* A match never joins lines: "x\nneedle" is not a match of "x.needle" or "x\\sneedle". */
	assert_int_equal(search(&t, json_pack("{s:s}", "pattern", "x\\s+needle")), TOOL_OK);
	assert_contains(t.out.buf, "no matches in 4 files searched");
	assert_int_equal(search(&t, json_pack("{s:s}", "pattern", "[^z]needle\\(")), TOOL_OK);
	assert_string_equal(t.out.buf, "b.c:3:needle(); needle();\n");
	tt_teardown(&t);
}

static void test_search_ignores_what_git_ignores(void **state)
{
	struct tt t;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, ".git/info/exclude", "local.txt\n");
	tu_write(t.ws, ".gitignore", "*.log\n!keep.log\nbuild/\n/top-only.txt\n");
	tu_write(t.ws, "a.log", "needle\n");
	tu_write(t.ws, "keep.log", "needle\n");
	tu_write(t.ws, "build/out.c", "needle\n");
	tu_write(t.ws, "top-only.txt", "needle\n");
	tu_write(t.ws, "sub/top-only.txt", "needle\n");
	tu_write(t.ws, "local.txt", "needle\n");
	tu_write(t.ws, "sub/.gitignore", "!*.log\ngen/\n");
	tu_write(t.ws, "sub/b.log", "needle\n");
	tu_write(t.ws, "sub/gen/x.c", "needle\n");
	assert_int_equal(search(&t, json_pack("{s:s}", "pattern", "needle")), TOOL_OK);
	assert_string_equal(t.out.buf,
			    "keep.log:1:needle\n"
			    "sub/b.log:1:needle\n"
			    "sub/top-only.txt:1:needle\n");
	/* A file named on purpose is searched even when ignored. */
	assert_int_equal(search(&t, json_pack("{s:s,s:s}", "pattern", "needle", "path", "a.log")),
			 TOOL_OK);
	assert_string_equal(t.out.buf, "a.log:1:needle\n");
	/* A folder named on purpose is searched, with the rules that apply inside it. */
	assert_int_equal(search(&t, json_pack("{s:s,s:s}", "pattern", "needle", "path", "sub")),
			 TOOL_OK);
	assert_string_equal(t.out.buf, "sub/b.log:1:needle\nsub/top-only.txt:1:needle\n");
	tt_teardown(&t);
}

static void test_search_binary_and_encodings(void **state)
{
	struct buf late = BUF_INIT;
	struct tt t;

	(void)state;
	tt_setup(&t);
	write_bytes(&t, "early.bin", "needle\0binary\n", 14);
	/* A NUL past the first 64 KiB: the lines ripgrep searched before it are found. */
	buf_addstr(&late, "needle early\n");
	while (late.len < 70000)
		buf_addstr(&late, "filler line\n");
	buf_addstr(&late, "needle late\n");
	buf_add(&late, "\0", 1);
	buf_addstr(&late, "needle after nul\n");
	write_bytes(&t, "late.dat", late.buf, late.len);
	write_bytes(&t, "latin1.txt", "needle caf\xe9\n", 12);
	write_bytes(&t, "bom.txt", "\xef\xbb\xbfneedle with bom\n", 19);
	write_bytes(&t, "crlf.txt", "needle\r\nnope\r\n", 14);
	write_bytes(&t, "nonl.txt", "x\nneedle at end", 15);
	assert_int_equal(search(&t, json_pack("{s:s}", "pattern", "needle")), TOOL_OK);
	assert_string_equal(t.out.buf,
			    "bom.txt:1:needle with bom\n"
			    "crlf.txt:1:needle\r\n"
			    "late.dat:1:needle early\n"
			    "latin1.txt:1:needle caf\xe9\n"
			    "nonl.txt:2:needle at end\n"
			    "[forgex: not searched: 2 binary files (or the part after a NUL byte)]\n");
	/* Invalid UTF-8 does not stop a Unicode-aware pattern on the valid part of a line. */
	assert_int_equal(search(&t, json_pack("{s:s}", "pattern", "^ne+dle\\s\\w{3}")), TOOL_OK);
	assert_contains(t.out.buf, "latin1.txt:1:needle caf\xe9\n");
	assert_int_equal(search(&t, json_pack("{s:s}", "pattern", "\\w+ with bom")), TOOL_OK);
	assert_contains(t.out.buf, "bom.txt:1:needle with bom\n");
	buf_release(&late);
	tt_teardown(&t);
}

static void test_search_glob(void **state)
{
	struct tt t;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "a.c", "needle\n");
	tu_write(t.ws, "a.h", "needle\n");
	tu_write(t.ws, "a_test.go", "needle\n");
	tu_write(t.ws, "src/x/y.h", "needle\n");
	tu_write(t.ws, "src/z.h", "needle\n");
	tu_write(t.ws, "doc/readme.md", "needle\n");
	assert_int_equal(search(&t, json_pack("{s:s,s:s}", "pattern", "needle", "glob", "*.c")), TOOL_OK);
	assert_string_equal(t.out.buf, "a.c:1:needle\n");
	assert_int_equal(search(&t, json_pack("{s:s,s:s}", "pattern", "needle", "glob", "src/**/*.h")),
			 TOOL_OK);
	assert_string_equal(t.out.buf, "src/x/y.h:1:needle\nsrc/z.h:1:needle\n");
	assert_int_equal(search(&t, json_pack("{s:s,s:s}", "pattern", "needle", "glob", "*.{c,go}")),
			 TOOL_OK);
	assert_string_equal(t.out.buf, "a.c:1:needle\na_test.go:1:needle\n");
	assert_int_equal(search(&t, json_pack("{s:s,s:s}", "pattern", "needle", "glob", "!*.h")), TOOL_OK);
	assert_string_equal(t.out.buf, "a.c:1:needle\na_test.go:1:needle\ndoc/readme.md:1:needle\n");
	assert_int_equal(search(&t, json_pack("{s:s,s:s}", "pattern", "needle", "glob", "!src/")), TOOL_OK);
	assert_not_contains(t.out.buf, "src/");
	assert_contains(t.out.buf, "a.h:1:needle\n");
	assert_int_equal(search(&t, json_pack("{s:s,s:s}", "pattern", "needle", "glob", "*.{c")),
			 TOOL_FAILED);
	assert_contains(t.out.buf, "'{' without '}'");
	tt_teardown(&t);
}

static void test_search_caps(void **state)
{
	struct buf many = BUF_INIT, wide = BUF_INIT;
	struct tt t;
	int i;

	(void)state;
	tt_setup(&t);
	for (i = 0; i < 500; i++)
		buf_addf(&many, "needle %d\n", i + 1);
	tu_write(t.ws, "many.txt", many.buf);
	tu_write(t.ws, "zz.txt", "needle last\n");
	assert_int_equal(search(&t, json_pack("{s:s}", "pattern", "needle")), TOOL_OK);
	assert_contains(t.out.buf, "many.txt:200:needle 200\n");
	assert_not_contains(t.out.buf, "many.txt:201:");
	assert_not_contains(t.out.buf, "zz.txt");
	assert_contains(t.out.buf, "showing the first 200 of 501 matching lines (in 2 files)");
	assert_int_equal(search(&t, json_pack("{s:s,s:i}", "pattern", "needle", "max_results", 3)),
			 TOOL_OK);
	assert_string_equal(t.out.buf, "many.txt:1:needle 1\nmany.txt:2:needle 2\nmany.txt:3:needle 3\n"
			    "[forgex: showing the first 3 of 501 matching lines (in 2 files); "
			    "narrow the pattern, path or glob, or raise max_results]\n");
	buf_addstr(&wide, "needle ");
	for (i = 0; i < 1000; i++)
		buf_addch(&wide, 'w');
	buf_addch(&wide, '\n');
	tu_write(t.ws, "many.txt", wide.buf);
	assert_int_equal(search(&t, json_pack("{s:s,s:s}", "pattern", "needle", "path", "many.txt")),
			 TOOL_OK);
	assert_contains(t.out.buf, "many.txt:1:needle www");
	assert_contains(t.out.buf, " [... 707 more bytes]\n");
	buf_release(&many);
	buf_release(&wide);
	tt_teardown(&t);
}

static void test_search_errors_and_links(void **state)
{
	struct tt t;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "real/a.txt", "needle\n");
	assert_int_equal(symlink("real", tt_path(&t, "dirlink")), 0);
	assert_int_equal(symlink("real/a.txt", tt_path(&t, "filelink")), 0);
	assert_int_equal(search(&t, json_pack("{s:s}", "pattern", "needle(")), TOOL_FAILED);
	assert_contains(t.out.buf, "invalid regular expression at offset 7");
	assert_int_equal(search(&t, json_pack("{s:s,s:s}", "pattern", "x", "path", "nope")), TOOL_FAILED);
	assert_contains(t.out.buf, "does not exist");
	/* A pattern that backtracks without end stops at PCRE2's match limit, with a message. */
	tu_write(t.ws, "real/aaa.txt", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab\n");
	assert_int_equal(search(&t, json_pack("{s:s,s:s}", "pattern", "(a|aa)+$", "path",
					      "real/aaa.txt")), TOOL_FAILED);
	assert_contains(t.out.buf, "matching in 'real/aaa.txt' failed");
	unlink(tt_path(&t, "real/aaa.txt"));
	/* Links are not followed while walking (as ripgrep does): one hit, not three. */
	assert_int_equal(search(&t, json_pack("{s:s}", "pattern", "needle")), TOOL_OK);
	assert_string_equal(t.out.buf, "real/a.txt:1:needle\n");
	/* A link named on purpose leads to its target. */
	assert_int_equal(search(&t, json_pack("{s:s,s:s}", "pattern", "needle", "path", "dirlink")),
			 TOOL_OK);
	assert_string_equal(t.out.buf, "real/a.txt:1:needle\n");
	tt_teardown(&t);
}

/* ---- the same as ripgrep ---- */

static unsigned long long rng = 42;

static unsigned pick(unsigned n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)((rng >> 33) % n);
}

static const char *const words[] = {
	"needle", "haystack", "return 0;", "TODO", "fixme", "caf\xc3\xa9", "x", "the", "foo_bar",
	"  indented", "\t", "needles", "NEEDLE", "int main(void)", "{", "}", "#include <stdio.h>",
	"\xe2\x82\xac", "a.b", "(x)",
};

static void gen_file(struct tt *t, const char *rel)
{
	struct buf b = BUF_INIT;
	unsigned lines = pick(60), i, kind = pick(20);

	for (i = 0; i < lines; i++) {
		unsigned n = pick(8), j;

		for (j = 0; j < n; j++)
			buf_addf(&b, "%s%s", j ? " " : "", words[pick(ARRAY_SIZE(words))]);
		buf_addstr(&b, kind == 1 ? "\r\n" : "\n");
	}
	if (kind == 2)
		buf_add(&b, "\0binary\n", 8);			/* NUL early: skipped */
	if (kind == 3) {
		while (b.len < 66000 + pick(70000))
			buf_addstr(&b, "padding needle padding\n");
		buf_add(&b, "needle\0", 7);		/* NUL late: ripgrep's cut-off */
		buf_addstr(&b, "needle after\n");
	}
	if (kind == 4)
		buf_addstr(&b, "needle \xff\xfe invalid utf-8\n");
	if (kind == 5 && b.len)
		buf_setlen(&b, b.len - 1);			/* no final newline */
	if (kind == 6) {
		unsigned k;

		for (k = 0; k < 3000; k++)
			buf_addstr(&b, "needle ");		/* a long line */
		buf_addch(&b, '\n');
	}
	if (kind == 7) {
		struct buf bom = BUF_INIT;

		buf_addstr(&bom, "\xef\xbb\xbf");
		buf_addbuf(&bom, &b);
		buf_release(&b);
		b = bom;
	}
	write_bytes(t, rel, b.buf, b.len);
	buf_release(&b);
}

static void gen_tree(struct tt *t, const char *rel, int depth)
{
	static const char *const dirs[] = { "src", "lib", "build", "docs", ".cache", "vendor",
					    "a b", "gen", "test" };
	static const char *const names[] = { "main.c", "util.h", "notes.txt", "debug.log",
					     "keep.log", "a.o", ".env", "README.md", "x.py",
					     "data.json", "run.sh", "out.tmp" };
	static const char *const rules[] = { "*.log", "!keep.log", "build/", "/docs", "*.o",
					     "gen/**", "!gen/keep/", "*.tmp", "vendor", "!*.c",
					     "**/test/*.py", ".cache/", "src/*.json", "[ab]*" };
	struct buf p = BUF_INIT;
	unsigned i, n = 2 + pick(8), nd = depth < 4 ? pick(4) : 0;

	for (i = 0; i < n; i++) {
		buf_reset(&p);
		buf_addf(&p, "%s%s%s", rel, *rel ? "/" : "", names[pick(ARRAY_SIZE(names))]);
		gen_file(t, p.buf);
	}
	if (pick(3) == 0) {
		struct buf g = BUF_INIT;
		unsigned k = 1 + pick(4);

		while (k--)
			buf_addf(&g, "%s\n", rules[pick(ARRAY_SIZE(rules))]);
		buf_reset(&p);
		buf_addf(&p, "%s%s.gitignore", rel, *rel ? "/" : "");
		tu_write(t->ws, p.buf, g.buf);
		buf_release(&g);
	}
	if (pick(10) == 0) {
		buf_reset(&p);
		buf_addf(&p, "%s%slink", rel, *rel ? "/" : "");
		assert_int_equal(symlink(pick(2) ? "." : "../..", tt_path(t, p.buf)), 0);
	}
	for (i = 0; i < nd; i++) {
		buf_reset(&p);
		buf_addf(&p, "%s%s%s", rel, *rel ? "/" : "", dirs[pick(ARRAY_SIZE(dirs))]);
		gen_tree(t, p.buf, depth + 1);
	}
	buf_release(&p);
}

/* Sorted lines of `text`, without ripgrep's binary warnings. */
static void sorted_lines(struct strvec *out, const char *text, size_t len)
{
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		char *line = xstrndup(p, n);

		/* rg names paths "./x" when given ".", which it must be: stdin is not a terminal. */
		if (!strstr(line, ": WARNING: stopped searching binary file"))
			strvec_push(out, strncmp(line, "./", 2) ? line : line + 2);
		free(line);
		p += n + 1;
	}
	qsort(out->v, out->nr, sizeof(*out->v), (int (*)(const void *, const void *))strcmp);
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Compare search and rg on a generated tree for each literal pattern; the lines found. */
static size_t compare_with_rg(unsigned long long seed)
{
	static const char *const literal[] = { "needle", "return 0;", "TODO", "caf\xc3\xa9", "x",
					       "  indented", "\xe2\x82\xac", "#include", "padding" };
	struct tt t;
	size_t i, total = 0;

	tt_setup(&t);
	rng = seed;
	gen_tree(&t, "", 0);
	{
		struct tu_result r = { 0, BUF_INIT, BUF_INIT };

		tu_run(&r, (const char *const[]){ "git", "init", "-q", NULL }, t.ws, NULL, NULL);
		assert_int_equal(r.status, 0);
		tu_result_release(&r);
	}
	tu_write(t.ws, ".git/info/exclude", "*.json\n");
	for (i = 0; i < ARRAY_SIZE(literal); i++) {
		struct search_opts o = { literal[i], NULL, NULL, SIZE_MAX, SIZE_MAX, 0 };
		struct tu_result r = { 0, BUF_INIT, BUF_INIT };
		struct strvec mine = STRVEC_INIT, theirs = STRVEC_INIT;
		struct buf out = BUF_INIT;
		size_t k;

		tu_run(&r, (const char *const[]){ "rg", "-n", "--hidden", "--no-ignore-global",
						  "--no-config", "-g", "!.git", "-F", "--", literal[i],
						  ".", NULL }, t.ws, NULL, NULL);
		assert_true(r.status == 0 || r.status == 1);
		assert_int_equal(search_run(&out, &t.ctx.root, &o, NULL), 0);
		sorted_lines(&mine, out.buf, out.len);
		sorted_lines(&theirs, r.out.buf, r.out.len);
		qsort(mine.v, mine.nr, sizeof(*mine.v), cmp_strp);
		qsort(theirs.v, theirs.nr, sizeof(*theirs.v), cmp_strp);
		for (k = 0; k < mine.nr || k < theirs.nr; k++) {
			const char *a = k < mine.nr ? mine.v[k] : "(nothing)";
			const char *b = k < theirs.nr ? theirs.v[k] : "(nothing)";

			if (strcmp(a, b))
				fail_msg("seed %llu, pattern '%s': line %zu differs:\n  search: %.200s\n"
					 "  rg:     %.200s\n(%zu lines from search, %zu from rg)", seed,
					 literal[i], k, a, b, mine.nr, theirs.nr);
		}
		total += mine.nr;
		strvec_clear(&mine);
		strvec_clear(&theirs);
		buf_release(&out);
		tu_result_release(&r);
	}
	tt_teardown(&t);
	return total;
}

static void test_search_equals_ripgrep(void **state)
{
	struct tu_result probe = { 0, BUF_INIT, BUF_INIT };
	unsigned long long seed;
	size_t total = 0;

	(void)state;
	tu_run(&probe, (const char *const[]){ "rg", "--version", NULL }, NULL, NULL, NULL);
	if (probe.status) {
		tu_result_release(&probe);
		print_message("skipping: ripgrep (rg) is not installed; apt-get install ripgrep\n");
		skip();
	}
	tu_result_release(&probe);
	for (seed = 42; seed < 47; seed++)
		total += compare_with_rg(seed);
	print_message("%zu matching lines in 5 trees, identical to rg\n", total);
	assert_true(total > 2000);
}

static void test_search_threads_do_not_change_the_result(void **state)
{
	struct buf one = BUF_INIT, four = BUF_INIT;
	struct search_opts o = { "needle|TODO", NULL, NULL, 50, 0, 1 };
	struct search_stats s1, s4;
	struct tt t;

	(void)state;
	tt_setup(&t);
	rng = 7;
	gen_tree(&t, "", 0);
	assert_int_equal(search_run(&one, &t.ctx.root, &o, &s1), 0);
	o.threads = 4;
	assert_int_equal(search_run(&four, &t.ctx.root, &o, &s4), 0);
	assert_string_equal(one.buf, four.buf);
	assert_int_equal(s1.hits, s4.hits);
	assert_int_equal(s1.files, s4.files);
	assert_true(s1.hits > 50);	/* the cap of 50 cut something: pruning ran */
	assert_int_equal(s1.shown, 50);
	buf_release(&one);
	buf_release(&four);
	tt_teardown(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_search_lines_sorted_by_path_then_line),
		cmocka_unit_test(test_search_ignores_what_git_ignores),
		cmocka_unit_test(test_search_binary_and_encodings),
		cmocka_unit_test(test_search_glob),
		cmocka_unit_test(test_search_caps),
		cmocka_unit_test(test_search_errors_and_links),
		cmocka_unit_test(test_search_equals_ripgrep),
		cmocka_unit_test(test_search_threads_do_not_change_the_result),
	};

	return cmocka_run_group_tests_name("tools/search", tests, NULL, NULL);
}
