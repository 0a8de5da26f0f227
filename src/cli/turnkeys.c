/*
 * The terminal while a session's turn runs: see turnkeys.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/err.h"
#include "cli/turnkeys.h"

#define ESC_ALONE_MS 50		/* as the line editor tells the Esc key from a sequence */
#define TYPED_MAX (64 * 1024)

enum { TK_TEXT, TK_ESC, TK_CSI, TK_SS3 };

struct turnkeys {
	int fd;
	volatile sig_atomic_t *cancel;
	struct termios saved;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int wake[2];		/* a byte here: look at paused and stopping again */
	int paused, stopping, escaped;
	int state;		/* where in a key's sequence the last byte left us */
	struct buf typed;
};

static void tk_escape(struct turnkeys *tk)
{
	tk->escaped = 1;
	*tk->cancel = 1;
}

/* Drop the last character of what was typed (Backspace). */
static void tk_rubout(struct buf *b)
{
	size_t n = b->len;

	while (n && ((unsigned char)b->buf[n - 1] & 0xc0) == 0x80)
		n--;
	buf_setlen(b, n ? n - 1 : 0);
}

static void tk_feed(struct turnkeys *tk, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		switch (tk->state) {
		case TK_ESC:
			if (c == '[') {
				tk->state = TK_CSI;
				continue;
			}
			if (c == 'O') {
				tk->state = TK_SS3;
				continue;
			}
			/* Esc, then another key at once: Alt-key, dropped; ESC ESC: an Esc first */
			if (c == 033) {
				tk_escape(tk);
				continue;
			}
			tk->state = TK_TEXT;
			continue;
		case TK_CSI:
			if (c >= 0x40 && c <= 0x7e)
				tk->state = TK_TEXT;
			continue;
		case TK_SS3:
			tk->state = TK_TEXT;
			continue;
		default:
			break;
		}
		if (c == 033)
			tk->state = TK_ESC;
		else if (c == 0x7f || c == 0x08)
			tk_rubout(&tk->typed);
		else if (c == 0x15)
			buf_reset(&tk->typed);
		else if ((c >= 0x20 || c == '\n' || c == '\t' || c == '\r') &&
			 tk->typed.len < TYPED_MAX)
			buf_addch(&tk->typed, c == '\r' ? '\n' : (char)c);
	}
}

static void *tk_main(void *arg)
{
	struct turnkeys *tk = arg;

	for (;;) {
		struct pollfd p[2] = { { tk->fd, POLLIN, 0 }, { tk->wake[0], POLLIN, 0 } };
		char b[512];
		ssize_t n;

		pthread_mutex_lock(&tk->lock);
		while (tk->paused && !tk->stopping)
			pthread_cond_wait(&tk->cond, &tk->lock);
		if (tk->stopping) {
			pthread_mutex_unlock(&tk->lock);
			break;
		}
		pthread_mutex_unlock(&tk->lock);
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents) {
			while (read(tk->wake[0], b, sizeof(b)) > 0)
				;
			continue;
		}
		if (p[0].revents & (POLLERR | POLLNVAL))
			break;
		if (!(p[0].revents & (POLLIN | POLLHUP)))
			continue;
		/* read only with the lock: a pause waits for a read in progress */
		pthread_mutex_lock(&tk->lock);
		if (tk->paused || tk->stopping) {
			pthread_mutex_unlock(&tk->lock);
			continue;
		}
		n = read(tk->fd, b, sizeof(b));
		if (n > 0) {
			tk_feed(tk, b, (size_t)n);
			if (tk->state == TK_ESC) {
				struct pollfd q = { tk->fd, POLLIN, 0 };

				if (poll(&q, 1, ESC_ALONE_MS) == 0) {
					tk_escape(tk);
					tk->state = TK_TEXT;
				}
			}
		}
		pthread_mutex_unlock(&tk->lock);
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN))
			break;	/* the terminal went away */
	}
	return NULL;
}

void turnkeys_start(struct turnkeys **out, int fd, volatile sig_atomic_t *cancel)
{
	struct turnkeys *tk;
	struct termios t;
	sigset_t all, old;
	int ret;

	*out = NULL;
	if (!isatty(fd))
		return;
	tk = xcalloc(1, sizeof(*tk));
	tk->fd = fd;
	tk->cancel = cancel;
	buf_init(&tk->typed, 0);
	if (tcgetattr(fd, &tk->saved) < 0 || pipe2(tk->wake, O_CLOEXEC | O_NONBLOCK) < 0) {
		buf_release(&tk->typed);
		free(tk);
		return;
	}
	pthread_mutex_init(&tk->lock, NULL);
	pthread_cond_init(&tk->cond, NULL);
	/* no echo, no line editing; ISIG stays: Ctrl-C is still the signal that stops a turn */
	t = tk->saved;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO | ECHONL | IEXTEN);
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	while (tcsetattr(fd, TCSANOW, &t) < 0 && errno == EINTR)
		;
	/* signals go to the threads of the turn, which wait on them, never to this one */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&tk->thread, NULL, tk_main, tk);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		while (tcsetattr(fd, TCSANOW, &tk->saved) < 0 && errno == EINTR)
			;
		close(tk->wake[0]);
		close(tk->wake[1]);
		pthread_mutex_destroy(&tk->lock);
		pthread_cond_destroy(&tk->cond);
		buf_release(&tk->typed);
		free(tk);
		return;
	}
	*out = tk;
}

static void tk_wake(struct turnkeys *tk)
{
	ssize_t w = write(tk->wake[1], "", 1);

	(void)w;	/* the pipe is full: it is awake already */
}

void turnkeys_pause(struct turnkeys *tk)
{
	if (!tk)
		return;
	pthread_mutex_lock(&tk->lock);
	tk->paused = 1;
	pthread_mutex_unlock(&tk->lock);
	tk_wake(tk);
}

void turnkeys_resume(struct turnkeys *tk)
{
	if (!tk)
		return;
	pthread_mutex_lock(&tk->lock);
	tk->paused = 0;
	pthread_cond_signal(&tk->cond);
	pthread_mutex_unlock(&tk->lock);
}

int turnkeys_stop(struct turnkeys *tk, struct buf *typed)
{
	int escaped;

	if (!tk)
		return 0;
	pthread_mutex_lock(&tk->lock);
	tk->stopping = 1;
	pthread_cond_signal(&tk->cond);
	pthread_mutex_unlock(&tk->lock);
	tk_wake(tk);
	pthread_join(tk->thread, NULL);
	while (tcsetattr(tk->fd, TCSANOW, &tk->saved) < 0 && errno == EINTR)
		;
	if (typed)
		buf_addbuf(typed, &tk->typed);
	escaped = tk->escaped;
	close(tk->wake[0]);
	close(tk->wake[1]);
	pthread_mutex_destroy(&tk->lock);
	pthread_cond_destroy(&tk->cond);
	buf_release(&tk->typed);
	free(tk);
	return escaped;
}
