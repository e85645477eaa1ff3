/*
 * perchd status: whether the Perch service is installed and running (the SCM's view), then the
 * status the running daemon writes every second into its data directory (status.txt): state,
 * the sentence saying what it does or why kernel data is missing, events and losses, session
 * features, recording and flight recorder. The pipe (`perch status`) will ask the daemon
 * directly; this command reads the file so it also works without the pipe.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "config.h"
#include "daemon.h"
#include "perch/config.h"
#include "perch/error.h"
#include "scm.h"

#define STALE_MS 5000u

static void usage(FILE *out)
{
    fprintf(out, "Usage: perchd status [--data-dir DIR]\n\n"
                 "Says whether the Perch service is installed and running, then prints the\n"
                 "status the running perchd (service or 'perchd run') keeps in its data\n"
                 "directory. Exit code 0 when a perchd runs, 3 when none does.\n\n"
                 "  --data-dir DIR   where to look (default: the configured DataDirectory)\n"
                 "  --help           show this help\n");
}

static void print_service(const perch_scm_info *info)
{
    if (!info->installed) {
        printf("service: not installed ('perchd install' registers it)\n");
        return;
    }
    printf("service: %s", perch_scm_state_name(info->state));
    if (info->pid != 0)
        printf(", pid %u", info->pid);
    printf(", %s start, %s\n", info->auto_start ? "automatic" : "demand", info->binary);
    if (info->state == 1 && info->exit_code != 0)
        printf("service: it last stopped with Win32 error %u%s%s\n", info->exit_code,
               info->specific_exit ? ", Perch error " : "",
               info->specific_exit ? perch_err_name(-(int)info->specific_exit) : "");
}

static int data_dir_of(const char *given, char *dir, size_t len)
{
    perch_config c;
    perch_win_config_load(&c, NULL, NULL);
    return perch_win_expand_path(given ? given : c.data_dir, dir, len);
}

int perchd_cmd_status(int argc, char **argv)
{
    static char text[16384];
    char dir[PERCH_CONFIG_PATH_MAX];
    const char *given = NULL;
    perch_scm_info info;
    uint64_t age = 0;
    for (int i = 1; i < argc; i++) {
        if (perchd_is_help(argv[i])) {
            usage(stdout);
            return PERCHD_EXIT_OK;
        } else if (strcmp(argv[i], "--data-dir") == 0 && i + 1 < argc) {
            given = argv[++i];
        } else {
            fprintf(stderr, "perchd status: unknown argument '%s'\n\n", argv[i]);
            usage(stderr);
            return PERCHD_EXIT_USAGE;
        }
    }
    int err = perch_scm_query(&info);
    if (err < 0)
        fprintf(stderr, "perchd status: the service control manager could not be asked: %s\n",
                perch_strerror(err));
    else
        print_service(&info);
    if (data_dir_of(given, dir, sizeof dir) < 0 ||
        perch_daemon_read_status_file(dir, text, sizeof text, &age) < 0) {
        printf("daemon: no status in %s (perchd has not run with this data directory)\n", dir);
        return PERCHD_EXIT_NOT_RUNNING;
    }
    bool live = age < STALE_MS && strstr(text, "state: stopped") == NULL;
    if (live)
        printf("daemon: status written %.1f s ago to %s\\status.txt\n", (double)age / 1000.0, dir);
    else
        printf("daemon: not running; its last status, written %.0f s ago, follows\n",
               (double)age / 1000.0);
    fputs(text, stdout);
    return live ? PERCHD_EXIT_OK : PERCHD_EXIT_NOT_RUNNING;
}
