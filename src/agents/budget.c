/*
 * The budget a session's runs share (see agent.h): tokens, cost with the
 * price table, and wall time.
 */
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agents/agent.h"
#include "agents/agent_internal.h"
#include "base/clock.h"

void agent_budget_init(struct agent_budget *b, long max_tokens, double max_cost_usd,
		       double max_wall_seconds)
{
	*b = (struct agent_budget)AGENT_BUDGET_INIT;
	b->max_tokens = max_tokens > 0 ? max_tokens : 0;
	b->max_cost_usd = max_cost_usd > 0 ? max_cost_usd : 0.0;
	if (max_wall_seconds > 0)
		b->deadline = clk_mono_s() + max_wall_seconds;
}

void agent_budget_release(struct agent_budget *b)
{
	size_t i;

	for (i = 0; i < b->prices_nr; i++)
		free(b->prices[i].model);
	free(b->prices);
	*b = (struct agent_budget)AGENT_BUDGET_INIT;
}

struct agent_price *budget_price_exact(const struct agent_budget *b, const char *model)
{
	size_t i;

	for (i = 0; model && i < b->prices_nr; i++)
		if (!strcmp(b->prices[i].model, model))
			return &b->prices[i];
	return NULL;
}

int agent_budget_set_price(struct agent_budget *b, const char *model, double prompt_per_mtok,
			   double completion_per_mtok)
{
	struct agent_price *p;

	if (!model || !*model)
		return err_set(FX_EINVAL, "a price needs a model name");
	if (!(prompt_per_mtok >= 0) || !(completion_per_mtok >= 0) ||
	    !isfinite(prompt_per_mtok) || !isfinite(completion_per_mtok))
		return err_set(FX_EINVAL, "the price of '%s' must be a number of dollars, at least 0",
			       model);
	p = budget_price_exact(b, model);
	if (!p) {
		ALLOC_GROW(b->prices, b->prices_nr + 1, b->prices_alloc);
		p = &b->prices[b->prices_nr++];
		p->model = xstrdup(model);
	}
	p->prompt_per_mtok = prompt_per_mtok;
	p->completion_per_mtok = completion_per_mtok;
	return 0;
}

static int parse_price_entry(const char *e, size_t len, char **model, double *in, double *outp)
{
	char *text = xstrndup(e, len), *eq = strrchr(text, '='), *slash, *end;
	int ret = 0;

	if (!eq || eq == text) {
		ret = err_set(FX_EINVAL, "price '%s': expected MODEL=PROMPT/COMPLETION", text);
		goto out;
	}
	*eq = '\0';
	slash = strchr(eq + 1, '/');
	if (!slash) {
		ret = err_set(FX_EINVAL, "price '%s=%s': expected PROMPT/COMPLETION dollars per "
			      "million tokens", text, eq + 1);
		goto out;
	}
	*slash = '\0';
	*in = strtod(eq + 1, &end);
	if (end == eq + 1 || *end) {
		ret = err_set(FX_EINVAL, "price of '%s': '%s' is not a number", text, eq + 1);
		goto out;
	}
	*outp = strtod(slash + 1, &end);
	if (end == slash + 1 || *end) {
		ret = err_set(FX_EINVAL, "price of '%s': '%s' is not a number", text, slash + 1);
		goto out;
	}
	if (!(*in >= 0) || !(*outp >= 0) || !isfinite(*in) || !isfinite(*outp)) {
		ret = err_set(FX_EINVAL, "price of '%s' must be at least 0", text);
		goto out;
	}
	*model = xstrdup(text);
out:
	free(text);
	return ret;
}

int agent_budget_parse_prices(struct agent_budget *b, const char *text)
{
	struct agent_price *list = NULL;
	size_t nr = 0, alloc = 0, i;
	const char *p = text ? text : "";
	int ret = 0;

	while (*p) {
		size_t n;

		while (*p == ',' || isspace((unsigned char)*p))
			p++;
		n = strcspn(p, ", \t\r\n");
		if (!n)
			break;
		ALLOC_GROW(list, nr + 1, alloc);
		ret = parse_price_entry(p, n, &list[nr].model, &list[nr].prompt_per_mtok,
					&list[nr].completion_per_mtok);
		if (ret < 0)
			goto out;
		nr++;
		p += n;
	}
	for (i = 0; i < nr; i++)
		agent_budget_set_price(b, list[i].model, list[i].prompt_per_mtok,
				       list[i].completion_per_mtok);
out:
	for (i = 0; i < nr; i++)
		free(list[i].model);
	free(list);
	return ret;
}

const struct agent_price *agent_budget_price(const struct agent_budget *b, const char *model)
{
	const struct agent_price *p = budget_price_exact(b, model);

	return p ? p : budget_price_exact(b, "*");
}

double agent_budget_charge(struct agent_budget *b, const char *model,
			   const struct llm_usage *usage)
{
	const struct agent_price *p = agent_budget_price(b, model);
	long prompt = usage->prompt_tokens > 0 ? usage->prompt_tokens : 0;
	long completion = usage->completion_tokens > 0 ? usage->completion_tokens : 0;
	long total = usage->total_tokens > prompt + completion ? usage->total_tokens
							       : prompt + completion;
	double cost;

	b->calls++;
	b->prompt_tokens += prompt;
	b->completion_tokens += completion;
	b->tokens_used += total;
	if (!p) {
		b->unpriced = 1;
		return -1.0;
	}
	cost = ((double)prompt * p->prompt_per_mtok + (double)completion * p->completion_per_mtok) /
	       1e6;
	b->cost_used += cost;
	return cost;
}

int agent_budget_spent(const struct agent_budget *b, struct buf *why)
{
	if (b->max_tokens > 0 && b->tokens_used >= b->max_tokens) {
		if (why)
			buf_addf(why, "token budget spent: %ld of %ld tokens used", b->tokens_used,
				 b->max_tokens);
		return 1;
	}
	if (b->max_cost_usd > 0 && b->cost_used >= b->max_cost_usd) {
		if (why)
			buf_addf(why, "cost budget spent: $%.4f of $%.4f used", b->cost_used,
				 b->max_cost_usd);
		return 1;
	}
	if (b->deadline > 0 && clk_mono_s() >= b->deadline) {
		if (why)
			buf_addstr(why, "wall-clock budget spent: the run's time limit has passed");
		return 1;
	}
	return 0;
}
