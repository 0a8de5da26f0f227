/*
 * User hooks (see hooks.h).
 */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "base/jsonx.h"
#include "pipeline/hooks.h"

/* what of a hook's answer is kept: for the model, for the event */
#define HOOK_MESSAGE_MAX 4000
#define HOOK_EXIT_BLOCK 2

void hooks_init(struct hooks *h, const struct config *cfg, struct executor *ex, const char *run_id,
		hooks_event_fn on_event, void *event_data)
{
	memset(h, 0, sizeof(*h));
	h->cfg = cfg;
	h->ex = ex;
	h->run_id = run_id;
	h->on_event = on_event;
	h->event_data = event_data;
}

/* "a|b*|c": does one pattern take `tool`? */
static int matches(const char *matcher, const char *tool)
{
	const char *p = matcher;

	if (!*matcher)
		return 1;
	if (!tool)
		return 0;
	while (*p) {
		size_t n = strcspn(p, "|");
		char *pat = xstrndup(p, n);
		int hit;

		/* surrounding blanks are not part of a tool name */
		while (*pat == ' ') {
			memmove(pat, pat + 1, strlen(pat));
		}
		while (*pat && pat[strlen(pat) - 1] == ' ')
			pat[strlen(pat) - 1] = '\0';
		hit = *pat && !fnmatch(pat, tool, 0);
		free(pat);
		if (hit)
			return 1;
		p += n;
		if (*p == '|')
			p++;
	}
	return 0;
}

static int applies(const struct hook_config *hc, const char *event, const char *tool)
{
	if (strcmp(hc->event, event))
		return 0;
	if (!strcmp(event, "pre_tool") || !strcmp(event, "post_tool"))
		return matches(hc->matcher, tool);
	return 1;
}

int hooks_have(const struct hooks *h, const char *event)
{
	size_t i;

	for (i = 0; h->cfg && i < h->cfg->hooks_nr; i++)
		if (!strcmp(h->cfg->hooks[i].event, event))
			return 1;
	return 0;
}

static void add_cut(struct buf *out, const char *s, size_t len)
{
	struct buf t = BUF_INIT;

	buf_add(&t, s, len > HOOK_MESSAGE_MAX ? HOOK_MESSAGE_MAX : len);
	buf_trim(&t);
	buf_addbuf(out, &t);
	if (len > HOOK_MESSAGE_MAX)
		buf_addstr(out, " [...]");
	buf_release(&t);
}

/* A JSON object on stdout, if that is what the hook printed. */
static json_t *answer_json(const struct buf *out)
{
	json_t *j = NULL;
	size_t i = 0;

	while (i < out->len && (out->buf[i] == ' ' || out->buf[i] == '\n' || out->buf[i] == '\t'))
		i++;
	if (i >= out->len || out->buf[i] != '{')
		return NULL;
	if (jsonx_parse(&j, out->buf + i, out->len - i, "hook output") < 0) {
		err_clear();
		return NULL;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		return NULL;
	}
	return j;
}

static int run_one(struct hooks *h, const struct hook_config *hc, const char *event,
		   const char *input, struct buf *why, struct buf *message)
{
	struct exec_request req;
	struct exec_result res = EXEC_RESULT_INIT;
	char *env_event = xstrfmt("FORGEX_HOOK_EVENT=%s", event);
	char *env_run = xstrfmt("FORGEX_RUN_ID=%s", h->run_id ? h->run_id : "");
	const char *env[] = { env_event, env_run, NULL };
	json_t *ev = json_object(), *ans = NULL;
	int ret, blocked = 0, can_block = !strcmp(event, "pre_tool") || !strcmp(event, "user_prompt");

	memset(&req, 0, sizeof(req));
	req.argv = (const char *const *)hc->command.v;
	req.argc = hc->command.nr;
	req.timeout_ms = (int)(hc->timeout_seconds * 1000);
	req.env_overrides = env;
	req.stdin_data = input;
	req.stdin_len = strlen(input);
	h->ran++;
	ret = executor_run(&res, h->ex, &req);
	jsonx_set(ev, "event", jsonx_string(event));
	jsonx_set(ev, "command", jsonx_from_strvec(&hc->command));
	jsonx_set(ev, "where", jsonx_string(hc->where));
	if (ret < 0) {
		jsonx_set(ev, "error", jsonx_string(err_last()));
		goto out;
	}
	jsonx_set(ev, "exit_code", json_integer(res.exit_code));
	jsonx_set(ev, "duration_ms", json_real(res.duration_ms));
	if (res.timed_out) {
		char *e = xstrfmt("killed after its timeout of %ld s", hc->timeout_seconds);

		jsonx_set(ev, "error", jsonx_string(e));
		free(e);
		goto out;
	}
	ans = res.exit_code == 0 ? answer_json(&res.out) : NULL;
	if (res.exit_code == HOOK_EXIT_BLOCK ||
	    (ans && jsonx_str(ans, "decision") && !strcmp(jsonx_str(ans, "decision"), "block"))) {
		if (can_block) {
			blocked = 1;
			if (ans && jsonx_str(ans, "reason"))
				add_cut(why, jsonx_str(ans, "reason"), strlen(jsonx_str(ans, "reason")));
			else if (res.err.len)
				add_cut(why, res.err.buf, res.err.len);
			else
				add_cut(why, res.out.buf, res.out.len);
		} else {
			jsonx_set(ev, "error", jsonx_string("asked to block an event that cannot be blocked"));
		}
	} else if (res.exit_code != 0) {
		struct buf e = BUF_INIT;

		buf_addf(&e, "exited with status %d", res.exit_code);
		if (res.err.len) {
			buf_addstr(&e, ": ");
			add_cut(&e, res.err.buf, res.err.len > 300 ? 300 : res.err.len);
		}
		jsonx_set(ev, "error", jsonx_string(e.buf));
		buf_release(&e);
	} else if (message && !strcmp(event, "post_tool")) {
		const char *m = ans ? jsonx_str(ans, "message") : NULL;

		if (m && *m)
			add_cut(message, m, strlen(m));
		else if (!ans && res.out.len)
			add_cut(message, res.out.buf, res.out.len);
	}
out:
	jsonx_set(ev, "blocked", json_boolean(blocked));
	if (blocked)
		jsonx_set(ev, "reason", jsonx_string(why->buf));
	if (h->on_event)
		h->on_event(h->event_data, ev);
	else
		json_decref(ev);
	json_decref(ans);
	exec_result_release(&res);
	free(env_event);
	free(env_run);
	return blocked;
}

int hooks_fire(struct hooks *h, const char *event, const char *tool, const json_t *input,
	       struct buf *why, struct buf *message)
{
	json_t *in;
	char *text = NULL;
	struct buf local = BUF_INIT;
	size_t i;
	int blocked = 0;

	if (!h->cfg || !h->ex || !hooks_have(h, event))
		return 0;
	if (!why)
		why = &local;
	in = input ? json_deep_copy(input) : json_object();
	if (!in)
		die("out of memory");
	jsonx_set(in, "event", jsonx_string(event));
	jsonx_set(in, "run_id", jsonx_string(h->run_id ? h->run_id : ""));
	jsonx_set(in, "workspace", jsonx_string(h->cfg->workspace ? h->cfg->workspace : ""));
	text = json_dumps(in, JSON_COMPACT);
	if (!text)
		die("out of memory");
	for (i = 0; i < h->cfg->hooks_nr && !blocked; i++) {
		const struct hook_config *hc = &h->cfg->hooks[i];
		struct buf said = BUF_INIT;

		if (!applies(hc, event, tool))
			continue;
		blocked = run_one(h, hc, event, text, why, &said);
		if (message && said.len)
			buf_addf(message, "%s%s", message->len ? "\n" : "", said.buf);
		buf_release(&said);
	}
	free(text);
	json_decref(in);
	buf_release(&local);
	return blocked;
}

static const char *role_name(int role)
{
	return role >= 0 && role < ROLE__COUNT ? config_role_name((enum agent_role)role) : "";
}

static int pre_tool(void *data, const char *tool, int role, const json_t *args, struct buf *why)
{
	struct hooks *h = data;
	json_t *in = json_pack("{s:s, s:s, s:O}", "role", role_name(role), "tool", tool,
			       "arguments", args);
	int blocked;

	if (!in)
		die("out of memory");
	blocked = hooks_fire(h, "pre_tool", tool, in, why, NULL);
	json_decref(in);
	return blocked;
}

static void post_tool(void *data, const char *tool, int role, const json_t *args, int status,
		      const struct buf *result, struct buf *note)
{
	struct hooks *h = data;
	json_t *in;

	if (!hooks_have(h, "post_tool"))
		return;
	in = json_pack("{s:s, s:s, s:O, s:s, s:o}", "role", role_name(role), "tool", tool,
		       "arguments", args, "status", status == TOOL_OK ? "ok" : "failed",
		       "result", jsonx_stringn_lossy(result->buf, result->len));
	if (!in)
		die("out of memory");
	hooks_fire(h, "post_tool", tool, in, NULL, note);
	json_decref(in);
}

void hooks_tool_hooks(struct tool_hooks *out, struct hooks *h)
{
	out->pre = pre_tool;
	out->post = post_tool;
	out->data = h;
}
