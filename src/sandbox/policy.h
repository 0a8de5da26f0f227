#ifndef FX_POLICY_H
#define FX_POLICY_H

/*
 * The command policy: the second of the three gates of DESIGN.md section
 * 4, ported from the seed's policies.py (CommandPolicy).
 *
 * A command is judged by the name of the program it runs:
 *
 *   base = the last component of argv[0] (Python's Path(x).name: trailing
 *          slashes and "." components ignored), lower-cased as Python's
 *          str.lower() does, with one ".exe" suffix removed;
 *   norm = base without its trailing digits and dots ("python3.12" ->
 *          "python").
 *
 * The order is the seed's: a name in the deny list is denied; with an
 * allowlist, a name not in it is denied; a network command needs approval
 * unless network access is allowed (mode "auto"); anything else is
 * allowed. Both names are looked up in every list.
 *
 * Beyond the seed, programs that run another program named in their
 * arguments (busybox, toybox, command, exec, builtin) are judged by that
 * program too, recursively, and by themselves (docs/internals/policy.md).
 * A name-based policy is a tripwire, not a wall: the OS sandbox (the third
 * gate) is what confines a command the policy lets through.
 *
 * The caller:
 *   1. policy_init_from_config() (or policy_init_defaults(), or fills a
 *      POLICY_INIT struct itself);
 *   2. policy_check() for each command, which fills a struct
 *      policy_verdict; when its decision is POLICY_APPROVAL,
 *      approver_decide() (sandbox/approval.h); policy_verdict_release();
 *   3. policy_release().
 *
 * The functions never block and never print.
 */

#include <stddef.h>

#include "base/buf.h"
#include "base/strvec.h"

struct config;

/** What policy_check() answers. */
enum policy_decision {
	POLICY_ALLOW,
	POLICY_DENY,
	POLICY_APPROVAL,
};

/** What to do with a command that needs approval (`[permissions] mode`). */
enum approval_mode {
	APPROVAL_SAFE,		/* never approve */
	APPROVAL_ASK,		/* ask on the controlling terminal; none: no */
	APPROVAL_AUTO,		/* always approve; network commands need none */
};

/**
 * The lists are exact strings, compared with the lower-cased names; an
 * empty `denied` or `network` means the seed's default list (as the seed's
 * `denied or DEFAULT_DENIED`), an empty `allowed` means no allowlist.
 */
struct policy {
	struct strvec allowed;	/* non-empty: allowlist mode */
	struct strvec denied;
	struct strvec network;	/* commands that may access the network */
	int network_allowed;	/* network commands need no approval */
	enum approval_mode mode;
};

/** Behaves as policy_init_defaults() (empty lists mean the defaults), without allocating. */
#define POLICY_INIT { STRVEC_INIT, STRVEC_INIT, STRVEC_INIT, 0, APPROVAL_ASK }

/** The seed's DEFAULT_DENIED, NULL-terminated, in the seed's order. */
extern const char *const policy_default_denied[];
/** Shells beyond the seed's list, denied along with the default list (rbash, ash, ...). */
extern const char *const policy_extra_denied[];
/** The seed's DEFAULT_NETWORK_COMMANDS, NULL-terminated, in the seed's order. */
extern const char *const policy_default_network[];

/**
 * The seed's CommandPolicy(): the default deny and network lists (copied
 * into `p`), no allowlist, network not allowed, mode ask.
 */
void policy_init_defaults(struct policy *p);

/**
 * The seed's CommandPolicy.from_config(): `[terminal] allowed` (empty: no
 * allowlist) and `denied` (empty: the default list), the default network
 * list, `[permissions] mode`, network allowed only in mode auto.
 * FX_EINVAL when the mode is not safe, ask or auto (`*p` is then left
 * untouched); a NULL mode is ask.
 */
int policy_init_from_config(struct policy *p, const struct config *cfg);

/** Free the lists; `p` is left as POLICY_INIT. */
void policy_release(struct policy *p);

/**
 * Everything policy_check() found out about one command, in one walk over
 * it and the programs its wrappers run.
 */
struct policy_verdict {
	enum policy_decision decision;
	/*
	 * Why: the seed's wording ("Command 'rm' is in the deny list",
	 * "Command 'x' is not in the allowlist", "Command 'pip' may access the
	 * network", "Empty command line"), plus where when the deciding program
	 * was found inside a wrapper ("... (run by 'busybox')"); empty for
	 * POLICY_ALLOW.
	 */
	struct buf reason;
	/*
	 * POLICY_APPROVAL that is needed even in mode auto (`git clean`, which
	 * deletes files no checkpoint holds, or a `git -c alias.*`): the
	 * executor then asks a person as in mode ask.
	 */
	int always_ask;
	/*
	 * A program the command runs (argv[0], or one a wrapper in it runs) is
	 * on the network list, whether or not network commands need approval,
	 * and the command is not denied. It only makes the command need
	 * approval; the network itself is [sandbox] network's and the egress
	 * proxy's (docs/internals/executor.md), never an approval's.
	 */
	int network;
};

#define POLICY_VERDICT_INIT { POLICY_ALLOW, BUF_INIT, 0, 0 }

/** Free the reason; `v` is left as POLICY_VERDICT_INIT. */
void policy_verdict_release(struct policy_verdict *v);

/**
 * Judge `argv` (`argc` entries, not necessarily NULL-terminated; a NULL
 * entry counts as ""): fills `*out` (the caller releases it) and returns
 * its decision. Never fails.
 */
enum policy_decision policy_check(struct policy_verdict *out, const struct policy *p,
				  const char *const *argv, size_t argc);

/**
 * The seed's check for the single program name `arg` (an argv[0]), with no
 * look at wrappers. For tests and for callers that judge names one by one.
 */
enum policy_decision policy_check_name(const struct policy *p, const char *arg,
				       struct buf *reason);

/**
 * Append the base name of `arg` to `out` (see the overview): Path(arg).name,
 * lower-cased like str.lower() (`arg` read as UTF-8; bytes that are not
 * UTF-8 are kept as they are), one ".exe" suffix removed.
 */
void policy_base_name(struct buf *out, const char *arg);

/**
 * Append `base` without its trailing run of digits and dots to `out`, as
 * re.sub(r"[0-9.]+$", "", base) does (so before a final "\n", too).
 */
void policy_norm_name(struct buf *out, const char *base);

/** "allow", "deny", "approval". */
const char *policy_decision_name(enum policy_decision d);

/** "safe", "ask", "auto". */
const char *approval_mode_name(enum approval_mode m);

/** Parse "safe", "ask" or "auto" into `*out`; FX_EINVAL (with a message) otherwise. */
int approval_mode_parse(enum approval_mode *out, const char *s);

#endif
