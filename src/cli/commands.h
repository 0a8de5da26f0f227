#ifndef FX_COMMANDS_H
#define FX_COMMANDS_H

/* One function per subcommand, each in src/cli/cmd_<name>.c. */

int cmd_ask(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_help(int argc, char **argv);
int cmd_init(int argc, char **argv);
int cmd_policy(int argc, char **argv);

#endif
