#ifndef FX_CONTEXT_CTAGS_H
#define FX_CONTEXT_CTAGS_H

/*
 * Definitions from Universal Ctags, for the symbol index.
 *
 * ctags runs as a child through the executor (sandbox/executor.h), so it
 * is confined like any other command, as
 *
 *   ctags --options=NONE --output-format=json --fields=... -f - ./FILE...
 *
 * --options=NONE first, so that neither the workspace's .ctags.d nor
 * ~/.ctags.d nor the environment can add options (an option file can run
 * a regex parser of its own, or send the output elsewhere). Each file is
 * given as "./path", because ctags has no "--": a file called
 * "--options=x" stays a file name. (Not -L LIST: ctags reads options
 * from a list too, and a list cannot hold a name with a newline.)
 *
 * The output is one JSON object per line, for example
 *   {"_type": "tag", "name": "foo", "path": "./a.c", "pattern": "/^int foo(int a)$/",
 *    "file": true, "line": 1, "kind": "function", "scope": "bar", "scopeKind": "struct"}
 * (ctags 5.9). ctx_ctags_parse_line() reads one such line; it is fuzzed
 * (tests/fuzz/ctx_ctags.c), since whatever the child prints is untrusted.
 */

#include <stddef.h>

#include "base/buf.h"

/** One tag, pointing into the caller's scratch buffer (valid until the next parse). */
struct ctx_tag {
	const char *name, *path, *kind, *pattern, *scope;
	size_t name_len, path_len, kind_len, pattern_len, scope_len;
	long line;		/* 0: absent */
	int file_scope;		/* "file": true (static in C) */
};

/**
 * Parse one line of ctags JSON output (without its newline). Returns 1
 * for a tag with a name, a path and a line, 0 for any other well-formed
 * object ("_type": "ptag", ...), FX_EPARSE for anything else. Strings are
 * unescaped into `scratch` (reset first), NUL-terminated each.
 */
int ctx_ctags_parse_line(struct ctx_tag *out, struct buf *scratch, const char *line, size_t len);

/**
 * The source line held by a ctags pattern ("/^  int foo(void)$/"), with
 * the pattern's escapes undone, trailing blanks dropped and at most `max`
 * bytes kept (at a UTF-8 boundary). Appended to `out`.
 */
void ctx_ctags_pattern_text(struct buf *out, const char *pattern, size_t len, size_t max);

/** The arguments before the files (NULL-terminated, static). */
const char *const *ctx_ctags_argv(void);

#endif
