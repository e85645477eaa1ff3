/*
 * The perch command table: every subcommand is one file (cmd_<name>.c) exporting one entry
 * function with the signature below. main.c dispatches on argv[1]; each command parses the
 * rest of its own arguments and prints its own --help.
 */
#ifndef PERCH_TOOLS_COMMANDS_H
#define PERCH_TOOLS_COMMANDS_H

#include <stdio.h>

/* Exit statuses of every perch command (also in `perch --help` and docs/README.md). */
#define PERCH_EXIT_OK      0
#define PERCH_EXIT_FAILURE 1
#define PERCH_EXIT_USAGE   2
/* The input was cut or damaged: the output covers everything readable before that point and
 * one warning line on stderr says where the input stopped and how much was not used. */
#define PERCH_EXIT_PARTIAL 3

/* argv[0] is the command name. Returns the process exit status (PERCH_EXIT_*). */
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
int perch_cmd_symbolize(int argc, char **argv);
/* The commands that talk to perchd over the pipe (service_client.h). */
int perch_cmd_status(int argc, char **argv);
int perch_cmd_record(int argc, char **argv);
int perch_cmd_stop(int argc, char **argv);
int perch_cmd_snapshot(int argc, char **argv);
int perch_cmd_captures(int argc, char **argv);
int perch_cmd_fetch(int argc, char **argv);
int perch_cmd_top(int argc, char **argv);
int perch_cmd_watch(int argc, char **argv);

/* Prints "perch: <what>: <reason>" to stderr; returns 1 for use as an exit status. */
int perch_cli_error(const char *what, int err);

/* After a write through w failed: when w refused a record (the producer broke a rule across
 * records, a bug in perch rather than in the input), prints "perch <cmd>: the capture writer
 * refused a record: <reason> (a bug in perch: please report it with <input>)" to stderr. */
struct perch_capture_writer;
void perch_cli_say_refusal(const char *cmd, const struct perch_capture_writer *w,
                           const char *input);

#endif
