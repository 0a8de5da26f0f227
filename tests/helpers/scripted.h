#ifndef FX_TEST_SCRIPTED_H
#define FX_TEST_SCRIPTED_H

/*
 * End-to-end helpers for runs against build/mockllm: scripting the
 * model's tool calls, reading back what the model was sent, and a test
 * project whose providers, permission mode and other trusted settings live
 * in a user configuration file of its own (HOME and XDG_CONFIG_HOME point
 * at a temporary folder), as a user who has not trusted a project file
 * would have them.
 */

#include <jansson.h>

#include "helpers/testutil.h"

struct mock;

/** Append a step calling tool `name` with `args` (JSON text); ids are "call_1", "call_2", ... */
void sc_call(json_t *steps, const char *name, const char *args);
/** The id the next sc_call() will use. */
char *sc_next_id(void);
/** The script {"steps": steps} as text (takes `steps`; caller frees). */
char *sc_script(json_t *steps);
/** The bodies of the chat requests `m` received, in order (new reference). */
json_t *sc_chat_requests(const struct mock *m);
/** The content the model was sent as the result of call `id` (borrowed from `reqs`), or NULL. */
const char *sc_tool_result(json_t *reqs, const char *id);
/** Whether any message `m` received holds `needle`. */
int sc_model_saw(const struct mock *m, const char *needle);
/** The tool names offered in chat request `n` of `reqs`, each followed by a space (caller frees). */
char *sc_tools_of(json_t *reqs, size_t n);

/**
 * The configuration text naming the mock `m` (NULL: a port nobody
 * listens on) as provider, with no retries, and [permissions] mode =
 * `mode` (caller frees).
 */
char *sc_provider_toml(const struct mock *m, const char *mode);

/** A git repository with a passing Python test, and a user configuration in `home`. */
struct sc_proj {
	char *dir, *home;
	char *env_home, *env_xdg;
	const char *env[8];		/* HOME, XDG_CONFIG_HOME, then sc_proj_env() additions */
	size_t env_nr;
};

/**
 * Make the project; the user file gets the mock as provider (`m` may be
 * NULL), [permissions] mode = `mode`, and `more` appended.
 */
void sc_proj_init(struct sc_proj *p, const struct mock *m, const char *mode, const char *more);
/** Rewrite the user file the same way (e.g. for a new mock). */
void sc_proj_config(struct sc_proj *p, const struct mock *m, const char *mode, const char *more);
/** Add "NAME=value" to the environment of forgex (borrowed; at most 5). */
void sc_proj_env(struct sc_proj *p, const char *kv);
void sc_proj_release(struct sc_proj *p);

/** Run build/forgex `args` (NULL-terminated) in the project with its environment. */
void sc_forgex(struct tu_result *r, const struct sc_proj *p, const char *const *args);

#define SC_FORGEX(r, p, ...) \
	do { \
		const char *a_[] = { __VA_ARGS__, NULL }; \
		sc_forgex((r), (p), a_); \
	} while (0)

#endif
