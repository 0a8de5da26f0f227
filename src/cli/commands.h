#ifndef FX_COMMANDS_H
#define FX_COMMANDS_H

/* One function per subcommand, each in src/cli/cmd_<name>.c. */

int cmd_ask(int argc, char **argv);
int cmd_batch(int argc, char **argv);
int cmd_checkpoint(int argc, char **argv);
int cmd_completion(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_exec(int argc, char **argv);
int cmd_help(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_policy(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_chat(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_log(int argc, char **argv);
int cmd_mcp(int argc, char **argv);
int cmd_map(int argc, char **argv);
int cmd_resume(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_trust(int argc, char **argv);
int cmd_undo(int argc, char **argv);

struct config;
struct pipeline_opts;
struct pipeline_result;
struct buf;

/**
 * Run the pipeline with `po` (cmd_run.c): progress on stderr (or every
 * event as JSON Lines on stdout with `json`), the result on stdout, SIGINT
 * and SIGTERM cancel. Returns the exit status.
 */
int cli_pipeline(const char *cmd, struct config *cfg, struct pipeline_opts *po, int json);
/**
 * Check that the model server of every role answers (before a run or a
 * session): 0, or EXIT_PROVIDER with the error and a hint printed.
 */
int cli_check_providers(const struct config *cfg);
/**
 * As cli_pipeline(), and the result is moved to `keep` (the caller
 * releases it). A session's `cmd` ("/run", "/plan", "/go") makes the
 * ending name the session's /undo rather than `forgex undo RUN`. With
 * `typed` and stdin a terminal, the terminal is read while the run runs
 * as during a session's turn (turnkeys.h): Esc stops the run as Ctrl-C
 * does, and what is typed meanwhile is appended to `typed`.
 */
int cli_pipeline_keep(const char *cmd, struct config *cfg, struct pipeline_opts *po, int json,
		      struct pipeline_result *keep, struct buf *typed);

/**
 * The request from the operands joined with spaces; when there are none
 * and `ask` and stdin and stderr are terminals, asked for on the
 * terminal. -1 when there is none.
 */
int cli_read_request(struct buf *out, int argc, char **argv, int ask);

/** `forgex run` (plan_only 0) and `forgex plan` (1): parse, run the pipeline, present. */
int cli_run_request(const char *name, int plan_only, int argc, char **argv);

#endif
