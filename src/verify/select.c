/*
 * Must-pass tests: the ids a task names (SWE-bench's FAIL_TO_PASS and
 * PASS_TO_PASS), made a selection of the runner's tests and checked in
 * its results (see verify.h, "Must-pass tests").
 */
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "verify/verify.h"

/*
 * "test_x (mod.Class)" -> "mod.Class.test_x"; "test_x (mod.Class.test_x)"
 * -> "mod.Class.test_x": the name the unittest parser gives the test.
 * NULL when `id` is not of that form.
 */
static char *paren_form(const char *id)
{
	const char *open = strstr(id, " ("), *close;
	size_t mlen, ilen, i;

	if (!open || open == id)
		return NULL;
	close = strchr(open + 2, ')');
	if (!close || close[1] || close == open + 2)
		return NULL;
	mlen = (size_t)(open - id);
	ilen = (size_t)(close - open - 2);
	for (i = 0; i < mlen; i++)
		if (id[i] == ' ' || id[i] == '(' || id[i] == '.')
			return NULL;
	for (i = 0; i < ilen; i++)
		if (open[2 + i] == ' ' || open[2 + i] == '(')
			return NULL;
	/* Python 3.11's form names the method already */
	if (ilen > mlen && open[2 + ilen - mlen - 1] == '.' &&
	    !memcmp(open + 2 + ilen - mlen, id, mlen))
		return xstrfmt("%.*s", (int)ilen, open + 2);
	return xstrfmt("%.*s.%.*s", (int)ilen, open + 2, (int)mlen, id);
}

char *verify_test_key(const char *id)
{
	char *p = paren_form(id);

	return p ? p : xstrdup(id);
}

int verify_outcome_of(const struct verify_result *r, const char *id)
{
	char *key = verify_test_key(id);
	int found = -1;
	size_t i;

	for (i = 0; r && i < r->tests_nr; i++) {
		if (strcmp(r->tests[i].name, key))
			continue;
		/* a name reported twice (two runs of it): the worse outcome counts */
		if (found < 0 || (r->tests[i].outcome != VERIFY_PASS && found == VERIFY_PASS))
			found = (int)r->tests[i].outcome;
	}
	free(key);
	return found;
}

/* The runner `cmd` starts, as far as a selection goes. */
enum runner { R_OTHER, R_PYTEST, R_UNITTEST, R_DJANGO };

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static enum runner runner_of(const struct verify_command *cmd)
{
	size_t i;

	if (cmd->kind && !strcmp(cmd->kind, "pytest"))
		return R_PYTEST;
	if (cmd->kind && !strcmp(cmd->kind, "unittest"))
		return R_UNITTEST;
	for (i = 0; i < cmd->argv.nr; i++) {
		const char *a = cmd->argv.v[i], *b = base_name(a);

		if (i + 1 < cmd->argv.nr && !strcmp(a, "-m")) {
			const char *m = cmd->argv.v[i + 1];

			if (!strcmp(m, "pytest"))
				return R_PYTEST;
			if (!strcmp(m, "unittest"))
				return R_UNITTEST;
			if (!strcmp(m, "django"))
				return R_DJANGO;
		}
		if (!strcmp(b, "pytest") || !strcmp(b, "py.test"))
			return R_PYTEST;
		if (!strcmp(b, "runtests.py") || (!strcmp(b, "manage.py") &&
						   i + 1 < cmd->argv.nr &&
						   !strcmp(cmd->argv.v[i + 1], "test")))
			return R_DJANGO;
		/* an interpreter or a wrapper may come first; anything else is the runner */
		if (i == 0 && strncmp(b, "python", 6) && strcmp(b, "env") && strcmp(b, "uv") &&
		    strcmp(b, "poetry") && strcmp(b, "pipenv") && strcmp(b, "tox"))
			break;
	}
	return R_OTHER;
}

int verify_select(struct verify_command *cmd, const struct strvec *ids)
{
	enum runner r;
	size_t i;

	if (!ids || !ids->nr)
		return 0;
	for (i = 0; i < ids->nr; i++)
		if (!ids->v[i][0] || ids->v[i][0] == '-' || strchr(ids->v[i], '\n'))
			return err_set(FX_EINVAL, "must-pass test '%s': not a test id (an id never "
				       "starts with '-' and is one line)", ids->v[i]);
	r = runner_of(cmd);
	switch (r) {
	case R_PYTEST:
		/* -rA: a passing test is named in the short summary too ("PASSED id") */
		strvec_push(&cmd->argv, "-rA");
		for (i = 0; i < ids->nr; i++)
			strvec_push(&cmd->argv, ids->v[i]);
		break;
	case R_UNITTEST:
		/*
		 * -k keeps the tests whose dotted name holds the pattern: it works
		 * with discover (and its -s), where naming a test would not; -v
		 * names each test with its outcome.
		 */
		strvec_push(&cmd->argv, "-v");
		for (i = 0; i < ids->nr; i++) {
			char *key = verify_test_key(ids->v[i]);

			strvec_push(&cmd->argv, "-k");
			strvec_push(&cmd->argv, key);
			free(key);
		}
		break;
	case R_DJANGO:
		/* Django's runner takes dotted labels; verbosity 2 names each test */
		strvec_push(&cmd->argv, "--verbosity=2");
		for (i = 0; i < ids->nr; i++) {
			char *key = verify_test_key(ids->v[i]);

			strvec_push(&cmd->argv, key);
			free(key);
		}
		break;
	case R_OTHER:
		return 0;
	}
	{
		char *why = xstrfmt("%s; narrowed to the %zu must-pass test%s", cmd->reason ?
				    cmd->reason : "the test command", ids->nr, ids->nr == 1 ? "" : "s");

		free(cmd->reason);
		cmd->reason = why;
	}
	return 1;
}

int verify_must_pass_gate(struct buf *why, const struct verify_result *r,
			  const struct strvec *ids)
{
	size_t i, bad = 0;

	if (!ids || !ids->nr)
		return 0;
	for (i = 0; i < ids->nr; i++) {
		int o = r ? verify_outcome_of(r, ids->v[i]) : -1;

		if (o == VERIFY_PASS)
			continue;
		if (!bad)
			buf_addstr(why, why->len ? "; must-pass tests that do not pass: "
					       : "must-pass tests that do not pass: ");
		else
			buf_addstr(why, ", ");
		buf_addf(why, "%s (%s)", ids->v[i], !r ? "the tests did not run" : o < 0 ?
			 "not in the output" : verify_outcome_name((enum verify_outcome)o));
		bad++;
	}
	return bad > 0;
}
