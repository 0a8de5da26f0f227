/* Role permissions: the seed's permissions.py grants and messages. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <string.h>

#include "sandbox/permissions.h"

static const unsigned everything_a_builder_has = PERM_READ | PERM_WRITE | PERM_DELETE |
						 PERM_TERMINAL | PERM_GIT | PERM_TEST |
						 PERM_BUILD;

static void test_permissions_roles_grant_exactly_the_seeds_sets(void **state)
{
	(void)state;
	assert_int_equal(permissions_for_role("architect"), PERM_READ | PERM_RESEARCH);
	assert_int_equal(permissions_for_role("builder"), everything_a_builder_has);
	assert_int_equal(permissions_for_role("expert_coder"), everything_a_builder_has);
	assert_int_equal(permissions_for_role("supervisor"),
			 PERM_READ | PERM_TEST | PERM_BUILD | PERM_GIT);
	/* nobody gets the network, and nobody but the architect researches */
	assert_false(permissions_for_role("builder") & (PERM_NETWORK | PERM_RESEARCH));
	assert_false(permissions_for_role("supervisor") & (PERM_WRITE | PERM_DELETE |
							   PERM_TERMINAL | PERM_NETWORK));
}

static void test_permissions_unknown_role_gets_nothing(void **state)
{
	static const char *const unknown[] = {
		"", "Architect", "BUILDER", "builder ", " supervisor", "expert-coder",
		"expertcoder", "admin", "root", "architect\n",
	};
	struct buf why = BUF_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(unknown); i++)
		assert_int_equal(permissions_for_role(unknown[i]), 0);
	assert_int_equal(permissions_for_role(NULL), 0);
	/* so even reading is refused */
	assert_true(permissions_deny_reason(&why, permissions_for_role("admin"), PERM_READ));
	assert_string_equal(why.buf, "missing permissions: read");
	buf_release(&why);
}

static void test_permissions_deny_reason_lists_missing_in_seed_order(void **state)
{
	struct buf why = BUF_INIT;
	unsigned sup = permissions_for_role("supervisor");

	(void)state;
	assert_false(permissions_deny_reason(&why, sup, PERM_READ | PERM_GIT));
	assert_string_equal(why.buf, "");	/* untouched */
	assert_false(permissions_deny_reason(&why, sup, 0));

	assert_true(permissions_deny_reason(&why, sup, PERM_WRITE));
	assert_string_equal(why.buf, "missing permissions: write");
	buf_reset(&why);

	/* the seed lists them in the order of Permission: write before delete before terminal */
	assert_true(permissions_deny_reason(&why, sup, PERM_TERMINAL | PERM_READ | PERM_DELETE |
						       PERM_WRITE));
	assert_string_equal(why.buf, "missing permissions: write, delete, terminal");
	buf_reset(&why);

	assert_true(permissions_deny_reason(&why, permissions_for_role("architect"),
					    PERM_NETWORK | PERM_RESEARCH | PERM_BUILD));
	assert_string_equal(why.buf, "missing permissions: build, network");
	buf_reset(&why);

	assert_true(permissions_deny_reason(&why, 0, PERM_ALL));
	assert_string_equal(why.buf, "missing permissions: read, write, delete, terminal, git, "
				     "test, build, research, network");
	buf_reset(&why);

	/* appended, not replaced */
	buf_addstr(&why, "tool write_file: ");
	assert_true(permissions_deny_reason(&why, permissions_for_role("architect"), PERM_WRITE));
	assert_string_equal(why.buf, "tool write_file: missing permissions: write");
	buf_release(&why);
}

static void test_permissions_unknown_bits_are_missing(void **state)
{
	struct buf why = BUF_INIT;

	(void)state;
	/* a tool declaring a permission that does not exist is refused, even with all granted */
	assert_false(permissions_permit(~0u, 1u << 12));
	assert_true(permissions_deny_reason(&why, ~0u, PERM_READ | (1u << 12)));
	assert_string_equal(why.buf, "missing permissions: unknown(0x1000)");
	buf_reset(&why);
	assert_true(permissions_deny_reason(&why, 0, PERM_GIT | (1u << 9)));
	assert_string_equal(why.buf, "missing permissions: git, unknown(0x200)");
	buf_release(&why);
}

static void test_permissions_permit(void **state)
{
	unsigned b = permissions_for_role("builder");

	(void)state;
	assert_true(permissions_permit(b, 0));
	assert_true(permissions_permit(b, PERM_WRITE | PERM_TERMINAL));
	assert_false(permissions_permit(b, PERM_WRITE | PERM_NETWORK));
	assert_true(permissions_permit(PERM_ALL, PERM_ALL));
	assert_false(permissions_permit(0, PERM_READ));
}

static void test_permissions_names_parse_format(void **state)
{
	static const char *const all[] = {
		"read", "write", "delete", "terminal", "git", "test", "build", "research", "network",
	};
	enum permission p = PERM_READ;
	unsigned set = 77;
	struct buf b = BUF_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < ARRAY_SIZE(all); i++) {
		assert_int_equal(permission_parse(&p, all[i]), 0);
		assert_int_equal(p, 1u << i);
		assert_string_equal(permission_name(p), all[i]);
	}
	assert_null(permission_name((enum permission)0));
	assert_null(permission_name((enum permission)(PERM_READ | PERM_WRITE)));
	assert_null(permission_name((enum permission)(1u << 9)));
	p = PERM_GIT;
	assert_int_equal(permission_parse(&p, "Read"), FX_EINVAL);
	assert_non_null(strstr(err_last(), "unknown permission 'Read'"));
	assert_int_equal(p, PERM_GIT);	/* untouched */

	assert_int_equal(permissions_parse(&set, "read, write,git  network"), 0);
	assert_int_equal(set, PERM_READ | PERM_WRITE | PERM_GIT | PERM_NETWORK);
	permissions_format(&b, set);
	assert_string_equal(b.buf, "read, write, git, network");
	buf_reset(&b);
	assert_int_equal(permissions_parse(&set, ""), 0);
	assert_int_equal(set, 0);
	set = 5;
	assert_int_equal(permissions_parse(&set, "read,sudo"), FX_EINVAL);
	assert_non_null(strstr(err_last(), "'sudo'"));
	assert_int_equal(set, 5);	/* untouched */
	permissions_format(&b, 0);
	assert_string_equal(b.buf, "");
	permissions_format(&b, permissions_for_role("supervisor"));
	assert_string_equal(b.buf, "read, git, test, build");
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_permissions_roles_grant_exactly_the_seeds_sets),
		cmocka_unit_test(test_permissions_unknown_role_gets_nothing),
		cmocka_unit_test(test_permissions_deny_reason_lists_missing_in_seed_order),
		cmocka_unit_test(test_permissions_unknown_bits_are_missing),
		cmocka_unit_test(test_permissions_permit),
		cmocka_unit_test(test_permissions_names_parse_format),
	};

	return cmocka_run_group_tests_name("sandbox/permissions", tests, NULL, NULL);
}
