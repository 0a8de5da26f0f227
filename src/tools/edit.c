#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sandbox/permissions.h"
#include "tools/fs.h"
#include "tools/match.h"
#include "tools/registry.h"

/* ---- the tool ---- */

static int tool_edit_file(struct tool_ctx *ctx, const json_t *args, struct buf *result)
{
	const char *path = tool_arg_str(args, "path");
	const json_t *jold = json_object_get(args, "old_string");
	const json_t *jnew = json_object_get(args, "new_string");
	const char *old = json_string_value(jold), *new_text = json_string_value(jnew);
	size_t old_len = json_string_length(jold), new_len = json_string_length(jnew);
	int replace_all = tool_arg_bool(args, "replace_all", 0);
	size_t start_line = (size_t)tool_arg_int(args, "start_line", 0);
	struct wspath_loc loc = WSPATH_LOC_INIT;
	struct match_result res = MATCH_RESULT_INIT;
	struct buf data = BUF_INIT, why = BUF_INIT;
	size_t i, ph;
	int ret, exact;

	if (!old_len) {
		/* Creating: only where there is no file yet, or an empty one. */
		ret = wspath_locate(&loc, &ctx->root, path, WSPATH_FOLLOW | WSPATH_MKDIRS | WSPATH_CHANGE);
		if (ret < 0)
			goto out;
		if (loc.type && loc.type != S_IFREG) {
			ret = err_set(FX_EINVAL, "'%s' exists and is not a regular file", path);
			goto out;
		}
		if (loc.type) {
			wspath_loc_release(&loc);
			ret = fs_load_text(&data, &loc, ctx, path, ctx->limits.file_bytes, WSPATH_CHANGE);
			if (ret < 0)
				goto out;
			if (data.len) {
				ret = err_set(FX_EEXISTS, "'%s' exists and is not empty; an empty "
					      "old_string only creates new files. Give the text to "
					      "replace, or use write_file to replace everything", path);
				goto out;
			}
		}
		ret = fs_write_loc(ctx, &loc, new_text, new_len);
		if (ret < 0)
			goto out;
		buf_addf(result, "created %s: %zu bytes, %zu lines\n", loc.rel, new_len,
			 fs_count_lines(new_text, new_len));
		goto out;
	}
	ret = fs_load_text(&data, &loc, ctx, path, ctx->limits.file_bytes, WSPATH_CHANGE);
	if (ret < 0)
		goto out;
	if (fs_is_binary(data.buf, data.len, 1, &why)) {
		ret = err_set(FX_EINVAL, "'%s' looks like a binary file (%s); edit_file edits text",
			      path, why.buf);
		goto out;
	}
	/* A placeholder would be written literally, the lines it stands for lost. */
	buf_reset(&why);
	ph = match_find_placeholder(old, old_len, new_text, new_len, &why);
	if (ph) {
		buf_addf(result, "line %zu of new_string, '%s', stands for code left out, and "
			 "old_string has no such line: edit_file writes new_string as it is, so the "
			 "lines it stands for would be replaced by that comment. Nothing was written. "
			 "Write out every line new_string must hold, or make old_string cover only "
			 "the lines that change.\n", ph, why.buf);
		ret = err_set(FX_EINVAL, "new_string holds a placeholder for left-out code");
		goto out;
	}
	ret = match_apply_at(&res, data.buf, data.len, old, old_len, new_text, new_len,
			    replace_all, start_line, loc.rel, result);
	if (ret < 0)
		goto out;
	ret = fs_check_placeholder(data.buf, data.len, res.text.buf, res.text.len, path);
	if (ret < 0)
		goto out;
	ret = fs_write_loc(ctx, &loc, res.text.buf, res.text.len);
	if (ret < 0)
		goto out;
	buf_addf(result, "edited %s: %zu replacement%s, at line", loc.rel, res.count,
		 res.count == 1 ? "" : "s");
	for (i = 0; i < res.count && i < MATCH_MAX_LINES_NOTED; i++)
		buf_addf(result, "%s %zu", i ? "," : "", res.lines[i]);
	exact = res.pass == MATCH_EXACT;
	if (res.count > MATCH_MAX_LINES_NOTED)
		buf_addstr(result, ", ...");
	if (res.pass == MATCH_NEAR)
		buf_addf(result, " (old_string is not in the file as written; the %s at line%s "
			 "%zu%s, %d%% alike, %s replaced: %zu line%s of old_string differ%s from "
			 "%s beyond whitespace. Check the lines below)",
			 res.count > 1 ? "passages" : "passage", res.count > 1 ? "s" : "",
			 res.lines[0], res.count > 1 ? " and the others listed" : "", res.similar,
			 res.count > 1 ? "equally close, were each" : res.by_line
			 ? "the one start_line holds, was" : "was the only close one and was",
			 res.differ, res.differ == 1 ? "" : "s", res.differ == 1 ? "s" : "",
			 res.count > 1 ? "each" : "it");
	else if (!exact)
		buf_addf(result, " (old_string matched %s%s%s%s)", match_pass_name(res.pass),
			 res.pass != res.level && res.level != MATCH_EXACT ? ", then " : "",
			 res.pass != res.level && res.level != MATCH_EXACT
			 ? match_pass_name(res.level) : "",
			 res.level >= MATCH_INDENT && res.level != MATCH_NOSPACE
			 ? "; new_string was re-indented to the file" : "");
	if (res.respelt) {
		const char *file_word = strchr(res.respelt, '\n') + 1;

		buf_addf(result, " (old_string spells the file's `%s` as `%.*s`, and so does "
			 "new_string: it was written with the file's spelling)", file_word,
			 (int)(file_word - 1 - res.respelt), res.respelt);
	}
	if (res.laid_out)
		buf_addf(result, " (%zu line%s of new_string %s indented as old_string indents lines "
			 "the file has at different depths; indentation does not change what %s means, "
			 "so %s given the depth of the nearest of those lines. Check the lines below)",
			 res.laid_out, res.laid_out == 1 ? "" : "s", res.laid_out == 1 ? "is" : "are",
			 loc.rel, res.laid_out == 1 ? "it was" : "each was");
	if (res.blank_edges)
		buf_addf(result, " (the blank %s at the start or end of old_string are not in the "
			 "file and were left out)", res.blank_edges == 1 ? "lines" : "spaces");
	if (res.by_line)
		buf_addf(result, " (old_string occurs more than once; start_line %zu chose this "
			 "one)", res.by_line);
	buf_addch(result, '\n');
	if (res.count == 1) {
		size_t from = res.lines[0] > 3 ? res.lines[0] - 3 : 0;
		size_t to = res.lines[0] - 1 + res.span + 2;

		buf_addstr(result, "The lines around the change now read:\n");
		match_show_lines(result, res.text.buf, res.text.len, from, to);
	}
out:
	wspath_loc_release(&loc);
	match_result_release(&res);
	buf_release(&data);
	buf_release(&why);
	return ret;
}

int tools_register_edit(struct tool_registry *reg)
{
	static const struct tool_def def = {
		"edit_file",
		"Replace text in a file. old_string must match the file exactly once (copy it "
		"from read_file without the line numbers); include enough surrounding lines to "
		"make it unique, give start_line to choose one, or set replace_all to change every "
		"occurrence. When there is no "
		"exact match, a unique match that differs only in indentation, trailing spaces or "
		"line ends is accepted and new_string is re-indented to the file. An empty "
		"old_string creates a file that does not exist yet (or is empty). Nothing is "
		"written unless the edit applies.",
		"{\"type\":\"object\",\"properties\":{"
		"\"path\":{\"type\":\"string\",\"minLength\":1,\"description\":\"File path, relative to the workspace\"},"
		"\"old_string\":{\"type\":\"string\",\"description\":\"The exact text to replace\"},"
		"\"new_string\":{\"type\":\"string\",\"description\":\"The text to put in its place\"},"
		"\"replace_all\":{\"type\":\"boolean\",\"description\":\"Replace every occurrence (default false)\"},"
		"\"start_line\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"When old_string occurs more than once: the line (as read_file numbers it) where the one to replace starts\"}"
		"},\"required\":[\"path\",\"old_string\",\"new_string\"],\"additionalProperties\":false}",
		PERM_WRITE, 0, tool_edit_file, NULL,
	};

	return registry_add(reg, &def);
}
