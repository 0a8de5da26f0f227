#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"

#define ERR_MSG_MAX 4096

static _Thread_local char err_msg[ERR_MSG_MAX];
static _Thread_local int err_code;

/* Append `src` to err_msg at `*len`, truncating at the end of the buffer. */
static void msg_append(size_t *len, const char *src)
{
	size_t room = sizeof(err_msg) - 1 - *len, n = strlen(src);

	if (n > room)
		n = room;
	memcpy(err_msg + *len, src, n);
	*len += n;
	err_msg[*len] = '\0';
}

int err_set(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
	va_end(ap);
	err_code = code;
	return code;
}

int err_set_errno(int code, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
	va_end(ap);
	n = strlen(err_msg);
	msg_append(&n, ": ");
	msg_append(&n, strerror(saved));
	err_code = code;
	errno = saved;
	return code;
}

int err_prefix(int code, const char *fmt, ...)
{
	char old[ERR_MSG_MAX];
	va_list ap;
	size_t n;

	memcpy(old, err_msg, sizeof(old));
	va_start(ap, fmt);
	vsnprintf(err_msg, sizeof(err_msg), fmt, ap);
	va_end(ap);
	n = strlen(err_msg);
	if (old[0]) {
		msg_append(&n, ": ");
		msg_append(&n, old);
	}
	err_code = code;
	return code;
}

const char *err_last(void)
{
	return err_msg;
}

int err_last_code(void)
{
	return err_code;
}

void err_clear(void)
{
	err_msg[0] = '\0';
	err_code = FX_OK;
}

const char *err_name(int code)
{
	switch (code) {
	case FX_OK: return "OK";
	case FX_ERROR: return "ERROR";
	case FX_ENOTFOUND: return "ENOTFOUND";
	case FX_EDENIED: return "EDENIED";
	case FX_ETIMEOUT: return "ETIMEOUT";
	case FX_ELIMIT: return "ELIMIT";
	case FX_EPARSE: return "EPARSE";
	case FX_EOS: return "EOS";
	case FX_EINVAL: return "EINVAL";
	case FX_EEXISTS: return "EEXISTS";
	case FX_EPROVIDER: return "EPROVIDER";
	case FX_EINTR: return "EINTR";
	case FX_EUNSUPPORTED: return "EUNSUPPORTED";
	case FX_EMISMATCH: return "EMISMATCH";
	}
	return "EUNKNOWN";
}

void die(const char *fmt, ...)
{
	va_list ap;

	fputs("fatal: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(128);
}

void bug_fl(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "BUG: %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		die("out of memory allocating %zu bytes", n);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (!p)
		die("out of memory allocating %zu x %zu bytes", nmemb, size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		die("out of memory reallocating %zu bytes", n);
	return q;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		die("out of memory duplicating a string");
	return p;
}

char *xstrndup(const char *s, size_t n)
{
	char *p = strndup(s, n);

	if (!p)
		die("out of memory duplicating a string");
	return p;
}

char *xstrvfmt(const char *fmt, va_list ap)
{
	va_list cp;
	char *p;
	int n;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		BUG("bad format string '%s'", fmt);
	p = xmalloc((size_t)n + 1);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	return p;
}

char *xstrfmt(const char *fmt, ...)
{
	va_list ap;
	char *p;

	va_start(ap, fmt);
	p = xstrvfmt(fmt, ap);
	va_end(ap);
	return p;
}
