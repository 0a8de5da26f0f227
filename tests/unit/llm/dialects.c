/*
 * Every sample of tests/fixtures/dialects/: each FAMILY/NAME.txt is one
 * model reply, FAMILY/NAME.expect.json what must come of it (see the
 * folder's README.md for the kinds and where each sample comes from).
 *
 *   positive   exactly the expected calls (name and arguments), no message
 *   malformed  a message for the model naming the expected format, and
 *              only the calls that could be read
 *   reasoning  a call written inside reasoning: no call, no message
 *   prose      text that only mentions a call: no call, no message
 *
 * The counts per family and kind are printed as TAP comments.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/strvec.h"
#include "llm/textcalls.h"
#include "helpers/testutil.h"

#define ROOT "tests/fixtures/dialects"

static const char *const kinds[] = { "positive", "malformed", "reasoning", "prose" };

struct tally {
	char family[64];
	int n[4];
};

static int kind_index(const char *k)
{
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(*kinds); i++)
		if (!strcmp(kinds[i], k))
			return (int)i;
	return -1;
}

static char *args_text(const char *json)
{
	json_t *j = json_loads(json, 0, NULL);
	char *s;

	if (!j)
		return strdup("(not JSON)");
	s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(j);
	return s;
}

/* Check one sample; returns a description of what is wrong, or NULL. */
static char *check(const char *fam, const char *name, const struct strvec *tools, int *kind)
{
	char *dir = xstrfmt("%s/%s", ROOT, fam), *text, *rel;
	struct text_calls tc = TEXT_CALLS_INIT;
	struct strvec own = STRVEC_INIT;
	struct buf why = BUF_INIT;
	json_error_t je;
	json_t *exp, *calls, *c, *offered;
	const char *k, *nudge;
	size_t i, want;

	text = tu_read(dir, name);
	rel = xstrfmt("%s/%.*s.expect.json", dir, (int)(strlen(name) - 4), name);
	exp = json_load_file(rel, 0, &je);
	if (!text || !exp) {
		buf_addf(&why, "cannot read the sample or %s (%s)", rel, je.text);
		goto out;
	}
	k = json_string_value(json_object_get(exp, "kind"));
	*kind = k ? kind_index(k) : -1;
	nudge = json_string_value(json_object_get(exp, "nudge"));
	calls = json_object_get(exp, "calls");
	want = json_array_size(calls);
	offered = json_object_get(exp, "tools");
	if (offered) {
		/* the tools the source's test offers, in place of tools.txt's */
		json_array_foreach(offered, i, c)
			if (json_is_string(c))
				strvec_push(&own, json_string_value(c));
		tools = &own;
	}
	textcalls_parse(&tc, text, strlen(text), tools);
	if (tc.nr != want) {
		buf_addf(&why, "%zu calls, want %zu", tc.nr, want);
		for (i = 0; i < tc.nr; i++)
			buf_addf(&why, "; got %s(%s) [%s]", tc.v[i].name, tc.v[i].arguments,
				 tc.v[i].dialect);
	}
	for (i = 0; !why.len && i < want; i++) {
		char *got = args_text(tc.v[i].arguments), *exp_args;

		c = json_array_get(calls, i);
		exp_args = json_dumps(json_object_get(c, "arguments"), JSON_COMPACT | JSON_SORT_KEYS);
		if (strcmp(tc.v[i].name, json_string_value(json_object_get(c, "name"))) ||
		    strcmp(got, exp_args))
			buf_addf(&why, "call %zu is %s(%s), want %s(%s)", i + 1, tc.v[i].name, got,
				 json_string_value(json_object_get(c, "name")), exp_args);
		free(got);
		free(exp_args);
	}
	if (!why.len && nudge) {
		struct buf fmt = BUF_INIT;

		buf_addf(&fmt, "(%s format)", nudge);
		if (!tc.errors.nr)
			buf_addf(&why, "no message for the model, want one naming %s", fmt.buf);
		else if (!strstr(tc.errors.v[0], fmt.buf) || !strstr(tc.errors.v[0], "Send the call "
									  "again"))
			buf_addf(&why, "the message does not name %s: %s", fmt.buf, tc.errors.v[0]);
		buf_release(&fmt);
	} else if (!why.len && tc.errors.nr) {
		buf_addf(&why, "an unexpected message: %s", tc.errors.v[0]);
	}
out:
	textcalls_release(&tc);
	strvec_clear(&own);
	json_decref(exp);
	free(text);
	free(rel);
	free(dir);
	if (!why.len) {
		buf_release(&why);
		return NULL;
	}
	return buf_detach(&why, NULL);
}

static void load_tools(struct strvec *tools)
{
	char *s = tu_read(ROOT, "tools.txt"), *line, *save = NULL;

	if (!s)
		fail_msg(ROOT "/tools.txt not found (run from the top folder)");
	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		strvec_push(tools, line);
	free(s);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_dialect_samples(void **state)
{
	struct strvec tools = STRVEC_INIT, fams = STRVEC_INIT, failures = STRVEC_INIT;
	struct tally *t;
	DIR *top = opendir(ROOT);
	struct dirent *de;
	size_t f, total = 0;

	(void)state;
	if (!top)
		fail_msg(ROOT " not found (run from the top folder)");
	load_tools(&tools);
	while ((de = readdir(top)))
		if (de->d_name[0] != '.' && !strchr(de->d_name, '.'))
			strvec_push(&fams, de->d_name);
	closedir(top);
	qsort(fams.v, fams.nr, sizeof(*fams.v), cmp_str);
	t = calloc(fams.nr, sizeof(*t));
	for (f = 0; f < fams.nr; f++) {
		struct strvec names = STRVEC_INIT;
		char *dir = xstrfmt("%s/%s", ROOT, fams.v[f]);
		DIR *d;
		size_t i;

		snprintf(t[f].family, sizeof(t[f].family), "%s", fams.v[f]);
		d = opendir(dir);
		assert_non_null(d);
		while ((de = readdir(d))) {
			size_t n = strlen(de->d_name);

			if (n > 4 && !strcmp(de->d_name + n - 4, ".txt"))
				strvec_push(&names, de->d_name);
		}
		closedir(d);
		qsort(names.v, names.nr, sizeof(*names.v), cmp_str);
		for (i = 0; i < names.nr; i++) {
			int kind = -1;
			char *why = check(fams.v[f], names.v[i], &tools, &kind);

			total++;
			if (kind < 0 && !why)
				why = strdup("no valid \"kind\"");
			if (why) {
				char *m = xstrfmt("%s/%s: %s", dir, names.v[i], why);

				strvec_push(&failures, m);
				free(m);
				free(why);
			} else {
				t[f].n[kind]++;
			}
		}
		strvec_clear(&names);
		free(dir);
	}
	for (f = 0; f < fams.nr; f++)
		printf("# %-14s positive %2d  malformed %2d  reasoning %2d  prose %2d\n", t[f].family,
		       t[f].n[0], t[f].n[1], t[f].n[2], t[f].n[3]);
	printf("# %zu samples in %zu families, %zu failed\n", total, fams.nr, failures.nr);
	for (f = 0; f < failures.nr; f++)
		printf("# FAIL %s\n", failures.v[f]);
	assert_true(total > 0);
	assert_int_equal(failures.nr, 0);
	free(t);
	strvec_clear(&failures);
	strvec_clear(&fams);
	strvec_clear(&tools);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dialect_samples),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
