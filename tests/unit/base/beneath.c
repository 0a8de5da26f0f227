/*
 * Opening beneath a folder without following links (src/base/beneath.c),
 * on real files in a temporary folder, each test twice: with openat2 and
 * with the walk older kernels get.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/beneath.h"
#include "base/buf.h"
#include "base/path.h"
#include "helpers/testutil.h"

static int mode_openat2 = 0, mode_fallback = 1;

static int set_mode(void **state)
{
	int fallback = *(int *)*state;

	beneath_force_fallback(fallback);
	if (!fallback && !beneath_have_openat2()) {
		print_message("skipping the openat2 run: this kernel has no openat2 "
			      "(the fallback run covers it)\n");
		skip();
	}
	return 0;
}

static int reset_mode(void **state)
{
	(void)state;
	beneath_force_fallback(0);
	return 0;
}

struct tree {
	char *top;		/* holds ws/ and outside/ */
	char *ws;
	int fd;			/* of ws/ */
};

/* ws/{a/b/file.txt, a/b/empty/} and outside/secret, with links planted in ws. */
static void tree_make(struct tree *t)
{
	struct buf p = BUF_INIT;

	t->top = tu_mkdtemp();
	tu_write(t->top, "ws/a/b/file.txt", "inside\n");
	tu_write(t->top, "outside/secret", "secret\n");
	path_join(&p, t->top, "ws/a/b/empty");
	assert_int_equal(mkdir(p.buf, 0755), 0);
	buf_reset(&p);
	path_join(&p, t->top, "ws");
	t->ws = buf_detach(&p, NULL);
	buf_reset(&p);
	path_join(&p, t->ws, "escape");
	assert_int_equal(symlink("../outside", p.buf), 0);
	buf_reset(&p);
	path_join(&p, t->ws, "a/inner");
	assert_int_equal(symlink("b", p.buf), 0);
	buf_reset(&p);
	path_join(&p, t->ws, "a/b/link.txt");
	assert_int_equal(symlink("file.txt", p.buf), 0);
	t->fd = open(t->ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(t->fd >= 0);
	buf_release(&p);
}

static void tree_free(struct tree *t)
{
	close(t->fd);
	free(t->ws);
	tu_rmtree(t->top);
}

static char *read_all(int fd)
{
	char b[64];
	ssize_t n = read(fd, b, sizeof(b) - 1);

	assert_true(n >= 0);
	b[n] = '\0';
	close(fd);
	return strdup(b);
}

static void test_beneath_opens_inside(void **state)
{
	struct tree t;
	struct stat st;
	char *s;
	int fd;

	(void)state;
	tree_make(&t);
	fd = beneath_open(t.fd, "a/b/file.txt", O_RDONLY, 0);
	assert_true(fd >= 0);
	s = read_all(fd);
	assert_string_equal(s, "inside\n");
	free(s);
	/* slashes doubled and "." are only spelling */
	fd = beneath_open(t.fd, "a//./b/file.txt", O_RDONLY, 0);
	assert_true(fd >= 0);
	close(fd);
	fd = beneath_open(t.fd, "a/b/empty", O_RDONLY | O_DIRECTORY, 0);
	assert_true(fd >= 0);
	close(fd);
	/* "" is the folder itself */
	fd = beneath_open(t.fd, "", O_RDONLY | O_DIRECTORY, 0);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	close(fd);
	/* creating a file beneath */
	fd = beneath_open(t.fd, "a/b/new.txt", O_WRONLY | O_CREAT | O_EXCL, 0600);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	close(fd);
	tree_free(&t);
}

static void test_beneath_refuses_a_link_escape(void **state)
{
	struct tree t;

	(void)state;
	tree_make(&t);
	/* a link on the way out of the folder */
	errno = 0;
	assert_int_equal(beneath_open(t.fd, "escape/secret", O_RDONLY, 0), -1);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(beneath_link_prefix(t.fd, "escape/secret"), strlen("escape"));
	/* the link itself, as the last component */
	assert_int_equal(beneath_open(t.fd, "escape", O_RDONLY | O_DIRECTORY, 0), -1);
	assert_int_equal(errno, ELOOP);
	/* a link that stays inside is refused as well: no link is followed at all */
	assert_int_equal(beneath_open(t.fd, "a/inner/file.txt", O_RDONLY, 0), -1);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(beneath_link_prefix(t.fd, "a/inner/file.txt"), strlen("a/inner"));
	assert_int_equal(beneath_open(t.fd, "a/b/link.txt", O_RDONLY, 0), -1);
	assert_int_equal(errno, ELOOP);
	assert_int_equal(beneath_link_prefix(t.fd, "a/b/file.txt"), 0);
	tree_free(&t);
}

static void test_beneath_refuses_ways_out(void **state)
{
	struct tree t;

	(void)state;
	tree_make(&t);
	assert_int_equal(beneath_open(t.fd, "../outside/secret", O_RDONLY, 0), -1);
	assert_int_equal(errno, EXDEV);
	assert_int_equal(beneath_open(t.fd, "a/../../outside/secret", O_RDONLY, 0), -1);
	assert_int_equal(errno, EXDEV);
	assert_int_equal(beneath_open(t.fd, "/etc/passwd", O_RDONLY, 0), -1);
	assert_int_equal(errno, EXDEV);
	assert_int_equal(beneath_open(t.fd, "a/missing/file", O_RDONLY, 0), -1);
	assert_int_equal(errno, ENOENT);
	assert_int_equal(beneath_open(t.fd, "a/b/file.txt/x", O_RDONLY, 0), -1);
	assert_int_equal(errno, ENOTDIR);
	tree_free(&t);
}

#define BOTH(fn) \
	cmocka_unit_test_prestate_setup_teardown(fn, set_mode, reset_mode, &mode_openat2), \
	cmocka_unit_test_prestate_setup_teardown(fn, set_mode, reset_mode, &mode_fallback)

int main(void)
{
	const struct CMUnitTest tests[] = {
		BOTH(test_beneath_opens_inside),
		BOTH(test_beneath_refuses_a_link_escape),
		BOTH(test_beneath_refuses_ways_out),
	};

	return cmocka_run_group_tests_name("base/beneath", tests, NULL, NULL);
}
