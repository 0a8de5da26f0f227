/*
 * The search tool reads a file only up to the first read that brings a
 * NUL byte (ripgrep searches nothing past the fill holding it): a sparse
 * file a command made costs one read, not its size. Each search runs in a
 * child whose peak RSS (wait4's ru_maxrss) is asserted; the results are
 * those of a whole read (the lines before the NUL are found, none after).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/search.h"
#include "unit/tools/common.h"

#if defined(__SANITIZE_ADDRESS__)
#define RSS_BOUND_KIB (512 * 1024)	/* AddressSanitizer's own shadow and quarantine */
#else
#define RSS_BOUND_KIB (64 * 1024)
#endif

#define MIB ((off_t)1 << 20)

/* search PATTERN in a child: its peak RSS (KiB); the result in `out`. */
static void search_in_child(struct tt *t, const char *pattern, long *rss, struct buf *out)
{
	struct rusage ru;
	int p[2], status;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(p[0]);
		tt_callj(t, permissions_for_role("architect"), "search",
			 json_pack("{s:s}", "pattern", pattern));
		fsutil_write_all(p[1], t->out.buf, t->out.len);
		_exit(0);
	}
	close(p[1]);
	buf_init(out, 0);
	fsutil_read_fd(out, p[0], 1 << 20);
	close(p[0]);
	assert_int_equal(wait4(pid, &status, 0, &ru), pid);
	assert_true(WIFEXITED(status));
	*rss = ru.ru_maxrss;
}

/*
 * `rel` of `size` bytes: the line `text`, 200 KiB of lines (so that
 * ripgrep's first fills hold no NUL and are searched), then a hole.
 */
static void sparse_after(struct tt *t, const char *rel, const char *text, off_t size)
{
	int fd = open(tt_path(t, rel), O_WRONLY | O_CREAT | O_TRUNC, 0644);
	struct buf b = BUF_INIT;

	assert_true(fd >= 0);
	buf_addstr(&b, text);
	while (b.len < 200000)
		buf_addstr(&b, "filler line\n");
	assert_int_equal(fsutil_write_all(fd, b.buf, b.len), 0);
	assert_int_equal(ftruncate(fd, size), 0);
	close(fd);
	buf_release(&b);
}

/*
 * Eight sparse files of 250 MiB (under the 256 MiB a file may have to be
 * searched), each some lines then zeros, and a 2 GiB one: the search holds
 * none of them (before, each worker read each file whole: 250 MiB apiece),
 * finds each line and counts the eight as binary; the 2 GiB one is skipped
 * for its size, as before.
 */
static void test_search_sparse_files_bounded(void **state)
{
	struct tt t;
	struct buf out;
	long rss;
	int i;

	(void)state;
	tt_setup(&t);
	for (i = 0; i < 8; i++) {
		char name[32], line[32];

		snprintf(name, sizeof(name), "sparse%d.bin", i);
		snprintf(line, sizeof(line), "needle %d\n", i);
		sparse_after(&t, name, line, 250 * MIB);
	}
	tu_sh(t.ws, "truncate -s 2G huge.bin");
	search_in_child(&t, "needle", &rss, &out);
	fprintf(stderr, "search of eight 250 MiB sparse files and a 2 GiB one: %ld KiB peak RSS\n",
		rss);
	assert_true(rss < RSS_BOUND_KIB);
	assert_string_equal(out.buf,
			    "sparse0.bin:1:needle 0\nsparse1.bin:1:needle 1\nsparse2.bin:1:needle 2\n"
			    "sparse3.bin:1:needle 3\nsparse4.bin:1:needle 4\nsparse5.bin:1:needle 5\n"
			    "sparse6.bin:1:needle 6\nsparse7.bin:1:needle 7\n"
			    "[forgex: not searched: 8 binary files (or the part after a NUL byte); "
			    "1 larger than 256 MiB]\n");
	buf_release(&out);
	tt_teardown(&t);
}

/*
 * A NUL past the first reads (2.5 MiB of lines, then a NUL, then more):
 * what is read stops at the read holding the NUL, and the lines before it
 * are found, none after, as a whole read gave.
 */
static void test_search_nul_after_several_reads(void **state)
{
	struct tt t;
	struct buf text = BUF_INIT, out;
	long rss;

	(void)state;
	tt_setup(&t);
	buf_addstr(&text, "needle first\n");
	while (text.len < (size_t)(5 * MIB / 2))
		buf_addstr(&text, "filler line\n");
	buf_addstr(&text, "needle before the nul\n");
	while (text.len < (size_t)(5 * MIB / 2) + 200000)
		buf_addstr(&text, "filler line\n");
	buf_add(&text, "\0", 1);
	buf_addstr(&text, "needle after the nul\n");
	{
		int fd = open(tt_path(&t, "late.dat"), O_WRONLY | O_CREAT | O_TRUNC, 0644);

		assert_true(fd >= 0);
		assert_int_equal(fsutil_write_all(fd, text.buf, text.len), 0);
		close(fd);
	}
	search_in_child(&t, "needle", &rss, &out);
	assert_contains(out.buf, "late.dat:1:needle first\n");
	assert_contains(out.buf, ":needle before the nul\n");
	assert_not_contains(out.buf, "after the nul");
	assert_contains(out.buf, "not searched: 1 binary file");
	buf_release(&out);
	buf_release(&text);
	tt_teardown(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_search_sparse_files_bounded),
		cmocka_unit_test(test_search_nul_after_several_reads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
