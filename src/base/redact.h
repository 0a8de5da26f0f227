#ifndef FX_REDACT_H
#define FX_REDACT_H

/*
 * The one redactor: everything forgex sends to a model (tool results, and
 * the whole request body as a last line) and everything it records
 * (.forgex/runs/: events.jsonl, transcript.jsonl, plan.json, summary.json,
 * request.txt) goes through it.
 *
 * Replaced with "[REDACTED]":
 *   - secret values: the process-wide ones (redact_register(): the value of
 *     every variable a configured provider's api_key_env names, whatever
 *     its name; redact_register_env(): variables named *_API_KEY, *_TOKEN,
 *     *_ACCESS_KEY, *SECRET*, *PASSWORD*), plus the caller's `secrets`;
 *   - "Authorization:" header values and "Bearer <token>";
 *   - key-shaped words: OpenAI sk-/sk-proj-, GitHub ghp_/gho_/ghu_/ghs_/
 *     ghr_/github_pat_, AWS access key ids AKIA.../ASIA..., Slack xoxb-/
 *     xoxp-/xoxa-/xoxr-/xoxs-/xoxe-/xapp-, Groq gsk_, xAI xai-, Hugging
 *     Face hf_, GitLab glpat-, npm npm_, Stripe sk_live_/pk_live_/rk_live_,
 *     Google AIza (each followed by 16+ letters, digits, '-' or '_' with
 *     at least two of lower case, upper case and digits, as random keys
 *     have and identifiers such as "sk-learn-compatible-estimator" do
 *     not), and JSON Web Tokens;
 *   - the value after "aws_secret_access_key" (any case, '=' or ':');
 *   - PEM private key blocks (BEGIN ... PRIVATE KEY to its END line; a
 *     block cut short is redacted to the end);
 *   - in JSON, the whole value of members called api_key, apikey,
 *     authorization, password, secret, access_token, refresh_token,
 *     client_secret.
 * A value shorter than 4 bytes is never registered (it would redact
 * everything); environment values need 8.
 */

#include <jansson.h>

#include "base/buf.h"
#include "base/strvec.h"

#define REDACTED "[REDACTED]"

/** Redact `value` wherever it appears, in every redaction of this process. */
void redact_register(const char *value);

/** Register the values of secret-looking variables of `envp` (NULL: environ). */
void redact_register_env(const char *const *envp);

/** Add `value` to `secrets` (not when shorter than 4 bytes, or already there). */
void redact_add(struct strvec *secrets, const char *value);

/** Push the values of secret-looking variables of `envp` (NULL: environ) to `secrets`. */
void redact_collect_env(struct strvec *secrets, const char *const *envp);

/** Append `len` bytes of `s` to `out` redacted (`secrets` may be NULL). */
void redact_text(struct buf *out, const char *s, size_t len, const struct strvec *secrets);

/** Redact `b` in place; returns 1 when anything changed. */
int redact_buf(struct buf *b);

/**
 * A redacted copy of `j` (new reference). The top-level container is new;
 * below it, parts that redaction leaves unchanged are shared with `j`, so
 * change only the top level of the result. `secrets` may be NULL.
 */
json_t *redact_json(const json_t *j, const struct strvec *secrets);

#endif
