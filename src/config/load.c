/*
 * Finding and loading the configuration (see config.h): the workspace,
 * the user file, the project file (read beneath the workspace and hashed
 * for the trust check), the nested project files never read, and the
 * checks across keys that run after every layer.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/path.h"
#include "base/sha256.h"
#include "base/xdg.h"
#include "config/config.h"
#include "config/config_internal.h"

/* ---- finding files ---- */

/*
 * The workspace is the top of the git working tree the start folder is in
 * (the nearest folder holding .git, as git finds it). Outside git, it is
 * the outermost folder holding .forgex/, so a .forgex/ a command made in
 * a subfolder never becomes a workspace of its own; with neither, the
 * start folder itself. The walk stops below $HOME (unless it starts
 * there): a dotfiles repository in ~, or a stray ~/.forgex, must not make
 * the whole home folder the workspace of every project under it.
 */
int config_find_workspace(char **out, const char *start)
{
	struct buf dir = BUF_INIT, probe = BUF_INIT;
	const char *h = getenv("HOME");
	char *abs, *forgex_top = NULL, *home = h && *h == '/' ? realpath(h, NULL) : NULL;

	abs = realpath(start ? start : ".", NULL);
	if (!abs) {
		free(home);
		return err_set_errno(FX_ENOTFOUND, "cannot resolve '%s'", start ? start : ".");
	}
	buf_addstr(&dir, abs);
	for (;;) {
		if (home && !strcmp(dir.buf, home) && strcmp(abs, home)) {
			buf_reset(&dir);
			buf_addstr(&dir, forgex_top ? forgex_top : abs);
			break;
		}
		buf_reset(&probe);
		path_join(&probe, dir.buf, ".git");
		if (fsutil_exists(probe.buf))
			break;
		buf_reset(&probe);
		path_join(&probe, dir.buf, ".forgex");
		if (fsutil_is_dir(probe.buf)) {
			free(forgex_top);
			forgex_top = xstrdup(dir.buf);
		}
		if (dir.len == 1) {
			buf_reset(&dir);
			buf_addstr(&dir, forgex_top ? forgex_top : abs);
			break;
		}
		buf_reset(&probe);
		path_dirname(&probe, dir.buf);
		buf_reset(&dir);
		buf_addbuf(&dir, &probe);
	}
	free(forgex_top);
	free(home);
	free(abs);
	buf_release(&probe);
	*out = buf_detach(&dir, NULL);
	return 0;
}

char *config_user_file(void)
{
	return xdg_path(XDG_DIR_CONFIG, "forgex/config.toml");
}

static int validate_mcp(struct config *cfg)
{
	size_t i, j;

	for (i = 0; i < cfg->mcp_servers_nr; i++) {
		const struct mcp_server_config *m = &cfg->mcp_servers[i];
		const struct cfg_set_record *rec;
		char *key = xstrfmt("mcp_servers.%s.%s", m->name, *m->url ? "url" : "command");
		int ret = 0;

		rec = cfg_find_record(cfg, key);
		if (!*m->command == !*m->url)
			ret = err_set(FX_EINVAL, "%s%s[mcp_servers.%s] needs exactly one of 'command' "
				      "(a stdio server) and 'url' (a Streamable HTTP server)",
				      rec ? rec->where : "", rec ? ": " : "", m->name);
		else if (*m->url && strncmp(m->url, "http://", 7) && strncmp(m->url, "https://", 8))
			ret = err_set(FX_EINVAL, "%s%skey '%s': expected an http:// or https:// URL",
				      rec ? rec->where : "", rec ? ": " : "", key);
		if (!ret && *m->url && m->allowed_domains.nr)
			ret = err_set(FX_EINVAL, "[mcp_servers.%s] allowed_domains is for a stdio "
				      "server (the sandbox's egress proxy); forgex itself reaches an "
				      "HTTP server's url", m->name);
		for (j = 0; !ret && j < m->roles.nr; j++)
			if (config_role_from_name(m->roles.v[j]) < 0)
				ret = err_set(FX_EINVAL, "[mcp_servers.%s] roles: unknown role '%s' "
					      "(architect, builder, expert_coder, supervisor)",
					      m->name, m->roles.v[j]);
		free(key);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int validate(struct config *cfg)
{
	int r;

	if (validate_mcp(cfg) < 0)
		return FX_EINVAL;
	if (!strstr(cfg->batch.url_template, "{repo}")) {
		const struct cfg_set_record *rec = cfg_find_record(cfg, "batch.url_template");

		return err_set(FX_EINVAL, "%s%skey 'batch.url_template': \"%s\" has no {repo} (where "
			       "a task's \"owner/name\" goes)", rec ? rec->where : "", rec ? ": " : "",
			       cfg->batch.url_template);
	}

	for (r = 0; r < ROLE__COUNT; r++) {
		const char *p = cfg->agents[r].provider;

		if (!config_provider(cfg, p)) {
			const struct cfg_set_record *rec;
			char *key = xstrfmt("agents.%s.provider", cfg_role_names[r]);

			rec = cfg_find_record(cfg, key);
			err_set(FX_EINVAL, "%s%skey '%s': no provider named \"%s\" (add a [providers.%s] table)",
				rec ? rec->where : "", rec ? ": " : "", key, p, p);
			free(key);
			return FX_EINVAL;
		}
	}
	return 0;
}

/*
 * Read the project file into `out`: FX_ENOTFOUND when there is none; an
 * error naming a symbolic link, a FIFO or anything but a regular file.
 */
static int read_project_file(struct buf *out, const char *workspace, const char *shown)
{
	struct stat st;
	int wfd, fd, ret;

	wfd = open(workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (wfd < 0)
		return err_set_errno(FX_EOS, "cannot open the workspace %s", workspace);
	fd = fsutil_open_beneath(wfd, ".forgex/config.toml");
	if (fd < 0) {
		ret = errno == ENOENT ? FX_ENOTFOUND
		      : errno == ELOOP || errno == EXDEV
		      ? err_set(FX_EDENIED, "%s: it or its folder .forgex is a symbolic link; forgex "
				"reads its own files without following links (replace the link with "
				"the file itself)", shown)
		      : errno == ENOTDIR
		      ? err_set(FX_EINVAL, "%s: .forgex in the workspace is not a folder", shown)
		      : err_set_errno(FX_EOS, "cannot read %s", shown);
		close(wfd);
		return ret;
	}
	close(wfd);
	if (fstat(fd, &st) < 0)
		ret = err_set_errno(FX_EOS, "cannot read %s", shown);
	else if (!S_ISREG(st.st_mode))
		ret = err_set(FX_EINVAL, "%s is not a regular file", shown);
	else if (st.st_size > CONFIG_FILE_MAX)
		ret = err_set(FX_ELIMIT, "%s is larger than %d bytes", shown, CONFIG_FILE_MAX);
	else
		ret = fsutil_read_fd(out, fd, CONFIG_FILE_MAX);
	close(fd);
	return ret;
}

int config_read_project(struct buf *out, const char *workspace)
{
	char *shown = xstrfmt("%s/.forgex/config.toml", workspace);
	int ret = read_project_file(out, workspace, shown);

	free(shown);
	return ret;
}

/* Every .forgex/config.toml from `start` up to, not including, the workspace. */
static void find_nested(struct config *cfg, const char *start)
{
	char *abs = realpath(start ? start : ".", NULL);
	struct buf dir = BUF_INIT, probe = BUF_INIT;
	size_t wl = strlen(cfg->workspace);

	if (!abs)
		return;
	buf_addstr(&dir, abs);
	while (dir.len > wl && !strncmp(dir.buf, cfg->workspace, wl) &&
	       (wl == 1 || dir.buf[wl] == '/')) {
		buf_reset(&probe);
		path_join(&probe, dir.buf, ".forgex/config.toml");
		if (fsutil_exists(probe.buf))
			strvec_push(&cfg->nested_ignored, probe.buf);
		buf_reset(&probe);
		path_dirname(&probe, dir.buf);
		buf_reset(&dir);
		buf_addbuf(&dir, &probe);
	}
	free(abs);
	buf_release(&dir);
	buf_release(&probe);
}

int config_load(struct config *cfg, const char *start)
{
	struct buf text = BUF_INIT;
	int ret;

	ret = config_find_workspace(&cfg->workspace, start);
	if (ret < 0)
		return ret;
	find_nested(cfg, start);
	cfg->user_file = config_user_file();
	if (cfg->user_file && fsutil_exists(cfg->user_file)) {
		ret = config_apply_file(cfg, cfg->user_file, CFG_USER);
		if (ret < 0)
			return ret;
	}
	cfg->project_file = xstrfmt("%s/.forgex/config.toml", cfg->workspace);
	ret = read_project_file(&text, cfg->workspace, cfg->project_file);
	if (ret == FX_ENOTFOUND) {
		ret = 0;
	} else if (!ret) {
		int changed = 0, t;

		cfg->project_exists = 1;
		sha256_hex(cfg->project_hash, text.buf, text.len);
		t = cfg->trust_fn ? cfg->trust_fn(cfg->project_file, cfg->project_hash, &changed,
						  cfg->trust_data) : 0;
		if (t < 0)
			cfg->trust_error = xstrdup(err_last());
		cfg->project_trusted = t > 0;
		cfg->project_changed = t == 0 && changed;
		ret = config_apply_string(cfg, text.buf, text.len, cfg->project_file, CFG_PROJECT);
	}
	buf_release(&text);
	if (ret < 0)
		return ret;
	ret = config_apply_env(cfg, NULL);
	if (ret < 0)
		return ret;
	return validate(cfg);
}

int config_from_untrusted_project(const struct config *cfg, const char *key)
{
	const struct cfg_set_record *r = cfg_find_record(cfg, key);

	return r && r->origin == CFG_PROJECT && !cfg->project_trusted;
}

int config_validate(struct config *cfg)
{
	return validate(cfg);
}
