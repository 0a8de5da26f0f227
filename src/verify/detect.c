/*
 * verify_detect(): how is this project tested? The first rule that
 * matches wins, in the order of the header; each says why it matched.
 */
#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/err.h"
#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/path.h"
#include "verify/parse.h"

#define FILE_MAX (4 * 1024 * 1024)	/* larger build files are not read */
#define WALK_DEPTH 6
#define WALK_ENTRIES 20000

void verify_command_release(struct verify_command *cmd)
{
	strvec_clear(&cmd->argv);
	strvec_clear(&cmd->build);
	free(cmd->kind);
	free(cmd->reason);
	free(cmd->fresh_note);
	*cmd = (struct verify_command)VERIFY_COMMAND_INIT;
}

static void set_cmd(struct verify_command *out, const char *kind, char *reason,
		    const char *const *argv)
{
	verify_command_release(out);
	strvec_pushv(&out->argv, argv);
	out->kind = xstrdup(kind);
	out->reason = reason;
}

/* Read `dir`/`name` into `out`; 0 when read, < 0 when missing or too big. */
static int read_in(struct buf *out, const char *dir, const char *name)
{
	struct buf p = BUF_INIT;
	int ret;

	path_join(&p, dir, name);
	ret = fsutil_is_dir(p.buf) ? FX_ENOTFOUND : fsutil_read_file(out, p.buf, FILE_MAX);
	buf_release(&p);
	return ret;
}

static int exists_in(const char *dir, const char *name)
{
	struct buf p = BUF_INIT;
	int ret;

	path_join(&p, dir, name);
	ret = fsutil_exists(p.buf);
	buf_release(&p);
	return ret;
}

/* ---- Makefiles ---- */

/*
 * Whether the makefile text has a rule for `target`: a line outside a
 * recipe, after joining "\" continuations, whose targets before ':' (not
 * ':=', '::=' or a target-specific variable) include it.
 */
static int make_has_target(const char *text, size_t len, const char *target)
{
	struct buf line = BUF_INIT;
	size_t i = 0;
	int found = 0, in_define = 0;

	while (i < len && !found) {
		size_t start = i, j;
		struct sv v, targets;
		long colon;

		/* a logical line: physical lines joined on trailing "\" */
		buf_reset(&line);
		for (;;) {
			const char *nl = memchr(text + i, '\n', len - i);
			size_t end = nl ? (size_t)(nl - text) : len;

			buf_add(&line, text + i, end - i);
			i = nl ? end + 1 : len;
			if (line.len && line.buf[line.len - 1] == '\\' && i < len) {
				buf_setlen(&line, line.len - 1);
				buf_addch(&line, ' ');
				continue;
			}
			break;
		}
		if (text[start] == '\t')
			continue;	/* a recipe line */
		v = sv_make(line.buf, line.len);
		/* comments end the line */
		{
			long hash = sv_find(v, "#");

			if (hash >= 0)
				v.n = (size_t)hash;
		}
		sv_trim(&v);
		if (in_define) {
			if (sv_starts(v, "endef"))
				in_define = 0;
			continue;
		}
		if (sv_starts(v, "define ") || sv_eq(v, "define")) {
			in_define = 1;
			continue;
		}
		colon = sv_find(v, ":");
		if (colon <= 0)
			continue;
		targets = sv_make(v.p, (size_t)colon);
		/* "A = b:c" is an assignment; "A := b" and "A ::= b" too */
		if (memchr(targets.p, '=', targets.n))
			continue;
		if ((size_t)colon + 1 < v.n && v.p[colon + 1] == '=')
			continue;
		if ((size_t)colon + 2 < v.n && v.p[colon + 1] == ':' && v.p[colon + 2] == '=')
			continue;
		/* "test: VAR = x" sets a variable for the target, no rule */
		{
			struct sv after = sv_make(v.p + colon + 1, v.n - (size_t)colon - 1);
			long eq = sv_find(after, "=");

			if (eq >= 0 && (sv_find(after, ";") < 0 || sv_find(after, ";") > eq))
				continue;
		}
		if (sv_starts(targets, "."))	/* .PHONY: test names no rule */
			continue;
		for (j = 0; j < targets.n;) {
			struct sv t;

			while (j < targets.n && (targets.p[j] == ' ' || targets.p[j] == '\t'))
				j++;
			t = sv_make(targets.p + j, 0);
			while (j < targets.n && targets.p[j] != ' ' && targets.p[j] != '\t')
				j++, t.n++;
			if (sv_eq(t, target)) {
				found = 1;
				break;
			}
		}
	}
	buf_release(&line);
	return found;
}

static int detect_make(struct verify_command *out, const char *ws)
{
	/* GNU make's own order */
	static const char *const names[] = { "GNUmakefile", "makefile", "Makefile" };
	static const char *const targets[] = { "test", "check" };
	size_t i, k;

	for (i = 0; i < ARRAY_SIZE(names); i++) {
		struct buf text = BUF_INIT;

		if (read_in(&text, ws, names[i]) < 0) {
			buf_release(&text);
			continue;
		}
		for (k = 0; k < ARRAY_SIZE(targets); k++) {
			if (make_has_target(text.buf, text.len, targets[k])) {
				const char *argv[] = { "make", targets[k], NULL };

				set_cmd(out, "make", xstrfmt("%s has a '%s' target", names[i],
							     targets[k]), argv);
				buf_release(&text);
				return 1;
			}
		}
		buf_release(&text);
		return 0;	/* make reads only the first one it finds */
	}
	return 0;
}

/* ---- package.json ---- */

static int detect_npm(struct verify_command *out, const char *ws, struct strvec *notes)
{
	struct buf text = BUF_INIT;
	json_t *j = NULL;
	const char *test;
	int ret = 0;

	if (read_in(&text, ws, "package.json") < 0)
		goto out;
	if (jsonx_parse(&j, text.buf, text.len, "package.json") < 0) {
		strvec_pushf(notes, "package.json is not valid JSON (%s)", err_last());
		goto out;
	}
	test = jsonx_str(json_object_get(j, "scripts"), "test");
	if (!test || !test[0]) {
		strvec_push(notes, "package.json has no scripts.test");
		goto out;
	}
	if (strstr(test, "no test specified")) {
		strvec_push(notes, "package.json's scripts.test is npm's placeholder");
		goto out;
	}
	{
		const char *argv[] = { "npm", "test", NULL };

		set_cmd(out, "npm", xstrfmt("package.json has scripts.test: %s", test), argv);
		ret = 1;
	}
out:
	json_decref(j);
	buf_release(&text);
	return ret;
}

/* ---- Python ---- */

/* Whether an INI-style text has the section "[name]". */
static int ini_has_section(const char *text, size_t len, const char *name)
{
	size_t i = 0;

	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - text) : len;
		struct sv v = sv_make(text + i, end - i);

		sv_trim(&v);
		/* TOML allows spaces inside the brackets and a comment after */
		if (sv_eat(&v, "[")) {
			long close = sv_find(v, "]");

			if (close > 0) {
				struct sv n = sv_make(v.p, (size_t)close), rest;

				rest = sv_make(v.p + close + 1, v.n - (size_t)close - 1);
				sv_trim(&n);
				sv_trim(&rest);
				if (sv_eq(n, name) && (!rest.n || rest.p[0] == '#') &&
				    !sv_starts(v, "["))
					return 1;
			}
		}
		i = nl ? end + 1 : len;
	}
	return 0;
}

static int detect_pytest(struct verify_command *out, const char *ws)
{
	static const struct {
		const char *file, *section, *why;
	} configs[] = {
		{ "pyproject.toml", "tool.pytest.ini_options", "pyproject.toml has [tool.pytest.ini_options]" },
		{ "pytest.ini", NULL, "pytest.ini exists" },
		{ "setup.cfg", "tool:pytest", "setup.cfg has [tool:pytest]" },
		{ "tox.ini", "pytest", "tox.ini has [pytest]" },
		{ "conftest.py", NULL, "conftest.py exists" },
	};
	const char *argv[] = { "python3", "-m", "pytest", NULL };
	size_t i;

	for (i = 0; i < ARRAY_SIZE(configs); i++) {
		struct buf text = BUF_INIT;
		int hit;

		if (read_in(&text, ws, configs[i].file) < 0) {
			buf_release(&text);
			continue;
		}
		hit = !configs[i].section ||
		      ini_has_section(text.buf, text.len, configs[i].section);
		buf_release(&text);
		if (hit) {
			set_cmd(out, "pytest", xstrdup(configs[i].why), argv);
			return 1;
		}
	}
	return 0;
}

static int is_test_py(const char *name, int *suffix_form)
{
	size_t n = strlen(name);

	if (n < 4 || strcmp(name + n - 3, ".py"))
		return 0;
	if (!strncmp(name, "test_", 5)) {
		*suffix_form = 0;
		return 1;
	}
	if (n > 8 && !strcmp(name + n - 8, "_test.py")) {
		*suffix_form = 1;
		return 1;
	}
	return 0;
}

static int skip_dir(const char *name)
{
	static const char *const skip[] = {
		"node_modules", "venv", "env", "site-packages", "__pycache__", "build", "dist",
		"target",
	};
	size_t i;

	if (name[0] == '.')
		return 1;	/* .git, .venv, .tox, .forgex, ... */
	for (i = 0; i < ARRAY_SIZE(skip); i++)
		if (!strcmp(name, skip[i]))
			return 1;
	return 0;
}

struct pyfind {
	char *dir;		/* relative folder of the first test file found ("" = top) */
	char *file;		/* its relative path */
	int suffix_form;	/* *_test.py */
	size_t entries;
};

/* Breadth-first: the shallowest test file wins. */
static void find_py_tests(struct pyfind *f, const char *ws)
{
	struct strvec queue = STRVEC_INIT;	/* relative folders */
	size_t head = 0;

	strvec_push(&queue, "");
	while (head < queue.nr && !f->file && f->entries < WALK_ENTRIES) {
		const char *rel = queue.v[head++];
		struct buf abs = BUF_INIT;
		DIR *d;
		struct dirent *de;
		size_t depth = 0, k;

		for (k = 0; rel[k]; k++)
			depth += rel[k] == '/';
		path_join(&abs, ws, rel[0] ? rel : ".");
		d = opendir(abs.buf);
		while (d && (de = readdir(d)) && f->entries < WALK_ENTRIES) {
			struct buf child = BUF_INIT;
			struct stat st;
			int suffix;

			f->entries++;
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			path_join(&child, abs.buf, de->d_name);
			if (lstat(child.buf, &st) < 0) {
				buf_release(&child);
				continue;
			}
			if (S_ISDIR(st.st_mode)) {
				if (!skip_dir(de->d_name) && depth + 1 < WALK_DEPTH) {
					if (rel[0])
						strvec_pushf(&queue, "%s/%s", rel, de->d_name);
					else
						strvec_push(&queue, de->d_name);
				}
			} else if (S_ISREG(st.st_mode) && is_test_py(de->d_name, &suffix) &&
				   (!f->file || strcmp(de->d_name, f->file) < 0)) {
				/* the first in name order, for a stable reason */
				free(f->file);
				f->file = rel[0] ? xstrfmt("%s/%s", rel, de->d_name)
						 : xstrdup(de->d_name);
				free(f->dir);
				f->dir = xstrdup(rel);
				f->suffix_form = suffix;
			}
			buf_release(&child);
		}
		if (d)
			closedir(d);
		buf_release(&abs);
	}
	strvec_clear(&queue);
}

/* Whether every folder from the top down to `rel` is a package. */
static int importable(const char *ws, const char *rel)
{
	struct buf part = BUF_INIT, p = BUF_INIT;
	const char *s = rel;
	int ok = 1;

	while (*s && ok) {
		const char *slash = strchr(s, '/');
		size_t n = slash ? (size_t)(slash - s) : strlen(s);

		if (part.len)
			buf_addch(&part, '/');
		buf_add(&part, s, n);
		buf_reset(&p);
		path_join(&p, part.buf, "__init__.py");
		ok = exists_in(ws, p.buf);
		s = slash ? slash + 1 : s + n;
	}
	buf_release(&part);
	buf_release(&p);
	return ok;
}

static int detect_unittest(struct verify_command *out, const char *ws)
{
	struct pyfind f = { NULL, NULL, 0, 0 };
	struct strvec argv = STRVEC_INIT;
	int ret = 0;

	find_py_tests(&f, ws);
	if (!f.file)
		goto out;
	strvec_pushv(&argv, (const char *[]){ "python3", "-m", "unittest", "discover", NULL });
	/* discover starts at the top and enters packages only */
	if (f.dir[0] && !importable(ws, f.dir)) {
		strvec_push(&argv, "-s");
		strvec_push(&argv, f.dir);
	}
	if (f.suffix_form) {
		strvec_push(&argv, "-p");
		strvec_push(&argv, "*_test.py");
	}
	verify_command_release(out);
	out->argv = argv;
	out->kind = xstrdup("unittest");
	out->reason = xstrfmt("found Python test file %s and no pytest configuration", f.file);
	ret = 1;
out:
	free(f.dir);
	free(f.file);
	return ret;
}

/* ---- Go, Cargo ---- */

static int detect_simple(struct verify_command *out, const char *ws, const char *file,
			 const char *kind, const char *const *argv)
{
	struct buf p = BUF_INIT;
	int ret = 0;

	path_join(&p, ws, file);
	if (fsutil_exists(p.buf) && !fsutil_is_dir(p.buf)) {
		set_cmd(out, kind, xstrfmt("%s exists", file), argv);
		ret = 1;
	}
	buf_release(&p);
	return ret;
}

/* ---- CMake, meson: a configured build folder ---- */

/* Top-level folders whose name starts with `prefix` (or any when NULL) holding `marker`. */
static char *find_build_dir(const char *ws, const char *prefix, const char *marker)
{
	DIR *d = opendir(ws);
	struct dirent *de;
	char *best = NULL;

	while (d && (de = readdir(d))) {
		struct buf p = BUF_INIT;

		if (de->d_name[0] == '.' ||
		    (prefix && strncmp(de->d_name, prefix, strlen(prefix))))
			continue;
		path_join(&p, ws, de->d_name);
		buf_addch(&p, '/');
		buf_addstr(&p, marker);
		/* the shortest name, then name order: "build" before "build-asan" */
		if (fsutil_exists(p.buf) &&
		    (!best || strlen(de->d_name) < strlen(best) ||
		     (strlen(de->d_name) == strlen(best) && strcmp(de->d_name, best) < 0))) {
			free(best);
			best = xstrdup(de->d_name);
		}
		buf_release(&p);
	}
	if (d)
		closedir(d);
	return best;
}

static int detect_ctest(struct verify_command *out, const char *ws, struct strvec *notes)
{
	char *dir;

	if (!exists_in(ws, "CMakeLists.txt"))
		return 0;
	dir = find_build_dir(ws, "build", "CTestTestfile.cmake");
	if (!dir) {
		strvec_push(notes, "CMakeLists.txt exists but no build*/ folder holds "
			    "CTestTestfile.cmake (configure first: cmake -B build, with "
			    "enable_testing())");
		return 0;
	}
	{
		const char *argv[] = { "ctest", "--test-dir", dir, "--output-on-failure", NULL };

		set_cmd(out, "ctest", xstrfmt("CMakeLists.txt with tests configured in %s/", dir),
			argv);
	}
	free(dir);
	return 1;
}

static int detect_meson(struct verify_command *out, const char *ws, struct strvec *notes)
{
	char *dir;

	if (!exists_in(ws, "meson.build"))
		return 0;
	dir = find_build_dir(ws, NULL, "meson-private");
	if (!dir) {
		strvec_push(notes, "meson.build exists but no folder is configured "
			    "(meson setup build)");
		return 0;
	}
	{
		const char *argv[] = { "meson", "test", "-C", dir, NULL };

		set_cmd(out, "meson", xstrfmt("meson.build with a build folder configured in %s/",
					     dir), argv);
	}
	free(dir);
	return 1;
}

static int name_is(const char *prog, const char *const *names)
{
	for (; *names; names++) {
		size_t n = strlen(*names);

		/* "python3.11", "pytest-3": a version after the name */
		if (!strncmp(prog, *names, n) &&
		    (!prog[n] || prog[n] == '.' || prog[n] == '-' || isdigit((unsigned char)prog[n])))
			return 1;
	}
	return 0;
}

/* `ctest ... --test-dir DIR`: DIR, else NULL. */
static const char *ctest_dir(const struct strvec *argv)
{
	size_t i;

	for (i = 1; i < argv->nr; i++) {
		if (!strcmp(argv->v[i], "--test-dir") && i + 1 < argv->nr)
			return argv->v[i + 1];
		if (!strncmp(argv->v[i], "--test-dir=", 11))
			return argv->v[i] + 11;
	}
	return NULL;
}

/*
 * How the results are kept fresh (see struct verify_command): runners
 * that build what they test, a build forgex runs first for ctest, and for
 * everything else a note that it could not be ensured.
 */
static void set_freshness(struct verify_command *c)
{
	static const char *const python[] = { "python", "pytest", "py.test", NULL };
	static const char *const builds[] = {
		"go", "cargo", "make", "gmake", "meson", "npm", "npx", "node", "yarn", "pnpm",
		"jest", "vitest", "mocha", "deno", "bun", NULL,
	};
	const char *prog = c->argv.nr ? c->argv.v[0] : "", *slash = strrchr(prog, '/');
	const char *dir = NULL;
	size_t i;

	if (slash)
		prog = slash + 1;
	c->fresh = 1;
	if (!strcmp(c->kind, "ctest") || !strcmp(prog, "ctest")) {
		dir = ctest_dir(&c->argv);
		if (dir) {
			strvec_push(&c->build, "cmake");
			strvec_push(&c->build, "--build");
			strvec_push(&c->build, dir);
			return;
		}
		c->fresh = 0;
		c->fresh_note = xstrdup("ctest without --test-dir: forgex does not know which "
					"build folder to rebuild, so the tests may run stale "
					"binaries");
		return;
	}
	if (name_is(prog, python) || name_is(prog, builds)) {
		for (i = 1; i < c->argv.nr; i++)
			if (!strcmp(prog, "meson") && !strcmp(c->argv.v[i], "--no-rebuild"))
				break;
		if (i == c->argv.nr)
			return;
	}
	c->fresh = 0;
	c->fresh_note = xstrfmt("forgex does not know how '%s' builds what it tests: the "
				"results may come from stale build products", prog);
}

int verify_detect(struct verify_command *out, const char *workspace,
		  const struct strvec *test_command)
{
	static const char *const go_argv[] = { "go", "test", "-json", "./...", NULL };
	static const char *const cargo_argv[] = { "cargo", "test", NULL };
	struct verify_command c = VERIFY_COMMAND_INIT;
	struct strvec notes = STRVEC_INIT;
	int ret = 0;

	if (test_command && test_command->nr) {
		strvec_pushv(&c.argv, test_command->v);
		c.kind = xstrdup("configured");
		c.reason = xstrdup("[pipeline] test_command is set");
		c.configured = 1;
		goto found;
	}
	if (!workspace || !fsutil_is_dir(workspace)) {
		ret = err_set(FX_ENOTFOUND, "cannot look for tests in '%s': not a folder",
			      workspace ? workspace : "(none)");
		goto out;
	}
	if (detect_make(&c, workspace) || detect_npm(&c, workspace, &notes) ||
	    detect_pytest(&c, workspace) || detect_unittest(&c, workspace) ||
	    detect_simple(&c, workspace, "go.mod", "go", go_argv) ||
	    detect_simple(&c, workspace, "Cargo.toml", "cargo", cargo_argv) ||
	    detect_ctest(&c, workspace, &notes) || detect_meson(&c, workspace, &notes))
		goto found;
	{
		struct buf msg = BUF_INIT;
		size_t i;

		buf_addf(&msg, "no test command found in %s: looked for a Makefile with a "
			 "'test' or 'check' target, package.json scripts.test, pytest "
			 "configuration, Python test files, go.mod, Cargo.toml, a configured "
			 "CMake or meson build folder; set [pipeline] test_command to choose one",
			 workspace);
		for (i = 0; i < notes.nr; i++)
			buf_addf(&msg, "; %s", notes.v[i]);
		ret = err_set(FX_ENOTFOUND, "%s", msg.buf);
		buf_release(&msg);
		goto out;
	}
found:
	set_freshness(&c);
	verify_command_release(out);
	*out = c;
	c = (struct verify_command)VERIFY_COMMAND_INIT;
out:
	verify_command_release(&c);
	strvec_clear(&notes);
	return ret;
}
