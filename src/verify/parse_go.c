/*
 * go test, in both of its forms.
 *
 * "gojson": the events of `go test -json`, one JSON object a line
 * ({"Action":"fail","Package":"p","Test":"TestX"}). A test's own output
 * events make its excerpt. A package that fails without a failing test
 * (a panic in TestMain, a build failure reported as JSON) is an error
 * named after the package.
 *
 * "go": the plain text of `go test` and `go test -v`: "--- FAIL: TestX
 * (0.00s)" (indented for subtests), "ok  \tpkg\t0.1s", "FAIL\tpkg\t0.1s",
 * "FAIL\tpkg [build failed]". Without -v only failures are listed.
 *
 * In both, a test with subtests is not counted itself: its subtests are.
 */
#include <string.h>

#include "base/jsonx.h"
#include "verify/parse.h"

/* ---- go test -json ---- */

static int is_event_line(struct sv v)
{
	return sv_starts(v, "{") && sv_find(v, "\"Action\":") >= 0;
}

static void gojson_claim(struct vscan *s)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		if (is_event_line(vs_line(s, i)))
			vs_claim(s, i, i + 1);
}

struct gotest {
	char *pkg, *test;
	int result;		/* -1 none yet, else enum verify_outcome */
	int parent;
	struct buf out;
};

struct gostate {
	struct gotest *t;
	size_t nr, alloc;
	struct vmap index;	/* "pkg\ntest" -> t */
};

static size_t go_get(struct gostate *g, const char *pkg, const char *test)
{
	struct buf key = BUF_INIT;
	size_t h;

	buf_addf(&key, "%s\n%s", pkg, test);
	h = vmap_get(&g->index, key.buf, key.len);
	if (h == (size_t)-1) {
		ALLOC_GROW(g->t, g->nr + 1, g->alloc);
		h = g->nr++;
		g->t[h].pkg = xstrdup(pkg);
		g->t[h].test = xstrdup(test);
		g->t[h].result = -1;
		g->t[h].parent = 0;
		buf_init(&g->t[h].out, 0);
		vmap_put(&g->index, key.buf, key.len, h);
	}
	buf_release(&key);
	return h;
}

/* Output lines go's runner adds around a test's own output. */
static int runner_line(const char *s)
{
	while (*s == ' ')
		s++;
	return !strncmp(s, "=== RUN", 7) || !strncmp(s, "=== PAUSE", 9) ||
	       !strncmp(s, "=== CONT", 8) || !strncmp(s, "=== NAME", 8) ||
	       !strncmp(s, "--- PASS", 8) || !strncmp(s, "--- FAIL", 8) ||
	       !strncmp(s, "--- SKIP", 8);
}

static void go_mark_parents(struct gostate *g)
{
	size_t i;

	for (i = 0; i < g->nr; i++) {
		const char *name = g->t[i].test, *slash;
		struct buf key = BUF_INIT;

		if (!name[0])
			continue;
		/* each prefix up to a '/' names a parent in the same package */
		for (slash = strchr(name, '/'); slash; slash = strchr(slash + 1, '/')) {
			size_t h;

			buf_reset(&key);
			buf_addf(&key, "%s\n%.*s", g->t[i].pkg, (int)(slash - name), name);
			h = vmap_get(&g->index, key.buf, key.len);
			if (h != (size_t)-1)
				g->t[h].parent = 1;
		}
		buf_release(&key);
	}
}

static void gojson_parse(struct vscan *s)
{
	struct gostate g = { NULL, 0, 0, VMAP_INIT };
	struct vmap failing = VMAP_INIT;	/* packages with a failing test */
	size_t i;

	for (i = 0; i < s->nr; i++) {
		struct sv v;
		json_t *j = NULL;
		const char *action, *pkg, *test, *output;
		size_t h;

		if (s->owner[i] != s->self)
			continue;
		v = vs_line(s, i);
		j = json_loadb(v.p, v.n, JSON_REJECT_DUPLICATES, NULL);
		if (!j || !json_is_object(j)) {
			json_decref(j);
			continue;
		}
		action = jsonx_str(j, "Action");
		pkg = jsonx_str(j, "Package");
		test = jsonx_str(j, "Test");
		output = jsonx_str(j, "Output");
		if (!action) {
			json_decref(j);
			continue;
		}
		vs_recognised(s);
		h = go_get(&g, pkg ? pkg : "", test ? test : "");
		if (!strcmp(action, "pass"))
			g.t[h].result = VERIFY_PASS;
		else if (!strcmp(action, "fail"))
			g.t[h].result = VERIFY_FAIL;
		else if (!strcmp(action, "skip"))
			g.t[h].result = VERIFY_SKIP;
		else if (!strcmp(action, "output") && output && !runner_line(output) &&
			 g.t[h].out.len < VERIFY_EXCERPT_MAX * 2)
			buf_addstr(&g.t[h].out, output);
		json_decref(j);
	}
	go_mark_parents(&g);
	for (i = 0; i < g.nr; i++)
		if (g.t[i].test[0] && g.t[i].result == VERIFY_FAIL)
			vmap_put(&failing, g.t[i].pkg, strlen(g.t[i].pkg), 1);
	for (i = 0; i < g.nr; i++) {
		struct gotest *t = &g.t[i];
		size_t h;

		if (t->parent || t->result < 0)
			continue;
		if (!t->test[0]) {
			/* a package: an error only when it failed on its own */
			if (t->result != VERIFY_FAIL ||
			    vmap_get(&failing, t->pkg, strlen(t->pkg)) != (size_t)-1)
				continue;
			h = vs_test(s, t->pkg, strlen(t->pkg), VERIFY_ERROR);
		} else {
			h = vs_test(s, t->test, strlen(t->test), (enum verify_outcome)t->result);
		}
		if (t->result == VERIFY_FAIL)
			vs_excerpt_text(s, h, t->out.buf, t->out.len, 0);
	}
	for (i = 0; i < g.nr; i++) {
		free(g.t[i].pkg);
		free(g.t[i].test);
		buf_release(&g.t[i].out);
	}
	free(g.t);
	vmap_release(&g.index);
	vmap_release(&failing);
}

const struct verify_parser verify_parser_gojson = { "gojson", gojson_claim, gojson_parse };

/* ---- plain go test ---- */

/* "--- FAIL: TestX (0.00s)" -> outcome and name. */
static int result_line(struct sv v, enum verify_outcome *o, struct sv *name)
{
	long paren;

	sv_ltrim(&v);
	if (sv_eat(&v, "--- PASS: "))
		*o = VERIFY_PASS;
	else if (sv_eat(&v, "--- FAIL: "))
		*o = VERIFY_FAIL;
	else if (sv_eat(&v, "--- SKIP: "))
		*o = VERIFY_SKIP;
	else
		return 0;
	paren = sv_rfind(v, " (");
	if (paren > 0)
		v.n = (size_t)paren;
	sv_trim(&v);
	*name = v;
	return v.n > 0;
}

/* "=== RUN   TestX" -> name */
static int run_line(struct sv v, struct sv *name)
{
	if (!sv_eat(&v, "=== RUN"))
		return 0;
	sv_trim(&v);
	*name = v;
	return v.n > 0;
}

/* "FAIL\tpkg\t0.01s", "FAIL\tpkg [build failed]", "ok  \tpkg\t0.1s" */
static int package_line(struct sv v, int *failed, struct sv *pkg, int *build)
{
	*build = 0;
	if (sv_eat(&v, "FAIL\t"))
		*failed = 1;
	else if (sv_eat(&v, "ok  \t"))
		*failed = 0;
	else
		return 0;
	*pkg = v;
	{
		long tab = sv_find(v, "\t");
		long br = sv_find(v, " [");

		if (br >= 0 && (tab < 0 || br < tab)) {
			pkg->n = (size_t)br;
			*build = sv_find(v, "failed]") >= 0;
		} else if (tab >= 0) {
			pkg->n = (size_t)tab;
		}
	}
	return pkg->n > 0;
}

static int go_marker(struct sv v)
{
	struct sv name;
	enum verify_outcome o;
	int f, b;

	return run_line(v, &name) || result_line(v, &o, &name) || sv_starts(v, "=== ") ||
	       package_line(v, &f, &name, &b) || sv_eq(v, "PASS") || sv_eq(v, "FAIL");
}

/* -v: a test's output runs from "=== RUN" to the next marker. */
static void go_claim(struct vscan *s)
{
	size_t i, start = (size_t)-1;

	for (i = 0; i < s->nr; i++) {
		struct sv v = vs_line(s, i), name;

		if (start != (size_t)-1 && go_marker(v)) {
			vs_claim(s, start, i);
			start = (size_t)-1;
		}
		if (run_line(v, &name))
			start = i + 1;
	}
}

/* Index the "# pkg" headers of compiler messages by package. */
static void index_build_blocks(struct vscan *s, struct vmap *blocks)
{
	size_t i;

	for (i = 0; i < s->nr; i++) {
		struct sv v = vs_line(s, i), pkg;

		if (!vs_visible(s, i) || !sv_eat(&v, "# "))
			continue;
		pkg = sv_token(&v);
		if (pkg.n && vmap_get(blocks, pkg.p, pkg.n) == (size_t)-1)
			vmap_put(blocks, pkg.p, pkg.n, i);
	}
}

/* The compiler messages under the "# pkg" header at `i`: [i + 1, *end). */
static size_t build_block(struct vscan *s, size_t i, size_t *end)
{
	size_t j = i + 1;

	while (j < s->nr && s->lines[j].len && !sv_starts(vs_line(s, j), "FAIL") &&
	       !sv_starts(vs_line(s, j), "# ") && j - i < 200)
		j++;
	*end = j;
	return i + 1;
}

struct plain_test {
	size_t handle_line;	/* the result line */
	struct sv name;
	enum verify_outcome o;
};

static void go_parse(struct vscan *s)
{
	struct plain_test *t = NULL;
	size_t nr = 0, alloc = 0, i, failing_since_pkg = 0;
	struct vmap runs = VMAP_INIT, parents = VMAP_INIT, blocks = VMAP_INIT;
	int pkg_lines = 0;

	index_build_blocks(s, &blocks);

	for (i = 0; i < s->nr; i++) {
		struct sv v, name, pkg;
		enum verify_outcome o;
		int failed, build;

		if (!vs_visible(s, i))
			continue;
		v = vs_line(s, i);
		if (run_line(v, &name)) {
			vmap_put(&runs, name.p, name.n, i);
		} else if (result_line(v, &o, &name)) {
			ALLOC_GROW(t, nr + 1, alloc);
			t[nr].handle_line = i;
			t[nr].name = name;
			t[nr].o = o;
			nr++;
			if (o == VERIFY_FAIL)
				failing_since_pkg++;
		} else if (package_line(v, &failed, &pkg, &build)) {
			pkg_lines++;
			if (failed && (build || !failing_since_pkg)) {
				/* failed with no failing test: build error or panic */
				size_t h = vs_test(s, pkg.p, pkg.n, VERIFY_ERROR), end = 0;
				size_t hdr = vmap_get(&blocks, pkg.p, pkg.n);

				if (hdr != (size_t)-1) {
					size_t first = build_block(s, hdr, &end);

					vs_excerpt(s, h, first, end, 0);
				}
				else
					vs_excerpt(s, h, i > 20 ? i - 20 : 0, i, 0);
			}
			failing_since_pkg = 0;
		}
	}
	/* a test with subtests is a parent: not counted */
	for (i = 0; i < nr; i++) {
		size_t k;

		for (k = 0; k < t[i].name.n; k++)
			if (t[i].name.p[k] == '/')
				vmap_put(&parents, t[i].name.p, k, 1);
	}
	for (i = 0; i < nr; i++) {
		size_t h, run, k;

		if (vmap_get(&parents, t[i].name.p, t[i].name.n) != (size_t)-1)
			continue;
		h = vs_test(s, t[i].name.p, t[i].name.n, t[i].o);
		if (t[i].o != VERIFY_FAIL)
			continue;
		/* -v: output between "=== RUN" and the next marker */
		run = vmap_get(&runs, t[i].name.p, t[i].name.n);
		if (run != (size_t)-1) {
			for (k = run + 1; k < s->nr && !go_marker(vs_line(s, k)); k++)
				;
			vs_excerpt(s, h, run + 1, k, 0);
		}
		if (!vs_has_excerpt(s, h)) {
			/* plain: the lines indented under the result line */
			size_t ind = vl_indent(s->lines[t[i].handle_line]);

			for (k = t[i].handle_line + 1; k < s->nr; k++) {
				struct sv v = vs_line(s, k);
				enum verify_outcome o;
				struct sv n;

				if (vl_indent(s->lines[k]) <= ind || result_line(v, &o, &n))
					break;
			}
			vs_excerpt(s, h, t[i].handle_line + 1, k, 0);
		}
	}
	if (pkg_lines)
		vs_recognised(s);
	free(t);
	vmap_release(&runs);
	vmap_release(&parents);
	vmap_release(&blocks);
}

const struct verify_parser verify_parser_go = { "go", go_claim, go_parse };
