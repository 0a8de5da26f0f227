#include <stdlib.h>

#include "base/err.h"
#include "base/xdg.h"

char *xdg_path(enum xdg_dir dir, const char *sub)
{
	static const struct { const char *var, *def; } dirs[] = {
		[XDG_DIR_CONFIG] = { "XDG_CONFIG_HOME", ".config" },
		[XDG_DIR_STATE] = { "XDG_STATE_HOME", ".local/state" },
		[XDG_DIR_CACHE] = { "XDG_CACHE_HOME", ".cache" },
	};
	const char *xdg = getenv(dirs[dir].var), *home = getenv("HOME");

	if (xdg && *xdg == '/')
		return xstrfmt("%s/%s", xdg, sub);
	if (home && *home == '/')
		return xstrfmt("%s/%s/%s", home, dirs[dir].def, sub);
	return NULL;
}
