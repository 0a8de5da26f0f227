/*
 * forgex doctor, "Providers": for each [providers.NAME], whether its server
 * answers GET {base_url}/models, whether it lists the configured model,
 * and whether the key variable is set where a key is needed (any host but
 * 127.0.0.1, localhost and ::1). A replay provider is checked by loading
 * its transcript.
 */
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/http.h"
#include "base/path.h"
#include "cli/cli.h"
#include "cli/doctor.h"
#include "llm/provider.h"
#include "llm/transcript.h"

/* How long doctor waits for each server. */
#define DOCTOR_TIMEOUT_MS 3000

static void check_replay(struct doctor *d, const struct provider_config *pc, const char *what,
			 const char *workspace)
{
	struct buf path = BUF_INIT;
	json_t *x = NULL;

	if (!pc->transcript || !*pc->transcript) {
		doctor_item(d, DOCTOR_FAIL, what, "type \"replay\" needs transcript = \"FILE\"");
		return;
	}
	if (pc->transcript[0] != '/' && workspace)
		path_join(&path, workspace, pc->transcript);
	else
		buf_addstr(&path, pc->transcript);
	if (transcript_load(&x, path.buf) < 0)
		doctor_item(d, DOCTOR_FAIL, what, "%s", err_last());
	else
		doctor_item(d, json_array_size(x) ? DOCTOR_OK : DOCTOR_WARN, what,
			    "replays %zu recorded exchange%s from %s (%s)", json_array_size(x),
			    json_array_size(x) == 1 ? "" : "s", path.buf,
			    pc->replay_mode && *pc->replay_mode ? pc->replay_mode : "strict");
	json_decref(x);
	buf_release(&path);
}

/* "a, b, c" for at most `max` of the models, and "... (N in all)" beyond. */
static void list_some(struct buf *out, const struct strvec *models, size_t max)
{
	size_t i;

	for (i = 0; i < models->nr && i < max; i++)
		buf_addf(out, "%s%s", i ? ", " : "", models->v[i]);
	if (models->nr > max)
		buf_addf(out, ", ... (%zu in all)", models->nr);
}

static void check_openai(struct doctor *d, const struct config *cfg,
			 const struct provider_config *pc, const char *name)
{
	const char *url = pc->base_url ? pc->base_url : "";
	const char *var = pc->api_key_env ? pc->api_key_env : "";
	const char *key = *var ? getenv(var) : NULL;
	int local = http_url_is_local(url), has_key = key && *key;
	struct strvec models = STRVEC_INIT;
	struct buf what = BUF_INIT, some = BUF_INIT;

	/* the key: needed for anything that is not this machine */
	buf_addf(&what, "%s: key", name);
	if (has_key)
		doctor_item(d, DOCTOR_OK, what.buf, "$%s is set", var);
	else if (local)
		doctor_item(d, DOCTOR_OK, what.buf, "none needed for a local server%s%s%s",
			    *var ? " ($" : "", var, *var ? " is not set)" : "");
	else if (!*var)
		doctor_item(d, DOCTOR_FAIL, what.buf, "%s is not a local server, but no key "
			    "variable is configured (set providers.%s.api_key_env)", url, name);
	else
		doctor_item(d, DOCTOR_FAIL, what.buf, "$%s is not set; %s is not a local server "
			    "and needs a key", var, url);
	if (!local && !has_key)
		goto out;	/* asking without a key would only say 401 */

	/* the server and the model */
	buf_reset(&what);
	buf_addf(&what, "%s: server", name);
	if (provider_list_models(&models, pc, DOCTOR_TIMEOUT_MS) < 0) {
		const char *e = err_last();

		/*
		 * Nothing answering is a warning: nothing is wrong with this
		 * machine or the configuration; the server may not be running
		 * yet. A server that answers "no" is a failure: the key or the
		 * address is wrong, and every run would fail.
		 */
		if (!strncmp(e, "cannot reach", 12))
			doctor_item(d, DOCTOR_WARN, what.buf, "%s", e);
		else if (strstr(e, "HTTP 401") || strstr(e, "HTTP 403"))
			doctor_item(d, DOCTOR_FAIL, what.buf, "%s: the server refused the key; set $%s "
				    "to a valid key", e, *var ? var : "(providers.NAME.api_key_env)");
		else if (strstr(e, "HTTP 404"))
			doctor_item(d, DOCTOR_FAIL, what.buf, "%s: no model server at this address; "
				    "is providers.%s.base_url right (it usually ends in /v1)?", e, name);
		else
			doctor_item(d, DOCTOR_FAIL, what.buf, "%s", e);
		goto out;
	}
	doctor_item(d, DOCTOR_OK, what.buf, "%s answers (%zu model%s listed)", url, models.nr,
		    models.nr == 1 ? "" : "s");
	buf_reset(&what);
	buf_addf(&what, "%s: model", name);
	if (!pc->model || !*pc->model) {
		doctor_item(d, DOCTOR_FAIL, what.buf, "no model is configured (set providers.%s.model)",
			    name);
	} else if (strvec_find(&models, pc->model) >= 0) {
		doctor_item(d, DOCTOR_OK, what.buf, "%s is available", pc->model);
	} else if (!models.nr) {
		doctor_item(d, DOCTOR_WARN, what.buf, "%s lists no models; cannot tell whether %s "
			    "is available", url, pc->model);
	} else {
		list_some(&some, &models, 8);
		doctor_item(d, DOCTOR_FAIL, what.buf, "%s is not among the models %s lists: %s",
			    pc->model, url, some.buf);
	}
	/* the window requests are fitted to, and whether the server would cut them */
	if (cfg) {
		struct provider *p = NULL;

		buf_reset(&what);
		buf_addf(&what, "%s: context window", name);
		if (provider_open(&p, cfg, name, NULL) == 0) {
			const char *source = NULL, *warning = NULL;
			long w = provider_context_window(p, &source, &warning);

			if (warning)
				doctor_item(d, DOCTOR_WARN, what.buf, "%s", warning);
			else
				doctor_item(d, DOCTOR_OK, what.buf, "%ld tokens (%s)", w, source);
			provider_free(p);
		} else {
			err_clear();
		}
	}
out:
	strvec_clear(&models);
	buf_release(&what);
	buf_release(&some);
}

void doctor_llm(struct doctor *d, const struct config *cfg)
{
	size_t i;

	doctor_section(d, "Providers");
	if (!cfg) {
		doctor_item(d, DOCTOR_INFO, "providers", "not checked: the configuration did not load");
		return;
	}
	if (!cfg->providers_nr) {
		doctor_item(d, DOCTOR_FAIL, "providers", "none configured (add [providers.default])");
		return;
	}
	for (i = 0; i < cfg->providers_nr; i++) {
		const struct provider_config *pc = &cfg->providers[i];
		const char *name = pc->name ? pc->name : "?";

		if (pc->type && !strcmp(pc->type, "replay"))
			check_replay(d, pc, name, cfg->workspace);
		else
			check_openai(d, cfg, pc, name);
	}
}
