/* forgex doctor: what forgex needs on this machine, and what it found. */
#include <curl/curl.h>
#include <getopt.h>
#include <git2.h>
#include <jansson.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "base/jsonx.h"
#include "base/log.h"
#include "base/proc.h"
#include "base/termsafe.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/doctor.h"

static const char *section_now = "";

void doctor_section(struct doctor *d, const char *title)
{
	section_now = title;
	if (!d->json)
		printf("%s%s\n", "\n", title);
}

void doctor_item(struct doctor *d, enum doctor_status st, const char *what, const char *fmt, ...)
{
	static const char *const names[] = { "ok", "warn", "FAIL", "info" };
	static const char *const colors[] = { "\033[32m", "\033[33m", "\033[1;31m", "\033[2m" };
	va_list ap;
	char *detail;

	va_start(ap, fmt);
	detail = xstrvfmt(fmt, ap);
	va_end(ap);
	if (st == DOCTOR_FAIL)
		d->failures++;
	else if (st == DOCTOR_WARN)
		d->warnings++;
	if (d->json) {
		json_t *o = json_object();

		jsonx_set(o, "section", jsonx_string(section_now));
		jsonx_set(o, "check", jsonx_string(what));
		jsonx_set(o, "status", jsonx_string(st == DOCTOR_FAIL ? "fail" : names[st]));
		jsonx_set(o, "detail", jsonx_string(detail));
		json_array_append_new(d->items, o);
	} else {
		/* details hold paths and values from files anyone may have written */
		char *shown = termsafe_dup(detail, 0);

		if (log_color_for_fd(STDOUT_FILENO))
			printf("  %s%-4s\033[0m  %-22s %s\n", colors[st], names[st], what, shown);
		else
			printf("  %-4s  %-22s %s\n", names[st], what, shown);
		free(shown);
	}
	free(detail);
}

/*
 * The first line `argv` prints, run from / (quietly, at most 10 s), or
 * NULL when it is not there, fails or prints nothing.
 */
static char *first_line(const char *const *argv)
{
	struct buf out = BUF_INIT;
	struct proc p;
	char *ret = NULL;

	proc_init(&p);
	strvec_pushv(&p.argv, argv);
	p.dir = "/";
	p.out = PROC_IO_CAPTURE;
	p.out_buf = &out;
	p.capture_max = 512;
	p.timeout_ms = 10000;
	if (proc_run(&p) == 0 && out.len) {
		out.buf[strcspn(out.buf, "\r\n")] = '\0';
		ret = xstrdup(out.buf);
	}
	proc_release(&p);
	buf_release(&out);
	return ret;
}

static void check_programs(struct doctor *d)
{
	static const char *const git[] = { "git", "--version", NULL };
	static const char *const ctags[] = { "ctags", "--options=NONE", "--version", NULL };
	char *v;

	doctor_section(d, "Programs");
	/*
	 * From /, and ctags with --options=NONE first: Universal Ctags reads
	 * the option files in .ctags.d/ and ctags.d/ of the current folder (and
	 * ~/.ctags.d, $CTAGS) before anything else, so in the workspace a
	 * cloned repository's option files would run with our privileges.
	 */
	v = first_line(git);
	if (v)
		doctor_item(d, DOCTOR_OK, "git", "%s", v);
	else
		doctor_item(d, DOCTOR_FAIL, "git", "not found on PATH (apt-get install git)");
	free(v);
	v = first_line(ctags);
	if (v && strstr(v, "Universal Ctags"))
		doctor_item(d, DOCTOR_OK, "ctags", "%s", v);
	else if (v)
		doctor_item(d, DOCTOR_WARN, "ctags", "'%s' is not Universal Ctags; the repository map "
			    "needs it (apt-get install universal-ctags)", v);
	else
		doctor_item(d, DOCTOR_WARN, "ctags", "Universal Ctags not found; the repository map "
			    "will be poorer (apt-get install universal-ctags)");
	free(v);
}

static void check_libraries(struct doctor *d)
{
	const curl_version_info_data *cv = curl_version_info(CURLVERSION_NOW);
	const struct scmp_version *sv = seccomp_version();
	char pcre[64] = "";
	int major, minor, rev;

	doctor_section(d, "Libraries");
	doctor_item(d, DOCTOR_OK, "libcurl", "%s (%s)", cv->version,
		    cv->ssl_version ? cv->ssl_version : "no TLS");
	if (!cv->ssl_version)
		doctor_item(d, DOCTOR_WARN, "TLS", "libcurl has no TLS: https endpoints will fail");
	doctor_item(d, DOCTOR_OK, "jansson", "%s", jansson_version_str());
	git_libgit2_version(&major, &minor, &rev);
	doctor_item(d, DOCTOR_OK, "libgit2", "%d.%d.%d", major, minor, rev);
	if (sv)
		doctor_item(d, DOCTOR_OK, "libseccomp", "%u.%u.%u", sv->major, sv->minor, sv->micro);
	else
		doctor_item(d, DOCTOR_FAIL, "libseccomp", "version unknown");
	pcre2_config(PCRE2_CONFIG_VERSION, pcre);
	doctor_item(d, DOCTOR_OK, "PCRE2", "%s", pcre);
}

/* Whether the project file is trusted, and what of it was not applied. */
static void check_trust(struct doctor *d, const struct config *cfg)
{
	struct buf q = BUF_INIT;
	size_t i;

	for (i = 0; i < cfg->nested_ignored.nr; i++)
		doctor_item(d, DOCTOR_WARN, "nested config", "%s is ignored: only the workspace's own "
			    ".forgex/config.toml is read", cfg->nested_ignored.v[i]);
	if (cfg->trust_error)
		doctor_item(d, DOCTOR_WARN, "trust store", "%s", cfg->trust_error);
	if (!cfg->project_exists)
		return;
	buf_add_shell_quoted(&q, cfg->workspace);
	if (cfg->project_trusted)
		doctor_item(d, DOCTOR_OK, "project trust", "trusted (sha256 %.12s): every setting applies",
			    cfg->project_hash);
	else if (!cfg->ignored_nr)
		doctor_item(d, DOCTOR_INFO, "project trust", "not trusted%s; it sets nothing that needs "
			    "trust ('forgex -C %s trust' would let it)", cfg->project_changed ?
			    " (changed since you trusted it)" : "", q.buf);
	else
		doctor_item(d, DOCTOR_WARN, "project trust", "not trusted%s: %zu setting%s not applied "
			    "as written; read the file, then 'forgex -C %s trust'",
			    cfg->project_changed ? " (changed since you trusted it)" : "",
			    cfg->ignored_nr, cfg->ignored_nr == 1 ? "" : "s", q.buf);
	for (i = 0; i < cfg->ignored_nr; i++)
		doctor_item(d, DOCTOR_INFO, "ignored", "%s = %s (%s): %s", cfg->ignored[i].key,
			    cfg->ignored[i].value, cfg->ignored[i].where, cfg->ignored[i].reason);
	buf_release(&q);
}

/* `load_error`: why the configuration did not load (NULL: it did). */
static void check_config(struct doctor *d, struct config *cfg, const char *load_error)
{
	doctor_section(d, "Configuration");
	if (load_error) {
		doctor_item(d, DOCTOR_FAIL, "config", "%s", load_error);
		return;
	}
	doctor_item(d, DOCTOR_INFO, "workspace", "%s", cfg->workspace);
	if (cfg->user_file && access(cfg->user_file, F_OK) == 0)
		doctor_item(d, DOCTOR_OK, "user config", "%s", cfg->user_file);
	else
		doctor_item(d, DOCTOR_INFO, "user config", "none (%s)",
			    cfg->user_file ? cfg->user_file : "HOME is not set");
	if (cfg->project_exists)
		doctor_item(d, DOCTOR_OK, "project config", "%s", cfg->project_file);
	else
		doctor_item(d, DOCTOR_INFO, "project config", "none ('forgex init' writes one)");
	check_trust(d, cfg);
}

int cmd_doctor(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct doctor d = { 0, 0, 0, NULL };
	struct config cfg;
	char *load_error = NULL;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			d.json = 1;
			break;
		case 'h':
			return cli_help("doctor");
		default:
			return cli_usage_error("doctor", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind != argc)
		return cli_usage_error("doctor", "unexpected argument '%s'", argv[optind]);
	if (d.json)
		d.items = json_array();
	else
		printf("forgex %s\n", FX_VERSION);
	config_init(&cfg);
	/* the same configuration as every other command: files, environment, -c */
	cfg.trust_fn = cli_trust_check;
	/* kept now: the checks before its section run programs of their own */
	if (config_load(&cfg, NULL) != 0 || cli_apply_config_flags(&cfg) != 0)
		load_error = xstrdup(err_last());
	check_programs(&d);
	check_libraries(&d);
	check_config(&d, &cfg, load_error);
	doctor_sections(&d, load_error ? NULL : &cfg);
	if (d.json) {
		struct buf b = BUF_INIT;
		json_t *top = json_object();

		jsonx_set(top, "version", jsonx_string(FX_VERSION));
		jsonx_set(top, "failures", json_integer(d.failures));
		jsonx_set(top, "warnings", json_integer(d.warnings));
		jsonx_set(top, "checks", d.items);
		jsonx_dump(&b, top, JSON_INDENT(2));
		puts(b.buf);
		buf_release(&b);
		json_decref(top);
	} else if (d.failures) {
		printf("\n%d required item%s missing or broken.\n", d.failures, d.failures == 1 ? " is" : "s are");
	} else {
		printf("\nEverything forgex requires is here%s.\n",
		       d.warnings ? " (see the warnings above)" : "");
	}
	config_release(&cfg);
	free(load_error);
	return d.failures ? EXIT_FAIL : EXIT_OK;
}
