#ifndef FX_BATCH_K8S_H
#define FX_BATCH_K8S_H

/*
 * A batch past one machine: the Kubernetes Job that runs it, as an
 * Indexed Job (completionMode Indexed, one index per shard). Each pod runs
 * `forgex batch TASKS --shards N`, learns its shard from
 * JOB_COMPLETION_INDEX (which the Job controller sets in every pod of an
 * Indexed Job) and writes its results to RESULTS/shard-K on a shared
 * volume; `forgex batch collect RESULTS` merges them. Kubernetes does the
 * scheduling, retries and parallelism: forgex has no scheduler of its own.
 *
 * Retries: backoffLimitPerIndex retries a pod that died (evicted, OOM,
 * node lost) — its shard resumes where it stopped, since finished tasks
 * are skipped — and a podFailurePolicy marks an index failed, without a
 * retry, when forgex exits 1 (every task has its result and some did not
 * pass: a retry would change nothing) or 2 (a bad task set or
 * configuration); a pod disrupted by the cluster is retried without
 * counting.
 */

#include <jansson.h>

struct batch_k8s_opts {
	const char *name;		/* the Job's name */
	const char *image;
	const char *tasks;		/* the tasks file inside the pod */
	const char *configmap;		/* NULL: the tasks are in the image at `tasks` */
	const char *pvc;		/* the claim of the shared results volume */
	const char *secret, *secret_key, *key_env;	/* the model key */
	const char *cpu, *memory;	/* requests (and the memory limit) per pod */
	const char *sandbox;		/* "none": the pod is the boundary; "native" */
	const char *const *batch_args;	/* more options for `forgex batch` in each pod */
	const char *const *env;		/* more "NAME=value" for the pod (NULL-terminated) */
	unsigned shards, parallelism, jobs, backoff_per_index;
};

/** The Job manifest for `o` (a new reference); FX_EINVAL naming a bad option. */
int batch_k8s_job(json_t **out, const struct batch_k8s_opts *o);

/** The folder in the shared volume a pod writes to, and collect reads. */
#define BATCH_K8S_RESULTS "/results"

#endif
