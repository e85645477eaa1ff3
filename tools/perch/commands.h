/*
 * The perch command table: every subcommand is one file (cmd_<name>.c) exporting one entry
 * function with the signature below. main.c dispatches on argv[1]; each command parses the
 * rest of its own arguments and prints its own --help.
 */
#ifndef PERCH_TOOLS_COMMANDS_H
#define PERCH_TOOLS_COMMANDS_H

#include <stdio.h>

/* argv[0] is the command name. Returns the process exit status (0 ok, 1 failure, 2 usage). */
typedef int (*perch_command_fn)(int argc, char **argv);

struct perch_command {
    const char *name;
    perch_command_fn run;
    const char *summary;
};

/* Every command; main.c lists them in one table. */
int perch_cmd_dump(int argc, char **argv);
int perch_cmd_synth(int argc, char **argv);
int perch_cmd_import(int argc, char **argv);
int perch_cmd_info(int argc, char **argv);
int perch_cmd_report(int argc, char **argv);
int perch_cmd_export(int argc, char **argv);
int perch_cmd_resolve(int argc, char **argv);

/* Prints "perch: <what>: <reason>" to stderr; returns 1 for use as an exit status. */
int perch_cli_error(const char *what, int err);

#endif
