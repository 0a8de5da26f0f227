/*
 * verify_compare() and the JSON forms of results and comparisons.
 */
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "verify/parse.h"

const char *verify_change_name(enum verify_change c)
{
	switch (c) {
	case VERIFY_UNCHANGED: return "unchanged";
	case VERIFY_NEWLY_FAILING: return "newly_failing";
	case VERIFY_FIXED: return "fixed";
	case VERIFY_STILL_FAILING: return "still_failing";
	case VERIFY_NEW: return "new";
	case VERIFY_REMOVED: return "removed";
	case VERIFY_CHANGE__COUNT: break;
	}
	return "unknown";
}

static int failing(int o)
{
	return o == VERIFY_FAIL || o == VERIFY_ERROR;
}

/*
 * Whether `r` names every test it counted, so that a test it does not
 * name did not run. Outputs that list only failures (pytest without -v,
 * go test without -v) do not.
 */
static int lists_all(const struct verify_result *r)
{
	long counted = r->passed + r->failed + r->skipped + r->errors;

	return !r->tests_dropped && (long)r->tests_nr >= counted && r->formats.nr > 0;
}

/* An entry verify_parse() made from the exit status or a timeout, not a test. */
static int synthetic(const struct verify_test *t)
{
	return t->format && !strcmp(t->format, "exit-status");
}

/* The tests a run counted, its synthetic errors aside. */
static long ran(const struct verify_result *r)
{
	long n = r->passed + r->failed + r->skipped + r->errors;
	size_t i;

	for (i = 0; i < r->tests_nr; i++)
		n -= synthetic(&r->tests[i]);
	return n > 0 ? n : 0;
}

static void add_entry(struct verify_comparison *c, const char *name, enum verify_change ch,
		      int before, int after)
{
	ALLOC_GROW(c->entries, c->entries_nr + 1, c->entries_alloc);
	c->entries[c->entries_nr].name = xstrdup(name);
	c->entries[c->entries_nr].change = ch;
	c->entries[c->entries_nr].before = before;
	c->entries[c->entries_nr].after = after;
	c->entries_nr++;
	c->counts[ch]++;
}

/*
 * The key of each test of `r`: its name, and for the k-th repeat of a
 * name (two `it('works')`) the name with "\x1f" and k, so that repeats
 * pair up by order between two runs instead of merging.
 */
static char **test_keys(const struct verify_result *r)
{
	struct vmap seen = VMAP_INIT;
	char **keys = xcalloc(r->tests_nr ? r->tests_nr : 1, sizeof(*keys));
	size_t i;

	for (i = 0; i < r->tests_nr; i++) {
		const char *n = r->tests[i].name;
		size_t k = vmap_get(&seen, n, strlen(n));

		k = k == (size_t)-1 ? 0 : k + 1;
		vmap_put(&seen, n, strlen(n), k);
		keys[i] = k ? xstrfmt("%s\x1f%zu", n, k) : xstrdup(n);
	}
	vmap_release(&seen);
	return keys;
}

static void keys_free(char **keys, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		free(keys[i]);
	free(keys);
}

void verify_compare(struct verify_comparison *out, const struct verify_result *baseline,
		    const struct verify_result *current)
{
	struct vmap base = VMAP_INIT, cur = VMAP_INIT;
	int base_all = lists_all(baseline), cur_all = lists_all(current);
	char **bk = test_keys(baseline), **ck = test_keys(current);
	long fixes = 0, newly = 0;
	size_t i;

	for (i = 0; i < baseline->tests_nr; i++)
		vmap_put(&base, bk[i], strlen(bk[i]), i);
	for (i = 0; i < current->tests_nr; i++)
		vmap_put(&cur, ck[i], strlen(ck[i]), i);
	for (i = 0; i < current->tests_nr; i++) {
		const struct verify_test *t = &current->tests[i];
		size_t b = vmap_get(&base, ck[i], strlen(ck[i]));
		int after = (int)t->outcome;

		if (b != (size_t)-1) {
			int before = (int)baseline->tests[b].outcome;

			if (failing(before) && failing(after))
				add_entry(out, t->name, VERIFY_STILL_FAILING, before, after);
			else if (failing(before)) {
				add_entry(out, t->name, VERIFY_FIXED, before, after);
				fixes += after != VERIFY_SKIP && !synthetic(&baseline->tests[b]);
			}
			else if (failing(after))
				add_entry(out, t->name, VERIFY_NEWLY_FAILING, before, after);
			else
				add_entry(out, t->name, VERIFY_UNCHANGED, before, after);
		} else if (base_all) {
			add_entry(out, t->name, VERIFY_NEW, -1, after);
		} else if (failing(after)) {
			/* the baseline lists only failures: it may have passed */
			add_entry(out, t->name, VERIFY_NEWLY_FAILING, -1, after);
		} else if (baseline->formats.nr) {
			/* not a failure then, not one now */
			add_entry(out, t->name, VERIFY_UNCHANGED, -1, after);
		} else {
			add_entry(out, t->name, VERIFY_NEW, -1, after);
		}
	}
	for (i = 0; i < baseline->tests_nr; i++) {
		const struct verify_test *t = &baseline->tests[i];
		int before = (int)t->outcome;

		if (vmap_get(&cur, bk[i], strlen(bk[i])) != (size_t)-1)
			continue;
		if (cur_all) {
			add_entry(out, t->name, VERIFY_REMOVED, before, -1);
		} else if (current->formats.nr || verify_result_ok(current)) {
			/* the run names its failures and this is not one of them,
			 * or nothing is named but the whole run passed */
			add_entry(out, t->name, failing(before) ? VERIFY_FIXED : VERIFY_UNCHANGED,
				  before, -1);
			/* presumed passing now; "(exit status 1)" was never a test */
			fixes += failing(before) && !synthetic(t);
		} else
			/* nothing named and the run failed: do not claim a fix */
			add_entry(out, t->name,
				  failing(before) ? VERIFY_STILL_FAILING : VERIFY_UNCHANGED, before, -1);
	}
	out->failing_before = baseline->failed + baseline->errors;
	out->failing_after = current->failed + current->errors;
	out->baseline_complete = !baseline->timed_out && !baseline->truncated;
	out->passed_before = baseline->passed;
	out->passed_after = current->passed;
	out->ran_before = ran(baseline);
	out->ran_after = ran(current);
	for (i = 0; i < out->entries_nr; i++) {
		const struct verify_change_entry *e = &out->entries[i];

		if (verify_is_regression(out, e))
			out->regressions++;
		if (e->change == VERIFY_NEWLY_FAILING)
			newly++;	/* it may have passed: it does not now */
	}
	/*
	 * The passed count: every fix adds one, every newly failing test
	 * takes one away; what falls short of that is a test that passed and
	 * no longer does without failing by name (not run, skipped, or
	 * counted only).
	 */
	if (out->baseline_complete) {
		long expect = baseline->passed + fixes - newly;

		if (current->passed < expect)
			out->passed_drop = expect - current->passed;
	}
	out->regressed = out->regressions > 0 || out->passed_drop > 0 ||
			 out->failing_after > out->failing_before;
	vmap_release(&base);
	vmap_release(&cur);
	keys_free(bk, baseline->tests_nr);
	keys_free(ck, current->tests_nr);
}

int verify_is_regression(const struct verify_comparison *c,
			 const struct verify_change_entry *e)
{
	if (!failing(e->after))
		return 0;
	if (e->change == VERIFY_NEWLY_FAILING)
		/* named passing or skipped, or not named by a complete baseline */
		return e->before >= 0 || c->baseline_complete;
	if (e->change == VERIFY_NEW)
		return c->baseline_complete;
	return 0;
}

void verify_comparison_release(struct verify_comparison *c)
{
	size_t i;

	for (i = 0; i < c->entries_nr; i++)
		free(c->entries[i].name);
	free(c->entries);
	*c = (struct verify_comparison)VERIFY_COMPARISON_INIT;
}

/* ---- JSON ---- */

json_t *verify_command_to_json(const struct verify_command *cmd)
{
	json_t *j = json_object();

	jsonx_set(j, "argv", jsonx_from_strvec(&cmd->argv));
	jsonx_set(j, "kind", jsonx_string(cmd->kind ? cmd->kind : ""));
	jsonx_set(j, "reason", jsonx_string(cmd->reason ? cmd->reason : ""));
	jsonx_set(j, "configured", json_boolean(cmd->configured));
	if (cmd->build.nr)
		jsonx_set(j, "build", jsonx_from_strvec(&cmd->build));
	jsonx_set(j, "fresh", json_boolean(cmd->fresh));
	if (cmd->fresh_note)
		jsonx_set(j, "fresh_note", jsonx_string(cmd->fresh_note));
	return j;
}

static json_t *lossy(const char *s)
{
	return jsonx_stringn_lossy(s, strlen(s));
}

json_t *verify_result_to_json(const struct verify_result *r)
{
	json_t *j = json_object(), *tests = json_array();
	size_t i;

	jsonx_set(j, "ok", json_boolean(verify_result_ok(r)));
	jsonx_set(j, "passed", json_integer(r->passed));
	jsonx_set(j, "failed", json_integer(r->failed));
	jsonx_set(j, "skipped", json_integer(r->skipped));
	jsonx_set(j, "errors", json_integer(r->errors));
	jsonx_set(j, "formats", jsonx_from_strvec(&r->formats));
	jsonx_set(j, "exit_code", json_integer(r->exit_code));
	jsonx_set(j, "timed_out", json_boolean(r->timed_out));
	jsonx_set(j, "truncated", json_boolean(r->truncated));
	jsonx_set(j, "duration_ms", json_integer(r->duration_ms));
	jsonx_set(j, "tests_dropped", json_integer((json_int_t)r->tests_dropped));
	for (i = 0; i < r->tests_nr; i++) {
		const struct verify_test *t = &r->tests[i];
		json_t *o = json_object();

		jsonx_set(o, "name", lossy(t->name));
		jsonx_set(o, "outcome", jsonx_string(verify_outcome_name(t->outcome)));
		jsonx_set(o, "format", jsonx_string(t->format ? t->format : ""));
		if (t->excerpt)
			jsonx_set(o, "excerpt", lossy(t->excerpt));
		if (json_array_append_new(tests, o))
			die("out of memory building JSON");
	}
	jsonx_set(j, "tests", tests);
	jsonx_set(j, "tail", lossy(r->tail ? r->tail : ""));
	jsonx_set(j, "disagreements", jsonx_from_strvec(&r->disagreements));
	jsonx_set(j, "fresh", json_boolean(r->fresh));
	if (r->fresh_note)
		jsonx_set(j, "fresh_note", lossy(r->fresh_note));
	return j;
}

static int outcome_from_name(const char *s)
{
	int o;

	for (o = VERIFY_PASS; o <= VERIFY_SKIP; o++)
		if (!strcmp(s, verify_outcome_name((enum verify_outcome)o)))
			return o;
	return -1;
}

/* A static format name for a parsed one (results keep static strings). */
static const char *format_static(const char *s)
{
	const char *const *f;

	if (!s)
		return NULL;
	for (f = verify_formats(); *f; f++)
		if (!strcmp(*f, s))
			return *f;
	if (!strcmp(s, "exit-status"))
		return "exit-status";
	return NULL;
}

static int get_long(const json_t *j, const char *key, long *out)
{
	json_t *v = json_object_get(j, key);

	if (!json_is_integer(v))
		return err_set(FX_EPARSE, "verify result: '%s' is not an integer", key);
	*out = (long)json_integer_value(v);
	return 0;
}

int verify_result_from_json(struct verify_result *out, const json_t *j)
{
	struct verify_result r = VERIFY_RESULT_INIT;
	json_t *tests, *t;
	long v = 0;
	size_t i;
	int ret = FX_EPARSE;

	if (!json_is_object(j)) {
		err_set(FX_EPARSE, "verify result: not a JSON object");
		goto out;
	}
	if (get_long(j, "passed", &r.passed) < 0 || get_long(j, "failed", &r.failed) < 0 ||
	    get_long(j, "skipped", &r.skipped) < 0 || get_long(j, "errors", &r.errors) < 0 ||
	    get_long(j, "exit_code", &v) < 0)
		goto out;
	r.exit_code = (int)v;
	r.duration_ms = (long)jsonx_int(j, "duration_ms", 0);
	r.timed_out = jsonx_bool(j, "timed_out", 0);
	r.truncated = jsonx_bool(j, "truncated", 0);
	r.tests_dropped = (size_t)jsonx_int(j, "tests_dropped", 0);
	if (json_object_get(j, "formats") &&
	    jsonx_to_strvec(&r.formats, json_object_get(j, "formats")) < 0) {
		err_set(FX_EPARSE, "verify result: 'formats' is not an array of strings");
		goto out;
	}
	r.tail = xstrdup(jsonx_str(j, "tail") ? jsonx_str(j, "tail") : "");
	if (json_is_array(json_object_get(j, "disagreements")) &&
	    jsonx_to_strvec(&r.disagreements, json_object_get(j, "disagreements")) < 0) {
		err_set(FX_EPARSE, "verify result: 'disagreements' is not an array of strings");
		goto out;
	}
	r.fresh = jsonx_bool(j, "fresh", 1);
	if (jsonx_str(j, "fresh_note"))
		r.fresh_note = xstrdup(jsonx_str(j, "fresh_note"));
	tests = json_object_get(j, "tests");
	if (!json_is_array(tests)) {
		err_set(FX_EPARSE, "verify result: 'tests' is not an array");
		goto out;
	}
	json_array_foreach(tests, i, t) {
		const char *name = jsonx_str(t, "name"), *oc = jsonx_str(t, "outcome");
		const char *ex = jsonx_str(t, "excerpt");
		int o = oc ? outcome_from_name(oc) : -1;

		if (!name || o < 0) {
			err_set(FX_EPARSE, "verify result: test %zu needs a name and an outcome", i);
			goto out;
		}
		ALLOC_GROW(r.tests, r.tests_nr + 1, r.tests_alloc);
		r.tests[r.tests_nr].name = xstrdup(name);
		r.tests[r.tests_nr].outcome = (enum verify_outcome)o;
		r.tests[r.tests_nr].excerpt = ex ? xstrdup(ex) : NULL;
		r.tests[r.tests_nr].format = format_static(jsonx_str(t, "format"));
		r.tests_nr++;
	}
	*out = r;
	r = (struct verify_result)VERIFY_RESULT_INIT;
	ret = 0;
out:
	verify_result_release(&r);
	return ret;
}

json_t *verify_comparison_to_json(const struct verify_comparison *c)
{
	json_t *j = json_object(), *counts = json_object(), *entries = json_array();
	size_t i;

	for (i = 0; i < VERIFY_CHANGE__COUNT; i++)
		jsonx_set(counts, verify_change_name((enum verify_change)i),
			  json_integer((json_int_t)c->counts[i]));
	jsonx_set(j, "counts", counts);
	jsonx_set(j, "failing_before", json_integer(c->failing_before));
	jsonx_set(j, "failing_after", json_integer(c->failing_after));
	jsonx_set(j, "regressed", json_boolean(c->regressed));
	jsonx_set(j, "baseline_complete", json_boolean(c->baseline_complete));
	jsonx_set(j, "passed_before", json_integer(c->passed_before));
	jsonx_set(j, "passed_after", json_integer(c->passed_after));
	jsonx_set(j, "ran_before", json_integer(c->ran_before));
	jsonx_set(j, "ran_after", json_integer(c->ran_after));
	jsonx_set(j, "passed_drop", json_integer(c->passed_drop));
	for (i = 0; i < c->entries_nr; i++) {
		const struct verify_change_entry *e = &c->entries[i];
		json_t *o = json_object();

		jsonx_set(o, "name", lossy(e->name));
		jsonx_set(o, "change", jsonx_string(verify_change_name(e->change)));
		jsonx_set(o, "before", e->before < 0 ? json_null()
			  : jsonx_string(verify_outcome_name((enum verify_outcome)e->before)));
		jsonx_set(o, "after", e->after < 0 ? json_null()
			  : jsonx_string(verify_outcome_name((enum verify_outcome)e->after)));
		if (verify_is_regression(c, e))
			jsonx_set(o, "regression", json_true());
		if (json_array_append_new(entries, o))
			die("out of memory building JSON");
	}
	jsonx_set(j, "entries", entries);
	return j;
}
