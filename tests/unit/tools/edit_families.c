/*
 * The edit families (issue 21): cases taken from the peers' own edit
 * tests (OpenCode, Roo Code / Cline, Gemini CLI, Aider, Codex, ...), kept
 * as data in tests/fixtures/edits/<class>/cases.json with their origin
 * (tests/fixtures/edits/README.md). Each case runs through the real
 * edit_file or apply_patch tool on a real file in a fresh workspace:
 *
 *   - "applied": the tool succeeds and the file is then exactly "after";
 *   - "refused": the tool refuses, the file is untouched, and the result
 *     holds the retry hint of its "reason" (what the model must do next).
 *
 * "peer" (and "peer_after") say what the peer itself does where forgex
 * differs on purpose (the peer applies where two readings are possible
 * and forgex refuses with both shown, or writes another indentation);
 * such cases are counted apart, and each carries a "note" saying why. A case whose outcome is
 * not the expected one fails the suite; an applied edit that writes
 * anything but "after", or applies where a refusal is expected, is a wrong
 * edit. The counts per class and per source are printed as TAP comments.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>

#include "unit/tools/common.h"

static const char *const classes[] = {
	"line_numbers", "near_miss", "indentation", "placeholders", "start_line", "final_newline",
	"normal_forms", "line_endings", "patches",
};

/* What a refusal must tell the model, by the reason kind of a case. */
static const struct hint {
	const char *reason;
	const char *says;
} hints[] = {
	{ "ambiguous", "Include more of the surrounding lines" },
	{ "not_found", "Copy the text exactly as the file has it" },
	{ "placeholder", "Write out every line new_string must hold" },
	{ "indentation", "Copy old_string with the file's indentation" },
	{ "line_numbers_mixed", "Send both without the line numbers" },
	{ "patch_context", "Copy the context lines exactly as the file has them" },
	{ "empty_old", "Give the text to replace" },
	{ "same", "there is nothing to change" },
	{ "eol_only", "only in line ends or the final newline" },
	{ "indent_shift", "Copy the indentation exactly as read_file shows it" },
	{ "patch_format", "Nothing was written. The format:" },
};

struct tally {
	char name[64];
	size_t cases, applied, refused, differ, failed;
};

static struct tally *tally_of(struct tally *v, size_t *n, size_t max, const char *name)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (!strcmp(v[i].name, name))
			return &v[i];
	if (*n == max)
		fail_msg("more than %zu sources", max);
	memset(&v[*n], 0, sizeof(v[*n]));
	snprintf(v[*n].name, sizeof(v[*n].name), "%s", name);
	return &v[(*n)++];
}

static const char *str_of(const json_t *c, const char *key)
{
	const json_t *v = json_object_get(c, key);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Run one case; NULL when it came out as expected, else what went wrong (static). */
static const char *run_case(const json_t *c, int *wrong)
{
	static char what[512];
	const char *tool = str_of(c, "tool"), *file = str_of(c, "file"), *expect = str_of(c, "expect");
	const char *path = str_of(c, "path"), *after = str_of(c, "after"), *reason = str_of(c, "reason");
	const char *contains = str_of(c, "result_contains");
	json_t *args;
	struct tt t;
	char *now;
	int st, ok = 1;
	size_t i;

	*wrong = 0;
	if (!tool)
		tool = "edit_file";
	if (!path)
		path = "f.txt";
	if (!file || !expect)
		fail_msg("case %s: no file or expect", str_of(c, "name"));
	tt_setup(&t);
	tu_write(t.ws, path, file);
	if (!strcmp(tool, "apply_patch")) {
		args = json_pack("{s:s}", "input", str_of(c, "patch"));
		st = tt_callj(&t, tt_builder(), tool, args);
	} else {
		/* "edits": several edits in order (a peer's blocks), each as a case's own fields */
		const json_t *seq = json_object_get(c, "edits");
		size_t n = json_is_array(seq) ? json_array_size(seq) : 1, e;

		for (st = TOOL_OK, e = 0; e < n && st == TOOL_OK; e++) {
			const json_t *ed = json_is_array(seq) ? json_array_get(seq, e) : c;

			if (e)
				buf_reset(&t.out);
			args = json_pack("{s:s,s:s,s:s}", "path", path, "old_string",
					 str_of(ed, "old_string"), "new_string", str_of(ed, "new_string"));
			if (json_is_true(json_object_get(ed, "replace_all")))
				json_object_set_new(args, "replace_all", json_true());
			if (json_object_get(ed, "start_line"))
				json_object_set(args, "start_line", json_object_get(ed, "start_line"));
			st = tt_callj(&t, tt_builder(), tool, args);
		}
	}
	now = tu_read(t.ws, path);
	what[0] = 0;
	if (!strcmp(expect, "applied")) {
		if (st != TOOL_OK) {
			snprintf(what, sizeof(what), "refused where it should apply: %.400s", t.out.buf);
			ok = 0;
		} else if (!after || strcmp(now, after)) {
			snprintf(what, sizeof(what), "wrote [%.200s], expected [%.200s]", now,
				 after ? after : "(no after)");
			*wrong = 1;
			ok = 0;
		} else if (contains && !strstr(t.out.buf, contains)) {
			snprintf(what, sizeof(what), "result lacks \"%s\": %.300s", contains, t.out.buf);
			ok = 0;
		}
	} else {
		const char *says = NULL;

		for (i = 0; i < ARRAY_SIZE(hints); i++)
			if (reason && !strcmp(hints[i].reason, reason))
				says = hints[i].says;
		if (!says)
			fail_msg("case %s: unknown reason '%s'", str_of(c, "name"), reason ? reason : "");
		if (st == TOOL_OK || strcmp(now, file)) {
			snprintf(what, sizeof(what), "applied where it should refuse: [%.300s]", now);
			*wrong = 1;
			ok = 0;
		} else if (!strstr(t.out.buf, says)) {
			snprintf(what, sizeof(what), "refusal lacks the hint \"%s\": %.300s", says,
				 t.out.buf);
			ok = 0;
		}
	}
	free(now);
	tt_teardown(&t);
	return ok ? NULL : what;
}

static void test_edit_families(void **state)
{
	const char *top = getenv("FORGEX_TOP");
	struct tally per_class[ARRAY_SIZE(classes)], sources[32];
	size_t nsrc = 0, k, i, total = 0, failed = 0, wrong = 0;

	(void)state;
	memset(per_class, 0, sizeof(per_class));
	for (k = 0; k < ARRAY_SIZE(classes); k++) {
		struct buf p = BUF_INIT;
		json_t *cases = NULL;

		buf_addf(&p, "%s/tests/fixtures/edits/%s/cases.json", top ? top : ".", classes[k]);
		if (jsonx_load_file(&cases, p.buf, 4 << 20) < 0 || !json_is_array(cases))
			fail_msg("%s: %s", p.buf, err_last());
		snprintf(per_class[k].name, sizeof(per_class[k].name), "%s", classes[k]);
		for (i = 0; i < json_array_size(cases); i++) {
			const json_t *c = json_array_get(cases, i);
			const char *src = str_of(c, "source"), *expect = str_of(c, "expect");
			const char *peer = str_of(c, "peer"), *peer_after = str_of(c, "peer_after");
			struct tally *ts = tally_of(sources, &nsrc, ARRAY_SIZE(sources), src ? src : "?");
			int w;
			const char *bad = run_case(c, &w);
			int differs = (peer && strcmp(peer, expect)) ||
				      (peer_after && strcmp(peer_after, str_of(c, "after")));

			total++;
			per_class[k].cases++;
			ts->cases++;
			if (bad) {
				print_message("# FAIL %s/%s: %s\n", classes[k], str_of(c, "name"), bad);
				per_class[k].failed++;
				ts->failed++;
				failed++;
				wrong += w;
				continue;
			}
			if (!strcmp(expect, "applied")) {
				per_class[k].applied++;
				ts->applied++;
			} else {
				per_class[k].refused++;
				ts->refused++;
			}
			if (differs) {
				per_class[k].differ++;
				ts->differ++;
			}
		}
		json_decref(cases);
		buf_release(&p);
	}
	print_message("# edit families: %zu cases, %zu as expected, %zu failed, %zu wrong edits\n",
		      total, total - failed, failed, wrong);
	for (k = 0; k < ARRAY_SIZE(classes); k++)
		print_message("# class %-14s %3zu cases: %3zu applied, %3zu refused with a retry hint "
			      "(%zu differ from the peer on purpose), %zu failed\n", per_class[k].name,
			      per_class[k].cases, per_class[k].applied, per_class[k].refused,
			      per_class[k].differ, per_class[k].failed);
	for (i = 0; i < nsrc; i++)
		print_message("# source %-14s %3zu cases: %3zu applied, %3zu refused with a retry hint "
			      "(%zu differ from the peer on purpose), %zu failed\n", sources[i].name,
			      sources[i].cases, sources[i].applied, sources[i].refused,
			      sources[i].differ, sources[i].failed);
	for (k = 0; k < ARRAY_SIZE(classes); k++)
		if (per_class[k].cases < 10)
			fail_msg("class %s has %zu cases; the family needs at least ten", classes[k],
				 per_class[k].cases);
	if (failed)
		fail_msg("%zu of %zu edit cases did not come out as expected (%zu wrong edits)", failed,
			 total, wrong);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_edit_families),
	};

	return cmocka_run_group_tests_name("tools/edit_families", tests, NULL, NULL);
}
