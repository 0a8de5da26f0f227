#ifndef FX_PROXY_H
#define FX_PROXY_H

/*
 * The egress proxy: the only way out of a sandbox with `[sandbox] network
 * = true` (docs/internals/executor.md, "Network").
 *
 * forgex serves it from threads of its own process, outside the sandbox,
 * on a UNIX socket in a private folder (mode 0700). Inside the sandbox's
 * network namespace (loopback only) a small forwarder that forgex starts
 * (sb_bridge_start()) listens on 127.0.0.1:SB_PROXY_PORT and relays each
 * connection to that socket; the command gets HTTP_PROXY, HTTPS_PROXY and
 * ALL_PROXY pointing there. One port speaks three protocols, told apart
 * by the first byte: HTTP CONNECT (https, git), plain HTTP with an
 * absolute URI (pip's and npm's http: indexes), and SOCKS5 (ALL_PROXY,
 * socks5h: the proxy resolves the name).
 *
 * Every connection is decided, in this order:
 *   1. a host matching `[sandbox] denied_domains` is refused;
 *   2. a host matching `allowed_domains` is allowed ("*.example.org"
 *      matches every name below example.org, not example.org itself);
 *   3. otherwise mode ask asks the person once per host through the
 *      approver (APPROVAL_NETWORK_DOMAIN: y for the rest of this command,
 *      a for the rest of the session, n refused for this command); modes
 *      auto and safe refuse;
 *   4. the proxy resolves the name itself and refuses every address that
 *      is loopback, unspecified, private (RFC 1918, ULA), link-local
 *      (169.254.169.254 and fd00:ec2::254, the cloud metadata services,
 *      among them), CGNAT, multicast, broadcast or reserved - unless the
 *      host is named exactly (no wildcard) in allowed_domains.
 * Each decision is kept as an event, {domain, port, decision, reason,
 * address, protocol}, for the caller to record once the command is over
 * (or written as a line at once: proxy_rules.log_fd).
 *
 * Threads: proxy_start() starts an accept thread, which starts one thread
 * per connection. The other functions are called by the executor's
 * thread; they take the proxy's lock.
 */

#include <stddef.h>
#include <sys/socket.h>
#include <jansson.h>

#include "base/strvec.h"
#include "sandbox/policy.h"

struct approver;
struct proxy;

/** What the proxy enforces (copied by proxy_start()). */
struct proxy_rules {
	const struct strvec *allowed;	/* [sandbox] allowed_domains */
	const struct strvec *denied;	/* [sandbox] denied_domains */
	enum approval_mode mode;	/* ask: unlisted hosts are asked about */
	struct approver *approver;	/* borrowed; NULL: nobody to ask */
	/* what reasons call the allow list; NULL: "[sandbox] allowed_domains" */
	const char *allowed_name;
	/*
	 * >= 0: each decision is written there as a line when it is made
	 * ("forgex: the network proxy allowed|refused HOST:PORT: REASON"),
	 * and not kept as an event: for a command that lives as long as
	 * forgex (an MCP server), whose events would otherwise pile up until
	 * it ends. -1: kept for proxy_take_events().
	 */
	int log_fd;
};

/** Make the private folder and socket and start serving. 0 or FX_EOS. */
int proxy_start(struct proxy **out, const struct proxy_rules *rules);

/** The socket's path (borrowed). */
const char *proxy_socket_path(const struct proxy *p);

/**
 * A new command starts using the proxy: its argv is what a question shows,
 * and the y and n answers of the previous command are forgotten.
 */
void proxy_begin_command(struct proxy *p, const char *const *argv, size_t argc);

/** Move the events recorded so far into the array `out` (in order). */
void proxy_take_events(struct proxy *p, json_t *out);

/** Stop serving, wait for every connection thread, remove the folder. */
void proxy_stop(struct proxy *p);

/**
 * Whether `host` (lower case, no trailing dot) matches the list entry
 * `pattern`: equal, or below the domain of a "*.domain" entry.
 */
int proxy_domain_matches(const char *pattern, const char *host);

/**
 * Why the proxy would refuse to connect to `sa` ("loopback", "private",
 * "link-local", "cloud metadata", "CGNAT", "multicast", ...), or NULL
 * when it is a public address.
 */
const char *proxy_address_refused(const struct sockaddr *sa);

/**
 * For tests only: "name=address" entries the proxy's resolver answers
 * before asking the system's (so that a test registry on 127.0.0.1 can be
 * named like a real one; such a name must still be allowed, and named
 * exactly to reach loopback). NULL in forgex itself.
 */
extern const struct strvec *proxy_test_hosts;

#endif
