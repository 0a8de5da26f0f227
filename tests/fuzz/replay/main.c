/*
 * The replay program of a fuzz target: linked with one tests/fuzz/NAME.c
 * and built with the normal compiler (no clang, no libFuzzer), it feeds
 * every file of the target's corpus, tests/fuzz/corpus/NAME/, to
 * LLVMFuzzerTestOneInput() and prints TAP, one test per file, for
 * tests/run.sh. Each input runs in a child of its own, so an abort() (a
 * broken promise of the target) or a crash fails that input and the
 * others still run; one that runs longer than TIMEOUT seconds fails too.
 *
 *   build/tests/fuzz/NAME [FILE|FOLDER...]
 *
 * Without arguments the corpus is found under $FORGEX_TOP (else the
 * current folder); NAME is the program's own name.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/strvec.h"

/* An input that takes longer has run away (a failure, as under libFuzzer). */
#define TIMEOUT 30

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Add `path` to `files`: the file itself, or the files of a folder, sorted. */
static void add_inputs(struct strvec *files, const char *path)
{
	struct strvec here = STRVEC_INIT;
	struct dirent *e;
	struct stat st;
	DIR *d;

	if (stat(path, &st) < 0)
		die("%s: %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode)) {
		strvec_push(files, path);
		return;
	}
	d = opendir(path);
	if (!d)
		die("%s: %s", path, strerror(errno));
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			strvec_pushf(&here, "%s/%s", path, e->d_name);
	closedir(d);
	if (here.nr)
		qsort(here.v, here.nr, sizeof(*here.v), by_name);
	strvec_pushv(files, (const char *const *)here.v);
	strvec_clear(&here);
}

/* Run one input in a child; 0 when it returned, else the wait status. */
static int replay(const char *file)
{
	struct buf in = BUF_INIT;
	pid_t pid;
	int st;

	if (fsutil_read_file(&in, file, 0))
		die("%s", err_last());
	fflush(stdout);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		alarm(TIMEOUT);
		LLVMFuzzerTestOneInput((const uint8_t *)in.buf, in.len);
		exit(0);	/* with the target's atexit() clean-up (tool_args' workspace) */
	}
	buf_release(&in);
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid: %s", strerror(errno));
	return WIFEXITED(st) && !WEXITSTATUS(st) ? 0 : st ? st : -1;
}

int main(int argc, char **argv)
{
	struct strvec files = STRVEC_INIT;
	size_t i;
	int failed = 0;

	if (argc > 1) {
		for (i = 1; i < (size_t)argc; i++)
			add_inputs(&files, argv[i]);
	} else {
		const char *top = getenv("FORGEX_TOP"), *name = strrchr(argv[0], '/');
		char *dir = xstrfmt("%s/tests/fuzz/corpus/%s", top && *top ? top : ".",
				    name ? name + 1 : argv[0]);

		add_inputs(&files, dir);
		free(dir);
	}
	printf("1..%zu\n", files.nr);
	for (i = 0; i < files.nr; i++) {
		const char *shown = strstr(files.v[i], "/corpus/");
		int st = replay(files.v[i]);

		shown = shown ? shown + strlen("/corpus/") : files.v[i];
		if (!st) {
			printf("ok %zu - %s\n", i + 1, shown);
		} else {
			failed = 1;
			if (WIFSIGNALED(st))
				printf("not ok %zu - %s (signal %d)\n", i + 1, shown, WTERMSIG(st));
			else
				printf("not ok %zu - %s (exit %d)\n", i + 1, shown, WEXITSTATUS(st));
		}
	}
	strvec_clear(&files);
	return failed;
}
