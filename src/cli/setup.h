#ifndef FX_CLI_SETUP_H
#define FX_CLI_SETUP_H

/*
 * Writing the user configuration ($XDG_CONFIG_HOME/forgex/config.toml,
 * config_user_file()): `forgex config init --user`, and what a first
 * session offers when there is no configuration and no model server
 * answers where the defaults point.
 *
 * On a terminal it looks for model servers on this machine first: GET
 * /v1/models (and Ollama's /api/tags) of Ollama (127.0.0.1:11434),
 * llama.cpp (8080), vLLM (8000) and LM Studio (1234), all at once, within
 * half a second; FORGEX_SETUP_SERVERS (base URLs separated by spaces or
 * commas) replaces that list. It lists those that answered with their
 * models, and the person picks one (and a model), or gives a URL, a model
 * and the NAME of the variable holding the key. Off a terminal the flags
 * say it all. The file gets [providers.default] base_url, model and
 * api_key_env (a name: the key itself is never written), mode 0600; an
 * existing file is replaced only when the person says so or --force.
 * The probe speaks plain HTTP on sockets (no libcurl): `forgex config`
 * stays a light command.
 */

struct setup_opts {
	const char *base_url;		/* given: no probe, no question */
	const char *model;
	const char *api_key_env;
	int force;			/* replace an existing file */
	int interactive;		/* ask on the terminal (stdin, stderr) */
	int first_run;			/* said as "no configuration yet" */
};

#define SETUP_OPTS_INIT { NULL, NULL, NULL, 0, 0, 0 }

/**
 * Write the user file as `o` says; what was done is said on stderr.
 * Returns EXIT_OK when the file was written, EXIT_USAGE for bad or
 * missing values or a refused overwrite, EXIT_FAIL when it cannot be
 * written.
 */
int setup_user_config(const struct setup_opts *o);

/**
 * Whether this is a first run: no user file, and nothing (project file,
 * environment, -c) set the base URL of the provider of `provider`.
 */
struct config;
int setup_is_first_run(struct config *cfg, const char *provider);

#endif
