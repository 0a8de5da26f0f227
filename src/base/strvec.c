#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "base/strvec.h"

const char *strvec_empty[] = { NULL };

void strvec_init(struct strvec *sv)
{
	sv->v = strvec_empty;
	sv->nr = 0;
	sv->alloc = 0;
}

static const char *push_owned(struct strvec *sv, char *s)
{
	if (sv->v == strvec_empty)
		sv->v = NULL;
	ALLOC_GROW(sv->v, sv->nr + 2, sv->alloc);
	sv->v[sv->nr++] = s;
	sv->v[sv->nr] = NULL;
	return s;
}

const char *strvec_push(struct strvec *sv, const char *s)
{
	return push_owned(sv, xstrdup(s));
}

const char *strvec_pushf(struct strvec *sv, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = xstrvfmt(fmt, ap);
	va_end(ap);
	return push_owned(sv, s);
}

void strvec_pushv(struct strvec *sv, const char *const *argv)
{
	for (; *argv; argv++)
		strvec_push(sv, *argv);
}

void strvec_pop(struct strvec *sv)
{
	if (!sv->nr)
		return;
	free((char *)sv->v[--sv->nr]);
	sv->v[sv->nr] = NULL;
}

long strvec_find(const struct strvec *sv, const char *s)
{
	size_t i;

	for (i = 0; i < sv->nr; i++)
		if (!strcmp(sv->v[i], s))
			return (long)i;
	return -1;
}

void strvec_clear(struct strvec *sv)
{
	size_t i;

	if (sv->v != strvec_empty) {
		for (i = 0; i < sv->nr; i++)
			free((char *)sv->v[i]);
		free(sv->v);
	}
	strvec_init(sv);
}

void strvec_copy(struct strvec *dst, const struct strvec *src)
{
	size_t i;

	for (i = 0; i < src->nr; i++)
		strvec_push(dst, src->v[i]);
}

const char **strvec_detach(struct strvec *sv)
{
	const char **v;

	if (sv->v == strvec_empty) {
		v = xcalloc(1, sizeof(*v));
	} else {
		v = sv->v;
	}
	strvec_init(sv);
	return v;
}
