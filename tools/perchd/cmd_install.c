/*
 * perchd install [--auto] and perchd uninstall: register the service with the SCM, or stop
 * and remove it (src/win/scm.c does the work and says each step).
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "perch/error.h"
#include "scm.h"
#include "service.h"

#define UNINSTALL_STOP_WAIT_MS 30000u

static void install_usage(FILE *out)
{
    fprintf(out, "Usage: perchd install [--auto]\n\n"
                 "Registers the Perch service for this perchd.exe: its own process, running as\n"
                 "LocalSystem, started on demand (or at boot with --auto), restarted twice\n"
                 "after a failure, with the event log source Perch. Needs an elevated prompt.\n"
                 "The configuration starts at its defaults ('perchd config show').\n\n"
                 "  --auto   start the service automatically at boot\n"
                 "  --help   show this help\n");
}

int perchd_cmd_install(int argc, char **argv)
{
    bool auto_start = false;
    for (int i = 1; i < argc; i++) {
        if (perchd_is_help(argv[i])) {
            install_usage(stdout);
            return PERCHD_EXIT_OK;
        } else if (strcmp(argv[i], "--auto") == 0) {
            auto_start = true;
        } else {
            fprintf(stderr, "perchd install: unknown argument '%s'\n\n", argv[i]);
            install_usage(stderr);
            return PERCHD_EXIT_USAGE;
        }
    }
    int err = perch_scm_install(auto_start, perchd_say, "install");
    return err < 0 ? PERCHD_EXIT_FAILED : PERCHD_EXIT_OK;
}

static void uninstall_usage(FILE *out)
{
    fprintf(out,
            "Usage: perchd uninstall\n\n"
            "Stops the Perch service if it runs (waiting up to %u s), removes it with its\n"
            "configuration and removes the event log source. Captures and log files stay\n"
            "where they are. Needs an elevated prompt.\n",
            UNINSTALL_STOP_WAIT_MS / 1000);
}

int perchd_cmd_uninstall(int argc, char **argv)
{
    if (argc > 1) {
        bool help = perchd_is_help(argv[1]);
        if (!help)
            fprintf(stderr, "perchd uninstall: unknown argument '%s'\n\n", argv[1]);
        uninstall_usage(help ? stdout : stderr);
        return help ? PERCHD_EXIT_OK : PERCHD_EXIT_USAGE;
    }
    int err = perch_scm_uninstall(UNINSTALL_STOP_WAIT_MS, perchd_say, "uninstall");
    return err < 0 ? PERCHD_EXIT_FAILED : PERCHD_EXIT_OK;
}

static void service_usage(FILE *out)
{
    fprintf(out, "Usage: perchd service\n\n"
                 "The command line the service control manager starts perchd with. Run by hand\n"
                 "it only says so: use 'sc start Perch' to start the service, or 'perchd run'\n"
                 "to run the daemon in this console.\n");
}

int perchd_cmd_service(int argc, char **argv)
{
    if (argc > 1) {
        bool help = perchd_is_help(argv[1]);
        service_usage(help ? stdout : stderr);
        return help ? PERCHD_EXIT_OK : PERCHD_EXIT_USAGE;
    }
    int err = perch_service_run();
    if (err == PERCH_ESTATE) {
        fprintf(stderr, "perchd service: this process was not started by the service control "
                        "manager; start the service with 'sc start Perch', or run the daemon "
                        "in this console with 'perchd run'\n");
        return PERCHD_EXIT_USAGE;
    }
    if (err < 0) {
        fprintf(stderr, "perchd service: %s\n", perch_strerror(err));
        return PERCHD_EXIT_FAILED;
    }
    return PERCHD_EXIT_OK;
}
