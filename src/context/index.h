#ifndef FX_CONTEXT_INDEX_H
#define FX_CONTEXT_INDEX_H

/*
 * The symbol index of the repository map: for every file that `search`
 * would read (the same walk, ws/walk.h: hidden files included, never .git, no
 * symbolic link followed, .gitignore files and .git/info/exclude obeyed;
 * binary files — a NUL in the first 64 KiB — and files over
 * CTX_FILE_MAX are left out, and so is forgex's own .forgex/ at the top),
 * the names it defines (from Universal Ctags, see context/ctags.h) and
 * the names it refers to (context/tokenize.h), with counts.
 *
 * The cache: .forgex/map/index, one binary file (format in cache.c and
 * docs/internals/context.md), keyed per file by path, size, mtime and
 * inode, with a hash of the content; and .forgex/map/delta, what changed
 * since that file was written whole, while it stays small. An update walks the tree; a file
 * whose key matches is taken from the cache unread; a file whose key
 * changed is read and hashed, and indexed again only when its content
 * differs (so a `git checkout` that rewrites every file re-indexes only
 * what changed in content). The cache is written to a temporary file in
 * the same folder and renamed over the old one, so a reader (or a
 * concurrent run) sees the old or the new file, never a part, and a
 * killed run leaves the previous cache. It is opened without following
 * links (.forgex, map and index each refused when a link), and read as
 * untrusted input: every count, offset and range is checked, and a cache
 * that fails any check is ignored and rebuilt.
 *
 * The caller:
 *   1. ctx_index_init() with the workspace (and an executor for ctags);
 *   2. ctx_index_update() to load the cache, refresh it from the tree and
 *      save it; any number of times;
 *   3. the ranking (context/rank.h) reads the index;
 *   4. ctx_index_release().
 * Not thread-safe; update() uses threads of its own: the indexer (the
 * cache's load, the stats, the reads) and one for ctags, two when `ex2`
 * is set and the tree is large (each runs its ctags with its own
 * executor).
 */

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/strvec.h"
#include "ws/wspath.h"

struct executor;

#define CTX_FILE_MAX ((size_t)4 << 20)	/* larger files are not indexed */
#define CTX_TEXT_MAX 160		/* bytes of a definition's line kept */

enum ctx_file_flags {
	CTX_F_NOTAGS = 1 << 0,		/* ctags did not run on it: try again next time */
	CTX_F_SKIP = 1 << 1,		/* binary or too large: kept only for its key */
};

enum ctx_def_flags {
	CTX_D_FILE_SCOPE = 1 << 0,	/* not visible outside its file ("static" in C) */
};

struct ctx_file {
	uint32_t path;			/* offset in the arena */
	uint32_t flags;			/* enum ctx_file_flags */
	uint32_t def0, ndefs;		/* its definitions: defs[def0 .. def0+ndefs), by line */
	uint32_t ref0, nrefs;		/* its references: refs[ref0 .. ref0+nrefs) */
	uint64_t size, ino, hash;
	int64_t mtime_sec;
	uint32_t mtime_nsec;
	uint32_t pad;
};

struct ctx_def {
	uint32_t sym;			/* symbol id */
	uint32_t line;			/* 1-based */
	uint32_t kind;			/* arena offset: ctags kind ("function") */
	uint32_t text;			/* arena offset: the line, cut at CTX_TEXT_MAX */
	uint32_t flags;			/* enum ctx_def_flags */
};

struct ctx_ref {
	uint32_t sym;
	uint32_t count;			/* occurrences in the file */
};

struct ctx_index_stats {
	size_t files;			/* files in the index */
	size_t defs, refs;		/* definitions, distinct (file, name) references */
	size_t symbols;
	size_t cache_hits;		/* files taken from the cache unread */
	size_t same_content;		/* key changed, content did not: not indexed again */
	size_t indexed;			/* files read and indexed */
	size_t ctags_runs;		/* ctags processes started */
	size_t skipped;			/* binary, too large, unreadable */
	int cache_loaded;		/* a valid cache was found */
	int cache_rejected;		/* a cache was there but failed a check */
	int saved;			/* the cache was written */
	int delta_loaded;		/* a delta was read over the base */
	int delta_saved;		/* what was written was a delta */
	double seconds;
	double load_seconds;		/* reading and checking the cache */
	double walk_seconds;		/* the walk, with the scan of changed files */
	double ctags_seconds;		/* waiting for ctags after the walk, and the merge */
	double save_seconds;		/* writing the cache */
	char *ctags_error;		/* why ctags gave nothing (NULL: it worked) */
};

struct ctx_index {
	struct wspath_root root;
	struct executor *ex;		/* borrowed; NULL: no definitions */
	struct executor *ex2;		/* borrowed, may be NULL: a second ctags at a time */
	struct buf arena;		/* NUL-terminated strings; offset 0 is "" */
	uint32_t *syms;			/* symbol id -> arena offset of its name */
	size_t nsyms, asyms;
	struct ctx_file *files;		/* sorted by path (bytewise) */
	size_t nfiles, afiles;
	struct ctx_def *defs;
	size_t ndefs, adefs;
	struct ctx_ref *refs;
	size_t nrefs, arefs;
	uint64_t *symtab;		/* open addressing: name -> id + 1 | hash << 32 (built when needed) */
	size_t symtab_size;
	uint32_t *kindtab;		/* the same for kinds */
	size_t kindtab_size, nkinds;
	/*
	 * The cache file this index was read from or last wrote whole (the
	 * base); a later save writes only what differs from it, in the delta
	 * file (cache.c), while that stays small.
	 */
	uint32_t *in_base;		/* per file: its index + 1 in the base, unchanged; 0: not */
	int have_base;
	uint64_t base_hash;		/* the base's checksum */
	size_t base_alen, base_nsyms, base_nfiles, base_ndefs, base_nrefs, base_bytes;
	int loaded;			/* the cache was read (or the tree was walked) */
	int no_save;			/* for tests: never write the cache */
	unsigned batch_files;		/* files per ctags run (0: default) */
	struct ctx_index_stats stats;	/* of the last update */
};

/**
 * Prepare an index of the workspace `workspace`. `ex` (borrowed, may be
 * NULL) runs ctags; without it files get references only. FX_ENOTFOUND
 * when the workspace is not a folder.
 */
int ctx_index_init(struct ctx_index *idx, const char *workspace, struct executor *ex);

/**
 * Bring the index up to date with the tree (see the overview) and save
 * the cache when anything changed. Returns 0, or a negative FX_E* code
 * when the tree cannot be walked at all; a cache that cannot be read or
 * written is not an error (stats say so). A failing ctags is not an
 * error either: stats.ctags_error says why there are no definitions.
 */
int ctx_index_update(struct ctx_index *idx);

/** Free everything; the index can be initialised again. */
void ctx_index_release(struct ctx_index *idx);

/** The string at arena offset `off`. */
static inline const char *ctx_str(const struct ctx_index *idx, uint32_t off)
{
	return idx->arena.buf + off;
}

/** The index of the file `path` (sorted lookup), or -1. */
long ctx_index_find_file(const struct ctx_index *idx, const char *path);

/** The id of the symbol `name`, or -1 when no file defines or mentions it. */
long ctx_index_find_sym(struct ctx_index *idx, const char *name, size_t len);

/*
 * The cache file (cache.c): exposed for the tests and the fuzzer.
 */

/**
 * Parse the cache image `data` (`len` bytes) into `idx` (whose arrays must
 * be empty). FX_EPARSE, with the reason in err_last(), when any check
 * fails; `idx` is then left empty.
 */
int ctx_cache_parse(struct ctx_index *idx, const unsigned char *data, size_t len);

/**
 * Set the checksum of the cache image `data` to what its sections hash
 * to (when its counts match its size); for the tests and the fuzzer, so
 * that the checks behind the checksum can be reached.
 */
void ctx_cache_checksum(unsigned char *data, size_t len);

/** Append the cache image of `idx` to `out`. */
void ctx_cache_serialize(const struct ctx_index *idx, struct buf *out);

/** Free the arrays and the arena of `idx` (the workspace stays open). */
void ctx_index_clear_data(struct ctx_index *idx);

/**
 * Load `.forgex/map/index` of the workspace (not following links, at most
 * CTX_CACHE_MAX bytes, a regular file). 0 when loaded, FX_ENOTFOUND when
 * there is none, FX_EPARSE when it is not a valid cache.
 */
int ctx_cache_load(struct ctx_index *idx);

/**
 * Apply the delta image `data` (`len` bytes) to `idx`, which holds the
 * base it was made for (ctx_cache_parse() or a load). FX_EPARSE when it
 * fails a check or was made for another base; `idx` is then unchanged.
 */
int ctx_cache_apply_delta(struct ctx_index *idx, const unsigned char *data, size_t len);

/** The same as ctx_cache_checksum() for a delta image (tests, fuzzer). */
void ctx_cache_delta_checksum(unsigned char *data, size_t len);

/**
 * Append the delta image of `idx` against its base to `out`. FX_EINVAL
 * when there is no base to write a delta against.
 */
int ctx_cache_delta(const struct ctx_index *idx, struct buf *out);

/**
 * Write the cache atomically: only a delta file when an index read from a
 * base differs from it by little, else the whole cache (the delta file is
 * then removed). 0 or a negative FX_E* code.
 */
int ctx_cache_save(struct ctx_index *idx);

#define CTX_CACHE_MAX ((size_t)1 << 30)

#endif
