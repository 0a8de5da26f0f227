/*
 * forgex: the command table and global options (after git's git.c and
 * libgit2's src/cli/main.c).
 */
#include <errno.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/redact.h"
#include "base/strvec.h"
#include "base/termsafe.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "config/config.h"

/*
 * Two programs are built from this file. `forgex-core` holds every
 * command. `forgex` (built with FX_LAUNCHER) links only the light
 * libraries and runs the light commands itself; a command marked
 * CLI_HEAVY (it needs libcurl or libgit2, whose loading alone costs
 * several milliseconds) is handed to forgex-core, next to it, by execv()
 * with the untouched argument list. So `forgex --version` and `forgex
 * policy check` start in about a millisecond.
 */
#ifdef FX_LAUNCHER
#define HEAVY(fn) NULL
#else
#define HEAVY(fn) fn
#endif

int cli_quiet, cli_verbose;
static struct strvec cli_config_flags = STRVEC_INIT;	/* "key=value" from -c */

static const struct cli_command commands[] = {
	{ "ask", HEAVY(cmd_ask), CLI_HEAVY, "Ask the configured model a question about this project",
	  "usage: forgex ask [--json] [--provider NAME] [-m M] [--transcript FILE]\n"
	  "                  QUESTION...\n"
	  "\n"
	  "Sends QUESTION to the model of [providers.NAME] (default: the\n"
	  "architect's provider), with the project's instruction files ([context]\n"
	  "instructions) in the system prompt. The model may look through the\n"
	  "project with read-only tools (list_dir, read_file, search) before it\n"
	  "answers; the answer is printed as it arrives, and on a terminal each\n"
	  "tool call is shown on stderr. [agents.architect] max_turns bounds the\n"
	  "model calls, [budget] the tokens, cost and time.\n"
	  "\n"
	  "--json              print the final message and token usage as JSON\n"
	  "--provider NAME     use [providers.NAME]\n"
	  "-m, --model M       use model M instead of the provider's\n"
	  "--transcript FILE   append the exchange to FILE (JSON Lines, redacted);\n"
	  "                    a provider with type = \"replay\" and transcript = FILE\n"
	  "                    answers from it offline\n"
	  "\n"
	  "Exit status: 0 answered, 1 no answer within max_turns or the budget,\n"
	  "2 usage or configuration error, 3 the provider failed (or the answer\n"
	  "was cut at the token limit), 130 interrupted.\n" },
	{ "batch", cmd_batch, 0, "Run many tasks, each a verified run in a worktree of its own",
	  "usage: forgex batch TASKS.jsonl [-j N] [-m MODEL] [--out DIR] [--keep]\n"
	  "                    [--wall-time S] [--shard K/N | --shards N]\n"
	  "                    [--predictions FILE] [--json]\n"
	  "       forgex batch collect [--out DIR] [--predictions FILE] DIR...\n"
	  "       forgex batch k8s TASKS.jsonl --image IMAGE --shards N --parallelism P\n"
	  "                    [--configmap NAME] [--pvc NAME] [--secret NAME] [-- ARGS...]\n"
	  "\n"
	  "Each line of TASKS.jsonl is a task: {\"id\", \"repo\", \"commit\", \"request\",\n"
	  "\"test_command\"?, \"config\"?}, or an SWE-bench instance (instance_id, repo,\n"
	  "base_commit, problem_statement, FAIL_TO_PASS, PASS_TO_PASS: the tests its\n"
	  "run narrows the tests to and requires to pass, as pipeline.must_pass).\n"
	  "A repository (a path or a git URL) is cloned once into a mirror in the\n"
	  "user's cache; each task is a full 'forgex run' in a detached git\n"
	  "worktree at its commit\n"
	  "(its own run folder, lock, checkpoints and sandbox), N at a time, the\n"
	  "worktree removed afterwards. Each finished task is one line of\n"
	  "DIR/results.jsonl (status PASS, FAIL, ERROR, TIMEOUT or SKIPPED); DIR/\n"
	  "summary.json and a table close the batch. Running the same command again\n"
	  "skips finished tasks and starts the others from a clean worktree. Ctrl-C\n"
	  "starts no more tasks and lets the running ones finish; a second Ctrl-C\n"
	  "interrupts them too (their trees are put back). 'docs/batch.md' says more.\n"
	  "-j, --wall-time, --grace, --max-tokens, --max-cost, --max-cost-total,\n"
	  "--repo-url and --keep have defaults in [batch] of the configuration; the\n"
	  "option wins over them.\n"
	  "\n"
	  "-j N               tasks at once (default: the cores); each task's commands\n"
	  "                   get sandbox.memory_limit / N unless the task sets it\n"
	  "--out DIR          results, logs and run folders (default: batch-results)\n"
	  "--work DIR         where the worktrees are made (default: DIR/work)\n"
	  "-m, --model MODEL  every role's model in every task (as -c agents.ROLE.model)\n"
	  "--keep             keep each task's worktree (and its run folder in it)\n"
	  "--no-keep          do not, whatever [batch] keep says\n"
	  "--wall-time S      a task still running after S seconds is stopped: TIMEOUT\n"
	  "--grace S          after the stop, S seconds before it is killed (30)\n"
	  "--max-tokens N     per task ([budget] max_tokens of its run)\n"
	  "--max-cost USD     per task ([budget] max_cost_usd of its run)\n"
	  "--max-cost-total USD  the whole batch: no task starts once it is spent\n"
	  "--shard K/N        run only shard K (0 to N-1) of N; a task's shard\n"
	  "                   depends on its id alone; results in DIR/shard-K\n"
	  "--shards N         the same, with K from JOB_COMPLETION_INDEX (an Indexed\n"
	  "                   Job's pods)\n"
	  "--predictions FILE write SWE-bench predictions (instance_id,\n"
	  "                   model_name_or_path, model_patch); .jsonl for JSON Lines\n"
	  "--model-name NAME  their model_name_or_path (default: forgex)\n"
	  "--repo-url T       clone URL of an SWE-bench \"owner/name\" ({repo} in T;\n"
	  "                   default https://github.com/{repo}.git)\n"
	  "--mirrors DIR      the mirrors' folder (default: ~/.cache/forgex/mirrors)\n"
	  "--retry STATUS     run the tasks that ended FAIL, ERROR or TIMEOUT again\n"
	  "                   (repeatable; e.g. after the model server came back)\n"
	  "--json             every event as one JSON line on stdout\n"
	  "\n"
	  "collect merges the results of DIRs (and of their shard-K folders): one\n"
	  "line per task, sorted by id, into --out DIR when given.\n"
	  "k8s prints a Kubernetes Indexed Job (JSON, which is YAML) that runs N\n"
	  "shards, P at a time, each pod writing to /results/shard-K on the volume\n"
	  "--pvc (forgex-results), the model key from --secret (forgex-model, key\n"
	  "--secret-key api-key, as --key-env OPENAI_API_KEY), the tasks from\n"
	  "--configmap or at their path in the image; also --name, --cpu, --memory,\n"
	  "-j, --backoff (retries per index, 2), --env NAME=VALUE (e.g.\n"
	  "FORGEX_PROVIDERS_DEFAULT_BASE_URL=...) and --sandbox none|native (none:\n"
	  "the pod is the boundary; said in every pod's command line).\n"
	  "\n"
	  "Exit status: 0 every task passed, 1 every task has its result and some did\n"
	  "not pass, 2 usage error or a bad task file, 75 the batch could not go on\n"
	  "(e.g. results not writable: run it again), 130 interrupted.\n" },
	{ "chat", HEAVY(cmd_chat), CLI_HEAVY, "Talk with the model about this project and change it, turn by turn",
	  "usage: forgex chat [--continue | --resume ID] [--yes|--ask|--safe] [--no-wait]\n"
	  "                   [-m MODEL] [MESSAGE...]\n"
	  "       forgex \"MESSAGE\"\n"
	  "\n"
	  "An interactive session (also what 'forgex' alone opens on a terminal):\n"
	  "each message is a turn of an agent with the Builder's tools, under the\n"
	  "same policy, sandbox, approvals, hooks and budgets as a run. The model's\n"
	  "text streams; every tool call is shown with its arguments and its\n"
	  "result, refusals and failures marked, and every edit as a diff. Each\n"
	  "turn that changes files is checkpointed and can be undone (/undo), as can\n"
	  "a /run or /go made from it: /undo takes the newest and the model is told.\n"
	  "A message too large for the model's window is not sent: it can go as a\n"
	  "file the model reads in parts, or cut.\n"
	  "MESSAGE, when given, is the first turn ('forgex \"MESSAGE\"' too: off a\n"
	  "terminal that runs it as 'forgex run' does). Slash commands: /run [REQUEST],\n"
	  "/plan [REQUEST], /go, /diff [TURN], /undo, /model [ROLE] NAME, /cost,\n"
	  "/compact, /clear, /resume [ID], /permissions [ask|auto|safe], /last\n"
	  "(Ctrl-O: the last command's whole output), /help, /exit ('/help' in a\n"
	  "session says more). @path in a message attaches that\n"
	  "file of the project (Tab completes it). Ctrl-C or Esc stops the running\n"
	  "turn and comes back to the prompt (Ctrl-C at an approval question too,\n"
	  "the command not run); what is typed meanwhile is not echoed and waits\n"
	  "for the next prompt. Ctrl-C twice at the prompt, or Ctrl-D, leaves; Esc\n"
	  "twice at an empty prompt brings back the last message to edit. A paste\n"
	  "of more than 8 lines shows as one line ([Pasted text #1 +N lines]) and\n"
	  "is sent whole. 'exit', 'quit' or 'clear' alone is not sent: /exit and\n"
	  "/clear are named. Input that is not a terminal is read line by line (a\n"
	  "script of messages and commands). With no configuration and no server\n"
	  "where the defaults point, a session on a terminal offers to write the\n"
	  "user configuration ('forgex config init --user').\n"
	  "\n"
	  "Sessions are kept in .forgex/sessions/ID (events.jsonl, transcript.jsonl\n"
	  "as for runs, and the conversation); 'forgex log' lists them. A session\n"
	  "in which nothing was said is not kept.\n"
	  "--continue    go on with the session of this project you used last\n"
	  "--resume ID   go on with session ID (an id or a unique prefix)\n"
	  "--yes, --ask, --safe\n"
	  "              the approval mode for this session (permissions.mode auto,\n"
	  "              ask or safe)\n"
	  "--no-wait     a turn that finds the workspace busy (a run) fails instead\n"
	  "              of waiting\n"
	  "-m, --model MODEL\n"
	  "              the model of this session (every role's, as -c\n"
	  "              agents.ROLE.model=MODEL would set it)\n" },
	{ "checkpoint", HEAVY(cmd_checkpoint), CLI_HEAVY, "Save, list and restore snapshots of the working tree",
	  "usage: forgex checkpoint create [-m MESSAGE] [--json]\n"
	  "       forgex checkpoint list [--json]\n"
	  "       forgex checkpoint restore ID [--json] [--no-wait]\n"
	  "\n"
	  "create   record the whole working tree: files git tracks and untracked\n"
	  "         files that are not ignored (.gitignore, .git/info/exclude,\n"
	  "         core.excludesFile), with their executable bit and symbolic links;\n"
	  "         kept in .forgex/checkpoints, never in your own git repository\n"
	  "list     show checkpoints, newest first: ID, time, message\n"
	  "restore  make the tree exactly what it was at checkpoint ID (a prefix of\n"
	  "         4+ hex digits): changed files rewritten, deleted ones recreated,\n"
	  "         new ones removed; ignored files are left alone. The tree as it\n"
	  "         was is saved first as a checkpoint \"before restore of ID\".\n"
	  "\n"
	  "Exit status: 0 done, 1 failed (or refused), 2 usage error or unknown ID.\n" },
	{ "completion", cmd_completion, 0, "Print the shell completion script for bash, zsh or fish",
	  "usage: forgex completion bash|zsh|fish\n"
	  "\n"
	  "Prints a completion script for the shell: commands, their options and\n"
	  "subcommands, as the help texts name them. For example:\n"
	  "\n"
	  "  source <(forgex completion bash)          # in ~/.bashrc\n"
	  "  forgex completion zsh > ~/.zfunc/_forgex   # with fpath+=(~/.zfunc)\n"
	  "  forgex completion fish > ~/.config/fish/completions/forgex.fish\n"
	  "\n"
	  "make install puts all three where the shells look.\n" },
	{ "config", cmd_config, 0, "Show or query the effective configuration, or write the user's",
	  "usage: forgex config show [--json]\n"
	  "       forgex config get KEY\n"
	  "       forgex config init --user [--base-url URL --model NAME]\n"
	  "                                 [--api-key-env NAME] [--force]\n"
	  "\n"
	  "show   print every key, its effective value and where it came from\n"
	  "       (default, user, project, env, flag); --json for a JSON array\n"
	  "get    print the effective value of KEY (e.g. sandbox.backend,\n"
	  "       providers.default.model); exit 2 for an unknown key\n"
	  "init   write the user file ($XDG_CONFIG_HOME/forgex/config.toml, mode\n"
	  "       0600): on a terminal, the model servers on 127.0.0.1 (Ollama\n"
	  "       11434, llama.cpp 8080, vLLM 8000, LM Studio 1234, or the base\n"
	  "       URLs of FORGEX_SETUP_SERVERS) are listed with their models to\n"
	  "       pick from, or a URL, a model and the NAME of the API key's\n"
	  "       variable are asked for (the key is never written); off a\n"
	  "       terminal, --base-url and --model (and --api-key-env) say it.\n"
	  "       An existing file is replaced when you say so, or with --force\n" },
	{ "diff", HEAVY(cmd_diff), CLI_HEAVY, "Show a run's change, or what changed since a checkpoint",
	  "usage: forgex diff [RUN|ID] [--stat] [--color[=always|never|auto]]\n"
	  "\n"
	  "With RUN ('last', an id or a unique prefix; the default when there are\n"
	  "runs): the run's whole change, from before it to how it ended, its own\n"
	  "files only. With a checkpoint ID (4+ hex digits; the default when there\n"
	  "are no runs: the newest): from it to the working tree, with the files a\n"
	  "checkpoint records: new files as added, deleted ones as removed, mode\n"
	  "changes, binary files noted; a file over [checkpoints] max_file_bytes\n"
	  "is not compared but named, with its size, on a line before the patch.\n"
	  "Options may follow the id.\n"
	  "--stat        a summary per file instead of the patch\n"
	  "--color=WHEN  colour the output: always, never, or auto (default: when\n"
	  "              standard output is a terminal and NO_COLOR is unset)\n" },
	{ "doctor", HEAVY(cmd_doctor), CLI_HEAVY, "Check what forgex needs on this machine",
	  "usage: forgex doctor [--json]\n"
	  "\n"
	  "Reports the programs and libraries forgex uses and what it found.\n"
	  "Exits 1 when something required is missing.\n" },
	{ "exec", cmd_exec, 0, "Run one command as an agent's command runs",
	  "usage: forgex exec [--backend B] [--cwd DIR] [--timeout S] [--json]\n"
	  "                   [--yes|--ask|--safe] -- CMD [ARG...]\n"
	  "\n"
	  "Runs CMD ARG... (an argv, never a shell string) exactly as an agent's\n"
	  "command runs: the command policy, approval in \"ask\" mode (on the\n"
	  "terminal), then the sandbox, in this project's workspace with a\n"
	  "sanitized environment, stdin from /dev/null, a timeout and an output\n"
	  "cap. Prints the command's output and exits with its status (128+N when\n"
	  "killed by signal N), 4 when the policy or the sandbox refuses, 130 when\n"
	  "interrupted (the command and everything it started are stopped).\n"
	  "\n"
	  "--backend B   auto, native, docker or none (default: [sandbox] backend)\n"
	  "--cwd DIR     working folder, from the current one; must be inside the\n"
	  "              workspace (default: the current folder)\n"
	  "--timeout S   seconds (default: [terminal] timeout_seconds)\n"
	  "--json        print the result as one JSON object: argv, exit_code,\n"
	  "              stdout, stderr, timed_out, duration_ms, truncated\n"
	  "--yes, --ask, --safe\n"
	  "              the approval mode for this command only (permissions.mode\n"
	  "              auto, ask or safe)\n" },
	{ "help", cmd_help, 0, "Show help for a command",
	  "usage: forgex help [COMMAND]\n"
	  "       forgex help --man\n"
	  "\n"
	  "--man   print the forgex(1) manual page (roff), made from these help texts\n" },
	{ "init", cmd_init, 0, "Write .forgex/config.toml for this project",
	  "usage: forgex init [--force] [--here]\n"
	  "\n"
	  "Writes .forgex/config.toml in the project with every key present but\n"
	  "commented out, showing its default. The project is the nearest folder\n"
	  "up from here holding .forgex/ or .git, as for every other command: in\n"
	  "a subfolder of a repository, the repository's top (it says so).\n"
	  "Inside a git repository, adds .forgex/runs/, .forgex/checkpoints/ and\n"
	  ".forgex/map/ to .git/info/exclude. Refuses to overwrite an existing\n"
	  "file unless --force is given.\n"
	  "\n"
	  "--here    make the current folder the project, even inside a repository\n" },
	{ "log", HEAVY(cmd_log), CLI_HEAVY, "List runs and sessions, or show one's timeline",
	  "usage: forgex log [--json] [RUN|SESSION]\n"
	  "\n"
	  "Without RUN: every run and interactive session of this project, oldest\n"
	  "first: id, time, outcome (pass, fail, interrupted, error, planned;\n"
	  "unfinished when it never ended; session:N for a session of N turns,\n"
	  "then how long ago it was last used) and the request (a session's first\n"
	  "message, kept past /clear). With RUN or SESSION (an id, a\n"
	  "unique prefix, or 'last' for the last run): its events, numbered and\n"
	  "timed: stages, model calls, tool calls and results, commands,\n"
	  "checkpoints, test results, votes and verdicts; a session's messages,\n"
	  "turns, edits and undos. Under each command, its output as forgex kept it.\n"
	  "A run whose tree is not fully restored (its\n"
	  "rollback or undo could not finish, or it never ended) ends with each\n"
	  "path still changed, why, and the command that finishes it.\n"
	  "--json   one JSON object per line (with \"kind\": \"run\" or \"session\")\n" },
	{ "map", cmd_map, 0, "Show the repository map the agents are given",
	  "usage: forgex map [--tokens N] [--focus X]... [--json] [--stats] [REQUEST...]\n"
	  "\n"
	  "Prints the repository map: the files of this project ranked by how the\n"
	  "rest of the code refers to them (personalised PageRank over the names\n"
	  "each file defines and uses), each with the source lines of its main\n"
	  "definitions, in at most N tokens. Definitions come from Universal Ctags,\n"
	  "run in the sandbox; the index is cached in .forgex/map/ and only changed\n"
	  "files are read again. REQUEST (and --focus) personalise the ranking as\n"
	  "a request to 'forgex run' would.\n"
	  "\n"
	  "--tokens N   the budget (default: [context] map_tokens)\n"
	  "--focus X    centre on a path, a folder or a symbol name (repeatable)\n"
	  "--json       one JSON object: budget, tokens, files (path, rank,\n"
	  "             definitions), text\n"
	  "--stats      also files, definitions, references, cache hits and times\n"
	  "             (on stderr; in the object with --json)\n" },
	{ "mcp", HEAVY(cmd_mcp), CLI_HEAVY, "List the configured MCP servers and their tools, or call one",
	  "usage: forgex mcp list [--json]\n"
	  "       forgex mcp call [--json] [--yes] NAME TOOL [ARGUMENTS-JSON]\n"
	  "\n"
	  "list   start every enabled [mcp_servers.NAME], run the MCP handshake and\n"
	  "       show its state, protocol revision and tools (as the model sees\n"
	  "       them: NAME__TOOL), then stop it\n"
	  "call   start server NAME (even when enabled = false) and call TOOL with\n"
	  "       ARGUMENTS-JSON (default {}); asks for approval unless\n"
	  "       permissions.mode is auto or --yes is given; prints the result's\n"
	  "       text (--json: the whole result object)\n"
	  "\n"
	  "Exit status: 0 done, 1 a server did not start or the tool reported an\n"
	  "error, 2 usage or configuration error, 4 not approved, 130 interrupted.\n" },
	{ "plan", HEAVY(cmd_plan), CLI_HEAVY, "Ask the Architect for a plan, changing nothing",
	  "usage: forgex plan [--json] [-m MODEL] REQUEST...\n"
	  "\n"
	  "Runs the Architect alone (read-only tools) and prints its plan. The run\n"
	  "is recorded in .forgex/runs/ like every run (plan.json).\n"
	  "--json   the events as JSON Lines on stdout\n"
	  "-m, --model MODEL  every role's model for this plan\n" },
	{ "policy", cmd_policy, 0, "Ask the command policy about a command",
	  "usage: forgex policy check [--json] [--] CMD [ARG...]\n"
	  "\n"
	  "Prints what the command policy of this project decides for the\n"
	  "command CMD ARG...: 'allow', 'deny: REASON' or 'approval: REASON',\n"
	  "and exits 0, 4 or 5. Nothing is run and nobody is asked. The policy\n"
	  "is [terminal] allowed and denied and [permissions] mode of the\n"
	  "effective configuration ('forgex config show').\n"
	  "\n"
	  "--json   print {\"decision\": \"allow|deny|approval\", \"reason\": \"...\"}\n" },
	{ "replay", HEAVY(cmd_replay), CLI_HEAVY, "Re-run a recorded run or session offline from its transcript",
	  "usage: forgex replay [--json] [--strict] RUN|SESSION\n"
	  "\n"
	  "Puts the tree back to how it was before RUN (the tree as it is now is\n"
	  "saved as a checkpoint first), then runs the same request again with\n"
	  "every role answered from RUN's transcript, without a model or network.\n"
	  "Says whether the outcome is the same; exits 1 when it is not. For an\n"
	  "interactive SESSION: from the tree it started from, each of its turns\n"
	  "again (with its /undo, /clear and /compact), each of which must end as\n"
	  "it did and change the same files.\n"
	  "--strict  a request that differs from the recording is an error (default:\n"
	  "          a warning, and the recorded answer is used)\n" },
	{ "resume", HEAVY(cmd_resume), CLI_HEAVY, "Continue an interrupted run",
	  "usage: forgex resume [--json] [--no-wait] [-m MODEL] [RUN]\n"
	  "\n"
	  "Continues RUN (default: the last run; interrupted, killed, crashed, or\n"
	  "stopped by a power cut) from its last completed stage: the run's files\n"
	  "are put back to how that stage left them (yours stay), then the\n"
	  "pipeline goes on. -m MODEL: every role's model from here on. Exit\n"
	  "status as for 'forgex run'.\n" },
	{ "run", HEAVY(cmd_run), CLI_HEAVY, "Turn a request into a verified change (the main job)",
	  "usage: forgex run [--json] [--no-wait] [--yes|--ask|--safe] [-m MODEL]\n"
	  "                  REQUEST...\n"
	  "\n"
	  "Runs the tests once (baseline), takes a checkpoint, then: the Architect\n"
	  "plans, the Builder implements, the Expert Coder reviews and fixes, the\n"
	  "tests run, and the Supervisor (with [review] voters) judges; on FAIL the\n"
	  "Expert Coder repairs and the tests and the review run again, for at\n"
	  "most [pipeline] max_iterations reviews in all (3: the first attempt and\n"
	  "two repairs). A PASS\n"
	  "is refused when a test that passed at baseline now fails or the tests\n"
	  "could not run. On PASS the change stays in the tree (committed with\n"
	  "[pipeline] commit = true: the run's files only); on the final FAIL the\n"
	  "run's changes are undone ([pipeline] on_failure = \"rollback\"; files you\n"
	  "changed meanwhile stay yours) or the attempt is kept (\"keep\").\n"
	  "Ctrl-C (or the terminal closing, SIGQUIT, SIGPIPE) stops the model and\n"
	  "any command and undoes the run's changes; 'forgex resume' goes on.\n"
	  "One run at a time per workspace: a second waits for the first; with\n"
	  "--no-wait it fails at once, naming the holder (pid, run, since when).\n"
	  "[budget] max_tokens, max_cost_usd and max_wall_seconds end a run early.\n"
	  "Everything is recorded in .forgex/runs/RUN/ (see 'forgex log').\n"
	  "With no REQUEST on a terminal, forgex asks for one.\n"
	  "\n"
	  "--json   every event as one JSON line on stdout instead of the progress\n"
	  "         and the summary\n"
	  "--yes, --ask, --safe\n"
	  "         the approval mode for this run only (permissions.mode auto, ask\n"
	  "         or safe)\n"
	  "-m, --model MODEL\n"
	  "         every role's model for this run (as -c agents.ROLE.model=MODEL\n"
	  "         for each role)\n"
	  "\n"
	  "The progress shows each stage, each tool call, every refused or failed\n"
	  "tool call with why, the tests' counts and the failing tests by name, and\n"
	  "each reviewer's verdict with its reasons and the fixes it asks for; -v\n"
	  "adds the model's text as it streams.\n"
	  "\n"
	  "Exit status: 0 PASS, 1 FAIL (or a budget ran out), 2 usage or\n"
	  "configuration error, 3 the provider failed, 4 refused by the sandbox,\n"
	  "130 interrupted (tree restored).\n" },
	{ "trust", cmd_trust, 0, "Trust this project's .forgex/config.toml as it is now",
	  "usage: forgex trust [DIR]\n"
	  "       forgex trust --revoke [DIR]\n"
	  "       forgex trust --list\n"
	  "\n"
	  "A project's .forgex/config.toml may come from a cloned repository or\n"
	  "be written by a command, so until you trust it, its settings that\n"
	  "decide where commands run, what they may touch and where data and keys\n"
	  "go ([sandbox], [terminal], [permissions] mode, [providers.*] base_url,\n"
	  "api_key_env, headers) may only make things stricter; forgex says on\n"
	  "stderr which ones it ignored. 'forgex trust' records the file's path\n"
	  "and the SHA-256 of its content in $XDG_STATE_HOME/forgex/trusted\n"
	  "(~/.local/state/forgex/trusted); once the file changes it is untrusted\n"
	  "again. Read it first: 'forgex config show' marks what is ignored.\n"
	  "\n"
	  "DIR         the project (default: the current folder's workspace)\n"
	  "--revoke    forget the file: its settings may only tighten again\n"
	  "--list      every trusted file, and whether it changed since\n" },
	{ "undo", HEAVY(cmd_undo), CLI_HEAVY, "Revert a run's changes",
	  "usage: forgex undo [--force] [--no-wait] [RUN]\n"
	  "\n"
	  "Puts RUN's own files (default: the last run) back as they were before\n"
	  "it, ignored files included; other files stay as they are. Refuses when\n"
	  "a file of RUN changed since it ended, listing them; --force reverts them\n"
	  "anyway, saving your versions in the run folder. A commit the run made is\n"
	  "reverted by a new commit while it is HEAD. The tree before the undo is\n"
	  "saved as a checkpoint, and the undo prints the command that redoes it.\n"
	  "A run already undone (rolled back) has nothing to undo: exit 0. Paths\n"
	  "that cannot be put back (a read-only folder) are listed with why; run\n"
	  "the undo again once the cause is gone.\n" },
	{ "verify", cmd_verify, 0, "Run the project's tests and report what failed",
	  "usage: forgex verify [--json]\n"
	  "\n"
	  "Finds how this project is tested and runs it the way an agent's command\n"
	  "runs (command policy, approval, sandbox, [terminal] timeout_seconds).\n"
	  "The command is [pipeline] test_command when set (it counts as approved\n"
	  "by you); otherwise the first of: a Makefile 'test' or 'check' target,\n"
	  "package.json scripts.test (npm test), pytest configuration, Python test\n"
	  "files (unittest), go.mod, Cargo.toml, a configured CMake build*/ folder\n"
	  "(ctest), a configured meson build folder.\n"
	  "\n"
	  "Prints the command and why it was chosen, the passed, failed, skipped\n"
	  "and error counts read from the output (pytest, unittest, go test,\n"
	  "cargo test, node --test, TAP, Jest, Vitest, ctest, meson, cmocka; the\n"
	  "counts of several formats in one output are added), and each failing\n"
	  "test with an excerpt of its failure. Output in no known format is\n"
	  "judged by the exit status.\n"
	  "\n"
	  "With [pipeline] must_pass (test ids: pytest node ids, unittest or\n"
	  "Django names), the command is narrowed to those tests, as the gate of\n"
	  "'forgex run' narrows it, and each must pass: one that fails, or that\n"
	  "the output does not name, fails the verification. An untrusted project\n"
	  "file cannot set it.\n"
	  "\n"
	  "Exits 0 when everything passed, 1 when tests failed (or a must-pass\n"
	  "test did not pass), 2 when nothing to run was found, 4 when the policy\n"
	  "or the sandbox refused the command, 130 when interrupted.\n"
	  "\n"
	  "--json   print {\"command\": {argv, kind, reason, configured},\n"
	  "         \"result\": {ok, passed, failed, skipped, errors, formats,\n"
	  "         exit_code, timed_out, truncated, duration_ms, tests, tail},\n"
	  "         \"must_pass\": [{id, outcome}] (with must_pass), \"ok\"}\n" },
};

static const char global_usage[] =
	"usage: forgex [--version] [--help] [-C DIR] [-c KEY=VALUE] [-q] [-v]\n"
	"              COMMAND [ARGS] | \"REQUEST\"\n";

const struct cli_command *cli_commands(size_t *nr)
{
	*nr = ARRAY_SIZE(commands);
	return commands;
}

const char cli_global_options[] =
	"  -C DIR          run as if started in DIR\n"
	"  -c KEY=VALUE    set a configuration key (highest precedence)\n"
	"  -q, --quiet     print errors only (no progress)\n"
	"  -v, --verbose   print more: the model's text and every tool call (-v),\n"
	"                  debug lines too (-vv); a -q and a -v cancel (-qv)\n"
	"  --version       print the version\n";

const char *cli_global_usage(void)
{
	return global_usage;
}

int cli_set_model(const char *model)
{
	int r;

	if (!model || !*model)
		return err_set(FX_EINVAL, "--model needs a model name");
	/* as -c agents.ROLE.model=M for every role, so config show says where it came from */
	for (r = 0; r < ROLE__COUNT; r++)
		strvec_pushf(&cli_config_flags, "agents.%s.model=%s", config_role_name(r), model);
	return 0;
}

const struct cli_command *cli_find_command(const char *name)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static void print_global_help(void)
{
	size_t i;

	fputs(global_usage, stdout);
	fputs("\nforgex turns a plain-language request into a verified change to a "
	      "repository.\n\nCommands:\n", stdout);
	for (i = 0; i < ARRAY_SIZE(commands); i++)
		if (!(commands[i].flags & CLI_HIDDEN))
			printf("  %-12s %s\n", commands[i].name, commands[i].summary);
	fputs("\nGlobal options:\n", stdout);
	fputs(cli_global_options, stdout);
	fputs("\n'forgex help COMMAND' shows a command's options.\n", stdout);
}

int cli_help(const char *name)
{
	const struct cli_command *c = cli_find_command(name);

	if (!c)
		return cli_usage_error("help", "no such command '%s'", name);
	fputs(c->usage, stdout);
	return EXIT_OK;
}

int cli_usage_error(const char *name, const char *fmt, ...)
{
	const struct cli_command *c = cli_find_command(name);
	va_list ap;

	fprintf(stderr, "forgex %s: ", name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (c) {
		size_t n = strcspn(c->usage, "\n");

		fprintf(stderr, "%.*s\n", (int)n, c->usage);
	}
	return EXIT_USAGE;
}

int cli_exit_for_error(int code)
{
	switch (code) {
	case FX_EDENIED:
	case FX_EUNSUPPORTED:
		return EXIT_DENIED;
	case FX_EINTR:
		return EXIT_INTERRUPTED;
	case FX_EINVAL:
	case FX_ENOTFOUND:
	case FX_EPARSE:
		return EXIT_USAGE;
	case FX_EPROVIDER:
	case FX_EMISMATCH:
		return EXIT_PROVIDER;
	default:
		return EXIT_FAIL;
	}
}

void cli_printf(FILE *f, const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	s = xstrvfmt(fmt, ap);
	va_end(ap);
	fputs_termsafe(s, f, TERMSAFE_MULTILINE);
	free(s);
}

void cli_print_error(void)
{
	log_error("%s", err_last()[0] ? err_last() : "unknown error");
}

void cli_report_trust(const struct config *cfg)
{
	size_t i;
	struct buf q = BUF_INIT;
	char *file;

	for (i = 0; i < cfg->nested_ignored.nr; i++) {
		char *p = termsafe_dup(cfg->nested_ignored.v[i], 0);

		log_warn("ignoring %s: only the workspace's own .forgex/config.toml is read", p);
		free(p);
	}
	if (cfg->trust_error) {
		char *e = termsafe_dup(cfg->trust_error, 0);

		log_warn("%s", e);
		free(e);
	}
	if (!cfg->ignored_nr)
		return;
	file = termsafe_dup(cfg->project_file, 0);
	log_warn("%s is not trusted%s: %zu of its settings %s not applied as written "
		 "(an untrusted project file may only tighten them):", file,
		 cfg->project_changed ? " (it changed since you trusted it)" : "",
		 cfg->ignored_nr, cfg->ignored_nr == 1 ? "was" : "were");
	for (i = 0; i < cfg->ignored_nr; i++) {
		const struct cfg_ignored *ig = &cfg->ignored[i];
		char *k = termsafe_dup(ig->key, 0), *v = termsafe_dup(ig->value, 0);
		char *r = termsafe_dup(ig->reason, 0), *w = termsafe_dup(ig->where, 0);

		log_warn("  %s = %s (%s): %s", k, v, w, r);
		free(k);
		free(v);
		free(r);
		free(w);
	}
	buf_add_shell_quoted(&q, cfg->workspace);
	{
		char *qs = termsafe_dup(q.buf, 0);

		log_warn("read it, then trust it as it is with: forgex -C %s trust", qs);
		free(qs);
	}
	buf_release(&q);
	free(file);
}

int cli_apply_config_flags(struct config *cfg)
{
	size_t i;

	for (i = 0; i < cli_config_flags.nr; i++) {
		const char *kv = cli_config_flags.v[i], *eq = strchr(kv, '=');
		char *key;
		int ret;

		if (!eq)
			return err_set(FX_EINVAL, "-c %s: expected KEY=VALUE", kv);
		key = xstrndup(kv, (size_t)(eq - kv));
		ret = config_set(cfg, key, eq + 1, CFG_FLAG);
		free(key);
		if (ret < 0)
			return err_prefix(ret, "-c %s", kv);
	}
	return config_validate(cfg);
}

int cli_load_config(struct config *cfg)
{
	size_t i;

	config_init(cfg);
	cfg->trust_fn = cli_trust_check;
	if (config_load(cfg, NULL) < 0 || cli_apply_config_flags(cfg) < 0)
		goto fail;
	cli_report_trust(cfg);
	/* forgex's own keys, whatever their variables are called, are redacted everywhere */
	redact_register_env(NULL);
	for (i = 0; i < cfg->providers_nr; i++) {
		const char *v = cfg->providers[i].api_key_env;

		if (v && *v && getenv(v))
			redact_register(getenv(v));
	}
	return 0;
fail:
	cli_print_error();
	config_release(cfg);
	return EXIT_USAGE;
}

int cmd_help(int argc, char **argv)
{
	if (argc < 2) {
		print_global_help();
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--man"))
		return cli_write_manpage(stdout);
	return cli_help(argv[1]);
}

/* Levenshtein distance, for "did you mean". */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i, j;
	size_t *row = xcalloc(lb + 1, sizeof(*row)), d;

	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);

			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	d = row[lb];
	free(row);
	return d;
}

/* The command `name` is closest to, and how close (the edit distance; a prefix counts 1). */
static const char *similar_command(const char *name, size_t *dist)
{
	size_t i, best = (size_t)-1, d;
	const char *cand = NULL;

	for (i = 0; i < ARRAY_SIZE(commands); i++) {
		if (commands[i].flags & CLI_HIDDEN)
			continue;
		d = edit_distance(name, commands[i].name);
		/* a prefix is a strong hint too: "conf" -> "config" */
		if (!strncmp(commands[i].name, name, strlen(name)))
			d = d < 1 ? d : 1;
		if (d < best) {
			best = d;
			cand = commands[i].name;
		}
	}
	*dist = best;
	return cand;
}

static int unknown_command(const char *name)
{
	size_t d;
	const char *cand = similar_command(name, &d);

	fprintf(stderr, "forgex: '%s' is not a forgex command. See 'forgex --help'.\n", name);
	if (cand)
		fprintf(stderr, "\nThe most similar command is\n\t%s\n", cand);
	fprintf(stderr, "\nA request is a phrase: forgex \"%s ...\"\n", name);
	return EXIT_USAGE;
}

/*
 * Whether `forgex WORDS...` is a request rather than a mistyped command:
 * a first word with a space in it (`forgex "fix the bug"`), or several
 * words whose first is not one edit from a command (`forgex add tests`).
 * A word alone is a command or a typo (`forgex cofnig`, `forgex
 * frobnicate`): the nearest command is named.
 */
static int is_request(const char *word, int more)
{
	size_t d;

	if (strpbrk(word, " \t\n"))
		return 1;
	if (!more || !*word || !similar_command(word, &d))
		return 0;
	return d > 1;
}

/* Index of the command word in argv (global options skipped), or argc. */
static int command_index(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-C") || !strcmp(argv[i], "-c"))
			i++;
		else if (!strcmp(argv[i], "--"))
			return i + 1;
	}
	return i;
}

/*
 * Run forgex-core with the same arguments: the program beside this one
 * (the build folder), else ../libexec/forgex/forgex-core (make install).
 */
static int exec_core(char **argv)
{
	char self[4096], *slash, *core, *installed;
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n < 0 || n >= (ssize_t)sizeof(self) - 1) {
		fprintf(stderr, "forgex: cannot find my own program: %s\n", strerror(errno));
		return EXIT_FAIL;
	}
	self[n] = '\0';
	slash = strrchr(self, '/');
	*slash = '\0';
	core = xstrfmt("%s/forgex-core", self);
	execv(core, argv);
	installed = xstrfmt("%s/../libexec/forgex/forgex-core", self);
	if (errno == ENOENT)
		execv(installed, argv);
	fprintf(stderr, "forgex: cannot run %s (nor %s): %s\n", core, installed, strerror(errno));
	free(core);
	free(installed);
	return EXIT_FAIL;
}

/*
 * Run command `name` with the operands argv[i...] (after "--", so a word
 * of the request is never an option), in this program or in forgex-core.
 */
static int run_as(int argc, char **argv, int i, const char *name)
{
	const struct cli_command *c = cli_find_command(name);
	char **nargv = xcalloc((size_t)argc + 4, sizeof(*nargv));
	int j, n = 0, ret;

	if (!c->fn) {
		/*
		 * The global options again, but not -C DIR: we are in DIR
		 * already, and a relative DIR would not be found twice.
		 */
		nargv[n++] = argv[0];
		for (j = 1; j < i; j++) {
			if (!strcmp(argv[j], "-C"))
				j++;
			else if (strcmp(argv[j], "--"))
				nargv[n++] = argv[j];
		}
	}
	nargv[n++] = (char *)name;
	if (i < argc)
		nargv[n++] = (char *)"--";
	for (j = i; j < argc; j++)
		nargv[n++] = argv[j];
	if (!c->fn)
		return exec_core(nargv);
	ret = c->fn(n, nargv);
	free(nargv);
	strvec_clear(&cli_config_flags);
	return ret;
}

/*
 * `forgex "fix the bug"`: on a terminal a session with it as the first
 * message (as `forgex` alone opens one); off a terminal, a verified run of
 * it, as `forgex run` would, said on stderr so a script knows which.
 */
static int start_with_request(int argc, char **argv, int i)
{
	if (isatty(0) && isatty(1))
		return run_as(argc, argv, i, "chat");
	if (!cli_quiet)
		fprintf(stderr, "forgex: not a terminal: running the request as 'forgex run' "
			"does (a session needs a terminal)\n");
	return run_as(argc, argv, i, "run");
}

int main(int argc, char **argv)
{
	const struct cli_command *c;
	int i, ret, quiet = 0, verbose = 0;

	i = command_index(argc, argv);
	if (i < argc && (c = cli_find_command(argv[i])) && !c->fn)
		return exec_core(argv);
	/*
	 * One malloc arena for every thread: forgex's threads (the map's walk,
	 * indexer and ctags threads, MCP readers) each allocate little, and
	 * memory one frees is then there for the others (a run's peak RSS in
	 * bench/pipeline.sh: 20.8 -> 19.5 MB, no slower).
	 */
	mallopt(M_ARENA_MAX, 1);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--version")) {
			printf("forgex %s\n", FX_VERSION);
			return EXIT_OK;
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			print_global_help();
			return EXIT_OK;
		} else if (!strcmp(a, "--quiet")) {
			quiet++;
		} else if (!strcmp(a, "--verbose")) {
			verbose++;
		} else if (a[1] && strspn(a + 1, "qv") == strlen(a + 1)) {
			/* -q, -v, and bundles of them: -vv, -qv */
			const char *f;

			for (f = a + 1; *f; f++)
				*f == 'q' ? quiet++ : verbose++;
		} else if (!strcmp(a, "-C") || !strcmp(a, "-c")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "forgex: %s needs an argument\n%s", a, global_usage);
				return EXIT_USAGE;
			}
			if (a[1] == 'c') {
				strvec_push(&cli_config_flags, argv[++i]);
			} else if (chdir(argv[++i]) < 0) {
				fprintf(stderr, "forgex: cannot change to '%s': %s\n", argv[i],
					strerror(errno));
				return EXIT_USAGE;
			}
		} else if (!strcmp(a, "--")) {
			i++;
			break;
		} else {
			fprintf(stderr, "forgex: unknown option '%s'\n%s", a, global_usage);
			return EXIT_USAGE;
		}
	}
	/* each -v says more, each -q less: -qv is the default */
	cli_quiet = verbose - quiet < 0;
	cli_verbose = verbose - quiet > 0 ? verbose - quiet : 0;
	log_setup(cli_quiet, cli_verbose);
	if (i >= argc) {
		/* `forgex` alone on a terminal: an interactive session */
		if (isatty(0) && isatty(1))
			return run_as(argc, argv, i, "chat");
		print_global_help();
		return EXIT_USAGE;
	}
	c = cli_find_command(argv[i]);
	if (!c && is_request(argv[i], argc - i > 1))
		return start_with_request(argc, argv, i);
	if (!c)
		return unknown_command(argv[i]);
	if (argc - i >= 2 && (!strcmp(argv[i + 1], "--help") || !strcmp(argv[i + 1], "-h")))
		return cli_help(c->name);
	ret = c->fn(argc - i, argv + i);
	strvec_clear(&cli_config_flags);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "forgex: error writing to standard output: %s\n", strerror(errno));
		return ret ? ret : EXIT_FAIL;
	}
	return ret;
}
