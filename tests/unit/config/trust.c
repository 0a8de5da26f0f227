/* The trust store (src/config/trust.c): record, check, revoke; a store that is not the user's own trusts nothing. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "helpers/testutil.h"
#include "config/trust.h"

#define H1 "1111111111111111111111111111111111111111111111111111111111111111"
#define H2 "2222222222222222222222222222222222222222222222222222222222222222"

static char *state_dir;

static int setup(void **state)
{
	(void)state;
	state_dir = tu_mkdtemp();
	setenv("XDG_STATE_HOME", state_dir, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rmtree(state_dir);
	state_dir = NULL;
	return 0;
}

static void test_trust_add_check_revoke(void **state)
{
	int changed, removed;
	char *store = trust_store_path(), *text;

	(void)state;
	assert_string_equal(store + strlen(state_dir), "/forgex/trusted");
	assert_int_equal(trust_check("/p/.forgex/config.toml", H1, &changed), 0);
	assert_int_equal(changed, 0);
	assert_int_equal(trust_add("/p/.forgex/config.toml", H1), 0);
	assert_int_equal(trust_add("/q/.forgex/config.toml", H2), 0);
	assert_int_equal(trust_check("/p/.forgex/config.toml", H1, &changed), 1);
	/* other content: not trusted, and said to have changed */
	assert_int_equal(trust_check("/p/.forgex/config.toml", H2, &changed), 0);
	assert_int_equal(changed, 1);
	/* trusting again replaces the entry */
	assert_int_equal(trust_add("/p/.forgex/config.toml", H2), 0);
	assert_int_equal(trust_check("/p/.forgex/config.toml", H1, NULL), 0);
	assert_int_equal(trust_check("/p/.forgex/config.toml", H2, NULL), 1);
	text = tu_read(state_dir, "forgex/trusted");
	assert_non_null(strstr(text, H2 " /p/.forgex/config.toml\n"));
	assert_null(strstr(text, H1 " /p/"));
	free(text);
	{
		struct stat st;

		assert_int_equal(stat(store, &st), 0);
		assert_int_equal(st.st_mode & 077, 0);
	}
	assert_int_equal(trust_revoke("/p/.forgex/config.toml", &removed), 0);
	assert_int_equal(removed, 1);
	assert_int_equal(trust_check("/p/.forgex/config.toml", H2, NULL), 0);
	assert_int_equal(trust_check("/q/.forgex/config.toml", H2, NULL), 1);
	assert_int_equal(trust_revoke("/p/.forgex/config.toml", &removed), 0);
	assert_int_equal(removed, 0);
	/* a path with a line break could forge an entry: refused */
	assert_int_equal(trust_add("/x\n" H1 " /etc", H1), FX_EINVAL);
	assert_int_equal(trust_add("relative", H1), FX_EINVAL);
	free(store);
}

static void test_trust_store_that_is_not_private_trusts_nothing(void **state)
{
	char *store = trust_store_path(), *elsewhere = xstrfmt("%s/other", state_dir);

	(void)state;
	assert_int_equal(trust_add("/p/.forgex/config.toml", H1), 0);
	/* writable by others */
	assert_int_equal(chmod(store, 0622), 0);
	assert_true(trust_check("/p/.forgex/config.toml", H1, NULL) < 0);
	assert_non_null(strstr(err_last(), "may be written by others"));
	assert_int_equal(chmod(store, 0600), 0);
	assert_int_equal(trust_check("/p/.forgex/config.toml", H1, NULL), 1);
	/* a link planted in its place is not followed when read, and replaced when written */
	tu_write(state_dir, "other", H1 " /evil/.forgex/config.toml\n");
	assert_int_equal(unlink(store), 0);
	assert_int_equal(symlink(elsewhere, store), 0);
	assert_true(trust_check("/evil/.forgex/config.toml", H1, NULL) < 0);
	{
		struct stat st;

		/* trust_add cannot read it either, so it changes nothing */
		assert_true(trust_add("/p/.forgex/config.toml", H1) < 0);
		assert_int_equal(lstat(store, &st), 0);
		assert_true(S_ISLNK(st.st_mode));
	}
	assert_int_equal(unlink(store), 0);
	/* a malformed line: nothing is trusted */
	tu_write(state_dir, "forgex/trusted", H1 " /p/.forgex/config.toml\nnonsense\n");
	chmod(store, 0600);
	assert_true(trust_check("/p/.forgex/config.toml", H1, NULL) < 0);
	assert_non_null(strstr(err_last(), ":2: malformed line"));
	{
		char *other = tu_read(state_dir, "other");

		assert_string_equal(other, H1 " /evil/.forgex/config.toml\n");
		free(other);
	}
	free(elsewhere);
	free(store);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_trust_add_check_revoke, setup, teardown),
		cmocka_unit_test_setup_teardown(test_trust_store_that_is_not_private_trusts_nothing,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
