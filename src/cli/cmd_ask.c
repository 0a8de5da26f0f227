/*
 * forgex ask: one question to the configured model about this project. The
 * model may look through the project with the Architect's read-only tools
 * (list_dir, read_file, search) before it answers in plain text.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agents/agent.h"
#include "agents/roles.h"
#include "base/clock.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/path.h"
#include "base/fsutil.h"
#include "base/termsafe.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "llm/provider.h"
#include "llm/transcript.h"
#include "tools/registry.h"

/* How much of each instruction file, and of all of them, goes into the prompt. */
#define INSTRUCTIONS_FILE_MAX (32u << 10)
#define INSTRUCTIONS_TOTAL_MAX (96u << 10)

static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
	(void)sig;
	interrupted = 1;
}

struct out_state {
	size_t printed;
	char last;
	char held[4];		/* the start of a UTF-8 sequence cut between deltas */
	size_t held_len;
};

/* The model's text as it arrives, with control characters escaped (base/termsafe.h). */
static void print_delta(void *data, const char *text, size_t len)
{
	struct out_state *o = data;
	struct buf in = BUF_INIT, out = BUF_INIT;
	size_t keep;

	if (!len)
		return;
	buf_add(&in, o->held, o->held_len);
	buf_add(&in, text, len);
	keep = termsafe_partial_tail(in.buf, in.len);
	memcpy(o->held, in.buf + in.len - keep, keep);
	o->held_len = keep;
	buf_add_termsafe(&out, in.buf, in.len - keep, TERMSAFE_MULTILINE);
	fwrite(out.buf, 1, out.len, stdout);
	fflush(stdout);
	o->printed += len;
	o->last = text[len - 1];
	buf_release(&in);
	buf_release(&out);
}

/* What print_delta() still holds: an incomplete sequence at the very end is escaped. */
static void flush_delta(struct out_state *o)
{
	struct buf out = BUF_INIT;

	if (!o->held_len)
		return;
	buf_add_termsafe(&out, o->held, o->held_len, TERMSAFE_MULTILINE);
	fwrite(out.buf, 1, out.len, stdout);
	o->held_len = 0;
	buf_release(&out);
}

/*
 * Append up to `max` bytes of the instruction file `name` (relative to the
 * workspace, which it must not leave) under a heading. Missing files are
 * skipped. Returns the bytes of content added.
 */
static size_t add_instructions(struct buf *prompt, const char *workspace, const char *name,
			       size_t max)
{
	struct buf content = BUF_INIT;
	size_t added = 0;
	int cut = 0, ret;

	if (!max)
		return 0;
	/* beneath the workspace, following no link (fsutil_read_beneath) */
	ret = fsutil_read_beneath(&content, workspace, name, max, &cut);
	if (ret < 0) {
		if (ret != FX_ENOTFOUND)
			log_warn("%s", err_last());
		err_clear();
		goto out;
	}
	if (!content.len)
		goto out;
	buf_addf(prompt, "\n\n# Project instructions (%s)\n\n", name);
	buf_addbuf(prompt, &content);
	if (cut)
		buf_addstr(prompt, "\n[... the rest of this file was left out ...]");
	added = content.len;
out:
	buf_release(&content);
	return added;
}

static void build_system_prompt(struct buf *prompt, const struct config *cfg)
{
	size_t i, total = 0;

	buf_addstr(prompt, role_ask_prompt());
	buf_addf(prompt, "\nThe workspace is %s.", cfg->workspace ? cfg->workspace
							 : "the current folder");
	if (!cfg->workspace)
		return;
	for (i = 0; i < cfg->context.instructions.nr; i++) {
		size_t room = INSTRUCTIONS_TOTAL_MAX - total;

		total += add_instructions(prompt, cfg->workspace, cfg->context.instructions.v[i],
					  room < INSTRUCTIONS_FILE_MAX ? room : INSTRUCTIONS_FILE_MAX);
	}
}

struct ask_events {
	struct out_state *out;
	int show_progress;
	double started;
};

/* Progress for a person on stderr; a tool call ends the text streamed before it. */
static void on_event(void *data, const char *type, json_t *fields)
{
	struct ask_events *ev = data;

	if (!strcmp(type, "tool_call") && ev->out->printed && ev->out->last != '\n') {
		putchar('\n');
		fflush(stdout);
		ev->out->last = '\n';
	}
	if (ev->show_progress && !strcmp(type, "progress") &&
	    (cli_verbose || !strcmp(jsonx_str(fields, "kind") ? jsonx_str(fields, "kind") : "", "tool")))
		cli_printf(stderr, "forgex: %s\n", jsonx_str(fields, "message"));
	json_decref(fields);
}

static void print_json(const struct provider *p, const struct agent_result *r, double elapsed)
{
	json_t *j = json_object(), *u = json_object();
	struct buf b = BUF_INIT;

	jsonx_set(j, "content", jsonx_string(r->answer));
	jsonx_set(j, "finish_reason", jsonx_string(r->finish_reason));
	jsonx_set(j, "model", jsonx_string(r->model ? r->model : ""));
	jsonx_set(u, "prompt_tokens", json_integer(r->usage.prompt_tokens));
	jsonx_set(u, "completion_tokens", json_integer(r->usage.completion_tokens));
	jsonx_set(u, "total_tokens", json_integer(r->usage.total_tokens));
	jsonx_set(j, "usage", u);
	jsonx_set(j, "provider", jsonx_string(p->name));
	jsonx_set(j, "status", jsonx_string(agent_status_name(r->status)));
	jsonx_set(j, "turns", json_integer(r->turns));
	jsonx_set(j, "tool_calls", json_integer(r->tool_calls));
	jsonx_set(j, "elapsed_ms", json_integer((json_int_t)(elapsed * 1000.0 + 0.5)));
	jsonx_dump(&b, j, JSON_INDENT(2));
	puts(b.buf);
	buf_release(&b);
	json_decref(j);
}

int cmd_ask(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "provider", required_argument, NULL, 'p' },
		{ "model", required_argument, NULL, 'm' },
		{ "transcript", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *provider_name = NULL, *model = NULL, *transcript_path = NULL;
	struct config cfg;
	struct transcript *tr = NULL;
	struct provider *p = NULL;
	struct provider_config *pc;
	struct agent_config *ac;
	struct tool_registry reg = TOOL_REGISTRY_INIT;
	struct tool_ctx ctx;
	int ctx_open = 0;
	struct agent_budget budget = AGENT_BUDGET_INIT;
	struct agent_opts ao = AGENT_OPTS_INIT;
	struct agent_result res = AGENT_RESULT_INIT;
	struct buf question = BUF_INIT, system = BUF_INIT;
	struct out_state out = { 0, '\n' };
	struct ask_events ev;
	struct sigaction sa, old_sa;
	int json = 0, c, ret, status = EXIT_OK, i;
	double started;
	size_t k;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+hm:", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'p':
			provider_name = optarg;
			break;
		case 'm':
			model = optarg;
			break;
		case 't':
			transcript_path = optarg;
			break;
		case 'h':
			return cli_help("ask");
		default:
			return cli_usage_error("ask", "unknown option or missing value '%s'",
					       argv[optind - 1]);
		}
	}
	for (i = optind; i < argc; i++) {
		if (question.len)
			buf_addch(&question, ' ');
		buf_addstr(&question, argv[i]);
	}
	buf_trim(&question);
	if (!question.len) {
		buf_release(&question);
		return cli_usage_error("ask", "a question is required");
	}
	if (cli_load_config(&cfg) != 0) {
		buf_release(&question);
		return EXIT_USAGE;
	}
	ac = config_agent(&cfg, ROLE_ARCHITECT);
	if (!provider_name)
		provider_name = ac->provider;
	if (transcript_path && transcript_open(&tr, transcript_path) < 0) {
		cli_print_error();
		status = EXIT_USAGE;
		goto out;
	}
	ret = provider_open(&p, &cfg, provider_name, tr);
	if (ret < 0) {
		cli_print_error();
		status = ret == FX_ENOTFOUND || ret == FX_EINVAL ? EXIT_USAGE : EXIT_PROVIDER;
		goto out;
	}
	pc = config_provider(&cfg, p->name);
	if (tools_register_builtin(&reg) < 0 ||
	    tool_ctx_init(&ctx, &reg, cfg.workspace ? cfg.workspace : ".") < 0) {
		cli_print_error();
		status = EXIT_USAGE;
		goto out;
	}
	ctx_open = 1;
	agent_budget_init(&budget, cfg.budget.max_tokens, cfg.budget.max_cost_usd,
			  (double)cfg.budget.max_wall_seconds);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_sa);
	provider_set_cancel(p, &interrupted);

	build_system_prompt(&system, &cfg);
	ev.out = &out;
	ev.show_progress = !json && !cli_quiet && (cli_verbose || isatty(2));
	ao.role = ROLE_ARCHITECT;
	ao.plain_answer = 1;
	ao.system_prompt = system.buf;
	ao.task = question.buf;
	ao.provider = p;
	ao.model = model && *model ? model : ac->model;
	ao.temperature = ac->temperature;
	ao.max_turns = ac->max_turns;
	ao.tool_mode = pc && pc->tool_mode && !strcmp(pc->tool_mode, "text") ? AGENT_TOOLS_TEXT
									     : AGENT_TOOLS_NATIVE;
	ao.tools = &ctx;
	ao.budget = &budget;
	ao.on_event = on_event;
	ao.event_data = &ev;
	ao.cancel = &interrupted;
	ao.stream = p->stream;
	ao.on_text = json ? NULL : print_delta;
	ao.text_data = &out;

	started = clk_mono_s();
	ret = agent_run(&res, &ao);
	sigaction(SIGINT, &old_sa, NULL);
	flush_delta(&out);
	if (!json && out.printed && out.last != '\n')
		putchar('\n');
	if (ret < 0) {
		fflush(stdout);
		cli_print_error();
		status = EXIT_USAGE;
		goto out;
	}
	for (k = 0; k < res.warnings.nr; k++)
		log_warn("%s", res.warnings.v[k]);
	if (res.status != AGENT_ANSWERED) {
		fflush(stdout);
		if (json)
			print_json(p, &res, clk_mono_s() - started);
		err_set(FX_ERROR, "%s", res.error ? res.error : agent_status_name(res.status));
		cli_print_error();
		status = res.status == AGENT_INTERRUPTED ? EXIT_INTERRUPTED
			: res.status == AGENT_PROVIDER_ERROR ? EXIT_PROVIDER : EXIT_FAIL;
		goto out;
	}
	if (json) {
		print_json(p, &res, clk_mono_s() - started);
	} else if (!out.printed && *res.answer) {
		/* a reply that was not streamed (stream = false) */
		fputs_termsafe(res.answer, stdout, TERMSAFE_MULTILINE);
		if (res.answer[strlen(res.answer) - 1] != '\n')
			putchar('\n');
	}
	if (!strcmp(res.finish_reason, "length")) {
		fflush(stdout);
		log_error("the answer was cut off at the model's token limit (finish_reason "
			  "\"length\"); it is incomplete");
		status = EXIT_PROVIDER;
	}
out:
	agent_result_release(&res);
	agent_budget_release(&budget);
	if (ctx_open)
		tool_ctx_release(&ctx);
	registry_release(&reg);
	provider_free(p);
	transcript_free(tr);
	config_release(&cfg);
	buf_release(&question);
	buf_release(&system);
	return status;
}
