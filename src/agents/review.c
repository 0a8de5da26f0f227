/*
 * Verdicts and the ensemble review (see review.h).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agents/review.h"
#include "base/jsonx.h"

static const char *const quorum_names[] = { "majority", "unanimous", "any" };

int review_quorum_from_name(const char *name)
{
	size_t i;

	for (i = 0; name && i < ARRAY_SIZE(quorum_names); i++)
		if (!strcmp(name, quorum_names[i]))
			return (int)i;
	return -1;
}

const char *review_quorum_name(enum review_quorum q)
{
	return (unsigned)q < ARRAY_SIZE(quorum_names) ? quorum_names[q] : "unknown";
}

void review_init(struct review *r, enum review_quorum q)
{
	memset(r, 0, sizeof(*r));
	r->quorum = q;
}

void review_release(struct review *r)
{
	size_t i;

	for (i = 0; i < r->nr; i++) {
		free(r->votes[i].voter);
		free(r->votes[i].summary);
		strvec_clear(&r->votes[i].fixes);
	}
	free(r->votes);
	review_init(r, r->quorum);
}

struct review_vote *review_add_vote(struct review *r, const char *voter, int pass, int failed,
				    const char *summary, const struct strvec *fixes)
{
	struct review_vote *v;

	ALLOC_GROW(r->votes, r->nr + 1, r->alloc);
	v = &r->votes[r->nr++];
	memset(v, 0, sizeof(*v));
	v->voter = xstrdup(voter ? voter : "");
	v->pass = failed ? 0 : !!pass;
	v->failed = !!failed;
	v->summary = xstrdup(summary ? summary : "");
	strvec_init(&v->fixes);
	if (fixes)
		strvec_pushv(&v->fixes, fixes->v);
	return v;
}

int review_quorum_met(enum review_quorum q, size_t passes, size_t total)
{
	if (!total)
		return 0;
	switch (q) {
	case QUORUM_UNANIMOUS:
		return passes == total;
	case QUORUM_ANY:
		return passes >= 1;
	case QUORUM_MAJORITY:
	default:
		return passes * 2 > total;
	}
}

int review_decide(struct review *r)
{
	size_t i;

	r->passes = r->fails = 0;
	for (i = 0; i < r->nr; i++) {
		if (r->votes[i].pass && !r->votes[i].failed)
			r->passes++;
		else
			r->fails++;
	}
	r->pass = review_quorum_met(r->quorum, r->passes, r->nr);
	return r->pass;
}

int review_parse_verdict(int *pass, struct buf *summary, struct strvec *fixes,
			 const json_t *args)
{
	const char *v = jsonx_str(args, "verdict"), *s;
	const json_t *arr;
	int p;

	if (!v)
		v = jsonx_str(args, "decision");
	if (!v)
		return err_set(FX_EPARSE, "submit_verdict: no \"verdict\" (PASS or FAIL)");
	if (!strcasecmp(v, "PASS"))
		p = 1;
	else if (!strcasecmp(v, "FAIL"))
		p = 0;
	else
		return err_set(FX_EPARSE, "submit_verdict: verdict '%s' is neither PASS nor FAIL", v);
	*pass = p;
	s = jsonx_str(args, "summary");
	if (!s)
		s = jsonx_str(args, "reason");
	if (!s)
		s = jsonx_str(args, "reasoning");
	if (s && summary)
		buf_addstr(summary, s);
	arr = json_object_get(args, "reasons");
	if (!s && summary && json_is_array(arr)) {
		size_t i;
		json_t *x;

		json_array_foreach(arr, i, x) {
			if (!json_is_string(x))
				continue;
			if (summary->len)
				buf_addstr(summary, "; ");
			buf_addstr(summary, json_string_value(x));
		}
	}
	arr = json_object_get(args, "required_fixes");
	if (!arr)
		arr = json_object_get(args, "fixes");
	if (fixes && json_is_array(arr)) {
		size_t i;
		json_t *x;

		json_array_foreach(arr, i, x)
			if (json_is_string(x))
				strvec_push(fixes, json_string_value(x));
	}
	return 0;
}

int review_ensemble(struct review *r, const struct strvec *voters, review_vote_fn fn,
		    void *data)
{
	size_t i, n = 1 + (voters ? voters->nr : 0);
	int ret = 0;

	for (i = 0; i < n; i++) {
		const char *who = i ? voters->v[i - 1] : "supervisor";
		struct review_vote v;
		int rc;

		memset(&v, 0, sizeof(v));
		strvec_init(&v.fixes);
		v.voter = (char *)who;
		err_clear();
		rc = fn(&v, who, data);
		if (rc == FX_EINTR) {
			free(v.summary);
			strvec_clear(&v.fixes);
			ret = rc;
			break;
		}
		if (rc < 0) {
			review_add_vote(r, who, 0, 1, err_last()[0] ? err_last() : "the voter failed",
					NULL);
		} else {
			review_add_vote(r, who, v.pass, v.failed, v.summary, &v.fixes);
		}
		free(v.summary);
		strvec_clear(&v.fixes);
	}
	review_decide(r);
	return ret;
}

int review_split_voter(char **provider, char **model, const char *voter)
{
	const char *colon = strchr(voter, ':');
	size_t n = colon ? (size_t)(colon - voter) : strlen(voter);

	if (!n)
		return err_set(FX_EINVAL, "review voter '%s': expected \"provider:model\"", voter);
	*provider = xstrndup(voter, n);
	*model = xstrdup(colon ? colon + 1 : "");
	return 0;
}

json_t *review_to_json(const struct review *r)
{
	json_t *j = json_object(), *votes = json_array();
	size_t i;

	jsonx_set(j, "quorum", jsonx_string(review_quorum_name(r->quorum)));
	jsonx_set(j, "pass", json_boolean(r->pass));
	jsonx_set(j, "passes", json_integer((json_int_t)r->passes));
	jsonx_set(j, "fails", json_integer((json_int_t)r->fails));
	for (i = 0; i < r->nr; i++) {
		const struct review_vote *v = &r->votes[i];
		json_t *o = json_object();

		jsonx_set(o, "voter", jsonx_string(v->voter));
		jsonx_set(o, "verdict", jsonx_string(v->pass ? "PASS" : "FAIL"));
		jsonx_set(o, "failed", json_boolean(v->failed));
		jsonx_set(o, "summary", jsonx_string(v->summary));
		jsonx_set(o, "fixes", jsonx_from_strvec(&v->fixes));
		json_array_append_new(votes, o);
	}
	jsonx_set(j, "votes", votes);
	return j;
}
