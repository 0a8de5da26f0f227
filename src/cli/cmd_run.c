/*
 * forgex run: the main job. Also the presentation shared by plan, resume
 * and replay (cli_pipeline()).
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/jsonx.h"
#include "base/log.h"
#include "cli/approve_tty.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "cli/setup.h"
#include "cli/textwrap.h"
#include "cli/turnkeys.h"
#include "llm/provider.h"
#include "pipeline/pipeline.h"
#include "sandbox/approval.h"

/* how long the check of the model servers before a run may take */
#define PREFLIGHT_MS 5000

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

struct view {
	int json;
	int tty;
	int color;		/* the progress (stderr) in colour: a terminal, no NO_COLOR */
	int plan_only;		/* the result prints the plan: its event does not */
	FILE *progress;
	int text_open;		/* -v: a line of the model's text is being written */
	char role[32];		/* the role whose turn it is */
};

#define C_RESET "\033[m"
#define C_BOLD "\033[1m"
#define C_DIM "\033[2m"
#define C_RED "\033[31m"
#define C_GREEN "\033[32m"
#define C_YELLOW "\033[33m"

/* failing tests named after each run of them, at most */
#define FAILING_SHOWN 10

/* One line of text from a model or a command, control characters escaped. */
static void put_visible_line(FILE *f, const char *prefix, const char *s, size_t n)
{
	struct buf raw = BUF_INIT, b = BUF_INIT;

	buf_add(&raw, s, n);
	buf_addstr(&b, prefix);
	approval_add_visible(&b, raw.buf);
	fputs(b.buf, f);
	buf_release(&raw);
	buf_release(&b);
}

/* The first line of `s`, at most `max` bytes of it. */
static size_t first_line(const char *s, size_t max)
{
	size_t n = strcspn(s, "\n");

	return n > max ? max : n;
}

static void print_plan(FILE *f, const json_t *plan)
{
	const json_t *steps = json_object_get(plan, "steps"), *s;
	size_t i;

	if (jsonx_str(plan, "summary"))
		cli_printf(f, "  plan: %s\n", jsonx_str(plan, "summary"));
	json_array_foreach(steps, i, s) {
		const char *t = jsonx_str(s, "title");

		cli_printf(f, "  %zu. %s\n", i + 1, t ? t : jsonx_str(s, "description") ?
			jsonx_str(s, "description") : "");
	}
}

/*
 * What the spinner shows after `ev`: what forgex waits for until the next
 * event. NULL: as before.
 */
static const char *spinner_label(struct buf *out, const json_t *ev, const char *type)
{
	buf_reset(out);
	if (!strcmp(type, "stage_start")) {
		const char *st = jsonx_str(ev, "stage");
		long it = (long)jsonx_int(ev, "iteration", 0);

		buf_addstr(out, st ? st : "");
		if (it > 0)
			buf_addf(out, " (iteration %ld)", it);
		if (st && (!strcmp(st, "baseline") || !strcmp(st, "verify")))
			buf_addstr(out, ": running the tests");
	} else if (!strcmp(type, "progress") && jsonx_str(ev, "message")) {
		const char *m = jsonx_str(ev, "message"), *paren = strrchr(m, '(');
		size_t n = strlen(m);

		/* "builder turn 2: asking m (1.5k tokens so far)": drop the count */
		if (paren && n > 8 && !strcmp(m + n - 8, " so far)"))
			n = (size_t)(paren - m);
		buf_add(out, m, n);
		buf_trim(out);
	} else {
		return NULL;
	}
	return out->buf;
}

static void print_event(struct view *v, const json_t *ev, const char *type);

static void show_event(void *data, const json_t *ev)
{
	struct view *v = data;
	const char *type = jsonx_str(ev, "type");
	struct buf label = BUF_INIT;

	if (v->json || !progress_active()) {
		print_event(v, ev, type);
		return;
	}
	progress_hold();
	print_event(v, ev, type);
	progress_release(type ? spinner_label(&label, ev, type) : NULL);
	buf_release(&label);
}

static void print_event(struct view *v, const json_t *ev, const char *type)
{
	FILE *f = v->progress;

	if (v->json) {
		struct buf b = BUF_INIT;

		jsonx_dump(&b, ev, JSON_COMPACT);
		fprintf(stdout, "%s\n", b.buf);
		fflush(stdout);
		buf_release(&b);
		return;
	}
	if (cli_quiet || !type)
		return;
	if (!strcmp(type, "stage_start")) {
		const char *st = jsonx_str(ev, "stage");
		long it = (long)jsonx_int(ev, "iteration", 0);

		/* the stages dimmed, as the session shows what is not the work itself */
		fputs(v->color ? C_DIM : "", f);
		if (it > 0 && (!strcmp(st, "verify") || !strcmp(st, "review") ||
			       !strcmp(st, "repair")))
			cli_printf(f, "==> %s (iteration %ld)", st, it);
		else
			cli_printf(f, "==> %s", st);
		fprintf(f, "%s\n", v->color ? C_RESET : "");
	} else if (!strcmp(type, "progress")) {
		if (v->text_open) {
			fputc('\n', f);
			v->text_open = 0;
		}
		cli_printf(f, "    %s\n", jsonx_str(ev, "message") ? jsonx_str(ev, "message") : "");
	} else if (!strcmp(type, "agent_start")) {
		snprintf(v->role, sizeof(v->role), "%s", jsonx_str(ev, "role") ? jsonx_str(ev, "role") : "");
	} else if (!strcmp(type, "tool_result") && jsonx_str(ev, "status") &&
		   strcmp(jsonx_str(ev, "status"), "ok")) {
		const char *pv = jsonx_str(ev, "preview") ? jsonx_str(ev, "preview") : "";
		char *prefix = xstrfmt("    %s: %s %s: ", jsonx_str(ev, "status"),
				       jsonx_str(ev, "role") ? jsonx_str(ev, "role") : "",
				       jsonx_str(ev, "name") ? jsonx_str(ev, "name") : "");

		if (v->text_open) {
			fputc('\n', f);
			v->text_open = 0;
		}
		put_visible_line(f, prefix, pv, first_line(pv, 200));
		fputc('\n', f);
		free(prefix);
	} else if (!strcmp(type, "context_window") && jsonx_str(ev, "warning")) {
		/* said once per provider: Ollama cutting prompts, a window too small */
		textwrap_printf(f, "    warning: %s\n", jsonx_str(ev, "warning"));
	} else if (!strcmp(type, "leftovers_removed")) {
		const json_t *p;
		size_t i;

		json_array_foreach(json_object_get(ev, "paths"), i, p)
			cli_printf(f, "    removed %s: the temporary file of a write a killed forgex "
				   "left\n", json_string_value(p));
	} else if (!strcmp(type, "warning")) {
		textwrap_printf(f, "forgex: warning: %s\n", jsonx_str(ev, "message") ?
				jsonx_str(ev, "message") : "");
	} else if (!strcmp(type, "plan") && !v->plan_only) {
		/* `forgex plan` and /plan: the result shows it, once */
		print_plan(f, json_object_get(ev, "plan"));
	} else if (!strcmp(type, "test_result")) {
		const json_t *r = json_object_get(ev, "result");

		if (!jsonx_bool(ev, "ran", 0))
			cli_printf(f, "    tests (%s): not run: %s\n", jsonx_str(ev, "what"),
				jsonx_str(ev, "reason") ? jsonx_str(ev, "reason") : "");
		else
			cli_printf(f, "    tests (%s): %lld passed, %lld failed, %lld errors\n",
				jsonx_str(ev, "what"), (long long)jsonx_int(r, "passed", 0),
				(long long)jsonx_int(r, "failed", 0),
				(long long)jsonx_int(r, "errors", 0));
		if (jsonx_bool(ev, "ran", 0)) {
			const json_t *t;
			size_t i, shown = 0, failing = 0;

			json_array_foreach(json_object_get(r, "tests"), i, t) {
				const char *o = jsonx_str(t, "outcome"), *n = jsonx_str(t, "name");

				if (!o || (strcmp(o, "failed") && strcmp(o, "error")))
					continue;
				failing++;
				if (shown++ < FAILING_SHOWN && n) {
					put_visible_line(f, "      failing: ", n, strlen(n));
					fputc('\n', f);
				}
			}
			if (failing > FAILING_SHOWN)
				fprintf(f, "      ... and %zu more failing\n", failing - FAILING_SHOWN);
		}
	} else if (!strcmp(type, "vote")) {
		cli_printf(f, "    vote of %s: %s%s%s\n", jsonx_str(ev, "voter"),
			jsonx_str(ev, "verdict"), jsonx_str(ev, "error") ? " — " : "",
			jsonx_str(ev, "error") ? jsonx_str(ev, "error") : "");
	} else if (!strcmp(type, "verdict")) {
		const char *gate = jsonx_str(ev, "gate");

		const json_t *vote;
		size_t i, k;

		cli_printf(f, "    verdict: %s%s%s\n", jsonx_str(ev, "verdict"),
			gate ? " (test gate: " : "", gate ? gate : "");
		if (gate)
			fputs(")\n", f);
		/* why: each reviewer's words and the fixes it asks for */
		json_array_foreach(json_object_get(json_object_get(ev, "review"), "votes"), i, vote) {
			const char *sum = jsonx_str(vote, "summary");
			const json_t *fix;
			char *prefix = xstrfmt("      %s (%s): ", jsonx_str(vote, "voter") ?
					       jsonx_str(vote, "voter") : "", jsonx_str(vote, "verdict") ?
					       jsonx_str(vote, "verdict") : "");

			if (sum && *sum) {
				const char *p = sum;

				while (*p) {
					size_t n = strcspn(p, "\n");

					put_visible_line(f, p == sum ? prefix : "        ", p, n);
					fputc('\n', f);
					p += n + (p[n] == '\n');
				}
			}
			json_array_foreach(json_object_get(vote, "fixes"), k, fix) {
				const char *s = json_string_value(fix);

				if (s) {
					put_visible_line(f, "        fix: ", s, first_line(s, 500));
					fputc('\n', f);
				}
			}
			free(prefix);
		}
	} else if (!strcmp(type, "hook")) {
		const json_t *cmd = json_object_get(ev, "command");
		const char *prog = json_string_value(json_array_get(cmd, 0));

		/* a hook's reason and error, a server's error (its stderr): escaped */
		if (jsonx_bool(ev, "blocked", 0))
			cli_printf(f, "    %s hook (%s) blocked: %s\n", jsonx_str(ev, "event"),
				prog ? prog : "?", jsonx_str(ev, "reason") ? jsonx_str(ev, "reason") : "");
		else if (jsonx_str(ev, "error"))
			cli_printf(f, "    warning: %s hook (%s, %s): %s\n", jsonx_str(ev, "event"),
				prog ? prog : "?", jsonx_str(ev, "where") ? jsonx_str(ev, "where") : "",
				jsonx_str(ev, "error"));
	} else if (!strcmp(type, "mcp_server")) {
		const char *st = jsonx_str(ev, "state");

		if (st && !strcmp(st, "ready"))
			cli_printf(f, "    MCP server %s: %zu tools\n", jsonx_str(ev, "name"),
				json_array_size(json_object_get(ev, "tools")));
		else
			cli_printf(f, "    warning: MCP server %s %s: %s\n", jsonx_str(ev, "name"),
				st && !strcmp(st, "skipped") ? "not started" : "did not start",
				jsonx_str(ev, "error") ? jsonx_str(ev, "error") : "");
	} else if (!strcmp(type, "checkpoint") && !strcmp(jsonx_str(ev, "action"), "restore")) {
		cli_printf(f, "    restored checkpoint %.12s (%s)\n", jsonx_str(ev, "id"),
			jsonx_str(ev, "why"));
	}
	fflush(f);
}

/* -v: the model's words as they stream, line by line, under its role's name. */
static void show_text(void *data, const char *text, size_t len)
{
	struct view *v = data;
	FILE *f = v->progress;
	int held = progress_active();

	if (held)
		progress_hold();
	while (len) {
		const char *nl = memchr(text, '\n', len);
		size_t n = nl ? (size_t)(nl - text) : len;

		if (!v->text_open && n) {
			fprintf(f, "    %s: ", *v->role ? v->role : "model");
			v->text_open = 1;
		}
		if (n)
			put_visible_line(f, "", text, n);
		if (nl) {
			if (v->text_open)
				fputc('\n', f);
			v->text_open = 0;
			n++;
		}
		text += n;
		len -= n;
	}
	fflush(f);
	if (held)
		progress_release(NULL);
}

static void show_start(void *data, const struct rundir *s)
{
	struct view *v = data;

	if (!v->json && !cli_quiet) {
		progress_hold();
		cli_printf(v->progress, "forgex: run %s\n", s->id);
		fflush(v->progress);
		progress_release(NULL);
	}
}

static int exit_for(const struct pipeline_result *r)
{
	switch (r->outcome) {
	case PIPELINE_PASS:
	case PIPELINE_PLANNED:
		return EXIT_OK;
	case PIPELINE_FAIL:
		return EXIT_FAIL;
	case PIPELINE_INTERRUPTED:
		return EXIT_INTERRUPTED;
	case PIPELINE_ERROR:
	default:
		if (r->code == FX_EPROVIDER)
			return EXIT_PROVIDER;
		if (r->code == FX_EDENIED || r->code == FX_EUNSUPPORTED)
			return EXIT_DENIED;
		if (r->code == FX_EINVAL)
			return EXIT_USAGE;
		return EXIT_FAIL;
	}
}

static void print_tests(const char *what, const json_t *t)
{
	if (!json_is_object(t)) {
		cli_printf(stdout, "  tests %-7s not run\n", what);
		return;
	}
	cli_printf(stdout, "  tests %-7s %lld passed, %lld failed, %lld errors\n", what,
	       (long long)jsonx_int(t, "passed", 0), (long long)jsonx_int(t, "failed", 0),
	       (long long)jsonx_int(t, "errors", 0));
}

/* "  newly failing: a, b" from the list `key` of summary.json's "tests". */
static void print_names(const json_t *tests, const char *key, const char *label)
{
	const json_t *a = json_object_get(tests, key), *v;
	size_t i;

	if (!json_array_size(a))
		return;
	cli_printf(stdout, "  %s:", label);
	json_array_foreach(a, i, v) {
		if (i == 10) {
			cli_printf(stdout, " (and %zu more)", json_array_size(a) - i);
			break;
		}
		cli_printf(stdout, "%s %s", i ? "," : "", json_string_value(v));
	}
	putchar('\n');
}

static void print_test_changes(const json_t *t)
{
	const json_t *d = json_object_get(t, "disagreements"), *v;
	size_t i;

	if (!json_is_object(t))
		return;
	print_names(t, "newly_failing", "newly failing");
	print_names(t, "still_failing", "still failing from before");
	print_names(t, "fixed", "fixed");
	if (jsonx_bool(t, "fewer_tests", 0))
		cli_printf(stdout, "  fewer tests ran than at baseline: %lld, was %lld\n",
		       (long long)jsonx_int(t, "ran_after", 0), (long long)jsonx_int(t, "ran_before", 0));
	json_array_foreach(d, i, v)
		cli_printf(stdout, "  counts disagree: %s\n", json_string_value(v));
	if (jsonx_str(t, "fresh_note"))
		cli_printf(stdout, "  not fresh: %s\n", jsonx_str(t, "fresh_note"));
}

/* The colour of a verdict: PASS green, FAIL and ERROR red, the rest yellow. */
static const char *verdict_color(const char *verdict)
{
	if (!strcmp(verdict, "PASS"))
		return C_GREEN C_BOLD;
	if (!strcmp(verdict, "FAIL") || !strcmp(verdict, "ERROR"))
		return C_RED C_BOLD;
	return C_YELLOW C_BOLD;
}

static void print_result(const struct pipeline_result *r, const char *cmd, int priced)
{
	const json_t *s = r->summary;
	int color = log_color_for_fd(1);
	const char *verdict;

	if (r->outcome == PIPELINE_PLANNED) {
		cli_printf(stdout, "Plan (run %s):\n", r->run_id);
		if (r->plan) {
			struct buf b = BUF_INIT;

			print_plan(stdout, r->plan);
			/* its JSON for a program reading the output, not for a person */
			if (!isatty(1)) {
				jsonx_dump(&b, r->plan, JSON_INDENT(2));
				cli_printf(stdout, "\n%s\n", b.buf);
			}
			buf_release(&b);
		}
		return;
	}
	if (r->outcome == PIPELINE_INTERRUPTED && r->run_id)
		cli_printf(stdout, "(resume it with: forgex resume)\n");
	verdict = s && jsonx_str(s, "verdict") ? jsonx_str(s, "verdict") :
		  r->outcome == PIPELINE_PASS ? "PASS" : r->outcome == PIPELINE_FAIL ?
		  "FAIL" : r->outcome == PIPELINE_INTERRUPTED ? "INTERRUPTED" : "ERROR";
	/* "PASS: RUN-ID" in the verdict's colour, the reason after it plain */
	fputs(color ? verdict_color(verdict) : "", stdout);
	cli_printf(stdout, "%s: %s", verdict, r->run_id ? r->run_id : "");
	fputs(color ? C_RESET : "", stdout);
	if (r->reason && *r->reason)
		cli_printf(stdout, " — %s", r->reason);
	putchar('\n');
	if (r->diffstat && *r->diffstat)
		cli_printf(stdout, "  files changed%s:\n%s", !r->rolled_back ? "" : r->kept_paths.nr ?
		       " (undone, but for the files named below)" : " (undone)", r->diffstat);
	if (s) {
		print_tests("before", json_object_get(s, "tests_before"));
		print_tests("after", json_object_get(s, "tests_after"));
		print_test_changes(json_object_get(s, "tests"));
	}
	if (priced)
		cli_printf(stdout, "  iterations %d, tokens %ld, cost $%.4f, time %.1fs\n", r->iterations,
		       r->tokens, r->cost_usd, r->seconds);
	else
		cli_printf(stdout, "  iterations %d, tokens %ld, cost unknown (no [budget] prices), time %.1fs\n",
		       r->iterations, r->tokens, r->seconds);
	if (r->rolled_back && !r->kept_paths.nr) {
		cli_printf(stdout, "The tree was restored to how it was before the run.\n");
	} else if (r->rolled_back) {
		size_t i;

		cli_printf(stdout, "The run's changes were undone. These files were changed by you during the "
		       "run too, and are kept as you left them:\n");
		for (i = 0; i < r->kept_paths.nr; i++)
			cli_printf(stdout, "  %s\n", r->kept_paths.v[i]);
	} else if (r->failed_paths.nr) {
		size_t i;

		cli_printf(stdout, "The tree could NOT be fully restored. Not put back:\n");
		for (i = 0; i < r->failed_paths.nr; i++)
			cli_printf(stdout, "  %s\n", r->failed_paths.v[i]);
		for (i = 0; i < r->kept_paths.nr; i++)
			cli_printf(stdout, "  kept as you left it: %s\n", r->kept_paths.v[i]);
		cli_printf(stdout, "Try again with: %s%s\n", *cmd == '/' ? "/undo" : "forgex undo ",
		       *cmd == '/' ? "" : r->run_id);
	} else if (r->kept)
		cli_printf(stdout, "The last attempt was kept in the tree; undo it with: %s%s\n",
		       *cmd == '/' ? "/undo" : "forgex undo ", *cmd == '/' ? "" : r->run_id);
	else if (r->committed)
		cli_printf(stdout, "The change was committed on the current branch.\n");
	if (!r->rolled_back && !r->failed_paths.nr && r->kept_paths.nr) {
		size_t i;

		for (i = 0; i < r->kept_paths.nr; i++)
			cli_printf(stdout, "  %s\n", r->kept_paths.v[i]);
	}
	else if (r->outcome == PIPELINE_PASS)
		cli_printf(stdout, "The change is in the working tree; undo it with: %s%s\n",
		       *cmd == '/' ? "/undo" : "forgex undo ", *cmd == '/' ? "" : r->run_id);
}

/*
 * Before anything runs: can the model servers the roles use be reached?
 * A run against a server that is not there would first run the whole
 * baseline suite, then retry, then fail; say so now, with what to change.
 * Only a connection is made (nothing is sent).
 */
int cli_check_providers(const struct config *cfg)
{
	struct strvec seen = STRVEC_INIT;
	int r, ret = 0;

	for (r = 0; r < ROLE__COUNT && !ret; r++) {
		const char *name = cfg->agents[r].provider;
		const struct provider_config *pc = config_provider((struct config *)cfg, name);

		if (!pc || strvec_find(&seen, name) >= 0 || (pc->type && strcmp(pc->type, "openai")))
			continue;
		strvec_push(&seen, name);
		if (provider_reachable(pc, PREFLIGHT_MS) == 0)
			continue;
		log_error("provider '%s': %s", name, err_last());
		textwrap_printf(stderr, "hint: is the model server running? Or point "
				"providers.%s.base_url at one (now %s): forgex -c "
				"providers.%s.base_url=URL ..., or in ~/.config/forgex/config.toml; "
				"'forgex doctor' checks it\n", name, pc->base_url, name);
		if (setup_is_first_run((struct config *)cfg, name))
			fputs("hint: no configuration yet: 'forgex config init --user' looks for the model "
			      "servers on this machine and writes one\n", stderr);
		err_clear();
		ret = EXIT_PROVIDER;
	}
	strvec_clear(&seen);
	return ret;
}

static void on_wait(void *data, const char *holder)
{
	struct view *v = data;

	progress_hold();
	fprintf(v->progress, "forgex: waiting for %s to finish ('--no-wait' fails instead)\n",
		holder);
	fflush(v->progress);
	progress_release(NULL);
}

/*
 * The signals that end a run as Ctrl-C does: the terminal closing (HUP),
 * Ctrl-\ (QUIT), a reader going away (PIPE: `forgex run --json | head`).
 */
static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE };

int cli_pipeline(const char *cmd, struct config *cfg, struct pipeline_opts *po, int json)
{
	return cli_pipeline_keep(cmd, cfg, po, json, NULL, NULL);
}

/* The terminal's reader while a session's run runs (turnkeys.h), or NULL. */
static struct turnkeys *run_keys;

/* The run's questions with the reader stepped aside while one is asked. */
static int keys_ask(void *data, struct approval_answer *a, const struct approval_request *rq,
		    const volatile sig_atomic_t *cancel)
{
	int verdict;

	turnkeys_pause(run_keys);
	verdict = approve_tty_ask(data, a, rq, cancel);
	turnkeys_resume(run_keys);
	return verdict;
}

int cli_pipeline_keep(const char *cmd, struct config *cfg, struct pipeline_opts *po, int json,
		      struct pipeline_result *keep, struct buf *typed)
{
	struct pipeline_result res = PIPELINE_RESULT_INIT;
	struct sigaction sa, old[ARRAY_SIZE(stop_signals)];
	struct approve_tty tty = APPROVE_TTY_INIT;
	struct approver own, *ap = po->approver;
	/* a session's approver, as it asked before this run */
	approval_ask_fn was_ask = ap ? ap->ask : NULL;
	void *was_data = ap ? ap->data : NULL;
	const volatile sig_atomic_t *was_cancel = ap ? ap->cancel : NULL;
	size_t i;
	struct view v;
	int ret, status;

	if ((ret = cli_check_providers(cfg)))
		return ret;
	memset(&v, 0, sizeof(v));
	v.json = json;
	v.tty = isatty(2);
	v.color = !json && log_color_for_fd(2);
	v.plan_only = po->plan_only;
	v.progress = stderr;
	interrupted = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < ARRAY_SIZE(stop_signals); i++)
		sigaction(stop_signals[i], &sa, &old[i]);
	po->cfg = cfg;
	po->on_wait = on_wait;
	po->cancel = &interrupted;
	/*
	 * The run's questions: asked on the terminal, and SIGTERM or SIGHUP at
	 * one is a no (the run ends). A session's /run keeps the session's
	 * approver, and so its `a` answers, while these signals are ours.
	 */
	if (!ap) {
		approver_init(&own, approve_tty_ask, &tty, &interrupted);
		ap = po->approver = &own;
	} else {
		ap->ask = approve_tty_ask;
		ap->data = &tty;
		ap->cancel = &interrupted;
	}
	/* a session's run: Esc stops it, as it stops the session's turns */
	if (typed && isatty(0)) {
		turnkeys_start(&run_keys, 0, &interrupted);
		if (run_keys)
			ap->ask = keys_ask;
	}
	po->on_event = show_event;
	po->event_data = &v;
	po->on_rundir = show_start;
	if (cli_verbose && !json && !cli_quiet)
		po->on_text = show_text;
	/* a spinner only on a terminal, never with --json, -q or -v (debug lines) */
	if (!json && !cli_quiet && !cli_verbose && v.tty)
		progress_start(stderr);
	ret = pipeline_run(&res, po);
	if (run_keys) {
		turnkeys_stop(run_keys, typed);
		run_keys = NULL;
	}
	if (ap == &own) {
		approver_release(&own);
		po->approver = NULL;
	} else {
		ap->ask = was_ask;
		ap->data = was_data;
		ap->cancel = was_cancel;
	}
	if (progress_active())
		progress_stop();
	for (i = 0; i < ARRAY_SIZE(stop_signals); i++)
		if (stop_signals[i] != SIGPIPE)
			sigaction(stop_signals[i], &old[i], NULL);
	/* a reader that went away must not kill forgex while it prints the ending */
	signal(SIGPIPE, SIG_IGN);
	if (ret < 0) {
		cli_print_error();
		status = ret == FX_EINVAL || ret == FX_ENOTFOUND || ret == FX_EPARSE ? EXIT_USAGE
			 : ret == FX_EINTR ? EXIT_INTERRUPTED : EXIT_FAIL;
		goto out;
	}
	status = exit_for(&res);
	if (res.outcome == PIPELINE_ERROR)
		log_error("%s", res.reason);
	if (!json)
		print_result(&res, cmd, cfg->budget.prices.nr > 0);
out:
	if (keep)
		*keep = res;
	else
		pipeline_result_release(&res);
	return status;
}

/* The request from the operands, or asked for on the terminal. */
int cli_read_request(struct buf *out, int argc, char **argv, int ask)
{
	int i;

	for (i = 0; i < argc; i++) {
		if (out->len)
			buf_addch(out, ' ');
		buf_addstr(out, argv[i]);
	}
	buf_trim(out);
	if (!out->len && ask && isatty(0) && isatty(2)) {
		char line[4096];

		fputs("What should forgex do? ", stderr);
		fflush(stderr);
		if (fgets(line, sizeof(line), stdin))
			buf_addstr(out, line);
		buf_trim(out);
	}
	return out->len ? 0 : -1;
}

/*
 * `forgex run` and `forgex plan` (plan_only: the Architect alone, with no
 * baseline test run since it only reads) share their options.
 */
int cli_run_request(const char *name, int plan_only, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "yes", no_argument, NULL, 'Y' },
		{ "ask", no_argument, NULL, 'A' },
		{ "safe", no_argument, NULL, 'S' },
		{ "no-wait", no_argument, NULL, 'n' },
		{ "model", required_argument, NULL, 'm' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct pipeline_opts po = PIPELINE_OPTS_INIT;
	const char *mode = NULL;
	struct buf request = BUF_INIT;
	struct config cfg;
	int json = 0, c, status, no_wait = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+hm:", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'm':
			if (cli_set_model(optarg) < 0)
				return cli_usage_error(name, "%s", err_last());
			break;
		case 'Y':
			mode = "auto";
			break;
		case 'A':
			mode = "ask";
			break;
		case 'S':
			mode = "safe";
			break;
		case 'n':
			no_wait = 1;
			break;
		case 'h':
			return cli_help(name);
		default:
			return cli_usage_error(name, "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (cli_read_request(&request, argc - optind, argv + optind, 1) < 0) {
		buf_release(&request);
		return cli_usage_error(name, "a request is required");
	}
	if (cli_load_config(&cfg) != 0) {
		buf_release(&request);
		return EXIT_USAGE;
	}
	/* --yes, --ask, --safe: the approval mode of this run only, as -c would set it */
	if (mode && config_set(&cfg, "permissions.mode", mode, CFG_FLAG) < 0) {
		cli_print_error();
		config_release(&cfg);
		buf_release(&request);
		return EXIT_USAGE;
	}
	if (plan_only)
		cfg.pipeline.baseline = 0;
	po.request = request.buf;
	po.plan_only = plan_only;
	po.no_wait = no_wait;
	status = cli_pipeline(name, &cfg, &po, json);
	config_release(&cfg);
	buf_release(&request);
	return status;
}

int cmd_run(int argc, char **argv)
{
	return cli_run_request("run", 0, argc, argv);
}
