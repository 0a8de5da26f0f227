#ifndef FX_TOOLS_PATCH_H
#define FX_TOOLS_PATCH_H

/*
 * apply_patch: the patch envelope of the Codex CLI (codex-rs/apply-patch),
 * the edit format the GPT-4.1, GPT-5, o-series and codex models are
 * trained on:
 *
 *   *** Begin Patch
 *   *** Add File: path          then the content, each line "+..."
 *   *** Delete File: path
 *   *** Update File: path
 *   *** Move to: new/path       (optional, right after Update File)
 *   @@ class Foo                anchors: each line is sought in order,
 *   @@     def bar(self):       the change comes after the last one
 *    context line               (' ', '-', '+' lines as in a diff; a
 *   -removed line               first chunk may omit its @@)
 *   +added line
 *   *** End of File             (optional: the chunk ends the file)
 *   *** End Patch
 *
 * Parsing is as lenient as Codex's: markers may carry surrounding blanks,
 * a patch wrapped in a heredoc (<<'EOF' ... EOF) or a Markdown fence is
 * unwrapped, blank lines between hunks are skipped, and an @@ line in the
 * form of a unified diff ("@@ -12,7 +12,8 @@ def f():") keeps only its
 * text. Context is sought from where the previous chunk ended, first
 * exactly, then ignoring trailing whitespace, then leading and trailing
 * whitespace, then with typographic punctuation folded (Codex's
 * seek_sequence; the last level here also folds runs of blanks). Lines are
 * written with the file's line ends and its final-newline state kept;
 * context lines are written as the file has them; added lines matched
 * with other indentation are re-indented by edit_file's rules (a place
 * that cannot be told is refused).
 *
 * The tool checks the whole patch against the files before it writes
 * anything, then writes: every file through fs_write_loc() (temporary
 * file, rename), every deletion through fs_delete_loc(), each replaced or
 * deleted file first kept under a hard link beside it. When a write fails
 * midway, the links are renamed back and created files and folders are
 * removed, so either the whole patch applies or no file changes.
 */

#include <stddef.h>

#include "base/buf.h"
#include "base/strvec.h"
#include "tools/registry.h"

enum patch_op {
	PATCH_ADD = 0,
	PATCH_DELETE,
	PATCH_UPDATE,
};

struct patch_chunk {
	struct strvec anchors;	/* @@ lines, sought in order */
	struct strvec old_lines;	/* ' ' and '-' lines */
	struct strvec new_lines;	/* ' ' and '+' lines */
	int eof;		/* *** End of File */
	size_t line;		/* line of the patch where it starts */
};

struct patch_hunk {
	enum patch_op op;
	char *path;
	char *move_to;		/* Update: NULL, or the new path */
	struct buf content;	/* Add: the file */
	struct patch_chunk *chunks;
	size_t chunks_nr, chunks_alloc;
	size_t line;		/* line of the patch where it starts */
};

struct patch {
	struct patch_hunk *hunks;
	size_t nr, alloc;
};

#define PATCH_INIT { NULL, 0, 0 }

/**
 * Parse `text` (`len` bytes). 0 with `out` filled, or FX_EPARSE with the
 * reason, naming the line of the patch, appended to `why` (`out` is then
 * empty).
 */
int patch_parse(struct patch *out, const char *text, size_t len, struct buf *why);

/** Free everything; leaves PATCH_INIT. */
void patch_release(struct patch *p);

/**
 * Apply the chunks of the Update hunk `h` to `text` (the file `name`),
 * appending the new content to `out`. `worst` receives the most lenient
 * match level used (enum match_pass), `notes` a line for each @@ line the
 * file does not have but whose chunk was found anyway (once). 0, or
 * FX_ENOTFOUND / FX_EINVAL with the reason appended to `why` (`out` and
 * `notes` unchanged).
 */
int patch_apply_update(struct buf *out, const char *text, size_t len, const struct patch_hunk *h,
		       const char *name, int *worst, struct buf *notes, struct buf *why);

/** Register apply_patch (needs write and delete). */
int tools_register_patch(struct tool_registry *reg);

#endif
