/* medtime RUNS CMD [ARGS...]: median and p90 wall time of running CMD, output discarded. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	int runs, i, devnull;
	double *t;
	char label[256] = "";

	if (argc < 3) {
		fprintf(stderr, "usage: medtime RUNS CMD [ARGS...]\n");
		return 2;
	}
	runs = atoi(argv[1]);
	if (runs < 1)
		runs = 1;
	t = calloc((size_t)runs, sizeof(*t));
	devnull = open("/dev/null", O_WRONLY);
	for (i = 0; i < runs; i++) {
		struct timespec a, b;
		pid_t pid;
		int st;

		clock_gettime(CLOCK_MONOTONIC, &a);
		pid = fork();
		if (pid == 0) {
			dup2(devnull, 1);
			dup2(devnull, 2);
			execvp(argv[2], argv + 2);
			_exit(127);
		}
		waitpid(pid, &st, 0);
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (!WIFEXITED(st) || WEXITSTATUS(st) == 127) {
			fprintf(stderr, "medtime: %s failed\n", argv[2]);
			return 1;
		}
		t[i] = (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6;
	}
	qsort(t, (size_t)runs, sizeof(*t), cmp);
	for (i = 2; i < argc; i++) {
		const char *base = strrchr(argv[i], '/');

		snprintf(label + strlen(label), sizeof(label) - strlen(label), "%s%s",
			 i > 2 ? " " : "", i == 2 && base ? base + 1 : argv[i]);
	}
	printf("%-34s %12.3f %12.3f\n", label, t[runs / 2], t[runs * 9 / 10]);
	free(t);
	return 0;
}
