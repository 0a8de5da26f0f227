/*
 * What the lists of sessions (/resume, `forgex log`) show of one: its
 * first message, its turns, when it was last used; see chat.h.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/jsonx.h"
#include "pipeline/chat.h"
#include "pipeline/rundir.h"

/* The text of the first "user" event: a state written before "first" was kept lost it to /clear. */
static char *first_from_events(const char *dir)
{
	json_t *events = NULL, *ev;
	char *first = NULL;
	size_t i;

	if (rundir_load_events(&events, dir) < 0) {
		err_clear();
		return NULL;
	}
	json_array_foreach(events, i, ev) {
		const char *type = jsonx_str(ev, "type");

		if (type && !strcmp(type, "user") && jsonx_str(ev, "text")) {
			first = xstrdup(jsonx_str(ev, "text"));
			break;
		}
	}
	json_decref(events);
	return first;
}

int chat_session_info_read(struct chat_session_info *out, const char *workspace, const char *id)
{
	char *dir = rundir_dir_kind(workspace, RUNDIR_CHATS, id);
	json_t *st = NULL;
	const char *first;
	struct stat sb;
	int ret, fd;

	*out = (struct chat_session_info)CHAT_SESSION_INFO_INIT;
	ret = rundir_read_json(&st, dir, "state.json");
	if (ret < 0)
		goto out;
	out->turns = json_array_size(json_object_get(st, "turns"));
	first = jsonx_str(st, "first");
	if (!first || !*first)
		first = json_string_value(json_array_get(json_object_get(st, "said"), 0));
	if (first && *first)
		out->first = xstrdup(first);
	else if (out->turns)
		out->first = first_from_events(dir);
	if (!out->first)
		out->first = xstrdup("");
	out->used = (long long)jsonx_int(st, "used", 0);
	if (!out->used) {
		/* older states: when state.json was last written */
		fd = rundir_file_open(dir, "state.json", O_RDONLY, 0);
		if (fd >= 0) {
			if (fstat(fd, &sb) == 0)
				out->used = (long long)sb.st_mtime;
			close(fd);
		}
		err_clear();
	}
out:
	json_decref(st);
	free(dir);
	return ret;
}

void chat_session_info_release(struct chat_session_info *s)
{
	free(s->first);
	*s = (struct chat_session_info)CHAT_SESSION_INFO_INIT;
}
