/*
 * The Kubernetes Indexed Job of a batch (see k8s.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "batch/k8s.h"

#define TASKS_MOUNT "/tasks"

/* A DNS-1123 label: what a Job's name must be (and at most 63 characters). */
static int dns_label(const char *s)
{
	size_t n = strlen(s);

	return n && n <= 63 && strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n &&
	       s[0] != '-' && s[n - 1] != '-';
}

int batch_k8s_job(json_t **out, const struct batch_k8s_opts *o)
{
	json_t *args, *env, *mounts, *volumes, *resources, *container, *spec, *job;
	char num[32];
	const char *base;
	char *tasks_path;
	size_t i;

	if (!o->name || !dns_label(o->name))
		return err_set(FX_EINVAL, "job name '%s': lower-case letters, digits and '-', "
			       "at most 63", o->name ? o->name : "");
	if (!o->image || !*o->image)
		return err_set(FX_EINVAL, "an image is required (--image)");
	if (!o->shards || !o->parallelism)
		return err_set(FX_EINVAL, "--shards and --parallelism must be at least 1");
	if (!o->pvc || !*o->pvc)
		return err_set(FX_EINVAL, "a volume claim for the results is required (--pvc)");
	if (strcmp(o->sandbox, "none") && strcmp(o->sandbox, "native"))
		return err_set(FX_EINVAL, "sandbox '%s': expected none or native", o->sandbox);
	base = strrchr(o->tasks, '/') ? strrchr(o->tasks, '/') + 1 : o->tasks;
	tasks_path = o->configmap ? xstrfmt("%s/%s", TASKS_MOUNT, base) : xstrdup(o->tasks);

	/* the sandbox choice is said on the command line of every pod, never left implicit */
	args = json_pack("[s, s]", "-c", o->sandbox[0] == 'n' && o->sandbox[1] == 'o' ?
			 "sandbox.backend=none" : "sandbox.backend=native");
	json_array_append_new(args, jsonx_string("batch"));
	json_array_append_new(args, jsonx_string(tasks_path));
	snprintf(num, sizeof(num), "%u", o->shards);
	json_array_append_new(args, jsonx_string("--shards"));
	json_array_append_new(args, jsonx_string(num));
	snprintf(num, sizeof(num), "%u", o->jobs ? o->jobs : 1);
	json_array_append_new(args, jsonx_string("-j"));
	json_array_append_new(args, jsonx_string(num));
	json_array_append_new(args, jsonx_string("--out"));
	json_array_append_new(args, jsonx_string(BATCH_K8S_RESULTS));
	/* worktrees on the pod's own disk, not on the shared volume */
	json_array_append_new(args, jsonx_string("--work"));
	json_array_append_new(args, jsonx_string("/scratch/trees"));
	for (i = 0; o->batch_args && o->batch_args[i]; i++)
		json_array_append_new(args, jsonx_string(o->batch_args[i]));
	free(tasks_path);

	env = json_pack("[{s:s, s:s}, {s:s, s:s}]", "name", "HOME", "value", "/scratch/home",
			"name", "XDG_CACHE_HOME", "value", "/scratch/cache");
	if (o->secret && *o->secret)
		json_array_append_new(env, json_pack("{s:s, s:{s:{s:s, s:s}}}", "name", o->key_env,
						     "valueFrom", "secretKeyRef", "name", o->secret,
						     "key", o->secret_key));
	for (i = 0; o->env && o->env[i]; i++) {
		const char *eq = strchr(o->env[i], '=');
		char *name;

		if (!eq || eq == o->env[i]) {
			json_decref(args);
			json_decref(env);
			return err_set(FX_EINVAL, "--env '%s': expected NAME=value", o->env[i]);
		}
		name = xstrndup(o->env[i], (size_t)(eq - o->env[i]));
		json_array_append_new(env, json_pack("{s:s, s:s}", "name", name, "value", eq + 1));
		free(name);
	}
	mounts = json_pack("[{s:s, s:s}, {s:s, s:s}]", "name", "results", "mountPath",
			   BATCH_K8S_RESULTS, "name", "work", "mountPath", "/scratch");
	volumes = json_pack("[{s:s, s:{s:s}}, {s:s, s:{}}]", "name", "results",
			    "persistentVolumeClaim", "claimName", o->pvc, "name", "work", "emptyDir");
	if (o->configmap) {
		json_array_append_new(mounts, json_pack("{s:s, s:s, s:b}", "name", "tasks",
							"mountPath", TASKS_MOUNT, "readOnly", 1));
		json_array_append_new(volumes, json_pack("{s:s, s:{s:s}}", "name", "tasks",
							 "configMap", "name", o->configmap));
	}
	resources = json_pack("{s:{s:s, s:s}, s:{s:s}}", "requests", "cpu", o->cpu, "memory",
			      o->memory, "limits", "memory", o->memory);
	container = json_pack("{s:s, s:s, s:[s], s:o, s:o, s:o, s:o, s:{s:b, s:b}}", "name",
			      "forgex", "image", o->image, "command", "forgex", "args", args, "env",
			      env, "resources", resources, "volumeMounts", mounts, "securityContext",
			      "allowPrivilegeEscalation", 0, "runAsNonRoot", 1);
	spec = json_pack("{s:s, s:i, s:i, s:i, s:i, s:{s:[{s:s, s:{s:s, s:s, s:[i, i]}}, "
			 "{s:s, s:[{s:s, s:s}]}]}, s:{s:{s:{s:s, s:s}}, s:{s:s, s:[o], s:o, "
			 "s:{s:I, s:I}}}}",
			 "completionMode", "Indexed",
			 "completions", (int)o->shards,
			 "parallelism", (int)o->parallelism,
			 "backoffLimitPerIndex", (int)o->backoff_per_index,
			 "maxFailedIndexes", (int)o->shards,
			 "podFailurePolicy", "rules",
			 "action", "FailIndex", "onExitCodes", "containerName", "forgex",
			 "operator", "In", "values", 1, 2,
			 "action", "Ignore", "onPodConditions", "type", "DisruptionTarget",
			 "status", "True",
			 "template", "metadata", "labels", "app.kubernetes.io/name", "forgex-batch",
			 "forgex.dev/batch", o->name,
			 "spec", "restartPolicy", "Never", "containers", container, "volumes", volumes,
			 "securityContext", "runAsUser", (json_int_t)1000, "fsGroup", (json_int_t)1000);
	if (!spec)
		return err_set(FX_ERROR, "building the Job manifest");
	job = json_pack("{s:s, s:s, s:{s:s, s:{s:s}}, s:o}", "apiVersion", "batch/v1", "kind", "Job",
			"metadata", "name", o->name, "labels", "app.kubernetes.io/name",
			"forgex-batch", "spec", spec);
	*out = job;
	return 0;
}
