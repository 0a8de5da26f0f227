/*
 * Sweeping what killed processes left: journal_sweep() over every run and
 * session turn of a workspace, journal_sweep_rundir() in a run folder
 * (see journal.h).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "pipeline/journal.h"
#include "pipeline/rundir.h"
#include "pipeline/runrecord.h"

#define TMP_TAIL 16	/* ".fx-XXXXXXXX.tmp" */

/* Whether `name` is a temporary file name fsutil_tmp_create() makes (for some NAME). */
static int own_tmp(const char *name)
{
	size_t n = strlen(name);
	char *target;
	int yes;

	if (n < TMP_TAIL + 2 || *name != '.')
		return 0;
	target = xstrndup(name + 1, n - 1 - TMP_TAIL);
	yes = fsutil_tmp_is_for(name, target);
	free(target);
	return yes;
}

/* Whether `name` is a saved copy being made again (restock(): "N.new"). */
static int own_new_copy(const char *name)
{
	size_t d = strspn(name, "0123456789");

	return d && !strcmp(name + d, ".new");
}

/* Remove the files of `dfd` that `is_own` takes, never a folder, following no link. */
static void sweep_folder(int dfd, int (*is_own)(const char *))
{
	DIR *d = fdopendir(dup(dfd));
	struct strvec names = STRVEC_INIT;
	struct dirent *e;
	size_t i;

	if (!d)
		return;
	while ((e = readdir(d)))
		if (is_own(e->d_name))
			strvec_push(&names, e->d_name);
	closedir(d);
	for (i = 0; i < names.nr; i++) {
		struct stat st;

		if (!fstatat(dfd, names.v[i], &st, AT_SYMLINK_NOFOLLOW) &&
		    (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)))
			unlinkat(dfd, names.v[i], 0);
	}
	strvec_clear(&names);
}

void journal_sweep_rundir(const char *dir)
{
	int dfd = rundir_file_open(dir, NULL, O_RDONLY | O_DIRECTORY, 0), sfd;

	if (dfd < 0) {
		err_clear();
		return;
	}
	sweep_folder(dfd, own_tmp);
	sfd = openat(dfd, "saved", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sfd >= 0) {
		sweep_folder(sfd, own_new_copy);
		close(sfd);
	}
	close(dfd);
}

/* journal_remove_tmps() on the journal in `dir`, if there is one. */
static void sweep_dir(struct checkpoints *cps, const char *dir, struct strvec *removed)
{
	struct journal t = JOURNAL_INIT;

	if (journal_open(&t, cps, dir, 0) >= 0)
		journal_remove_tmps(&t, removed);
	journal_sweep_rundir(dir);
	journal_release(&t);
	err_clear();
}

void journal_sweep(struct checkpoints *cps, const char *workspace, struct strvec *removed)
{
	struct strvec ids = STRVEC_INIT;
	size_t i;

	/* a killed checkpoint restore's (it has no journal) */
	checkpoint_sweep_tmps(cps);
	runrecord_list(&ids, RUNRECORD_RUNS, workspace);
	for (i = 0; i < ids.nr; i++) {
		char *dir = rundir_dir_kind(workspace, RUNDIR_RUNS, ids.v[i]);

		sweep_dir(cps, dir, removed);
		free(dir);
	}
	strvec_clear(&ids);
	/* a session keeps one journal per turn, in turns/N */
	runrecord_list(&ids, RUNRECORD_SESSIONS, workspace);
	for (i = 0; i < ids.nr; i++) {
		char *dir = rundir_dir_kind(workspace, RUNDIR_CHATS, ids.v[i]);
		int fd = rundir_file_open(dir, "turns", O_RDONLY | O_DIRECTORY, 0);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		struct dirent *e;

		if (fd >= 0 && !d)
			close(fd);
		while (d && (e = readdir(d))) {
			char *turn;

			if (!*e->d_name || strspn(e->d_name, "0123456789") != strlen(e->d_name))
				continue;
			turn = xstrfmt("%s/turns/%s", dir, e->d_name);
			sweep_dir(cps, turn, removed);
			free(turn);
		}
		if (d)
			closedir(d);
		err_clear();
		free(dir);
	}
	strvec_clear(&ids);
}

