/*
 * The copy a journal saves before a tool writes over a file is made in
 * bounded memory whatever the file's size (a command controls it: a
 * sparse file costs it nothing), and a file larger than [checkpoints]
 * max_file_bytes is not changed, saying so; the journal's look at what a
 * path is now (vcs_hash_path()) streams too. Each runs in a child whose
 * peak resident size (wait4's ru_maxrss) is asserted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <git2.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "helpers/testutil.h"
#include "pipeline/journal.h"
#include "unit/vcs/vcs_testutil.h"
#include "vcs/checkpoint.h"
#include "vcs/paths.h"

#if defined(__SANITIZE_ADDRESS__)
#define RSS_BOUND_KIB (512 * 1024)	/* AddressSanitizer's own shadow and quarantine */
#else
#define RSS_BOUND_KIB (64 * 1024)
#endif

#define MIB ((off_t)1 << 20)

struct fx {
	char *ws, *run;
	struct checkpoints *cps;
	struct journal j;
};

static void fx_open(struct fx *f)
{
	f->ws = vt_make_repo();
	tu_write(f->ws, ".forgex/runs/R/events.jsonl", "");
	f->run = xstrfmt("%s/.forgex/runs/R", f->ws);
	assert_int_equal(checkpoint_open(&f->cps, f->ws), 0);
	f->j = (struct journal)JOURNAL_INIT;
	assert_int_equal(journal_open(&f->j, f->cps, f->run, 1), 0);
}

static void fx_close(struct fx *f)
{
	journal_release(&f->j);
	checkpoint_close(f->cps);
	free(f->run);
	tu_rmtree(f->ws);
}

/* A sparse file `rel` of `size` bytes with a mark at its start, middle and end. */
static void make_sparse(const char *ws, const char *rel, off_t size)
{
	char *path = xstrfmt("%s/%s", ws, rel);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, size), 0);
	assert_int_equal(pwrite(fd, "start", 5, 0), 5);
	assert_int_equal(pwrite(fd, "middle", 6, size / 2), 6);
	assert_int_equal(pwrite(fd, "end", 3, size - 3), 3);
	close(fd);
	free(path);
}

/*
 * journal_before_change() on `rel` in a child; its peak RSS (KiB) in
 * `*rss`, the error it gave (or "") in `msg` (`msg_size` bytes). Returns
 * its result code.
 */
static int before_change_in_child(struct fx *f, const char *rel, long *rss, char *msg,
				  size_t msg_size)
{
	struct rusage ru;
	int pipefd[2], status, dfd;
	ssize_t n;
	pid_t pid;

	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int ret;
		const char *m;

		close(pipefd[0]);
		dfd = open(f->ws, O_RDONLY | O_DIRECTORY);
		ret = dfd < 0 ? -1 : journal_before_change(&f->j, dfd, rel, rel);
		m = ret < 0 ? err_last() : "";
		if (write(pipefd[1], m, strlen(m)) < 0)
			_exit(120);
		_exit(ret < 0 ? -ret : 0);
	}
	close(pipefd[1]);
	n = read(pipefd[0], msg, msg_size - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(pipefd[0]);
	assert_int_equal(wait4(pid, &status, 0, &ru), pid);
	assert_true(WIFEXITED(status));
	*rss = ru.ru_maxrss;
	return -WEXITSTATUS(status);
}

/*
 * A file of 160 MiB, sparse with three marks, is saved before a tool
 * changes it: the child never holds it (before the copy streamed, its
 * peak was the file's size and more), the copy is the same bytes (same
 * blob id) and is itself sparse, and its record names it.
 */
static void test_journal_saves_a_large_file_in_bounded_memory(void **state)
{
	struct fx f;
	struct journal_outcome o;
	struct stat st;
	char msg[512], want[VCS_OID_HEX], got[VCS_OID_HEX];
	char *saved, *big, *recs, *rec;
	long rss;
	int fd;

	(void)state;
	fx_open(&f);
	make_sparse(f.ws, "big.bin", 160 * MIB);
	assert_int_equal(before_change_in_child(&f, "big.bin", &rss, msg, sizeof(msg)), 0);
	fprintf(stderr, "journal save of a 160 MiB sparse file: %ld KiB peak RSS\n", rss);
	assert_true(rss < RSS_BOUND_KIB);

	/* the copy is the file */
	saved = xstrfmt("%s/saved/1", f.run);
	assert_int_equal(stat(saved, &st), 0);
	assert_int_equal(st.st_size, 160 * MIB);
	assert_true(st.st_blocks * 512 < 16 * MIB);	/* its holes stayed holes */
	fd = open(saved, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(vcs_hash_fd(got, fd), 0);
	close(fd);
	big = xstrfmt("%s/big.bin", f.ws);
	fd = open(big, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(vcs_hash_fd(want, fd), 0);
	close(fd);
	assert_string_equal(got, want);
	/* the journal's record names the copy with that id */
	recs = tu_read(f.run, "changes.jsonl");
	assert_non_null(recs);
	rec = xstrfmt("{\"path\":\"big.bin\",\"before\":{\"kind\":\"saved\","
		      "\"file\":\"saved/1\",\"mode\":33188,\"oid\":\"%s\"}}", want);
	if (!strstr(recs, rec))
		fail_msg("changes.jsonl:\n%s", recs);

	/* and an undo of the tool's write puts those bytes back (the child's record, read again) */
	journal_release(&f.j);
	assert_int_equal(journal_open(&f.j, f.cps, f.run, 1), 0);
	fd = open(big, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "the tool's\n", 11), 11);
	close(fd);
	journal_after_change(&f.j, "big.bin");
	journal_outcome_init(&o);
	assert_int_equal(journal_revert(&f.j, 0, &o), 0);
	assert_int_equal(o.reverted.nr, 1);
	fd = open(big, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(vcs_hash_fd(got, fd), 0);
	close(fd);
	assert_string_equal(got, want);
	journal_outcome_release(&o);
	free(rec);
	free(recs);
	free(big);
	free(saved);
	fx_close(&f);
}

/*
 * A sandboxed `truncate -s 2G` over a file a tool then writes: over the
 * default bound, so nothing is read (bounded memory), the tool's change is
 * refused with the sizes, and no copy is made.
 */
static void test_journal_refuses_a_file_over_the_bound(void **state)
{
	struct fx f;
	struct stat st;
	char msg[512];
	char *saved;
	long rss;

	(void)state;
	fx_open(&f);
	tu_write(f.ws, "big.bin", "small for now\n");
	tu_sh(f.ws, "truncate -s 2G big.bin");
	assert_int_equal(before_change_in_child(&f, "big.bin", &rss, msg, sizeof(msg)),
			 FX_ELIMIT);
	fprintf(stderr, "journal refusal of a 2 GiB sparse file: %ld KiB peak RSS\n", rss);
	assert_true(rss < RSS_BOUND_KIB);
	assert_string_equal(msg, "'big.bin' is 2147483648 bytes, larger than [checkpoints] "
			    "max_file_bytes (268435456): too large to save a copy before changing "
			    "it, so it is not changed");
	saved = xstrfmt("%s/saved/1", f.run);
	assert_int_equal(stat(saved, &st), -1);
	assert_int_equal(errno, ENOENT);
	free(saved);
	fx_close(&f);
}

/* vcs_hash_path() of `rel` in a child: its peak RSS (KiB); the id in `oid`. Returns its code. */
static int hash_in_child(struct fx *f, const char *rel, int store, long *rss,
			 char oid[VCS_OID_HEX])
{
	struct rusage ru;
	int pipefd[2], status;
	ssize_t n;
	pid_t pid;

	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		char got[VCS_OID_HEX] = "";
		int ret = vcs_hash_path(got, NULL, f->cps, rel, store);

		close(pipefd[0]);
		if (write(pipefd[1], got, strlen(got)) < 0)
			_exit(120);
		_exit(ret < 0 ? -ret : 0);
	}
	close(pipefd[1]);
	n = read(pipefd[0], oid, VCS_OID_HEX - 1);
	oid[n > 0 ? n : 0] = '\0';
	close(pipefd[0]);
	assert_int_equal(wait4(pid, &status, 0, &ru), pid);
	assert_true(WIFEXITED(status));
	*rss = ru.ru_maxrss;
	return -WEXITSTATUS(status);
}

/*
 * What a journal asks of a path a command may have grown (undo's conflict
 * check, the run's own version kept): its blob id, hashed and stored as
 * it is read; before, the file was read whole (up to 1 GiB). Over 1 GiB
 * (a 2 GiB sparse file) it is refused without a read.
 */
static void test_hash_path_streams(void **state)
{
	struct fx f;
	struct tu_result r;
	char want[VCS_OID_HEX], got[VCS_OID_HEX];
	char *big, *cmd;
	long rss;
	int fd;

	(void)state;
	fx_open(&f);
	make_sparse(f.ws, "big.bin", 160 * MIB);
	big = xstrfmt("%s/big.bin", f.ws);
	fd = open(big, O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(vcs_hash_fd(want, fd), 0);
	close(fd);
	assert_int_equal(hash_in_child(&f, "big.bin", 0, &rss, got), 0);
	fprintf(stderr, "hash of a 160 MiB sparse file: %ld KiB peak RSS\n", rss);
	assert_true(rss < RSS_BOUND_KIB);
	assert_string_equal(got, want);
	assert_int_equal(hash_in_child(&f, "big.bin", 1, &rss, got), 0);
	fprintf(stderr, "hash and store of a 160 MiB sparse file: %ld KiB peak RSS\n", rss);
	assert_true(rss < RSS_BOUND_KIB);
	assert_string_equal(got, want);
	/* stored: the shadow holds that blob, of that size */
	cmd = xstrfmt("git --git-dir='%s/.forgex/checkpoints' cat-file -s %s", f.ws, want);
	tu_run(&r, (const char *const[]){ "sh", "-c", cmd, NULL }, f.ws, NULL, NULL);
	assert_int_equal(r.status, 0);
	assert_string_equal(r.out.buf, "167772160\n");
	tu_result_release(&r);

	/* with the bound at 128 MiB it is not stored, and says so */
	checkpoint_set_max_file_bytes(f.cps, (uint64_t)128 << 20);
	assert_int_equal(hash_in_child(&f, "big.bin", 1, &rss, got), FX_ELIMIT);
	assert_true(rss < RSS_BOUND_KIB);
	checkpoint_set_max_file_bytes(f.cps, CHECKPOINT_MAX_FILE_BYTES);

	tu_sh(f.ws, "truncate -s 2G big.bin");
	assert_int_equal(hash_in_child(&f, "big.bin", 0, &rss, got), FX_ELIMIT);
	assert_true(rss < RSS_BOUND_KIB);
	free(cmd);
	free(big);
	fx_close(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_journal_saves_a_large_file_in_bounded_memory),
		cmocka_unit_test(test_journal_refuses_a_file_over_the_bound),
		cmocka_unit_test(test_hash_path_streams),
	};

	return cmocka_run_group_tests(tests, vt_group_setup, vt_group_teardown);
}
