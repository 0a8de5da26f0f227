#ifndef FX_LOG_H
#define FX_LOG_H

/*
 * Levelled logging to stderr, for the front and for diagnostics that a
 * person asked for with --verbose. Library code returns errors instead of
 * logging them; it may log at debug and trace level.
 *
 * The front calls log_setup() once: --quiet keeps errors only, each
 * --verbose adds a level. Colour is used only when stderr is a terminal
 * and NO_COLOR is unset or empty (https://no-color.org).
 */

#include "base/err.h"

enum log_level {
	LOG_ERROR = 0,
	LOG_WARN,
	LOG_INFO,
	LOG_DEBUG,
	LOG_TRACE,
};

/** Set the level from --quiet / --verbose counts and detect colour. */
void log_setup(int quiet, int verbose);
void log_set_level(enum log_level level);
enum log_level log_get_level(void);
/** Whether stderr gets colour. */
int log_color(void);
/** Whether `fd` is a terminal and NO_COLOR is unset or empty. */
int log_color_for_fd(int fd);

void log_msg(enum log_level level, const char *fmt, ...) FX_PRINTF(2, 3);

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_trace(...) log_msg(LOG_TRACE, __VA_ARGS__)

#endif
