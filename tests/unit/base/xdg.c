#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "base/xdg.h"

static void expect(enum xdg_dir dir, const char *sub, const char *want)
{
	char *got = xdg_path(dir, sub);

	if (!want) {
		assert_null(got);
		return;
	}
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void test_xdg_variable_first(void **state)
{
	(void)state;
	setenv("HOME", "/home/u", 1);
	setenv("XDG_CONFIG_HOME", "/x/config", 1);
	setenv("XDG_STATE_HOME", "/x/state", 1);
	setenv("XDG_CACHE_HOME", "/x/cache", 1);
	expect(XDG_DIR_CONFIG, "forgex/config.toml", "/x/config/forgex/config.toml");
	expect(XDG_DIR_STATE, "forgex/trusted", "/x/state/forgex/trusted");
	expect(XDG_DIR_CACHE, "forgex", "/x/cache/forgex");
}

static void test_xdg_defaults_under_home(void **state)
{
	(void)state;
	setenv("HOME", "/home/u", 1);
	unsetenv("XDG_CONFIG_HOME");
	setenv("XDG_STATE_HOME", "", 1);
	/* a relative path is ignored, as the specification says */
	setenv("XDG_CACHE_HOME", "rel/cache", 1);
	expect(XDG_DIR_CONFIG, "forgex/config.toml", "/home/u/.config/forgex/config.toml");
	expect(XDG_DIR_STATE, "forgex/trusted", "/home/u/.local/state/forgex/trusted");
	expect(XDG_DIR_CACHE, "forgex", "/home/u/.cache/forgex");
}

static void test_xdg_nothing_absolute(void **state)
{
	(void)state;
	unsetenv("XDG_STATE_HOME");
	setenv("HOME", "relative", 1);
	expect(XDG_DIR_STATE, "forgex/trusted", NULL);
	unsetenv("HOME");
	expect(XDG_DIR_STATE, "forgex/trusted", NULL);
	/* the variable alone is enough */
	setenv("XDG_STATE_HOME", "/s", 1);
	expect(XDG_DIR_STATE, "f", "/s/f");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_xdg_variable_first),
		cmocka_unit_test(test_xdg_defaults_under_home),
		cmocka_unit_test(test_xdg_nothing_absolute),
	};

	return cmocka_run_group_tests_name("base/xdg", tests, NULL, NULL);
}
