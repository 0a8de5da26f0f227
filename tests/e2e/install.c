/*
 * make install, end to end: into a temporary DESTDIR, then the installed
 * launcher finds its forgex-core, man -l renders forgex(1), and the
 * completions work in bash and parse in zsh and fish.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "helpers/testutil.h"

static char *destdir;

static const char *top(void)
{
	const char *t = getenv("FORGEX_TOP");

	return t && *t ? t : ".";
}

static int have(const char *prog)
{
	const char *argv[] = { "sh", "-c", "command -v \"$0\" >/dev/null", prog, NULL };
	struct tu_result r;
	int ok;

	tu_run(&r, argv, NULL, NULL, NULL);
	ok = r.status == 0;
	tu_result_release(&r);
	return ok;
}

static char *installed(const char *rel)
{
	return xstrfmt("%s/usr%s", destdir, rel);
}

static int setup(void **state)
{
	const char *build = getenv("BUILD") ? getenv("BUILD") : "build";
	char *d = xstrfmt("DESTDIR=%s", (destdir = tu_mkdtemp()));
	char *b = xstrfmt("BUILD=%s", build);
	int san = strstr(build, "san") != NULL;
	const char *argv[] = { "make", "-s", "--no-print-directory", "install", "PREFIX=/usr", d, b,
			       /* a sanitizer build is installed as it was built; else the list ends here */
			       san ? "SAN=1" : NULL, "CFLAGS=-O1 -g", NULL };
	struct tu_result r;

	(void)state;
	tu_run(&r, argv, top(), NULL, NULL);
	if (r.status)
		fail_msg("make install failed (%d): %s%s", r.status, r.out.buf, r.err.buf);
	tu_result_release(&r);
	free(d);
	free(b);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tu_rmtree(destdir);
	return 0;
}

static void test_install_puts_every_file_in_place(void **state)
{
	static const char *const files[] = {
		"/bin/forgex", "/libexec/forgex/forgex-core", "/share/man/man1/forgex.1",
		"/share/bash-completion/completions/forgex", "/share/zsh/site-functions/_forgex",
		"/share/fish/vendor_completions.d/forgex.fish",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		char *p = installed(files[i]);
		struct stat st;

		assert_int_equal(stat(p, &st), 0);
		assert_true(S_ISREG(st.st_mode));
		assert_int_equal(st.st_mode & 0777, i < 2 ? 0755 : 0644);
		free(p);
	}
}

static void test_install_launcher_finds_its_core(void **state)
{
	char *bin = installed("/bin/forgex");
	const char *a1[] = { bin, "--version", NULL };
	const char *a2[] = { bin, "diff", "--help", NULL };
	struct tu_result r;

	(void)state;
	tu_run(&r, a1, NULL, NULL, NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "forgex "));
	tu_result_release(&r);
	/* a command of forgex-core: the launcher execs ../libexec/forgex/forgex-core */
	tu_run(&r, a2, NULL, NULL, NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "usage: forgex diff"));
	assert_null(strstr(r.err.buf, "cannot run"));
	tu_result_release(&r);
	free(bin);
}

static void test_install_man_page_renders(void **state)
{
	char *page = installed("/share/man/man1/forgex.1");
	const char *argv[] = { "man", "-l", page, NULL };
	const char *env[] = { "MANPAGER=cat", "PAGER=cat", "MANWIDTH=80", "MAN_KEEP_FORMATTING=",
			      NULL };
	const char *lint[] = { "groff", "-man", "-ww", "-z", page, NULL };
	struct tu_result r;

	(void)state;
	if (!have("man"))
		skip();
	tu_run(&r, argv, NULL, env, NULL);
	assert_int_equal(r.status, 0);
	assert_non_null(strstr(r.out.buf, "FORGEX(1)"));
	assert_non_null(strstr(r.out.buf, "NAME"));
	assert_non_null(strstr(r.out.buf, "forgex run"));
	assert_non_null(strstr(r.out.buf, "EXIT STATUS"));
	/* every command of the help is in the page */
	assert_non_null(strstr(r.out.buf, "forgex completion"));
	assert_non_null(strstr(r.out.buf, "usage: forgex checkpoint create"));
	tu_result_release(&r);
	if (have("groff")) {
		tu_run(&r, lint, NULL, NULL, NULL);
		assert_int_equal(r.status, 0);
		assert_string_equal(r.err.buf, "");
		tu_result_release(&r);
	}
	free(page);
}

/* What bash completes for the words `line` (the last one is the one being typed). */
static char *bash_complete(const char *script, const char *line)
{
	char *prog = xstrfmt("source '%s'; read -ra COMP_WORDS <<< \"$0\"; "
			     "[[ $0 == *' ' ]] && COMP_WORDS+=(''); "
			     "COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _forgex; echo \"${COMPREPLY[*]}\"",
			     script);
	const char *argv[] = { "bash", "-c", prog, line, NULL };
	struct tu_result r;
	char *out;

	tu_run(&r, argv, NULL, NULL, NULL);
	if (r.status)
		fail_msg("bash completion failed: %s", r.err.buf);
	buf_trim(&r.out);
	out = xstrdup(r.out.buf);
	tu_result_release(&r);
	free(prog);
	return out;
}

static void test_install_completions(void **state)
{
	char *bash = installed("/share/bash-completion/completions/forgex");
	char *zsh = installed("/share/zsh/site-functions/_forgex");
	char *fish = installed("/share/fish/vendor_completions.d/forgex.fish");
	char *got;
	struct tu_result r;

	(void)state;
	/* what is installed is what the program prints */
	{
		char *bin = installed("/bin/forgex");
		const char *argv[] = { bin, "completion", "bash", NULL };
		struct buf b = BUF_INIT;

		tu_run(&r, argv, NULL, NULL, NULL);
		assert_int_equal(r.status, 0);
		fsutil_read_file(&b, bash, 0);
		assert_string_equal(r.out.buf, b.buf);
		buf_release(&b);
		tu_result_release(&r);
		free(bin);
	}
	got = bash_complete(bash, "forgex chec");
	assert_string_equal(got, "checkpoint");
	free(got);
	got = bash_complete(bash, "forgex checkpoint re");
	assert_string_equal(got, "restore");
	free(got);
	got = bash_complete(bash, "forgex -C /tmp run --js");
	assert_string_equal(got, "--json");
	free(got);
	got = bash_complete(bash, "forgex completion ");
	assert_string_equal(got, "bash zsh fish");
	free(got);
	got = bash_complete(bash, "forgex help comp");
	assert_string_equal(got, "completion");
	free(got);

	if (have("zsh")) {
		const char *argv[] = { "zsh", "-n", zsh, NULL };

		tu_run(&r, argv, NULL, NULL, NULL);
		assert_int_equal(r.status, 0);
		assert_string_equal(r.err.buf, "");
		tu_result_release(&r);
	}
	if (have("fish")) {
		const char *argv[] = { "fish", "--no-execute", fish, NULL };
		const char *load[] = { "fish", "-c", "source $argv[1]; complete -C 'forgex checkpoint re'",
				       fish, NULL };

		tu_run(&r, argv, NULL, NULL, NULL);
		assert_int_equal(r.status, 0);
		assert_string_equal(r.err.buf, "");
		tu_result_release(&r);
		tu_run(&r, load, NULL, NULL, NULL);
		assert_int_equal(r.status, 0);
		assert_non_null(strstr(r.out.buf, "restore"));
		tu_result_release(&r);
	}
	free(bash);
	free(zsh);
	free(fish);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_install_puts_every_file_in_place),
		cmocka_unit_test(test_install_launcher_finds_its_core),
		cmocka_unit_test(test_install_man_page_renders),
		cmocka_unit_test(test_install_completions),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
