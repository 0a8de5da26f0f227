/*
 * The "Sandbox" section of `forgex doctor`: what this kernel offers, which
 * guarantee of the native backend is enforced here and how, whether docker
 * answers, and which backend the configuration leads to (or why none).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/doctor.h"
#include "sandbox/executor.h"
#include "sandbox/sandbox.h"

static void kernel_items(struct doctor *d, const struct sandbox_caps *c)
{
	int root = c->euid == 0;

	if (c->landlock_abi)
		doctor_item(d, DOCTOR_OK, "Landlock", "ABI %d", c->landlock_abi);
	else
		doctor_item(d, DOCTOR_WARN, "Landlock", "not available (Linux 5.13+ with landlock "
			    "in the lsm= boot parameter)");
	doctor_item(d, c->userns ? DOCTOR_OK : DOCTOR_WARN, "user namespaces", "%s",
		    c->userns ? "available" : "not available (kernel.unprivileged_userns_clone "
		    "or user.max_user_namespaces, or an AppArmor restriction)");
	doctor_item(d, c->pidns ? DOCTOR_OK : DOCTOR_WARN, "PID namespaces", "%s",
		    c->pidns ? "available" : root ? "not available" :
		    "not available (needs user namespaces)");
	doctor_item(d, c->netns ? DOCTOR_OK : DOCTOR_WARN, "network namespaces", "%s",
		    c->netns ? "available" : root ? "not available" :
		    "not available (needs user namespaces)");
	doctor_item(d, c->mntns ? DOCTOR_OK : DOCTOR_WARN, "mount namespaces", "%s",
		    c->mntns ? "available (with the new mount API)" :
		    "not available (needs user namespaces and Linux 5.12+)");
	doctor_item(d, c->ipcns ? DOCTOR_OK : DOCTOR_WARN, "IPC namespaces", "%s",
		    c->ipcns ? "available" : "not available");
	doctor_item(d, c->seccomp ? DOCTOR_OK : DOCTOR_WARN, "seccomp", "%s",
		    c->seccomp ? "filters available" : "not available");
	if (root)
		doctor_item(d, c->cgroup_pids ? DOCTOR_OK : DOCTOR_WARN, "pids cgroup", "%s",
			    c->cgroup_pids ? c->cgroup_pids_dir :
			    "none writable: the process limit cannot bind root");
	doctor_item(d, c->cgroup_memory ? DOCTOR_OK : DOCTOR_INFO, "memory cgroup", "%s",
		    c->cgroup_memory ? c->cgroup_memory_dir :
		    "none writable: memory_limit becomes RLIMIT_AS (per process, address space)");
}

static void native_items(struct doctor *d, const struct sandbox_caps *c)
{
	size_t i;

	for (i = 0; i < SB_GUARANTEES; i++) {
		char what[48];

		snprintf(what, sizeof(what), "native: %s", c->native[i].what);
		doctor_item(d, c->native[i].enforced ? DOCTOR_OK : DOCTOR_WARN, what, "%s%s",
			    c->native[i].enforced ? "" : "NOT ENFORCED: ", c->native[i].how);
	}
}

static void caps_text(struct buf *out, unsigned caps)
{
	static const struct { unsigned bit; const char *name; } names[] = {
		{ SB_CAP_FS, "filesystem" }, { SB_CAP_NET, "network" },
		{ SB_CAP_PIDNS, "PID namespace" }, { SB_CAP_LIMITS, "limits" },
		{ SB_CAP_CONTAINER, "container" }, { SB_CAP_DIES_WITH_FORGEX, "parent death" },
		{ SB_CAP_MOUNTS, "mount namespace" },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(names); i++)
		if (caps & names[i].bit)
			buf_addf(out, "%s%s", out->len ? ", " : "", names[i].name);
	if (!out->len)
		buf_addstr(out, "policy and hygiene only");
}

/* The bounds a runaway command meets with this configuration, and how. */
/* What a command's network is, and what enforces it (docs/internals/executor.md). */
static void network_item(struct doctor *d, const struct executor *ex, int native)
{
	struct buf b = BUF_INIT;
	size_t i;

	if (!native) {
		/* docker refuses network = true at init: it has no route through the proxy */
		doctor_item(d, DOCTOR_INFO, "network", "%s",
			    !strcmp(executor_backend_name(ex), "docker") ?
			    "none (docker --network none; network = true is refused with docker, "
			    "which cannot use forgex's egress proxy)" :
			    !ex->network ? "none" : "the host's (backend none)");
		return;
	}
	if (!ex->network) {
		doctor_item(d, DOCTOR_OK, "network", "none, in every mode: own network namespace "
			    "with loopback only, no proxy ([sandbox] network = false)");
		return;
	}
	for (i = 0; i < ex->allowed_domains.nr; i++)
		buf_addf(&b, "%s%s", i ? ", " : "", ex->allowed_domains.v[i]);
	doctor_item(d, DOCTOR_OK, "network", "only through forgex's egress proxy (127.0.0.1:%d in "
		    "the sandbox): allowed_domains %s%s; loopback, private, link-local and metadata "
		    "addresses refused unless named; other domains %s", SB_PROXY_PORT,
		    b.len ? b.buf : "(none)", ex->denied_domains.nr ? ", minus denied_domains" : "",
		    ex->policy.mode == APPROVAL_ASK ? "asked about once each" : "refused");
	buf_release(&b);
}

static void limits_item(struct doctor *d, const struct executor *ex)
{
	const struct sandbox_caps *c = sandbox_kernel_caps();
	int native = !strcmp(executor_backend_name(ex), "native");
	struct buf b = BUF_INIT;
	size_t i;

	if (!ex->memory_limit)
		buf_addstr(&b, "memory: none ([sandbox] memory_limit = \"\")");
	else if (native)
		buf_addf(&b, "memory: %s (%s)", ex->memory_limit_text, c->cgroup_memory ?
			 (c->cgroup_memory_v2 ? "cgroup v2 memory.max" :
			  "cgroup v1 memory.limit_in_bytes") : "RLIMIT_AS per process");
	else
		buf_addf(&b, "memory: %s", ex->memory_limit_text);
	if (ex->max_write_bytes)
		buf_addf(&b, "; disk: stopped after %s written", ex->max_write_text);
	else
		buf_addstr(&b, "; disk: no write budget ([sandbox] max_write_bytes = \"\")");
	if (native)
		buf_addf(&b, ", /tmp and /dev/shm %llu MiB each",
			 (unsigned long long)(ex->tmp_size >> 20));
	buf_addf(&b, "; processes: %ld", ex->max_processes);
	doctor_item(d, ex->memory_limit && ex->max_write_bytes ? DOCTOR_OK : DOCTOR_WARN, "limits",
		    "%s", b.buf);
	buf_release(&b);
	for (i = 0; native && i < ex->hidden.nr; i++)
		doctor_item(d, DOCTOR_INFO, "hidden", "%s ([sandbox] hidden)", ex->hidden.v[i]);
	network_item(d, ex, native);
}

static void backend_item(struct doctor *d, const struct config *cfg)
{
	struct buf caps = BUF_INIT;
	const char *want = cfg->sandbox.backend && *cfg->sandbox.backend ?
			   cfg->sandbox.backend : "auto";
	struct executor ex;
	size_t i;

	if (!cfg->workspace) {
		doctor_item(d, DOCTOR_INFO, "backend", "%s (no workspace to check it in)", want);
		return;
	}
	if (executor_init(&ex, cfg, cfg->workspace) < 0) {
		doctor_item(d, DOCTOR_FAIL, "backend", "'%s': commands would be refused: %s", want,
			    err_last());
		return;
	}
	caps_text(&caps, executor_caps(&ex));
	if (!ex.warnings.nr)
		doctor_item(d, DOCTOR_OK, "backend", "'%s' runs commands with '%s' (%s)", want,
			    executor_backend_name(&ex), caps.buf);
	buf_release(&caps);
	for (i = 0; i < ex.warnings.nr; i++)
		doctor_item(d, DOCTOR_WARN, "backend", "'%s' runs commands with '%s': %s", want,
			    executor_backend_name(&ex), ex.warnings.v[i]);
	limits_item(d, &ex);
	executor_release(&ex);
}

void doctor_sandbox(struct doctor *d, const struct config *cfg)
{
	struct sandbox_caps caps;

	sandbox_probe(&caps, 1);
	doctor_section(d, "Sandbox");
	kernel_items(d, &caps);
	native_items(d, &caps);
	if (!caps.docker_client)
		doctor_item(d, DOCTOR_INFO, "docker", "%s", caps.docker_version);
	else if (caps.docker_engine)
		doctor_item(d, DOCTOR_OK, "docker", "engine %s", caps.docker_version);
	else
		doctor_item(d, DOCTOR_INFO, "docker", "client found; %s", caps.docker_version);
	if (cfg)
		backend_item(d, cfg);
}
