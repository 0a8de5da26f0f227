/*
 * Loading the captured outputs of tests/fixtures/verify/ for the verify
 * unit tests (included by them; each test file is its own program).
 * A fixture NAME is the three files NAME.stdout, NAME.stderr, NAME.exit.
 */
#ifndef FX_TEST_VERIFY_FIXTURE_H
#define FX_TEST_VERIFY_FIXTURE_H

#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/path.h"
#include "verify/verify.h"

struct fixture {
	struct buf out, err;
	int exit_code;
};

static inline void fixture_path(struct buf *p, const char *name, const char *ext)
{
	const char *top = getenv("FORGEX_TOP");

	buf_reset(p);
	buf_addf(p, "%s/tests/fixtures/verify/%s.%s", top && *top ? top : ".", name, ext);
}

/* Load fixture `name` ("pytest/default"); dies when it is missing. */
static inline void fixture_load(struct fixture *f, const char *name)
{
	struct buf p = BUF_INIT, x = BUF_INIT;

	buf_init(&f->out, 0);
	buf_init(&f->err, 0);
	fixture_path(&p, name, "stdout");
	if (fsutil_read_file(&f->out, p.buf, 0) < 0)
		die("fixture %s: %s", name, err_last());
	fixture_path(&p, name, "stderr");
	if (fsutil_read_file(&f->err, p.buf, 0) < 0)
		die("fixture %s: %s", name, err_last());
	fixture_path(&p, name, "exit");
	if (fsutil_read_file(&x, p.buf, 64) < 0)
		die("fixture %s: %s", name, err_last());
	f->exit_code = atoi(x.buf);
	buf_release(&p);
	buf_release(&x);
}

static inline void fixture_release(struct fixture *f)
{
	buf_release(&f->out);
	buf_release(&f->err);
}

static inline struct verify_output fixture_output(const struct fixture *f)
{
	struct verify_output o;

	memset(&o, 0, sizeof(o));
	o.out = f->out.buf;
	o.out_len = f->out.len;
	o.err = f->err.buf;
	o.err_len = f->err.len;
	o.exit_code = f->exit_code;
	return o;
}

/* Parse fixture `name` into `r` (VERIFY_RESULT_INIT). */
static inline void fixture_parse(struct verify_result *r, const char *name)
{
	struct fixture f;
	struct verify_output o;

	fixture_load(&f, name);
	o = fixture_output(&f);
	verify_parse(r, &o);
	fixture_release(&f);
}

/* The test called `name` in `r`, or NULL. */
static inline const struct verify_test *fixture_find(const struct verify_result *r,
						     const char *name)
{
	size_t i;

	for (i = 0; i < r->tests_nr; i++)
		if (!strcmp(r->tests[i].name, name))
			return &r->tests[i];
	return NULL;
}

#endif
