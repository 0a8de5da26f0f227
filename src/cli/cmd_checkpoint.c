/* forgex checkpoint create|list|restore */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/jsonx.h"
#include "base/termsafe.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "pipeline/lock.h"
#include "vcs/checkpoint.h"

static json_t *info_json(const struct checkpoint_info *info, int with_files)
{
	json_t *o = json_object();

	jsonx_set(o, "id", jsonx_string(info->id));
	jsonx_set(o, "short_id", jsonx_string(info->short_id));
	jsonx_set(o, "message", jsonx_stringn_lossy(info->message, strlen(info->message)));
	jsonx_set(o, "time", json_integer((json_int_t)info->time));
	if (with_files)
		jsonx_set(o, "files", json_integer((json_int_t)info->files));
	return o;
}

static void print_json(json_t *j)
{
	struct buf b = BUF_INIT;

	jsonx_dump(&b, j, JSON_INDENT(2));
	puts(b.buf);
	buf_release(&b);
	json_decref(j);
}

/* The exit status for a failed service call: a bad id is a usage error. */
static int fail_status(int ret)
{
	cli_print_error();
	return ret == FX_ENOTFOUND || ret == FX_EINVAL ? EXIT_USAGE : EXIT_FAIL;
}

static void on_wait(void *data, const char *holder)
{
	(void)data;
	fprintf(stderr, "forgex: waiting for %s to finish ('--no-wait' fails instead)\n", holder);
}

static int do_create(struct checkpoints *cps, const char *message, int json)
{
	struct checkpoint_info info;
	int ret = checkpoint_create(&info, cps, message);

	if (ret < 0)
		return fail_status(ret);
	if (json)
		print_json(info_json(&info, 1));
	else
		printf("created checkpoint %s (%zu file%s): %s\n", info.short_id, info.files,
		       info.files == 1 ? "" : "s", info.message);
	checkpoint_info_release(&info);
	return EXIT_OK;
}

static int do_list(struct checkpoints *cps, int json)
{
	struct checkpoint_list list = CHECKPOINT_LIST_INIT;
	json_t *arr;
	size_t i;
	int ret = checkpoint_list(&list, cps);

	if (ret < 0)
		return fail_status(ret);
	if (json) {
		arr = json_array();
		for (i = 0; i < list.nr; i++)
			json_array_append_new(arr, info_json(&list.items[i], 0));
		print_json(arr);
	} else {
		if (!list.nr)
			fprintf(stderr, "no checkpoints yet ('forgex checkpoint create' makes one)\n");
		for (i = 0; i < list.nr; i++) {
			const struct checkpoint_info *it = &list.items[i];
			time_t t = (time_t)it->time;
			struct tm tm;
			char when[32] = "?";
			size_t n = strcspn(it->message, "\n");

			if (localtime_r(&t, &tm))
				strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
			cli_printf(stdout, "%s  %s  %.*s\n", it->short_id, when, (int)n, it->message);
		}
	}
	checkpoint_list_release(&list);
	return EXIT_OK;
}

/*
 * Files the checkpoint could not hold ("SIZE PATH"): the restore left them
 * as they are, and says so rather than pass over them in silence.
 */
static void print_too_large(const struct strvec *v, json_t *o)
{
	json_t *arr = o ? json_array() : NULL;
	size_t i;

	for (i = 0; i < v->nr; i++) {
		char *end = NULL;
		unsigned long long size = strtoull(v->v[i], &end, 10);
		const char *path = end && *end == ' ' ? end + 1 : v->v[i];
		char *shown;

		if (arr) {
			json_t *f = json_object();

			jsonx_set(f, "path", jsonx_string(path));
			jsonx_set(f, "size", json_integer((json_int_t)size));
			json_array_append_new(arr, f);
			continue;
		}
		shown = termsafe_dup(path, 0);
		printf("not restored: '%s' (%llu bytes) was too large to record "
		       "(over [checkpoints] max_file_bytes); left as it is\n", shown, size);
		free(shown);
	}
	if (o)
		jsonx_set(o, "too_large", arr);
}

static int do_restore(struct checkpoints *cps, const char *id, int json)
{
	struct checkpoint_restore_result res;
	char *full = NULL;
	int ret;

	ret = checkpoint_resolve(&full, cps, id);
	if (ret < 0)
		return fail_status(ret);
	ret = checkpoint_restore(&res, cps, full);
	if (ret < 0) {
		free(full);
		return fail_status(ret);
	}
	if (json) {
		json_t *o = json_object();

		jsonx_set(o, "restored", jsonx_string(full));
		jsonx_set(o, "backup", info_json(&res.backup, 1));
		jsonx_set(o, "written", json_integer((json_int_t)res.written));
		jsonx_set(o, "removed", json_integer((json_int_t)res.removed));
		jsonx_set(o, "modes", json_integer((json_int_t)res.chmodded));
		print_too_large(&res.too_large, o);
		print_json(o);
	} else {
		printf("restored checkpoint %.12s: %zu written, %zu removed, %zu modes changed\n",
		       full, res.written, res.removed, res.chmodded);
		printf("the tree before is checkpoint %s; 'forgex checkpoint restore %s' "
		       "undoes this\n", res.backup.short_id, res.backup.short_id);
		print_too_large(&res.too_large, NULL);
	}
	checkpoint_restore_result_release(&res);
	free(full);
	return EXIT_OK;
}

int cmd_checkpoint(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "message", required_argument, NULL, 'm' },
		{ "json", no_argument, NULL, 'j' },
		{ "no-wait", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct checkpoints *cps = NULL;
	struct config cfg;
	const char *sub, *message = NULL;
	int json = 0, c, ret, nargs, no_wait = 0;
	struct ws_lock lock = WS_LOCK_INIT;

	if (argc < 2)
		return cli_usage_error("checkpoint", "a subcommand is required (create, list, restore)");
	sub = argv[1];
	if (!strcmp(sub, "--help") || !strcmp(sub, "-h"))
		return cli_help("checkpoint");
	optind = 1;
	opterr = 0;
	/* options may come before or after the ID */
	while ((c = getopt_long(argc - 1, argv + 1, "m:h", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			no_wait = 1;
			break;
		case 'm':
			message = optarg;
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			return cli_help("checkpoint");
		default:
			return cli_usage_error("checkpoint", "unknown option or missing value '%s'",
					       argv[optind > 1 ? optind : 1]);
		}
	}
	nargs = argc - 1 - optind;
	if (!strcmp(sub, "create") || !strcmp(sub, "list")) {
		if (nargs)
			return cli_usage_error("checkpoint", "'%s' takes no arguments", sub);
		if (message && !strcmp(sub, "list"))
			return cli_usage_error("checkpoint", "-m is for 'create'");
	} else if (!strcmp(sub, "restore")) {
		if (nargs != 1)
			return cli_usage_error("checkpoint", "'restore' takes exactly one ID");
		if (message)
			return cli_usage_error("checkpoint", "-m is for 'create'");
	} else {
		return cli_usage_error("checkpoint", "unknown subcommand '%s' (create, list, restore)",
				       sub);
	}
	ret = cli_load_config(&cfg);
	if (ret)
		return ret;
	if (checkpoint_open(&cps, cfg.workspace) < 0) {
		config_release(&cfg);
		return fail_status(err_last_code());
	}
	checkpoint_set_max_file_bytes(cps, (uint64_t)cfg.checkpoints.max_file_bytes);
	if (!strcmp(sub, "create"))
		ret = do_create(cps, message, json);
	else if (!strcmp(sub, "list"))
		ret = do_list(cps, json);
	else if (ws_lock_acquire(&lock, cfg.workspace, "checkpoint restore", no_wait, on_wait,
				 NULL, NULL) < 0)
		ret = fail_status(err_last_code());
	else
		ret = do_restore(cps, argv[1 + optind], json);
	ws_lock_release(&lock);
	checkpoint_close(cps);
	config_release(&cfg);
	return ret;
}
