/*
 * libFuzzer target for the gitignore parser and matcher (ws/ignore.h).
 * The input is "RULES\0PATH\0PATH..." (RULES as a .gitignore file): the
 * rules are parsed for the folder "sub" and every path is matched as a
 * file and as a folder, and each line of RULES is used as a wildmatch
 * pattern against each path. Besides not crashing or running away (a
 * timeout is a failure), a pattern without wildcards must match exactly
 * the text equal to it, and "*" must match every path without a slash.
 *
 *   make fuzz && build/fuzz/ignore -max_len=2048 CORPUS_DIR
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "ws/ignore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int has_wildcard(const char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] == '*' || p[i] == '?' || p[i] == '[' || p[i] == '\\')
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data, *end = s + size;
	const char *z = memchr(s, '\0', size);
	size_t rules_len = z ? (size_t)(z - s) : size;
	struct ignore_rules *rules = ignore_rules_parse("sub", s, rules_len);
	const char *p = z ? z + 1 : end;

	while (p < end) {
		const char *e = memchr(p, '\0', (size_t)(end - p));
		size_t n = e ? (size_t)(e - p) : (size_t)(end - p);
		char *path = malloc(n + 5);
		const char *line = s;

		/* As a path inside "sub", matched as a file and as a folder. */
		memcpy(path, "sub/", 4);
		memcpy(path + 4, p, n);
		path[n + 4] = '\0';
		if (ignore_rules_match(rules, path, n + 4, 0) > IGNORE_INCLUDED ||
		    ignore_rules_match(rules, path, n + 4, 1) > IGNORE_INCLUDED)
			abort();
		/* Each rule line as a bare pattern against the path. */
		while (line < s + rules_len) {
			const char *nl = memchr(line, '\n', (size_t)(s + rules_len - line));
			size_t ln = nl ? (size_t)(nl - line) : (size_t)(s + rules_len - line);
			char *pat = malloc(ln + 1);
			int m;

			memcpy(pat, line, ln);
			pat[ln] = '\0';
			m = ignore_wildmatch(pat, p, n);
			if (strlen(pat) == ln && !has_wildcard(pat, ln) &&
			    m != (ln == n && !memcmp(pat, p, n)))
				abort();
			free(pat);
			line += ln + 1;
		}
		if (!memchr(p, '/', n) && !ignore_wildmatch("*", p, n))
			abort();
		free(path);
		p += n + 1;
	}
	ignore_rules_free(rules);
	err_clear();
	return 0;
}
