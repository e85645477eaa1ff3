/*
 * The perchd command table: each subcommand lives in its own file and exports one entry
 * function; main.c dispatches on argv[1]. Commands print their own --help and use the exit
 * codes below (docs/service.md lists them).
 */
#ifndef PERCHD_COMMANDS_H
#define PERCHD_COMMANDS_H

#include <stdbool.h>

#define PERCHD_EXIT_OK          0
#define PERCHD_EXIT_FAILED      1 /* it could not do what was asked (the message says why) */
#define PERCHD_EXIT_USAGE       2 /* bad command line */
#define PERCHD_EXIT_NOT_RUNNING 3 /* status: no perchd runs */

typedef int (*perchd_command_fn)(int argc, char **argv);

struct perchd_command {
    const char *name;
    perchd_command_fn run;
    const char *summary;
};

int perchd_cmd_install(int argc, char **argv);
int perchd_cmd_uninstall(int argc, char **argv);
int perchd_cmd_config(int argc, char **argv);
int perchd_cmd_run(int argc, char **argv);
int perchd_cmd_status(int argc, char **argv);
int perchd_cmd_service(int argc, char **argv);

/* True when arg is --help or -h. */
bool perchd_is_help(const char *arg);

/* Prints the sentences perch_scm_* and the config loader say (callbacks). */
void perchd_say(void *ctx, bool error, const char *sentence);
void perchd_warn_issue(void *ctx, const char *sentence);

#endif
