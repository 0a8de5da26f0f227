/* The shared budget of agent runs: prices, charging, and when it is spent. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "base/clock.h"
#include "agents/agent.h"

static struct llm_usage usage(long prompt, long completion, long total)
{
	struct llm_usage u = { 1, prompt, completion, total };

	return u;
}

static void test_budget_init_limits(void **state)
{
	struct agent_budget b;
	double before = clk_mono_s();

	(void)state;
	agent_budget_init(&b, 5000, 2.5, 60);
	assert_int_equal(b.max_tokens, 5000);
	assert_true(b.max_cost_usd == 2.5);
	assert_true(b.deadline >= before + 60 && b.deadline <= clk_mono_s() + 60);
	assert_int_equal(b.tokens_used, 0);
	agent_budget_release(&b);
	agent_budget_init(&b, -1, -3, 0);
	assert_int_equal(b.max_tokens, 0);
	assert_true(b.max_cost_usd == 0);
	assert_true(b.deadline == 0);
	assert_int_equal(agent_budget_spent(&b, NULL), 0);
	agent_budget_release(&b);
}

static void test_budget_charges_with_prices(void **state)
{
	struct agent_budget b = AGENT_BUDGET_INIT;
	struct llm_usage u = usage(1000000, 500000, 1500000);
	double cost;

	(void)state;
	assert_int_equal(agent_budget_set_price(&b, "gpt-x", 2.0, 8.0), 0);
	cost = agent_budget_charge(&b, "gpt-x", &u);
	assert_true(fabs(cost - 6.0) < 1e-9);	/* 1M * $2 + 0.5M * $8 */
	assert_int_equal(b.tokens_used, 1500000);
	assert_int_equal(b.prompt_tokens, 1000000);
	assert_int_equal(b.completion_tokens, 500000);
	assert_int_equal(b.calls, 1);
	assert_false(b.unpriced);
	/* a model without a price: tokens count, cost does not */
	cost = agent_budget_charge(&b, "other", &u);
	assert_true(cost == -1.0);
	assert_true(b.unpriced);
	assert_int_equal(b.tokens_used, 3000000);
	assert_true(fabs(b.cost_used - 6.0) < 1e-9);
	/* "*" prices the rest; an exact price wins over it */
	assert_int_equal(agent_budget_set_price(&b, "*", 1.0, 1.0), 0);
	assert_true(fabs(agent_budget_charge(&b, "other", &u) - 1.5) < 1e-9);
	assert_true(fabs(agent_budget_charge(&b, "gpt-x", &u) - 6.0) < 1e-9);
	/* replacing a price */
	assert_int_equal(agent_budget_set_price(&b, "gpt-x", 0, 0), 0);
	assert_int_equal(b.prices_nr, 2);
	assert_true(agent_budget_charge(&b, "gpt-x", &u) == 0.0);
	agent_budget_release(&b);
}

static void test_budget_total_is_at_least_the_sum(void **state)
{
	struct agent_budget b = AGENT_BUDGET_INIT;
	struct llm_usage u = usage(100, 20, 0), odd = usage(-5, 10, 50);

	(void)state;
	agent_budget_charge(&b, "m", &u);
	assert_int_equal(b.tokens_used, 120);
	agent_budget_charge(&b, "m", &odd);
	assert_int_equal(b.tokens_used, 170);
	assert_int_equal(b.prompt_tokens, 100);
	agent_budget_release(&b);
}

static void test_budget_bad_prices(void **state)
{
	struct agent_budget b = AGENT_BUDGET_INIT;

	(void)state;
	assert_int_equal(agent_budget_set_price(&b, "", 1, 1), FX_EINVAL);
	assert_int_equal(agent_budget_set_price(&b, NULL, 1, 1), FX_EINVAL);
	assert_int_equal(agent_budget_set_price(&b, "m", -1, 1), FX_EINVAL);
	assert_int_equal(agent_budget_set_price(&b, "m", 1, NAN), FX_EINVAL);
	assert_int_equal(agent_budget_set_price(&b, "m", 1, INFINITY), FX_EINVAL);
	assert_int_equal(b.prices_nr, 0);
	agent_budget_release(&b);
}

static void test_budget_parse_prices(void **state)
{
	struct agent_budget b = AGENT_BUDGET_INIT;
	const struct agent_price *p;

	(void)state;
	assert_int_equal(agent_budget_parse_prices(&b, " gpt-4o=2.5/10,\n openai/o1=15/60  *=0.5/1.5,"), 0);
	assert_int_equal(b.prices_nr, 3);
	p = agent_budget_price(&b, "gpt-4o");
	assert_string_equal(p->model, "gpt-4o");
	assert_true(p->prompt_per_mtok == 2.5 && p->completion_per_mtok == 10);
	p = agent_budget_price(&b, "openai/o1");
	assert_true(p->prompt_per_mtok == 15 && p->completion_per_mtok == 60);
	p = agent_budget_price(&b, "unknown");
	assert_string_equal(p->model, "*");
	assert_int_equal(agent_budget_parse_prices(&b, ""), 0);
	assert_int_equal(agent_budget_parse_prices(&b, NULL), 0);
	assert_int_equal(b.prices_nr, 3);
	agent_budget_release(&b);
}

static void test_budget_parse_prices_errors_set_nothing(void **state)
{
	static const char *const bad[] = {
		"m=1/2, broken", "m=1", "=1/2", "m=x/2", "m=1/2x", "m=-1/2", "m=1/", "m=/1",
	};
	struct agent_budget b = AGENT_BUDGET_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err_clear();
		assert_int_equal(agent_budget_parse_prices(&b, bad[i]), FX_EINVAL);
		assert_true(strlen(err_last()) > 0);
		assert_int_equal(b.prices_nr, 0);
	}
	assert_int_equal(agent_budget_parse_prices(&b, "m=1/2, broken"), FX_EINVAL);
	assert_non_null(strstr(err_last(), "broken"));
	assert_null(agent_budget_price(&b, "m"));
	agent_budget_release(&b);
}

static void test_budget_spent_reasons(void **state)
{
	struct agent_budget b;
	struct llm_usage u = usage(600, 400, 1000);
	struct buf why = BUF_INIT;

	(void)state;
	agent_budget_init(&b, 1000, 0, 0);
	agent_budget_charge(&b, "m", &u);
	assert_int_equal(agent_budget_spent(&b, &why), 1);
	assert_string_equal(why.buf, "token budget spent: 1000 of 1000 tokens used");
	agent_budget_release(&b);

	buf_reset(&why);
	agent_budget_init(&b, 0, 0.01, 0);
	agent_budget_set_price(&b, "m", 10, 10);
	agent_budget_charge(&b, "m", &u);	/* exactly $0.01 */
	assert_int_equal(agent_budget_spent(&b, &why), 1);
	assert_string_equal(why.buf, "cost budget spent: $0.0100 of $0.0100 used");
	agent_budget_release(&b);

	buf_reset(&why);
	agent_budget_init(&b, 0, 0, 0);
	b.deadline = clk_mono_s() - 1;
	assert_int_equal(agent_budget_spent(&b, &why), 1);
	assert_non_null(strstr(why.buf, "wall-clock budget spent"));
	b.deadline = clk_mono_s() + 100;
	assert_int_equal(agent_budget_spent(&b, NULL), 0);
	agent_budget_release(&b);
	buf_release(&why);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_budget_init_limits),
		cmocka_unit_test(test_budget_charges_with_prices),
		cmocka_unit_test(test_budget_total_is_at_least_the_sum),
		cmocka_unit_test(test_budget_bad_prices),
		cmocka_unit_test(test_budget_parse_prices),
		cmocka_unit_test(test_budget_parse_prices_errors_set_nothing),
		cmocka_unit_test(test_budget_spent_reasons),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
