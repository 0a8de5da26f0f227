/*
 * Can the model server of a provider be reached at all? A connection to
 * its host and port (through the proxy curl would use), and nothing sent:
 * a check before a run, cheaper than any request and invisible to the
 * server's logs.
 */
#include "base/err.h"
#include "base/http.h"
#include "llm/provider.h"

int provider_reachable(const struct provider_config *pc, long timeout_ms)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	const char *url = pc->base_url ? pc->base_url : "";
	CURLcode res;
	CURL *h;

	if (http_easy_new(&h, url, errbuf) < 0)
		return err_prefix(FX_EPROVIDER, "cannot reach %s", url);
	curl_easy_setopt(h, CURLOPT_CONNECT_ONLY, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
	res = curl_easy_perform(h);
	curl_easy_cleanup(h);
	if (res != CURLE_OK)
		return err_set(FX_EPROVIDER, "cannot reach %s: %s", url, http_strerror(res, errbuf));
	return 0;
}
