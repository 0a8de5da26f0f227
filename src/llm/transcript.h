#ifndef FX_TRANSCRIPT_H
#define FX_TRANSCRIPT_H

/*
 * Transcripts: every exchange with a model, appended as one JSON line to a
 * file, with anything that looks like a secret redacted.
 *
 * A line is an object:
 *   {"type": "exchange", "seq": 1, "time": "2024-05-01T10:00:00Z",
 *    "provider": "default", "provider_type": "openai", "base_url": "...",
 *    "model": "...", "stream": true,
 *    "request": {the body sent to /chat/completions},
 *    "response": {"content": "...", "tool_calls": [{"id", "name",
 *                 "arguments"}], "finish_reason": "stop", "model": "...",
 *                 "usage": {...} or null},
 *    "usage": {"prompt_tokens": N, "completion_tokens": N, "total_tokens": N} or null,
 *    "status": "ok" | "error", "error": "message" (on error),
 *    "error_code": "EPROVIDER" (on error), "http_status": 200,
 *    "retries": 0, "elapsed_ms": 1234}
 * The replay provider reads "request", "response", "status" and "error".
 *
 * Redaction (redact_text(), redact_json()) replaces with "[REDACTED]":
 * the registered secret values (the key of each open provider, and the
 * values of variables named *_API_KEY, *_TOKEN, *_SECRET*, *PASSWORD* in
 * the environment), "Authorization:" header values, "Bearer <token>",
 * key-shaped words (sk-..., gsk_..., xai-..., ghp_..., github_pat_...,
 * hf_..., glpat-..., AKIA...), JSON Web Tokens, and the whole value of any
 * JSON member called api_key, apikey, authorization, password, secret or
 * access_token.
 *
 * The caller:
 *   1. transcript_open();
 *   2. transcript_add_secret() for each key in use (provider_open() does);
 *   3. transcript_record() per exchange (provider_chat() does);
 *   4. transcript_free().
 */

#include <jansson.h>

#include "base/buf.h"
#include "base/strvec.h"
#include "llm/provider.h"

struct transcript {
	int fd;
	char *path;
	struct strvec secrets;
	unsigned long seq;	/* exchanges recorded so far */
};

/** One exchange for transcript_record(); all borrowed. */
struct transcript_exchange {
	const char *provider, *provider_type, *base_url, *model;
	int stream;
	const json_t *request;			/* the request body */
	/* NULL, or `request` as sent: jsonx_dump(..., JSON_COMPACT) of it, reused */
	const struct buf *request_text;
	const struct llm_response *response;	/* NULL when the exchange failed */
	int code;				/* 0, or the FX_E* code of the failure */
	const char *error;			/* the failure's message */
	long long started_ms;			/* wall clock, ms since the epoch */
	double elapsed;				/* seconds */
	int retries;
	long http_status;
	long context_window;			/* the window the request was fitted to; 0: none */
};

/**
 * Open `path` for appending (created 0600 with missing folders). Collects
 * the secret-looking environment variables for redaction.
 */
int transcript_open(struct transcript **out, const char *path);

/** Redact `value` wherever it appears from now on (ignored when shorter than 4 bytes). */
void transcript_add_secret(struct transcript *t, const char *value);

/** Append one line for `x`, redacted. Returns 0 or FX_EOS. */
int transcript_record(struct transcript *t, const struct transcript_exchange *x);

/** Close and free `t` (NULL is fine). */
void transcript_free(struct transcript *t);

/**
 * Read the exchanges of a transcript: a new JSON array of its "exchange"
 * objects, in order. FX_ENOTFOUND when the file is missing, FX_EPARSE
 * naming the line of a malformed one.
 */
int transcript_load(json_t **out, const char *path);

/** Push the values of secret-looking variables of `envp` (NULL: environ). */
void redact_collect_env(struct strvec *secrets, const char *const *envp);

/** Append `len` bytes of `s` to `out` with secrets replaced by "[REDACTED]". */
void redact_text(struct buf *out, const char *s, size_t len, const struct strvec *secrets);

/**
 * A redacted copy of `j` (new reference). The top-level container is new;
 * below it, parts that redaction leaves unchanged are shared with `j`, so
 * change only the top level of the result.
 */
json_t *redact_json(const json_t *j, const struct strvec *secrets);

#endif
