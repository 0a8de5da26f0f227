/*
 * The symbol index: real ctags through the executor, the cache and its
 * keys, hostile cache files, git checkouts, and every refreshed map
 * compared with a cold build of the same tree.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "context/rank.h"
#include "context/tokenize.h"
#include "helpers/testutil.h"
#include "sandbox/executor.h"

static char *ws;
static struct config cfg;
static struct executor ex;

static int setup(void **state)
{
	(void)state;
	ws = tu_mkdtemp();
	config_init(&cfg);
	free(cfg.sandbox.backend);
	cfg.sandbox.backend = xstrdup("none");
	if (executor_init(&ex, &cfg, ws) < 0)
		fail_msg("executor_init: %s", err_last());
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	executor_release(&ex);
	config_release(&cfg);
	tu_rmtree(ws);
	ws = NULL;
	return 0;
}

static void sh(const char *script)
{
	struct tu_result r;

	tu_run(&r, (const char *const[]){ "sh", "-c", script, NULL }, ws, NULL, NULL);
	if (r.status != 0)
		fail_msg("'%s' failed: %s", script, r.err.buf);
	tu_result_release(&r);
}

static void write_project(void)
{
	tu_write(ws, "src/config.c",
		 "#include \"log.h\"\n"
		 "struct config { int verbose; };\n"
		 "\n"
		 "int parse_config(const char *path, struct config *out)\n"
		 "{\n"
		 "\tlog_msg(\"parsing %s\", path);\n"
		 "\treturn 0;\n"
		 "}\n"
		 "static int helper(void) { return 1; }\n");
	tu_write(ws, "src/log.c", "void log_msg(const char *fmt, ...)\n{\n}\n");
	tu_write(ws, "src/main.c",
		 "int main(int argc, char **argv)\n{\n\tparse_config(argv[1], 0);\n"
		 "\tlog_msg(\"x\");\n\treturn 0;\n}\n");
	tu_write(ws, "tools/report.py",
		 "import os\n\nclass Report:\n    def render(self, rows):\n        return rows\n\n"
		 "def main():\n    Report().render([])\n");
	tu_write(ws, "README.md", "# demo\n\nSee parse_config.\n");
}

/* The map of the tree from an index made now, with or without the cache. */
static char *map_of(const char *request, size_t tokens, int cold, struct ctx_index_stats *st)
{
	struct ctx_index idx;
	struct ctx_map m = CTX_MAP_INIT;
	struct ctx_focus f = { request, NULL, NULL };
	char *text;

	if (ctx_index_init(&idx, ws, &ex) < 0)
		fail_msg("init: %s", err_last());
	if (cold)
		idx.no_save = 1, idx.loaded = 1, buf_addch(&idx.arena, '\0');
	assert_int_equal(ctx_index_update(&idx), 0);
	if (st) {
		*st = idx.stats;
		st->ctags_error = NULL;
	}
	if (idx.stats.ctags_error)
		fail_msg("ctags: %s", idx.stats.ctags_error);
	ctx_map_build(&m, &idx, &f, tokens);
	text = buf_detach(&m.text, NULL);
	ctx_map_release(&m);
	ctx_index_release(&idx);
	return text;
}

static void assert_same_as_cold(const char *request, struct ctx_index_stats *st)
{
	struct ctx_index_stats cst;
	char *warm = map_of(request, 1024, 0, st), *cold = map_of(request, 1024, 1, &cst);

	assert_string_equal(warm, cold);
	/* the counts too: what a change left behind in the arrays is not counted */
	if (st) {
		assert_int_equal(st->defs, cst.defs);
		assert_int_equal(st->refs, cst.refs);
	}
	free(warm);
	free(cold);
}

static void test_index_definitions_and_references(void **state)
{
	struct ctx_index idx;
	long f, sym;
	size_t i;
	int seen_parse = 0, seen_helper = 0;

	(void)state;
	write_project();
	assert_int_equal(ctx_index_init(&idx, ws, &ex), 0);
	assert_int_equal(ctx_index_update(&idx), 0);
	assert_null(idx.stats.ctags_error);
	assert_int_equal(idx.stats.files, 5);
	assert_int_equal(idx.stats.indexed, 5);
	assert_true(idx.stats.saved);
	f = ctx_index_find_file(&idx, "src/config.c");
	assert_true(f >= 0);
	for (i = idx.files[f].def0; i < idx.files[f].def0 + idx.files[f].ndefs; i++) {
		const struct ctx_def *d = &idx.defs[i];
		const char *name = ctx_str(&idx, idx.syms[d->sym]);

		if (!strcmp(name, "parse_config")) {
			seen_parse = 1;
			assert_int_equal(d->line, 4);
			assert_string_equal(ctx_str(&idx, d->kind), "function");
			assert_string_equal(ctx_str(&idx, d->text),
					    "int parse_config(const char *path, struct config *out)");
			assert_false(d->flags & CTX_D_FILE_SCOPE);
		}
		if (!strcmp(name, "helper")) {
			seen_helper = 1;
			assert_true(d->flags & CTX_D_FILE_SCOPE);	/* static */
		}
	}
	assert_true(seen_parse && seen_helper);
	/* main.c refers to parse_config once and log_msg once */
	f = ctx_index_find_file(&idx, "src/main.c");
	sym = ctx_index_find_sym(&idx, "parse_config", 12);
	assert_true(sym >= 0);
	for (i = idx.files[f].ref0; i < idx.files[f].ref0 + idx.files[f].nrefs; i++)
		if (idx.refs[i].sym == (uint32_t)sym)
			break;
	assert_true(i < idx.files[f].ref0 + idx.files[f].nrefs);
	assert_int_equal(idx.refs[i].count, 1);
	/* Python through the same ctags run */
	f = ctx_index_find_file(&idx, "tools/report.py");
	assert_true(idx.files[f].ndefs >= 3);
	ctx_index_release(&idx);
}

static void test_index_same_files_as_search(void **state)
{
	struct ctx_index idx;

	(void)state;
	write_project();
	sh("git init -q . && printf 'build/\\n*.log\\n!keep.log\\n' > .gitignore && "
	   "mkdir -p build sub .hidden && echo 'int built(void){return 0;}' > build/x.c && "
	   "echo 'int a_log;' > x.log && echo 'int kept_log;' > keep.log && "
	   "echo 'int hidden_fn(void){return 0;}' > .hidden/h.c && "
	   "echo '*.c' > sub/.gitignore && echo 'int sub_c;' > sub/s.c && echo 'x' > sub/s.h && "
	   "printf 'int bin(void);\\0\\n' > binary.c && ln -s src/log.c link.c && "
	   "mkfifo fifo.c && mkdir -p .forgex && echo 'int mine;' > .forgex/own.c && "
	   "echo 'excluded_dir/' >> .git/info/exclude && mkdir excluded_dir && "
	   "echo 'int ex;' > excluded_dir/e.c");
	assert_int_equal(ctx_index_init(&idx, ws, &ex), 0);
	assert_int_equal(ctx_index_update(&idx), 0);
	assert_true(ctx_index_find_file(&idx, "keep.log") >= 0);
	assert_true(ctx_index_find_file(&idx, ".hidden/h.c") >= 0);
	assert_true(ctx_index_find_file(&idx, "sub/s.h") >= 0);
	assert_true(ctx_index_find_file(&idx, ".gitignore") >= 0);
	assert_int_equal(ctx_index_find_file(&idx, "x.log"), -1);
	assert_int_equal(ctx_index_find_file(&idx, "build/x.c"), -1);
	assert_int_equal(ctx_index_find_file(&idx, "sub/s.c"), -1);
	assert_int_equal(ctx_index_find_file(&idx, "link.c"), -1);
	assert_int_equal(ctx_index_find_file(&idx, "fifo.c"), -1);
	assert_int_equal(ctx_index_find_file(&idx, ".forgex/own.c"), -1);
	assert_int_equal(ctx_index_find_file(&idx, "excluded_dir/e.c"), -1);
	assert_int_equal(ctx_index_find_file(&idx, ".git/config"), -1);
	/* binary: kept for its key, never shown */
	assert_true(idx.files[ctx_index_find_file(&idx, "binary.c")].flags & CTX_F_SKIP);
	ctx_index_release(&idx);
}

static int defined(struct ctx_index *idx, const char *name)
{
	long sym = ctx_index_find_sym(idx, name, strlen(name));
	size_t i;

	for (i = 0; sym >= 0 && i < idx->ndefs; i++)
		if (idx->defs[i].sym == (uint32_t)sym)
			return 1;
	return 0;
}

static void test_index_ignores_workspace_ctags_options(void **state)
{
	struct ctx_index idx;
	long f;

	(void)state;
	write_project();
	/* a project option file and a HOME one that would hide or fake tags */
	tu_write(ws, ".ctags.d/evil.ctags", "--exclude=*.c\n--regex-C=/^(int)/EVILTAG/f/\n");
	tu_write(ws, "ctags.d/evil.ctags", "--exclude=*.c\n");
	tu_write(ws, "home/.ctags.d/evil.ctags", "--exclude=*.c\n");
	/* file names that look like options stay file names */
	tu_write(ws, "--exclude=*.c", "int opt_named(void) { return 0; }\n");
	tu_write(ws, "-Lx.c", "int dash_named(void) { return 0; }\n");
	tu_write(ws, "new\nline.c", "int newline_named(void) { return 0; }\n");
	setenv("HOME", ws, 1);
	assert_int_equal(ctx_index_init(&idx, ws, &ex), 0);
	assert_int_equal(ctx_index_update(&idx), 0);
	unsetenv("HOME");
	assert_null(idx.stats.ctags_error);
	f = ctx_index_find_file(&idx, "src/config.c");
	assert_true(idx.files[f].ndefs >= 3);
	assert_false(defined(&idx, "EVILTAG"));
	f = ctx_index_find_file(&idx, "-Lx.c");
	assert_true(f >= 0);
	assert_int_equal(idx.files[f].ndefs, 1);
	assert_string_equal(ctx_str(&idx, idx.syms[idx.defs[idx.files[f].def0].sym]), "dash_named");
	assert_true(defined(&idx, "newline_named"));
	assert_true(defined(&idx, "opt_named"));
	assert_int_equal(idx.stats.ctags_runs, 1);
	ctx_index_release(&idx);
}

static void test_index_cache_keys(void **state)
{
	struct ctx_index_stats st;
	struct timespec ts[2];
	char *before, *after;

	(void)state;
	write_project();
	before = map_of("parse_config", 1024, 0, &st);
	assert_int_equal(st.indexed, 5);
	/* nothing changed: every file from the cache, ctags not run, nothing written */
	after = map_of("parse_config", 1024, 0, &st);
	assert_string_equal(before, after);
	free(after);
	assert_int_equal(st.cache_hits, 5);
	assert_int_equal(st.indexed, 0);
	assert_int_equal(st.ctags_runs, 0);
	assert_false(st.saved);
	assert_true(st.cache_loaded);

	/* every mtime changed, no content: hashed, not indexed again */
	ts[0].tv_sec = ts[1].tv_sec = 1000000000;
	ts[0].tv_nsec = ts[1].tv_nsec = 0;
	sh("touch -d '2001-01-01 00:00:00' src/*.c tools/report.py README.md");
	after = map_of("parse_config", 1024, 0, &st);
	assert_string_equal(before, after);
	free(after);
	assert_int_equal(st.same_content, 5);
	assert_int_equal(st.indexed, 0);
	assert_int_equal(st.ctags_runs, 0);
	assert_true(st.saved);

	/* one file changed: that one alone */
	tu_write(ws, "src/log.c", "void log_msg(const char *fmt, ...)\n{\n}\nint log_level(void);\n");
	assert_same_as_cold("parse_config", &st);
	assert_int_equal(st.indexed, 1);
	assert_int_equal(st.cache_hits, 4);
	assert_int_equal(st.ctags_runs, 1);
	/* a file removed, one added */
	sh("rm README.md && echo 'int fresh(void) { return parse_config(0, 0); }' > src/new.c");
	assert_same_as_cold("parse_config", &st);
	assert_int_equal(st.files, 5);
	assert_int_equal(st.indexed, 1);
	/* same size, same mtime, new inode (an editor's atomic save): read again */
	sh("cp -p src/main.c m.tmp && sed -i 's/argv\\[1\\]/argv[2]/' m.tmp && "
	   "touch -r src/main.c m.tmp && mv m.tmp src/main.c");
	assert_same_as_cold("parse_config", &st);
	assert_int_equal(st.indexed, 1);
	free(before);
	(void)ts;
}

static void test_index_git_checkout(void **state)
{
	struct ctx_index_stats st;
	char *on_main, *again;

	(void)state;
	write_project();
	sh("git init -q -b main . && git add -A && git -c user.name=t -c user.email=t@t "
	   "commit -qm one && git checkout -q -b other && "
	   "printf 'int parse_config(const char *p, void *o) { return -1; }\\n"
	   "int parse_strict(void);\\n' > src/config.c && "
	   "echo 'int extra(void){return parse_strict();}' > src/extra.c && git add -A && "
	   "git -c user.name=t -c user.email=t@t commit -qm two && git checkout -q main");
	on_main = map_of("parse_config", 1024, 0, &st);
	sh("git checkout -q other");
	assert_same_as_cold("parse_config parse_strict", &st);
	assert_int_equal(st.indexed, 2);		/* config.c and extra.c */
	sh("git checkout -q main");
	again = map_of("parse_config", 1024, 0, &st);
	assert_string_equal(on_main, again);
	assert_same_as_cold("parse_config", NULL);
	free(again);
	/* a checkout that rewrites every file: only content changes count */
	sh("sleep 0.01; git ls-files -z | xargs -0 touch && git checkout -q other && "
	   "git checkout -q main && git ls-files -z | xargs -0 touch");
	again = map_of("parse_config", 1024, 0, &st);
	assert_string_equal(on_main, again);
	assert_int_equal(st.indexed, 0);
	assert_int_equal(st.ctags_runs, 0);
	free(again);
	free(on_main);
}

/* The cache file's bytes, and writing them back. */
static struct buf cache_bytes(void)
{
	struct buf b = BUF_INIT;
	char *p = xstrfmt("%s/.forgex/map/index", ws);

	if (fsutil_read_file(&b, p, 0) < 0)
		fail_msg("no cache: %s", err_last());
	free(p);
	return b;
}

static void put_cache(const void *data, size_t len)
{
	char *p = xstrfmt("%s/.forgex/map/index", ws);

	unlink(p);
	if (fsutil_write_atomic(p, data, len, 0644) < 0)
		fail_msg("%s", err_last());
	free(p);
}

/* Re-sign an image so that the structural checks, not the checksum, are what refuses it. */
static void resign(struct buf *b)
{
	ctx_cache_checksum((unsigned char *)b->buf, b->len);
}

static void put32_at(struct buf *b, size_t off, uint32_t v)
{
	int i;

	for (i = 0; i < 4; i++)
		b->buf[off + i] = (char)(v >> (8 * i));
}

static void test_cache_parse_rejects(void **state)
{
	struct ctx_index idx;
	struct buf good, bad = BUF_INIT;
	size_t alen, nsyms, files_at, defs_at, i;

	(void)state;
	write_project();
	free(map_of(NULL, 512, 0, NULL));
	good = cache_bytes();
	memset(&idx, 0, sizeof(idx));
	assert_int_equal(ctx_cache_parse(&idx, (unsigned char *)good.buf, good.len), 0);
	assert_int_equal(idx.nfiles, 5);
	ctx_index_clear_data(&idx);

	/* every prefix is refused (sizes and counts disagree), none crashes */
	for (i = 0; i < good.len; i += 1 + i / 16) {
		assert_int_equal(ctx_cache_parse(&idx, (unsigned char *)good.buf, i), FX_EPARSE);
		assert_null(idx.files);
	}
	/* a flipped byte anywhere: the checksum */
	buf_reset(&bad);
	buf_addbuf(&bad, &good);
	bad.buf[good.len / 2] ^= 0x40;
	assert_int_equal(ctx_cache_parse(&idx, (unsigned char *)bad.buf, bad.len), FX_EPARSE);
	assert_non_null(strstr(err_last(), "checksum"));

	/* structural lies with a valid checksum */
	alen = (size_t)good.buf[24] | (size_t)(unsigned char)good.buf[25] << 8 |
	       (size_t)(unsigned char)good.buf[26] << 16;
	alen = 0;
	for (i = 0; i < 4; i++)
		alen |= (size_t)(unsigned char)good.buf[24 + i] << (8 * i);
	nsyms = 0;
	for (i = 0; i < 4; i++)
		nsyms |= (size_t)(unsigned char)good.buf[32 + i] << (8 * i);
	files_at = 64 + alen + 4 * nsyms;
	defs_at = files_at + 64 * 5;

	buf_reset(&bad);
	buf_addbuf(&bad, &good);
	put32_at(&bad, defs_at, (uint32_t)nsyms);	/* first definition's symbol */
	resign(&bad);
	assert_int_equal(ctx_cache_parse(&idx, (unsigned char *)bad.buf, bad.len), FX_EPARSE);
	assert_non_null(strstr(err_last(), "definition 0 out of range"));

	buf_reset(&bad);
	buf_addbuf(&bad, &good);
	put32_at(&bad, files_at + 8, 0xfffffff0u);	/* file 0's def0: a range past the end */
	resign(&bad);
	assert_int_equal(ctx_cache_parse(&idx, (unsigned char *)bad.buf, bad.len), FX_EPARSE);
	assert_non_null(strstr(err_last(), "ranges out of bounds"));

	buf_reset(&bad);
	buf_addbuf(&bad, &good);
	put32_at(&bad, files_at, (uint32_t)alen + 7);	/* file 0's path outside the strings */
	resign(&bad);
	assert_int_equal(ctx_cache_parse(&idx, (unsigned char *)bad.buf, bad.len), FX_EPARSE);
	assert_non_null(strstr(err_last(), "bad path"));

	buf_reset(&bad);
	buf_addbuf(&bad, &good);
	put32_at(&bad, files_at, 0);	/* file 0's path "": not a clean path */
	resign(&bad);
	assert_int_equal(ctx_cache_parse(&idx, (unsigned char *)bad.buf, bad.len), FX_EPARSE);

	buf_reset(&bad);
	buf_addbuf(&bad, &good);
	put32_at(&bad, files_at + 64, *(uint32_t *)(void *)(good.buf + files_at));	/* two equal paths */
	resign(&bad);
	assert_int_equal(ctx_cache_parse(&idx, (unsigned char *)bad.buf, bad.len), FX_EPARSE);
	assert_non_null(strstr(err_last(), "sorted"));

	buf_reset(&bad);
	buf_addbuf(&bad, &good);
	put32_at(&bad, files_at + 60, 1);	/* the record's padding (found by the fuzzer) */
	resign(&bad);
	assert_int_equal(ctx_cache_parse(&idx, (unsigned char *)bad.buf, bad.len), FX_EPARSE);
	assert_non_null(strstr(err_last(), "padding"));

	buf_reset(&bad);
	buf_addbuf(&bad, &good);
	bad.buf[40] = (char)0xff;	/* nfiles far beyond the file */
	bad.buf[43] = 0x7f;
	assert_int_equal(ctx_cache_parse(&idx, (unsigned char *)bad.buf, bad.len), FX_EPARSE);
	assert_null(idx.files);
	buf_release(&bad);
	buf_release(&good);
}

static void test_cache_hostile_files(void **state)
{
	struct ctx_index_stats st;
	struct buf good;
	char *cold, *warm, *p, *p2, *target, *outside;

	(void)state;
	write_project();
	cold = map_of("parse_config", 1024, 1, NULL);
	free(map_of("parse_config", 1024, 0, NULL));
	good = cache_bytes();

	/* garbage, a cut file, a truncated header: rebuilt, same map */
	put_cache("garbage", 7);
	warm = map_of("parse_config", 1024, 0, &st);
	assert_string_equal(cold, warm);
	assert_true(st.cache_rejected);
	assert_int_equal(st.indexed, 5);
	assert_true(st.saved);
	free(warm);
	put_cache(good.buf, good.len - 9);
	warm = map_of("parse_config", 1024, 0, &st);
	assert_string_equal(cold, warm);
	assert_true(st.cache_rejected);
	free(warm);

	/* a link to a file outside: refused, not read, not overwritten */
	p = xstrfmt("%s/.forgex/map/index", ws);
	outside = tu_mkdtemp();
	target = xstrfmt("%s/outside", outside);
	tu_write(outside, "outside", "keep me");
	unlink(p);
	assert_int_equal(symlink(target, p), 0);
	warm = map_of("parse_config", 1024, 0, &st);
	assert_string_equal(cold, warm);
	assert_true(st.cache_rejected);
	free(warm);
	warm = tu_read(outside, "outside");
	assert_string_equal(warm, "keep me");
	tu_rmtree(outside);
	free(warm);
	unlink(p);

	/* a FIFO does not block the update */
	assert_int_equal(mkfifo(p, 0644), 0);
	warm = map_of("parse_config", 1024, 0, &st);
	assert_string_equal(cold, warm);
	assert_true(st.cache_rejected);
	free(warm);
	unlink(p);

	/* .forgex/map itself a link to elsewhere: not followed, nothing written there */
	outside = tu_mkdtemp();
	p2 = xstrfmt("rm -rf .forgex/map && ln -s '%s' .forgex/map", outside);
	sh(p2);
	free(p2);
	warm = map_of("parse_config", 1024, 0, &st);
	assert_string_equal(cold, warm);
	assert_false(st.saved);
	free(warm);
	p2 = xstrfmt("test -z \"$(ls -A '%s')\" && rm .forgex/map", outside);
	sh(p2);
	free(p2);
	tu_rmtree(outside);

	/* stale temporary files of a dead run are removed by the next save */
	sh("mkdir -p .forgex/map && : > .forgex/map/index.tmp.999999.0.0");
	tu_write(ws, "src/log.c", "void log_msg(const char *fmt, ...) { }\n");
	free(map_of("parse_config", 1024, 0, &st));
	assert_true(st.saved);
	sh("test ! -e .forgex/map/index.tmp.999999.0.0");
	free(p);
	free(target);
	free(cold);
	buf_release(&good);
}

/* Many files, so that an update takes long enough to be killed in the middle. */
static void write_many(int n, const char *tag)
{
	struct buf b = BUF_INIT;
	char rel[64];
	int i;

	for (i = 0; i < n; i++) {
		buf_reset(&b);
		buf_addf(&b, "int fn_%s_%d(int x)\n{\n\treturn fn_%s_%d(x) + %d;\n}\n", tag, i, tag,
			 (i * 7 + 1) % n, i);
		snprintf(rel, sizeof(rel), "gen/d%02d/f%04d.c", i % 50, i);
		tu_write(ws, rel, b.buf);
	}
	buf_release(&b);
}

static void test_index_killed_mid_update(void **state)
{
	struct ctx_index_stats st;
	char *cold, *warm;
	int killed = 0, attempt;

	(void)state;
	write_project();
	write_many(1500, "a");
	free(map_of("fn_a_3", 1024, 0, NULL));
	write_many(1500, "b");	/* every file changed: the next update is long */
	for (attempt = 0; attempt < 6 && !killed; attempt++) {
		pid_t pid = fork();
		int status;

		if (!pid) {
			struct ctx_index idx;

			if (ctx_index_init(&idx, ws, &ex) < 0)
				_exit(2);
			ctx_index_update(&idx);
			_exit(0);
		}
		usleep(20000 + 40000 * attempt);
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		killed = WIFSIGNALED(status);
	}
	assert_true(killed);
	cold = map_of("fn_b_3", 1024, 1, NULL);
	warm = map_of("fn_b_3", 1024, 0, &st);
	assert_string_equal(cold, warm);
	assert_true(st.cache_loaded);	/* the old cache survived the kill whole */
	free(warm);
	warm = map_of("fn_b_3", 1024, 0, &st);
	assert_string_equal(cold, warm);
	assert_int_equal(st.indexed, 0);
	free(warm);
	free(cold);
}

static void test_index_concurrent_runs(void **state)
{
	pid_t pids[3];
	char *cold, *warm;
	struct ctx_index_stats st;
	int i, status;

	(void)state;
	write_project();
	write_many(400, "c");
	for (i = 0; i < 3; i++) {
		pids[i] = fork();
		if (!pids[i]) {
			struct ctx_index idx;

			if (ctx_index_init(&idx, ws, &ex) < 0 || ctx_index_update(&idx) < 0)
				_exit(2);
			_exit(idx.stats.ctags_error ? 3 : 0);
		}
	}
	for (i = 0; i < 3; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	cold = map_of("fn_c_9", 1024, 1, NULL);
	warm = map_of("fn_c_9", 1024, 0, &st);
	assert_string_equal(cold, warm);
	assert_true(st.cache_loaded);
	assert_int_equal(st.indexed, 0);
	free(cold);
	free(warm);
}

/* The bytes of .forgex/map/<name>, or an empty buffer. */
static struct buf map_file(const char *name)
{
	struct buf b = BUF_INIT;
	char *p = xstrfmt("%s/.forgex/map/%s", ws, name);

	if (fsutil_read_file(&b, p, 0) < 0)
		err_clear();
	free(p);
	return b;
}

static void put_map_file(const char *name, const void *data, size_t len)
{
	char *p = xstrfmt("%s/.forgex/map/%s", ws, name);

	unlink(p);
	if (fsutil_write_atomic(p, data, len, 0644) < 0)
		fail_msg("%s", err_last());
	free(p);
}

static void test_cache_delta(void **state)
{
	struct ctx_index_stats st;
	struct buf base, delta, other;
	char *warm;

	(void)state;
	write_project();
	write_many(200, "d");
	free(map_of("fn_d_3", 1024, 0, &st));
	assert_true(st.saved);
	assert_false(st.delta_saved);
	base = map_file("index");

	/* one file changed: a delta is written, the base stays as it was */
	tu_write(ws, "gen/d03/f0003.c", "int fn_d_3(int x)\n{\n\treturn parse_config(0, 0) + x;\n}\n"
		 "int fn_new_one(void);\n");
	assert_same_as_cold("fn_d_3 parse_config", &st);
	assert_int_equal(st.indexed, 1);
	assert_true(st.saved);
	assert_true(st.delta_saved);
	other = map_file("index");
	assert_int_equal(other.len, base.len);
	assert_memory_equal(other.buf, base.buf, base.len);
	buf_release(&other);
	delta = map_file("delta");
	assert_true(delta.len > 0 && delta.len < base.len / 8);
	assert_memory_equal(delta.buf, "FXMAPD1\n", 8);

	/* read again: base and delta, nothing indexed, the same map as a cold build */
	assert_same_as_cold("fn_d_3 fn_new_one", &st);
	assert_true(st.cache_loaded);
	assert_true(st.delta_loaded);
	assert_int_equal(st.indexed, 0);
	assert_int_equal(st.cache_hits, 205);
	assert_false(st.saved);

	/* more changes: a file removed, one added, one edited; the delta holds them all */
	sh("rm gen/d07/f0007.c && echo 'int fn_added(void) { return fn_d_9(1); }' > gen/added.c");
	tu_write(ws, "src/log.c", "void log_msg(const char *fmt, ...)\n{\n}\nint log_level(void);\n");
	assert_same_as_cold("fn_added log_level", &st);
	assert_int_equal(st.indexed, 2);
	assert_true(st.delta_saved);
	assert_same_as_cold("fn_added log_level fn_new_one", &st);
	assert_true(st.delta_loaded);
	assert_int_equal(st.indexed, 0);
	assert_int_equal(st.files, 205);
	buf_release(&delta);
	delta = map_file("delta");

	/* a damaged delta is ignored: the base alone, and the files it missed are read again */
	other = map_file("delta");
	other.buf[other.len / 2] ^= 0x20;
	put_map_file("delta", other.buf, other.len);
	buf_release(&other);
	assert_same_as_cold("fn_added log_level", &st);
	assert_true(st.cache_loaded);
	assert_false(st.delta_loaded);
	assert_int_equal(st.indexed, 3);	/* the edited, the added, the changed one */

	/* a delta of another base counts for nothing */
	sh("touch -d '2001-01-01 00:00:00' gen/d*/*.c");	/* every key changed: a whole cache */
	warm = map_of("fn_d_3", 1024, 0, &st);
	free(warm);
	assert_true(st.saved);
	assert_false(st.delta_saved);
	other = map_file("delta");
	assert_int_equal(other.len, 0);	/* the old one was removed with the new base */
	buf_release(&other);
	put_map_file("delta", delta.buf, delta.len);
	assert_same_as_cold("fn_added log_level", &st);
	assert_false(st.delta_loaded);
	assert_int_equal(st.indexed, 0);

	/* a delta that is a link to a file outside: not read, and the next save replaces the link */
	{
		char *outside = tu_outside_mkdtemp(), *target = xstrfmt("%s/victim", outside);
		char *p = xstrfmt("%s/.forgex/map/delta", ws), *kept;
		struct stat sb;

		tu_write(outside, "victim", "keep me");
		unlink(p);
		assert_int_equal(symlink(target, p), 0);
		tu_write(ws, "gen/d04/f0004.c", "int fn_d_4(int x) { return x; }\nint linked(void);\n");
		assert_same_as_cold("linked", &st);
		assert_false(st.delta_loaded);
		assert_int_equal(st.indexed, 1);
		assert_true(st.delta_saved);
		assert_int_equal(lstat(p, &sb), 0);
		assert_true(S_ISREG(sb.st_mode));
		kept = tu_read(outside, "victim");
		assert_string_equal(kept, "keep me");
		free(kept);
		tu_rmtree(outside);	/* frees it */
		free(target);
		free(p);
	}
	buf_release(&delta);
	buf_release(&base);
}

/* One index kept in memory, as a run keeps it, updated after each change. */
static void test_index_session_updates(void **state)
{
	struct ctx_index idx;
	struct ctx_map m = CTX_MAP_INIT;
	struct ctx_focus f = { "fn_s_5 parse_config", NULL, NULL };
	char *cold;
	int round;

	(void)state;
	write_project();
	write_many(300, "s");
	assert_int_equal(ctx_index_init(&idx, ws, &ex), 0);
	assert_int_equal(ctx_index_update(&idx), 0);
	for (round = 0; round < 8; round++) {
		char rel[64], body[160];

		snprintf(rel, sizeof(rel), "gen/d%02d/f%04d.c", (round * 37) % 50, (round * 37) % 300);
		snprintf(body, sizeof(body), "int fn_s_%d(int x)\n{\n\treturn parse_config(0, 0) + "
			 "fn_s_5(x) + %d;\n}\nint round_%d(void);\n", (round * 37) % 300, round, round);
		tu_write(ws, rel, body);
		if (round == 5)
			sh("rm src/log.c");
		assert_int_equal(ctx_index_update(&idx), 0);
		assert_int_equal(idx.stats.indexed, 1);
		assert_true(idx.stats.saved);
		ctx_map_build(&m, &idx, &f, 1024);
		cold = map_of(f.request, 1024, 1, NULL);
		assert_string_equal(m.text.buf, cold);
		free(cold);
		/* what was saved reads back to the same map */
		cold = map_of(f.request, 1024, 0, NULL);
		assert_string_equal(m.text.buf, cold);
		free(cold);
	}
	ctx_map_release(&m);
	ctx_index_release(&idx);
}

static void test_cache_delta_parse_rejects(void **state)
{
	struct ctx_index idx;
	struct buf base, delta, bad = BUF_INIT;
	size_t i, nfiles;

	(void)state;
	write_project();
	write_many(100, "r");
	free(map_of(NULL, 512, 0, NULL));
	tu_write(ws, "gen/d01/f0001.c", "int fn_r_1(int x) { return x; }\nint another(void);\n");
	free(map_of(NULL, 512, 0, NULL));
	base = map_file("index");
	delta = map_file("delta");
	assert_true(delta.len > 0);
	memset(&idx, 0, sizeof(idx));
	assert_int_equal(ctx_cache_parse(&idx, (unsigned char *)base.buf, base.len), 0);
	nfiles = idx.nfiles;
	/* every prefix is refused and leaves the base as it was */
	for (i = 0; i < delta.len; i += 1 + i / 16) {
		assert_int_equal(ctx_cache_apply_delta(&idx, (unsigned char *)delta.buf, i), FX_EPARSE);
		assert_int_equal(idx.nfiles, nfiles);
		assert_int_equal(idx.arena.len, idx.base_alen);
	}
	/* a flipped byte: the checksum */
	buf_addbuf(&bad, &delta);
	bad.buf[bad.len - 3] ^= 1;
	assert_int_equal(ctx_cache_apply_delta(&idx, (unsigned char *)bad.buf, bad.len), FX_EPARSE);
	assert_non_null(strstr(err_last(), "checksum"));
	/* another base's */
	buf_reset(&bad);
	buf_addbuf(&bad, &delta);
	bad.buf[16] ^= 1;
	assert_int_equal(ctx_cache_apply_delta(&idx, (unsigned char *)bad.buf, bad.len), FX_EPARSE);
	assert_non_null(strstr(err_last(), "another base"));
	assert_int_equal(idx.nfiles, nfiles);
	/* the good one applies once; not twice (the index is no longer its base) */
	assert_int_equal(ctx_cache_apply_delta(&idx, (unsigned char *)delta.buf, delta.len), 0);
	assert_int_equal(idx.nfiles, nfiles);
	assert_int_equal(ctx_cache_apply_delta(&idx, (unsigned char *)delta.buf, delta.len), FX_EPARSE);
	ctx_index_clear_data(&idx);
	err_clear();
	buf_release(&bad);
	buf_release(&base);
	buf_release(&delta);
}

/* A cache of the previous format (FXMAP02) is not read: rebuilt whole, in the new one. */
static void test_cache_old_version(void **state)
{
	struct ctx_index_stats st;
	struct buf b;
	char *cold, *warm;

	(void)state;
	write_project();
	cold = map_of("parse_config", 1024, 1, NULL);
	free(map_of("parse_config", 1024, 0, NULL));
	b = map_file("index");
	memcpy(b.buf, "FXMAP02\n", 8);
	ctx_cache_checksum((unsigned char *)b.buf, b.len);
	put_map_file("index", b.buf, b.len);
	buf_release(&b);
	warm = map_of("parse_config", 1024, 0, &st);
	assert_string_equal(cold, warm);
	assert_true(st.cache_rejected);
	assert_int_equal(st.indexed, 5);
	assert_true(st.saved);
	b = map_file("index");
	assert_memory_equal(b.buf, "FXMAP03\n", 8);
	buf_release(&b);
	free(warm);
	free(cold);
}

static void test_index_without_executor(void **state)
{
	struct ctx_index idx;

	(void)state;
	write_project();
	assert_int_equal(ctx_index_init(&idx, ws, NULL), 0);
	assert_int_equal(ctx_index_update(&idx), 0);
	assert_int_equal(idx.stats.files, 5);
	assert_int_equal(idx.stats.defs, 0);
	assert_true(idx.stats.refs > 0);
	/* files without definitions are looked at again when ctags can run */
	assert_true(idx.files[0].flags & CTX_F_NOTAGS);
	idx.ex = &ex;
	idx.loaded = 0;
	assert_int_equal(ctx_index_update(&idx), 0);
	assert_int_equal(idx.stats.indexed, 5);
	assert_true(idx.stats.defs > 5);
	ctx_index_release(&idx);
}

static void test_index_ctags_missing(void **state)
{
	struct ctx_index idx;
	const char *path = getenv("PATH");
	char *saved = xstrdup(path ? path : "/usr/bin:/bin");

	(void)state;
	write_project();
	/* the executor finds programs on its PATH: one without ctags */
	setenv("PATH", "/nonexistent", 1);
	assert_int_equal(ctx_index_init(&idx, ws, &ex), 0);
	assert_int_equal(ctx_index_update(&idx), 0);
	setenv("PATH", saved, 1);
	free(saved);
	assert_non_null(idx.stats.ctags_error);
	assert_non_null(strstr(idx.stats.ctags_error, "ctags"));
	assert_int_equal(idx.stats.files, 5);
	assert_int_equal(idx.stats.defs, 0);
	ctx_index_release(&idx);
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(test_index_definitions_and_references),
		T(test_index_same_files_as_search),
		T(test_index_ignores_workspace_ctags_options),
		T(test_index_cache_keys),
		T(test_index_git_checkout),
		T(test_cache_parse_rejects),
		T(test_cache_hostile_files),
		T(test_index_killed_mid_update),
		T(test_index_concurrent_runs),
		T(test_cache_delta),
		T(test_index_session_updates),
		T(test_cache_delta_parse_rejects),
		T(test_cache_old_version),
		T(test_index_without_executor),
		T(test_index_ctags_missing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
