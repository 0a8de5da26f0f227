/*
 * The egress proxy (see proxy.h): HTTP CONNECT, plain HTTP with an
 * absolute URI, and SOCKS5, on one UNIX socket, deciding every
 * connection by the domain lists, the person's answers and the address
 * it resolves to.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "sandbox/approval.h"
#include "sandbox/proxy.h"

#define HEAD_MAX 16384		/* an HTTP request head larger than this is refused */
#define RELAY_BUF 16384
#define CONNECT_TIMEOUT_S 15
#define MAX_CONNS 256		/* at once; more are refused */

const struct strvec *proxy_test_hosts;

struct proxy {
	char *dir, *path;
	int listen_fd;
	pthread_t acceptor;
	struct strvec allowed, denied;
	enum approval_mode mode;
	struct approver *approver;
	char *allowed_name;		/* "[sandbox] allowed_domains", for reasons */
	int log_fd;

	pthread_mutex_t lock;
	pthread_cond_t idle;
	int stopping;
	size_t conns;			/* connection threads running */
	int fds[MAX_CONNS];		/* their client sockets, -1: free */
	struct strvec argv;		/* the current command, for questions */
	struct strvec yes, no;		/* this command's y and n answers */
	json_t *events;
};

struct conn {
	struct proxy *p;
	int fd;
	int slot;
};

/* ---- rules ------------------------------------------------------------ */

int proxy_domain_matches(const char *pattern, const char *host)
{
	size_t pl, hl = strlen(host);

	if (!strncmp(pattern, "*.", 2)) {
		pattern += 1;		/* ".example.org" */
		pl = strlen(pattern);
		return hl > pl && !strcasecmp(host + hl - pl, pattern);
	}
	pl = strlen(pattern);
	while (pl && pattern[pl - 1] == '.')
		pl--;
	return pl == hl && !strncasecmp(pattern, host, pl);
}

static int list_matches(const struct strvec *list, const char *host, int *exact)
{
	size_t i;
	int found = 0;

	for (i = 0; i < list->nr; i++) {
		if (!proxy_domain_matches(list->v[i], host))
			continue;
		found = 1;
		if (exact && strncmp(list->v[i], "*.", 2))
			*exact = 1;
	}
	return found;
}

static const char *v4_refused(uint32_t a)
{
	if ((a >> 24) == 0)
		return "unspecified (0.0.0.0/8)";
	if ((a >> 24) == 127)
		return "loopback";
	if (a == 0xa9fea9feU)
		return "cloud metadata";
	if ((a >> 16) == 0xa9fe)
		return "link-local";
	if ((a >> 24) == 10 || (a >> 20) == 0xac1 || (a >> 16) == 0xc0a8)
		return "private (RFC 1918)";
	if ((a >> 22) == (100U << 2 | 1))
		return "CGNAT (100.64.0.0/10)";
	if ((a >> 28) == 0xe)
		return "multicast";
	if ((a >> 28) == 0xf)
		return a == 0xffffffffU ? "broadcast" : "reserved (240.0.0.0/4)";
	if ((a >> 8) == 0xc00000 || (a >> 17) == (0xc612U >> 1))
		return "reserved (192.0.0.0/24, 198.18.0.0/15)";
	return NULL;
}

const char *proxy_address_refused(const struct sockaddr *sa)
{
	static const unsigned char metadata6[16] = { 0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0, 0,
						     0, 0, 0, 0, 0, 0, 0x02, 0x54 };
	const unsigned char *b;
	size_t i;
	int zero = 1;

	if (sa->sa_family == AF_INET)
		return v4_refused(ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr));
	if (sa->sa_family != AF_INET6)
		return "not an internet address";
	b = ((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr;
	for (i = 0; i < 15; i++)
		zero &= !b[i];
	if (zero)
		return b[15] == 1 ? "loopback" : b[15] ? "reserved (::/96)" : "unspecified";
	if (!memcmp(b, metadata6, 16))
		return "cloud metadata";
	/* IPv4-mapped ::ffff:a.b.c.d and NAT64 64:ff9b::a.b.c.d: judge the IPv4 address */
	if ((!memcmp(b, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12)) ||
	    !memcmp(b, "\0\x64\xff\x9b\0\0\0\0\0\0\0\0", 12))
		return v4_refused((uint32_t)b[12] << 24 | (uint32_t)b[13] << 16 |
				  (uint32_t)b[14] << 8 | b[15]);
	if ((b[0] & 0xfe) == 0xfc)
		return "private (unique local, fc00::/7)";
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0x80)
		return "link-local";
	if (b[0] == 0xfe && (b[1] & 0xc0) == 0xc0)
		return "site-local";
	if (b[0] == 0xff)
		return "multicast";
	return NULL;
}

/* ---- events ----------------------------------------------------------- */

static void add_event(struct proxy *p, const char *proto, const char *host, int port,
		      int allowed, const char *reason, const char *address)
{
	json_t *ev = json_pack("{s:s, s:s, s:i, s:s, s:s}", "protocol", proto, "domain", host,
			       "port", port, "decision", allowed ? "allowed" : "refused",
			       "reason", reason);

	if (!allowed)
		err_set(FX_EDENIED, "%s", reason);	/* for the answer to the client */
	if (!ev)
		return;
	if (address)
		json_object_set_new(ev, "address", json_string(address));
	if (p->log_fd >= 0) {
		/* one write(2) per line: lines of several threads do not mix */
		char *line = xstrfmt("forgex: the network proxy %s %s:%d: %s%s%s%s\n",
				     allowed ? "allowed" : "refused", host, port, reason,
				     address ? " (" : "", address ? address : "", address ? ")" : "");
		ssize_t n = write(p->log_fd, line, strlen(line));

		(void)n;	/* a log that cannot be written loses the line, not the decision */
		free(line);
		json_decref(ev);
		return;
	}
	pthread_mutex_lock(&p->lock);
	json_array_append_new(p->events, ev);
	pthread_mutex_unlock(&p->lock);
}

void proxy_take_events(struct proxy *p, json_t *out)
{
	pthread_mutex_lock(&p->lock);
	json_array_extend(out, p->events);
	json_array_clear(p->events);
	pthread_mutex_unlock(&p->lock);
}

void proxy_begin_command(struct proxy *p, const char *const *argv, size_t argc)
{
	size_t i;

	pthread_mutex_lock(&p->lock);
	strvec_clear(&p->argv);
	for (i = 0; i < argc; i++)
		strvec_push(&p->argv, argv[i] ? argv[i] : "");
	strvec_clear(&p->yes);
	strvec_clear(&p->no);
	pthread_mutex_unlock(&p->lock);
}

/* ---- deciding --------------------------------------------------------- */

/* Lower-case `host`, drop a trailing dot; 0 when it is not a plausible host name or address. */
static int clean_host(char *host)
{
	size_t n = strlen(host), i;

	while (n && host[n - 1] == '.')
		host[--n] = '\0';
	if (!n || n > 253)
		return 0;
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)host[i];

		if (!isalnum(c) && c != '-' && c != '.' && c != '_' && c != ':')
			return 0;
		host[i] = (char)tolower(c);
	}
	return 1;
}

/* Mode ask: whether the person lets the current command reach `host` (once per host). */
static int ask_person(struct proxy *p, const char *host, int port, struct buf *reason)
{
	struct approval_answer a = APPROVAL_ANSWER_INIT;
	struct approval_request rq;
	struct buf what = BUF_INIT, shown = BUF_INIT;
	char *reason_text;
	int yes;

	pthread_mutex_lock(&p->lock);
	if (strvec_find(&p->yes, host) >= 0 || strvec_find(&p->no, host) >= 0) {
		yes = strvec_find(&p->yes, host) >= 0;
		pthread_mutex_unlock(&p->lock);
		buf_addstr(reason, yes ? "approved for this command" : "the person said no");
		return yes;
	}
	buf_addf(&what, "a connection to %s (port %d)", host, port);
	buf_addstr(&shown, "by: ");
	approval_format_argv(&shown, (const char *const *)p->argv.v, p->argv.nr);
	pthread_mutex_unlock(&p->lock);

	memset(&rq, 0, sizeof(rq));
	rq.kind = APPROVAL_NETWORK_DOMAIN;
	rq.reason = reason_text = xstrfmt("the domain is not in %s", p->allowed_name);
	rq.tool = host;
	rq.what = what.buf;
	rq.shown = shown.buf;
	yes = approver_decide(p->approver, &a, APPROVAL_ASK, &rq) != APPROVE_NO;
	pthread_mutex_lock(&p->lock);
	if (strvec_find(yes ? &p->yes : &p->no, host) < 0)
		strvec_push(yes ? &p->yes : &p->no, host);
	pthread_mutex_unlock(&p->lock);
	if (!yes && (!p->approver || !p->approver->ask))
		buf_addf(reason, "not in %s, and nobody to ask", p->allowed_name);
	else if (!yes && a.reason && *a.reason)
		buf_addf(reason, "the person said no: \"%s\"", a.reason);
	else
		buf_addstr(reason, a.remembered ? "approved for this session" :
			   a.verdict == APPROVE_ALWAYS ? "approved by the person for this session" :
			   yes ? "approved by the person for this command" : "the person said no");
	approval_answer_release(&a);
	buf_release(&what);
	buf_release(&shown);
	free(reason_text);
	return yes;
}

/* Whether `host` may be reached at all, by the lists and the person; `*exact`: named exactly. */
static int domain_allowed(struct proxy *p, const char *host, int port, int *exact,
			  struct buf *reason)
{
	*exact = 0;
	if (list_matches(&p->denied, host, NULL)) {
		buf_addstr(reason, "in [sandbox] denied_domains");
		return 0;
	}
	if (list_matches(&p->allowed, host, exact)) {
		buf_addf(reason, "in %s", p->allowed_name);
		return 1;
	}
	if (p->mode == APPROVAL_ASK)
		return ask_person(p, host, port, reason);
	buf_addf(reason, "not in %s (mode %s asks nobody)", p->allowed_name,
		 approval_mode_name(p->mode));
	return 0;
}

static int test_host(const char *host, struct sockaddr_storage *ss, socklen_t *len)
{
	size_t i, n = strlen(host);

	for (i = 0; proxy_test_hosts && i < proxy_test_hosts->nr; i++) {
		const char *e = proxy_test_hosts->v[i];
		struct sockaddr_in *in = (struct sockaddr_in *)ss;

		if (strncmp(e, host, n) || e[n] != '=')
			continue;
		memset(ss, 0, sizeof(*ss));
		in->sin_family = AF_INET;
		if (inet_pton(AF_INET, e + n + 1, &in->sin_addr) != 1)
			return 0;
		*len = sizeof(*in);
		return 1;
	}
	return 0;
}

static void set_port(struct sockaddr *sa, int port)
{
	if (sa->sa_family == AF_INET)
		((struct sockaddr_in *)sa)->sin_port = htons((uint16_t)port);
	else
		((struct sockaddr_in6 *)sa)->sin6_port = htons((uint16_t)port);
}

static void format_addr(const struct sockaddr *sa, char *out, size_t n)
{
	const void *a = sa->sa_family == AF_INET ?
		(const void *)&((const struct sockaddr_in *)sa)->sin_addr :
		(const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr;

	if (!inet_ntop(sa->sa_family, a, out, (socklen_t)n))
		snprintf(out, n, "?");
}

static int connect_to(const struct sockaddr *sa, socklen_t len)
{
	struct timeval tv = { CONNECT_TIMEOUT_S, 0 };
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, sa, len) < 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	tv.tv_sec = 0;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

/*
 * Decide and connect: the upstream socket, or -1 with `reason` saying why
 * (`*refused`: by a rule, not by the network). Records the event.
 */
static int open_upstream(struct proxy *p, const char *proto, char *host, int port,
			 int *refused)
{
	struct buf reason = BUF_INIT;
	struct addrinfo hints, *res = NULL, *ai;
	struct sockaddr_storage ss;
	socklen_t sslen;
	char addr[INET6_ADDRSTRLEN] = "", port_s[16];
	const char *why = NULL;
	int exact, fd = -1, e = 0, rc;

	*refused = 1;
	if (!clean_host(host) || port <= 0 || port > 65535) {
		add_event(p, proto, host, port, 0, "not a valid host and port", NULL);
		return -1;
	}
	if (!domain_allowed(p, host, port, &exact, &reason)) {
		add_event(p, proto, host, port, 0, reason.buf, NULL);
		buf_release(&reason);
		return -1;
	}
	if (test_host(host, &ss, &sslen)) {
		memset(&hints, 0, sizeof(hints));
		hints.ai_family = ss.ss_family;
		hints.ai_addr = (struct sockaddr *)&ss;
		hints.ai_addrlen = sslen;
		res = NULL;
		ai = &hints;
	} else {
		memset(&hints, 0, sizeof(hints));
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		snprintf(port_s, sizeof(port_s), "%d", port);
		rc = getaddrinfo(host, port_s, &hints, &res);
		if (rc) {
			buf_reset(&reason);
			buf_addf(&reason, "cannot resolve: %s", gai_strerror(rc));
			add_event(p, proto, host, port, 0, reason.buf, NULL);
			buf_release(&reason);
			*refused = 0;
			return -1;
		}
		ai = res;
	}
	for (; ai && fd < 0; ai = ai->ai_next) {
		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		set_port(ai->ai_addr, port);
		format_addr(ai->ai_addr, addr, sizeof(addr));
		why = proxy_address_refused(ai->ai_addr);
		if (why && !exact)
			continue;
		fd = connect_to(ai->ai_addr, ai->ai_addrlen);
		if (fd < 0)
			e = errno;
		why = NULL;
	}
	if (res)
		freeaddrinfo(res);
	buf_reset(&reason);
	if (fd >= 0) {
		*refused = 0;
		if (exact)
			buf_addf(&reason, "named in %s", p->allowed_name);
		else
			buf_addstr(&reason, "allowed");
	} else if (why) {
		buf_addf(&reason, "resolves to %s, a %s address, which only a domain named "
			 "exactly in %s may reach", addr, why, p->allowed_name);
	} else {
		*refused = 0;
		buf_addf(&reason, "cannot connect: %s", strerror(e ? e : EHOSTUNREACH));
	}
	add_event(p, proto, host, port, fd >= 0, reason.buf, addr[0] ? addr : NULL);
	buf_release(&reason);
	return fd;
}

/* ---- the wire --------------------------------------------------------- */

static int write_all(int fd, const void *data, size_t n)
{
	const char *d = data;

	while (n) {
		ssize_t w = send(fd, d, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		d += w;
		n -= (size_t)w;
	}
	return 0;
}

static int read_full(int fd, void *data, size_t n)
{
	char *d = data;

	while (n) {
		ssize_t r = read(fd, d, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		d += r;
		n -= (size_t)r;
	}
	return 0;
}

/* Copy both ways until both sides are done. `pending` (may be empty) goes upstream first. */
static void relay(int a, int b, const char *pending, size_t pending_len)
{
	struct pollfd pfd[2];
	char buf[RELAY_BUF];
	int open_a = 1, open_b = 1;

	if (pending_len && write_all(b, pending, pending_len) < 0)
		return;
	while (open_a || open_b) {
		int i;

		pfd[0].fd = open_a ? a : -1;
		pfd[1].fd = open_b ? b : -1;
		pfd[0].events = pfd[1].events = POLLIN;
		if (poll(pfd, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return;
		}
		for (i = 0; i < 2; i++) {
			int from = i ? b : a, to = i ? a : b;
			ssize_t r;

			if (!pfd[i].revents)
				continue;
			r = read(from, buf, sizeof(buf));
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				shutdown(to, SHUT_WR);
				if (i)
					open_b = 0;
				else
					open_a = 0;
				continue;
			}
			if (write_all(to, buf, (size_t)r) < 0)
				return;
		}
	}
}

static void http_error(int fd, int code, const char *status, const char *host, int port,
		       const char *why)
{
	struct buf body = BUF_INIT, msg = BUF_INIT;

	buf_addf(&body, "forgex proxy: %s:%d: %s\n", host, port, why);
	buf_addf(&msg, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nX-Forgex-Proxy: %s\r\n"
		 "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", code, status,
		 code == 403 ? "refused" : "failed", body.len, body.buf);
	write_all(fd, msg.buf, msg.len);
	buf_release(&body);
	buf_release(&msg);
}

/* "host:port" or "[v6]:port" into host and port (default `def`); 0 when malformed. */
static int split_hostport(const char *s, size_t n, char *host, size_t hostsz, int *port, int def)
{
	const char *colon = NULL, *end = s + n;
	size_t hl;

	if (n && *s == '[') {
		const char *rb = memchr(s, ']', n);

		if (!rb)
			return 0;
		hl = (size_t)(rb - s - 1);
		if (hl >= hostsz)
			return 0;
		memcpy(host, s + 1, hl);
		host[hl] = '\0';
		colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
	} else {
		const char *c;

		for (c = s; c < end; c++)
			if (*c == ':')
				colon = c;
		hl = (size_t)((colon ? colon : end) - s);
		if (hl >= hostsz)
			return 0;
		memcpy(host, s, hl);
		host[hl] = '\0';
	}
	*port = def;
	if (colon) {
		char num[8];
		size_t pl = (size_t)(end - colon - 1);

		if (!pl || pl >= sizeof(num))
			return 0;
		memcpy(num, colon + 1, pl);
		num[pl] = '\0';
		*port = atoi(num);
	}
	return *host != '\0';
}

static void serve_socks5(struct proxy *p, int fd)
{
	unsigned char h[262], rep[10] = { 5, 0, 0, 1, 0, 0, 0, 0, 0, 0 };
	char host[256];
	int port, up, refused;

	/* greeting: VER (read by the caller) NMETHODS METHODS...; we take "no authentication" */
	h[0] = 5;
	if (read_full(fd, h + 1, 1) < 0 || read_full(fd, h + 2, h[1]) < 0 ||
	    !memchr(h + 2, 0, h[1])) {
		write_all(fd, "\x05\xff", 2);
		return;
	}
	if (write_all(fd, "\x05\x00", 2) < 0 || read_full(fd, h, 4) < 0 || h[0] != 5)
		return;
	if (h[1] != 1) {		/* only CONNECT */
		rep[1] = 7;
		write_all(fd, rep, sizeof(rep));
		return;
	}
	if (h[3] == 1) {
		if (read_full(fd, h + 4, 4) < 0 || !inet_ntop(AF_INET, h + 4, host, sizeof(host)))
			return;
	} else if (h[3] == 4) {
		if (read_full(fd, h + 4, 16) < 0 || !inet_ntop(AF_INET6, h + 4, host, sizeof(host)))
			return;
	} else if (h[3] == 3) {
		if (read_full(fd, h + 4, 1) < 0 || read_full(fd, host, h[4]) < 0)
			return;
		host[h[4]] = '\0';
	} else {
		rep[1] = 8;
		write_all(fd, rep, sizeof(rep));
		return;
	}
	if (read_full(fd, h, 2) < 0)
		return;
	port = h[0] << 8 | h[1];
	up = open_upstream(p, "socks5", host, port, &refused);
	if (up < 0) {
		rep[1] = refused ? 2 : 5;	/* not allowed by ruleset / refused */
		write_all(fd, rep, sizeof(rep));
		return;
	}
	if (write_all(fd, rep, sizeof(rep)) == 0)
		relay(fd, up, NULL, 0);
	close(up);
}

/* Whether header line `l` (length n) is named `name` (case-insensitive). */
static int header_is(const char *l, size_t n, const char *name)
{
	size_t k = strlen(name);

	return n > k && l[k] == ':' && !strncasecmp(l, name, k);
}

static void serve_http(struct proxy *p, int fd, char first)
{
	struct buf head = BUF_INIT, out = BUF_INIT;
	char host[256], *end;
	const char *sp1, *sp2, *target, *line, *body;
	int port, up, refused, connect_method;
	size_t tlen;

	buf_addch(&head, first);
	while (!(end = strstr(head.buf, "\r\n\r\n"))) {
		char c[2048];
		ssize_t r = read(fd, c, sizeof(c));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || head.len + (size_t)r > HEAD_MAX)
			goto out;
		buf_add(&head, c, (size_t)r);
	}
	body = end + 4;
	sp1 = strchr(head.buf, ' ');
	sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
	if (!sp1 || !sp2 || sp2 > strstr(head.buf, "\r\n")) {
		http_error(fd, 400, "Bad Request", "?", 0, "not an HTTP request");
		goto out;
	}
	target = sp1 + 1;
	tlen = (size_t)(sp2 - target);
	connect_method = (size_t)(sp1 - head.buf) == 7 && !strncmp(head.buf, "CONNECT", 7);
	if (connect_method) {
		if (!split_hostport(target, tlen, host, sizeof(host), &port, 443)) {
			http_error(fd, 400, "Bad Request", "?", 0, "bad CONNECT target");
			goto out;
		}
		up = open_upstream(p, "connect", host, port, &refused);
		if (up < 0) {
			http_error(fd, refused ? 403 : 502, refused ? "Forbidden" : "Bad Gateway",
				   host, port, err_last());
			goto out;
		}
		if (write_all(fd, "HTTP/1.1 200 Connection established\r\n\r\n", 39) == 0)
			relay(fd, up, body, head.len - (size_t)(body - head.buf));
		close(up);
		goto out;
	}
	/* "GET http://host[:port]/path HTTP/1.1": forward in origin form */
	if (tlen < 8 || strncasecmp(target, "http://", 7)) {
		http_error(fd, 400, "Bad Request", "?", 0, "only http:// absolute URIs and "
			   "CONNECT are proxied");
		goto out;
	}
	{
		const char *auth = target + 7, *path = memchr(auth, '/', tlen - 7);
		size_t alen = (size_t)((path ? path : target + tlen) - auth);

		if (!split_hostport(auth, alen, host, sizeof(host), &port, 80)) {
			http_error(fd, 400, "Bad Request", "?", 0, "bad URI");
			goto out;
		}
		buf_add(&out, head.buf, (size_t)(sp1 - head.buf) + 1);
		if (path)
			buf_add(&out, path, (size_t)(target + tlen - path));
		else
			buf_addch(&out, '/');
		buf_add(&out, sp2, (size_t)(strstr(head.buf, "\r\n") - sp2) + 2);
	}
	/* headers, without the hop-by-hop ones; the upstream closes after one answer */
	for (line = strstr(head.buf, "\r\n") + 2; line < end + 2; ) {
		const char *eol = strstr(line, "\r\n");
		size_t n = (size_t)(eol - line);

		if (!header_is(line, n, "Proxy-Connection") && !header_is(line, n, "Connection") &&
		    !header_is(line, n, "Proxy-Authorization") && !header_is(line, n, "Keep-Alive"))
			buf_add(&out, line, n + 2);
		line = eol + 2;
	}
	buf_addstr(&out, "Connection: close\r\n\r\n");
	buf_add(&out, body, head.len - (size_t)(body - head.buf));
	up = open_upstream(p, "http", host, port, &refused);
	if (up < 0) {
		http_error(fd, refused ? 403 : 502, refused ? "Forbidden" : "Bad Gateway", host,
			   port, err_last());
		goto out;
	}
	relay(fd, up, out.buf, out.len);
	close(up);
out:
	buf_release(&head);
	buf_release(&out);
}

static void *conn_main(void *arg)
{
	struct conn *c = arg;
	struct proxy *p = c->p;
	char first;
	ssize_t r;

	do
		r = read(c->fd, &first, 1);
	while (r < 0 && errno == EINTR);
	if (r == 1 && first == 5)
		serve_socks5(p, c->fd);
	else if (r == 1)
		serve_http(p, c->fd, first);
	pthread_mutex_lock(&p->lock);
	p->fds[c->slot] = -1;
	close(c->fd);
	if (!--p->conns)
		pthread_cond_broadcast(&p->idle);
	pthread_mutex_unlock(&p->lock);
	free(c);
	return NULL;
}

static void *accept_main(void *arg)
{
	struct proxy *p = arg;

	for (;;) {
		int fd = accept4(p->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		struct conn *c;
		pthread_attr_t attr;
		pthread_t t;
		int slot;

		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return NULL;
		}
		pthread_mutex_lock(&p->lock);
		for (slot = 0; slot < MAX_CONNS && p->fds[slot] >= 0; slot++)
			;
		if (p->stopping || slot == MAX_CONNS) {
			pthread_mutex_unlock(&p->lock);
			close(fd);
			if (p->stopping)
				return NULL;
			continue;
		}
		p->fds[slot] = fd;
		p->conns++;
		pthread_mutex_unlock(&p->lock);
		c = xcalloc(1, sizeof(*c));
		c->p = p;
		c->fd = fd;
		c->slot = slot;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&t, &attr, conn_main, c)) {
			pthread_mutex_lock(&p->lock);
			p->fds[slot] = -1;
			p->conns--;
			pthread_mutex_unlock(&p->lock);
			close(fd);
			free(c);
		}
		pthread_attr_destroy(&attr);
	}
}

/* ---- lifecycle -------------------------------------------------------- */

int proxy_start(struct proxy **out, const struct proxy_rules *rules)
{
	struct proxy *p = xcalloc(1, sizeof(*p));
	struct sockaddr_un sun;
	const char *base = getenv("TMPDIR");
	char *tmpl;
	size_t i;
	int ret;

	if (!base || base[0] != '/' || strlen(base) > 60 || !fsutil_is_dir(base))
		base = "/tmp";
	tmpl = xstrfmt("%s/forgex-proxy-XXXXXX", base);
	if (!mkdtemp(tmpl)) {		/* mode 0700: only this user reaches the socket */
		ret = err_set_errno(FX_EOS, "cannot make the proxy's folder in '%s'", base);
		free(tmpl);
		free(p);
		return ret;
	}
	p->dir = tmpl;
	p->path = xstrfmt("%s/proxy.sock", p->dir);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", p->path);
	p->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&sun, sizeof(sun)) < 0 ||
	    listen(p->listen_fd, 64) < 0) {
		ret = err_set_errno(FX_EOS, "cannot serve the proxy on '%s'", p->path);
		goto fail;
	}
	strvec_init(&p->allowed);
	strvec_init(&p->denied);
	strvec_init(&p->argv);
	strvec_init(&p->yes);
	strvec_init(&p->no);
	for (i = 0; rules->allowed && i < rules->allowed->nr; i++)
		strvec_push(&p->allowed, rules->allowed->v[i]);
	for (i = 0; rules->denied && i < rules->denied->nr; i++)
		strvec_push(&p->denied, rules->denied->v[i]);
	p->mode = rules->mode;
	p->approver = rules->approver;
	p->allowed_name = xstrdup(rules->allowed_name ? rules->allowed_name :
				  "[sandbox] allowed_domains");
	p->log_fd = rules->log_fd;
	p->events = json_array();
	for (i = 0; i < MAX_CONNS; i++)
		p->fds[i] = -1;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->idle, NULL);
	if (pthread_create(&p->acceptor, NULL, accept_main, p)) {
		ret = err_set(FX_EOS, "cannot start the proxy's thread");
		pthread_mutex_destroy(&p->lock);
		pthread_cond_destroy(&p->idle);
		strvec_clear(&p->allowed);
		strvec_clear(&p->denied);
		json_decref(p->events);
		free(p->allowed_name);
		goto fail;
	}
	*out = p;
	return 0;
fail:
	if (p->listen_fd >= 0)
		close(p->listen_fd);
	unlink(p->path);
	rmdir(p->dir);
	free(p->path);
	free(p->dir);
	free(p);
	return ret;
}

const char *proxy_socket_path(const struct proxy *p)
{
	return p->path;
}

void proxy_stop(struct proxy *p)
{
	struct sockaddr_un sun;
	size_t i;
	int wake;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = 1;
	for (i = 0; i < MAX_CONNS; i++)
		if (p->fds[i] >= 0)
			shutdown(p->fds[i], SHUT_RDWR);
	pthread_mutex_unlock(&p->lock);
	/* wake the accept thread: it sees `stopping` at its next connection */
	wake = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", p->path);
	if (wake >= 0 && connect(wake, (struct sockaddr *)&sun, sizeof(sun)) < 0)
		shutdown(p->listen_fd, SHUT_RDWR);
	pthread_join(p->acceptor, NULL);
	if (wake >= 0)
		close(wake);
	pthread_mutex_lock(&p->lock);
	while (p->conns)
		pthread_cond_wait(&p->idle, &p->lock);
	pthread_mutex_unlock(&p->lock);
	close(p->listen_fd);
	unlink(p->path);
	rmdir(p->dir);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->idle);
	strvec_clear(&p->allowed);
	strvec_clear(&p->denied);
	strvec_clear(&p->argv);
	strvec_clear(&p->yes);
	strvec_clear(&p->no);
	json_decref(p->events);
	free(p->allowed_name);
	free(p->path);
	free(p->dir);
	free(p);
}
