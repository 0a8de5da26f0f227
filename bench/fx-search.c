/*
 * fx-search [-j THREADS] PATTERN: search the current folder the way the
 * `search` tool does (tools/search.h), but print every matching line whole
 * and without a cap, so the output can be compared with ripgrep's. Counts
 * go to stderr. Built by bench/search.sh against build/libforgex.a; not
 * part of forgex.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "tools/search.h"
#include "ws/wspath.h"

int main(int argc, char **argv)
{
	struct wspath_root root = WSPATH_ROOT_INIT;
	struct search_opts o;
	struct search_stats st;
	struct buf out = BUF_INIT;
	int i = 1, ret;

	memset(&o, 0, sizeof(o));
	if (argc > 2 && !strcmp(argv[1], "-j")) {
		o.threads = (unsigned)atoi(argv[2]);
		i = 3;
	}
	if (i != argc - 1) {
		fprintf(stderr, "usage: fx-search [-j THREADS] PATTERN\n");
		return 2;
	}
	o.pattern = argv[i];
	o.max_results = SIZE_MAX;
	o.max_line = SIZE_MAX;
	if (wspath_root_open(&root, ".") < 0 || search_run(&out, &root, &o, &st) < 0) {
		fprintf(stderr, "fx-search: %s\n", err_last());
		return 2;
	}
	ret = fwrite(out.buf, 1, out.len, stdout) == out.len ? 0 : 2;
	fprintf(stderr, "fx-search: %zu files, %zu matching lines, %zu binary\n", st.files, st.hits,
		st.binary);
	buf_release(&out);
	wspath_root_release(&root);
	return ret ? ret : st.hits ? 0 : 1;
}
