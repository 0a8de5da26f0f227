#ifndef FX_SHA256_H
#define FX_SHA256_H

/*
 * SHA-256 (FIPS 180-4), for content hashes forgex records (the trusted
 * project files). Small and dependency-free: the light `forgex` binary
 * links no crypto library, and this is not used for anything secret.
 */

#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32
#define SHA256_HEX_LEN 64

struct sha256 {
	uint32_t h[8];
	uint64_t len;		/* bytes hashed so far */
	unsigned char block[64];
	size_t fill;
};

void sha256_init(struct sha256 *c);
void sha256_update(struct sha256 *c, const void *data, size_t len);
void sha256_final(struct sha256 *c, unsigned char out[SHA256_LEN]);

/** The hash of `len` bytes of `data` as 64 lower-case hex digits and a NUL. */
void sha256_hex(char out[SHA256_HEX_LEN + 1], const void *data, size_t len);

#endif
