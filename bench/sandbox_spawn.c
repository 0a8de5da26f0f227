/*
 * bench/sandbox_spawn: the cost of running /bin/true through the executor
 * (none and native backends) against a plain fork + execve + waitpid, in
 * the same process and run. Prints the median of N runs of each, in ms.
 *
 *   sandbox_spawn [N]        (default 200)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config/config.h"
#include "sandbox/executor.h"
#include "sandbox/sandbox.h"

extern char **environ;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1000.0 + (double)ts.tv_nsec / 1e6;
}

/*
 * CPU time (user + system) of this process and its waited-for descendants
 * so far, in ms: unlike wall time it hardly moves when other programs
 * load the machine (it misses waits in the kernel, such as RCU grace
 * periods, which the wall time shows).
 */
static double cpu_ms(void)
{
	struct rusage a, b;

	getrusage(RUSAGE_SELF, &a);
	getrusage(RUSAGE_CHILDREN, &b);
	return (a.ru_utime.tv_sec + a.ru_stime.tv_sec + b.ru_utime.tv_sec + b.ru_stime.tv_sec) *
	       1000.0 + (a.ru_utime.tv_usec + a.ru_stime.tv_usec + b.ru_utime.tv_usec +
	       b.ru_stime.tv_usec) / 1000.0;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double plain_once(void)
{
	char *const argv[] = { (char *)"/bin/true", NULL };
	double t = now_ms();
	int st;
	pid_t pid = fork();

	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (!pid) {
		execve(argv[0], argv, environ);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid: %s", strerror(errno));
	if (!WIFEXITED(st) || WEXITSTATUS(st))
		die("/bin/true failed");
	return now_ms() - t;
}

static double executor_once(struct executor *ex)
{
	const char *argv[] = { "/bin/true", NULL };
	struct exec_request req = { argv, 1, NULL, 10000, NULL };
	struct exec_result r = EXEC_RESULT_INIT;
	double t = now_ms();

	if (executor_run(&r, ex, &req) < 0)
		die("executor_run: %s", err_last());
	t = now_ms() - t;
	if (r.exit_code)
		die("/bin/true exited %d under the executor: %s", r.exit_code, r.err.buf);
	exec_result_release(&r);
	return t;
}

/* Mean CPU time of one run of `fn` (n runs). */
static double cpu_per_run(double (*fn)(struct executor *), struct executor *ex, int n)
{
	double c = cpu_ms();
	int i;

	for (i = 0; i < n; i++)
		fn(ex);
	return (cpu_ms() - c) / n;
}

static double plain_run(struct executor *ex)
{
	(void)ex;
	return plain_once();
}

int main(int argc, char **argv)
{
	/* native, then native with network = true (the egress proxy and its bridge) */
	static const struct { const char *backend, *label; int network; unsigned mask; } rows[] = {
		{ "none", "none  ", 0, 0 },
		{ "native", "native", 0, 0 },
		{ "native", "native without the UNIX socket guard", 0, SB_FEAT_UNIX_GUARD },
		{ "native", "native, network = true (proxy)", 1, 0 },
	};
	int n = argc > 1 ? atoi(argv[1]) : 200, i, b;
	double *plain, *runs, base, cpu_base, cpu = 0;
	struct config cfg;
	char *ws;

	if (n < 5)
		n = 5;
	plain = xcalloc((size_t)n, sizeof(*plain));
	runs = xcalloc((size_t)n, sizeof(*runs));
	ws = getcwd(NULL, 0);
	config_init(&cfg);
	for (i = 0; i < 10; i++)	/* warm up */
		plain_once();
	for (i = 0; i < n; i++)
		plain[i] = plain_once();
	base = median(plain, n);
	cpu_base = cpu_per_run(plain_run, NULL, n);
	printf("plain fork+exec of /bin/true:   median %.3f ms (%d runs), CPU %.3f ms\n", base, n,
	       cpu_base);
	for (b = 0; b < (int)(sizeof(rows) / sizeof(rows[0])); b++) {
		struct executor ex;

		if (config_set(&cfg, "sandbox.backend", rows[b].backend, CFG_FLAG) < 0)
			die("%s", err_last());
		cfg.sandbox.network = rows[b].network;
		sandbox_probe_mask(rows[b].mask);
		if (executor_init(&ex, &cfg, ws) < 0) {
			printf("%s executor: cannot run here: %s\n", rows[b].label, err_last());
			continue;
		}
		for (i = 0; i < 5; i++)
			executor_once(&ex);
		for (i = 0; i < n; i++)
			runs[i] = executor_once(&ex);
		cpu = cpu_per_run(executor_once, &ex, n);
		printf("%s executor, /bin/true: median %.3f ms, added %.3f ms; CPU %.3f ms, "
		       "added %.3f ms\n", rows[b].label, median(runs, n), median(runs, n) - base,
		       cpu, cpu - cpu_base);
		executor_release(&ex);
	}
	sandbox_probe_mask(0);
	cfg.sandbox.network = 0;
	if (getenv("BENCH_BREAKDOWN")) {
		/* what each piece of native costs, by taking it away */
		static const struct { const char *what; unsigned mask; long nproc; } parts[] = {
			{ "without network namespace", SB_FEAT_NETNS, 512 },
			{ "without PID namespace", SB_FEAT_PIDNS, 512 },
			{ "without mount namespace", SB_FEAT_MNTNS, 512 },
			{ "without IPC namespace", SB_FEAT_IPCNS, 512 },
			{ "without memory cgroup", SB_FEAT_MEMCG, 512 },
			{ "without user namespace", SB_FEAT_USERNS, 512 },
			{ "without process limit", 0, 0 },
		};
		size_t k;

		/* a part taken away is "not enforced": let native run anyway */
		cfg.sandbox.allow_unconfined = 1;

		for (k = 0; k < sizeof(parts) / sizeof(parts[0]); k++) {
			struct executor ex;

			sandbox_probe_mask(parts[k].mask);
			cfg.sandbox.max_processes = parts[k].nproc;
			if (executor_init(&ex, &cfg, ws) < 0) {
				printf("  %-28s cannot run: %s\n", parts[k].what, err_last());
				continue;
			}
			for (i = 0; i < n; i++)
				runs[i] = executor_once(&ex);
			cpu = cpu_per_run(executor_once, &ex, n);
			printf("  native %-28s median %.3f ms; CPU %.3f ms\n", parts[k].what,
			       median(runs, n), cpu);
			executor_release(&ex);
			cfg.sandbox.max_processes = 512;
		}
		sandbox_probe_mask(0);
	}
	config_release(&cfg);
	free(plain);
	free(runs);
	free(ws);
	return 0;
}
