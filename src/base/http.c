/* forgex's libcurl defaults, set up once (see http.h). */
#include <ctype.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/err.h"
#include "base/http.h"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_code;

static void curl_global_once(void)
{
	curl_init_code = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int http_global_init(void)
{
	pthread_once(&curl_once, curl_global_once);
	if (curl_init_code != CURLE_OK)
		return err_set(FX_EOS, "libcurl failed to initialise: %s",
			       curl_easy_strerror(curl_init_code));
	return 0;
}

int http_easy_new(CURL **out, const char *url, char *errbuf)
{
	int ret = http_global_init();
	CURL *h;

	if (ret < 0)
		return ret;
	h = curl_easy_init();
	if (!h)
		return err_set(FX_EOS, "libcurl could not create a handle");
	if (url)
		curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "forgex/" FX_VERSION);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	if (errbuf) {
		errbuf[0] = '\0';
		curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	}
	if (url && http_url_is_local(url))
		curl_easy_setopt(h, CURLOPT_NOPROXY, "*");
	*out = h;
	return 0;
}

int http_url_is_local(const char *url)
{
	const char *h = strstr(url, "://"), *end;
	size_t n;

	h = h ? h + 3 : url;
	/* skip "user:pass@" */
	end = h + strcspn(h, "/?#");
	{
		const char *at = memchr(h, '@', (size_t)(end - h));

		if (at)
			h = at + 1;
	}
	if (*h == '[') {
		end = strchr(h, ']');
		if (!end)
			return 0;
		n = (size_t)(end - h - 1);
		return (n == 3 && !memcmp(h + 1, "::1", 3)) ||
		       (n == 16 && !strncasecmp(h + 1, "::ffff:127.0.0.1", 16));
	}
	n = strcspn(h, ":/?#");
	if (n == 9 && !strncasecmp(h, "localhost", 9))
		return 1;
	if (n > 4 && !memcmp(h, "127.", 4)) {
		size_t i;

		for (i = 4; i < n; i++)
			if (!isdigit((unsigned char)h[i]) && h[i] != '.')
				return 0;
		return 1;
	}
	return 0;
}

void http_header_add(struct curl_slist **list, const char *line)
{
	struct curl_slist *n = curl_slist_append(*list, line);

	if (!n)
		die("out of memory");
	*list = n;
}

void http_header_bearer(struct curl_slist **list, const char *token)
{
	char *line = xstrfmt("Authorization: Bearer %s", token);

	http_header_add(list, line);
	explicit_bzero(line, strlen(line));
	free(line);
}

size_t http_collect(char *ptr, size_t size, size_t nmemb, void *buf)
{
	return buf_add_capped(buf, ptr, size * nmemb) < 0 ? 0 : size * nmemb;
}

const char *http_strerror(CURLcode rc, const char *errbuf)
{
	return errbuf && errbuf[0] ? errbuf : curl_easy_strerror(rc);
}
