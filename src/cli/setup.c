/*
 * Writing the user configuration: see setup.h.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "base/buf.h"
#include "base/err.h"
#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/log.h"
#include "base/strvec.h"
#include "base/termsafe.h"
#include "cli/cli.h"
#include "cli/setup.h"
#include "config/config.h"

#define PROBE_MS 500			/* the whole probe, every server at once */
#define PROBE_BODY_MAX (256 * 1024)
#define MODELS_SHOWN 8			/* models listed per server */
#define ANSWER_MAX 1024

/* The usual local servers: base URL (without /v1) and what it is. */
static const struct { const char *url, *what; } usual[] = {
	{ "http://127.0.0.1:11434", "Ollama" },
	{ "http://127.0.0.1:8080", "llama.cpp" },
	{ "http://127.0.0.1:8000", "vLLM" },
	{ "http://127.0.0.1:1234", "LM Studio" },
};

struct server {
	char *base;			/* as given: "http://127.0.0.1:11434" or ".../v1" */
	char *base_url;			/* what the configuration gets: with /v1 */
	const char *what;
	char host[256], port[8], path[512];	/* path: without a trailing '/' */
	struct strvec models;
	int answered;
	pthread_t thread;
	double deadline;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int ms_left(double deadline)
{
	double left = deadline - now_s();

	return left <= 0 ? 0 : (int)(left * 1000) + 1;
}

/* "http://HOST[:PORT][/PATH]" into s; -1 for anything else (https is not probed). */
static int parse_url(struct server *s, const char *url)
{
	const char *p = url + 7, *slash, *colon;
	size_t hl;

	if (strncmp(url, "http://", 7))
		return -1;
	slash = strchr(p, '/');
	if (!slash)
		slash = p + strlen(p);
	colon = memchr(p, ':', (size_t)(slash - p));
	hl = (size_t)((colon ? colon : slash) - p);
	if (!hl || hl >= sizeof(s->host))
		return -1;
	memcpy(s->host, p, hl);
	s->host[hl] = '\0';
	if (colon) {
		size_t pl = (size_t)(slash - colon - 1);

		if (!pl || pl >= sizeof(s->port) || strspn(colon + 1, "0123456789") < pl)
			return -1;
		memcpy(s->port, colon + 1, pl);
		s->port[pl] = '\0';
	} else {
		snprintf(s->port, sizeof(s->port), "80");
	}
	if (strlen(slash) >= sizeof(s->path))
		return -1;
	snprintf(s->path, sizeof(s->path), "%s", slash);
	while (*s->path && s->path[strlen(s->path) - 1] == '/')
		s->path[strlen(s->path) - 1] = '\0';
	return 0;
}

/* A connected socket to s, or -1, by the deadline. */
static int dial(const struct server *s)
{
	struct addrinfo hints, *ai = NULL, *a;
	int fd = -1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	if (getaddrinfo(s->host, s->port, &hints, &ai))
		return -1;
	for (a = ai; a && fd < 0; a = a->ai_next) {
		struct pollfd p;
		int err = 0;
		socklen_t el = sizeof(err);

		fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
			    a->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, a->ai_addr, a->ai_addrlen) < 0 && errno != EINPROGRESS)
			goto next;
		p.fd = fd;
		p.events = POLLOUT;
		if (poll(&p, 1, ms_left(s->deadline)) != 1 ||
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err)
			goto next;
		break;
next:
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

/* GET `path` of s: the body of a 200 answer in `body`, 0; else -1. */
static int http_get(const struct server *s, const char *path, struct buf *body)
{
	struct buf rq = BUF_INIT, in = BUF_INIT;
	const char *end, *cl;
	int fd = dial(s), ret = -1;

	buf_reset(body);
	if (fd < 0)
		return -1;
	buf_addf(&rq, "GET %s HTTP/1.0\r\nHost: %s:%s\r\nAccept: application/json\r\n"
		 "Connection: close\r\n\r\n", path, s->host, s->port);
	if (fsutil_write_all(fd, rq.buf, rq.len) < 0)
		goto out;
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		char chunk[4096];
		ssize_t n;

		if (poll(&p, 1, ms_left(s->deadline)) != 1)
			goto out;
		n = read(fd, chunk, sizeof(chunk));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		buf_add(&in, chunk, (size_t)n);
		if (in.len > PROBE_BODY_MAX)
			goto out;
		end = strstr(in.buf, "\r\n\r\n");
		/* a server that keeps the connection open: the length says when it is all there */
		if (end && (cl = strcasestr(in.buf, "\r\ncontent-length:")) && cl < end &&
		    in.len >= (size_t)(end + 4 - in.buf) + strtoul(cl + 17, NULL, 10))
			break;
	}
	end = strstr(in.buf, "\r\n\r\n");
	if (!end || strncmp(in.buf, "HTTP/1.", 7) || strncmp(in.buf + 8, " 200", 4))
		goto out;
	buf_addstr(body, end + 4);
	ret = 0;
out:
	close(fd);
	buf_release(&rq);
	buf_release(&in);
	return ret;
}

/* The model names of an OpenAI /models ("data"[].id) or Ollama /api/tags ("models"[].name) body. */
static void read_models(struct strvec *out, const struct buf *body)
{
	json_t *j = json_loadb(body->buf, body->len, 0, NULL), *list, *m;
	const char *key = "id";
	size_t i;

	if (!j)
		return;
	list = json_object_get(j, "data");
	if (!json_is_array(list)) {
		list = json_object_get(j, "models");
		key = "name";
	}
	json_array_foreach(list, i, m) {
		const char *name = jsonx_str(m, key);

		if (!name)
			name = jsonx_str(m, "model");
		if (name && *name && strvec_find(out, name) < 0)
			strvec_push(out, name);
	}
	json_decref(j);
}

static void *probe_one(void *arg)
{
	struct server *s = arg;
	struct buf body = BUF_INIT;
	char *path = xstrfmt("%s/models", s->path);
	size_t n = strlen(s->path);

	/* a base URL ending in /v1 lists its models there; a bare server at /v1/models */
	if (n < 3 || strcmp(s->path + n - 3, "/v1")) {
		free(path);
		path = xstrfmt("%s/v1/models", s->path);
	}
	if (http_get(s, path, &body) == 0) {
		s->answered = 1;
		read_models(&s->models, &body);
	}
	if (!s->models.nr) {
		free(path);
		path = xstrfmt("%s/api/tags", s->path);
		if (http_get(s, path, &body) == 0) {
			s->answered = 1;
			read_models(&s->models, &body);
		}
	}
	free(path);
	buf_release(&body);
	return NULL;
}

static void server_init(struct server *s, const char *url, const char *what)
{
	size_t n;

	memset(s, 0, sizeof(*s));
	strvec_init(&s->models);
	s->base = xstrdup(url);
	n = strlen(url);
	while (n && url[n - 1] == '/')
		n--;
	s->base_url = n >= 3 && !strncmp(url + n - 3, "/v1", 3) ? xstrndup(url, n)
								   : xstrfmt("%.*s/v1", (int)n, url);
	s->what = what;
}

static void server_release(struct server *s)
{
	free(s->base);
	free(s->base_url);
	strvec_clear(&s->models);
}

/* Probe every server of FORGEX_SETUP_SERVERS, or the usual ones; `*nr` of them in `*out`. */
static void probe(struct server **out, size_t *nr)
{
	const char *env = getenv("FORGEX_SETUP_SERVERS");
	struct strvec urls = STRVEC_INIT;
	struct server *s;
	double deadline = now_s() + PROBE_MS / 1000.0;
	size_t i, n;

	if (env && *env) {
		char *copy = xstrdup(env), *save = NULL, *w;

		for (w = strtok_r(copy, " ,\t\n", &save); w; w = strtok_r(NULL, " ,\t\n", &save))
			strvec_push(&urls, w);
		free(copy);
	} else {
		for (i = 0; i < ARRAY_SIZE(usual); i++)
			strvec_push(&urls, usual[i].url);
	}
	n = urls.nr;
	s = xcalloc(n ? n : 1, sizeof(*s));
	for (i = 0; i < n; i++) {
		const char *what = "a server";
		size_t k;

		for (k = 0; k < ARRAY_SIZE(usual); k++)
			if (!strcmp(urls.v[i], usual[k].url))
				what = usual[k].what;
		server_init(&s[i], urls.v[i], what);
		s[i].deadline = deadline;
		if (parse_url(&s[i], urls.v[i]) < 0 ||
		    pthread_create(&s[i].thread, NULL, probe_one, &s[i]))
			s[i].deadline = 0;	/* not probed */
	}
	for (i = 0; i < n; i++)
		if (s[i].deadline)
			pthread_join(s[i].thread, NULL);
	strvec_clear(&urls);
	*out = s;
	*nr = n;
}

/* ---- asking ------------------------------------------------------------- */

/* One line from stdin, trimmed; -1 at its end. */
static int ask(const char *question, struct buf *answer)
{
	char line[ANSWER_MAX];

	fputs(question, stderr);
	fflush(stderr);
	buf_reset(answer);
	if (!fgets(line, sizeof(line), stdin)) {
		fputc('\n', stderr);
		return -1;
	}
	buf_addstr(answer, line);
	buf_trim(answer);
	return 0;
}

static int valid_env_name(const char *s)
{
	size_t i;

	if (!*s || (*s >= '0' && *s <= '9'))
		return 0;
	for (i = 0; s[i]; i++)
		if (!(s[i] == '_' || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
		      (s[i] >= '0' && s[i] <= '9')))
			return 0;
	return 1;
}

static int printable(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return 0;
	return 1;
}

/* Check what is to be written; FX_EINVAL naming the bad value. */
static int check_values(const char *url, const char *model, const char *key_env)
{
	if (!url || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)) || !printable(url))
		return err_set(FX_EINVAL, "the base URL must start with http:// or https:// (got "
			       "'%s')", url ? url : "");
	if (!model || !*model || !printable(model))
		return err_set(FX_EINVAL, "a model name is required");
	if (key_env && *key_env && !valid_env_name(key_env))
		return err_set(FX_EINVAL, "'%s' is not an environment variable name (letters, digits "
			       "and _; the NAME of the variable, not the key)", key_env);
	return 0;
}

/* Pick a server and a model, or type them: 0 with url/model/key filled, -1 when the person gave up. */
static int choose(struct buf *url, struct buf *model, struct buf *key_env)
{
	struct server *s;
	struct buf a = BUF_INIT;
	size_t nr, i, k, shown = 0, *idx;
	int ret = -1;

	fputs("Looking for model servers on this machine ...\n", stderr);
	probe(&s, &nr);
	idx = xcalloc(nr ? nr : 1, sizeof(*idx));
	for (i = 0; i < nr; i++) {
		if (!s[i].answered)
			continue;
		idx[shown++] = i;
		cli_printf(stderr, "  %zu. %s at %s: ", shown, s[i].what, s[i].base_url);
		for (k = 0; k < s[i].models.nr && k < MODELS_SHOWN; k++)
			cli_printf(stderr, "%s%s", k ? ", " : "", s[i].models.v[k]);
		if (!s[i].models.nr)
			fputs("(it lists no models)", stderr);
		else if (s[i].models.nr > MODELS_SHOWN)
			fprintf(stderr, " and %zu more", s[i].models.nr - MODELS_SHOWN);
		fputc('\n', stderr);
	}
	if (!shown) {
		fputs("No model server answered (", stderr);
		for (i = 0; i < nr; i++)
			cli_printf(stderr, "%s%s", i ? ", " : "", s[i].base);
		fputs(").\n", stderr);
	}
	for (;;) {
		char *q = shown ? xstrfmt("Which one? [1-%zu, u: another URL, q: quit] ", shown)
				: xstrdup("Base URL of an OpenAI-compatible server (e.g. "
					  "https://api.openai.com/v1; empty: quit): ");
		int r = ask(q, &a);

		free(q);
		if (r < 0 || (!shown && !a.len) || !strcmp(a.buf, "q"))
			goto out;
		if (!shown || !strcmp(a.buf, "u")) {
			if (shown && (ask("Base URL (e.g. https://api.openai.com/v1): ", &a) < 0 ||
				      !a.len))
				goto out;
			if (check_values(a.buf, "m", NULL) < 0) {
				cli_printf(stderr, "%s\n", err_last());
				continue;
			}
			buf_addbuf(url, &a);
			if (ask("Model name: ", model) < 0 || !model->len)
				goto out;
			for (;;) {
				if (ask("Name of the environment variable that holds its API key "
					"(empty: none): ", key_env) < 0)
					goto out;
				if (!key_env->len || valid_env_name(key_env->buf))
					break;
				fputs("That is not a variable name (letters, digits and _): the "
				      "variable's NAME, never the key itself.\n", stderr);
			}
			ret = 0;
			goto out;
		}
		k = strtoul(a.buf, NULL, 10);
		if (strspn(a.buf, "0123456789") == a.len && k >= 1 && k <= shown)
			break;
	}
	i = idx[k - 1];
	buf_addstr(url, s[i].base_url);
	if (s[i].models.nr == 1) {
		buf_addstr(model, s[i].models.v[0]);
	} else if (s[i].models.nr > 1) {
		for (k = 0; k < s[i].models.nr; k++)
			cli_printf(stderr, "  %zu. %s\n", k + 1, s[i].models.v[k]);
		for (;;) {
			if (ask("Which model? [1] ", &a) < 0)
				goto out;
			k = a.len ? strtoul(a.buf, NULL, 10) : 1;
			if (strspn(a.buf, "0123456789") == a.len && k >= 1 && k <= s[i].models.nr)
				break;
		}
		buf_addstr(model, s[i].models.v[k - 1]);
	} else if (ask("Model name: ", model) < 0 || !model->len) {
		goto out;
	}
	ret = 0;
out:
	for (i = 0; i < nr; i++)
		server_release(&s[i]);
	free(s);
	free(idx);
	buf_release(&a);
	return ret;
}

/* ---- writing ------------------------------------------------------------ */

/* A TOML basic string. */
static void add_toml_string(struct buf *out, const char *s)
{
	buf_addch(out, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			buf_addch(out, '\\');
		buf_addch(out, *s);
	}
	buf_addch(out, '"');
}

static int write_file(const char *path, const char *url, const char *model, const char *key_env)
{
	struct buf t = BUF_INIT;
	char *dir = xstrdup(path), *slash = strrchr(dir, '/');
	int ret;

	buf_addstr(&t, "# forgex's user configuration, written by 'forgex config init --user'.\n"
		   "# A project's .forgex/config.toml ('forgex init') and the environment\n"
		   "# override it; 'forgex config show' shows every key and where it came from.\n"
		   "\n[providers.default]\nbase_url = ");
	add_toml_string(&t, url);
	buf_addstr(&t, "\nmodel = ");
	add_toml_string(&t, model);
	buf_addch(&t, '\n');
	if (key_env && *key_env) {
		buf_addstr(&t, "# the NAME of the variable holding the key; the key is never written here\n"
			   "api_key_env = ");
		add_toml_string(&t, key_env);
		buf_addch(&t, '\n');
	}
	if (slash)
		*slash = '\0';
	ret = slash ? fsutil_mkdir_p(dir, 0700) : 0;
	if (ret >= 0)
		ret = fsutil_write_atomic(path, t.buf, t.len, 0600);
	/* a file replaced keeps its mode: this one holds where the keys go */
	if (ret >= 0 && chmod(path, 0600) < 0)
		ret = err_set_errno(FX_EOS, "cannot make %s private", path);
	free(dir);
	buf_release(&t);
	return ret;
}

int setup_user_config(const struct setup_opts *o)
{
	struct buf url = BUF_INIT, model = BUF_INIT, key = BUF_INIT, a = BUF_INIT;
	char *path = config_user_file();
	int status = EXIT_USAGE;

	if (!path) {
		log_error("no user configuration folder: neither XDG_CONFIG_HOME nor HOME is an "
			  "absolute path");
		return EXIT_USAGE;
	}
	if (o->first_run)
		cli_printf(stderr, "forgex: no configuration yet, and no model server answers where "
			   "the defaults point. Let's write %s.\n", path);
	if (fsutil_exists(path) && !o->force) {
		if (!o->interactive) {
			cli_printf(stderr, "forgex: %s exists; --force replaces it\n", path);
			goto out;
		}
		cli_printf(stderr, "%s exists.\n", path);
		if (ask("Replace it? [y/N] ", &a) < 0 || (strcmp(a.buf, "y") && strcmp(a.buf, "yes"))) {
			fputs("forgex: left as it is\n", stderr);
			goto out;
		}
	}
	if (o->base_url || !o->interactive) {
		if (!o->base_url || !o->model) {
			log_error("config init --user: %s needed (off a terminal nothing is asked): "
				  "--base-url URL --model NAME [--api-key-env NAME]",
				  !o->base_url ? "--base-url is" : "--model is");
			goto out;
		}
		buf_addstr(&url, o->base_url);
		buf_addstr(&model, o->model);
		buf_addstr(&key, o->api_key_env ? o->api_key_env : "");
	} else if (choose(&url, &model, &key) < 0) {
		fputs("forgex: nothing written\n", stderr);
		goto out;
	}
	if (check_values(url.buf, model.buf, key.buf) < 0) {
		cli_print_error();
		goto out;
	}
	if (write_file(path, url.buf, model.buf, key.buf) < 0) {
		cli_print_error();
		status = EXIT_FAIL;
		goto out;
	}
	cli_printf(stderr, "forgex: wrote %s: model %s at %s%s%s%s\n", path, model.buf, url.buf,
		   key.len ? ", key from $" : "", key.buf, key.len && !getenv(key.buf) ?
		   " (not set in this shell)" : "");
	status = EXIT_OK;
out:
	free(path);
	buf_release(&url);
	buf_release(&model);
	buf_release(&key);
	buf_release(&a);
	return status;
}

int setup_is_first_run(struct config *cfg, const char *provider)
{
	struct buf v = BUF_INIT, key = BUF_INIT;
	enum cfg_origin origin = CFG_FLAG;
	char *path = config_user_file();
	int first;

	buf_addf(&key, "providers.%s.base_url", provider ? provider : "default");
	first = path && !fsutil_exists(path) && config_get(cfg, key.buf, &v, &origin) == 0 &&
		origin == CFG_DEFAULT;
	free(path);
	buf_release(&v);
	buf_release(&key);
	return first;
}
