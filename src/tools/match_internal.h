#ifndef FX_TOOLS_MATCH_INTERNAL_H
#define FX_TOOLS_MATCH_INTERNAL_H

/*
 * Private to the matching engine: what finding (match.c) and placing
 * (match_place.c) share. Callers use match.h.
 */

#include <stddef.h>

#include "tools/match.h"

/** A space, tab, CR, form feed or vertical tab: what the passes ignore at line edges. */
int match_is_blank(char c);

/**
 * map[j] (for j < m): the index of the line of `a` (k lines) paired with
 * b[j] in a longest common subsequence of equal lines, or -1. Above a
 * size bound only the common first and last lines are paired.
 */
void match_lcs_map(long *map, const struct match_slice *a, size_t k, const struct match_slice *b,
		   size_t m);

#endif
