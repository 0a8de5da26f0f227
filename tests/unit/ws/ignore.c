#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fsutil.h"
#include "base/path.h"
#include "base/strvec.h"
#include "helpers/testutil.h"
#include "ws/ignore.h"

/* ---- wildmatch (cases after git's t3070) ---- */

static void test_ignore_wildmatch(void **state)
{
	static const struct {
		int match;
		const char *pattern, *text;
	} cases[] = {
		{ 1, "foo", "foo" }, { 0, "foo", "bar" }, { 1, "", "" },
		{ 1, "???", "foo" }, { 0, "??", "foo" }, { 1, "*", "foo" },
		{ 1, "f*", "foo" }, { 0, "*f", "foo" }, { 1, "*foo*", "foo" },
		{ 1, "*ob*a*r*", "foobar" }, { 1, "*ab", "aaaaaaabababab" },
		{ 1, "foo\\*", "foo*" }, { 0, "foo\\*bar", "foobar" }, { 1, "f\\\\oo", "f\\oo" },
		{ 1, "*[al]?", "ball" }, { 0, "[ten]", "ten" }, { 1, "**[!te]", "ten" },
		{ 0, "**[!ten]", "ten" }, { 1, "t[a-g]n", "ten" }, { 0, "t[!a-g]n", "ten" },
		{ 1, "t[!a-g]n", "ton" }, { 1, "t[^a-g]n", "ton" }, { 1, "a[]]b", "a]b" },
		{ 1, "a[]-]b", "a-b" }, { 1, "a[]-]b", "a]b" }, { 0, "a[]-]b", "aab" },
		{ 1, "a[]a-]b", "aab" }, { 1, "]", "]" },
		/* "/" is special: "*" and "?" and classes stop at it, "**" as a component does not */
		{ 0, "foo*bar", "foo/baz/bar" }, { 0, "foo**bar", "foo/baz/bar" },
		{ 0, "foo?bar", "foo/bar" }, { 0, "foo[/]bar", "foo/bar" },
		{ 1, "foo/**/bar", "foo/baz/bar" }, { 1, "foo/**/bar", "foo/b/a/z/bar" },
		{ 1, "foo/**/bar", "foo/bar" }, { 1, "foo/**/**/bar", "foo/b/a/z/bar" },
		{ 1, "**/foo", "foo" }, { 1, "**/foo", "XXX/foo" }, { 1, "**/foo", "bar/baz/foo" },
		{ 0, "*/foo", "bar/baz/foo" }, { 0, "**/bar*", "foo/bar/baz" },
		{ 1, "**/bar/*", "deep/foo/bar/baz" }, { 0, "**/bar/*", "deep/foo/bar/baz/" },
		{ 1, "**/bar/**", "deep/foo/bar/baz/" }, { 0, "**/bar/*", "deep/foo/bar" },
		{ 1, "**/bar/**", "deep/foo/bar/" }, { 1, "*/bar/**", "foo/bar/baz/x" },
		{ 1, "**/bar/*/*", "deep/foo/bar/baz/x" }, { 1, "abc/**", "abc/x/y" },
		{ 0, "abc/**", "abc" },
		{ 1, "[[:alpha:]][[:digit:]][[:upper:]]", "a1B" },
		{ 0, "[[:digit:][:upper:][:space:]]", "a" }, { 1, "[[:digit:][:upper:][:space:]]", "A" },
		{ 1, "[a-c[:digit:]x-z]", "5" }, { 1, "[[:xdigit:]]", "f" }, { 0, "[[:nope:]]", "a" },
		{ 0, "a[", "a[" }, { 0, "[abc", "a" }, { 1, "[\\]]", "]" }, { 1, "[\\-]", "-" },
		{ 1, "\\[ab]", "[ab]" }, { 0, "foo\\", "foo\\" },
		/* the cost stays small on patterns that make naive matchers backtrack */
		{ 0, "-*-*-*-*-*-*-12-*-*-*-m-*-*-*",
		  "-adobe-courier-bold-o-normal--12-120-75-75-/-70-iso8859-1" },
		{ 1, "XXX/*/*/*/*/*/*/12/*/*/*/m/*/*/*",
		  "XXX/adobe/courier/bold/o/normal//12/120/75/75/m/70/iso8859/1" },
		{ 1, "**/*a*b*g*n*t", "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txt" },
		{ 0, "**/*a*b*g*n*t", "abcd/abcdefg/abcdefghijk/abcdefghijklmnop.txtz" },
		{ 0, "*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b",
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		if (ignore_wildmatch(cases[i].pattern, cases[i].text, strlen(cases[i].text)) !=
		    cases[i].match)
			fail_msg("wildmatch(\"%s\", \"%s\") should be %d", cases[i].pattern,
				 cases[i].text, cases[i].match);
}

/* ---- parsing and matching of one file ---- */

static int m(const struct ignore_rules *r, const char *path, int is_dir)
{
	return ignore_rules_match(r, path, strlen(path), is_dir);
}

static void test_ignore_rules_syntax(void **state)
{
	static const char text[] =
		"\xef\xbb\xbf# comment\n"
		"\n"
		"*.log\n"
		"!keep.log\n"
		"build/\n"
		"/top.txt\n"
		"docs/*.html\r\n"
		"trail   \n"
		"esc\\ \n"
		"\\#hash\n"
		"\\!bang\n"
		"a/**/z\n"
		"!\n"
		"/\n";
	struct ignore_rules *r = ignore_rules_parse("sub", text, sizeof(text) - 1);

	(void)state;
	assert_int_equal(ignore_rules_count(r), 10);
	assert_int_equal(m(r, "sub/x.log", 0), IGNORE_EXCLUDED);
	assert_int_equal(m(r, "sub/deep/er/x.log", 0), IGNORE_EXCLUDED);
	assert_int_equal(m(r, "sub/keep.log", 0), IGNORE_INCLUDED);
	assert_int_equal(m(r, "sub/build", 1), IGNORE_EXCLUDED);
	assert_int_equal(m(r, "sub/build", 0), IGNORE_NONE);	/* a file called build */
	assert_int_equal(m(r, "sub/x/build", 1), IGNORE_EXCLUDED);
	assert_int_equal(m(r, "sub/top.txt", 0), IGNORE_EXCLUDED);
	assert_int_equal(m(r, "sub/x/top.txt", 0), IGNORE_NONE);	/* anchored */
	assert_int_equal(m(r, "sub/docs/a.html", 0), IGNORE_EXCLUDED);	/* CR dropped */
	assert_int_equal(m(r, "sub/docs/x/a.html", 0), IGNORE_NONE);
	assert_int_equal(m(r, "sub/x/docs/a.html", 0), IGNORE_NONE);	/* a middle slash anchors */
	assert_int_equal(m(r, "sub/trail", 0), IGNORE_EXCLUDED);	/* trailing spaces dropped */
	assert_int_equal(m(r, "sub/esc ", 0), IGNORE_EXCLUDED);		/* ... unless escaped */
	assert_int_equal(m(r, "sub/esc", 0), IGNORE_NONE);
	assert_int_equal(m(r, "sub/#hash", 0), IGNORE_EXCLUDED);
	assert_int_equal(m(r, "sub/!bang", 0), IGNORE_EXCLUDED);
	assert_int_equal(m(r, "sub/a/z", 0), IGNORE_EXCLUDED);
	assert_int_equal(m(r, "sub/a/b/c/z", 0), IGNORE_EXCLUDED);
	/* Patterns are relative to their file's folder: anchored ones do not reach elsewhere. */
	assert_int_equal(m(r, "other/top.txt", 0), IGNORE_NONE);
	assert_int_equal(m(r, "subx/top.txt", 0), IGNORE_NONE);
	ignore_rules_free(r);

	r = ignore_rules_parse("", "# only a comment\n\n   \n", 21);
	assert_int_equal(ignore_rules_count(r), 0);
	assert_int_equal(m(r, "anything", 0), IGNORE_NONE);
	ignore_rules_free(r);
}

/* ---- against git itself ---- */

static unsigned long long rng;

static unsigned pick(unsigned n)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (unsigned)((rng >> 33) % n);
}

static const char *const dir_names[] = {
	"src", "lib", "build", "docs", "tmp", "a", "b", "sp ace", "x.d", ".hidden",
	"node_modules", "Deep", "keep",
};
static const char *const file_names[] = {
	"main.c", "util.h", "README.md", "notes.txt", "debug.log", "keep.log", "a.o", "b.tmp",
	"#hash", "!bang", "trail ", "Z.txt", "q1.txt", "core", "x~", "data.json", "a.txt",
	"b.txt", ".env", "Makefile",
};
static const char *const patterns[] = {
	"*.o", "build/", "/docs", "!keep.log", "*.log", "src/**/*.tmp", "**/tmp", "a/**",
	"x.d/", "[ab].txt", "notes.tx?", "\\#hash", "\\!bang", "trail\\ ", "*.[oa]",
	"lib/*.h", "node_modules", "!/docs/keep.log", "# comment", "", "   ", "*~",
	"[!a-m]*.md", "[[:upper:]]*", "**/.hidden/**", "**/build", "!*.c", "*", "!*/",
	"!src/", "core", "/keep/", "Deep/**/*.json", "!Deep/", "**/b/*.txt", "*.txt",
	"!q?.txt", ".env", "!.env", "src/", "!src/**", "/*.md", "trail ", "keep/*",
	"!keep/a.txt", "sp ace/", "sp\\ ace", "**/x.d/**", "[[:digit:]]*", "a/*/b",
};

static void make_tree(const char *root, const char *rel, int depth)
{
	unsigned i, nfiles = 1 + pick(4), ndirs = depth < 3 ? pick(4) : 0;
	struct buf p = BUF_INIT;

	for (i = 0; i < nfiles; i++) {
		buf_reset(&p);
		buf_addf(&p, "%s%s%s", rel, *rel ? "/" : "", file_names[pick(ARRAY_SIZE(file_names))]);
		tu_write(root, p.buf, "x\n");
	}
	if (pick(3)) {
		struct buf rules = BUF_INIT;
		unsigned n = 1 + pick(5), j;

		for (j = 0; j < n; j++)
			buf_addf(&rules, "%s\n", patterns[pick(ARRAY_SIZE(patterns))]);
		buf_reset(&p);
		buf_addf(&p, "%s%s.gitignore", rel, *rel ? "/" : "");
		tu_write(root, p.buf, rules.buf);
		buf_release(&rules);
	}
	for (i = 0; i < ndirs; i++) {
		buf_reset(&p);
		buf_addf(&p, "%s%s%s", rel, *rel ? "/" : "", dir_names[pick(ARRAY_SIZE(dir_names))]);
		make_tree(root, p.buf, depth + 1);
	}
	buf_release(&p);
}

/* Every file under `rel`, for ignore_tree_excluded() to judge. */
static void all_files(struct strvec *out, const char *root, const char *rel)
{
	struct buf p = BUF_INIT;
	struct dirent *de;
	DIR *d;

	path_join(&p, root, rel);
	d = opendir(p.buf);
	while (d && (de = readdir(d))) {
		struct buf child = BUF_INIT;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || !strcmp(de->d_name, ".git"))
			continue;
		buf_addf(&child, "%s%s%s", rel, *rel ? "/" : "", de->d_name);
		if (de->d_type == DT_DIR)
			all_files(out, root, child.buf);
		else
			strvec_push(out, child.buf);
		buf_release(&child);
	}
	if (d)
		closedir(d);
	buf_release(&p);
}

/* What search's walker does: chains of rules, never entering an excluded folder. */
static void walk_chain(struct strvec *out, const struct wspath_root *root, const char *rel,
		       const struct ignore_chain *parent, struct ignore_rules ***keep, size_t *nkeep)
{
	struct ignore_chain node, *chain = (struct ignore_chain *)parent;
	struct ignore_rules *rules = NULL;
	struct strvec names = STRVEC_INIT;
	struct dirent *de;
	size_t i;
	int fd = wspath_open_dir(root, rel);
	DIR *d;

	assert_true(fd >= 0);
	assert_int_equal(ignore_rules_load_at(&rules, fd, ".gitignore", rel), 0);
	if (rules) {
		*keep = xrealloc(*keep, (*nkeep + 1) * sizeof(**keep));
		(*keep)[(*nkeep)++] = rules;
		node.rules = rules;
		node.next = parent;
		chain = &node;
	}
	d = fdopendir(fd);
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") && strcmp(de->d_name, ".git"))
			strvec_pushf(&names, "%c%s", de->d_type == DT_DIR ? 'd' : 'f', de->d_name);
	closedir(d);
	for (i = 0; i < names.nr; i++) {
		struct buf child = BUF_INIT;
		int is_dir = names.v[i][0] == 'd';

		buf_addf(&child, "%s%s%s", rel, *rel ? "/" : "", names.v[i] + 1);
		if (!ignore_chain_excluded(chain, child.buf, child.len, is_dir)) {
			if (is_dir)
				walk_chain(out, root, child.buf, chain, keep, nkeep);
			else
				strvec_push(out, child.buf);
		}
		buf_release(&child);
	}
	strvec_clear(&names);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void sort_vec(struct strvec *v)
{
	qsort(v->v, v->nr, sizeof(*v->v), cmp_str);
}

static void join_vec(struct buf *out, const struct strvec *v)
{
	size_t i;

	for (i = 0; i < v->nr; i++)
		buf_addf(out, "%s\n", v->v[i]);
}

static int run_git(const char *dir, const char *const *args, struct buf *out)
{
	struct tu_result r = { 0, BUF_INIT, BUF_INIT };
	struct strvec argv = STRVEC_INIT;
	int st;

	strvec_pushv(&argv, (const char *const[]){ "git", "-c", "core.excludesFile=/dev/null",
						   NULL });
	strvec_pushv(&argv, args);
	tu_run(&r, argv.v, dir, (const char *const[]){ "GIT_CONFIG_NOSYSTEM=1", NULL }, NULL);
	st = r.status;
	if (out)
		buf_addbuf(out, &r.out);
	if (st)
		print_message("git failed: %s\n", r.err.buf);
	tu_result_release(&r);
	strvec_clear(&argv);
	return st;
}

static void test_ignore_agrees_with_git(void **state)
{
	int seed, trees = 0;
	size_t ignored = 0, kept = 0;

	(void)state;
	if (run_git("/", (const char *const[]){ "--version", NULL }, NULL)) {
		print_message("skipping: the git program is missing\n");
		skip();
	}
	for (seed = 1; seed <= 40; seed++) {
		char *ws = tu_mkdtemp();
		struct wspath_root root = WSPATH_ROOT_INIT;
		struct ignore_tree tree;
		struct strvec files = STRVEC_INIT, mine = STRVEC_INIT, walked = STRVEC_INIT;
		struct strvec theirs = STRVEC_INIT;
		struct buf out = BUF_INIT, a = BUF_INIT, b = BUF_INIT, c = BUF_INIT;
		struct ignore_rules **keep = NULL;
		struct ignore_chain base;
		size_t i, nkeep = 0;
		char *p;

		rng = (unsigned long long)seed;
		make_tree(ws, "", 0);
		assert_int_equal(run_git(ws, (const char *const[]){ "init", "-q", NULL }, NULL), 0);
		if (seed % 4 == 0)
			tu_write(ws, ".git/info/exclude", "*.json\n!README.md\nMakefile\n");
		assert_int_equal(run_git(ws, (const char *const[]){ "ls-files", "-o", "--exclude-standard",
							   "-z", NULL }, &out), 0);
		for (p = out.buf; p < out.buf + out.len; p += strlen(p) + 1)
			strvec_push(&theirs, p);

		assert_int_equal(wspath_root_open(&root, ws), 0);
		assert_int_equal(ignore_tree_init(&tree, &root), 0);
		all_files(&files, ws, "");
		for (i = 0; i < files.nr; i++) {
			int ex = ignore_tree_excluded(&tree, files.v[i], 0);

			assert_true(ex >= 0);
			if (!ex)
				strvec_push(&mine, files.v[i]);
		}
		base.rules = tree.exclude;
		base.next = NULL;
		walk_chain(&walked, &root, "", &base, &keep, &nkeep);

		sort_vec(&theirs);
		sort_vec(&mine);
		sort_vec(&walked);
		join_vec(&a, &theirs);
		join_vec(&b, &mine);
		join_vec(&c, &walked);
		if (strcmp(a.buf, b.buf) || strcmp(a.buf, c.buf)) {
			struct tu_result r = { 0, BUF_INIT, BUF_INIT };

			tu_run(&r, (const char *const[]){ "sh", "-c",
				  "find . -name .gitignore -not -path './.git/*' | sort | "
				  "while read f; do echo \"== $f\"; cat \"$f\"; done", NULL }, ws, NULL, NULL);
			fail_msg("seed %d: git says\n%s\nignore_tree says\n%s\nthe walk says\n%s\n%s", seed,
				 a.buf, b.buf, c.buf, r.out.buf);
		}
		trees += theirs.nr > 0;
		kept += theirs.nr;
		ignored += files.nr - theirs.nr;
		for (i = 0; i < nkeep; i++)
			ignore_rules_free(keep[i]);
		free(keep);
		ignore_tree_release(&tree);
		wspath_root_release(&root);
		strvec_clear(&files);
		strvec_clear(&mine);
		strvec_clear(&walked);
		strvec_clear(&theirs);
		buf_release(&out);
		buf_release(&a);
		buf_release(&b);
		buf_release(&c);
		tu_rmtree(ws);
	}
	/* The trees were not all empty, nor all ignored, nor all kept. */
	print_message("%zu files kept, %zu ignored in 40 trees\n", kept, ignored);
	assert_true(trees > 30);
	assert_true(kept > 200);
	assert_true(ignored > 200);
}

static void test_ignore_worktree_exclude(void **state)
{
	char *main_repo, *wt;
	struct wspath_root root = WSPATH_ROOT_INIT;
	struct ignore_tree tree;
	struct buf dotgit = BUF_INIT;

	(void)state;
	/* A linked worktree: ".git" is a file naming the git folder, whose commondir leads home. */
	main_repo = tu_mkdtemp();
	wt = tu_mkdtemp();
	tu_write(main_repo, ".git/info/exclude", "secret.key\n");
	tu_write(main_repo, ".git/worktrees/wt/commondir", "../..\n");
	buf_addf(&dotgit, "gitdir: %s/.git/worktrees/wt\n", main_repo);
	tu_write(wt, ".git", dotgit.buf);
	tu_write(wt, "secret.key", "k");
	tu_write(wt, "code.c", "c");
	assert_int_equal(wspath_root_open(&root, wt), 0);
	assert_int_equal(ignore_tree_init(&tree, &root), 0);
	assert_int_equal(ignore_tree_excluded(&tree, "secret.key", 0), 1);
	assert_int_equal(ignore_tree_excluded(&tree, "code.c", 0), 0);
	ignore_tree_release(&tree);
	wspath_root_release(&root);
	buf_release(&dotgit);
	tu_rmtree(main_repo);
	tu_rmtree(wt);
}

static void test_ignore_parent_folder_wins(void **state)
{
	char *ws = tu_mkdtemp();
	struct wspath_root root = WSPATH_ROOT_INIT;
	struct ignore_tree tree;

	(void)state;
	/* A file inside an excluded folder cannot be re-included (gitignore(5)). */
	tu_write(ws, ".gitignore", "out/\n!out/keep.txt\n");
	tu_write(ws, "out/keep.txt", "k");
	tu_write(ws, "sub/.gitignore", "*.tmp\n");
	tu_write(ws, "sub/deeper/.gitignore", "!важно.tmp\n");
	assert_int_equal(wspath_root_open(&root, ws), 0);
	assert_int_equal(ignore_tree_init(&tree, &root), 0);
	assert_int_equal(ignore_tree_excluded(&tree, "out/keep.txt", 0), 1);
	assert_int_equal(ignore_tree_excluded(&tree, "out", 1), 1);
	assert_int_equal(ignore_tree_excluded(&tree, "sub/a.tmp", 0), 1);
	assert_int_equal(ignore_tree_excluded(&tree, "sub/deeper/a.tmp", 0), 1);
	/* The deeper file overrides the shallower one. */
	assert_int_equal(ignore_tree_excluded(&tree, "sub/deeper/важно.tmp", 0), 0);
	assert_int_equal(ignore_tree_excluded(&tree, "sub/deeper/x/важно.tmp", 0), 0);
	assert_int_equal(ignore_tree_excluded(&tree, "sub/x/важно.tmp", 0), 1);
	assert_int_equal(ignore_tree_excluded(&tree, "", 1), 0);
	ignore_tree_release(&tree);
	wspath_root_release(&root);
	tu_rmtree(ws);
}

/*
 * Found by tests/fuzz/ignore.c: patterns of many "**" folders made the
 * matcher retry the same positions exponentially often (it ran for
 * minutes). The alarm turns a regression into a failure instead of a hang.
 */
static void test_ignore_fuzz_regressions(void **state)
{
	static const char timeout1[] =
		"*****/**/**/**/*****/**/**/*/*******/**/**/*****/**/**\251\000\000\000\000\000"
		"\000\000*/**/**/*****/**/**/*/*******/**/**/*****/**/**/*/*****/**/**\007\000\000"
		"\000\000\200\000\000*/**/**/*\202*~*il/\000\241/**/**/**~*il/\000/\241/\000o";
	static const char timeout2[] =
		"*****/**/**/**/*****/**/**/*/*/*****/**/**/\000*/*****/**/**\007\000\000\000"
		"\000\000\000\000*/+*/**/*\202*~*il/\000\241/**/*******/**/**/*****/**/**/***"
		"**/**/**/**/*****/**/**/*/*******/**/**/*****/**/**/*/*****\307**/**\007\000"
		"\000\000\000\000\000\000*/**/**/*\202*~*il/\000\241/**/**/**~*il/\000/\241/"
		"\000o";
	static const struct {
		const char *data;
		size_t len;
	} inputs[] = { { timeout1, sizeof(timeout1) - 1 }, { timeout2, sizeof(timeout2) - 1 } };
	struct buf pattern = BUF_INIT, path = BUF_INIT;
	size_t k;
	int i;

	(void)state;
	alarm(60);
	/* As the fuzzer fed them: the rules, then each path as file and folder. */
	for (k = 0; k < ARRAY_SIZE(inputs); k++) {
		const char *p = inputs[k].data, *end = p + inputs[k].len;
		struct ignore_rules *r = ignore_rules_parse("sub", p, strlen(p));

		for (p += strlen(p) + 1; p < end; p += strlen(p) + 1) {
			buf_reset(&path);
			buf_addf(&path, "sub/%s", p);
			ignore_rules_match(r, path.buf, path.len, 0);
			ignore_rules_match(r, path.buf, path.len, 1);
		}
		ignore_rules_free(r);
	}
	/* The same shape made worse: 40 "**" folders against a deep path that cannot match. */
	for (i = 0; i < 40; i++)
		buf_addstr(&pattern, "**/*a*/");
	buf_addstr(&pattern, "zzz");
	buf_reset(&path);
	for (i = 0; i < 60; i++)
		buf_addstr(&path, "aaaa/");
	buf_addstr(&path, "zzy");
	assert_false(ignore_wildmatch(pattern.buf, path.buf, path.len));
	buf_setlen(&path, path.len - 1);
	buf_addch(&path, 'z');
	assert_true(ignore_wildmatch(pattern.buf, path.buf, path.len));
	alarm(0);
	buf_release(&pattern);
	buf_release(&path);
}

/*
 * The cases vcs/excludes.c (the checkpoints' engine before this one)
 * was tested with: both engines agreed on them.
 */
static void test_ignore_wildmatch_checkpoint_cases(void **state)
{
	static const struct {
		int match;
		const char *pattern, *text;
	} cases[] = {
		{ 1, "*.o", "a.o" }, { 0, "*.o", "d/a.o" }, { 1, "**/a.o", "a.o" },
		{ 1, "**/a.o", "x/y/a.o" }, { 1, "a/**/b", "a/b" }, { 1, "a/**/b", "a/x/y/b" },
		{ 0, "a/**/b", "a/xb" }, { 1, "a/**", "a/x/y" }, { 0, "a/**", "a" },
		{ 1, "[a-c]?[!x]", "bzy" }, { 0, "[a-c]?[!x]", "bzx" }, { 1, "[[:digit:]]*", "7up" },
		{ 1, "\\#x", "#x" }, { 0, "a?b", "a/b" },
		{ 0, "*a*a*a*a*a*a*a*a*a*a*a*a*a*b",
		  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" },
	};
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(cases); i++)
		if (ignore_wildmatch(cases[i].pattern, cases[i].text, strlen(cases[i].text)) !=
		    cases[i].match)
			fail_msg("'%s' against '%s': expected %s", cases[i].pattern, cases[i].text,
				 cases[i].match ? "a match" : "no match");
}

/*
 * Where the two engines forgex had (tools/ignore.c and vcs/excludes.c)
 * disagreed, the one engine does what git does.
 */
static void test_ignore_git_where_engines_differed(void **state)
{
	static const char nul_rules[] = "keep.tmp\n*.o\0junk\n";
	struct ignore_rules *r;
	struct buf a = BUF_INIT;
	int i;

	(void)state;
	/* "[:" without ":]" is an ordinary "[" (excludes.c matched nothing) */
	assert_true(ignore_wildmatch("[[:x]", "x", 1));
	assert_true(ignore_wildmatch("[[:x]", ":", 1));
	assert_false(ignore_wildmatch("[[:x]", "y", 1));
	/* a CR ends the last line too, without a LF after it (git adds the LF) */
	r = ignore_rules_parse("", "a.tmp\r", 6);
	assert_int_equal(ignore_rules_match(r, "a.tmp", 5, 0), IGNORE_EXCLUDED);
	ignore_rules_free(r);
	/* a NUL ends the pattern (git reads a C string); excludes.c dropped the line */
	r = ignore_rules_parse("", nul_rules, sizeof(nul_rules) - 1);
	assert_int_equal(ignore_rules_match(r, "x.o", 3, 0), IGNORE_EXCLUDED);
	assert_int_equal(ignore_rules_match(r, "x.ojunk", 7, 0), IGNORE_NONE);
	ignore_rules_free(r);
	/* no give-up: a pattern that backtracks a lot still gets git's answer (excludes.c
	 * said "no match" after a fixed number of steps) */
	for (i = 0; i < 200; i++)
		buf_addch(&a, 'a');
	buf_addch(&a, 'b');
	assert_true(ignore_wildmatch("*a*a*a*a*a*a*a*a*a*a*a*a*a*b", a.buf, a.len));
	buf_release(&a);
}

/*
 * info/exclude and core.excludesFile are for the whole work tree: seen
 * from a workspace below its top, "/sub/x" names the workspace's "x".
 */
static void test_ignore_rules_for_the_work_tree(void **state)
{
	static const char text[] = "/sub/top.txt\n/elsewhere.txt\n*.log\nsub/dir/\n";
	struct ignore_rules *r = ignore_rules_parse_top("sub", text, sizeof(text) - 1);
	char *ws = tu_mkdtemp();
	int dfd;

	(void)state;
	assert_int_equal(ignore_rules_match(r, "top.txt", 7, 0), IGNORE_EXCLUDED);
	assert_int_equal(ignore_rules_match(r, "elsewhere.txt", 13, 0), IGNORE_NONE);
	assert_int_equal(ignore_rules_match(r, "deep/x.log", 10, 0), IGNORE_EXCLUDED);
	assert_int_equal(ignore_rules_match(r, "dir", 3, 1), IGNORE_EXCLUDED);
	assert_int_equal(ignore_rules_match(r, "dir", 3, 0), IGNORE_NONE);
	ignore_rules_free(r);
	/* at the top, the same as any file of rules for "" */
	r = ignore_rules_parse_top("", text, sizeof(text) - 1);
	assert_int_equal(ignore_rules_match(r, "sub/top.txt", 11, 0), IGNORE_EXCLUDED);
	assert_int_equal(ignore_rules_match(r, "top.txt", 7, 0), IGNORE_NONE);
	ignore_rules_free(r);

	/* core.excludesFile: loaded from anywhere; missing or not a file is no rules */
	tu_write(ws, "global-ignore", "*.bak\n");
	dfd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(dfd >= 0);
	assert_int_equal(ignore_rules_load_top(&r, dfd, "global-ignore", "a/b/"), 0);
	assert_non_null(r);
	assert_int_equal(ignore_rules_match(r, "x/y.bak", 7, 0), IGNORE_EXCLUDED);
	ignore_rules_free(r);
	assert_int_equal(ignore_rules_load_top(&r, dfd, "missing", NULL), 0);
	assert_null(r);
	assert_int_equal(mkdirat(dfd, "a-folder", 0755), 0);
	assert_int_equal(ignore_rules_load_top(&r, dfd, "a-folder", NULL), 0);
	assert_null(r);
	close(dfd);
	tu_rmtree(ws);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ignore_wildmatch),
		cmocka_unit_test(test_ignore_wildmatch_checkpoint_cases),
		cmocka_unit_test(test_ignore_git_where_engines_differed),
		cmocka_unit_test(test_ignore_rules_for_the_work_tree),
		cmocka_unit_test(test_ignore_rules_syntax),
		cmocka_unit_test(test_ignore_agrees_with_git),
		cmocka_unit_test(test_ignore_worktree_exclude),
		cmocka_unit_test(test_ignore_parent_folder_wins),
		cmocka_unit_test(test_ignore_fuzz_regressions),
	};

	return cmocka_run_group_tests_name("ws/ignore", tests, NULL, NULL);
}
