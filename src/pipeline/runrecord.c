/* The user's record of the runs forgex started; see runrecord.h. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/path.h"
#include "base/termsafe.h"
#include "base/xdg.h"
#include "pipeline/rundir.h"
#include "pipeline/runrecord.h"

#define RECORD_MAX (4u << 20)

void runrecord_note(const char *record, const char *workspace, const char *id)
{
	char *path, *line;
	struct buf dir = BUF_INIT;
	int fd;

	/* a line per entry: a workspace with a newline could forge one */
	if (strchr(workspace, '\n'))
		return;
	path = xdg_path(XDG_DIR_STATE, record);
	if (!path)
		return;
	path_dirname(&dir, path);
	line = xstrfmt("%s\t%s\n", id, workspace);
	if (fsutil_mkdir_p(dir.buf, 0700) == 0 &&
	    (fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600)) >= 0) {
		if (write(fd, line, strlen(line)) < 0)
			err_clear();
		close(fd);
	}
	err_clear();
	free(line);
	buf_release(&dir);
	free(path);
}

void runrecord_list(struct strvec *out, const char *record, const char *workspace)
{
	char *path = xdg_path(XDG_DIR_STATE, record);
	struct buf b = BUF_INIT;
	size_t pos = 0, wl = strlen(workspace);

	if (!path || fsutil_read_file(&b, path, RECORD_MAX) < 0) {
		err_clear();
		free(path);
		return;
	}
	while (pos < b.len) {
		const char *l = b.buf + pos, *nl = memchr(l, '\n', b.len - pos);
		size_t n = nl ? (size_t)(nl - l) : b.len - pos;
		const char *tab = memchr(l, '\t', n);

		if (tab && (size_t)(l + n - tab - 1) == wl && !memcmp(tab + 1, workspace, wl))
			strvec_pushf(out, "%.*s", (int)(tab - l), l);
		pos += n + 1;
	}
	buf_release(&b);
	free(path);
}

void runrecord_add(const char *workspace, const char *id)
{
	runrecord_note(RUNRECORD_RUNS, workspace, id);
}

int runrecord_mine(const char *workspace, const char *id)
{
	struct strvec mine = STRVEC_INIT;
	int found;

	runrecord_list(&mine, RUNRECORD_RUNS, workspace);
	found = strvec_find(&mine, id) >= 0;
	strvec_clear(&mine);
	return found;
}

int runrecord_resolve(char **out, const char *workspace, const char *name,
		      struct strvec *planted)
{
	struct strvec all = STRVEC_INIT, mine = STRVEC_INIT;
	char *id = NULL;
	size_t i;
	int ret;

	runrecord_list(&mine, RUNRECORD_RUNS, workspace);
	if (name && strcmp(name, "last")) {
		ret = rundir_resolve(&id, workspace, name);
		if (ret < 0)
			goto out;
		if (strvec_find(&mine, id) < 0) {
			ret = err_set(FX_EDENIED, "run %s was not started here by you (it is not in "
				      "your record of runs): a run folder shipped with the repository "
				      "or left by someone else is planted, and forgex does not act on "
				      "it", id);
			free(id);
			goto out;
		}
		*out = id;
		goto out;
	}
	ret = rundir_list(&all, workspace);
	if (ret < 0)
		goto out;
	for (i = all.nr; i-- > 0;) {
		if (strvec_find(&mine, all.v[i]) >= 0)
			break;
		if (planted)
			strvec_push(planted, all.v[i]);
	}
	if (i != (size_t)-1)
		*out = xstrdup(all.v[i]);
	else if (all.nr)
		ret = err_set(FX_ENOTFOUND, "no run you started in %s (the %zu in its .forgex/runs "
			      "were not started here by you: planted, forgex does not act on them)",
			      workspace, all.nr);
	else
		ret = err_set(FX_ENOTFOUND, "no runs yet in %s/.forgex/runs", workspace);
out:
	strvec_clear(&all);
	strvec_clear(&mine);
	return ret;
}

void runrecord_describe_planted(struct buf *out, const struct strvec *planted)
{
	size_t i;

	for (i = 0; i < planted->nr; i++) {
		buf_addstr(out, "forgex: passed over run ");
		buf_add_termsafe(out, planted->v[i], strlen(planted->v[i]), 0);
		buf_addstr(out, ": it was not started here by you (planted: shipped with the "
			   "repository or left by someone else)\n");
	}
}
