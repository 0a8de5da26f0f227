#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <git2.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/path.h"
#include "helpers/testutil.h"
#include "unit/vcs/vcs_testutil.h"
#include "vcs/checkpoint.h"

static char *path_in(const char *dir, const char *rel)
{
	struct buf p = BUF_INIT;

	path_join(&p, dir, rel);
	return buf_detach(&p, NULL);
}

/*
 * The main promise: every kind of change an agent can make to a real
 * repository is undone byte for byte, ignored files are left alone, links
 * are never followed out of the workspace, and the user's git state is
 * untouched down to the bytes of .git.
 */
static void test_checkpoint_restore_git_repo_fidelity(void **state)
{
	char *ws = vt_make_repo(), *outside = tu_mkdtemp(), *dotgit;
	struct buf git_before = BUF_INIT, git_after = BUF_INIT;
	struct buf dotgit_before = BUF_INIT, dotgit_after = BUF_INIT;
	struct buf tree_before = BUF_INIT, tree_after = BUF_INIT;
	struct buf out_before = BUF_INIT, out_after = BUF_INIT;
	struct checkpoint_info info;
	struct checkpoints *cps;
	char *env, *cont;

	(void)state;
	dotgit = path_in(ws, ".git");
	tu_write(ws, "data/x.txt", "x\n");
	tu_write(ws, "data/y.txt", "y\n");
	tu_write(ws, "lib/inner/code.c", "/* code */\n");
	tu_write(ws, "empty.txt", "");
	vt_write_bytes(ws, "private.txt", "secret\n", 7, 0600);
	vt_symlink(ws, "link-out", "/etc/hostname");
	vt_symlink(ws, "link-dangling", "does/not/exist");
	tu_write(outside, "inner/keep.txt", "outside, must not change\n");

	vt_git_state(&git_before, ws);
	vt_manifest(&dotgit_before, dotgit, VT_TIMES | VT_ALL);
	vt_manifest(&tree_before, ws, 0);
	vt_manifest(&out_before, outside, VT_TIMES | VT_ALL);

	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, "before the agent");
	assert_string_equal(info.message, "before the agent");
	assert_true(strlen(info.short_id) >= 12);
	assert_int_equal(strncmp(info.id, info.short_id, strlen(info.short_id)), 0);

	/* what an agent might do */
	tu_write(ws, "src/util.c", "int util(void) { return 42; }\n");
	vt_rm(ws, "docs");
	tu_write(ws, "new/dir/file.txt", "new\n");
	tu_write(ws, "new/empty", "");
	vt_chmod(ws, "run.sh", 0644);
	vt_chmod(ws, "README.md", 0755);
	vt_rm(ws, "src/main.c");
	vt_symlink(ws, "src/main.c", "../README.md");
	vt_rm(ws, "data");
	tu_write(ws, "data", "now a file\n");
	vt_rm(ws, "notes.txt");
	tu_write(ws, "notes.txt/inner.txt", "now a folder\n");
	vt_rm(ws, "lib");
	vt_symlink(ws, "lib", outside);
	vt_rm(ws, "link-out");
	tu_write(ws, "link-out", "a file where a link was\n");
	tu_write(ws, "private.txt", "changed secret\n");
	vt_rm(ws, "empty.txt");
	tu_write(ws, ".env", "SECRET=2\n");
	tu_write(ws, "build/new.o", "new object\n");

	vt_restore_ok(cps, info.short_id);

	/* ignored files are left as the agent left them */
	env = tu_read(ws, ".env");
	assert_string_equal(env, "SECRET=2\n");
	free(env);
	cont = tu_read(ws, "build/new.o");
	assert_string_equal(cont, "new object\n");
	free(cont);
	/* put those two back by hand; then everything must match */
	tu_write(ws, ".env", "SECRET=1\n");
	vt_rm(ws, "build/new.o");
	vt_manifest(&tree_after, ws, 0);
	vt_assert_same(&tree_before, &tree_after, "working tree");
	assert_int_equal(vt_mode(ws, "private.txt") & 0777, 0600);

	/* the link was replaced, never written through */
	vt_manifest(&out_after, outside, VT_TIMES | VT_ALL);
	vt_assert_same(&out_before, &out_after, "folder outside the workspace");

	/* not one byte of .git changed; git sees the same state */
	vt_manifest(&dotgit_after, dotgit, VT_TIMES | VT_ALL);
	vt_assert_same(&dotgit_before, &dotgit_after, ".git");
	vt_git_state(&git_after, ws);
	vt_assert_same(&git_before, &git_after, "git state");

	checkpoint_info_release(&info);
	checkpoint_close(cps);
	buf_release(&git_before);
	buf_release(&git_after);
	buf_release(&dotgit_before);
	buf_release(&dotgit_after);
	buf_release(&tree_before);
	buf_release(&tree_after);
	buf_release(&out_before);
	buf_release(&out_after);
	free(dotgit);
	tu_rmtree(outside);
	tu_rmtree(ws);
}

/* Outside git: nested .gitignore files and negations decide, nothing else. */
static void test_checkpoint_non_git_folder_gitignore_rules(void **state)
{
	char *ws = tu_mkdtemp(), *c;
	struct checkpoint_info info;
	struct checkpoints *cps;
	struct buf xdg = BUF_INIT;

	(void)state;
	/* a global ignore file: git would use it in a repository, never outside one */
	path_join(&xdg, getenv("XDG_CONFIG_HOME"), "git/ignore");
	tu_write(getenv("XDG_CONFIG_HOME"), "git/ignore", "*.xdg\n");
	tu_write(ws, ".gitignore", "*.log\n!keep.log\nbuild/\n");
	tu_write(ws, "sub/.gitignore", "secret.txt\n");
	tu_write(ws, "a.txt", "a\n");
	tu_write(ws, "app.log", "log 1\n");
	tu_write(ws, "keep.log", "kept\n");
	tu_write(ws, "build/x", "x\n");
	tu_write(ws, "sub/secret.txt", "s1\n");
	tu_write(ws, "sub/ok.txt", "ok\n");
	tu_write(ws, "global.xdg", "captured: not a repository\n");
	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, "start");
	assert_int_equal(info.files, 6);	/* 2 .gitignore, a.txt, keep.log, sub/ok.txt, global.xdg */

	vt_rm(ws, "a.txt");
	vt_rm(ws, "keep.log");
	vt_rm(ws, "sub/ok.txt");
	vt_rm(ws, "global.xdg");
	tu_write(ws, "app.log", "log 2\n");
	tu_write(ws, "sub/secret.txt", "s2\n");
	tu_write(ws, "new.log", "new ignored\n");
	tu_write(ws, "sub/new.txt", "new, not ignored\n");
	tu_write(ws, "build/y", "y\n");
	vt_restore_ok(cps, info.id);

	c = tu_read(ws, "a.txt");
	assert_string_equal(c, "a\n");
	free(c);
	c = tu_read(ws, "keep.log");	/* negation: recorded */
	assert_string_equal(c, "kept\n");
	free(c);
	c = tu_read(ws, "sub/ok.txt");
	assert_string_equal(c, "ok\n");
	free(c);
	assert_true(vt_exists(ws, "global.xdg"));
	assert_false(vt_exists(ws, "sub/new.txt"));	/* created since, not ignored */
	c = tu_read(ws, "app.log");	/* ignored: left alone */
	assert_string_equal(c, "log 2\n");
	free(c);
	c = tu_read(ws, "sub/secret.txt");	/* ignored by the nested file */
	assert_string_equal(c, "s2\n");
	free(c);
	assert_true(vt_exists(ws, "new.log"));
	assert_true(vt_exists(ws, "build/y"));

	unlink(xdg.buf);
	buf_release(&xdg);
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/*
 * In a repository: info/exclude, core.excludesFile (set in .git/config)
 * and the XDG default ignore file apply as git applies them, and a file
 * the user tracks is recorded although it matches .gitignore.
 */
static void test_checkpoint_git_excludes_and_tracked_ignored(void **state)
{
	char *ws = tu_mkdtemp(), *extra = tu_mkdtemp(), *c;
	struct buf excl = BUF_INIT;
	struct checkpoint_info info;
	struct checkpoints *cps;

	(void)state;
	vt_git(ws, "init", "-q");
	tu_write(ws, ".gitignore", "dist/\n");
	tu_write(ws, "dist/app.js", "tracked 1\n");
	tu_write(ws, "src.c", "src\n");
	vt_git(ws, "add", ".gitignore", "src.c");
	vt_git(ws, "add", "-f", "dist/app.js");
	vt_git(ws, "commit", "-q", "-m", "init");
	tu_write(ws, ".git/info/exclude", "*.local\n");
	path_join(&excl, extra, "ignores");
	tu_write(extra, "ignores", "*.tmp\n");
	vt_git(ws, "config", "core.excludesFile", excl.buf);
	tu_write(ws, "a.local", "excluded\n");
	tu_write(ws, "b.tmp", "excluded by core.excludesFile\n");
	tu_write(ws, "dist/other.js", "ignored, untracked\n");

	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, "start");
	assert_int_equal(info.files, 3);	/* .gitignore, src.c, dist/app.js */

	tu_write(ws, "dist/app.js", "tracked 2\n");
	vt_rm(ws, "a.local");
	vt_rm(ws, "b.tmp");
	tu_write(ws, "dist/other.js", "changed, still ignored\n");
	tu_write(ws, "c.tmp", "new, ignored\n");
	vt_restore_ok(cps, info.short_id);

	c = tu_read(ws, "dist/app.js");
	assert_string_equal(c, "tracked 1\n");
	free(c);
	assert_false(vt_exists(ws, "a.local"));	/* never recorded, so not brought back */
	assert_false(vt_exists(ws, "b.tmp"));
	assert_true(vt_exists(ws, "c.tmp"));
	c = tu_read(ws, "dist/other.js");
	assert_string_equal(c, "changed, still ignored\n");
	free(c);

	buf_release(&excl);
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	tu_rmtree(extra);
	tu_rmtree(ws);
}

/* A file stops being recorded once a rule ignores it (and the user does not track it). */
static void test_checkpoint_newly_ignored_file_is_dropped(void **state)
{
	char *ws = tu_mkdtemp(), *c;
	struct checkpoint_info a, b;
	struct checkpoints *cps;

	(void)state;
	tu_write(ws, "app.log", "log\n");
	tu_write(ws, "main.c", "main\n");
	cps = vt_open_ok(ws);
	vt_create_ok(&a, cps, "a");
	assert_int_equal(a.files, 2);
	tu_write(ws, ".gitignore", "*.log\n");
	vt_create_ok(&b, cps, "b");
	assert_int_equal(b.files, 2);	/* main.c and .gitignore */
	tu_write(ws, "app.log", "log changed\n");
	vt_restore_ok(cps, b.id);
	c = tu_read(ws, "app.log");
	assert_string_equal(c, "log changed\n");
	free(c);
	/* the older checkpoint still holds it and brings it back */
	vt_restore_ok(cps, a.id);
	c = tu_read(ws, "app.log");
	assert_string_equal(c, "log\n");
	free(c);
	assert_false(vt_exists(ws, ".gitignore"));
	checkpoint_info_release(&a);
	checkpoint_info_release(&b);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

static void test_checkpoint_empty_folder(void **state)
{
	char *ws = tu_mkdtemp();
	struct checkpoint_info info;
	struct checkpoint_list list = CHECKPOINT_LIST_INIT;
	struct checkpoints *cps;
	struct buf m = BUF_INIT;

	(void)state;
	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, NULL);
	assert_string_equal(info.message, "checkpoint");
	assert_int_equal(info.files, 0);
	tu_write(ws, "a/b/c.txt", "c\n");
	tu_write(ws, "top.txt", "t\n");
	vt_restore_ok(cps, info.id);
	vt_manifest(&m, ws, 0);
	assert_int_equal(m.len, 0);	/* nothing but .forgex */
	assert_int_equal(checkpoint_list(&list, cps), 0);
	assert_int_equal(list.nr, 2);
	{
		char *want = xstrfmt("before restore of %.12s", info.id);

		assert_string_equal(list.items[0].message, want);
		free(want);
	}
	assert_string_equal(list.items[1].id, info.id);
	checkpoint_list_release(&list);
	buf_release(&m);
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/* Names with spaces, unicode, newlines and other bytes git and Windows dislike. */
static void test_checkpoint_unusual_names(void **state)
{
	static const char *const names[] = {
		"with space.txt", "\xc3\xbcn\xc3\xaf\xc3\xa7\xc3\xb8" "d\xc3\xa9-\xe6\x96\x87\xe4\xbb\xb6.txt",
		"new\nline.txt", "tab\there", "back\\slash", "trailing.", "trailing ", "con", "aux.c",
		"-dash", "*star?", "quote\"s'", "dir with space/inner\nname", "latin1-\xe9\xff",
		"git~1", ".hidden", "..dots",
	};
	char *ws = tu_mkdtemp();
	struct buf before = BUF_INIT, after = BUF_INIT;
	struct checkpoint_info info;
	struct checkpoints *cps;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(names); i++)
		tu_write(ws, names[i], names[i]);
	vt_manifest(&before, ws, 0);
	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, "names");
	assert_int_equal(info.files, ARRAY_SIZE(names));
	for (i = 0; i < ARRAY_SIZE(names); i++)
		vt_rm(ws, names[i]);
	vt_rm(ws, "dir with space");
	tu_write(ws, "new\nfile", "x");
	vt_restore_ok(cps, info.id);
	vt_manifest(&after, ws, 0);
	vt_assert_same(&before, &after, "tree");
	buf_release(&before);
	buf_release(&after);
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

static void test_checkpoint_large_file(void **state)
{
	char *ws = tu_mkdtemp(), *data;
	size_t len = 24u << 20, i;
	uint32_t x = 12345;
	struct buf before = BUF_INIT, after = BUF_INIT;
	struct checkpoint_info info;
	struct checkpoints *cps;

	(void)state;
	data = xmalloc(len);
	for (i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		data[i] = (char)(x >> 24);
	}
	vt_write_bytes(ws, "big.bin", data, len, 0644);
	vt_manifest(&before, ws, 0);
	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, "big");
	data[len / 2] ^= 0x55;
	vt_write_bytes(ws, "big.bin", data, len - 7, 0644);
	vt_restore_ok(cps, info.id);
	vt_manifest(&after, ws, 0);
	vt_assert_same(&before, &after, "tree");
	free(data);
	buf_release(&before);
	buf_release(&after);
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/*
 * A link to a folder outside is recorded as a link: what it points to is
 * never recorded nor written, and a restore through it never happens.
 */
static void test_checkpoint_symlink_outside_not_followed(void **state)
{
	char *ws = tu_mkdtemp(), *outside = tu_mkdtemp(), *c;
	struct buf before = BUF_INIT, after = BUF_INIT, out_m = BUF_INIT;
	struct checkpoint_info info;
	struct checkpoints *cps;

	(void)state;
	tu_write(outside, "data.txt", "outside 1\n");
	vt_symlink(ws, "ext", outside);
	vt_symlink(ws, "abs-file", "/etc/passwd");
	tu_write(ws, "real/file.txt", "real\n");
	vt_manifest(&before, ws, 0);
	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, "links");
	assert_int_equal(info.files, 3);	/* two links and one file, nothing from outside */

	tu_write(outside, "data.txt", "outside 2\n");
	vt_rm(ws, "ext");
	tu_write(ws, "ext/data.txt", "a real folder now\n");
	vt_rm(ws, "real");
	vt_symlink(ws, "real", outside);	/* restoring real/file.txt must not write into outside */
	vt_manifest(&out_m, outside, VT_TIMES | VT_ALL);
	vt_restore_ok(cps, info.id);

	vt_manifest(&after, ws, 0);
	vt_assert_same(&before, &after, "tree");
	c = tu_read(outside, "data.txt");
	assert_string_equal(c, "outside 2\n");	/* not ours to restore */
	free(c);
	assert_false(vt_exists(outside, "file.txt"));
	buf_reset(&after);
	vt_manifest(&after, outside, VT_TIMES | VT_ALL);
	vt_assert_same(&out_m, &after, "outside folder");
	assert_true(S_ISLNK(vt_mode(ws, "ext")));
	buf_release(&before);
	buf_release(&after);
	buf_release(&out_m);
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	tu_rmtree(outside);
	tu_rmtree(ws);
}

/* Restoring the automatic backup undoes a restore. */
static void test_checkpoint_restore_is_undoable(void **state)
{
	char *ws = tu_mkdtemp();
	struct buf edited = BUF_INIT, after = BUF_INIT;
	struct checkpoint_restore_result res;
	struct checkpoint_info info;
	struct checkpoints *cps;

	(void)state;
	tu_write(ws, "a.txt", "one\n");
	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, "one");
	tu_write(ws, "a.txt", "two\n");
	tu_write(ws, "b/new.txt", "new\n");
	vt_symlink(ws, "l", "a.txt");
	vt_manifest(&edited, ws, 0);
	assert_int_equal(checkpoint_restore(&res, cps, info.id), 0);
	assert_int_equal(res.written, 1);
	assert_int_equal(res.removed, 2);
	assert_false(vt_exists(ws, "b"));	/* a folder left empty is removed */
	vt_restore_ok(cps, res.backup.id);
	vt_manifest(&after, ws, 0);
	vt_assert_same(&edited, &after, "tree");
	checkpoint_restore_result_release(&res);
	buf_release(&edited);
	buf_release(&after);
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/*
 * When a restore would destroy an ignored file (nothing holds a copy), it
 * refuses before changing anything and records no backup.
 */
static void test_checkpoint_restore_refuses_to_destroy_ignored(void **state)
{
	char *ws = tu_mkdtemp();
	struct buf before = BUF_INIT, after = BUF_INIT;
	struct checkpoint_list list = CHECKPOINT_LIST_INIT;
	struct checkpoint_info info;
	struct checkpoints *cps;

	(void)state;
	tu_write(ws, ".gitignore", "*.cache\nblocker\n");
	tu_write(ws, "out", "a file\n");
	tu_write(ws, "d/f.txt", "f\n");
	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, "start");

	/* a folder with an ignored file where the checkpoint has a file */
	vt_rm(ws, "out");
	tu_write(ws, "out/x.txt", "x\n");
	tu_write(ws, "out/y.cache", "precious cache\n");
	tu_write(ws, "changed.txt", "changed\n");
	vt_manifest(&before, ws, 0);
	assert_int_equal(checkpoint_restore(NULL, cps, info.id), FX_EDENIED);
	assert_non_null(strstr(err_last(), "out/y.cache"));
	vt_manifest(&after, ws, 0);
	vt_assert_same(&before, &after, "tree after a refused restore");

	/* an ignored file where the checkpoint has a folder */
	vt_rm(ws, "out/y.cache");
	vt_rm(ws, "d");
	tu_write(ws, ".gitignore", "*.cache\nd\n");
	tu_write(ws, "d", "ignored file in the way\n");
	buf_reset(&before);
	vt_manifest(&before, ws, 0);
	assert_int_equal(checkpoint_restore(NULL, cps, info.id), FX_EDENIED);
	assert_non_null(strstr(err_last(), "'d'"));
	buf_reset(&after);
	vt_manifest(&after, ws, 0);
	vt_assert_same(&before, &after, "tree after a refused restore");

	assert_int_equal(checkpoint_list(&list, cps), 0);
	assert_int_equal(list.nr, 1);	/* no backup for a restore that did nothing */
	checkpoint_list_release(&list);
	buf_release(&before);
	buf_release(&after);
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/* Same size, same second: the stat cache must not hide the change. */
static void test_checkpoint_racy_same_size_edit(void **state)
{
	char *ws = tu_mkdtemp(), *c;
	struct checkpoint_info a, b;
	struct checkpoints *cps;
	int round;

	(void)state;
	cps = vt_open_ok(ws);
	for (round = 0; round < 5; round++) {
		tu_write(ws, "f.txt", "aaaa");
		vt_create_ok(&a, cps, "a");
		tu_write(ws, "f.txt", "bbbb");
		vt_create_ok(&b, cps, "b");
		assert_string_not_equal(a.id, b.id);
		vt_restore_ok(cps, a.id);
		c = tu_read(ws, "f.txt");
		assert_string_equal(c, "aaaa");
		free(c);
		vt_restore_ok(cps, b.id);
		c = tu_read(ws, "f.txt");
		assert_string_equal(c, "bbbb");
		free(c);
		checkpoint_info_release(&a);
		checkpoint_info_release(&b);
	}
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/* .gitattributes conversions (eol, ident, text) never alter recorded bytes. */
static void test_checkpoint_attributes_do_not_convert(void **state)
{
	char *ws = tu_mkdtemp();
	struct buf before = BUF_INIT, after = BUF_INIT;
	struct checkpoint_info info;
	struct checkpoints *cps;

	(void)state;
	vt_git(ws, "init", "-q");
	vt_git(ws, "config", "core.autocrlf", "true");
	tu_write(ws, ".gitattributes", "* text=auto eol=crlf\n*.id ident\n*.lf text eol=lf\n");
	tu_write(ws, "crlf.txt", "one\r\ntwo\r\n");
	tu_write(ws, "lf.txt", "one\ntwo\n");
	tu_write(ws, "mixed.lf", "a\r\nb\nc\r\n");
	tu_write(ws, "x.id", "$Id$\nline\n");
	vt_manifest(&before, ws, 0);
	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, "attrs");
	tu_write(ws, "crlf.txt", "changed\n");
	tu_write(ws, "lf.txt", "changed\r\n");
	tu_write(ws, "mixed.lf", "changed\n");
	tu_write(ws, "x.id", "changed\n");
	vt_restore_ok(cps, info.id);
	vt_manifest(&after, ws, 0);
	vt_assert_same(&before, &after, "tree");
	buf_release(&before);
	buf_release(&after);
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/* A repository nested in the workspace (or a submodule) is someone else's: left alone. */
static void test_checkpoint_nested_repository_left_alone(void **state)
{
	char *ws = tu_mkdtemp(), *c;
	struct checkpoint_info info;
	struct checkpoints *cps;
	struct buf sub = BUF_INIT;

	(void)state;
	vt_git(ws, "init", "-q");
	tu_write(ws, "top.txt", "top\n");
	path_join(&sub, ws, "vendor/lib");
	assert_int_equal(fsutil_mkdir_p(sub.buf, 0755), 0);
	vt_git(sub.buf, "init", "-q");
	tu_write(sub.buf, "lib.c", "lib 1\n");
	vt_git(sub.buf, "add", "-A");
	vt_git(sub.buf, "commit", "-q", "-m", "lib");
	tu_write(ws, "vendor/empty-repo/.git/HEAD", "ref: refs/heads/main\n");
	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, "nested");
	assert_int_equal(info.files, 1);
	tu_write(sub.buf, "lib.c", "lib 2\n");
	tu_write(ws, "top.txt", "changed\n");
	vt_restore_ok(cps, info.id);
	c = tu_read(ws, "top.txt");
	assert_string_equal(c, "top\n");
	free(c);
	c = tu_read(sub.buf, "lib.c");
	assert_string_equal(c, "lib 2\n");
	free(c);
	buf_release(&sub);
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/*
 * The body of the unreadable-file test; returns 0 or a line number. It runs
 * in a child process that is not root (root reads a mode-000 file anyway),
 * so it reports with exit codes instead of cmocka's asserts.
 */
static int unreadable_file_check(const char *ws)
{
	struct checkpoint_list list = CHECKPOINT_LIST_INIT;
	struct checkpoints *cps = NULL;
	int bad = 0;

	if (checkpoint_open(&cps, ws) < 0)
		return __LINE__;
	if (checkpoint_create(NULL, cps, "x") >= 0)
		bad = __LINE__;
	else if (!strstr(err_last(), "locked.txt"))
		bad = __LINE__;
	else if (checkpoint_list(&list, cps) < 0 || list.nr != 0)
		bad = __LINE__;
	if (bad)
		fprintf(stderr, "unreadable file check failed at line %d: %s\n", bad, err_last());
	checkpoint_list_release(&list);
	checkpoint_close(cps);
	return bad;
}

/* A file that cannot be read makes the checkpoint fail clearly, recording nothing. */
static void test_checkpoint_unreadable_file_fails(void **state)
{
	char *ws = tu_mkdtemp();
	pid_t pid;
	int st;

	(void)state;
	tu_write(ws, "ok.txt", "ok\n");
	vt_write_bytes(ws, "locked.txt", "no\n", 3, 0000);
	if (geteuid() != 0) {
		assert_int_equal(unreadable_file_check(ws), 0);
		goto out;
	}
	/* as root: drop to an unprivileged user that owns the workspace */
	assert_int_equal(chown(ws, 65534, 65534), 0);
	{
		char *ok = path_in(ws, "ok.txt"), *locked = path_in(ws, "locked.txt");

		assert_int_equal(chown(ok, 65534, 65534), 0);
		assert_int_equal(chown(locked, 65534, 65534), 0);
		free(ok);
		free(locked);
	}
	assert_int_equal(chmod(vt_home, 0755), 0);
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		if (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0)
			_exit(100);
		_exit(unreadable_file_check(ws) ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(chmod(vt_home, 0700), 0);
out:
	vt_chmod(ws, "locked.txt", 0644);
	tu_rmtree(ws);
}

/* A workspace below the top of a repository: the user's tracked files map by prefix. */
static void test_checkpoint_workspace_inside_repository(void **state)
{
	char *root = tu_mkdtemp(), *c;
	struct buf ws = BUF_INIT;
	struct checkpoint_info info;
	struct checkpoints *cps;

	(void)state;
	vt_git(root, "init", "-q");
	tu_write(root, "outside.txt", "not in the workspace\n");
	tu_write(root, "proj/.gitignore", "*.gen\n");
	tu_write(root, "proj/keep.gen", "generated 1\n");
	tu_write(root, "proj/code.c", "code\n");
	vt_git(root, "add", "outside.txt", "proj/.gitignore", "proj/code.c");
	vt_git(root, "add", "-f", "proj/keep.gen");
	vt_git(root, "commit", "-q", "-m", "init");
	path_join(&ws, root, "proj");
	cps = vt_open_ok(ws.buf);
	vt_create_ok(&info, cps, "sub");
	assert_int_equal(info.files, 3);
	tu_write(root, "proj/keep.gen", "generated 2\n");
	tu_write(root, "outside.txt", "changed outside\n");
	vt_restore_ok(cps, info.id);
	c = tu_read(root, "proj/keep.gen");
	assert_string_equal(c, "generated 1\n");
	free(c);
	c = tu_read(root, "outside.txt");
	assert_string_equal(c, "changed outside\n");
	free(c);
	buf_release(&ws);
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	tu_rmtree(root);
}

static void test_checkpoint_list_and_resolve(void **state)
{
	char *ws = tu_mkdtemp(), *full = NULL;
	struct checkpoint_info a, b, c;
	struct checkpoint_list list = CHECKPOINT_LIST_INIT;
	struct checkpoints *cps;
	char prefix[8];

	(void)state;
	cps = vt_open_ok(ws);
	assert_int_equal(checkpoint_list(&list, cps), 0);
	assert_int_equal(list.nr, 0);
	tu_write(ws, "f", "1");
	vt_create_ok(&a, cps, "first\n\n");
	tu_write(ws, "f", "2");
	vt_create_ok(&b, cps, "second");
	vt_create_ok(&c, cps, "third, unchanged tree");
	assert_string_not_equal(b.id, c.id);
	assert_int_equal(checkpoint_list(&list, cps), 0);
	assert_int_equal(list.nr, 3);
	assert_string_equal(list.items[0].id, c.id);
	assert_string_equal(list.items[1].id, b.id);
	assert_string_equal(list.items[2].id, a.id);
	assert_string_equal(list.items[2].message, "first");
	assert_true(list.items[0].time >= list.items[2].time);
	assert_true(list.items[0].time > 1600000000);

	memcpy(prefix, b.id, 6);
	prefix[6] = '\0';
	prefix[0] = (char)toupper((unsigned char)prefix[0]);
	assert_int_equal(checkpoint_resolve(&full, cps, prefix), 0);
	assert_string_equal(full, b.id);
	free(full);
	assert_int_equal(checkpoint_resolve(&full, cps, "xyz!"), FX_EINVAL);
	assert_int_equal(checkpoint_resolve(&full, cps, "abc"), FX_EINVAL);	/* too short */
	assert_int_equal(checkpoint_resolve(&full, cps, "0123456789abcdef0123456789abcdef01234567"),
			 FX_ENOTFOUND);
	assert_non_null(strstr(err_last(), "no checkpoint"));

	/* restoring an unknown id is a clear error and changes nothing */
	assert_int_equal(checkpoint_restore(NULL, cps, "deadbeefdead"), FX_ENOTFOUND);
	assert_non_null(strstr(err_last(), "deadbeefdead"));
	checkpoint_list_release(&list);
	assert_int_equal(checkpoint_list(&list, cps), 0);
	assert_int_equal(list.nr, 3);

	checkpoint_list_release(&list);
	checkpoint_info_release(&a);
	checkpoint_info_release(&b);
	checkpoint_info_release(&c);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/* Taking a checkpoint reads the tree and changes nothing in it, not even a time. */
static void test_checkpoint_create_changes_nothing(void **state)
{
	char *ws = vt_make_repo(), *dotgit = path_in(ws, ".git");
	struct buf before = BUF_INIT, after = BUF_INIT, g_before = BUF_INIT, g_after = BUF_INIT;
	struct checkpoints *cps;

	(void)state;
	vt_manifest(&before, ws, VT_TIMES);
	vt_manifest(&g_before, dotgit, VT_TIMES | VT_ALL);
	cps = vt_open_ok(ws);
	vt_create_ok(NULL, cps, "one");
	tu_write(ws, "notes.txt", "edited\n");
	vt_rm(ws, "run.sh");
	vt_create_ok(NULL, cps, "two");
	tu_write(ws, "notes.txt", "untracked notes\n");
	vt_write_bytes(ws, "run.sh", "#!/bin/sh\necho hi\n", 18, 0755);
	buf_reset(&before);
	vt_manifest(&before, ws, VT_TIMES);
	vt_create_ok(NULL, cps, "three");
	checkpoint_close(cps);
	vt_manifest(&after, ws, VT_TIMES);
	vt_assert_same(&before, &after, "tree");
	vt_manifest(&g_after, dotgit, VT_TIMES | VT_ALL);
	vt_assert_same(&g_before, &g_after, ".git");
	buf_release(&before);
	buf_release(&after);
	buf_release(&g_before);
	buf_release(&g_after);
	free(dotgit);
	tu_rmtree(ws);
}

/* Two handles on one workspace (two forgex processes) do not corrupt each other. */
static void test_checkpoint_two_handles(void **state)
{
	char *ws = tu_mkdtemp();
	struct checkpoints *one, *two;
	struct checkpoint_list list = CHECKPOINT_LIST_INIT;

	(void)state;
	tu_write(ws, "f", "x");
	one = vt_open_ok(ws);
	two = vt_open_ok(ws);
	vt_create_ok(NULL, one, "from one");
	tu_write(ws, "f", "y");
	vt_create_ok(NULL, two, "from two");
	vt_create_ok(NULL, one, "from one again");
	assert_int_equal(checkpoint_list(&list, two), 0);
	assert_int_equal(list.nr, 3);
	assert_string_equal(list.items[0].message, "from one again");
	assert_string_equal(list.items[2].message, "from one");
	checkpoint_list_release(&list);
	checkpoint_close(one);
	checkpoint_close(two);
	tu_rmtree(ws);
}

/*
 * Permission bits beyond git's executable bit come back exactly: chmod
 * alone, rewritten files, deleted files, odd names, whatever the umask.
 */
static void test_checkpoint_permission_bits(void **state)
{
	static const struct { const char *name; mode_t mode; } files[] = {
		{ "plain", 0644 }, { "plain2", 0644 }, { "private", 0600 }, { "group", 0664 },
		{ "ro", 0444 }, { "tool", 0755 }, { "tool-private", 0700 }, { "odd-x", 0711 },
		{ "back\\slash\nnew line", 0640 }, { "dir/nested", 0604 },
		{ "keep/inner/f", 0644 },
	};
	char *ws = tu_mkdtemp();
	struct buf before = BUF_INIT, after = BUF_INIT;
	struct checkpoint_restore_result res;
	struct checkpoint_info info;
	struct checkpoints *cps;
	mode_t old_umask;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(files); i++)
		vt_write_bytes(ws, files[i].name, files[i].name, strlen(files[i].name), files[i].mode);
	vt_manifest(&before, ws, 0);
	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, "modes");

	vt_chmod(ws, "plain", 0600);		/* bits only, same exec bit */
	vt_chmod(ws, "private", 0644);
	vt_chmod(ws, "tool-private", 0755);
	vt_chmod(ws, "odd-x", 0644);		/* exec bit too */
	vt_chmod(ws, "ro", 0777);
	tu_write(ws, "group", "rewritten");	/* content and bits */
	vt_chmod(ws, "group", 0600);
	vt_rm(ws, "back\\slash\nnew line");	/* recreated with its bits */
	vt_rm(ws, "dir");
	vt_chmod(ws, "keep/inner", 0700);	/* a folder's bits alone */
	vt_chmod(ws, "keep", 0751);
	old_umask = umask(077);
	assert_int_equal(checkpoint_restore(&res, cps, info.id), 0);
	umask(old_umask);
	/* 5 files, dir/ made under umask 077, keep/ and keep/inner/ */
	assert_int_equal(res.chmodded, 8);
	assert_int_equal(res.written, 3);
	vt_manifest(&after, ws, 0);
	vt_assert_same(&before, &after, "tree with modes");
	checkpoint_restore_result_release(&res);

	/* and the backup recorded the edited bits: undoing the restore brings them back */
	vt_chmod(ws, "plain", 0640);
	vt_create_ok(NULL, cps, "plain 0640");
	vt_chmod(ws, "plain", 0644);
	{
		struct checkpoint_list list = CHECKPOINT_LIST_INIT;

		assert_int_equal(checkpoint_list(&list, cps), 0);
		vt_restore_ok(cps, list.items[0].id);
		checkpoint_list_release(&list);
	}
	assert_int_equal(vt_mode(ws, "plain") & 0777, 0640);
	buf_release(&before);
	buf_release(&after);
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/*
 * A crash inside a batch of object writes can leave an empty or cut
 * object file, which git would trust because it "exists", and a damaged
 * index. The next open must find and drop both.
 */
static void test_checkpoint_recovers_from_interrupted_write(void **state)
{
	static const char content[] = "content written just before the crash\n";
	char *ws = tu_mkdtemp(), *c;
	struct checkpoint_info info;
	struct checkpoints *cps;
	struct buf p = BUF_INIT;
	git_oid oid;
	char hex[41];

	(void)state;
	tu_write(ws, "f.txt", "before\n");
	cps = vt_open_ok(ws);
	vt_create_ok(NULL, cps, "first");
	checkpoint_close(cps);

	/* the state a crash leaves: marker, a truncated object, a garbage index */
	assert_int_equal(git_odb_hash(&oid, content, strlen(content), GIT_OBJECT_BLOB), 0);
	git_oid_tostr(hex, sizeof(hex), &oid);
	tu_write(ws, ".forgex/checkpoints/forgex-writing", "");
	buf_addf(&p, ".forgex/checkpoints/objects/%.2s/%s", hex, hex + 2);
	tu_write(ws, p.buf, "");
	tu_write(ws, ".forgex/checkpoints/index", "DIRC garbage");

	tu_write(ws, "f.txt", content);
	cps = vt_open_ok(ws);
	assert_false(vt_exists(ws, p.buf));	/* the empty object is gone */
	assert_false(vt_exists(ws, ".forgex/checkpoints/forgex-writing"));
	vt_create_ok(&info, cps, "after the crash");
	tu_write(ws, "f.txt", "later\n");
	vt_restore_ok(cps, info.id);
	c = tu_read(ws, "f.txt");
	assert_string_equal(c, content);
	free(c);

	/* a damaged index alone (no crash marker) is rebuilt too */
	checkpoint_close(cps);
	tu_write(ws, ".forgex/checkpoints/index", "not an index");
	cps = vt_open_ok(ws);
	vt_create_ok(NULL, cps, "index rebuilt");
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	buf_release(&p);
	tu_rmtree(ws);
}

/*
 * Files the user told git not to look at (assume-unchanged, skip-worktree)
 * are still recorded as they are on disk: the user's stat data is not
 * trusted for them.
 */
static void test_checkpoint_user_index_flags_not_trusted(void **state)
{
	char *ws = tu_mkdtemp(), *c;
	struct checkpoint_info info;
	struct checkpoints *cps;

	(void)state;
	vt_git(ws, "init", "-q");
	tu_write(ws, "assumed.txt", "committed\n");
	tu_write(ws, "skipped.txt", "committed\n");
	vt_git(ws, "add", "-A");
	vt_git(ws, "commit", "-q", "-m", "init");
	vt_git(ws, "update-index", "--assume-unchanged", "assumed.txt");
	vt_git(ws, "update-index", "--skip-worktree", "skipped.txt");
	tu_write(ws, "assumed.txt", "edited on disk\n");
	tu_write(ws, "skipped.txt", "edited too\n");
	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, "flags");
	tu_write(ws, "assumed.txt", "x\n");
	tu_write(ws, "skipped.txt", "y\n");
	vt_restore_ok(cps, info.id);
	c = tu_read(ws, "assumed.txt");
	assert_string_equal(c, "edited on disk\n");
	free(c);
	c = tu_read(ws, "skipped.txt");
	assert_string_equal(c, "edited too\n");
	free(c);
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/*
 * A linked worktree (its .git is a file naming the main repository): the
 * main repository's objects, info/exclude and index rules apply, and
 * neither .git file nor the main .git changes.
 */
static void test_checkpoint_linked_worktree(void **state)
{
	char *main_ws = vt_make_repo(), *c;
	struct buf wt = BUF_INIT, maingit = BUF_INIT, g1 = BUF_INIT, g2 = BUF_INIT;
	struct buf t1 = BUF_INIT, t2 = BUF_INIT, gitfile1 = BUF_INIT, gitfile2 = BUF_INIT;
	struct checkpoint_info info;
	struct checkpoints *cps;

	(void)state;
	buf_addf(&wt, "%s-wt", main_ws);
	vt_git(main_ws, "worktree", "add", "-q", wt.buf, "feature");
	tu_write(wt.buf, "wt-only.local", "excluded by the main info/exclude\n");
	tu_write(wt.buf, "wt-new.txt", "untracked in the worktree\n");
	path_join(&maingit, main_ws, ".git");
	vt_manifest(&g1, maingit.buf, VT_TIMES | VT_ALL);
	vt_manifest(&t1, wt.buf, 0);
	c = tu_read(wt.buf, ".git");
	buf_addstr(&gitfile1, c);
	free(c);

	cps = vt_open_ok(wt.buf);
	vt_create_ok(&info, cps, "worktree");
	assert_int_equal(info.files, 6);	/* feature: 5 tracked, and wt-new.txt */
	tu_write(wt.buf, "src/util.c", "changed in the worktree\n");
	vt_rm(wt.buf, "wt-new.txt");
	vt_rm(wt.buf, "wt-only.local");
	vt_restore_ok(cps, info.id);
	assert_false(vt_exists(wt.buf, "wt-only.local"));	/* excluded: never recorded */
	tu_write(wt.buf, "wt-only.local", "excluded by the main info/exclude\n");
	vt_manifest(&t2, wt.buf, 0);
	vt_assert_same(&t1, &t2, "worktree");
	c = tu_read(wt.buf, ".git");
	buf_addstr(&gitfile2, c);
	free(c);
	vt_assert_same(&gitfile1, &gitfile2, "the worktree's .git file");
	vt_manifest(&g2, maingit.buf, VT_TIMES | VT_ALL);
	vt_assert_same(&g1, &g2, "the main .git");

	checkpoint_info_release(&info);
	checkpoint_close(cps);
	vt_git(main_ws, "worktree", "remove", "--force", wt.buf);
	buf_release(&wt);
	buf_release(&maingit);
	buf_release(&g1);
	buf_release(&g2);
	buf_release(&t1);
	buf_release(&t2);
	buf_release(&gitfile1);
	buf_release(&gitfile2);
	tu_rmtree(main_ws);
}

/* A submodule is someone else's repository: not recorded, never restored over. */
static void test_checkpoint_submodule_left_alone(void **state)
{
	char *ws = tu_mkdtemp(), *lib = tu_mkdtemp(), *c;
	struct checkpoint_info info;
	struct checkpoints *cps;

	(void)state;
	vt_git(lib, "init", "-q");
	tu_write(lib, "lib.c", "lib 1\n");
	vt_git(lib, "add", "-A");
	vt_git(lib, "commit", "-q", "-m", "lib");
	vt_git(ws, "init", "-q");
	tu_write(ws, "app.c", "app\n");
	vt_git(ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", lib, "deps/lib");
	vt_git(ws, "add", "-A");
	vt_git(ws, "commit", "-q", "-m", "with submodule");
	cps = vt_open_ok(ws);
	vt_create_ok(&info, cps, "sub");
	assert_int_equal(info.files, 2);	/* app.c and .gitmodules */
	tu_write(ws, "deps/lib/lib.c", "lib edited in place\n");
	tu_write(ws, "app.c", "app edited\n");
	vt_restore_ok(cps, info.id);
	c = tu_read(ws, "app.c");
	assert_string_equal(c, "app\n");
	free(c);
	c = tu_read(ws, "deps/lib/lib.c");
	assert_string_equal(c, "lib edited in place\n");
	free(c);
	assert_true(vt_exists(ws, "deps/lib/.git"));
	checkpoint_info_release(&info);
	checkpoint_close(cps);
	tu_rmtree(lib);
	tu_rmtree(ws);
}

/* A recorded file replaced by a nested repository drops out instead of lingering. */
static void test_checkpoint_file_replaced_by_nested_repository(void **state)
{
	char *ws = tu_mkdtemp();
	struct checkpoint_info a, b;
	struct checkpoints *cps;
	struct buf sub = BUF_INIT;

	(void)state;
	tu_write(ws, "vendor", "a file for now\n");
	tu_write(ws, "keep.txt", "keep\n");
	cps = vt_open_ok(ws);
	vt_create_ok(&a, cps, "file");
	vt_rm(ws, "vendor");
	path_join(&sub, ws, "vendor");
	assert_int_equal(fsutil_mkdir_p(sub.buf, 0755), 0);
	vt_git(sub.buf, "init", "-q");
	tu_write(sub.buf, "x.c", "x\n");
	vt_create_ok(&b, cps, "repository");
	assert_int_equal(b.files, 1);	/* keep.txt only */
	/* restoring the file would delete the repository: refused */
	assert_int_equal(checkpoint_restore(NULL, cps, a.id), FX_EDENIED);
	assert_true(vt_exists(ws, "vendor/x.c"));
	vt_restore_ok(cps, b.id);
	assert_true(vt_exists(ws, "vendor/.git"));
	checkpoint_info_release(&a);
	checkpoint_info_release(&b);
	checkpoint_close(cps);
	buf_release(&sub);
	tu_rmtree(ws);
}

/* .forgex as a link (planted to redirect the shadow) is refused. */
static void test_checkpoint_refuses_linked_forgex(void **state)
{
	char *ws = tu_mkdtemp(), *elsewhere = tu_mkdtemp();
	struct checkpoints *cps = NULL;

	(void)state;
	vt_symlink(ws, ".forgex", elsewhere);
	assert_int_equal(checkpoint_open(&cps, ws), FX_EDENIED);
	assert_null(cps);
	assert_non_null(strstr(err_last(), "is a symbolic link"));
	assert_false(vt_exists(elsewhere, "checkpoints"));
	tu_rmtree(elsewhere);
	tu_rmtree(ws);
}

/*
 * A checkpoint holding a file that is ignored now: restoring it overwrites
 * the ignored file, whose bytes no checkpoint had. The backup must keep
 * them, so the restore can be undone; and the file must not stay recorded
 * in later checkpoints while it is ignored.
 */
static void test_checkpoint_restore_keeps_overwritten_ignored_file(void **state)
{
	char *ws = tu_mkdtemp(), *c;
	struct checkpoint_restore_result res;
	struct checkpoint_info old, later;
	struct checkpoints *cps;

	(void)state;
	tu_write(ws, ".env", "SECRET=old\n");
	tu_write(ws, "app.c", "app\n");
	cps = vt_open_ok(ws);
	vt_create_ok(&old, cps, "before .env was ignored");
	tu_write(ws, ".gitignore", ".env\n");
	tu_write(ws, ".env", "SECRET=new, in no checkpoint\n");
	assert_int_equal(checkpoint_restore(&res, cps, old.id), 0);
	c = tu_read(ws, ".env");
	assert_string_equal(c, "SECRET=old\n");
	free(c);
	assert_false(vt_exists(ws, ".gitignore"));

	/* undo: the ignored file's newer bytes come back */
	vt_restore_ok(cps, res.backup.id);
	c = tu_read(ws, ".env");
	assert_non_null(c);
	assert_string_equal(c, "SECRET=new, in no checkpoint\n");
	free(c);
	assert_true(vt_exists(ws, ".gitignore"));

	/* and from now on .env is ignored again: not recorded */
	vt_create_ok(&later, cps, "later");
	assert_int_equal(later.files, 2);	/* .gitignore and app.c */
	checkpoint_restore_result_release(&res);
	checkpoint_info_release(&old);
	checkpoint_info_release(&later);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

/*
 * The same with a rule the restore does not touch (.git/info/exclude): the
 * restored file is ignored afterwards and must not be recorded again.
 */
static void test_checkpoint_restored_ignored_file_not_recorded_after(void **state)
{
	char *ws = tu_mkdtemp(), *c;
	struct checkpoint_info old, c1, c2;
	struct checkpoints *cps;

	(void)state;
	vt_git(ws, "init", "-q");
	tu_write(ws, "app.c", "app\n");
	vt_git(ws, "add", "app.c");
	vt_git(ws, "commit", "-q", "-m", "app");
	tu_write(ws, ".env", "SECRET=old\n");
	cps = vt_open_ok(ws);
	vt_create_ok(&old, cps, "with .env");
	assert_int_equal(old.files, 2);
	checkpoint_close(cps);
	tu_write(ws, ".git/info/exclude", ".env\n");
	tu_write(ws, ".env", "SECRET=new\n");
	cps = vt_open_ok(ws);
	vt_create_ok(&c1, cps, "excluded now");
	assert_int_equal(c1.files, 1);
	vt_restore_ok(cps, old.id);
	c = tu_read(ws, ".env");
	assert_non_null(c);
	assert_string_equal(c, "SECRET=old\n");
	free(c);
	vt_create_ok(&c2, cps, "after the restore");
	assert_int_equal(c2.files, 1);	/* .env is ignored: not recorded */
	checkpoint_info_release(&old);
	checkpoint_info_release(&c1);
	checkpoint_info_release(&c2);
	checkpoint_close(cps);
	tu_rmtree(ws);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_checkpoint_restore_git_repo_fidelity),
		cmocka_unit_test(test_checkpoint_non_git_folder_gitignore_rules),
		cmocka_unit_test(test_checkpoint_git_excludes_and_tracked_ignored),
		cmocka_unit_test(test_checkpoint_newly_ignored_file_is_dropped),
		cmocka_unit_test(test_checkpoint_empty_folder),
		cmocka_unit_test(test_checkpoint_unusual_names),
		cmocka_unit_test(test_checkpoint_permission_bits),
		cmocka_unit_test(test_checkpoint_large_file),
		cmocka_unit_test(test_checkpoint_symlink_outside_not_followed),
		cmocka_unit_test(test_checkpoint_restore_is_undoable),
		cmocka_unit_test(test_checkpoint_restore_refuses_to_destroy_ignored),
		cmocka_unit_test(test_checkpoint_racy_same_size_edit),
		cmocka_unit_test(test_checkpoint_attributes_do_not_convert),
		cmocka_unit_test(test_checkpoint_nested_repository_left_alone),
		cmocka_unit_test(test_checkpoint_unreadable_file_fails),
		cmocka_unit_test(test_checkpoint_workspace_inside_repository),
		cmocka_unit_test(test_checkpoint_list_and_resolve),
		cmocka_unit_test(test_checkpoint_create_changes_nothing),
		cmocka_unit_test(test_checkpoint_two_handles),
		cmocka_unit_test(test_checkpoint_recovers_from_interrupted_write),
		cmocka_unit_test(test_checkpoint_user_index_flags_not_trusted),
		cmocka_unit_test(test_checkpoint_linked_worktree),
		cmocka_unit_test(test_checkpoint_submodule_left_alone),
		cmocka_unit_test(test_checkpoint_file_replaced_by_nested_repository),
		cmocka_unit_test(test_checkpoint_refuses_linked_forgex),
		cmocka_unit_test(test_checkpoint_restore_keeps_overwritten_ignored_file),
		cmocka_unit_test(test_checkpoint_restored_ignored_file_not_recorded_after),
	};

	return cmocka_run_group_tests_name("vcs/checkpoint", tests, vt_group_setup, vt_group_teardown);
}
