/*
 * The repository map of a run and the repo_map tool (see context.h).
 */
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "context/context.h"

int ctx_session_init(struct ctx_session *s, const char *workspace, struct executor *ex,
		     size_t map_tokens)
{
	int ret;

	memset(s, 0, sizeof(*s));
	strvec_init(&s->files);
	buf_init(&s->last.text, 0);
	s->map_tokens = map_tokens;
	ret = ctx_index_init(&s->idx, workspace, ex);
	if (ret < 0)
		return ret;
	s->have_idx = 1;
	return 0;
}

static void *prefetch_main(void *arg)
{
	struct ctx_session *s = arg;

	if (ctx_index_update(&s->idx) < 0)
		err_clear();	/* the first map updates again and says why */
	return NULL;
}

int ctx_session_prefetch(struct ctx_session *s, struct executor *ex)
{
	if (!s->have_idx || s->prefetching)
		return 0;
	s->saved_ex = s->idx.ex;
	s->saved_ex2 = s->idx.ex2;
	s->idx.ex = ex;
	s->idx.ex2 = NULL;
	if (pthread_create(&s->prefetch, NULL, prefetch_main, s)) {
		s->idx.ex = s->saved_ex;
		s->idx.ex2 = s->saved_ex2;
		return err_set(FX_EOS, "cannot start the repository map's thread");
	}
	s->prefetching = 1;
	return 0;
}

static void prefetch_join(struct ctx_session *s)
{
	if (!s->prefetching)
		return;
	pthread_join(s->prefetch, NULL);
	s->prefetching = 0;
	s->idx.ex = s->saved_ex;
	s->idx.ex2 = s->saved_ex2;
}

void ctx_session_release(struct ctx_session *s)
{
	prefetch_join(s);
	if (s->have_idx)
		ctx_index_release(&s->idx);
	ctx_map_release(&s->last);
	buf_release(&s->last.text);
	strvec_clear(&s->files);
	free(s->request);
	memset(s, 0, sizeof(*s));
}

void ctx_session_set_request(struct ctx_session *s, const char *request)
{
	free(s->request);
	s->request = request ? xstrdup(request) : NULL;
}

void ctx_session_note_file(struct ctx_session *s, const char *path)
{
	if (path && *path && strvec_find(&s->files, path) < 0)
		strvec_push(&s->files, path);
}

int ctx_session_map(struct ctx_session *s, struct buf *out, const struct strvec *focus,
		    const struct strvec *extra_files, size_t tokens)
{
	struct strvec files = STRVEC_INIT;
	struct ctx_focus f;
	size_t i;
	int ret;

	if (!s->have_idx)
		return err_set(FX_EINVAL, "no repository map");
	if (s->prefetching) {
		prefetch_join(s);
		/* anything changed since then shows: another (warm) update */
	}
	ret = ctx_index_update(&s->idx);
	if (ret < 0)
		return ret;
	strvec_copy(&files, &s->files);
	for (i = 0; s->changed && i < s->changed->nr; i++)
		if (strvec_find(&files, s->changed->v[i]) < 0)
			strvec_push(&files, s->changed->v[i]);
	for (i = 0; extra_files && i < extra_files->nr; i++)
		if (strvec_find(&files, extra_files->v[i]) < 0)
			strvec_push(&files, extra_files->v[i]);
	f.request = s->request;
	f.files = &files;
	f.focus = focus;
	ctx_map_build(&s->last, &s->idx, &f, tokens ? tokens : s->map_tokens);
	if (s->last.nfiles)
		buf_addbuf(out, &s->last.text);
	strvec_clear(&files);
	return 0;
}
