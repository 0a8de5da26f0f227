/* forgex init: write .forgex/config.toml and keep run data out of git. */
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

static const char *const excluded[] = { ".forgex/runs/", ".forgex/checkpoints/" };

/*
 * The git folder of the repository at `dir`: `dir`/.git when it is a
 * folder, or the target of a "gitdir: PATH" file (worktrees, submodules).
 * NULL when `dir` is not the top of a git work tree.
 */
static char *git_dir_of(const char *dir)
{
	struct buf p = BUF_INIT, c = BUF_INIT;
	char *ret = NULL;

	path_join(&p, dir, ".git");
	if (fsutil_is_dir(p.buf)) {
		ret = buf_detach(&p, NULL);
	} else if (!fsutil_read_file(&c, p.buf, 4096) && !strncmp(c.buf, "gitdir:", 7)) {
		struct buf t = BUF_INIT;

		buf_addstr(&t, c.buf + 7);
		buf_trim(&t);
		if (t.buf[0] == '/') {
			ret = buf_detach(&t, NULL);
		} else {
			buf_reset(&p);
			path_join(&p, dir, t.buf);
			ret = buf_detach(&p, NULL);
		}
		buf_release(&t);
	}
	buf_release(&p);
	buf_release(&c);
	return ret;
}

/* Add our run folders to info/exclude (of the common dir for worktrees). */
static int exclude_run_data(const char *gitdir, int *added)
{
	struct buf common = BUF_INIT, path = BUF_INIT, content = BUF_INIT, c = BUF_INIT;
	size_t i;
	int ret = 0;

	/* a linked worktree's "commondir" points at the main .git */
	path_join(&path, gitdir, "commondir");
	if (!fsutil_read_file(&c, path.buf, 4096)) {
		buf_trim(&c);
		if (c.buf[0] == '/')
			buf_addbuf(&common, &c);
		else
			path_join(&common, gitdir, c.buf);
	} else {
		buf_addstr(&common, gitdir);
	}
	buf_reset(&path);
	path_join(&path, common.buf, "info");
	ret = fsutil_mkdir_p(path.buf, 0755);
	if (ret < 0)
		goto out;
	buf_addstr(&path, "/exclude");
	ret = fsutil_read_file(&content, path.buf, 16 * 1024 * 1024);
	if (ret == FX_ENOTFOUND)
		ret = 0;
	if (ret < 0)
		goto out;
	*added = 0;
	for (i = 0; i < ARRAY_SIZE(excluded); i++) {
		const char *p = content.buf;
		size_t n = strlen(excluded[i]);
		int present = 0;

		while (p && *p) {
			if (!strncmp(p, excluded[i], n) && (p[n] == '\n' || p[n] == '\0'))
				present = 1;
			p = strchr(p, '\n');
			if (p)
				p++;
		}
		if (present)
			continue;
		if (content.len && content.buf[content.len - 1] != '\n')
			buf_addch(&content, '\n');
		if (!*added)
			buf_addstr(&content, "# forgex run data\n");
		buf_addf(&content, "%s\n", excluded[i]);
		(*added)++;
	}
	if (*added)
		ret = fsutil_write_atomic(path.buf, content.buf, content.len, 0644);
out:
	buf_release(&common);
	buf_release(&path);
	buf_release(&content);
	buf_release(&c);
	return ret;
}

int cmd_init(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct buf dir = BUF_INIT, file = BUF_INIT, tmpl = BUF_INIT;
	char *cwd = NULL, *gitdir = NULL;
	int force = 0, c, ret = EXIT_OK, exists, added = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+fh", opts, NULL)) != -1) {
		switch (c) {
		case 'f':
			force = 1;
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
	path_join(&dir, cwd, ".forgex");
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
	gitdir = git_dir_of(cwd);
	if (gitdir) {
		if (exclude_run_data(gitdir, &added) < 0) {
			cli_print_error();
			ret = EXIT_FAIL;
			goto out;
		}
		if (added)
			printf("Added .forgex/runs/ and .forgex/checkpoints/ to .git/info/exclude\n");
	}
out:
	free(cwd);
	free(gitdir);
	buf_release(&dir);
	buf_release(&file);
	buf_release(&tmpl);
	return ret;
}
