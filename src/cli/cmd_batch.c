/*
 * forgex batch: many tasks, each a full `forgex run` in a worktree of its
 * own (src/batch/run.h); `batch collect` merges shards; `batch k8s` writes
 * the Kubernetes Indexed Job that runs the shards on a cluster.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "batch/k8s.h"
#include "batch/results.h"
#include "batch/run.h"
#include "batch/task.h"
#include "cli/cli.h"
#include "cli/commands.h"

/* the batch could not go on (results not writable, disk full): run it again later */
#define EXIT_TROUBLE 75

static volatile sig_atomic_t stop_flag, abort_flag;

static void on_int(int sig)
{
	(void)sig;
	if (stop_flag)
		abort_flag = 1;
	stop_flag = 1;
}

static void on_term(int sig)
{
	(void)sig;
	stop_flag = abort_flag = 1;
}

struct view {
	int json;		/* --json: every event on stdout */
	int live;		/* stderr is a terminal: a progress line */
	size_t total, done, pass, fail, other, running;
	json_int_t tokens;
	double cost, task_seconds, began;
	size_t ran;
	unsigned jobs;
	int line_drawn;
};

static void clear_line(struct view *v)
{
	if (v->line_drawn)
		fputs("\r\033[K", stderr);
	v->line_drawn = 0;
}

static void draw_line(struct view *v)
{
	size_t left = v->total > v->done ? v->total - v->done : 0;

	fprintf(stderr, "\r\033[K[%zu/%zu] running %zu, left %zu · pass %zu, fail %zu, other %zu",
		v->done, v->total, v->running, left > v->running ? left - v->running : 0, v->pass,
		v->fail, v->other);
	if (v->ran && left) {
		double per = (clk_mono_s() - v->began) / (double)v->ran;

		fprintf(stderr, " · ETA %.0fs", per * (double)left);
	}
	fprintf(stderr, " · %lld tokens, $%.4f", (long long)v->tokens, v->cost);
	fflush(stderr);
	v->line_drawn = 1;
}

static void show_event(void *data, const json_t *ev)
{
	struct view *v = data;
	const char *type = jsonx_str(ev, "type");

	if (v->json || (!v->live && !cli_quiet)) {
		struct buf b = BUF_INIT;

		jsonx_dump(&b, ev, JSON_COMPACT);
		fprintf(v->json ? stdout : stderr, "%s\n", b.buf);
		fflush(v->json ? stdout : stderr);
		buf_release(&b);
	}
	if (!strcmp(type, "batch_start")) {
		v->total = (size_t)jsonx_int(ev, "tasks", 0);
		v->done = (size_t)jsonx_int(ev, "done", 0);
	} else if (!strcmp(type, "task_start")) {
		v->running = (size_t)jsonx_int(ev, "running", 0);
	} else if (!strcmp(type, "task_end")) {
		const json_t *r = json_object_get(ev, "result");
		const char *st = jsonx_str(r, "status");

		v->running = (size_t)jsonx_int(ev, "running", 0);
		v->done++;
		v->ran++;
		if (!strcmp(st, "PASS"))
			v->pass++;
		else if (!strcmp(st, "FAIL"))
			v->fail++;
		else
			v->other++;
		v->tokens += jsonx_int(r, "tokens", 0);
		v->cost += json_number_value(json_object_get(r, "cost_usd"));
		if (v->live && !cli_quiet) {
			clear_line(v);
			cli_printf(stderr, "%-7s %s (%.1fs)%s%s\n", st, jsonx_str(r, "id"),
				   json_number_value(json_object_get(r, "seconds")),
				   strcmp(st, "PASS") && jsonx_str(r, "error") ? " — " : "",
				   strcmp(st, "PASS") && jsonx_str(r, "error") ? jsonx_str(r, "error") : "");
		}
	} else if (!strcmp(type, "warning") && v->live) {
		clear_line(v);
		cli_printf(stderr, "forgex batch: warning: %s\n", jsonx_str(ev, "message"));
	} else if (!strcmp(type, "batch_end")) {
		if (v->live)
			clear_line(v);
		return;
	}
	if (v->live && !cli_quiet)
		draw_line(v);
}

/*
 * The -c flags given before `batch` (forgex -c K=V batch ...), read back
 * from the process's own command line: every task's run gets them too.
 */
static void global_flags(struct strvec *out)
{
	struct buf b = BUF_INIT;
	struct strvec args = STRVEC_INIT;
	size_t pos = 0, i;

	if (fsutil_read_file(&b, "/proc/self/cmdline", 1 << 20) < 0) {
		buf_release(&b);
		return;
	}
	while (pos < b.len) {
		strvec_push(&args, b.buf + pos);
		pos += strlen(b.buf + pos) + 1;
	}
	for (i = 1; i < args.nr && args.v[i][0] == '-'; i++) {
		if (!strcmp(args.v[i], "-c") && i + 1 < args.nr)
			strvec_push(out, args.v[++i]);
		else if (!strcmp(args.v[i], "-C"))
			i++;
		else if (!strcmp(args.v[i], "--"))
			break;
	}
	strvec_clear(&args);
	buf_release(&b);
}

/* The forgex program to run each task with: this one. */
static char *self_program(void)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0 || n >= (ssize_t)sizeof(self) - 1)
		return NULL;
	self[n] = '\0';
	return xstrdup(self);
}

static int parse_long(long *out, const char *s, const char *what)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end || errno || v < 0)
		return cli_usage_error("batch", "%s: expected a whole number, not '%s'", what, s);
	*out = v;
	return 0;
}

static int parse_double(double *out, const char *s, const char *what)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end || errno || v < 0)
		return cli_usage_error("batch", "%s: expected a number, not '%s'", what, s);
	*out = v;
	return 0;
}

static unsigned cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (unsigned)n : 1;
}

static int write_predictions(const char *path, const json_t *results, const char *model)
{
	if (!path)
		return 0;
	if (batch_predictions_write(path, results, model) < 0) {
		cli_print_error();
		return EXIT_TROUBLE;
	}
	return 0;
}

static int exit_for(const json_t *summary, int interrupted)
{
	const json_t *c = json_object_get(summary, "status");

	if (interrupted)
		return EXIT_INTERRUPTED;
	return jsonx_int(summary, "left", 0) == 0 && jsonx_int(c, "PASS", 0) ==
	       jsonx_int(summary, "finished", 0) ? EXIT_OK : EXIT_FAIL;
}

static int batch_collect_cmd(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "out", required_argument, NULL, 'o' },
		{ "predictions", required_argument, NULL, 'p' },
		{ "model-name", required_argument, NULL, 'm' },
		{ "json", no_argument, NULL, 'J' },
		{ NULL, 0, NULL, 0 },
	};
	const char *out = NULL, *pred = NULL, *model = "forgex";
	json_t *results = NULL, *summary;
	struct buf b = BUF_INIT;
	int c, json = 0, status;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "o:", opts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 'p': pred = optarg; break;
		case 'm': model = optarg; break;
		case 'J': json = 1; break;
		default:
			return cli_usage_error("batch", "collect: unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return cli_usage_error("batch", "collect: name at least one results folder");
	if (batch_collect(&results, (const char *const *)argv + optind, (size_t)(argc - optind)) < 0) {
		cli_print_error();
		return EXIT_USAGE;
	}
	summary = batch_summary(results, json_array_size(results), 0);
	if (out) {
		char *rp = xstrfmt("%s/results.jsonl", out), *sp = xstrfmt("%s/summary.json", out);
		struct buf s = BUF_INIT;
		int bad;

		jsonx_dump(&s, summary, JSON_INDENT(2));
		buf_addch(&s, '\n');
		bad = fsutil_mkdir_p(out, 0755) < 0 || batch_results_write(rp, results) < 0 ||
		      fsutil_write_atomic(sp, s.buf, s.len, 0644) < 0;
		buf_release(&s);
		free(rp);
		free(sp);
		if (bad) {
			cli_print_error();
			json_decref(results);
			json_decref(summary);
			return EXIT_TROUBLE;
		}
	}
	status = write_predictions(pred, results, model);
	if (json) {
		jsonx_dump(&b, summary, JSON_INDENT(2));
		printf("%s\n", b.buf);
	} else {
		batch_summary_table(&b, results, summary);
		cli_printf(stdout, "%s", b.buf);
	}
	if (!status)
		status = exit_for(summary, 0);
	buf_release(&b);
	json_decref(results);
	json_decref(summary);
	return status;
}

static int batch_k8s_cmd(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "image", required_argument, NULL, 'i' },
		{ "shards", required_argument, NULL, 's' },
		{ "parallelism", required_argument, NULL, 'P' },
		{ "name", required_argument, NULL, 'n' },
		{ "configmap", required_argument, NULL, 'M' },
		{ "pvc", required_argument, NULL, 'v' },
		{ "secret", required_argument, NULL, 'S' },
		{ "secret-key", required_argument, NULL, 'K' },
		{ "key-env", required_argument, NULL, 'E' },
		{ "cpu", required_argument, NULL, 'c' },
		{ "memory", required_argument, NULL, 'm' },
		{ "sandbox", required_argument, NULL, 'x' },
		{ "backoff", required_argument, NULL, 'b' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "env", required_argument, NULL, 'e' },
		{ NULL, 0, NULL, 0 },
	};
	struct batch_k8s_opts o;
	struct strvec envs = STRVEC_INIT;
	long shards = 0, par = 0, jobs = 1, backoff = 2;
	json_t *job = NULL;
	struct buf b = BUF_INIT;
	char cpu[32];
	int c;

	memset(&o, 0, sizeof(o));
	o.name = "forgex-batch";
	o.pvc = "forgex-results";
	o.secret = "forgex-model";
	o.secret_key = "api-key";
	o.key_env = "OPENAI_API_KEY";
	o.memory = NULL;
	o.sandbox = "none";
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "j:", opts, NULL)) != -1) {
		int bad = 0;

		switch (c) {
		case 'i': o.image = optarg; break;
		case 's': bad = parse_long(&shards, optarg, "--shards"); break;
		case 'P': bad = parse_long(&par, optarg, "--parallelism"); break;
		case 'n': o.name = optarg; break;
		case 'M': o.configmap = optarg; break;
		case 'v': o.pvc = optarg; break;
		case 'S': o.secret = optarg; break;
		case 'K': o.secret_key = optarg; break;
		case 'E': o.key_env = optarg; break;
		case 'c': o.cpu = optarg; break;
		case 'm': o.memory = optarg; break;
		case 'x': o.sandbox = optarg; break;
		case 'b': bad = parse_long(&backoff, optarg, "--backoff"); break;
		case 'j': bad = parse_long(&jobs, optarg, "-j"); break;
		case 'e': strvec_push(&envs, optarg); break;
		default:
			strvec_clear(&envs);
			return cli_usage_error("batch", "k8s: unknown option '%s'", argv[optind - 1]);
		}
		if (bad) {
			strvec_clear(&envs);
			return bad;
		}
	}
	o.env = envs.v;
	if (optind >= argc) {
		strvec_clear(&envs);
		return cli_usage_error("batch", "k8s: name the tasks file");
	}
	if (shards < 1 || par < 1 || jobs < 1 || shards > 100000 || par > 100000 || jobs > 1024) {
		strvec_clear(&envs);
		return cli_usage_error("batch", "k8s: --shards N and --parallelism P are required "
				       "(1 or more), -j at least 1");
	}
	o.tasks = argv[optind];
	/* the remaining operands (after --) are options for `forgex batch` in each pod */
	o.batch_args = (const char *const *)argv + optind + 1;
	o.shards = (unsigned)shards;
	o.parallelism = (unsigned)par;
	o.jobs = (unsigned)jobs;
	o.backoff_per_index = (unsigned)backoff;
	snprintf(cpu, sizeof(cpu), "%ld", jobs);
	if (!o.cpu)
		o.cpu = cpu;
	if (!o.memory)
		o.memory = "4Gi";
	if (!o.configmap && o.tasks[0] != '/') {
		strvec_clear(&envs);
		return cli_usage_error("batch", "k8s: without --configmap the tasks file is read in "
				       "the image: give its absolute path there");
	}
	if (batch_k8s_job(&job, &o) < 0) {
		cli_print_error();
		strvec_clear(&envs);
		return EXIT_USAGE;
	}
	jsonx_dump(&b, job, JSON_INDENT(2));
	printf("%s\n", b.buf);
	if (!cli_quiet) {
		fprintf(stderr, "forgex batch k8s: an Indexed Job of %u shards, %u at a time. Then:\n",
			o.shards, o.parallelism);
		if (o.configmap)
			fprintf(stderr, "  kubectl create configmap %s --from-file=%s\n", o.configmap,
				o.tasks);
		if (o.secret && *o.secret)
			fprintf(stderr, "  kubectl create secret generic %s --from-literal=%s=...\n",
				o.secret, o.secret_key);
		fprintf(stderr, "  kubectl apply -f JOB.json; when it is complete, on the volume %s:\n"
			"  forgex batch collect %s\n", o.pvc, BATCH_K8S_RESULTS);
	}
	buf_release(&b);
	json_decref(job);
	strvec_clear(&envs);
	return EXIT_OK;
}

int cmd_batch(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "jobs", required_argument, NULL, 'j' },
		{ "out", required_argument, NULL, 'o' },
		{ "work", required_argument, NULL, 'w' },
		{ "keep", no_argument, NULL, 'k' },
		{ "no-keep", no_argument, NULL, 'K' },
		{ "shard", required_argument, NULL, 'S' },
		{ "shards", required_argument, NULL, 'N' },
		{ "wall-time", required_argument, NULL, 't' },
		{ "grace", required_argument, NULL, 'g' },
		{ "max-tokens", required_argument, NULL, 'T' },
		{ "max-cost", required_argument, NULL, 'C' },
		{ "max-cost-total", required_argument, NULL, 'A' },
		{ "predictions", required_argument, NULL, 'p' },
		{ "model-name", required_argument, NULL, 'W' },
		{ "model", required_argument, NULL, 'm' },
		{ "repo-url", required_argument, NULL, 'u' },
		{ "mirrors", required_argument, NULL, 'M' },
		{ "retry", required_argument, NULL, 'R' },
		{ "json", no_argument, NULL, 'J' },
		{ NULL, 0, NULL, 0 },
	};
	struct strvec retry = STRVEC_INIT;
	struct batch_opts o;
	struct batch_tasks tasks = BATCH_TASKS_INIT;
	struct batch_report rep = BATCH_REPORT_INIT;
	struct strvec flags = STRVEC_INIT;
	struct sigaction sa_int, sa_term, old_int, old_term, old_hup;
	struct config cfg;
	struct view v;
	const char *out = "batch-results", *shard = NULL, *pred = NULL, *model = "forgex";
	const char *url_tmpl = NULL, *run_model = NULL;
	char *out_dir = NULL, *prog = NULL;
	/* -1: not on the command line, [batch] in the configuration says */
	long jobs = -1, shards = 0, wall = -1, grace = -1, max_tokens = -1;
	double max_cost = -1, max_total = -1;
	int c, json = 0, keep = -1, status, ret;

	if (argc >= 2 && !strcmp(argv[1], "collect"))
		return batch_collect_cmd(argc - 1, argv + 1);
	if (argc >= 2 && !strcmp(argv[1], "k8s"))
		return batch_k8s_cmd(argc - 1, argv + 1);
	memset(&o, 0, sizeof(o));
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "j:o:m:", opts, NULL)) != -1) {
		int bad = 0;

		switch (c) {
		case 'j': bad = parse_long(&jobs, optarg, "-j"); break;
		case 'o': out = optarg; break;
		case 'w': o.work_dir = optarg; break;
		case 'k': keep = 1; break;
		case 'K': keep = 0; break;
		case 'S': shard = optarg; break;
		case 'N': bad = parse_long(&shards, optarg, "--shards"); break;
		case 't': bad = parse_long(&wall, optarg, "--wall-time"); break;
		case 'g': bad = parse_long(&grace, optarg, "--grace"); break;
		case 'T': bad = parse_long(&max_tokens, optarg, "--max-tokens"); break;
		case 'C': bad = parse_double(&max_cost, optarg, "--max-cost"); break;
		case 'A': bad = parse_double(&max_total, optarg, "--max-cost-total"); break;
		case 'p': pred = optarg; break;
		case 'W': model = optarg; break;
		case 'm': run_model = optarg; break;
		case 'u': url_tmpl = optarg; break;
		case 'M': o.cache = optarg; break;
		case 'R':
			if (strcmp(optarg, "FAIL") && strcmp(optarg, "ERROR") && strcmp(optarg, "TIMEOUT")) {
				strvec_clear(&retry);
				return cli_usage_error("batch", "--retry %s: expected FAIL, ERROR or TIMEOUT",
						       optarg);
			}
			strvec_push(&retry, optarg);
			break;
		case 'J': json = 1; break;
		default:
			strvec_clear(&retry);
			return cli_usage_error("batch", "unknown option '%s'", argv[optind - 1]);
		}
		if (bad) {
			strvec_clear(&retry);
			return bad;
		}
	}
	o.retry = &retry;
	if (optind + 1 != argc || jobs > 1024 || (shard && shards) ||
	    (url_tmpl && !strstr(url_tmpl, "{repo}"))) {
		strvec_clear(&retry);
		return cli_usage_error("batch", optind + 1 != argc ? "name one tasks file (TASKS.jsonl)"
				       : jobs > 1024 ? "-j: at most 1024"
				       : url_tmpl && !strstr(url_tmpl, "{repo}")
				       ? "--repo-url: the template has no {repo} (where a task's "
					 "\"owner/name\" goes)"
				       : "--shard K/N and --shards N: one or the other");
	}
	if (shard && batch_shard_parse(&o.shard_k, &o.shard_n, shard) < 0) {
		cli_print_error();
		strvec_clear(&retry);
		return EXIT_USAGE;
	}
	if (shards) {
		const char *idx = getenv("JOB_COMPLETION_INDEX");
		char *end;
		unsigned long k;

		errno = 0;
		k = idx ? strtoul(idx, &end, 10) : 0;
		if (!idx || !*idx || *end || errno || k >= (unsigned long)shards || shards > 100000) {
			strvec_clear(&retry);
			return cli_usage_error("batch", "--shards %ld takes the shard from "
					       "JOB_COMPLETION_INDEX (0 to %ld), which is %s", shards,
					       shards - 1, idx && *idx ? idx : "not set");
		}
		o.shard_k = (unsigned)k;
		o.shard_n = (unsigned)shards;
	}
	if (cli_load_config(&cfg) != 0) {
		strvec_clear(&retry);
		return EXIT_USAGE;
	}
	/* what the command line does not say, [batch] does */
	if (jobs < 0)
		jobs = cfg.batch.jobs;
	if (wall < 0)
		wall = cfg.batch.wall_seconds;
	if (grace < 0)
		grace = cfg.batch.grace_seconds;
	if (max_tokens < 0)
		max_tokens = cfg.batch.max_tokens;
	if (max_cost < 0)
		max_cost = cfg.batch.max_cost_usd;
	if (max_total < 0)
		max_total = cfg.batch.max_cost_total_usd;
	if (keep < 0)
		keep = cfg.batch.keep;
	if (!url_tmpl)
		url_tmpl = cfg.batch.url_template;
	o.keep = keep;
	o.jobs = jobs ? (unsigned)jobs : cores();
	if (batch_tasks_load(&tasks, argv[optind], url_tmpl) < 0) {
		cli_print_error();
		batch_tasks_release(&tasks);
		config_release(&cfg);
		strvec_clear(&retry);
		return EXIT_USAGE;
	}
	prog = self_program();
	if (!prog) {
		log_error("cannot find my own program: %s", strerror(errno));
		config_release(&cfg);
		batch_tasks_release(&tasks);
		strvec_clear(&retry);
		return EXIT_FAIL;
	}
	/* each shard in a folder of its own: they may share one volume (collect merges them) */
	out_dir = o.shard_n ? xstrfmt("%s/shard-%u", out, o.shard_k) : xstrdup(out);
	global_flags(&flags);
	/* -m: every role's model in every task, as -c agents.ROLE.model=M would set it */
	for (c = 0; run_model && *run_model && c < ROLE__COUNT; c++)
		strvec_pushf(&flags, "agents.%s.model=%s", config_role_name(c), run_model);
	o.tasks = &tasks;
	o.out_dir = out_dir;
	o.forgex = prog;
	o.flags = &flags;
	o.wall_seconds = wall;
	o.grace_seconds = grace;
	o.max_tokens = max_tokens;
	o.max_cost = max_cost;
	o.max_cost_total = max_total;
	o.memory_limit = cfg.sandbox.memory_limit;
	o.stop = &stop_flag;
	o.abort = &abort_flag;
	memset(&v, 0, sizeof(v));
	v.json = json;
	v.live = !json && isatty(2);
	v.began = clk_mono_s();
	v.jobs = o.jobs;
	o.on_event = show_event;
	o.data = &v;
	stop_flag = abort_flag = 0;
	memset(&sa_int, 0, sizeof(sa_int));
	sa_int.sa_handler = on_int;
	sigemptyset(&sa_int.sa_mask);
	sa_term = sa_int;
	sa_term.sa_handler = on_term;
	sigaction(SIGINT, &sa_int, &old_int);
	sigaction(SIGTERM, &sa_term, &old_term);
	sigaction(SIGHUP, &sa_term, &old_hup);
	ret = batch_run(&rep, &o);
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	if (ret < 0) {
		cli_print_error();
		fprintf(stderr, "forgex batch: the results written so far are kept in %s/results.jsonl; "
			"run the same command again to go on\n", out_dir);
		status = EXIT_TROUBLE;
		goto out;
	}
	status = write_predictions(pred, rep.results, model);
	if (!json && !cli_quiet) {
		struct buf b = BUF_INIT;

		batch_summary_table(&b, rep.results, rep.summary);
		cli_printf(stdout, "%s", b.buf);
		cli_printf(stdout, "  results: %s/results.jsonl, summary: %s/summary.json\n", out_dir,
			   out_dir);
		buf_release(&b);
	}
	if (rep.interrupted)
		fprintf(stderr, "forgex batch: stopped with %zu task%s left; run the same command "
			"again to go on (finished tasks are skipped)\n", rep.left,
			rep.left == 1 ? "" : "s");
	if (!status)
		status = exit_for(rep.summary, rep.interrupted);
out:
	batch_report_release(&rep);
	batch_tasks_release(&tasks);
	strvec_clear(&flags);
	strvec_clear(&retry);
	config_release(&cfg);
	free(out_dir);
	free(prog);
	return status;
}
