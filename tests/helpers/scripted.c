/*
 * End-to-end helpers for scripted runs (see scripted.h).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/jsonx.h"
#include "helpers/scripted.h"
#include "mockllm/mockctl.h"

static int next_call = 1;

char *sc_next_id(void)
{
	return xstrfmt("call_%d", next_call);
}

void sc_call(json_t *steps, const char *name, const char *args)
{
	json_t *a = NULL;
	char id[32];

	if (jsonx_parse(&a, args, strlen(args), "step"))
		fail_msg("bad arguments in a test script: %s", args);
	snprintf(id, sizeof(id), "call_%d", next_call++);
	json_array_append_new(steps, json_pack("{s:[{s:s, s:s, s:o}]}", "tool_calls", "id", id,
					       "name", name, "arguments", a));
}

char *sc_script(json_t *steps)
{
	struct buf b = BUF_INIT;
	json_t *s = json_pack("{s:o}", "steps", steps);

	jsonx_dump(&b, s, 0);
	json_decref(s);
	return buf_detach(&b, NULL);
}

json_t *sc_chat_requests(const struct mock *m)
{
	json_t *all = mock_requests(m), *out = json_array(), *r;
	size_t i;

	json_array_foreach(all, i, r) {
		const char *path = jsonx_str(r, "path");

		if (path && strstr(path, "/chat/completions"))
			json_array_append(out, json_object_get(r, "body"));
	}
	json_decref(all);
	return out;
}

const char *sc_tool_result(json_t *reqs, const char *id)
{
	size_t i, j;
	json_t *body, *msg;

	json_array_foreach(reqs, i, body) {
		json_array_foreach(json_object_get(body, "messages"), j, msg) {
			const char *role = jsonx_str(msg, "role"), *cid = jsonx_str(msg, "tool_call_id");

			if (role && !strcmp(role, "tool") && cid && !strcmp(cid, id))
				return jsonx_str(msg, "content");
		}
	}
	return NULL;
}

int sc_model_saw(const struct mock *m, const char *needle)
{
	json_t *reqs = sc_chat_requests(m), *body, *msg;
	size_t i, j;
	int found = 0;

	json_array_foreach(reqs, i, body) {
		json_array_foreach(json_object_get(body, "messages"), j, msg) {
			const char *c = jsonx_str(msg, "content");

			found |= c && strstr(c, needle) != NULL;
		}
	}
	json_decref(reqs);
	return found;
}

char *sc_tools_of(json_t *reqs, size_t n)
{
	struct buf b = BUF_INIT;
	json_t *t;
	size_t i;

	json_array_foreach(json_object_get(json_array_get(reqs, n), "tools"), i, t)
		buf_addf(&b, "%s ", jsonx_str(json_object_get(t, "function"), "name"));
	return buf_detach(&b, NULL);
}

char *sc_provider_toml(const struct mock *m, const char *mode)
{
	return xstrfmt("[providers.default]\nbase_url = \"%s\"\nmodel = \"mock-model\"\n"
		       "api_key_env = \"FX_E2E_NO_KEY\"\nmax_retries = 0\ntimeout_seconds = 30\n"
		       "[permissions]\nmode = \"%s\"\n",
		       m ? m->base_url : "http://127.0.0.1:9/v1", mode);
}

void sc_proj_config(struct sc_proj *p, const struct mock *m, const char *mode, const char *more)
{
	char *prov = sc_provider_toml(m, mode), *cfg = xstrfmt("%s%s", prov, more ? more : "");

	tu_write(p->home, "forgex/config.toml", cfg);
	free(cfg);
	free(prov);
}

void sc_proj_init(struct sc_proj *p, const struct mock *m, const char *mode, const char *more)
{
	memset(p, 0, sizeof(*p));
	p->dir = tu_mkdtemp();
	p->home = tu_mkdtemp();
	sc_proj_config(p, m, mode, more);
	tu_write(p->dir, "calc.py", "def add(a, b):\n    return a + b\n");
	tu_write(p->dir, "test_calc.py", "import unittest\nfrom calc import add\n\n\n"
		 "class T(unittest.TestCase):\n    def test_add(self):\n"
		 "        self.assertEqual(add(2, 3), 5)\n");
	tu_write(p->dir, ".gitignore", "__pycache__/\n");
	tu_write(p->dir, ".forgex/config.toml",
		 "[pipeline]\ntest_command = [\"python3\", \"-m\", \"unittest\"]\n");
	tu_git_init(p->dir);
	p->env_home = xstrfmt("HOME=%s", p->home);
	p->env_xdg = xstrfmt("XDG_CONFIG_HOME=%s", p->home);
	p->env[0] = p->env_home;
	p->env[1] = p->env_xdg;
	p->env_nr = 2;
}

void sc_proj_env(struct sc_proj *p, const char *kv)
{
	if (p->env_nr + 1 >= sizeof(p->env) / sizeof(p->env[0]))
		fail_msg("too many environment variables for a test project");
	p->env[p->env_nr++] = kv;
	p->env[p->env_nr] = NULL;
}

void sc_proj_release(struct sc_proj *p)
{
	tu_rmtree(p->dir);
	tu_rmtree(p->home);
	free(p->env_home);
	free(p->env_xdg);
	memset(p, 0, sizeof(*p));
}

void sc_forgex(struct tu_result *r, const struct sc_proj *p, const char *const *args)
{
	struct strvec argv = STRVEC_INIT;
	char *abs = realpath(tu_forgex(), NULL);

	strvec_push(&argv, abs ? abs : tu_forgex());
	free(abs);
	strvec_pushv(&argv, args);
	tu_run(r, (const char *const *)argv.v, p->dir, p->env, NULL);
	strvec_clear(&argv);
}
