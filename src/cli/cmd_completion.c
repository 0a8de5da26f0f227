/*
 * forgex completion bash|zsh|fish, and the forgex(1) manual page.
 *
 * Both are made from the command table of main.c, so they cannot drift
 * from the help texts: a command's options are the --long and -s words of
 * its usage text, its subcommands the words that follow "forgex NAME" on
 * its usage lines (checkpoint create|list|restore, config show|get, ...).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strvec.h"
#include "cli/cli.h"
#include "cli/commands.h"

/* Whether the line holding `p` names options: a usage line, or one that starts with '-'. */
static int option_line(const char *usage, const char *p)
{
	const char *bol = p, *q;

	while (bol > usage && bol[-1] != '\n')
		bol--;
	for (q = bol; *q == ' ' || *q == '\t'; q++)
		;
	return *q == '-' || !strncmp(q, "usage: forgex", 13) || !strncmp(q, "forgex ", 7);
}

/* The --long (and -s) options named in `usage`, each once, in order. */
static void options_of(struct strvec *out, const char *usage)
{
	const char *p;

	for (p = usage; *p; p++) {
		size_t n;
		char *opt;

		if (*p != '-' || (p > usage && !isspace((unsigned char)p[-1]) && p[-1] != '[' &&
				  p[-1] != '|' && p[-1] != ','))
			continue;
		if (p[1] == '-' && islower((unsigned char)p[2])) {
			n = 2;
			while (islower((unsigned char)p[n]) || isdigit((unsigned char)p[n]) || p[n] == '-')
				n++;
		} else if (isalpha((unsigned char)p[1]) && !isalnum((unsigned char)p[2]) && p[2] != '-') {
			n = 2;
		} else {
			continue;
		}
		if (!option_line(usage, p))
			continue;
		while (n > 2 && p[n - 1] == '-')
			n--;
		opt = xstrndup(p, n);
		if (strvec_find(out, opt) < 0)
			strvec_push(out, opt);
		free(opt);
		p += n - 1;
	}
}

/* The words after "forgex NAME " on the usage lines, when they are subcommands. */
static void subcommands_of(struct strvec *out, const char *name, const char *usage)
{
	char *lead = xstrfmt("forgex %s ", name);
	const char *p = usage;

	while ((p = strstr(p, lead))) {
		const char *w = p + strlen(lead);
		size_t n = 0;

		while (islower((unsigned char)w[n]))
			n++;
		if (n && (w[n] == ' ' || w[n] == '\n' || w[n] == '|')) {
			char *word = xstrndup(w, n);

			if (strvec_find(out, word) < 0)
				strvec_push(out, word);
			free(word);
			/* "list|call": the rest of the alternatives */
			while (w[n] == '|') {
				const char *a = w + n + 1;
				size_t m = 0;

				while (islower((unsigned char)a[m]))
					m++;
				if (!m)
					break;
				word = xstrndup(a, m);
				if (strvec_find(out, word) < 0)
					strvec_push(out, word);
				free(word);
				w = a;
				n = m;
			}
		}
		p = w;
	}
	free(lead);
}

static void put_words(FILE *f, const struct strvec *v)
{
	size_t i;

	for (i = 0; i < v->nr; i++)
		fprintf(f, "%s%s", i ? " " : "", v->v[i]);
}

/* `s` inside single quotes for a shell */
static void put_squoted(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

static void bash(FILE *f)
{
	const struct cli_command *cmds;
	size_t nr, i;

	cmds = cli_commands(&nr);
	fputs("# bash completion for forgex (made by 'forgex completion bash')\n"
	      "_forgex() {\n"
	      "\tlocal cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
	      "\tlocal i cmd= sub= opts= subs=\n"
	      "\tfor ((i = 1; i < COMP_CWORD; i++)); do\n"
	      "\t\tcase ${COMP_WORDS[i]} in\n"
	      "\t\t-C|-c) ((i++)) ;;\n"
	      "\t\t-*) ;;\n"
	      "\t\t*) if [[ -z $cmd ]]; then cmd=${COMP_WORDS[i]}; elif [[ -z $sub ]]; then sub=${COMP_WORDS[i]}; fi ;;\n"
	      "\t\tesac\n"
	      "\tdone\n"
	      "\tcase $prev in\n"
	      "\t-C|--cwd) COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n"
	      "\t-c) COMPREPLY=($(compgen -W \"$(forgex config show 2>/dev/null | sed -n 's/^\\([a-z_.0-9-]*\\) = .*/\\1=/p')\" -- \"$cur\")); compopt -o nospace 2>/dev/null; return ;;\n"
	      "\tesac\n"
	      "\tif [[ -z $cmd ]]; then\n"
	      "\t\tCOMPREPLY=($(compgen -W \"", f);
	for (i = 0; i < nr; i++)
		if (!(cmds[i].flags & CLI_HIDDEN))
			fprintf(f, "%s ", cmds[i].name);
	fputs("--version --help -C -c -q -v\" -- \"$cur\"))\n"
	      "\t\treturn\n"
	      "\tfi\n"
	      "\tcase $cmd in\n", f);
	for (i = 0; i < nr; i++) {
		struct strvec opts = STRVEC_INIT, subs = STRVEC_INIT;

		if (cmds[i].flags & CLI_HIDDEN)
			continue;
		options_of(&opts, cmds[i].usage);
		strvec_push(&opts, "--help");
		subcommands_of(&subs, cmds[i].name, cmds[i].usage);
		fprintf(f, "\t%s) opts='", cmds[i].name);
		put_words(f, &opts);
		fputs("'; subs='", f);
		if (!strcmp(cmds[i].name, "help")) {
			size_t j;

			for (j = 0; j < nr; j++)
				if (!(cmds[j].flags & CLI_HIDDEN))
					fprintf(f, "%s%s", j ? " " : "", cmds[j].name);
		} else {
			put_words(f, &subs);
		}
		fputs("' ;;\n", f);
		strvec_clear(&opts);
		strvec_clear(&subs);
	}
	fputs("\tesac\n"
	      "\tif [[ $cur == -* ]]; then\n"
	      "\t\tCOMPREPLY=($(compgen -W \"$opts\" -- \"$cur\"))\n"
	      "\telif [[ -n $subs && -z $sub ]]; then\n"
	      "\t\tCOMPREPLY=($(compgen -W \"$subs\" -- \"$cur\"))\n"
	      "\telse\n"
	      "\t\tCOMPREPLY=($(compgen -f -- \"$cur\"))\n"
	      "\tfi\n"
	      "}\n"
	      "complete -o filenames -F _forgex forgex\n", f);
}

static void zsh(FILE *f)
{
	const struct cli_command *cmds;
	size_t nr, i, j;

	cmds = cli_commands(&nr);
	fputs("#compdef forgex\n"
	      "# zsh completion for forgex (made by 'forgex completion zsh')\n"
	      "_forgex() {\n"
	      "\tlocal -a commands opts subs\n"
	      "\tlocal cmd i\n"
	      "\tcommands=(\n", f);
	for (i = 0; i < nr; i++) {
		char *d;

		if (cmds[i].flags & CLI_HIDDEN)
			continue;
		d = xstrfmt("%s:%s", cmds[i].name, cmds[i].summary);
		fputs("\t\t", f);
		put_squoted(f, d);
		fputc('\n', f);
		free(d);
	}
	fputs("\t)\n"
	      "\tfor ((i = 2; i < CURRENT; i++)); do\n"
	      "\t\tcase ${words[i]} in\n"
	      "\t\t-C|-c) ((i++)) ;;\n"
	      "\t\t-*) ;;\n"
	      "\t\t*) cmd=${words[i]}; break ;;\n"
	      "\t\tesac\n"
	      "\tdone\n"
	      "\tif [[ -z $cmd ]]; then\n"
	      "\t\tif [[ ${words[CURRENT]} == -* ]]; then\n"
	      "\t\t\tcompadd -- --version --help -C -c -q -v\n"
	      "\t\telse\n"
	      "\t\t\t_describe 'forgex command' commands\n"
	      "\t\tfi\n"
	      "\t\treturn\n"
	      "\tfi\n"
	      "\tcase $cmd in\n", f);
	for (i = 0; i < nr; i++) {
		struct strvec opts = STRVEC_INIT, subs = STRVEC_INIT;

		if (cmds[i].flags & CLI_HIDDEN)
			continue;
		options_of(&opts, cmds[i].usage);
		strvec_push(&opts, "--help");
		subcommands_of(&subs, cmds[i].name, cmds[i].usage);
		if (!strcmp(cmds[i].name, "help"))
			for (j = 0; j < nr; j++)
				if (!(cmds[j].flags & CLI_HIDDEN))
					strvec_push(&subs, cmds[j].name);
		fprintf(f, "\t%s) opts=(", cmds[i].name);
		put_words(f, &opts);
		fputs(") subs=(", f);
		put_words(f, &subs);
		fputs(") ;;\n", f);
		strvec_clear(&opts);
		strvec_clear(&subs);
	}
	fputs("\tesac\n"
	      "\tif [[ ${words[CURRENT]} == -* ]]; then\n"
	      "\t\tcompadd -- $opts\n"
	      "\telif (( ${#subs} )) && [[ ${words[CURRENT-1]} == $cmd ]]; then\n"
	      "\t\tcompadd -- $subs\n"
	      "\telse\n"
	      "\t\t_files\n"
	      "\tfi\n"
	      "}\n"
	      "_forgex \"$@\"\n", f);
}

static void fish(FILE *f)
{
	const struct cli_command *cmds;
	size_t nr, i, j;

	cmds = cli_commands(&nr);
	fputs("# fish completion for forgex (made by 'forgex completion fish')\n"
	      "complete -c forgex -n __fish_use_subcommand -s C -r -d 'run as if started in DIR'\n"
	      "complete -c forgex -n __fish_use_subcommand -s c -r -d 'set a configuration key'\n"
	      "complete -c forgex -n __fish_use_subcommand -s q -l quiet -d 'print errors only'\n"
	      "complete -c forgex -n __fish_use_subcommand -s v -l verbose -d 'print more'\n"
	      "complete -c forgex -n __fish_use_subcommand -l version -d 'print the version'\n", f);
	for (i = 0; i < nr; i++) {
		struct strvec opts = STRVEC_INIT, subs = STRVEC_INIT;
		char *cond;

		if (cmds[i].flags & CLI_HIDDEN)
			continue;
		fprintf(f, "complete -c forgex -f -n __fish_use_subcommand -a %s -d ", cmds[i].name);
		put_squoted(f, cmds[i].summary);
		fputc('\n', f);
		options_of(&opts, cmds[i].usage);
		strvec_push(&opts, "--help");
		subcommands_of(&subs, cmds[i].name, cmds[i].usage);
		cond = xstrfmt("__fish_seen_subcommand_from %s", cmds[i].name);
		for (j = 0; j < opts.nr; j++) {
			const char *o = opts.v[j];

			fprintf(f, "complete -c forgex -n '%s' %s %s\n", cond,
				o[1] == '-' ? "-l" : "-s", o + (o[1] == '-' ? 2 : 1));
		}
		for (j = 0; j < subs.nr; j++)
			fprintf(f, "complete -c forgex -f -n '%s' -a %s\n", cond, subs.v[j]);
		free(cond);
		strvec_clear(&opts);
		strvec_clear(&subs);
	}
}

int cmd_completion(int argc, char **argv)
{
	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return cli_help("completion");
	if (argc != 2)
		return cli_usage_error("completion", "expected one of bash, zsh, fish");
	if (!strcmp(argv[1], "bash"))
		bash(stdout);
	else if (!strcmp(argv[1], "zsh"))
		zsh(stdout);
	else if (!strcmp(argv[1], "fish"))
		fish(stdout);
	else
		return cli_usage_error("completion", "unknown shell '%s' (bash, zsh, fish)", argv[1]);
	return EXIT_OK;
}

/* Text as roff: backslashes doubled, a line's leading dot or quote made plain. */
static void roff(FILE *f, const char *s)
{
	int bol = 1;

	for (; *s; s++) {
		if (bol && (*s == '.' || *s == '\''))
			fputs("\\&", f);
		if (*s == '\\')
			fputs("\\e", f);
		else if (*s == '-')
			fputs("\\-", f);
		else
			fputc(*s, f);
		bol = *s == '\n';
	}
}

int cli_write_manpage(FILE *f)
{
	const struct cli_command *cmds;
	size_t nr, i;

	cmds = cli_commands(&nr);
	fprintf(f, ".\\\" forgex(1), made by 'forgex help --man' from the help texts\n"
		".TH FORGEX 1 \"\" \"forgex %s\" \"User Commands\"\n"
		".SH NAME\n"
		"forgex \\- turn a plain\\-language request into a verified change to a repository\n"
		".SH SYNOPSIS\n.nf\n", FX_VERSION);
	roff(f, cli_global_usage() + (strncmp(cli_global_usage(), "usage: ", 7) ? 0 : 7));
	fputs(".fi\n"
	      ".SH DESCRIPTION\n"
	      "forgex takes a request and a real repository and returns a verified change.\n"
	      "Specialised agents (Architect, Builder, Expert Coder, Supervisor) work through\n"
	      "permission\\-gated tools behind a command policy, a kernel\\-enforced sandbox,\n"
	      "git checkpoints and the project's own tests; when it cannot deliver a passing\n"
	      "change it puts the tree back exactly as it was. It talks to any\n"
	      "OpenAI\\-compatible model server.\n"
	      ".SH GLOBAL OPTIONS\n.nf\n", f);
	roff(f, cli_global_options);
	fputs(".fi\n.SH COMMANDS\n", f);
	for (i = 0; i < nr; i++) {
		if (cmds[i].flags & CLI_HIDDEN)
			continue;
		fprintf(f, ".SS \"forgex %s\"\n", cmds[i].name);
		roff(f, cmds[i].summary);
		fputs(".\n.PP\n.nf\n", f);
		roff(f, cmds[i].usage);
		fputs(".fi\n", f);
	}
	fputs(".SH EXIT STATUS\n"
	      ".TP\n0\ndone; PASS\n"
	      ".TP\n1\nFAIL after the last iteration; a check failed\n"
	      ".TP\n2\nusage or configuration error\n"
	      ".TP\n3\nthe model provider failed\n"
	      ".TP\n4\nrefused by the policy or the sandbox\n"
	      ".TP\n5\nneeds approval (policy check only)\n"
	      ".TP\n130\ninterrupted (the tree restored)\n"
	      ".SH ENVIRONMENT\n"
	      ".TP\n.B FORGEX_\\fISECTION\\fB_\\fIKEY\\fR\n"
	      "sets a configuration key, above the files and below \\fB\\-c\\fR\n"
	      ".TP\n.B NO_COLOR\nno colour in the output\n"
	      ".TP\n.B XDG_CONFIG_HOME\nwhere the user file is (default \\fI~/.config\\fR)\n"
	      ".SH FILES\n"
	      ".TP\n.I ~/.config/forgex/config.toml\nthe user configuration\n"
	      ".TP\n.I .forgex/config.toml\nthe project configuration\n"
	      ".TP\n.I .forgex/runs/\none folder per run: events, transcript, plan, summary\n"
	      ".TP\n.I .forgex/checkpoints/\nthe shadow repository of checkpoints\n"
	      ".SH SEE ALSO\n"
	      "\\fBgit\\fR(1); docs/usage.md and docs/configuration.md in the source tree\n", f);
	return EXIT_OK;
}
