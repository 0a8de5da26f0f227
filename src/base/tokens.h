#ifndef FX_BASE_TOKENS_H
#define FX_BASE_TOKENS_H

/*
 * The token estimate every budget uses when a server sends no usage: one
 * token for every FX_CHARS_PER_TOKEN bytes (agents/agent.c charges
 * prompt_chars / 4). The repository map fits its budget with the same
 * count, so `map_tokens = 2048` is 2048 tokens by the budget's reckoning.
 */

#include <stddef.h>

#define FX_CHARS_PER_TOKEN 4

/** Tokens of `bytes` bytes of text, rounded down as the budget rounds. */
static inline size_t tokens_estimate(size_t bytes)
{
	return bytes / FX_CHARS_PER_TOKEN;
}

#endif
