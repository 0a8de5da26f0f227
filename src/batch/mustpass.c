/*
 * A task's must-pass tests before and after its change (see mustpass.h).
 */
#include <string.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/jsonx.h"
#include "batch/mustpass.h"
#include "verify/verify.h"

/* an events log read back for its test results, at most */
#define LOG_MAX (64u << 20)

/* The last test result of `what` ("baseline", "after") the log holds, or NULL (new reference). */
static json_t *last_result(const struct buf *log, const char *what)
{
	json_t *found = NULL;
	size_t pos = 0;

	while (pos < log->len) {
		const char *s = log->buf + pos, *nl = memchr(s, '\n', log->len - pos);
		size_t len = nl ? (size_t)(nl - s) : log->len - pos;
		json_t *ev = NULL;

		pos += len + 1;
		if (!memmem(s, len, "\"test_result\"", 13) || jsonx_parse(&ev, s, len, "event") < 0) {
			err_clear();
			continue;
		}
		if (jsonx_str(ev, "type") && !strcmp(jsonx_str(ev, "type"), "test_result") &&
		    jsonx_str(ev, "what") && !strcmp(jsonx_str(ev, "what"), what) &&
		    json_is_object(json_object_get(ev, "result"))) {
			json_decref(found);
			found = json_incref(json_object_get(ev, "result"));
		}
		json_decref(ev);
	}
	return found;
}

static int read_result(struct verify_result *out, json_t *j)
{
	int ok = j && verify_result_from_json(out, j) == 0;

	if (!ok)
		err_clear();
	json_decref(j);
	return ok;
}

static json_t *outcome(const struct verify_result *r, int have, const char *id)
{
	int o = have ? verify_outcome_of(r, id) : -1;

	return o < 0 ? json_null() : jsonx_string(verify_outcome_name((enum verify_outcome)o));
}

json_t *batch_must_pass(const struct batch_task *t, const char *log)
{
	struct verify_result before = VERIFY_RESULT_INIT, after = VERIFY_RESULT_INIT;
	struct buf b = BUF_INIT;
	json_t *out;
	int have_before = 0, have_after = 0;
	size_t i;

	if (!t->must_pass.nr)
		return NULL;
	if (fsutil_read_file(&b, log, LOG_MAX) == 0) {
		have_before = read_result(&before, last_result(&b, "baseline"));
		have_after = read_result(&after, last_result(&b, "after"));
	} else {
		err_clear();
	}
	out = json_array();
	for (i = 0; i < t->must_pass.nr; i++) {
		const char *id = t->must_pass.v[i];

		json_array_append_new(out, json_pack("{s:s, s:s, s:o, s:o}", "test", id, "set",
						     i < t->fail_to_pass ? "FAIL_TO_PASS" :
						     "PASS_TO_PASS", "before",
						     outcome(&before, have_before, id), "after",
						     outcome(&after, have_after, id)));
	}
	verify_result_release(&before);
	verify_result_release(&after);
	buf_release(&b);
	return out;
}
