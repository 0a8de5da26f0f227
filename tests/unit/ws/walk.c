/*
 * The tree walker (src/ws/walk.c) on real files in a temporary folder:
 * what it reports and enters with each option, that no symbolic link is
 * followed out of the tree, that .git is never reported, that ignore
 * rules are honoured, in order, from threads, and 100 folders deep.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/path.h"
#include "base/strvec.h"
#include "helpers/testutil.h"
#include "ws/walk.h"

/* What a walk saw: one line per entry, "path" + "/" for folders, " (ignored)" when so. */
struct seen {
	pthread_mutex_t lock;
	struct strvec lines;
	struct strvec left;		/* folders left, in order */
	int enter_ignored;		/* enter ignored folders too */
	unsigned max_worker;
};

static int visit(void *arg, const struct ws_entry *e)
{
	struct seen *s = arg;
	struct buf b = BUF_INIT;

	buf_add(&b, e->path, e->len);
	if (e->type == DT_DIR)
		buf_addch(&b, '/');
	if (e->type == DT_LNK)
		buf_addstr(&b, "@");
	if (e->ignored)
		buf_addstr(&b, " (ignored)");
	assert_string_equal(e->name, strrchr(e->path, '/') ? strrchr(e->path, '/') + 1 : e->path);
	pthread_mutex_lock(&s->lock);
	strvec_push(&s->lines, b.buf);
	if (e->worker > s->max_worker)
		s->max_worker = e->worker;
	pthread_mutex_unlock(&s->lock);
	buf_release(&b);
	if (e->type == DT_DIR && (!e->ignored || s->enter_ignored))
		return WS_WALK_ENTER;
	return WS_WALK_CONTINUE;
}

static int leave(void *arg, const struct ws_entry *e)
{
	struct seen *s = arg;

	assert_non_null(e->st);
	assert_true(S_ISDIR(e->st->st_mode));
	strvec_push(&s->left, e->path);
	return WS_WALK_CONTINUE;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines, sorted (unless `in_order`), joined with ",". */
static char *joined(struct strvec *v, int in_order)
{
	struct buf b = BUF_INIT;
	size_t i;

	if (!in_order && v->nr)
		qsort(v->v, v->nr, sizeof(*v->v), cmp_str);
	for (i = 0; i < v->nr; i++) {
		if (i)
			buf_addch(&b, ',');
		buf_addstr(&b, v->v[i]);
	}
	return buf_detach(&b, NULL);
}

struct fixture {
	char *top;		/* holds ws/ and outside/ */
	char *ws;
	int fd;
};

static void link_at(const char *dir, const char *rel, const char *target)
{
	struct buf p = BUF_INIT;

	path_join(&p, dir, rel);
	assert_int_equal(symlink(target, p.buf), 0);
	buf_release(&p);
}

/*
 * ws/
 *   .gitignore        "*.log\nbuild/\n!keep.log\n"
 *   .git/config       never reported
 *   .GIT/x            reported unless GIT_ANYCASE
 *   .forgex/run       left out with SKIP_FORGEX
 *   a.c  b.log  keep.log  z.txt
 *   build/out.o
 *   src/.gitignore    "gen.c\n"   src/main.c  src/gen.c
 *   nested/.git/HEAD  nested/code.c   (a nested repository)
 *   escape -> ../outside   inner -> src   file-link -> a.c
 * outside/secret.c
 */
static void fixture_make(struct fixture *f)
{
	struct buf p = BUF_INIT;

	f->top = tu_mkdtemp();
	path_join(&p, f->top, "ws");
	f->ws = buf_detach(&p, NULL);
	tu_write(f->ws, ".gitignore", "*.log\nbuild/\n!keep.log\n");
	tu_write(f->ws, ".git/config", "[core]\n");
	tu_write(f->ws, ".GIT/x", "x");
	tu_write(f->ws, ".forgex/run", "r");
	tu_write(f->ws, "a.c", "a");
	tu_write(f->ws, "b.log", "b");
	tu_write(f->ws, "keep.log", "k");
	tu_write(f->ws, "z.txt", "z");
	tu_write(f->ws, "build/out.o", "o");
	tu_write(f->ws, "src/.gitignore", "gen.c\n");
	tu_write(f->ws, "src/main.c", "m");
	tu_write(f->ws, "src/gen.c", "g");
	tu_write(f->ws, "nested/.git/HEAD", "ref: refs/heads/main\n");
	tu_write(f->ws, "nested/code.c", "c");
	tu_write(f->top, "outside/secret.c", "s");
	link_at(f->ws, "escape", "../outside");
	link_at(f->ws, "inner", "src");
	link_at(f->ws, "file-link", "a.c");
	f->fd = open(f->ws, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(f->fd >= 0);
}

static void fixture_free(struct fixture *f)
{
	close(f->fd);
	free(f->ws);
	tu_rmtree(f->top);
}

/* Walk `rel` of the fixture with `flags` and `threads`; the sorted lines. */
static char *walk(struct fixture *f, const char *rel, unsigned flags, unsigned threads,
		  int enter_ignored, const struct ignore_chain *chain)
{
	struct seen s;
	struct ws_walk w = WS_WALK_INIT;
	char *out;

	memset(&s, 0, sizeof(s));
	pthread_mutex_init(&s.lock, NULL);
	strvec_init(&s.lines);
	strvec_init(&s.left);
	s.enter_ignored = enter_ignored;
	w.flags = flags;
	w.visit = visit;
	w.arg = &s;
	w.chain = chain;
	w.threads = threads;
	if (ws_walk_run(&w, f->fd, rel) < 0)
		fail_msg("walk: %s", err_last());
	out = joined(&s.lines, 0);
	strvec_clear(&s.lines);
	strvec_clear(&s.left);
	pthread_mutex_destroy(&s.lock);
	return out;
}

static void test_walk_plain(void **state)
{
	struct fixture f;
	char *got;

	(void)state;
	fixture_make(&f);
	/* no option: every folder and file, hidden ones too; no link, no .git, no ignores */
	got = walk(&f, "", 0, 0, 0, NULL);
	assert_string_equal(got, ".GIT/,.GIT/x,.forgex/,.forgex/run,.gitignore,a.c,b.log,build/,"
			    "build/out.o,keep.log,nested/,nested/code.c,src/,src/.gitignore,"
			    "src/gen.c,src/main.c,z.txt");
	free(got);
	fixture_free(&f);
}

static void test_walk_ignores_and_skips(void **state)
{
	struct fixture f;
	char *got;

	(void)state;
	fixture_make(&f);
	got = walk(&f, "", WS_WALK_IGNORES | WS_WALK_GIT_ANYCASE | WS_WALK_SKIP_FORGEX |
		   WS_WALK_NO_NESTED, 0, 0, NULL);
	/* b.log and build/ excluded, keep.log re-included, src/gen.c by src/.gitignore;
	 * nested/ reported but not entered (a repository of its own) */
	assert_string_equal(got, ".gitignore,a.c,keep.log,nested/,src/,src/.gitignore,src/main.c,"
			    "z.txt");
	free(got);
	/* the same, reporting what is ignored, and entering ignored folders */
	got = walk(&f, "", WS_WALK_IGNORES | WS_WALK_REPORT_IGNORED | WS_WALK_GIT_ANYCASE |
		   WS_WALK_SKIP_FORGEX, 0, 1, NULL);
	assert_string_equal(got, ".gitignore,a.c,b.log (ignored),build/ (ignored),"
			    "build/out.o (ignored),keep.log,nested/,nested/code.c,src/,"
			    "src/.gitignore,src/gen.c (ignored),src/main.c,z.txt");
	free(got);
	fixture_free(&f);
}

/* Rules from above the first folder (info/exclude, the parents' .gitignore) come in `chain`. */
static void test_walk_chain_and_subfolder(void **state)
{
	struct fixture f;
	struct ignore_rules *r = ignore_rules_parse("", "main.c\n", 7);
	struct ignore_chain top = { r, NULL };
	char *got;

	(void)state;
	fixture_make(&f);
	got = walk(&f, "src", WS_WALK_IGNORES, 0, 0, &top);
	assert_string_equal(got, "src/.gitignore");
	free(got);
	ignore_rules_free(r);
	/* a link to a folder is no folder to start from */
	assert_int_equal(ws_walk_run(&(struct ws_walk)WS_WALK_INIT, f.fd, "inner"), FX_EDENIED);
	assert_int_equal(ws_walk_run(&(struct ws_walk)WS_WALK_INIT, f.fd, "a.c"), FX_ENOTFOUND);
	fixture_free(&f);
}

/* Links are reported only when asked, and never followed (escape/ is not read). */
static void test_walk_links_never_followed(void **state)
{
	struct fixture f;
	char *got;

	(void)state;
	fixture_make(&f);
	got = walk(&f, "", WS_WALK_LINKS | WS_WALK_STAT | WS_WALK_IGNORES | WS_WALK_SKIP_FORGEX |
		   WS_WALK_GIT_ANYCASE, 0, 0, NULL);
	assert_string_equal(got, ".gitignore,a.c,escape@,file-link@,inner@,keep.log,nested/,"
			    "nested/code.c,src/,src/.gitignore,src/main.c,z.txt");
	assert_null(strstr(got, "secret"));
	free(got);
	fixture_free(&f);
}

/* SORTED: paths in bytewise order, a folder compared as "name/". */
static void test_walk_sorted(void **state)
{
	char *ws = tu_mkdtemp();
	struct seen s;
	struct ws_walk w = WS_WALK_INIT;
	char *got;
	int fd;

	(void)state;
	tu_write(ws, "a-b", "x");
	tu_write(ws, "a/c", "x");
	tu_write(ws, "a/b/d", "x");
	tu_write(ws, "a.c", "x");
	tu_write(ws, "B", "x");
	fd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	memset(&s, 0, sizeof(s));
	pthread_mutex_init(&s.lock, NULL);
	strvec_init(&s.lines);
	strvec_init(&s.left);
	w.flags = WS_WALK_SORTED | WS_WALK_STAT;
	w.visit = visit;
	w.leave = leave;
	w.arg = &s;
	assert_int_equal(ws_walk_run(&w, fd, ""), 0);
	got = joined(&s.lines, 1);
	/* "a-b" < "a.c" < "a/" ('-' 0x2d, '.' 0x2e, '/' 0x2f) */
	assert_string_equal(got, "B,a-b,a.c,a/,a/b/,a/b/d,a/c");
	free(got);
	got = joined(&s.left, 1);
	assert_string_equal(got, "a/b,a");
	free(got);
	strvec_clear(&s.lines);
	strvec_clear(&s.left);
	pthread_mutex_destroy(&s.lock);
	close(fd);
	tu_rmtree(ws);
}

/* Threads: the same entries as one thread sees, from several workers. */
static void test_walk_threads(void **state)
{
	struct fixture f;
	struct buf rel = BUF_INIT;
	char *one, *four;
	int i;

	(void)state;
	fixture_make(&f);
	for (i = 0; i < 40; i++) {
		buf_reset(&rel);
		buf_addf(&rel, "many/d%02d/f.c", i);
		tu_write(f.ws, rel.buf, "x");
	}
	one = walk(&f, "", WS_WALK_IGNORES | WS_WALK_GIT_ANYCASE, 1, 0, NULL);
	four = walk(&f, "", WS_WALK_IGNORES | WS_WALK_GIT_ANYCASE, 4, 0, NULL);
	assert_string_equal(one, four);
	assert_non_null(strstr(four, "many/d39/f.c"));
	assert_null(strstr(four, "b.log"));
	free(one);
	free(four);
	buf_release(&rel);
	fixture_free(&f);
}

/* A visitor's error ends the walk and is returned. */
static int stop_at_z(void *arg, const struct ws_entry *e)
{
	(void)arg;
	if (!strcmp(e->name, "z.txt"))
		return err_set(FX_ELIMIT, "stop");
	return e->type == DT_DIR ? WS_WALK_ENTER : WS_WALK_CONTINUE;
}

static void test_walk_stops_and_strict(void **state)
{
	struct fixture f;
	struct ws_walk w = WS_WALK_INIT;
	struct buf p = BUF_INIT;

	(void)state;
	fixture_make(&f);
	w.visit = stop_at_z;
	assert_int_equal(ws_walk_run(&w, f.fd, ""), FX_ELIMIT);
	w.threads = 3;
	assert_int_equal(ws_walk_run(&w, f.fd, ""), FX_ELIMIT);
	/* a folder that cannot be read: counted, or the end of a STRICT walk */
	if (geteuid() != 0) {
		path_join(&p, f.ws, "src");
		assert_int_equal(chmod(p.buf, 0), 0);
		w.visit = visit;
		w.threads = 0;
		{
			struct seen s;

			memset(&s, 0, sizeof(s));
			pthread_mutex_init(&s.lock, NULL);
			strvec_init(&s.lines);
			w.arg = &s;
			assert_int_equal(ws_walk_run(&w, f.fd, ""), 0);
			assert_int_equal(w.unreadable, 1);
			w.flags = WS_WALK_STRICT;
			assert_int_equal(ws_walk_run(&w, f.fd, ""), FX_EOS);
			assert_non_null(strstr(err_last(), "src"));
			strvec_clear(&s.lines);
			pthread_mutex_destroy(&s.lock);
		}
		assert_int_equal(chmod(p.buf, 0755), 0);
	}
	buf_release(&p);
	fixture_free(&f);
}

/* Deeper than WS_WALK_FD_DEPTH: descriptors are given back and taken again through "..". */
static void test_walk_deep(void **state)
{
	char *ws = tu_mkdtemp();
	struct buf rel = BUF_INIT;
	struct seen s;
	struct ws_walk w = WS_WALK_INIT;
	int fd, i;

	(void)state;
	for (i = 0; i < 100; i++)
		buf_addstr(&rel, "d/");
	buf_addstr(&rel, "leaf.c");
	tu_write(ws, rel.buf, "x");
	tu_write(ws, "d/sibling.c", "x");
	fd = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	memset(&s, 0, sizeof(s));
	pthread_mutex_init(&s.lock, NULL);
	strvec_init(&s.lines);
	strvec_init(&s.left);
	w.flags = WS_WALK_SORTED | WS_WALK_STAT;
	w.visit = visit;
	w.leave = leave;
	w.arg = &s;
	assert_int_equal(ws_walk_run(&w, fd, ""), 0);
	/* 100 folders, the leaf, and the sibling after the deep folder ("d/d/" < "d/s") */
	assert_int_equal(s.lines.nr, 102);
	assert_string_equal(s.lines.v[100], rel.buf);
	assert_string_equal(s.lines.v[101], "d/sibling.c");
	assert_int_equal(s.left.nr, 100);
	strvec_clear(&s.lines);
	strvec_clear(&s.left);
	pthread_mutex_destroy(&s.lock);
	buf_release(&rel);
	close(fd);
	tu_rmtree(ws);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk_plain),
		cmocka_unit_test(test_walk_ignores_and_skips),
		cmocka_unit_test(test_walk_chain_and_subfolder),
		cmocka_unit_test(test_walk_links_never_followed),
		cmocka_unit_test(test_walk_sorted),
		cmocka_unit_test(test_walk_threads),
		cmocka_unit_test(test_walk_stops_and_strict),
		cmocka_unit_test(test_walk_deep),
	};

	return cmocka_run_group_tests_name("ws/walk", tests, NULL, NULL);
}
