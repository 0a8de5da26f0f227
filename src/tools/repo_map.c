/*
 * The repo_map tool (see repo_map.h): the map of context/context.h,
 * offered to the model. In tools/, above context/, so that context/
 * needs nothing of the tools (and `forgex map` does not link the tool
 * registry).
 */
#include <string.h>

#include "base/err.h"
#include "context/context.h"
#include "sandbox/permissions.h"
#include "tools/registry.h"
#include "tools/repo_map.h"

#define TOOL_TOKENS_MIN 64

static int tool_repo_map(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	struct ctx_session *s = tool_ctx_data(ctx);
	struct strvec focus = STRVEC_INIT;
	const json_t *arr = json_object_get(args, "focus"), *v;
	size_t i, start = result->len;
	long long tokens = tool_arg_int(args, "tokens", (long long)s->map_tokens);
	int ret;

	json_array_foreach(arr, i, v)
		strvec_push(&focus, json_string_value(v));
	if (tokens < TOOL_TOKENS_MIN)
		tokens = TOOL_TOKENS_MIN;
	ret = ctx_session_map(s, result, focus.nr ? &focus : NULL, NULL, (size_t)tokens);
	strvec_clear(&focus);
	if (ret < 0)
		return ret;
	if (result->len == start)
		buf_addf(result, "the repository map is empty: %zu files indexed, none with "
			 "definitions to show\n", s->idx.nfiles);
	if (s->idx.stats.ctags_error)
		buf_addf(result, "[forgex: no definitions from ctags: %s]\n", s->idx.stats.ctags_error);
	return 0;
}

int tools_register_repo_map(struct tool_registry *reg, struct ctx_session *s)
{
	static const char schema[] =
		"{\"type\":\"object\",\"properties\":{"
		"\"focus\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"minLength\":1},"
		"\"description\":\"Paths, folders or symbol names to centre the map on\"},"
		"\"tokens\":{\"type\":\"integer\",\"minimum\":64,\"maximum\":16384,"
		"\"description\":\"Size of the map in tokens (default: [context] map_tokens)\"}"
		"},\"additionalProperties\":false}";
	struct tool_def def = {
		"repo_map",
		"Show a map of the repository: the files most relevant to the request (and to "
		"focus, when given), best first, each with the source lines of its main "
		"definitions (functions, types, classes), ranked by how the rest of the code "
		"refers to them. Use it to find where things are before reading files.",
		schema, PERM_READ, 0, tool_repo_map, s,
	};

	return registry_add(reg, &def);
}
