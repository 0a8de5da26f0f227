#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

static int pty_master = -1;

/* The terminal side of a new pseudo-terminal (the master stays open). */
static int open_pty(void)
{
	pty_master = posix_openpt(O_RDWR | O_NOCTTY);
	if (pty_master < 0 || grantpt(pty_master) || unlockpt(pty_master))
		return -1;
	return open(ptsname(pty_master), O_RDWR | O_NOCTTY);
}

static void test_log_color_only_on_terminal_without_no_color(void **state)
{
	int p[2], tty = open_pty();

	(void)state;
	assert_int_equal(pipe(p), 0);
	unsetenv("NO_COLOR");
	assert_false(log_color_for_fd(p[1]));
	if (tty < 0)
		skip();
	assert_true(log_color_for_fd(tty));
	setenv("NO_COLOR", "1", 1);
	assert_false(log_color_for_fd(tty));
	setenv("NO_COLOR", "", 1);	/* empty means unset (no-color.org) */
	assert_true(log_color_for_fd(tty));
	close(tty);
	close(pty_master);
	close(p[0]);
	close(p[1]);
}

static void test_log_levels_filter(void **state)
{
	int p[2], saved = dup(2);
	char out[512];
	ssize_t n;

	(void)state;
	assert_int_equal(pipe(p), 0);
	assert_true(dup2(p[1], 2) >= 0);
	setenv("NO_COLOR", "1", 1);
	log_setup(1, 0);		/* --quiet: errors only */
	log_warn("hidden warning");
	log_error("shown %d", 1);
	log_setup(0, 2);		/* -vv: up to trace */
	log_debug("debug %s", "line");
	log_setup(0, 0);
	log_info("info line");
	log_debug("hidden debug");
	dup2(saved, 2);
	close(saved);
	close(p[1]);
	n = read(p[0], out, sizeof(out) - 1);
	assert_true(n > 0);
	out[n] = '\0';
	close(p[0]);
	assert_string_equal(out, "forgex: error: shown 1\nforgex: debug: debug line\nforgex: info: info line\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_log_color_only_on_terminal_without_no_color),
		cmocka_unit_test(test_log_levels_filter),
	};

	return cmocka_run_group_tests_name("base/log", tests, NULL, NULL);
}
