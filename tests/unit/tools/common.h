#ifndef FX_TEST_TOOLS_COMMON_H
#define FX_TEST_TOOLS_COMMON_H

/*
 * What the tools tests share: a workspace in a fresh temporary folder with
 * every built-in tool registered, and calls made the way the agent loop
 * will make them (name + JSON text), so refusals and results are seen as
 * a model would see them. Include after <cmocka.h>.
 */

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/buf.h"
#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/path.h"
#include "helpers/testutil.h"
#include "sandbox/permissions.h"
#include "tools/registry.h"
#include "ws/wspath.h"

struct tt {
	struct tool_registry reg;
	struct tool_ctx ctx;
	char *ws;		/* the workspace (absolute, real) */
	struct buf out;		/* the last result */
	int status;		/* the last status */
};

static inline void tt_setup(struct tt *t)
{
	registry_init(&t->reg);
	if (tools_register_builtin(&t->reg) < 0)
		fail_msg("registering the tools: %s", err_last());
	t->ws = tu_mkdtemp();
	if (tool_ctx_init(&t->ctx, &t->reg, t->ws) < 0)
		fail_msg("tool_ctx_init: %s", err_last());
	buf_init(&t->out, 0);
	t->status = -1;
}

static inline void tt_teardown(struct tt *t)
{
	tool_ctx_release(&t->ctx);
	registry_release(&t->reg);
	buf_release(&t->out);
	tu_rmtree(t->ws);
	t->ws = NULL;
}

/* Call `name` with the JSON text `args` as a role holding `granted`. */
static inline int tt_call(struct tt *t, unsigned granted, const char *name, const char *args)
{
	buf_reset(&t->out);
	t->status = tool_dispatch(&t->ctx, granted, name, args, &t->out);
	return t->status;
}

/* Same with arguments built by json_pack() (stolen). */
static inline int tt_callj(struct tt *t, unsigned granted, const char *name, json_t *args)
{
	struct buf text = BUF_INIT;
	int ret;

	if (!args)
		fail_msg("json_pack failed for %s", name);
	jsonx_dump(&text, args, JSON_COMPACT);
	json_decref(args);
	ret = tt_call(t, granted, name, text.buf);
	buf_release(&text);
	return ret;
}

/* The builder's permissions: everything the tools here need. */
static inline unsigned tt_builder(void)
{
	return permissions_for_role("builder");
}

/* The path of `rel` in the workspace (static buffer, one at a time). */
static inline const char *tt_path(struct tt *t, const char *rel)
{
	static struct buf b = BUF_INIT;

	buf_reset(&b);
	path_join(&b, t->ws, rel);
	return b.buf;
}

#define assert_contains(hay, needle) \
	do { \
		const char *h_ = (hay), *n_ = (needle); \
		if (!strstr(h_, n_)) \
			fail_msg("expected to find \"%s\" in:\n%s", n_, h_); \
	} while (0)

#define assert_not_contains(hay, needle) \
	do { \
		const char *h_ = (hay), *n_ = (needle); \
		if (strstr(h_, n_)) \
			fail_msg("did not expect \"%s\" in:\n%s", n_, h_); \
	} while (0)

#endif
