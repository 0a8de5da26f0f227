/* forgex ask: one question to the configured model about this project. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/jsonx.h"
#include "base/log.h"
#include "base/path.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "llm/provider.h"
#include "llm/transcript.h"

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
};

static void print_delta(void *data, const char *text, size_t len)
{
	struct out_state *o = data;

	if (!len)
		return;
	fwrite(text, 1, len, stdout);
	fflush(stdout);
	o->printed += len;
	o->last = text[len - 1];
}

/*
 * Append up to `max` bytes of the instruction file `name` (relative to the
 * workspace, which it must not leave) under a heading. Missing files are
 * skipped. Returns the bytes of content added.
 */
static size_t add_instructions(struct buf *prompt, const char *workspace, const char *name,
			       size_t max)
{
	char *path = NULL, chunk[8192];
	struct buf content = BUF_INIT;
	size_t added = 0;
	int fd = -1, cut = 0;

	if (!max || path_resolve_in_workspace(&path, workspace, name) < 0)
		goto out;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		goto out;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (content.len + (size_t)n > max) {
			buf_add(&content, chunk, max - content.len);
			cut = 1;
			break;
		}
		buf_add(&content, chunk, (size_t)n);
	}
	if (!content.len)
		goto out;
	buf_addf(prompt, "\n\n# Project instructions (%s)\n\n", name);
	buf_addbuf(prompt, &content);
	if (cut)
		buf_addstr(prompt, "\n[... the rest of this file was left out ...]");
	added = content.len;
out:
	if (fd >= 0)
		close(fd);
	free(path);
	buf_release(&content);
	return added;
}

static void build_system_prompt(struct buf *prompt, const struct config *cfg)
{
	size_t i, total = 0;

	buf_addf(prompt, "You are forgex, a coding assistant. Answer the user's question about "
		 "the software project in %s. Be concise and accurate; say so when you "
		 "are not sure.", cfg->workspace ? cfg->workspace : "the current folder");
	if (!cfg->workspace)
		return;
	for (i = 0; i < cfg->context.instructions.nr; i++) {
		size_t room = INSTRUCTIONS_TOTAL_MAX - total;

		total += add_instructions(prompt, cfg->workspace, cfg->context.instructions.v[i],
					  room < INSTRUCTIONS_FILE_MAX ? room : INSTRUCTIONS_FILE_MAX);
	}
}

static void print_json(const struct provider *p, const struct llm_response *r)
{
	json_t *j = llm_response_to_json(r);
	struct buf b = BUF_INIT;

	jsonx_set(j, "provider", jsonx_string(p->name));
	jsonx_set(j, "retries", json_integer(r->retries));
	jsonx_set(j, "elapsed_ms", json_integer((json_int_t)(r->elapsed * 1000.0 + 0.5)));
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
	struct llm_request req = LLM_REQUEST_INIT;
	struct llm_response resp = LLM_RESPONSE_INIT;
	struct buf question = BUF_INIT, system = BUF_INIT;
	struct out_state out = { 0, '\n' };
	struct sigaction sa, old_sa;
	int json = 0, c, ret, status = EXIT_OK, i;
	size_t k;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
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

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigint;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &old_sa);
	provider_set_cancel(p, &interrupted);

	build_system_prompt(&system, &cfg);
	llm_request_add(&req, LLM_SYSTEM, system.buf);
	llm_request_add(&req, LLM_USER, question.buf);
	if (model && *model)
		req.model = xstrdup(model);

	ret = provider_chat(p, &resp, &req, json ? NULL : print_delta, &out);
	sigaction(SIGINT, &old_sa, NULL);
	if (!json && out.printed && out.last != '\n')
		putchar('\n');
	if (ret < 0) {
		fflush(stdout);
		cli_print_error();
		status = ret == FX_EINTR ? EXIT_INTERRUPTED : EXIT_PROVIDER;
		goto out;
	}
	for (k = 0; k < resp.warnings.nr; k++)
		log_warn("%s", resp.warnings.v[k]);
	if (json) {
		print_json(p, &resp);
	} else if (!out.printed && *resp.content) {
		/* a reply that was not streamed (stream = false) */
		fputs(resp.content, stdout);
		if (resp.content[strlen(resp.content) - 1] != '\n')
			putchar('\n');
	}
	if (resp.tool_calls_nr && !json)
		log_warn("the model asked to call %zu tool%s; 'forgex ask' runs none",
			 resp.tool_calls_nr, resp.tool_calls_nr == 1 ? "" : "s");
	if (!strcmp(resp.finish_reason, "length")) {
		fflush(stdout);
		log_error("the answer was cut off at the model's token limit (finish_reason "
			  "\"length\"); it is incomplete");
		status = EXIT_PROVIDER;
	}
out:
	llm_response_release(&resp);
	llm_request_release(&req);
	provider_free(p);
	transcript_free(tr);
	config_release(&cfg);
	buf_release(&question);
	buf_release(&system);
	return status;
}
