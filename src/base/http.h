#ifndef FX_BASE_HTTP_H
#define FX_BASE_HTTP_H

/*
 * The one place forgex sets up a libcurl handle: the model providers
 * (src/llm/) and the MCP Streamable HTTP transport (src/mcp/) both start
 * here, so that the process-wide initialisation happens once and every
 * request carries the same defaults.
 *
 * The caller:
 *   1. http_easy_new() with the URL (it calls http_global_init());
 *   2. adds what is its own: method and body, headers (http_header_add(),
 *      http_header_bearer()), write and header callbacks (http_collect()
 *      for a capped body), timeouts;
 *   3. curl_easy_perform(), or a multi handle; a failure is described by
 *      http_strerror();
 *   4. curl_easy_cleanup() and curl_slist_free_all().
 *
 * Only programs linked with libcurl may use this (forgex-core and the
 * tests; never the light launcher build/forgex: see the Makefile). The
 * SSE parser for streamed bodies is beside it, in base/sse.h; it needs no
 * libcurl.
 */

#include <curl/curl.h>

#include "base/buf.h"

/**
 * curl_global_init() once for the process, whichever thread asks first.
 * Returns 0, or FX_EOS "libcurl failed to initialise: ..." (every later
 * call answers the same).
 */
int http_global_init(void);

/**
 * A new easy handle with forgex's defaults: `url` (may be NULL: set it
 * later), no signals (CURLOPT_NOSIGNAL: a timeout never raises SIGALRM in
 * a threaded program), the user agent "forgex/VERSION", the http and
 * https protocols only, curl's error text into `errbuf` (CURL_ERROR_SIZE
 * bytes; may be NULL), and no proxy for a URL on this machine
 * (http_url_is_local()): a local server is never reached through a proxy.
 * Redirects are not followed (curl's default). Returns 0, or FX_EOS when
 * libcurl cannot be initialised or has no memory for a handle.
 */
int http_easy_new(CURL **out, const char *url, char *errbuf);

/** Whether `url`'s host is 127.0.0.0/8, localhost or ::1 (a local server). */
int http_url_is_local(const char *url);

/** Append the header line "Name: value" to `*list` (dies when out of memory). */
void http_header_add(struct curl_slist **list, const char *line);

/**
 * Append "Authorization: Bearer TOKEN" to `*list`; the copy made on the
 * way is wiped (the list itself holds the token: never log it).
 */
void http_header_bearer(struct curl_slist **list, const char *token);

/**
 * A CURLOPT_WRITEFUNCTION appending to the `struct buf *` in
 * CURLOPT_WRITEDATA with buf_add_capped(): a body over the buffer's cap
 * stops the transfer (CURLE_WRITE_ERROR).
 */
size_t http_collect(char *ptr, size_t size, size_t nmemb, void *buf);

/** What went wrong: `errbuf` when curl wrote one, else curl_easy_strerror(rc). Borrowed. */
const char *http_strerror(CURLcode rc, const char *errbuf);

#endif
