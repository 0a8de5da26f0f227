/* Tokens and money per model; see ledger.h. */
#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "pipeline/ledger.h"

void ledger_init(struct ledger *l)
{
	memset(l, 0, sizeof(*l));
}

void ledger_release(struct ledger *l)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		free(l->v[i].model);
	free(l->v);
	ledger_init(l);
}

static struct ledger_entry *entry_of(struct ledger *l, const char *model)
{
	size_t i;

	for (i = 0; i < l->nr; i++)
		if (!strcmp(l->v[i].model, model))
			return &l->v[i];
	ALLOC_GROW(l->v, l->nr + 1, l->alloc);
	memset(&l->v[l->nr], 0, sizeof(*l->v));
	l->v[l->nr].model = xstrdup(model);
	return &l->v[l->nr++];
}

void ledger_count(struct ledger *l, const json_t *ev)
{
	const json_t *u = json_object_get(ev, "usage"), *cost = json_object_get(ev, "cost_usd");
	const char *model = jsonx_str(ev, "model");
	struct ledger_entry *e;

	if (!json_is_object(u))
		return;
	e = entry_of(l, model && *model ? model : "(unnamed)");
	e->prompt += (long)jsonx_int(u, "prompt_tokens", 0);
	e->completion += (long)jsonx_int(u, "completion_tokens", 0);
	e->calls++;
	if (json_is_number(cost))
		e->cost += json_number_value(cost);
	else
		e->unpriced = 1;
}

void ledger_add(struct ledger *l, const struct ledger *from)
{
	size_t i;

	for (i = 0; i < from->nr; i++) {
		const struct ledger_entry *f = &from->v[i];
		struct ledger_entry *e = entry_of(l, f->model);

		e->prompt += f->prompt;
		e->completion += f->completion;
		e->calls += f->calls;
		e->cost += f->cost;
		e->unpriced |= f->unpriced;
	}
}

void ledger_describe(const struct ledger *l, struct buf *out)
{
	long prompt = 0, completion = 0, calls = 0;
	double cost = 0;
	int unpriced = 0;
	size_t i;

	for (i = 0; i < l->nr; i++) {
		const struct ledger_entry *e = &l->v[i];

		buf_addf(out, "%s: %ld call%s, %ld prompt + %ld completion tokens, ", e->model,
			 e->calls, e->calls == 1 ? "" : "s", e->prompt, e->completion);
		if (e->unpriced)
			buf_addstr(out, "cost unknown (no [budget] prices)\n");
		else
			buf_addf(out, "$%.4f\n", e->cost);
		prompt += e->prompt;
		completion += e->completion;
		calls += e->calls;
		cost += e->cost;
		unpriced |= e->unpriced;
	}
	buf_addf(out, "total: %ld call%s, %ld tokens, ", calls, calls == 1 ? "" : "s",
		 prompt + completion);
	if (!calls)
		buf_addstr(out, "$0\n");
	else if (unpriced)
		buf_addf(out, "cost unknown%s\n", cost > 0 ? " (some models have no price)" : "");
	else
		buf_addf(out, "$%.4f\n", cost);
}
