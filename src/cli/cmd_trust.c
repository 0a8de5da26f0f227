/* forgex trust: trust a project's .forgex/config.toml as it is now. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/termsafe.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "config/trust.h"

int cli_trust_check(const char *path, const char *hash, int *changed, void *data)
{
	(void)data;
	return trust_check(path, hash, changed);
}

static void print_path(const char *prefix, const char *path, const char *suffix)
{
	fputs(prefix, stdout);
	fputs_termsafe(path, stdout, 0);
	fputs(suffix, stdout);
}

/* The project file of the folder `dir` (or the current one), loaded to see what trusting it means. */
static int load_project(struct config *cfg, const char *dir)
{
	int ret;

	config_init(cfg);
	cfg->trust_fn = cli_trust_check;
	ret = config_load(cfg, dir);
	if (ret < 0) {
		cli_print_error();
		config_release(cfg);
		return EXIT_USAGE;
	}
	return 0;
}

static int trust_list(void)
{
	struct trust_entry *e;
	size_t nr, i;
	char *store = trust_store_path();
	int ret = trust_load(&e, &nr);

	if (ret < 0) {
		cli_print_error();
		free(store);
		return EXIT_FAIL;
	}
	if (!nr && !cli_quiet)
		fprintf(stderr, "forgex: no project file is trusted (%s)\n",
			store ? store : "no HOME or XDG_STATE_HOME");
	for (i = 0; i < nr; i++) {
		struct buf content = BUF_INIT;
		char hex[SHA256_HEX_LEN + 1];
		const char *state = "missing or unreadable";
		size_t n = strlen(e[i].path), sl = strlen("/.forgex/config.toml");
		char *ws = n > sl && !strcmp(e[i].path + n - sl, "/.forgex/config.toml")
			   ? xstrndup(e[i].path, n - sl) : NULL;

		if (ws && !config_read_project(&content, ws)) {
			sha256_hex(hex, content.buf, content.len);
			state = strcmp(hex, e[i].hash) ? "changed since (untrusted)" : "trusted";
		}
		printf("%.12s  ", e[i].hash);
		print_path("", e[i].path, "");
		printf("  %s\n", state);
		buf_release(&content);
		free(ws);
	}
	trust_entries_free(e, nr);
	free(store);
	return EXIT_OK;
}

int cmd_trust(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "list", no_argument, NULL, 'l' },
		{ "revoke", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct config cfg;
	int c, list = 0, revoke = 0, ret;
	size_t i;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			list = 1;
			break;
		case 'r':
			revoke = 1;
			break;
		case 'h':
			return cli_help("trust");
		default:
			return cli_usage_error("trust", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (list + revoke > 1)
		return cli_usage_error("trust", "--list and --revoke cannot be combined");
	if (argc - optind > 1)
		return cli_usage_error("trust", "at most one DIR");
	if (list) {
		if (optind != argc)
			return cli_usage_error("trust", "--list takes no DIR");
		return trust_list();
	}
	ret = load_project(&cfg, optind < argc ? argv[optind] : NULL);
	if (ret)
		return ret;
	if (revoke) {
		int removed;

		if (trust_revoke(cfg.project_file, &removed) < 0) {
			cli_print_error();
			ret = EXIT_FAIL;
		} else {
			print_path(removed ? "no longer trusted: " : "was not trusted: ", cfg.project_file, "\n");
		}
		config_release(&cfg);
		return ret;
	}
	if (!cfg.project_exists) {
		fputs("forgex trust: there is no ", stderr);
		fputs_termsafe(cfg.project_file, stderr, 0);
		fputs(" to trust ('forgex init' writes one)\n", stderr);
		config_release(&cfg);
		return EXIT_USAGE;
	}
	if (cfg.project_trusted) {
		print_path("already trusted: ", cfg.project_file, "\n");
		config_release(&cfg);
		return EXIT_OK;
	}
	if (trust_add(cfg.project_file, cfg.project_hash) < 0) {
		cli_print_error();
		config_release(&cfg);
		return EXIT_FAIL;
	}
	print_path("trusted: ", cfg.project_file, "");
	printf(" (sha256 %.12s)\n", cfg.project_hash);
	if (cfg.ignored_nr && !cli_quiet) {
		fprintf(stdout, "these settings now apply:\n");
		for (i = 0; i < cfg.ignored_nr; i++) {
			fputs("  ", stdout);
			fputs_termsafe(cfg.ignored[i].key, stdout, 0);
			fputs(" = ", stdout);
			fputs_termsafe(cfg.ignored[i].value, stdout, 0);
			fputc('\n', stdout);
		}
	}
	config_release(&cfg);
	return EXIT_OK;
}
