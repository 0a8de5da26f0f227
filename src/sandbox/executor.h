#ifndef FX_EXECUTOR_H
#define FX_EXECUTOR_H

/*
 * Running a command proposed by a model (the seed's executor.py, with the
 * holes it leaves closed).
 *
 * A command is an argv, never a shell string. Before anything runs it
 * passes the command policy (deny -> refused), its working folder must
 * resolve inside the workspace, and a command that needs approval is
 * decided by the executor's approver (approver_decide(), which asks a
 * person through the front, showing that folder). Every command has a
 * network namespace of its own with loopback only; with [sandbox] network
 * = true it reaches the outside through forgex's egress proxy, which lets
 * it reach only [sandbox] allowed_domains (sandbox/proxy.h). The child gets a sanitized environment (the seed's safe list
 * plus explicit overrides), /dev/null on stdin, its own process group, a
 * timeout, and output capped while it is read (head and tail kept). On
 * timeout or interrupt every process it started is stopped: SIGTERM, a
 * short grace, then SIGKILL, and no descendant survives (see
 * docs/internals/executor.md). A backend adds confinement: "none"
 * (policy and hygiene only), "native" (Landlock, namespaces, seccomp,
 * rlimits), "docker" (`docker run`).
 *
 * The caller:
 *   1. executor_init() with the configuration and the workspace; this
 *      picks the backend and refuses when the kernel cannot enforce what
 *      the configuration asks for (FX_EUNSUPPORTED, naming the feature);
 *   2. sets `approver` (without one, mode ask approves nothing),
 *      optionally executor_set_cancel() to be able to stop a command, and
 *      reads executor_warnings() to show them to the person;
 *   3. executor_run() for each command; it blocks until the command ends,
 *      times out or is cancelled; exec_result_release() each result;
 *   4. executor_release().
 *
 * One executor runs one command at a time. executor_init() makes the
 * calling process a child subreaper (PR_SET_CHILD_SUBREAPER) so that a
 * descendant that escapes its supervisor is still found and killed.
 */

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "base/buf.h"
#include "base/strvec.h"
#include "config/config.h"
#include "sandbox/policy.h"

struct approver;
struct sandbox_backend;

/** One command to run. */
struct exec_request {
	const char *const *argv;	/* argv[0] is the program; need not be NULL-terminated */
	size_t argc;
	const char *cwd;		/* relative to the workspace (or absolute inside it); NULL: "." */
	int timeout_ms;			/* 0: [terminal] timeout_seconds */
	const char *const *env_overrides; /* NULL-terminated "NAME=value" list, may be NULL */
	const char *stdin_data;		/* NULL: stdin is /dev/null; else these bytes (hooks) */
	size_t stdin_len;
	/*
	 * NULL: output is captured as usual. Else three descriptors that are
	 * the command's stdin, stdout and stderr as they are (borrowed; they
	 * stay open in the caller): a long-lived server speaking over them
	 * (an MCP stdio server). Nothing is captured then (the result's out
	 * and err hold only forgex's own notes); stdin_data is ignored.
	 */
	const int *stdio_fds;
};

/** What happened (the seed's CommandResult). */
struct exec_result {
	struct strvec argv;
	int exit_code;		/* status; 128+N when killed by signal N; 127 not found; 126 cannot execute */
	struct buf out;		/* stdout: at most the cap, plus a marker line when cut */
	struct buf err;		/* stderr, the same */
	int timed_out;
	double duration_ms;
	int truncated;		/* some output was dropped */
	int term_signal;	/* the signal that killed the command, or 0 */
	uint64_t out_total, err_total; /* bytes the command wrote to each stream */
	int write_limited;	/* stopped: it wrote more than [sandbox] max_write_bytes */
};

#define EXEC_RESULT_INIT { STRVEC_INIT, 0, BUF_INIT, BUF_INIT, 0, 0, 0, 0, 0, 0, 0 }

/** An executor bound to one workspace and configuration. */
struct executor {
	char *workspace;		/* resolved absolute path */
	struct policy policy;
	const struct sandbox_backend *backend;
	void *backend_data;		/* owned by the backend */
	unsigned caps;			/* enum sandbox_cap bits enforced here */

	/* from the configuration */
	int default_timeout_ms;
	size_t max_output_bytes;	/* per stream */
	int network;
	struct strvec writable_roots;	/* resolved absolute paths */
	long max_processes;
	uint64_t memory_limit;		/* bytes; 0: none */
	char *memory_limit_text;	/* as configured ("2g"), for docker */
	uint64_t tmp_size;		/* native: size of the private /tmp and /dev/shm each */
	uint64_t max_write_bytes;	/* growth of a writable file system per command; 0: none */
	char *max_write_text;
	struct strvec hidden;		/* native: more places to hide ([sandbox] hidden) */
	struct strvec allowed_domains;	/* network = true: the egress proxy's lists */
	struct strvec denied_domains;
	char *cpu_limit;
	char *image;
	int read_only;
	/*
	 * Set by the caller after executor_init() for an executor whose
	 * commands only read (the repository map's ctags): the workspace and
	 * the writable roots are read-only to them (native: not made
	 * writable, no Landlock write rule, so no search for hard-linked
	 * files to protect; docker: mounted :ro); only the private /tmp is
	 * writable. Not enforced by backend "none".
	 */
	int workspace_read_only;
	/*
	 * Paths (absolute) the commands must be able to read, set by the
	 * caller after executor_init() and before the first command: an MCP
	 * server's program and the files its arguments name. Never made
	 * writable, never wider than the path itself. Native: one that lies
	 * in /tmp, /run or /dev/shm (replaced by fresh ones in the sandbox)
	 * is bound read-only at the same place (at its resolved place and,
	 * when a link leads there, at the place as named), unless a writable
	 * root already shows it; elsewhere it is visible already. A path that
	 * lies in a hidden place or holds one, or lies in a .git or .forgex,
	 * is refused (executor_run(): FX_EDENIED naming it); a missing one
	 * is FX_ENOTFOUND. Docker: not supported (the container has a file
	 * system of its own): FX_EUNSUPPORTED naming the path. Backend
	 * "none" shows the host as it is.
	 */
	struct strvec readonly_paths;
	char *user;
	int allow_unconfined;

	/*
	 * Who decides about a command that needs approval: set by the caller
	 * after executor_init() (borrowed; NULL: nobody to ask, so mode ask
	 * approves nothing). Hooks and tools running through this executor
	 * share it.
	 */
	struct approver *approver;

	/*
	 * Called on the executor's thread after a command with each event of
	 * it for the run's record: "network", {protocol, domain, port,
	 * decision, reason, address} for each connection through the egress
	 * proxy. Takes the reference of `fields`. Set by the caller; NULL:
	 * none.
	 */
	void (*on_event)(void *data, const char *type, json_t *fields);
	void *event_data;

	/*
	 * The egress proxy's profile, set by the caller after executor_init()
	 * and before the first command (an MCP server's launcher: its own
	 * allowed_domains): what refusals call the allow list (borrowed;
	 * NULL: "[sandbox] allowed_domains"), and a descriptor that gets each
	 * connection as a line when it happens instead of events after the
	 * command (-1, the default: events and stderr notes after it).
	 */
	const char *allowed_domains_name;
	int proxy_log_fd;

	int auto_select;		/* choosing for "auto": no unconfined native */
	int grace_ms;			/* SIGTERM -> SIGKILL delay (default 1000) */
	int cancel_fd;			/* readable: stop the command; -1: none */
	const volatile sig_atomic_t *cancel_flag; /* non-zero: stop the command */
	struct strvec warnings;		/* for the person: what is not enforced */
};

/**
 * Configure `ex` from `cfg` (terminal.*, sandbox.*, permissions.mode) for
 * `workspace`, choosing the backend named by cfg->sandbox.backend ("auto"
 * tries native, then docker, then - only with allow_unconfined - none).
 * Returns 0, FX_EUNSUPPORTED when the backend cannot enforce what is
 * asked (the message names the missing feature), FX_EINVAL on a bad
 * value, FX_ENOTFOUND when the workspace or a writable root is missing.
 * On failure `ex` holds nothing to release.
 */
int executor_init(struct executor *ex, const struct config *cfg, const char *workspace);

/**
 * Let the caller stop a running command: when `fd` (-1: none) becomes
 * readable or `*flag` (NULL: none) becomes non-zero, executor_run() stops
 * the command as on a timeout and returns FX_EINTR. A signal handler
 * setting `*flag` interrupts the wait at once; the flag is also polled
 * every 100 ms. The executor does not own `fd`.
 */
void executor_set_cancel(struct executor *ex, int fd, const volatile sig_atomic_t *flag);

/** The name of the backend in use ("none", "native", "docker"). */
const char *executor_backend_name(const struct executor *ex);

/**
 * What the backend in use enforces on this machine (enum sandbox_cap bits,
 * sandbox.h): the backend's capabilities less what the kernel lacks.
 */
unsigned executor_caps(const struct executor *ex);

/** Warnings for the person (e.g. a fallback to "none"); borrowed. */
const struct strvec *executor_warnings(const struct executor *ex);

/**
 * Run one command and wait for it. On success (the command ran, whatever
 * its exit status, including timeouts) fills `*out` and returns 0.
 * Refusals return FX_EDENIED: "Command denied by policy: REASON",
 * "Command not approved: ARGV" (plus ' — the person said: "REASON"' when
 * the person answered e and gave one), "Working directory escapes workspace:
 * ...", or a sandbox setup failure in the child (the sandbox fails
 * closed). FX_EINTR when cancelled (the command is stopped first),
 * FX_EINVAL for an empty argv, FX_EOS when a system call fails in forgex.
 * Blocks for at most the timeout plus the kill grace.
 */
int executor_run(struct exec_result *out, struct executor *ex, const struct exec_request *req);

void executor_release(struct executor *ex);

/** Free the contents of `r`; it is left as EXEC_RESULT_INIT. */
void exec_result_release(struct exec_result *r);

/**
 * The result as a JSON object with the seed's fields: argv, exit_code,
 * stdout, stderr, timed_out, duration_ms, truncated (output bytes that are
 * not UTF-8 become U+FFFD). New reference.
 */
json_t *exec_result_to_json(const struct exec_result *r);

/**
 * Parse a size such as "2g", "512m", "64k", "1048576" (suffixes b, k, m,
 * g, t, case-insensitive, powers of 1024). Returns 0 or FX_EINVAL.
 */
int executor_parse_size(uint64_t *out, const char *text);

#endif
