#ifndef FX_CONTEXT_RANK_H
#define FX_CONTEXT_RANK_H

/*
 * The repository map: the files of the symbol index (context/index.h)
 * ranked for a request, and the text a model is shown.
 *
 * The graph: a node per file; an edge from file A to file B for every
 * name A refers to that B defines (not file-scope definitions such as C
 * statics, and not names A defines itself), weighted
 * sqrt(occurrences in A) * boost / D^2, where D is the number of files
 * defining the name: the D edges of one name carry 1/D of the weight of
 * a name defined once, so a name defined in 40 files says little, and a
 * name defined in more than CTX_DEFINERS_MAX files nothing. boost is 10
 * for the names the request or the focus mentions.
 *
 * The ranking: personalised PageRank (damping 0.85) whose teleport
 * vector comes from the focus: files whose path (or file name) the
 * request mentions, the files defining a name it mentions and, less, the
 * files referring to that name; the files of the plan; files already
 * read or edited; the repo_map tool's focus (paths, folders or names).
 * Without any, the vector is uniform (plain PageRank).
 *
 * The map: the top files, each with its most important definitions (the
 * rank that flowed into the definition along the edges, plus a share of
 * its file's rank by kind), shown as their source lines in file order
 * with "⋮" between lines that are not adjacent. Definitions are taken
 * greedily in order of importance while the text fits the budget, by
 * the estimate of base/tokens.h; the result never exceeds it, and no
 * definition left out of a file that is shown would have fitted.
 * Everything is sorted with total tie-breaks (rank, then path, then
 * line), so the same tree and focus give the same map byte for byte.
 */

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/strvec.h"
#include "context/index.h"

#define CTX_DEFINERS_MAX 64

/** What the map is personalised by (every member may be NULL). */
struct ctx_focus {
	const char *request;			/* the request's text */
	const struct strvec *files;		/* plan files, files read or edited */
	const struct strvec *focus;		/* repo_map focus: paths, folders or names */
};

struct ctx_map_file {
	uint32_t file;				/* index in idx->files */
	double rank;
	uint32_t *defs;				/* indices in idx->defs, by line */
	size_t ndefs;
};

struct ctx_map {
	struct buf text;			/* the map as a model sees it */
	size_t tokens;				/* tokens_estimate(text.len) */
	size_t budget;
	struct ctx_map_file *files;		/* shown, in rank order */
	size_t nfiles;
	uint32_t *order;			/* every file of the index, best first */
	double *rank;				/* rank of each file (by index), summing to 1 */
	size_t nranked;
	size_t edges;				/* file-to-file edges of the graph */
	int iterations;				/* PageRank iterations done */
	double seconds;
	double graph_seconds;			/* definers and edges */
	double pagerank_seconds;
};

#define CTX_MAP_INIT { BUF_INIT, 0, 0, NULL, 0, NULL, NULL, 0, 0, 0, 0.0, 0.0, 0.0 }

/**
 * Rank the files of `idx` for `focus` and write a map of at most
 * `budget` tokens into `out` (CTX_MAP_INIT first; released and refilled).
 * A budget too small for the heading gives an empty map. Returns 0.
 */
int ctx_map_build(struct ctx_map *out, struct ctx_index *idx, const struct ctx_focus *focus,
		  size_t budget);

/** The map as JSON: {"budget","tokens","files":[{"path","rank","definitions":[{"name","kind","line","text"}]}]}. New reference. */
json_t *ctx_map_to_json(const struct ctx_map *map, const struct ctx_index *idx);

void ctx_map_release(struct ctx_map *map);

#endif
