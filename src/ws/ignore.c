#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/path.h"
#include "ws/ignore.h"

/*
 * A larger file of rules is read up to here (git reads it all; vcs/ used
 * to skip such a file whole, tools/ to keep its first 4 MiB).
 */
#define RULES_FILE_MAX ((size_t)16 << 20)

enum {
	PAT_NEGATE = 1 << 0,
	PAT_DIRONLY = 1 << 1,
	PAT_BASENAME = 1 << 2,	/* no slash: match the last component only */
	PAT_LITERAL = 1 << 3,	/* no wildcard: compare bytes */
	PAT_ENDSWITH = 1 << 4,	/* "*literal" on a basename: compare the end */
};

struct pattern {
	char *text;		/* without "!", the anchoring "/" and the trailing "/" */
	size_t len;
	unsigned flags;
};

struct ignore_rules {
	char *base;
	size_t baselen;
	char *prefix;		/* a file for the whole work tree: the workspace below its top */
	size_t prefixlen;
	struct pattern *v;
	size_t nr, alloc;
};

/* ---- wildmatch ---- */

enum { WM_MATCH, WM_NOMATCH, WM_ABORT_ALL, WM_ABORT_TO_STARSTAR };

static int special(char c)
{
	return c == '*' || c == '?' || c == '[' || c == '\\';
}

static int class_match(const char *name, size_t n, unsigned char c, int *known)
{
	static const struct {
		const char *name;
		int (*fn)(int);
	} classes[] = {
		{ "alnum", isalnum }, { "alpha", isalpha }, { "blank", isblank },
		{ "cntrl", iscntrl }, { "digit", isdigit }, { "graph", isgraph },
		{ "lower", islower }, { "print", isprint }, { "punct", ispunct },
		{ "space", isspace }, { "upper", isupper }, { "xdigit", isxdigit },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(classes); i++) {
		if (strlen(classes[i].name) == n && !memcmp(classes[i].name, name, n)) {
			*known = 1;
			return c < 0x80 && classes[i].fn(c);
		}
	}
	*known = 0;
	return 0;
}

/*
 * The matcher's state: results already computed for (pattern position,
 * text position) pairs. The plain recursion is git's and is fast on real
 * patterns, but a pattern of many "**" folders can make it retry the
 * same pairs exponentially often; after WM_MEMO_AFTER calls every result
 * is remembered, so no pair is computed twice.
 */
#define WM_MEMO_AFTER 2048

struct wm_ctx {
	const char *pstart, *tstart, *tend;
	size_t plen, calls;
	unsigned char *memo;	/* (plen + 1) x (tlen + 1): 0 unknown, else result + 1 */
};

static int wm(struct wm_ctx *c, const char *p, const char *t);

static int wm_memo(struct wm_ctx *c, const char *p, const char *t)
{
	size_t cols = (size_t)(c->tend - c->tstart) + 1, at;
	int r;

	if (!c->memo && ++c->calls > WM_MEMO_AFTER)
		c->memo = xcalloc((c->plen + 1) * cols, 1);
	if (!c->memo)
		return wm(c, p, t);
	at = (size_t)(p - c->pstart) * cols + (size_t)(t - c->tstart);
	if (c->memo[at])
		return c->memo[at] - 1;
	r = wm(c, p, t);
	c->memo[at] = (unsigned char)(r + 1);
	return r;
}

/*
 * Match the pattern from `p` (NUL-terminated) against the text [t, tend).
 * Star handling returns ABORT codes so that a failed "*" never retries
 * positions a later "*" would cover (git's wildmatch.c does the same).
 */
static int wm(struct wm_ctx *c, const char *p, const char *t)
{
	const char *tend = c->tend;

	for (; *p; p++, t++) {
		unsigned char pc = (unsigned char)*p, tc;

		if (t >= tend && pc != '*')
			return WM_ABORT_ALL;
		tc = t < tend ? (unsigned char)*t : 0;
		switch (pc) {
		case '\\':
			pc = (unsigned char)*++p;
			if (!pc || tc != pc)
				return WM_NOMATCH;
			break;
		case '?':
			if (tc == '/')
				return WM_NOMATCH;
			break;
		case '*': {
			const char *q = p + 1;
			int match_slash = 0;

			if (*q == '*') {
				const char *prev = p - 1;

				while (*q == '*')
					q++;
				if ((prev < c->pstart || *prev == '/') &&
				    (!*q || *q == '/' || (q[0] == '\\' && q[1] == '/'))) {
					/* "**" + "/": first try it as no folder at all. */
					if (*q == '/' && wm_memo(c, q + 1, t) == WM_MATCH)
						return WM_MATCH;
					match_slash = 1;
				}
			}
			p = q;
			if (!*p) {
				if (!match_slash && t < tend && memchr(t, '/', (size_t)(tend - t)))
					return WM_NOMATCH;
				return WM_MATCH;
			}
			if (!match_slash && *p == '/') {
				const char *slash = t < tend ? memchr(t, '/', (size_t)(tend - t)) : NULL;

				if (!slash)
					return WM_NOMATCH;
				t = slash;
				break;	/* the loop steps over both slashes */
			}
			for (;;) {
				int m;

				if (t >= tend)
					break;
				if (!special(*p)) {
					char want = *p;

					while (t < tend && (match_slash || *t != '/') && *t != want)
						t++;
					if (t >= tend || *t != want)
						return WM_NOMATCH;
				}
				m = wm_memo(c, p, t);
				if (m != WM_NOMATCH) {
					if (!match_slash || m != WM_ABORT_TO_STARSTAR)
						return m;
				} else if (!match_slash && *t == '/') {
					return WM_ABORT_TO_STARSTAR;
				}
				t++;
			}
			return WM_ABORT_ALL;
		}
		case '[': {
			const char *q = p + 1;
			unsigned char ch, prev = 0;
			int negated = 0, matched = 0;

			ch = (unsigned char)*q;
			if (ch == '^' || ch == '!') {
				negated = 1;
				ch = (unsigned char)*++q;
			}
			do {
				if (!ch)
					return WM_ABORT_ALL;
				if (ch == '\\') {
					ch = (unsigned char)*++q;
					if (!ch)
						return WM_ABORT_ALL;
					if (tc == ch)
						matched = 1;
				} else if (ch == '-' && prev && q[1] && q[1] != ']') {
					ch = (unsigned char)*++q;
					if (ch == '\\') {
						ch = (unsigned char)*++q;
						if (!ch)
							return WM_ABORT_ALL;
					}
					if (tc <= ch && tc >= prev)
						matched = 1;
					ch = 0;	/* a range does not start another one */
				} else if (ch == '[' && q[1] == ':') {
					const char *s = q + 2, *e = s;
					int known;

					while (*e && *e != ']')
						e++;
					if (!*e)
						return WM_ABORT_ALL;
					if (e - s < 1 || e[-1] != ':') {
						/* no ":]": an ordinary '[' */
						if (tc == '[')
							matched = 1;
					} else {
						if (class_match(s, (size_t)(e - s - 1), tc, &known))
							matched = 1;
						if (!known)
							return WM_ABORT_ALL;
						q = e;
						ch = 0;
					}
				} else if (tc == ch) {
					matched = 1;
				}
				prev = ch;
				ch = (unsigned char)*++q;
			} while (ch != ']');
			if (matched == negated || tc == '/')
				return WM_NOMATCH;
			p = q;
			break;
		}
		default:
			if (tc != pc)
				return WM_NOMATCH;
			break;
		}
	}
	return t >= tend ? WM_MATCH : WM_NOMATCH;
}

int ignore_wildmatch(const char *pattern, const char *text, size_t len)
{
	struct wm_ctx c = { pattern, text, text + len, strlen(pattern), 0, NULL };
	int r = wm(&c, pattern, text);

	free(c.memo);
	return r == WM_MATCH;
}

/* ---- parsing ---- */

/* git's trim_trailing_spaces(): spaces at the end go unless escaped. */
static size_t trim_spaces(const char *s, size_t len)
{
	size_t i, last_space = SIZE_MAX;

	for (i = 0; i < len; i++) {
		if (s[i] == ' ') {
			if (last_space == SIZE_MAX)
				last_space = i;
		} else if (s[i] == '\\') {
			if (++i >= len)
				return len;
			last_space = SIZE_MAX;
		} else {
			last_space = SIZE_MAX;
		}
	}
	return last_space == SIZE_MAX ? len : last_space;
}

static void add_pattern(struct ignore_rules *r, const char *s, size_t len)
{
	struct pattern *pat;
	unsigned flags = 0;
	size_t i;

	if (len && s[0] == '!') {
		flags |= PAT_NEGATE;
		s++;
		len--;
	}
	if (len && s[len - 1] == '/') {
		flags |= PAT_DIRONLY;
		len--;
	}
	if (!memchr(s, '/', len))
		flags |= PAT_BASENAME;
	else if (s[0] == '/') {
		s++;
		len--;
	}
	if (!len)
		return;		/* matches nothing, as in git */
	flags |= PAT_LITERAL;
	for (i = 0; i < len; i++)
		if (special(s[i]))
			flags &= ~PAT_LITERAL;
	if ((flags & PAT_BASENAME) && len > 1 && s[0] == '*') {
		flags |= PAT_ENDSWITH;
		for (i = 1; i < len; i++)
			if (special(s[i]))
				flags &= ~PAT_ENDSWITH;
	}
	ALLOC_GROW(r->v, r->nr + 1, r->alloc);
	pat = &r->v[r->nr++];
	pat->text = xstrndup(s, len);
	pat->len = len;
	pat->flags = flags;
}

struct ignore_rules *ignore_rules_parse_top(const char *prefix, const char *text, size_t len)
{
	struct ignore_rules *r = ignore_rules_parse("", text, len);

	if (prefix && *prefix) {
		r->prefixlen = strlen(prefix);
		r->prefix = xstrfmt("%s%s", prefix, prefix[r->prefixlen - 1] == '/' ? "" : "/");
		r->prefixlen = strlen(r->prefix);
	}
	return r;
}

struct ignore_rules *ignore_rules_parse(const char *base, const char *text, size_t len)
{
	struct ignore_rules *r = xcalloc(1, sizeof(*r));
	size_t pos = 0;

	r->base = xstrdup(base);
	r->baselen = strlen(base);
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3))
		pos = 3;
	while (pos < len) {
		const char *line = text + pos, *nl = memchr(line, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - line) : len - pos;

		pos += n + 1;
		if (n && line[n - 1] == '\r')
			n--;
		if (!n || line[0] == '#')
			continue;
		/* A NUL would end the pattern for git; never match past it. */
		if (memchr(line, '\0', n))
			n = (size_t)((const char *)memchr(line, '\0', n) - line);
		n = trim_spaces(line, n);
		if (n)
			add_pattern(r, line, n);
	}
	return r;
}

void ignore_rules_free(struct ignore_rules *rules)
{
	size_t i;

	if (!rules)
		return;
	for (i = 0; i < rules->nr; i++)
		free(rules->v[i].text);
	free(rules->v);
	free(rules->base);
	free(rules->prefix);
	free(rules);
}

size_t ignore_rules_count(const struct ignore_rules *rules)
{
	return rules ? rules->nr : 0;
}

static int pattern_matches(const struct pattern *pat, const char *text, size_t len)
{
	if (pat->flags & PAT_LITERAL)
		return pat->len == len && !memcmp(pat->text, text, len);
	if (pat->flags & PAT_ENDSWITH)
		return len >= pat->len - 1 &&
		       !memcmp(text + len - (pat->len - 1), pat->text + 1, pat->len - 1);
	return ignore_wildmatch(pat->text, text, len);
}

static enum ignore_match match_top(const struct ignore_rules *rules, const char *path,
				   size_t len, int is_dir);

enum ignore_match ignore_rules_match(const struct ignore_rules *rules, const char *path,
				     size_t len, int is_dir)
{
	const char *base_name, *rel;
	size_t i, rel_len;

	if (!rules)
		return IGNORE_NONE;
	if (rules->prefixlen)
		return match_top(rules, path, len, is_dir);
	base_name = memrchr(path, '/', len);
	base_name = base_name ? base_name + 1 : path;
	if (rules->baselen) {
		if (len <= rules->baselen || path[rules->baselen] != '/' ||
		    memcmp(path, rules->base, rules->baselen))
			rel = NULL;
		else
			rel = path + rules->baselen + 1;
	} else {
		rel = path;
	}
	rel_len = rel ? len - (size_t)(rel - path) : 0;
	for (i = rules->nr; i > 0; i--) {
		const struct pattern *pat = &rules->v[i - 1];
		int m;

		if ((pat->flags & PAT_DIRONLY) && !is_dir)
			continue;
		if (pat->flags & PAT_BASENAME)
			m = pattern_matches(pat, base_name, len - (size_t)(base_name - path));
		else
			m = rel && pattern_matches(pat, rel, rel_len);
		if (m)
			return pat->flags & PAT_NEGATE ? IGNORE_INCLUDED : IGNORE_EXCLUDED;
	}
	return IGNORE_NONE;
}

/*
 * A file for the whole work tree seen from a workspace below its top:
 * its patterns are matched against the path from the top (git anchors
 * "/x" in info/exclude there), so the prefix goes in front.
 */
static enum ignore_match match_top(const struct ignore_rules *rules, const char *path,
				   size_t len, int is_dir)
{
	struct ignore_rules plain = *rules;
	char small[512], *full = small;
	size_t n = rules->prefixlen + len;
	enum ignore_match m;

	if (n > sizeof(small))
		full = xmalloc(n);
	memcpy(full, rules->prefix, rules->prefixlen);
	memcpy(full + rules->prefixlen, path, len);
	plain.prefix = NULL;
	plain.prefixlen = 0;
	m = ignore_rules_match(&plain, full, n, is_dir);
	if (full != small)
		free(full);
	return m;
}

int ignore_chain_excluded(const struct ignore_chain *chain, const char *path, size_t len,
			  int is_dir)
{
	for (; chain; chain = chain->next) {
		enum ignore_match m = ignore_rules_match(chain->rules, path, len, is_dir);

		if (m != IGNORE_NONE)
			return m == IGNORE_EXCLUDED;
	}
	return 0;
}

/* ---- loading ---- */

/* Read the rules of `fd` (closed here) for `base`, or for the whole work tree when `top`. */
static int load_fd(struct ignore_rules **out, int fd, const char *base, const char *top,
		   const char *what)
{
	struct buf text = BUF_INIT;
	struct stat st;
	int ret = 0;

	*out = NULL;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		goto out;	/* a folder or device named .gitignore holds no rules */
	ret = fsutil_read_fd(&text, fd, RULES_FILE_MAX);
	if (ret == FX_ELIMIT)
		ret = 0;	/* git would read it; we keep the first 4 MiB */
	if (ret < 0) {
		err_prefix(ret, "cannot read %s", what);
		goto out;
	}
	*out = top ? ignore_rules_parse_top(top, text.buf, text.len)
		   : ignore_rules_parse(base, text.buf, text.len);
	if (!(*out)->nr) {
		ignore_rules_free(*out);
		*out = NULL;
	}
out:
	close(fd);
	buf_release(&text);
	return ret;
}

int ignore_rules_load_at(struct ignore_rules **out, int dirfd, const char *name, const char *base)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	*out = NULL;
	if (fd < 0) {
		if (errno == ENOENT || errno == ELOOP || errno == ENOTDIR || errno == EACCES)
			return 0;
		return err_set_errno(FX_EOS, "cannot open %s/%s", *base ? base : ".", name);
	}
	return load_fd(out, fd, base, NULL, name);
}

int ignore_rules_load_top(struct ignore_rules **out, int dirfd, const char *path,
			  const char *prefix)
{
	int fd = openat(dirfd, path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	*out = NULL;
	if (fd < 0) {
		if (errno == ENOENT || errno == ENOTDIR || errno == EACCES || errno == ELOOP)
			return 0;
		return err_set_errno(FX_EOS, "cannot open %s", path);
	}
	return load_fd(out, fd, "", prefix ? prefix : "", path);
}

/* The git folder named by a ".git" file ("gitdir: <path>"), absolute; NULL if none. */
static char *gitdir_from_file(const struct wspath_root *root, int fd)
{
	struct buf b = BUF_INIT, p = BUF_INIT;
	const char *dir;
	char *ret = NULL;

	if (fsutil_read_fd(&b, fd, 4096) < 0 || strncmp(b.buf, "gitdir:", 7))
		goto out;
	buf_trim(&b);
	dir = b.buf + 7;
	while (*dir == ' ' || *dir == '\t')
		dir++;
	if (!*dir)
		goto out;
	if (*dir == '/')
		buf_addstr(&p, dir);
	else
		path_join(&p, root->real, dir);
	ret = buf_detach(&p, NULL);
out:
	buf_release(&b);
	buf_release(&p);
	return ret;
}

int ignore_load_exclude(struct ignore_rules **out, const struct wspath_root *root)
{
	struct buf common = BUF_INIT, path = BUF_INIT;
	struct stat st;
	char *gitdir = NULL;
	int fd, ret = 0;

	*out = NULL;
	fd = openat(root->fd, ".git", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0) {
		close(fd);
		return 0;
	}
	if (S_ISDIR(st.st_mode)) {
		int efd = openat(fd, "info/exclude", O_RDONLY | O_NONBLOCK | O_CLOEXEC);

		close(fd);
		return efd < 0 ? 0 : load_fd(out, efd, "", NULL, ".git/info/exclude");
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return 0;
	}
	/*
	 * A worktree or submodule: ".git" names the git folder, and a worktree's
	 * "commondir" names the repository whose info/exclude applies.
	 */
	gitdir = gitdir_from_file(root, fd);
	close(fd);
	if (!gitdir)
		return 0;
	path_join(&path, gitdir, "commondir");
	if (!fsutil_read_file(&common, path.buf, 4096)) {
		buf_trim(&common);
		buf_reset(&path);
		if (common.buf[0] == '/')
			buf_addstr(&path, common.buf);
		else
			path_join(&path, gitdir, common.buf);
	} else {
		buf_reset(&path);
		buf_addstr(&path, gitdir);
	}
	buf_addstr(&path, "/info/exclude");
	fd = open(path.buf, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd >= 0)
		ret = load_fd(out, fd, "", NULL, "info/exclude");
	free(gitdir);
	buf_release(&common);
	buf_release(&path);
	return ret;
}

/* ---- a cache of every folder's rules ---- */

struct ignore_tree_slot {
	char *dir;			/* NULL: empty slot */
	struct ignore_rules *rules;	/* NULL: no .gitignore there */
};

static uint64_t hash_str(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 1099511628211ull;
	}
	return h;
}

int ignore_tree_init(struct ignore_tree *tree, const struct wspath_root *root)
{
	tree->root = root;
	tree->slots = NULL;
	tree->nr = tree->alloc = 0;
	return ignore_load_exclude(&tree->exclude, root);
}

void ignore_tree_release(struct ignore_tree *tree)
{
	size_t i;

	for (i = 0; i < tree->alloc; i++) {
		free(tree->slots[i].dir);
		ignore_rules_free(tree->slots[i].rules);
	}
	free(tree->slots);
	ignore_rules_free(tree->exclude);
	tree->slots = NULL;
	tree->exclude = NULL;
	tree->nr = tree->alloc = 0;
}

static struct ignore_tree_slot *slot_for(struct ignore_tree *tree, const char *dir, size_t n)
{
	size_t i = (size_t)hash_str(dir, n) & (tree->alloc - 1);

	while (tree->slots[i].dir &&
	       (strlen(tree->slots[i].dir) != n || memcmp(tree->slots[i].dir, dir, n)))
		i = (i + 1) & (tree->alloc - 1);
	return &tree->slots[i];
}

static void tree_grow(struct ignore_tree *tree)
{
	struct ignore_tree_slot *old = tree->slots;
	size_t i, old_alloc = tree->alloc;

	tree->alloc = old_alloc ? old_alloc * 2 : 64;
	tree->slots = xcalloc(tree->alloc, sizeof(*tree->slots));
	for (i = 0; i < old_alloc; i++)
		if (old[i].dir)
			*slot_for(tree, old[i].dir, strlen(old[i].dir)) = old[i];
	free(old);
}

/* The rules of folder `dir` (`n` bytes), loaded on first use. */
static int tree_rules(const struct ignore_rules **out, struct ignore_tree *tree, const char *dir,
		      size_t n)
{
	struct ignore_tree_slot *slot;
	struct ignore_rules *rules = NULL;
	char *name;
	int fd, ret;

	if ((tree->nr + 1) * 2 > tree->alloc)
		tree_grow(tree);
	slot = slot_for(tree, dir, n);
	if (slot->dir) {
		*out = slot->rules;
		return 0;
	}
	name = xstrndup(dir, n);
	fd = wspath_open_dir(tree->root, name);
	if (fd >= 0) {
		ret = ignore_rules_load_at(&rules, fd, ".gitignore", name);
		close(fd);
		if (ret < 0) {
			free(name);
			return ret;
		}
	}
	slot->dir = name;
	slot->rules = rules;
	tree->nr++;
	*out = rules;
	return 0;
}

int ignore_tree_excluded(struct ignore_tree *tree, const char *rel, int is_dir)
{
	struct ignore_chain *nodes;
	size_t len = strlen(rel), depth = 0, i, pos = 0;
	int ret = 0;

	if (!len)
		return 0;
	for (i = 0; i < len; i++)
		depth += rel[i] == '/';
	nodes = xcalloc(depth + 2, sizeof(*nodes));
	nodes[0].rules = tree->exclude;
	nodes[0].next = NULL;
	/* nodes[k + 1] holds the rules of the k-th folder on the way down. */
	for (i = 0; i <= depth; i++) {
		const struct ignore_rules *rules;
		const char *slash;

		ret = tree_rules(&rules, tree, rel, pos ? pos - 1 : 0);
		if (ret < 0)
			goto out;
		nodes[i + 1].rules = rules;
		nodes[i + 1].next = &nodes[i];
		slash = memchr(rel + pos, '/', len - pos);
		if (!slash)
			break;
		pos = (size_t)(slash - rel) + 1;
		/* A parent folder that is excluded takes everything in it along. */
		if (ignore_chain_excluded(&nodes[i + 1], rel, pos - 1, 1)) {
			ret = 1;
			goto out;
		}
	}
	ret = ignore_chain_excluded(&nodes[i + 1], rel, len, is_dir);
out:
	free(nodes);
	return ret;
}
