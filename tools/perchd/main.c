/*
 * perchd: the Perch Windows service and its management commands. The SCM starts it as
 * `perchd service`; people run `perchd install`, `config`, `run`, `status` and `uninstall`.
 * This file only dispatches: each command lives in its own cmd_<name>.c, the service itself in
 * src/win.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"

static const struct perchd_command commands[] = {
    {"install", perchd_cmd_install, "register the Perch service (demand start, or --auto)"},
    {"uninstall", perchd_cmd_uninstall, "stop and remove the Perch service"},
    {"config", perchd_cmd_config, "show or change the service's configuration"},
    {"run", perchd_cmd_run, "run the daemon in this console until Ctrl+C"},
    {"status", perchd_cmd_status, "say whether perchd runs and what it is doing"},
    {"service", perchd_cmd_service, "the entry point the service control manager uses"},
};

static const size_t command_count = sizeof commands / sizeof commands[0];

bool perchd_is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

void perchd_say(void *ctx, bool error, const char *sentence)
{
    const char *cmd = ctx;
    fprintf(error ? stderr : stdout, "perchd %s: %s\n", cmd, sentence);
}

void perchd_warn_issue(void *ctx, const char *sentence)
{
    const char *cmd = ctx;
    fprintf(stderr, "perchd %s: warning: %s\n", cmd, sentence);
}

static void print_usage(FILE *out)
{
    fprintf(out, "Usage: perchd <command> [options]\n"
                 "       perchd --version | --help\n\n"
                 "perchd is the Perch Windows service: it owns a kernel trace session, feeds\n"
                 "the model live, keeps a flight recorder of the last minute and writes\n"
                 "captures for the 'perch' command line.\n\n"
                 "Commands:\n");
    for (size_t i = 0; i < command_count; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nRun 'perchd <command> --help' for a command's options. Exit codes: 0 done,\n"
                 "1 it could not be done (the message says why), 2 bad usage, 3 (status)\n"
                 "perchd is not running. docs/service.md has the details.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return PERCHD_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("perchd %s\n", PERCH_VERSION);
        return PERCHD_EXIT_OK;
    }
    if (perchd_is_help(argv[1]) || strcmp(argv[1], "help") == 0) {
        print_usage(stdout);
        return PERCHD_EXIT_OK;
    }
    for (size_t i = 0; i < command_count; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "perchd: unknown command '%s'\n\n", argv[1]);
    print_usage(stderr);
    return PERCHD_EXIT_USAGE;
}
