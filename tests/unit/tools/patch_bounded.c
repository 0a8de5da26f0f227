/*
 * apply_patch keeps each file it replaces or deletes, to undo the patch
 * with if a later write fails: a hard link beside it, or, when no link can
 * be made, its bytes in memory. A command controls both the size (a
 * sparse file costs it nothing) and whether a link can be made (a file
 * already at the file system's link limit, EMLINK): the copy in memory is
 * bounded by the bytes the tools load, and a larger file is refused with
 * its size, in bounded memory (the tool runs in a child whose peak RSS,
 * wait4's ru_maxrss, is asserted). Skipped, saying so, on a file system
 * without a link limit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit/tools/common.h"

#if defined(__SANITIZE_ADDRESS__)
#define RSS_BOUND_KIB (512 * 1024)	/* AddressSanitizer's own shadow and quarantine */
#else
#define RSS_BOUND_KIB (64 * 1024)
#endif

#define LINKS_TRIED 70000

#define DELETE_BIG "*** Begin Patch\n*** Delete File: big.bin\n*** End Patch\n"

/* Link `rel` from links/N until the file system says EMLINK; 0 when it never does. */
static int saturate_links(struct tt *t, const char *rel)
{
	char *target = xstrdup(tt_path(t, rel));
	char *dir = xstrdup(tt_path(t, "links"));
	int i, full = 0;

	assert_int_equal(mkdir(dir, 0755), 0);
	for (i = 0; i < LINKS_TRIED && !full; i++) {
		char name[4200];

		snprintf(name, sizeof(name), "%s/%d", dir, i);
		if (link(target, name) < 0) {
			if (errno != EMLINK)
				fail_msg("link %s: %s", name, strerror(errno));
			full = 1;
		}
	}
	free(target);
	free(dir);
	return full;
}

/* The patch `text` in a child: peak RSS (KiB), status (a refusal is a result), result in `out`. */
static int patch_in_child(struct tt *t, const char *text, long *rss, struct buf *out)
{
	struct rusage ru;
	int p[2], status;
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int ret;

		close(p[0]);
		ret = tt_callj(t, tt_builder(), "apply_patch", json_pack("{s:s}", "input", text));
		fsutil_write_all(p[1], t->out.buf, t->out.len);
		_exit(ret < 0 ? 1 : 0);
	}
	close(p[1]);
	buf_init(out, 0);
	fsutil_read_fd(out, p[0], 1 << 20);
	close(p[0]);
	assert_int_equal(wait4(pid, &status, 0, &ru), pid);
	assert_true(WIFEXITED(status));
	*rss = ru.ru_maxrss;
	return WEXITSTATUS(status);
}

/*
 * A 2 GiB sparse file that cannot be linked: the patch that deletes it is
 * refused with its size and the bound, without reading it (before, the
 * tool read all 2 GiB into memory), and the file is still there.
 */
static void test_patch_refuses_an_unlinkable_large_file(void **state)
{
	struct tt t;
	struct buf out;
	struct stat st;
	long rss;

	(void)state;
	tt_setup(&t);
	tu_sh(t.ws, "truncate -s 2G big.bin");
	if (!saturate_links(&t, "big.bin")) {
		tt_teardown(&t);
		print_message("SKIP: no link limit on this file system\n");
		skip();
	}
	assert_int_equal(patch_in_child(&t, DELETE_BIG, &rss, &out), 0);
	fprintf(stderr, "apply_patch over an unlinkable 2 GiB sparse file: %ld KiB peak RSS\n",
		rss);
	assert_true(rss < RSS_BOUND_KIB);
	assert_string_equal(out.buf, "error: 'big.bin' is 2147483648 bytes: it cannot be linked "
			    "to keep a copy to undo the patch with, and a copy in memory is limited "
			    "to the 16777216 bytes the tools load; the patch was undone, no file was "
			    "changed.\n");
	assert_int_equal(stat(tt_path(&t, "big.bin"), &st), 0);
	assert_int_equal(st.st_size, (off_t)2 << 30);
	buf_release(&out);
	tt_teardown(&t);
}

/* A small file that cannot be linked is kept in memory, and the patch applies. */
static void test_patch_keeps_an_unlinkable_small_file_in_memory(void **state)
{
	struct tt t;
	struct buf out;
	struct stat st;
	long rss;

	(void)state;
	tt_setup(&t);
	tu_write(t.ws, "big.bin", "small\n");
	if (!saturate_links(&t, "big.bin")) {
		tt_teardown(&t);
		print_message("SKIP: no link limit on this file system\n");
		skip();
	}
	if (patch_in_child(&t, DELETE_BIG, &rss, &out) || strncmp(out.buf, "applied the patch", 17))
		fail_msg("apply_patch: %s", out.buf);
	assert_int_equal(stat(tt_path(&t, "big.bin"), &st), -1);
	assert_int_equal(errno, ENOENT);
	buf_release(&out);
	tt_teardown(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_patch_refuses_an_unlinkable_large_file),
		cmocka_unit_test(test_patch_keeps_an_unlinkable_small_file_in_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
