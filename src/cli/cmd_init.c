/*
 * forgex init: write .forgex/config.toml and keep run data out of git.
 *
 * The project is where every other command will find it: the nearest
 * folder up from here holding .forgex/ or .git (so `init` in a subfolder
 * of a repository writes at the repository's top, as git would), unless
 * --here asks for the current folder itself.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/log.h"
#include "base/path.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "pipeline/rundir.h"

int cmd_init(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "here", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct buf dir = BUF_INIT, file = BUF_INIT, tmpl = BUF_INIT;
	char *cwd = NULL, *root = NULL;
	int force = 0, here = 0, c, ret = EXIT_OK, exists, added = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+fh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			force = 1;
			break;
		case 'H':
			here = 1;
			break;
		case 'h':
			return cli_help("init");
		default:
			return cli_usage_error("init", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc)
		return cli_usage_error("init", "unexpected argument '%s'", argv[optind]);
	cwd = getcwd(NULL, 0);
	if (!cwd) {
		log_error("cannot get the current folder: %s", strerror(errno));
		return EXIT_FAIL;
	}
	if (here) {
		root = xstrdup(cwd);
	} else if (config_find_workspace(&root, cwd) < 0) {
		cli_print_error();
		free(cwd);
		return EXIT_FAIL;
	}
	if (strcmp(root, cwd)) {
		char *forgex = xstrfmt("%s/.forgex", root);

		printf("The project is %s, the folder above holding %s (--here: this folder)\n",
		       root, fsutil_is_dir(forgex) ? ".forgex/" : ".git");
		free(forgex);
	}
	path_join(&dir, root, ".forgex");
	path_join(&file, dir.buf, "config.toml");
	exists = fsutil_exists(file.buf);
	if (exists && !force) {
		printf("%s already exists; left unchanged (use --force to overwrite)\n", file.buf);
	} else {
		config_write_template(&tmpl);
		if (fsutil_mkdir_p(dir.buf, 0755) < 0 ||
		    fsutil_write_atomic(file.buf, tmpl.buf, tmpl.len, 0644) < 0) {
			cli_print_error();
			ret = EXIT_FAIL;
			goto out;
		}
		printf("%s %s\n", exists ? "Overwrote" : "Wrote", file.buf);
	}
	if (rundir_exclude(root, &added) < 0) {
		cli_print_error();
		ret = EXIT_FAIL;
		goto out;
	}
	if (added)
		printf("Added .forgex/runs/, .forgex/checkpoints/ and .forgex/map/ to .git/info/exclude\n");
out:
	free(cwd);
	free(root);
	buf_release(&dir);
	buf_release(&file);
	buf_release(&tmpl);
	return ret;
}
