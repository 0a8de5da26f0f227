/*
 * The graph, the ranking and the map text, on indexes built in memory
 * where the right answer is known.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/tokens.h"
#include "context/rank.h"
#include "memindex.h"

static const char *path_at(const struct ctx_index *idx, const struct ctx_map *m, size_t i)
{
	return ctx_str(idx, idx->files[m->order[i]].path);
}

/* Where `path` is in the order shown (-1: not ranked). */
static long place(const struct ctx_index *idx, const struct ctx_map *m, const char *path)
{
	size_t i;

	for (i = 0; i < m->nranked; i++)
		if (!strcmp(path_at(idx, m, i), path))
			return (long)i;
	return -1;
}

/*
 * A small project: config.c defines parse_config, called from main.c
 * and cli.c; log.c defines log_msg, called from everywhere; the rest is
 * unrelated to configuration.
 */
static void project(struct ctx_index *idx)
{
	mi_init(idx);
	mi_file(idx, "src/cli.c", "function cli_main 5 int cli_main(int argc, char **argv)",
		"parse_config*2 log_msg cli_main argc argv");
	mi_file(idx, "src/config.c",
		"function parse_config 12 int parse_config(const char *path, struct config *out)|"
		"function config_free 40 void config_free(struct config *c)|"
		"struct config 3 struct config {",
		"log_msg*3 parse_config config_free config path out");
	mi_file(idx, "src/log.c", "function log_msg 7 void log_msg(const char *fmt, ...)",
		"log_msg fmt");
	mi_file(idx, "src/main.c", "function main 10 int main(int argc, char **argv)",
		"parse_config log_msg*2 render_page main argc argv config_free");
	mi_file(idx, "src/net.c", "function net_send 4 int net_send(int fd, const void *p)",
		"log_msg*5 net_send fd");
	mi_file(idx, "src/render.c", "function render_page 8 void render_page(struct page *p)",
		"log_msg*4 net_send*2 render_page");
	mi_file(idx, "src/util.c", "function util_trim 2 char *util_trim(char *s)",
		"log_msg util_trim");
}

static void test_rank_request_names_a_function(void **state)
{
	struct ctx_index idx;
	struct ctx_map m = CTX_MAP_INIT;
	struct ctx_focus f = { "parse_config fails on an empty file; make it return an error", NULL,
			       NULL };

	(void)state;
	project(&idx);
	ctx_map_build(&m, &idx, &f, 1024);
	/* the file defining it first, then its two callers, before the hub log.c */
	assert_string_equal(path_at(&idx, &m, 0), "src/config.c");
	assert_true(place(&idx, &m, "src/main.c") <= 2);
	assert_true(place(&idx, &m, "src/cli.c") <= 2);
	assert_true(place(&idx, &m, "src/log.c") > 2);
	/* the map shows the definition itself, under its file, first */
	assert_non_null(strstr(m.text.buf, "\nsrc/config.c:\nstruct config {\n\xe2\x8b\xae\n"
				"int parse_config(const char *path, struct config *out)\n"));
	assert_true(strstr(m.text.buf, "src/config.c:") < strstr(m.text.buf, "src/log.c:"));
	ctx_map_release(&m);

	/* without a request, plain PageRank: the hub everybody calls is first */
	ctx_map_build(&m, &idx, NULL, 1024);
	assert_string_equal(path_at(&idx, &m, 0), "src/log.c");
	ctx_map_release(&m);
	ctx_index_clear_data(&idx);
}

static void test_rank_path_mentioned(void **state)
{
	struct ctx_index idx;
	struct ctx_map m = CTX_MAP_INIT;
	struct ctx_focus f = { "The layout in render.c is off by one.", NULL, NULL };
	struct ctx_focus g = { "look at src/net.c please", NULL, NULL };

	(void)state;
	project(&idx);
	ctx_map_build(&m, &idx, &f, 1024);
	assert_string_equal(path_at(&idx, &m, 0), "src/render.c");
	ctx_map_build(&m, &idx, &g, 1024);
	assert_string_equal(path_at(&idx, &m, 0), "src/net.c");
	ctx_map_release(&m);
	ctx_index_clear_data(&idx);
}

static void test_rank_focus_reranks(void **state)
{
	struct ctx_index idx;
	struct ctx_map m = CTX_MAP_INIT;
	struct strvec focus = STRVEC_INIT, files = STRVEC_INIT;
	struct ctx_focus f = { "parse_config fails on an empty file", NULL, &focus };
	struct ctx_focus pf = { NULL, &files, NULL };

	(void)state;
	project(&idx);
	strvec_push(&focus, "net_send");
	ctx_map_build(&m, &idx, &f, 1024);
	/* a name in the focus outweighs one in the request */
	assert_string_equal(path_at(&idx, &m, 0), "src/net.c");
	assert_string_equal(path_at(&idx, &m, 1), "src/render.c");	/* its caller */
	strvec_clear(&focus);
	strvec_push(&focus, "src/util.c");
	ctx_map_build(&m, &idx, &f, 1024);
	assert_string_equal(path_at(&idx, &m, 0), "src/util.c");
	/* a folder spreads over its files; the plan's files come first */
	strvec_push(&files, "src/render.c");
	ctx_map_build(&m, &idx, &pf, 1024);
	assert_string_equal(path_at(&idx, &m, 0), "src/render.c");
	strvec_clear(&focus);
	strvec_clear(&files);
	ctx_map_release(&m);
	ctx_index_clear_data(&idx);
}

static void test_graph_specific_names_weigh_more(void **state)
{
	struct ctx_index idx;
	struct ctx_map m = CTX_MAP_INIT;
	char path[32], def[64];
	int i;

	(void)state;
	mi_init(&idx);
	/* a.c uses init (defined in 40 files) and frobnicate (defined in b.c) */
	mi_file(&idx, "a.c", "function a_main 1 int a_main(void)", "init*5 frobnicate");
	mi_file(&idx, "b.c", "function frobnicate 1 void frobnicate(void)", "");
	mi_file(&idx, "c.c", "function unused 1 void unused(void)", "");	/* no edge in */
	for (i = 0; i < 40; i++) {
		snprintf(path, sizeof(path), "m%02d.c", i);
		snprintf(def, sizeof(def), "function init 1 void init(void)");
		mi_file(&idx, path, def, "");
	}
	ctx_map_build(&m, &idx, NULL, 512);
	assert_int_equal(m.edges, 41);	/* one per (user, definer) pair */
	assert_string_equal(path_at(&idx, &m, 0), "b.c");
	/* what flowed in along the edges: b.c (index 1) against m00.c (3), over c.c (2) */
	assert_true(m.rank[1] - m.rank[2] > 100 * (m.rank[3] - m.rank[2]));
	assert_true(m.rank[3] > m.rank[2]);
	ctx_map_release(&m);
	ctx_index_clear_data(&idx);

	/* beyond CTX_DEFINERS_MAX definers a name makes no edge at all */
	mi_init(&idx);
	mi_file(&idx, "a.c", "", "main");
	for (i = 0; i < CTX_DEFINERS_MAX + 1; i++) {
		snprintf(path, sizeof(path), "m%03d.c", i);
		mi_file(&idx, path, "function main 1 int main(void)", "");
	}
	ctx_map_build(&m, &idx, NULL, 512);
	assert_int_equal(m.edges, 0);
	ctx_map_release(&m);
	ctx_index_clear_data(&idx);
}

static void test_graph_self_and_file_scope(void **state)
{
	struct ctx_index idx;
	struct ctx_map m = CTX_MAP_INIT;

	(void)state;
	mi_init(&idx);
	/* a.c calls its own helper and b.c's static helper of the same name: no edge */
	mi_file(&idx, "a.c", "function helper 1 static int helper(void)", "helper*3");
	mi_file(&idx, "b.c", "function helper 1 static int helper(void)|function api 5 int api(void)",
		"helper");
	idx.defs[0].flags = CTX_D_FILE_SCOPE;
	idx.defs[1].flags = CTX_D_FILE_SCOPE;
	ctx_map_build(&m, &idx, NULL, 512);
	assert_int_equal(m.edges, 0);
	ctx_map_release(&m);
	ctx_index_clear_data(&idx);
}

static void test_map_deterministic(void **state)
{
	struct ctx_index idx;
	struct ctx_map a = CTX_MAP_INIT, b = CTX_MAP_INIT;
	struct ctx_focus f = { "render_page and net_send", NULL, NULL };
	char *first;

	(void)state;
	project(&idx);
	ctx_map_build(&a, &idx, &f, 200);
	first = xstrdup(a.text.buf);
	ctx_map_build(&b, &idx, &f, 200);
	assert_string_equal(first, b.text.buf);
	ctx_map_build(&a, &idx, &f, 200);
	assert_string_equal(first, a.text.buf);
	free(first);
	ctx_map_release(&a);
	ctx_map_release(&b);
	ctx_index_clear_data(&idx);
}

/* A larger tree: 300 files, each with 12 definitions and references to others. */
static void big_project(struct ctx_index *idx)
{
	struct buf defs = BUF_INIT, refs = BUF_INIT;
	char path[32];
	int i, j;

	mi_init(idx);
	for (i = 0; i < 300; i++) {
		buf_reset(&defs);
		buf_reset(&refs);
		for (j = 0; j < 12; j++)
			buf_addf(&defs, "%sfunction fn_%d_%d %d int fn_%d_%d(struct thing *t, int n%d)",
				 j ? "|" : "", i, j, 1 + j * 7 + (j % 3), i, j, j);
		for (j = 0; j < 6; j++)
			buf_addf(&refs, "fn_%d_%d*%d ", (i * 7 + j * 13) % 300, (i + j) % 12, 1 + j % 3);
		snprintf(path, sizeof(path), "lib/mod%03d.c", i);
		mi_file(idx, path, defs.buf, refs.buf);
	}
	buf_release(&defs);
	buf_release(&refs);
}

static void test_map_fits_budget_to_the_token(void **state)
{
	static const size_t budgets[] = { 25, 40, 64, 100, 128, 200, 333, 512, 1000, 2048, 4096 };
	struct ctx_index idx;
	struct ctx_map m = CTX_MAP_INIT;
	struct ctx_focus f = { "fn_10_3 misbehaves", NULL, NULL };
	size_t i, prev_files = 0;

	(void)state;
	big_project(&idx);
	for (i = 0; i < ARRAY_SIZE(budgets); i++) {
		size_t shortest = SIZE_MAX, d;

		ctx_map_build(&m, &idx, &f, budgets[i]);
		assert_int_equal(m.tokens, tokens_estimate(m.text.len));
		assert_true(m.tokens <= budgets[i]);
		/*
		 * Filled to the token: the shortest definition line not shown of
		 * a file that is shown would have cost more than what is left.
		 */
		for (d = 0; d < m.nfiles; d++) {
			const struct ctx_file *cf = &idx.files[m.files[d].file];
			size_t k, s;

			for (k = cf->def0; k < cf->def0 + cf->ndefs; k++) {
				size_t x;
				int shown = 0;

				for (x = 0; x < m.files[d].ndefs; x++)
					shown |= m.files[d].defs[x] == k;
				if (shown)
					continue;
				s = strlen(ctx_str(&idx, idx.defs[k].text)) + 1;
				if (s < shortest)
					shortest = s;
			}
		}
		if (shortest != SIZE_MAX)
			assert_true(tokens_estimate(m.text.len + shortest) > budgets[i]);
		assert_true(m.nfiles >= prev_files);
		prev_files = m.nfiles;
		if (budgets[i] >= 64) {
			assert_true(m.nfiles > 0);
			assert_true(budgets[i] - m.tokens <= 20);
		}
	}
	/* below the heading's size: nothing */
	ctx_map_build(&m, &idx, &f, 10);
	assert_int_equal(m.text.len, 0);
	ctx_map_release(&m);
	ctx_index_clear_data(&idx);
}

static void test_map_format(void **state)
{
	struct ctx_index idx;
	struct ctx_map m = CTX_MAP_INIT;
	json_t *j;

	(void)state;
	mi_init(&idx);
	mi_file(&idx, "x.py", "class Shape 1 class Shape:|member area 2     def area(self):|"
		"member perimeter 9     def perimeter(self):", "");
	ctx_map_build(&m, &idx, NULL, 512);
	/* file order, "⋮" between lines that are not adjacent */
	assert_string_equal(m.text.buf + strcspn(m.text.buf, "\n") + 1,
			    "\nx.py:\nclass Shape:\n    def area(self):\n\xe2\x8b\xae\n"
			    "    def perimeter(self):\n");
	j = ctx_map_to_json(&m, &idx);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
		json_object_get(json_array_get(json_object_get(j, "files"), 0), "definitions"), 1),
		"name")), "area");
	json_decref(j);
	ctx_map_release(&m);
	ctx_index_clear_data(&idx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rank_request_names_a_function),
		cmocka_unit_test(test_rank_path_mentioned),
		cmocka_unit_test(test_rank_focus_reranks),
		cmocka_unit_test(test_graph_specific_names_weigh_more),
		cmocka_unit_test(test_graph_self_and_file_scope),
		cmocka_unit_test(test_map_deterministic),
		cmocka_unit_test(test_map_fits_budget_to_the_token),
		cmocka_unit_test(test_map_format),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
