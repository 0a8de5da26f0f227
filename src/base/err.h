#ifndef FX_ERR_H
#define FX_ERR_H

/*
 * The error convention.
 *
 * A function that can fail returns int: >= 0 on success, a negative FX_E*
 * code on failure. The site that detects the failure records one message
 * with err_set() (or err_set_errno() to append strerror(errno)); callers may
 * add context in front with err_prefix() and pass the code up. Only the
 * front (src/cli/) prints err_last() for a person.
 *
 * The recorded message is per thread. Out of memory is not an error code:
 * the x-allocators below abort with a message, as git and tmux do.
 */

#include <stddef.h>
#include <stdarg.h>

enum {
	FX_OK = 0,
	FX_ERROR = -1,		/* generic failure */
	FX_ENOTFOUND = -2,	/* file, key, command, object not found */
	FX_EDENIED = -3,	/* refused by policy, permission or sandbox */
	FX_ETIMEOUT = -4,	/* a deadline passed */
	FX_ELIMIT = -5,		/* a size or count limit was reached */
	FX_EPARSE = -6,		/* malformed input */
	FX_EOS = -7,		/* a system call failed */
	FX_EINVAL = -8,		/* invalid argument or value */
	FX_EEXISTS = -9,	/* already exists */
	FX_EPROVIDER = -10,	/* the model provider failed */
	FX_EINTR = -11,		/* interrupted by the user */
	FX_EUNSUPPORTED = -12,	/* the kernel or platform cannot do it */
	FX_EMISMATCH = -13,	/* replay: request differs from recording */
};

#if defined(__GNUC__)
#define FX_PRINTF(a, b) __attribute__((format(printf, a, b)))
#define FX_NORETURN __attribute__((noreturn))
#else
#define FX_PRINTF(a, b)
#define FX_NORETURN
#endif

/** Record `fmt` as the last error message; returns `code` for tail calls. */
int err_set(int code, const char *fmt, ...) FX_PRINTF(2, 3);

/** As err_set(), appending ": strerror(errno)" (errno read on entry). */
int err_set_errno(int code, const char *fmt, ...) FX_PRINTF(2, 3);

/** Put "context: " in front of the recorded message; returns `code`. */
int err_prefix(int code, const char *fmt, ...) FX_PRINTF(2, 3);

/** The last recorded message, or "" when none. Borrowed; valid until next err_*. */
const char *err_last(void);

/** The code given with the last recorded message, or FX_OK. */
int err_last_code(void);

/** Forget the recorded message. */
void err_clear(void);

/** A short name for an FX_E* code ("ENOTFOUND"). */
const char *err_name(int code);

/** Print "fatal: ..." to stderr and exit(128). For the front and for OOM. */
FX_NORETURN void die(const char *fmt, ...) FX_PRINTF(1, 2);

/** Report an impossible state (a bug in forgex, never bad input) and abort. */
#define BUG(...) bug_fl(__FILE__, __LINE__, __VA_ARGS__)
FX_NORETURN void bug_fl(const char *file, int line, const char *fmt, ...) FX_PRINTF(3, 4);

/* Allocators that never return NULL: they die on exhaustion. */
void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/** printf into a new allocated string. */
char *xstrfmt(const char *fmt, ...) FX_PRINTF(1, 2);
char *xstrvfmt(const char *fmt, va_list ap);

/** Grow `*p` (an array of `nr` used of `*alloc` elements of `size`) to hold `want`. */
#define ALLOC_GROW(p, want, alloc) \
	do { \
		if ((want) > (alloc)) { \
			size_t alloc_grow_n_ = (alloc) ? (alloc) * 2 : 8; \
			if (alloc_grow_n_ < (want)) \
				alloc_grow_n_ = (want); \
			(p) = xrealloc((p), alloc_grow_n_ * sizeof(*(p))); \
			(alloc) = alloc_grow_n_; \
		} \
	} while (0)

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/** Free *p and set it to NULL (for cleanup attributes and release functions). */
#define FREE_AND_NULL(p) do { free(p); (p) = NULL; } while (0)

#endif
