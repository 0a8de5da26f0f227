#ifndef FX_XDG_H
#define FX_XDG_H

/*
 * The XDG base directories (the XDG Base Directory Specification): where
 * forgex keeps the user's configuration, its state (trusted files,
 * sessions) and caches. A variable that is unset, empty or not an
 * absolute path is ignored, as the specification says; then the default
 * under $HOME applies, when HOME is an absolute path.
 */

enum xdg_dir {
	XDG_DIR_CONFIG,		/* $XDG_CONFIG_HOME, else ~/.config */
	XDG_DIR_STATE,		/* $XDG_STATE_HOME, else ~/.local/state */
	XDG_DIR_CACHE,		/* $XDG_CACHE_HOME, else ~/.cache */
};

/**
 * The path `sub` (relative, e.g. "forgex/trusted") in base directory
 * `dir`: "$XDG_..._HOME/sub", else "$HOME/<default>/sub". NULL when
 * neither variable is an absolute path. The caller frees it.
 */
char *xdg_path(enum xdg_dir dir, const char *sub);

#endif
