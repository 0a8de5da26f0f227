/* forgex config show|get|init */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/jsonx.h"
#include "base/termsafe.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/setup.h"

struct show_ctx {
	int json;
	json_t *arr;
	const struct config *cfg;
};

static void show_cb(const char *key, const char *value, enum cfg_origin origin,
		    const char *where, const char *doc, void *data)
{
	struct show_ctx *s = data;
	char *line;
	size_t i;

	(void)doc;
	if (s->json) {
		json_t *o = json_object();
		json_t *v = NULL;

		/* the value as JSON: TOML scalars and string arrays are JSON-compatible */
		if (jsonx_parse(&v, value, strlen(value), key) < 0)
			v = jsonx_string(value);
		jsonx_set(o, "key", jsonx_string(key));
		jsonx_set(o, "value", v);
		jsonx_set(o, "origin", jsonx_string(config_origin_name(origin)));
		if (*where)
			jsonx_set(o, "where", jsonx_string(where));
		for (i = 0; i < s->cfg->ignored_nr; i++) {
			const struct cfg_ignored *ig = &s->cfg->ignored[i];
			json_t *io, *iv = NULL;

			if (strcmp(ig->key, key))
				continue;
			io = json_object();
			if (jsonx_parse(&iv, ig->value, strlen(ig->value), key) < 0)
				iv = jsonx_string(ig->value);
			jsonx_set(io, "value", iv);
			jsonx_set(io, "where", jsonx_string(ig->where));
			jsonx_set(io, "reason", jsonx_string(ig->reason));
			jsonx_set(io, "partly", json_boolean(ig->partly));
			jsonx_set(o, "ignored", io);
		}
		json_array_append_new(s->arr, o);
		return;
	}
	if (origin == CFG_DEFAULT)
		line = xstrfmt("%s = %s  # default\n", key, value);
	else
		line = xstrfmt("%s = %s  # %s (%s)\n", key, value, config_origin_name(origin), where);
	fputs_termsafe(line, stdout, TERMSAFE_MULTILINE);
	free(line);
	for (i = 0; i < s->cfg->ignored_nr; i++) {
		const struct cfg_ignored *ig = &s->cfg->ignored[i];

		if (strcmp(ig->key, key))
			continue;
		line = xstrfmt("#   %s from the untrusted project file (%s): %s = %s: %s\n",
			       ig->partly ? "only partly taken" : "ignored", ig->where, key,
			       ig->value, ig->reason);
		fputs_termsafe(line, stdout, TERMSAFE_MULTILINE);
		free(line);
	}
}

static int config_show(struct config *cfg, int json)
{
	struct show_ctx s = { json, NULL, cfg };

	if (json) {
		s.arr = json_array();
	} else if (cfg->project_exists) {
		char *line = xstrfmt("# trust: %s is %s\n", cfg->project_file,
				     cfg->project_trusted ? "trusted" :
				     cfg->project_changed ? "not trusted (it changed since you trusted it)"
				     : "not trusted ('forgex trust' trusts it)");

		fputs_termsafe(line, stdout, TERMSAFE_MULTILINE);
		free(line);
	}
	config_visit(cfg, show_cb, &s);
	if (json) {
		struct buf b = BUF_INIT;
		json_t *top = json_object();

		jsonx_set(top, "workspace", jsonx_string(cfg->workspace));
		jsonx_set(top, "user_file", cfg->user_file ? jsonx_string(cfg->user_file) : json_null());
		jsonx_set(top, "project_file", jsonx_string(cfg->project_file));
		jsonx_set(top, "project_trusted", cfg->project_exists ? json_boolean(cfg->project_trusted)
			  : json_null());
		jsonx_set(top, "keys", s.arr);
		jsonx_dump(&b, top, JSON_INDENT(2));
		puts(b.buf);
		buf_release(&b);
		json_decref(top);
	}
	return EXIT_OK;
}

/* forgex config init --user: the user file, asked for on a terminal or from the flags (setup.h). */
static int config_init_user(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "user", no_argument, NULL, 'u' },
		{ "base-url", required_argument, NULL, 'b' },
		{ "model", required_argument, NULL, 'm' },
		{ "api-key-env", required_argument, NULL, 'k' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct setup_opts so = SETUP_OPTS_INIT;
	int c, user = 0;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "hm:", opts, NULL)) != -1) {
		switch (c) {
		case 'u':
			user = 1;
			break;
		case 'b':
			so.base_url = optarg;
			break;
		case 'm':
			so.model = optarg;
			break;
		case 'k':
			so.api_key_env = optarg;
			break;
		case 'f':
			so.force = 1;
			break;
		case 'h':
			return cli_help("config");
		default:
			return cli_usage_error("config", "unknown option or missing value '%s'",
					       argv[optind - 1]);
		}
	}
	if (optind < argc)
		return cli_usage_error("config", "'init' takes no arguments");
	if (!user)
		return cli_usage_error("config", "'init' writes the user file: --user (a project's "
				       "file is 'forgex init')");
	so.interactive = isatty(0) && isatty(2);
	return setup_user_config(&so);
}

int cmd_config(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct config cfg;
	const char *sub;
	int json = 0, c, ret;

	if (argc < 2)
		return cli_usage_error("config", "a subcommand is required (show, get, init)");
	sub = argv[1];
	if (!strcmp(sub, "init"))
		return config_init_user(argc - 1, argv + 1);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc - 1, argv + 1, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			json = 1;
			break;
		case 'h':
			return cli_help("config");
		default:
			return cli_usage_error("config", "unknown option '%s'", argv[optind > 1 ? optind : 1]);
		}
	}
	if (strcmp(sub, "show") && strcmp(sub, "get"))
		return cli_usage_error("config", "unknown subcommand '%s' (show, get, init)", sub);
	if (!strcmp(sub, "show") && optind + 1 != argc)
		return cli_usage_error("config", "'show' takes no arguments");
	if (!strcmp(sub, "get") && optind + 2 != argc)
		return cli_usage_error("config", "'get' takes exactly one KEY");
	ret = cli_load_config(&cfg);
	if (ret)
		return ret;
	if (!strcmp(sub, "show")) {
		ret = config_show(&cfg, json);
	} else {
		struct buf v = BUF_INIT;
		enum cfg_origin origin;

		if (config_get(&cfg, argv[optind + 1], &v, &origin) < 0) {
			cli_print_error();
			ret = EXIT_USAGE;
		} else if (json) {
			printf("{\"key\": \"%s\", \"value\": %s, \"origin\": \"%s\"}\n",
			       argv[optind + 1], v.buf, config_origin_name(origin));
		} else {
			puts(v.buf);
		}
		buf_release(&v);
	}
	config_release(&cfg);
	return ret;
}
