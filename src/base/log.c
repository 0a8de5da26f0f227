#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/log.h"
#include "base/termsafe.h"

static enum log_level level = LOG_INFO;
static int color = -1;

int log_color_for_fd(int fd)
{
	const char *nc = getenv("NO_COLOR");

	if (nc && *nc)
		return 0;
	return isatty(fd);
}

void log_setup(int quiet, int verbose)
{
	int l = LOG_INFO + verbose;

	if (quiet)
		l = LOG_ERROR;
	if (l > LOG_TRACE)
		l = LOG_TRACE;
	level = (enum log_level)l;
	color = log_color_for_fd(STDERR_FILENO);
}

void log_set_level(enum log_level l)
{
	level = l;
}

enum log_level log_get_level(void)
{
	return level;
}

int log_color(void)
{
	if (color < 0)
		color = log_color_for_fd(STDERR_FILENO);
	return color;
}

void log_msg(enum log_level l, const char *fmt, ...)
{
	static const char *const names[] = { "error", "warning", "info", "debug", "trace" };
	static const char *const colors[] = { "\033[1;31m", "\033[1;33m", "\033[1;34m", "\033[2m", "\033[2m" };
	va_list ap;
	char *msg;

	if (l > level)
		return;
	if (log_color())
		fprintf(stderr, "%sforgex: %s:\033[0m ", colors[l], names[l]);
	else
		fprintf(stderr, "forgex: %s: ", names[l]);
	va_start(ap, fmt);
	msg = xstrvfmt(fmt, ap);
	va_end(ap);
	/* messages quote paths, commands and replies from others: no raw controls */
	fputs_termsafe(msg, stderr, TERMSAFE_MULTILINE);
	free(msg);
	fputc('\n', stderr);
}
