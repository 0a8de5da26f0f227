/*
 * libFuzzer target for the TOML parser: any bytes must parse or fail with
 * FX_EPARSE (or FX_ELIMIT) and a message, never crash, leak or overflow.
 *
 *   make fuzz && build/fuzz/toml -max_len=4096 CORPUS_DIR
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/err.h"
#include "config/toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Walk the tree the way a caller would, touching every value. */
static size_t walk(const struct toml_value *v)
{
	size_t i, n = 1;

	switch (v->type) {
	case TOML_ARRAY:
		for (i = 0; i < v->u.arr.nr; i++)
			n += walk(v->u.arr.items[i]);
		break;
	case TOML_TABLE:
		for (i = 0; i < v->u.tab.nr; i++) {
			const struct toml_kv *kv = &v->u.tab.items[i];

			if (kv->key[kv->keylen] != '\0' || kv->line < 1 || kv->col < 1)
				abort();
			/* A key without NULs must be found by name. */
			if (strlen(kv->key) == kv->keylen && toml_table_entry(v, kv->key) != kv)
				abort();
			n += walk(kv->value);
		}
		break;
	case TOML_STRING:
	case TOML_DATETIME:
	case TOML_DATETIME_LOCAL:
	case TOML_DATE_LOCAL:
	case TOML_TIME_LOCAL:
		if (v->u.str.ptr[v->u.str.len] != '\0')
			abort();
		break;
	default:
		break;
	}
	if (v->line < 1 || v->col < 1)
		abort();
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct toml_value *doc = NULL;
	int r = toml_parse(&doc, (const char *)data, size, "fuzz");

	if (r == 0) {
		walk(doc);
		toml_free(doc);
	} else if ((r != FX_EPARSE && r != FX_ELIMIT) || doc || !*err_last()) {
		abort();
	}
	return 0;
}
