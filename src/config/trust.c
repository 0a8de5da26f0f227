#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/fsutil.h"
#include "base/path.h"
#include "base/xdg.h"
#include "config/trust.h"

#define STORE_MAX (4u << 20)
#define STORE_HEADER "# forgex: trusted project files (SHA-256 of the content, then the path).\n" \
		     "# Written by 'forgex trust'; 'forgex trust --revoke DIR' forgets one.\n"

char *trust_store_path(void)
{
	return xdg_path(XDG_DIR_STATE, "forgex/trusted");
}

void trust_entries_free(struct trust_entry *e, size_t nr)
{
	size_t i;

	for (i = 0; i < nr; i++)
		free(e[i].path);
	free(e);
}

static int is_hex64(const char *s)
{
	size_t i;

	for (i = 0; i < SHA256_HEX_LEN; i++)
		if (!strchr("0123456789abcdef", s[i]) || !s[i])
			return 0;
	return 1;
}

static int parse_store(struct trust_entry **out, size_t *nr, const char *path,
		       const char *text, size_t len)
{
	struct trust_entry *e = NULL;
	size_t n = 0, alloc = 0, pos = 0, line = 0;

	while (pos < len) {
		const char *s = text + pos, *nl = memchr(s, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - s) : len - pos;

		line++;
		pos += l + (nl ? 1 : 0);
		if (!l || *s == '#')
			continue;
		if (l < SHA256_HEX_LEN + 3 || s[SHA256_HEX_LEN] != ' ' || !is_hex64(s) ||
		    s[SHA256_HEX_LEN + 1] != '/' || memchr(s, '\0', l)) {
			trust_entries_free(e, n);
			return err_set(FX_EPARSE, "%s:%zu: malformed line (expected '<sha256> <path>'); "
				       "trusting nothing", path, line);
		}
		ALLOC_GROW(e, n + 1, alloc);
		memcpy(e[n].hash, s, SHA256_HEX_LEN);
		e[n].hash[SHA256_HEX_LEN] = '\0';
		e[n].path = xstrndup(s + SHA256_HEX_LEN + 1, l - SHA256_HEX_LEN - 1);
		n++;
	}
	*out = e;
	*nr = n;
	return 0;
}

int trust_load(struct trust_entry **out, size_t *nr)
{
	char *path = trust_store_path();
	struct buf b = BUF_INIT;
	struct stat st;
	int fd, ret;

	*out = NULL;
	*nr = 0;
	if (!path)
		return 0;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		ret = errno == ENOENT ? 0 : err_set_errno(FX_EOS, "cannot read the trust store %s", path);
		goto out;
	}
	if (fstat(fd, &st) < 0) {
		ret = err_set_errno(FX_EOS, "cannot read the trust store %s", path);
	} else if (!S_ISREG(st.st_mode)) {
		ret = err_set(FX_EDENIED, "the trust store %s is not a regular file; trusting nothing", path);
	} else if (st.st_uid != geteuid() && st.st_uid != 0) {
		ret = err_set(FX_EDENIED, "the trust store %s belongs to uid %u, not to you; "
			      "trusting nothing", path, (unsigned)st.st_uid);
	} else if (st.st_mode & 022) {
		ret = err_set(FX_EDENIED, "the trust store %s may be written by others (mode %04o); "
			      "trusting nothing", path, (unsigned)(st.st_mode & 07777));
	} else {
		ret = fsutil_read_fd(&b, fd, STORE_MAX);
		if (ret < 0)
			err_prefix(ret, "the trust store %s", path);
		else
			ret = parse_store(out, nr, path, b.buf, b.len);
	}
	close(fd);
out:
	free(path);
	buf_release(&b);
	return ret;
}

int trust_check(const char *path, const char *hash, int *recorded)
{
	struct trust_entry *e;
	size_t nr, i;
	int ret = trust_load(&e, &nr), hit = 0;

	if (recorded)
		*recorded = 0;
	if (ret < 0)
		return ret;
	for (i = 0; i < nr; i++) {
		if (strcmp(e[i].path, path))
			continue;
		if (!strcmp(e[i].hash, hash))
			hit = 1;
		else if (recorded)
			*recorded = 1;
	}
	trust_entries_free(e, nr);
	return hit;
}

/* Write `e` as the whole store, creating its folder (0700) when missing. */
static int store_write(const struct trust_entry *e, size_t nr)
{
	char *path = trust_store_path();
	struct buf b = BUF_INIT, dir = BUF_INIT;
	size_t i;
	int ret;

	if (!path)
		return err_set(FX_EINVAL, "neither XDG_STATE_HOME nor HOME is set: "
			       "there is nowhere to record trust");
	buf_addstr(&b, STORE_HEADER);
	for (i = 0; i < nr; i++)
		buf_addf(&b, "%s %s\n", e[i].hash, e[i].path);
	path_dirname(&dir, path);
	ret = fsutil_mkdir_p(dir.buf, 0700);
	if (!ret)
		ret = fsutil_write_atomic(path, b.buf, b.len, 0600);
	if (ret < 0)
		err_prefix(ret, "cannot record trust in %s", path);
	free(path);
	buf_release(&b);
	buf_release(&dir);
	return ret;
}

int trust_add(const char *path, const char *hash)
{
	struct trust_entry *e;
	size_t nr, i, keep = 0;
	int ret;

	if (*path != '/' || strchr(path, '\n') || strchr(path, '\r'))
		return err_set(FX_EINVAL, "cannot trust '%s': the path must be absolute and "
			       "hold no line break", path);
	if (strlen(hash) != SHA256_HEX_LEN || !is_hex64(hash))
		BUG("trust_add: bad hash");
	ret = trust_load(&e, &nr);
	if (ret < 0)
		return ret;
	for (i = 0; i < nr; i++) {
		if (!strcmp(e[i].path, path)) {
			free(e[i].path);
			continue;
		}
		e[keep++] = e[i];
	}
	e = xrealloc(e, (keep + 1) * sizeof(*e));
	memcpy(e[keep].hash, hash, SHA256_HEX_LEN + 1);
	e[keep].path = xstrdup(path);
	keep++;
	ret = store_write(e, keep);
	trust_entries_free(e, keep);
	return ret;
}

int trust_revoke(const char *path, int *removed)
{
	struct trust_entry *e;
	size_t nr, i, keep = 0;
	int ret;

	*removed = 0;
	ret = trust_load(&e, &nr);
	if (ret < 0)
		return ret;
	for (i = 0; i < nr; i++) {
		if (!strcmp(e[i].path, path)) {
			free(e[i].path);
			*removed = 1;
			continue;
		}
		e[keep++] = e[i];
	}
	ret = *removed ? store_write(e, keep) : 0;
	trust_entries_free(e, keep);
	return ret;
}
