/*
 * Can the model server of a provider be reached at all? A connection to
 * its host and port (through the proxy curl would use), and nothing sent:
 * a check before a run, cheaper than any request and invisible to the
 * server's logs.
 */
#include <curl/curl.h>

#include "base/err.h"
#include "llm/provider.h"

int provider_reachable(const struct provider_config *pc, long timeout_ms)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	const char *url = pc->base_url ? pc->base_url : "";
	CURLcode res;
	CURL *h;

	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		return err_set(FX_EPROVIDER, "libcurl failed to initialise");
	h = curl_easy_init();
	if (!h) {
		curl_global_cleanup();
		return err_set(FX_EPROVIDER, "libcurl could not create a handle");
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	if (provider_url_is_local(url))
		curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	res = curl_easy_perform(h);
	curl_easy_cleanup(h);
	curl_global_cleanup();
	if (res != CURLE_OK)
		return err_set(FX_EPROVIDER, "cannot reach %s: %s", url,
			       errbuf[0] ? errbuf : curl_easy_strerror(res));
	return 0;
}
