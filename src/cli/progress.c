/*
 * The spinner on a terminal; see progress.h.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/termsafe.h"
#include "cli/progress.h"

/* Redraws per second. */
#define TICK_NS 100000000L
/* A wait shorter than this shows no spinner (no flicker on quick steps). */
#define SHOW_AFTER 0.2

static const char frames[] = "|/-\\";

static struct {
	pthread_mutex_t lock;
	pthread_t thread;
	int running;		/* the thread exists */
	int stop;		/* the thread should end */
	int held;		/* progress_hold() depth */
	int shown;		/* the spinner is on the line now */
	int fd;
	unsigned frame;
	double since;		/* when the current wait began */
	char label[512];
} sp = { .lock = PTHREAD_MUTEX_INITIALIZER, .fd = -1 };

/*
 * Write all of `s`; a terminal that stops taking output only loses a frame.
 * Plain write(2): this runs on the caller's thread too, whose pending
 * err_last() must survive.
 */
static void put(const char *s, size_t n)
{
	int saved = errno;

	while (n) {
		ssize_t w = write(sp.fd, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		s += w;
		n -= (size_t)w;
	}
	errno = saved;
}

/* The caller holds sp.lock. */
static void erase_locked(void)
{
	if (sp.shown)
		put("\r\033[K", 4);
	sp.shown = 0;
}

void progress_format(char *out, size_t size, unsigned frame, const char *label,
		     double seconds, unsigned width)
{
	char tail[32];
	size_t n = 0, tl, i, cols = 0, room;

	if (!size)
		return;
	tl = (size_t)snprintf(tail, sizeof(tail), "  %.1fs", seconds < 0 ? 0.0 : seconds);
	if (tl >= sizeof(tail))
		tl = sizeof(tail) - 1;
	/* "F " + label + tail must fit in width columns and size - 1 bytes */
	room = width > tl + 2 ? width - tl - 2 : 0;
	if (size < 3 + tl) {
		out[0] = '\0';
		return;
	}
	out[n++] = frames[frame % (sizeof(frames) - 1)];
	out[n++] = ' ';
	for (i = 0; label[i];) {
		size_t len = 1;

		if (((unsigned char)label[i] & 0xe0) == 0xc0)
			len = 2;
		else if (((unsigned char)label[i] & 0xf0) == 0xe0)
			len = 3;
		else if (((unsigned char)label[i] & 0xf8) == 0xf0)
			len = 4;
		if (strnlen(label + i, len) < len)
			break;	/* a cut sequence at the end */
		if (cols + 1 > room || n + len + tl + 1 > size)
			break;
		memcpy(out + n, label + i, len);
		n += len;
		i += len;
		cols++;
	}
	memcpy(out + n, tail, tl);
	n += tl;
	out[n] = '\0';
}

static unsigned term_width(void)
{
	struct winsize ws;

	if (!ioctl(sp.fd, TIOCGWINSZ, &ws) && ws.ws_col > 1)
		return ws.ws_col - 1u;	/* never the last column: no wrap */
	return 79;
}

static void *spin(void *arg)
{
	(void)arg;
	for (;;) {
		struct timespec tick = { 0, TICK_NS };
		char line[600];
		double waited;

		nanosleep(&tick, NULL);
		pthread_mutex_lock(&sp.lock);
		if (sp.stop) {
			pthread_mutex_unlock(&sp.lock);
			break;
		}
		waited = clk_mono_s() - sp.since;
		if (!sp.held && sp.label[0] && waited >= SHOW_AFTER) {
			put("\r", 1);
			progress_format(line, sizeof(line), sp.frame++, sp.label, waited,
					term_width());
			put(line, strlen(line));
			put("\033[K", 3);
			sp.shown = 1;
		}
		pthread_mutex_unlock(&sp.lock);
	}
	return NULL;
}

int progress_start(FILE *f)
{
	const char *term = getenv("TERM");
	sigset_t all, old;
	int fd = fileno(f), ret;

	if (sp.running || fd < 0 || !isatty(fd) || (term && !strcmp(term, "dumb")))
		return 0;
	sp.fd = fd;
	sp.stop = 0;
	sp.held = 0;
	sp.shown = 0;
	sp.frame = 0;
	sp.label[0] = '\0';
	sp.since = clk_mono_s();
	/* signals go to the main thread, whose handlers set the cancel flag */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&sp.thread, NULL, spin, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		return 0;
	sp.running = 1;
	return 1;
}

int progress_active(void)
{
	return sp.running;
}

void progress_hold(void)
{
	if (!sp.running)
		return;
	pthread_mutex_lock(&sp.lock);
	if (!sp.held++)
		erase_locked();
	pthread_mutex_unlock(&sp.lock);
}

void progress_release(const char *label)
{
	char *safe;

	if (!sp.running)
		return;
	/* labels quote tool arguments and file names a model chose */
	safe = label ? termsafe_dup(label, 0) : NULL;
	pthread_mutex_lock(&sp.lock);
	if (safe) {
		snprintf(sp.label, sizeof(sp.label), "%s", safe);
		sp.since = clk_mono_s();
	}
	if (sp.held)
		sp.held--;
	pthread_mutex_unlock(&sp.lock);
	free(safe);
}

void progress_stop(void)
{
	if (!sp.running)
		return;
	pthread_mutex_lock(&sp.lock);
	sp.stop = 1;
	pthread_mutex_unlock(&sp.lock);
	pthread_join(sp.thread, NULL);
	pthread_mutex_lock(&sp.lock);
	erase_locked();
	sp.running = 0;
	pthread_mutex_unlock(&sp.lock);
}
