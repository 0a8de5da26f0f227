/*
 * apply_patch: the parser, the matching of chunks, and the tool writing a
 * whole patch or nothing. Cases marked "codex" come from the Codex CLI's
 * own tests (codex-rs/apply-patch/src/parser.rs, src/lib.rs,
 * src/seek_sequence.rs and tests/fixtures/scenarios/), rewritten here.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include "tools/match.h"
#include "tools/patch.h"
#include "unit/tools/common.h"

/* ---- the parser ---- */

struct parse_case {
	const char *name;
	const char *text;
	int ret;
	const char *want;	/* ret 0: a summary of the hunks (see summarize); else in the error */
};

/* "A path|content;" "D path;" "U path>move{anchors/old/new/eof}..." */
static void summarize(struct buf *out, const struct patch *p)
{
	size_t i, j, k;

	for (i = 0; i < p->nr; i++) {
		const struct patch_hunk *h = &p->hunks[i];

		if (h->op == PATCH_ADD) {
			buf_addf(out, "A %s|%s;", h->path, h->content.buf);
			continue;
		}
		if (h->op == PATCH_DELETE) {
			buf_addf(out, "D %s;", h->path);
			continue;
		}
		buf_addf(out, "U %s", h->path);
		if (h->move_to)
			buf_addf(out, ">%s", h->move_to);
		for (j = 0; j < h->chunks_nr; j++) {
			const struct patch_chunk *c = &h->chunks[j];

			buf_addch(out, '{');
			for (k = 0; k < c->anchors.nr; k++)
				buf_addf(out, "@%s", c->anchors.v[k]);
			buf_addch(out, '/');
			for (k = 0; k < c->old_lines.nr; k++)
				buf_addf(out, "%s%s", k ? "," : "", c->old_lines.v[k]);
			buf_addch(out, '/');
			for (k = 0; k < c->new_lines.nr; k++)
				buf_addf(out, "%s%s", k ? "," : "", c->new_lines.v[k]);
			if (c->eof)
				buf_addstr(out, "/EOF");
			buf_addch(out, '}');
		}
		buf_addch(out, ';');
	}
}

static const struct parse_case parse_cases[] = {
	/* codex parser.rs test_parse_patch: add, delete, update with a move */
	{ "codex: add, delete, update and move",
	  "*** Begin Patch\n*** Add File: path/add.py\n+abc\n+def\n*** Delete File: path/delete.py\n"
	  "*** Update File: path/update.py\n*** Move to: path/update2.py\n@@ def f():\n-    pass\n"
	  "+    return 123\n*** End Patch",
	  0, "A path/add.py|abc\ndef\n;D path/delete.py;U path/update.py>path/update2.py"
	  "{@def f():/    pass/    return 123};" },
	/* codex: an update hunk followed by an add hunk */
	{ "codex: update then add",
	  "*** Begin Patch\n*** Update File: file.py\n@@\n+line\n*** Add File: other.py\n+content\n"
	  "*** End Patch", 0, "U file.py{//line};A other.py|content\n;" },
	/* codex: the first chunk may leave out its @@ */
	{ "codex: first chunk without @@",
	  "*** Begin Patch\n*** Update File: file2.py\n import foo\n+bar\n*** End Patch", 0,
	  "U file2.py{/import foo/import foo,bar};" },
	/* codex: markers padded with blanks (parser test, scenario 018) */
	{ "codex: padded markers",
	  "*** Begin Patch \n*** Add File: foo\n+hi\n *** End Patch", 0, "A foo|hi\n;" },
	/* codex lenient mode: the heredoc GPT-4.1 wraps around the patch */
	{ "codex: heredoc",
	  "<<'EOF'\n*** Begin Patch\n*** Add File: a.txt\n+x\n*** End Patch\nEOF\n", 0, "A a.txt|x\n;" },
	{ "heredoc with the command name",
	  "apply_patch <<\"EOF\"\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF", 0, "D a;" },
	/* OpenCode tool/apply_patch.test.ts 'parses heredoc-wrapped patch' */
	{ "heredoc after cat",
	  "cat <<'EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF", 0, "D a;" },
	/* codex lib.rs test_heredoc: the delimiter is the model's */
	{ "heredoc with its own delimiter",
	  "apply_patch <<'PATCH'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nPATCH", 0,
	  "D a;" },
	{ "heredoc with <<-", "<<-EOF\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF", 0,
	  "D a;" },
	/* codex parser.rs test_parse_patch_lenient: patch_text_in_mismatched_quotes_heredoc */
	{ "codex: heredoc with mismatched quotes",
	  "<<\"EOF'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n", FX_EPARSE,
	  "first line of the patch must be '*** Begin Patch'" },
	{ "heredoc whose last line is not its delimiter",
	  "<<'PATCH'\n*** Begin Patch\n*** Delete File: a\n*** End Patch\nEOF\n", FX_EPARSE,
	  "first line of the patch must be '*** Begin Patch'" },
	{ "markdown fence",
	  "```diff\n*** Begin Patch\n*** Delete File: a\n*** End Patch\n```", 0, "D a;" },
	{ "CRLF patch text",
	  "*** Begin Patch\r\n*** Update File: a\r\n@@\r\n-x\r\n+y\r\n*** End Patch\r\n", 0,
	  "U a{/x/y};" },
	{ "nested anchors, end of file, empty context line",
	  "*** Begin Patch\n*** Update File: m.py\n@@ class A:\n@@     def f(self):\n"
	  "         x = 1\n\n-        return x\n+        return x + 1\n*** End of File\n*** End Patch",
	  0, "U m.py{@class A:@    def f(self):/        x = 1,,        return x/        x = 1,,"
	  "        return x + 1/EOF};" },
	{ "a unified diff @@ line keeps only its text",
	  "*** Begin Patch\n*** Update File: a.c\n@@ -10,6 +10,7 @@ int main(void)\n-x;\n+y;\n"
	  "@@ -40 +41 @@\n-z;\n+w;\n*** End Patch", 0, "U a.c{@int main(void)/x;/y;}{/z;/w;};" },
	{ "blank lines between hunks",
	  "*** Begin Patch\n*** Add File: a\n+1\n\n*** Delete File: b\n*** End Patch", 0,
	  "A a|1\n;D b;" },
	{ "an empty added file",
	  "*** Begin Patch\n*** Add File: empty.txt\n*** End Patch", 0, "A empty.txt|;" },
	/* codex: errors */
	{ "codex: not a patch", "bad", FX_EPARSE, "first line of the patch must be '*** Begin Patch'" },
	{ "codex: no end", "*** Begin Patch\nbad", FX_EPARSE,
	  "last line of the patch must be '*** End Patch'" },
	{ "codex: empty update hunk",
	  "*** Begin Patch\n*** Update File: test.py\n*** End Patch", FX_EPARSE,
	  "line 2: the Update File hunk for 'test.py' is empty" },
	/* codex scenario 013_rejects_invalid_hunk_header */
	{ "codex: invalid hunk header",
	  "*** Begin Patch\n*** Frobnicate File: foo\n*** End Patch", FX_EPARSE,
	  "line 2: '*** Frobnicate File: foo' is not a valid hunk header" },
	/* codex scenario 005_rejects_empty_patch */
	{ "codex: empty patch", "*** Begin Patch\n*** End Patch", FX_EPARSE, "no hunks" },
	{ "a chunk line without a marker",
	  "*** Begin Patch\n*** Update File: a\n@@\nfoo\n*** End Patch", FX_EPARSE,
	  "line 4: unexpected line in a chunk of 'a': 'foo'" },
	{ "a second chunk without @@",
	  "*** Begin Patch\n*** Update File: a\n@@\n-x\n+y\n\nfoo\n*** End Patch", FX_EPARSE,
	  "expected an @@ line" },
	{ "move without a path",
	  "*** Begin Patch\n*** Update File: a\n*** Move to: \n@@\n-x\n+y\n*** End Patch", FX_EPARSE,
	  "line 3: *** Move to: needs a path" },
	{ "add without a path", "*** Begin Patch\n*** Add File: \n+x\n*** End Patch", FX_EPARSE,
	  "names no path" },
	{ "an empty line inside an Add File",
	  "*** Begin Patch\n*** Add File: a\n+1\n\n+3\n*** End Patch", FX_EPARSE,
	  "line 5: '+3' is not a valid hunk header; the headers are '*** Add File: path', "
	  "'*** Delete File: path' and '*** Update File: path' (a line that is not '+...' ends an "
	  "Add File" },
	{ "line breaks sent as escapes",
	  "*** Begin Patch\\n*** Add File: a\\n+1\\n*** End Patch", FX_EPARSE,
	  "its line breaks were sent as escapes" },
	{ "end of file on an empty chunk",
	  "*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch", FX_EPARSE,
	  "has no lines" },
};

static void test_patch_parse(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(parse_cases); i++) {
		const struct parse_case *c = &parse_cases[i];
		struct patch p = PATCH_INIT;
		struct buf why = BUF_INIT, got = BUF_INIT;
		int ret = patch_parse(&p, c->text, strlen(c->text), &why);

		if (ret != c->ret)
			fail_msg("%s: returned %d, expected %d: %s", c->name, ret, c->ret, why.buf);
		if (!ret) {
			summarize(&got, &p);
			if (strcmp(got.buf, c->want))
				fail_msg("%s: parsed as\n%s\nexpected\n%s", c->name, got.buf, c->want);
		} else {
			if (p.nr)
				fail_msg("%s: a failed parse left hunks", c->name);
			if (!strstr(why.buf, c->want))
				fail_msg("%s: expected \"%s\" in \"%s\"", c->name, c->want, why.buf);
		}
		patch_release(&p);
		buf_release(&why);
		buf_release(&got);
	}
}

/* ---- matching the chunks of one file ---- */

struct update_case {
	const char *name;
	const char *file;
	const char *body;	/* the lines after "*** Update File: f" */
	int ret;
	const char *want;	/* ret 0: the new file; else in the explanation */
	int level;		/* the most lenient level used */
	const char *note;	/* ret 0: in the notes (NULL: no notes) */
};

static const struct update_case update_cases[] = {
	/* codex lib.rs test_update_file_hunk_modifies_content */
	{ "codex: update", "foo\nbar\n", "@@\n foo\n-bar\n+baz", 0, "foo\nbaz\n", MATCH_EXACT },
	/* codex test_multiple_update_chunks_apply_to_single_file */
	{ "codex: two chunks", "foo\nbar\nbaz\nqux\n", "@@\n foo\n-bar\n+BAR\n@@\n baz\n-qux\n+QUX", 0,
	  "foo\nBAR\nbaz\nQUX\n", MATCH_EXACT },
	/* codex test_update_file_hunk_interleaved_changes */
	{ "codex: interleaved changes and End of File", "a\nb\nc\nd\ne\nf\n",
	  "@@\n a\n-b\n+B\n@@\n c\n d\n-e\n+E\n@@\n f\n+g\n*** End of File", 0,
	  "a\nB\nc\nd\nE\nf\ng\n", MATCH_EXACT },
	/* codex scenario 021_update_file_deletion_only */
	{ "codex: deletion only", "line1\nline2\nline3\n", "@@\n line1\n-line2\n line3", 0,
	  "line1\nline3\n", MATCH_EXACT },
	{ "nested @@ anchors pick the second class",
	  "class A:\n    def f(self):\n        return 1\nclass B:\n    def f(self):\n        return 1\n",
	  "@@ class B:\n@@     def f(self):\n-        return 1\n+        return 2", 0,
	  "class A:\n    def f(self):\n        return 1\nclass B:\n    def f(self):\n        return 2\n",
	  MATCH_EXACT },
	{ "End of File picks the last of two equal lines", "x\nend\ny\nend\n", "@@\n-end\n+END\n*** End of File",
	  0, "x\nend\ny\nEND\n", MATCH_EXACT },
	{ "additions after an anchor", "def f():\n    pass\n\ndef g():\n    pass\n",
	  "@@ def g():\n+    # g does nothing", 0,
	  "def f():\n    pass\n\ndef g():\n    # g does nothing\n    pass\n", MATCH_EXACT },
	{ "additions without anchor go at the end", "a\nb\n", "@@\n+c", 0, "a\nb\nc\n", MATCH_EXACT },
	/* codex seek_sequence.rs: test_rstrip_match_ignores_trailing_whitespace */
	{ "codex: trailing whitespace", "foo   \nbar\t\t\n", "@@\n-foo\n-bar\n+baz", 0, "baz\n",
	  MATCH_TRAILING },
	/* codex seek_sequence.rs: test_trim_match_ignores_leading_and_trailing_whitespace */
	{ "codex: leading and trailing whitespace, re-indented", "    foo   \n   bar\t\n",
	  "@@\n foo\n-bar\n+baz", 0, "    foo   \n   baz\n", MATCH_INDENT },
	{ "indentation: added lines shifted like the context", "def f():\n    x = 1\n    return x\n",
	  "@@\n x = 1\n+y = 2\n return x", 0, "def f():\n    x = 1\n    y = 2\n    return x\n",
	  MATCH_INDENT },
	/* codex scenario 019_unicode_simple (typographic punctuation in the file) */
	{ "codex: unicode punctuation",
	  "say \xe2\x80\x9chi\xe2\x80\x9d \xe2\x80\x93 now\nnext\n",
	  "@@\n-say \"hi\" - now\n+say \"bye\" - now\n next", 0, "say \"bye\" - now\nnext\n",
	  MATCH_UNICODE },
	{ "CRLF file stays CRLF", "a\r\nb\r\nc\r\n", "@@\n a\n-b\n+B\n+B2", 0, "a\r\nB\r\nB2\r\nc\r\n",
	  MATCH_EXACT },
	/* codex scenario 014_update_file_appends_trailing_newline */
	{ "a file without final newline gets one, as Codex writes it", "a\nb", "@@\n a\n-b\n+c", 0,
	  "a\nc\n", MATCH_EXACT },
	{ "additions at the end of a file without final newline", "a\nb", "@@\n b\n+c", 0,
	  "a\nb\nc\n", MATCH_EXACT },
	{ "a last empty context line stands for the final newline", "a\nb\n", "@@\n a\n-b\n+c\n ", 0,
	  "a\nc\n", MATCH_EXACT },
	/* codex lib.rs test_pure_addition_chunk_followed_by_removal */
	{ "codex: additions at the end, then a chunk before it", "line1\nline2\nline3\n",
	  "@@\n+after-context\n+second-line\n@@\n line1\n-line2\n-line3\n+line2-replacement", 0,
	  "line1\nline2-replacement\nafter-context\nsecond-line\n", MATCH_EXACT },
	{ "End of File: the end at a lenient level before an exact copy higher up",
	  "start\nmarker\nend\nmiddle\nmarker \nend \n",
	  "@@\n-marker\n-end\n+X\n+end\n*** End of File", 0,
	  "start\nmarker\nend\nmiddle\nX\nend \n", MATCH_TRAILING },
	{ "End of File never overlaps the previous chunk", "a\nb\nc\n",
	  "@@\n-b\n-c\n+B\n+C\n@@\n-c\n+X\n*** End of File", FX_ENOTFOUND,
	  "after the previous chunk", 0 },
	/* OpenCode test/patch/patch.test.ts 'should match canonically equivalent unicode lines' */
	{ "canonically equivalent: a file in NFD, the patch in NFC",
	  "# Title\ncaf" "e\xcc\x81\n", "@@\n-caf\xc3\xa9\n+tea", 0, "# Title\ntea\n", MATCH_UNICODE },
	{ "context not found: explained with a diff", "int a = 1;\nint b = 2;\n",
	  "@@\n int a = 1;\n-int b = 3;\n+int b = 4;", FX_ENOTFOUND,
	  "-int b = 3;\n+int b = 2;\n", 0 },
	{ "anchor not found, the lines at two places", "a\nb\na\n", "@@ def nothere():\n-a\n+b",
	  FX_ENOTFOUND, "the @@ line 'def nothere():' (chunk 1, line 3 of the patch) is not in the "
	  "file, and the chunk's lines are at more than one place", 0 },
	/* openai/openai-agents-python tests/test_apply_diff.py stacked anchors stay advisory */
	{ "agents sdk: @@ lines not in the file, the lines there once", "a\nb\n",
	  "@@ nope\n@@ also-nope\n-b\n+B", 0, "a\nB\n", MATCH_EXACT,
	  "the @@ line 'nope' (chunk 1) is not in the file; the chunk's lines are, once" },
	{ "an @@ line not in the file that told two bodies apart: refused",
	  "def a():\n    pass\ndef b():\n    pass\n", "@@ def bb():\n-    pass\n+    return 2",
	  FX_ENOTFOUND, "Copy the context lines exactly as the file has them, the @@ lines too", 0 },
	{ "an @@ line not in the file over additions only: refused", "a\n", "@@ nope\n+x",
	  FX_ENOTFOUND, "the chunk has no ' ' or '-' line to find its place by", 0 },
	{ "chunks out of order", "a\nb\nc\n", "@@\n-c\n+C\n@@\n-a\n+A", FX_ENOTFOUND,
	  "after the previous chunk", 0 },
	{ "flattened indentation that cannot be placed: refused",
	  "def f(x):\n    if x:\n        return 1\n", "@@\n if x:\n-return 1\n+    return 2\n+else:",
	  FX_EINVAL, "cannot be told", 0 },
};

static void test_patch_updates(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(update_cases); i++) {
		const struct update_case *c = &update_cases[i];
		struct patch p = PATCH_INIT;
		struct buf why = BUF_INIT, out = BUF_INIT, text = BUF_INIT, notes = BUF_INIT;
		int ret, level = -1;

		buf_addf(&text, "*** Begin Patch\n*** Update File: f\n%s\n*** End Patch\n", c->body);
		if (patch_parse(&p, text.buf, text.len, &why) < 0)
			fail_msg("%s: does not parse: %s", c->name, why.buf);
		ret = patch_apply_update(&out, c->file, strlen(c->file), &p.hunks[0], "f", &level,
					 &notes, &why);
		if (ret != c->ret)
			fail_msg("%s: returned %d, expected %d: %s", c->name, ret, c->ret, why.buf);
		if (!ret) {
			if (strcmp(out.buf, c->want))
				fail_msg("%s: wrote\n[%s]\nexpected\n[%s]", c->name, out.buf, c->want);
			if (level != c->level)
				fail_msg("%s: matched at level %d, expected %d", c->name, level, c->level);
			if (c->note ? !strstr(notes.buf, c->note) : notes.len > 0)
				fail_msg("%s: notes [%s], expected [%s]", c->name, notes.buf,
					 c->note ? c->note : "");
		} else {
			if (out.len || notes.len)
				fail_msg("%s: a failure left output or notes", c->name);
			if (!strstr(why.buf, c->want))
				fail_msg("%s: expected \"%s\" in:\n%s", c->name, c->want, why.buf);
		}
		patch_release(&p);
		buf_release(&why);
		buf_release(&out);
		buf_release(&text);
		buf_release(&notes);
	}
}

/* ---- the tool ---- */

static int patch(struct tt *t, const char *text)
{
	return tt_callj(t, tt_builder(), "apply_patch", json_pack("{s:s}", "input", text));
}

static ino_t inode(struct tt *t, const char *rel)
{
	struct stat st;

	return lstat(tt_path(t, rel), &st) ? 0 : st.st_ino;
}

static int exists(struct tt *t, const char *rel)
{
	struct stat st;

	return !lstat(tt_path(t, rel), &st);
}

static void assert_in(const char *dir, const char *rel, const char *want)
{
	char *c = tu_read(dir, rel);

	if (!c)
		fail_msg("%s is missing", rel);
	if (strcmp(c, want))
		fail_msg("%s holds\n[%s]\nexpected\n[%s]", rel, c, want);
	free(c);
}

static void assert_file(struct tt *t, const char *rel, const char *want)
{
	assert_in(t->ws, rel, want);
}

/* No ".fx-keep-" or ".fx-" temporary file left anywhere in `dir`. */
static void assert_no_leftovers(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d))) {
		char sub[4096];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (strstr(de->d_name, ".fx-"))
			fail_msg("left behind: %s/%s", dir, de->d_name);
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		if (de->d_type == DT_DIR)
			assert_no_leftovers(sub);
	}
	closedir(d);
}

/* codex scenario 002_multiple_operations: add (in a new folder), delete and update at once */
static void test_patch_tool_multiple_operations(void **state)
{
	struct tt t;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "delete.txt", "obsolete\n");
	tu_write(t.ws, "modify.txt", "line1\nline2\n");
	assert_int_equal(patch(&t, "*** Begin Patch\n*** Add File: nested/new.txt\n+created\n"
			       "*** Delete File: delete.txt\n*** Update File: modify.txt\n@@\n-line2\n"
			       "+changed\n*** End Patch"), TOOL_OK);
	assert_contains(t.out.buf, "applied the patch: 3 hunks\nA nested/new.txt\nD delete.txt\n"
			"M modify.txt\n");
	assert_file(&t, "nested/new.txt", "created\n");
	assert_false(exists(&t, "delete.txt"));
	assert_file(&t, "modify.txt", "line1\nchanged\n");
	assert_int_equal(t.ctx.changed.nr, 3);
	assert_no_leftovers(t.ws);
	tt_teardown(&t);
}

/* codex scenario 004_move_to_new_directory, and 010: a move overwrites its destination */
static void test_patch_tool_move(void **state)
{
	struct tt t;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "old/name.txt", "old content\n");
	tu_write(t.ws, "old/other.txt", "unrelated\n");
	assert_int_equal(patch(&t, "*** Begin Patch\n*** Update File: old/name.txt\n"
			       "*** Move to: renamed/dir/name.txt\n@@\n-old content\n+new content\n"
			       "*** End Patch"), TOOL_OK);
	assert_contains(t.out.buf, "M old/name.txt -> renamed/dir/name.txt");
	assert_false(exists(&t, "old/name.txt"));
	assert_file(&t, "renamed/dir/name.txt", "new content\n");
	assert_file(&t, "old/other.txt", "unrelated\n");
	/* onto an existing file */
	tu_write(t.ws, "a.txt", "from a\n");
	assert_int_equal(patch(&t, "*** Begin Patch\n*** Update File: a.txt\n*** Move to: old/other.txt\n"
			       "@@\n-from a\n+moved\n*** End Patch"), TOOL_OK);
	assert_file(&t, "old/other.txt", "moved\n");
	assert_false(exists(&t, "a.txt"));
	/* codex scenario 011: Add File replaces an existing file */
	assert_int_equal(patch(&t, "*** Begin Patch\n*** Add File: old/other.txt\n+again\n*** End Patch"),
			 TOOL_OK);
	assert_file(&t, "old/other.txt", "again\n");
	tt_teardown(&t);
}

/* A failure found while checking: the file that would have applied is untouched too. */
static void test_patch_tool_all_or_nothing_check(void **state)
{
	struct tt t;
	ino_t a;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "a.txt", "alpha\n");
	tu_write(t.ws, "b.txt", "beta\n");
	a = inode(&t, "a.txt");
	assert_int_equal(patch(&t, "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n"
			       "*** Add File: c.txt\n+new\n*** Update File: b.txt\n@@\n-gamma\n+GAMMA\n"
			       "*** End Patch"), TOOL_FAILED);
	assert_contains(t.out.buf, "b.txt: the lines of chunk 1 (line 9 of the patch)");
	assert_contains(t.out.buf, "Nothing was written");
	assert_file(&t, "a.txt", "alpha\n");
	assert_int_equal(inode(&t, "a.txt"), a);
	assert_false(exists(&t, "c.txt"));
	assert_int_equal(t.ctx.changed.nr, 0);
	/* codex scenario 007 and 009: deleting or updating a missing file */
	assert_int_equal(patch(&t, "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+A\n"
			       "*** Delete File: missing.txt\n*** End Patch"), TOOL_FAILED);
	assert_contains(t.out.buf, "'missing.txt' does not exist, so it cannot be deleted");
	assert_int_equal(patch(&t, "*** Begin Patch\n*** Update File: missing.txt\n@@\n-x\n+y\n"
			       "*** End Patch"), TOOL_FAILED);
	assert_contains(t.out.buf, "'missing.txt' does not exist; to create it use '*** Add File:");
	/* codex scenario 012: a folder is not deleted */
	tu_write(t.ws, "dir/foo.txt", "x\n");
	assert_int_equal(patch(&t, "*** Begin Patch\n*** Delete File: dir\n*** End Patch"), TOOL_FAILED);
	assert_contains(t.out.buf, "'dir' is a folder");
	assert_file(&t, "dir/foo.txt", "x\n");
	/* a malformed envelope: the error, the format, nothing written */
	assert_int_equal(patch(&t, "*** Begin Patch\n*** Update File: a.txt\n-alpha\n+B\n"), TOOL_FAILED);
	assert_contains(t.out.buf, "invalid patch: the last line of the patch must be '*** End Patch'");
	assert_contains(t.out.buf, "The format:\n*** Begin Patch\n");
	assert_file(&t, "a.txt", "alpha\n");
	assert_int_equal(t.ctx.changed.nr, 0);
	tt_teardown(&t);
}

/*
 * A write that fails midway (the file size limit, as a full disk would):
 * the files already written are put back, the created ones and their new
 * folders removed, the deleted ones restored.
 */
static void test_patch_tool_all_or_nothing_write(void **state)
{
	struct tt t;
	struct rlimit old, lim;
	struct buf big = BUF_INIT, p = BUF_INIT;
	void (*was)(int);
	ino_t a, d;
	int i;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "a.txt", "alpha\n");
	tu_write(t.ws, "gone.txt", "keep me\n");
	a = inode(&t, "a.txt");
	d = inode(&t, "gone.txt");
	for (i = 0; i < 2000; i++)
		buf_addstr(&big, "+0123456789012345678901234567890123456789\n");
	buf_addf(&p, "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+ALPHA\n"
		 "*** Add File: new/dir/small.txt\n+small\n*** Delete File: gone.txt\n"
		 "*** Add File: new/big.txt\n%s*** End Patch", big.buf);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 16384;
	was = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	i = patch(&t, p.buf);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, was);
	assert_int_equal(i, TOOL_FAILED);
	assert_contains(t.out.buf, "cannot write 'new/big.txt'");
	assert_contains(t.out.buf, "the patch was undone, no file was changed");
	assert_not_contains(t.out.buf, "could not put back");
	assert_file(&t, "a.txt", "alpha\n");
	assert_int_equal(inode(&t, "a.txt"), a);	/* the very file, renamed back */
	assert_file(&t, "gone.txt", "keep me\n");
	assert_int_equal(inode(&t, "gone.txt"), d);
	assert_false(exists(&t, "new/dir/small.txt"));
	assert_false(exists(&t, "new"));		/* the folders it made are gone */
	assert_no_leftovers(t.ws);
	/* the same patch applies once the disk has room */
	assert_int_equal(patch(&t, p.buf), TOOL_OK);
	assert_file(&t, "a.txt", "ALPHA\n");
	assert_false(exists(&t, "gone.txt"));
	assert_true(exists(&t, "new/big.txt"));
	assert_no_leftovers(t.ws);
	buf_release(&big);
	buf_release(&p);
	tt_teardown(&t);
}

/* The confinement and permissions of write_file and delete_file. */
static void test_patch_tool_confinement(void **state)
{
	struct tt t;
	char *outside = tu_mkdtemp(), link[4096];

	(void)state;
	tt_setup(&t);
	tu_write(outside, "secret.txt", "secret\n");
	snprintf(link, sizeof(link), "%s/secret.txt", outside);
	assert_int_equal(symlink(link, tt_path(&t, "out.txt")), 0);
	tu_write(t.ws, "a.txt", "alpha\n");
	tu_write(t.ws, ".git/config", "[core]\n");
	assert_int_equal(patch(&t, "*** Begin Patch\n*** Update File: a.txt\n@@\n-alpha\n+A\n"
			       "*** Add File: ../escape.txt\n+x\n*** End Patch"), TOOL_REFUSED);
	assert_contains(t.out.buf, "outside the workspace");
	assert_int_equal(patch(&t, "*** Begin Patch\n*** Update File: out.txt\n@@\n-secret\n+owned\n"
			       "*** End Patch"), TOOL_REFUSED);
	assert_contains(t.out.buf, "leads outside the workspace");
	assert_int_equal(patch(&t, "*** Begin Patch\n*** Update File: .git/config\n@@\n-[core]\n+x\n"
			       "*** End Patch"), TOOL_REFUSED);
	assert_contains(t.out.buf, "inside a .git folder");
	assert_int_equal(patch(&t, "*** Begin Patch\n*** Add File: .forgex/x\n+x\n*** End Patch"),
			 TOOL_REFUSED);
	assert_contains(t.out.buf, "inside .forgex");
	assert_file(&t, "a.txt", "alpha\n");
	assert_file(&t, ".git/config", "[core]\n");
	assert_in(outside, "secret.txt", "secret\n");
	assert_int_equal(t.ctx.changed.nr, 0);
	/* Deleting the link deletes the link, as delete_file does. */
	assert_int_equal(patch(&t, "*** Begin Patch\n*** Delete File: out.txt\n*** End Patch"), TOOL_OK);
	assert_false(exists(&t, "out.txt"));
	assert_in(outside, "secret.txt", "secret\n");
	/* A role that may not write or delete does not get to. */
	assert_int_equal(tt_callj(&t, permissions_for_role("supervisor"), "apply_patch",
				  json_pack("{s:s}", "input", "*** Begin Patch\n*** Delete File: a.txt\n"
					    "*** End Patch")), TOOL_REFUSED);
	assert_contains(t.out.buf, "refused: missing permissions: write");
	assert_file(&t, "a.txt", "alpha\n");
	/* patchText is accepted as well; both at once is not. */
	assert_int_equal(tt_callj(&t, tt_builder(), "apply_patch",
				  json_pack("{s:s}", "patchText", "*** Begin Patch\n*** Update File: "
					    "a.txt\n@@\n-alpha\n+beta\n*** End Patch")), TOOL_OK);
	assert_file(&t, "a.txt", "beta\n");
	assert_int_equal(tt_callj(&t, tt_builder(), "apply_patch",
				  json_pack("{s:s,s:s}", "patchText", "x", "input", "y")), TOOL_FAILED);
	assert_contains(t.out.buf, "give the patch once");
	tt_teardown(&t);
	tu_rmtree(outside);
}

/* Several hunks on one file, and a file added then updated in the same patch. */
static void test_patch_tool_same_file_twice(void **state)
{
	struct tt t;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "a.txt", "1\n2\n3\n");
	assert_int_equal(patch(&t, "*** Begin Patch\n*** Update File: a.txt\n@@\n-1\n+one\n"
			       "*** Update File: a.txt\n@@\n-3\n+three\n*** Add File: b.txt\n+b\n"
			       "*** Update File: b.txt\n@@\n-b\n+bee\n*** End Patch"), TOOL_OK);
	assert_file(&t, "a.txt", "one\n2\nthree\n");
	assert_file(&t, "b.txt", "bee\n");
	/* deleted, then updated: refused */
	assert_int_equal(patch(&t, "*** Begin Patch\n*** Delete File: a.txt\n*** Update File: a.txt\n"
			       "@@\n-one\n+x\n*** End Patch"), TOOL_FAILED);
	assert_contains(t.out.buf, "deleted (or moved away) earlier in this patch");
	assert_file(&t, "a.txt", "one\n2\nthree\n");
	tt_teardown(&t);
}

/* The example the model is shown in the tool's description is a valid patch. */
static void test_patch_description_example(void **state)
{
	struct tt t;
	const struct tool *tool;
	const char *a, *b;
	struct patch p = PATCH_INIT;
	struct buf why = BUF_INIT, got = BUF_INIT;

	(void)state;
	tt_setup(&t);
	tool = registry_find(&t.reg, "apply_patch");
	assert_non_null(tool);
	a = strstr(tool->description, "*** Begin Patch");
	b = a ? strstr(a, "*** End Patch\n") : NULL;
	assert_non_null(b);
	assert_int_equal(patch_parse(&p, a, (size_t)(b - a) + 14, &why), 0);
	summarize(&got, &p);
	assert_string_equal(got.buf, "A src/new.py|def hello():\n    return 1\n;"
			    "U src/app.py{@class App:@    def run(self):/        x = load(),        return x/"
			    "        x = load(),        return x + 1};"
			    "U src/old_name.py>src/new_name.py{/import os/import sys};D src/unused.py;");
	patch_release(&p);
	buf_release(&why);
	buf_release(&got);
	tt_teardown(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_patch_parse),
		cmocka_unit_test(test_patch_updates),
		cmocka_unit_test(test_patch_tool_multiple_operations),
		cmocka_unit_test(test_patch_tool_move),
		cmocka_unit_test(test_patch_tool_all_or_nothing_check),
		cmocka_unit_test(test_patch_tool_all_or_nothing_write),
		cmocka_unit_test(test_patch_tool_confinement),
		cmocka_unit_test(test_patch_tool_same_file_twice),
		cmocka_unit_test(test_patch_description_example),
	};

	return cmocka_run_group_tests_name("tools/patch", tests, NULL, NULL);
}
