#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/jsonx.h"
#include "base/path.h"
#include "base/redact.h"
#include "llm/transcript.h"

extern char **environ;

int transcript_open(struct transcript **out, const char *path)
{
	struct transcript *t;
	struct buf dir = BUF_INIT;
	int fd;

	path_dirname(&dir, path);
	if (fsutil_mkdir_p(dir.buf, 0700) < 0) {
		buf_release(&dir);
		return err_prefix(FX_EOS, "cannot create the transcript's folder");
	}
	buf_release(&dir);
	/* a link or FIFO planted in its place is refused, never followed or waited on */
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd < 0)
		return err_set_errno(FX_EOS, "cannot open the transcript '%s'%s", path,
				     errno == ELOOP || errno == ENXIO ? " (not a regular file)" : "");
	{
		struct stat st;

		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			close(fd);
			return err_set(FX_EDENIED, "the transcript '%s' is not a regular file", path);
		}
		fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
	}
	t = xcalloc(1, sizeof(*t));
	t->fd = fd;
	t->path = xstrdup(path);
	strvec_init(&t->secrets);
	redact_collect_env(&t->secrets, NULL);
	*out = t;
	return 0;
}

void transcript_add_secret(struct transcript *t, const char *value)
{
	redact_add(&t->secrets, value);
}

void transcript_free(struct transcript *t)
{
	if (!t)
		return;
	if (t->fd >= 0)
		close(t->fd);
	free(t->path);
	strvec_clear(&t->secrets);
	free(t);
}

static json_t *usage_json(const struct llm_usage *u)
{
	if (!u->present)
		return json_null();
	return json_pack("{s:I, s:I, s:I}", "prompt_tokens", (json_int_t)u->prompt_tokens,
			 "completion_tokens", (json_int_t)u->completion_tokens,
			 "total_tokens", (json_int_t)u->total_tokens);
}

static json_t *str_or_null(const char *s)
{
	return s ? jsonx_string(s) : json_null();
}

/*
 * `red` (an object) as one compact JSON line, the same bytes as
 * jsonx_write_line() would write. A member whose value is `request`
 * itself (redaction left it unchanged, so redact_json() shared it) is
 * written as `request_text` when given: the request was encoded already to
 * be sent, and it is most of the line.
 */
static void encode_line(struct buf *out, const json_t *red, const json_t *request,
			const struct buf *request_text)
{
	const char *key;
	json_t *v;
	int first = 1;

	buf_addch(out, '{');
	json_object_foreach((json_t *)red, key, v) {
		json_t *k = jsonx_string(key);

		if (!first)
			buf_addch(out, ',');
		first = 0;
		jsonx_dump(out, k, JSON_COMPACT);
		json_decref(k);
		buf_addch(out, ':');
		if (request_text && request && v == request)
			buf_addbuf(out, request_text);
		else
			jsonx_dump(out, v, JSON_COMPACT);
	}
	buf_addstr(out, "}\n");
}

int transcript_record(struct transcript *t, const struct transcript_exchange *x)
{
	json_t *j = json_object(), *red;
	struct buf line = BUF_INIT;
	char when[32];
	time_t secs = (time_t)(x->started_ms / 1000);
	int ret;

	if (!j)
		die("out of memory");
	clk_iso8601(when, sizeof(when), secs);
	jsonx_set(j, "type", jsonx_string("exchange"));
	jsonx_set(j, "seq", json_integer((json_int_t)++t->seq));
	jsonx_set(j, "time", jsonx_string(when));
	jsonx_set(j, "provider", str_or_null(x->provider));
	jsonx_set(j, "provider_type", str_or_null(x->provider_type));
	jsonx_set(j, "base_url", str_or_null(x->base_url));
	jsonx_set(j, "model", str_or_null(x->model));
	jsonx_set(j, "stream", json_boolean(x->stream));
	jsonx_set(j, "request", x->request ? json_incref((json_t *)x->request) : json_null());
	if (x->response) {
		jsonx_set(j, "response", llm_response_to_json(x->response));
		jsonx_set(j, "usage", usage_json(&x->response->usage));
	} else {
		jsonx_set(j, "response", json_null());
		jsonx_set(j, "usage", json_null());
	}
	jsonx_set(j, "status", jsonx_string(x->code ? "error" : "ok"));
	if (x->code) {
		jsonx_set(j, "error", jsonx_string(x->error ? x->error : ""));
		jsonx_set(j, "error_code", jsonx_string(err_name(x->code)));
	}
	jsonx_set(j, "http_status", json_integer(x->http_status));
	jsonx_set(j, "retries", json_integer(x->retries));
	if (x->context_window > 0)	/* replay fits its requests to the same window */
		jsonx_set(j, "context_window", json_integer(x->context_window));
	jsonx_set(j, "elapsed_ms", json_integer((json_int_t)(x->elapsed * 1000.0 + 0.5)));
	red = redact_json(j, &t->secrets);
	encode_line(&line, red, x->request, x->request_text);
	ret = fsutil_write_all(t->fd, line.buf, line.len);
	if (ret < 0)
		err_prefix(ret, "cannot write the transcript '%s'", t->path);
	buf_release(&line);
	json_decref(red);
	json_decref(j);
	return ret;
}

int transcript_load(json_t **out, const char *path)
{
	struct buf b = BUF_INIT;
	json_t *arr = NULL;
	size_t pos = 0, line = 0;
	int ret;

	{
		int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		struct stat st;

		if (fd < 0) {
			ret = errno == ENOENT ? err_set(FX_ENOTFOUND, "no such file")
					      : err_set_errno(FX_EOS, "cannot open it");
		} else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			ret = err_set(FX_EDENIED, "not a regular file");
		} else {
			ret = fsutil_read_fd(&b, fd, 1u << 30);
		}
		if (fd >= 0)
			close(fd);
	}
	if (ret < 0) {
		err_prefix(ret, "cannot read the transcript '%s'", path);
		goto out;
	}
	arr = json_array();
	if (!arr)
		die("out of memory");
	while (pos < b.len) {
		const char *nl = memchr(b.buf + pos, '\n', b.len - pos);
		size_t n = nl ? (size_t)(nl - (b.buf + pos)) : b.len - pos;
		json_t *j = NULL;
		size_t k;

		line++;
		for (k = 0; k < n && isspace((unsigned char)b.buf[pos + k]); k++)
			;
		if (k < n) {
			ret = jsonx_parse(&j, b.buf + pos, n, "transcript line");
			if (ret < 0) {
				err_prefix(ret, "%s:%zu", path, line);
				goto out;
			}
			if (json_is_object(j) && !strcmp(jsonx_str(j, "type") ? jsonx_str(j, "type") : "",
							 "exchange")) {
				if (json_array_append_new(arr, j) < 0)
					die("out of memory");
			} else {
				json_decref(j);
			}
		}
		pos += n + 1;
	}
	*out = arr;
	arr = NULL;
	ret = 0;
out:
	json_decref(arr);
	buf_release(&b);
	return ret;
}
