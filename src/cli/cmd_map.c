/*
 * forgex map: the repository map the Architect is shown, for people.
 *
 *   forgex map [--tokens N] [--focus X]... [--json] [--stats] [REQUEST...]
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/jsonx.h"
#include "base/log.h"
#include "base/termsafe.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "context/context.h"
#include "pipeline/rundir.h"
#include "sandbox/executor.h"

static void stats_json(json_t *o, const struct ctx_index *idx, const struct ctx_map *m)
{
	const struct ctx_index_stats *st = &idx->stats;
	json_t *s = json_object();

	jsonx_set(s, "files", json_integer((json_int_t)st->files));
	jsonx_set(s, "definitions", json_integer((json_int_t)st->defs));
	jsonx_set(s, "references", json_integer((json_int_t)st->refs));
	jsonx_set(s, "symbols", json_integer((json_int_t)st->symbols));
	jsonx_set(s, "cache_hits", json_integer((json_int_t)st->cache_hits));
	jsonx_set(s, "same_content", json_integer((json_int_t)st->same_content));
	jsonx_set(s, "indexed", json_integer((json_int_t)st->indexed));
	jsonx_set(s, "skipped", json_integer((json_int_t)st->skipped));
	jsonx_set(s, "ctags_runs", json_integer((json_int_t)st->ctags_runs));
	jsonx_set(s, "cache_loaded", json_boolean(st->cache_loaded));
	jsonx_set(s, "cache_rejected", json_boolean(st->cache_rejected));
	jsonx_set(s, "cache_saved", json_boolean(st->saved));
	jsonx_set(s, "edges", json_integer((json_int_t)m->edges));
	jsonx_set(s, "iterations", json_integer(m->iterations));
	jsonx_set(s, "index_seconds", json_real(st->seconds));
	jsonx_set(s, "load_seconds", json_real(st->load_seconds));
	jsonx_set(s, "walk_seconds", json_real(st->walk_seconds));
	jsonx_set(s, "ctags_seconds", json_real(st->ctags_seconds));
	jsonx_set(s, "save_seconds", json_real(st->save_seconds));
	jsonx_set(s, "rank_seconds", json_real(m->seconds));
	jsonx_set(s, "graph_seconds", json_real(m->graph_seconds));
	jsonx_set(s, "pagerank_seconds", json_real(m->pagerank_seconds));
	jsonx_set(s, "ctags_error", st->ctags_error ? jsonx_string(st->ctags_error) : json_null());
	jsonx_set(o, "stats", s);
}

static void stats_text(const struct ctx_index *idx, const struct ctx_map *m)
{
	const struct ctx_index_stats *st = &idx->stats;

	fprintf(stderr,
		"files: %zu (%zu from the cache, %zu same content, %zu indexed, %zu skipped)\n"
		"definitions: %zu\nreferences: %zu\nsymbols: %zu\nctags runs: %zu\n"
		"cache: %s%s\ngraph: %zu edges, %d iterations\n"
		"time: %.3f s index, %.3f s ranking\n"
		"  index: %.3f s load, %.3f s walk, %.3f s ctags after the walk, %.3f s save\n"
		"  ranking: %.3f s graph, %.3f s PageRank\nmap: %zu of %zu tokens, %zu files\n",
		st->files, st->cache_hits, st->same_content, st->indexed, st->skipped, st->defs,
		st->refs, st->symbols, st->ctags_runs,
		st->cache_loaded ? "loaded" : st->cache_rejected ? "rejected (rebuilt)" : "none",
		st->saved ? ", saved" : "", m->edges, m->iterations, st->seconds, m->seconds,
		st->load_seconds, st->walk_seconds, st->ctags_seconds, st->save_seconds,
		m->graph_seconds, m->pagerank_seconds, m->tokens, m->budget, m->nfiles);
}

int cmd_map(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "tokens", required_argument, NULL, 't' },
		{ "focus", required_argument, NULL, 'f' },
		{ "json", no_argument, NULL, 'j' },
		{ "stats", no_argument, NULL, 's' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct strvec focus = STRVEC_INIT;
	struct buf request = BUF_INIT, out = BUF_INIT;
	struct ctx_session s;
	struct executor ex, ex2;
	struct config cfg;
	long tokens = -1;
	int json = 0, stats = 0, have_ex = 0, have_ex2 = 0, c, ret, status = EXIT_OK, i;
	char *end;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 't':
			tokens = strtol(optarg, &end, 10);
			if (*end || end == optarg || tokens < 1 || tokens > 1000000)
				return cli_usage_error("map", "--tokens takes a number from 1 to 1000000, "
						       "not '%s'", optarg);
			break;
		case 'f':
			if (!*optarg)
				return cli_usage_error("map", "--focus takes a path or a name");
			strvec_push(&focus, optarg);
			break;
		case 'j':
			json = 1;
			break;
		case 's':
			stats = 1;
			break;
		case 'h':
			strvec_clear(&focus);
			return cli_help("map");
		default:
			strvec_clear(&focus);
			return cli_usage_error("map", "unknown option '%s'", argv[optind - 1]);
		}
	}
	for (i = optind; i < argc; i++) {
		if (request.len)
			buf_addch(&request, ' ');
		buf_addstr(&request, argv[i]);
	}
	if ((ret = cli_load_config(&cfg))) {
		strvec_clear(&focus);
		buf_release(&request);
		return ret;
	}
	if (!cfg.workspace) {
		log_error("no workspace: run inside a project folder");
		status = EXIT_USAGE;
		goto out_cfg;
	}
	if (tokens < 0)
		tokens = cfg.context.map_tokens > 0 ? cfg.context.map_tokens : 2048;
	/* ctags runs in the sandbox, as every command does */
	if (executor_init(&ex, &cfg, cfg.workspace) == 0) {
		have_ex = 1;
		/* ctags only reads: a read-only workspace needs no hard-link search */
		ex.workspace_read_only = 1;
		/* a second one: two ctags at a time, one per core */
		have_ex2 = executor_init(&ex2, &cfg, cfg.workspace) == 0;
		if (have_ex2)
			ex2.workspace_read_only = 1;
		err_clear();
	} else {
		log_warn("no definitions: the sandbox cannot run ctags: %s", err_last());
		err_clear();
	}
	if (rundir_exclude(cfg.workspace, NULL) < 0)
		err_clear();	/* git status showing .forgex/map/ is no reason to fail */
	ret = ctx_session_init(&s, cfg.workspace, have_ex ? &ex : NULL, (size_t)tokens);
	if (ret < 0) {
		cli_print_error();
		status = cli_exit_for_error(ret);
		goto out_ex;
	}
	if (have_ex2)
		s.idx.ex2 = &ex2;
	ctx_session_set_request(&s, request.len ? request.buf : NULL);
	ret = ctx_session_map(&s, &out, focus.nr ? &focus : NULL, NULL, (size_t)tokens);
	if (ret < 0) {
		cli_print_error();
		status = cli_exit_for_error(ret);
		goto out_session;
	}
	if (s.idx.stats.ctags_error && !cli_quiet)
		log_warn("no definitions: %s", s.idx.stats.ctags_error);
	if (json) {
		json_t *o = ctx_map_to_json(&s.last, &s.idx);
		struct buf b = BUF_INIT;

		jsonx_set(o, "text", jsonx_string(s.last.text.buf));
		if (stats)
			stats_json(o, &s.idx, &s.last);
		/* see cmd_mcp.c: C1 controls are UTF-8 to jansson, \uXXXX on a terminal */
		jsonx_dump(&b, o, isatty(STDOUT_FILENO) ? JSON_ENSURE_ASCII : 0);
		buf_addch(&b, '\n');
		fwrite(b.buf, 1, b.len, stdout);
		buf_release(&b);
		json_decref(o);
	} else {
		/* the map quotes the repository's names and lines: escapes are shown, not sent */
		struct buf safe = BUF_INIT;

		buf_add_termsafe(&safe, out.buf ? out.buf : "", out.len, TERMSAFE_MULTILINE);
		fwrite(safe.buf ? safe.buf : "", 1, safe.len, stdout);
		buf_release(&safe);
		if (stats)
			stats_text(&s.idx, &s.last);
	}
out_session:
	ctx_session_release(&s);
out_ex:
	if (have_ex2)
		executor_release(&ex2);
	if (have_ex)
		executor_release(&ex);
out_cfg:
	config_release(&cfg);
	strvec_clear(&focus);
	buf_release(&request);
	buf_release(&out);
	return status;
}
