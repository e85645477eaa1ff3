/*
 * perchd run: the daemon in this console (src/win/console.c), with the service's registry
 * configuration plus any --set overrides. Ctrl+C stops it; Ctrl+Break writes a flight-recorder
 * snapshot first. Log lines are echoed to stderr as they are written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "config.h"
#include "perch/config.h"
#include "perch/error.h"
#include "service.h"

#define MAX_ISSUES 16

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: perchd run [options]\n\n"
            "Runs the Perch daemon in this console, as the service would run (same session,\n"
            "flight recorder, log and status file), until Ctrl+C. Ctrl+Break writes a snapshot\n"
            "of the flight recorder into the capture directory, then stops. The configuration\n"
            "is the service's ('perchd config show'), changed for this run by --set. Only one\n"
            "perchd runs at a time: stop the service first.\n\n"
            "  --set KEY=VALUE        use VALUE for KEY in this run (repeatable)\n"
            "  --data-dir DIR         the same as --set DataDirectory=DIR\n"
            "  --capture-dir DIR      the same as --set CaptureDirectory=DIR\n"
            "  --defaults             ignore the registry: defaults plus --set only\n"
            "  --record               record rotating capture files from the start\n"
            "  --duration SECONDS     stop after this long\n"
            "  --snapshot-after SECONDS  write one flight-recorder snapshot this long after start\n"
            "  --no-privileges        behave as if not elevated (shows the degraded start)\n"
            "  --help                 show this help\n");
}

struct run_args {
    perch_console_options o;
    const char *sets[64];
    size_t set_count;
    bool defaults;
    const char *issue_ptr[MAX_ISSUES];
    char issues[MAX_ISSUES][PERCH_CONFIG_WHY_MAX + 200];
    size_t issue_count;
};

/* Seconds (decimal allowed) to ms; false when not a number in (0, 30 days]. */
static bool parse_seconds(const char *s, uint32_t *ms)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v > 0) || v > 30.0 * 86400.0)
        return false;
    *ms = (uint32_t)(v * 1000.0 + 0.5);
    return true;
}

/* Option with a value at argv[*i + 1]; false (after saying so) when missing. */
static const char *value_of(int argc, char **argv, int *i)
{
    if (*i + 1 >= argc) {
        fprintf(stderr, "perchd run: %s needs a value\n", argv[*i]);
        return NULL;
    }
    return argv[++*i];
}

/* Returns -1 to go on, else the exit status. */
static int parse_one(struct run_args *a, int argc, char **argv, int *i)
{
    static char dir_sets[2][PERCH_CONFIG_PATH_MAX + 32];
    const char *arg = argv[*i], *v;
    if (strcmp(arg, "--record") == 0)
        a->o.record = true;
    else if (strcmp(arg, "--defaults") == 0)
        a->defaults = true;
    else if (strcmp(arg, "--no-privileges") == 0)
        a->o.daemon.no_privileges = true;
    else if ((strcmp(arg, "--set") == 0 || strcmp(arg, "--data-dir") == 0 ||
              strcmp(arg, "--capture-dir") == 0) &&
             a->set_count < sizeof a->sets / sizeof a->sets[0]) {
        if ((v = value_of(argc, argv, i)) == NULL)
            return PERCHD_EXIT_USAGE;
        if (strcmp(arg, "--set") != 0) {
            bool data = strcmp(arg, "--data-dir") == 0;
            snprintf(dir_sets[data], sizeof dir_sets[0], "%s=%s",
                     data ? "DataDirectory" : "CaptureDirectory", v);
            v = dir_sets[data];
        }
        a->sets[a->set_count++] = v;
    } else if (strcmp(arg, "--duration") == 0 || strcmp(arg, "--snapshot-after") == 0) {
        uint32_t *ms = arg[2] == 'd' ? &a->o.duration_ms : &a->o.snapshot_after_ms;
        if ((v = value_of(argc, argv, i)) == NULL)
            return PERCHD_EXIT_USAGE;
        if (!parse_seconds(v, ms)) {
            fprintf(stderr, "perchd run: %s wants a number of seconds, not '%s'\n", arg, v);
            return PERCHD_EXIT_USAGE;
        }
    } else {
        fprintf(stderr, "perchd run: unknown argument '%s'\n\n", arg);
        usage(stderr);
        return PERCHD_EXIT_USAGE;
    }
    return -1;
}

static void collect_issue(void *ctx, const char *sentence)
{
    struct run_args *a = ctx;
    perchd_warn_issue("run", sentence);
    if (a->issue_count < MAX_ISSUES) {
        snprintf(a->issues[a->issue_count], sizeof a->issues[0], "%s", sentence);
        a->issue_ptr[a->issue_count] = a->issues[a->issue_count];
        a->issue_count++;
    }
}

/* Applies the --set overrides; the exit status on a refusal, else -1. */
static int apply_sets(struct run_args *a)
{
    char key[64], why[PERCH_CONFIG_WHY_MAX];
    for (size_t i = 0; i < a->set_count; i++) {
        const char *eq = strchr(a->sets[i], '=');
        size_t n = eq ? (size_t)(eq - a->sets[i]) : 0;
        if (eq == NULL || n == 0 || n >= sizeof key) {
            fprintf(stderr, "perchd run: --set wants KEY=VALUE, not '%s'\n", a->sets[i]);
            return PERCHD_EXIT_USAGE;
        }
        memcpy(key, a->sets[i], n);
        key[n] = '\0';
        if (perch_config_set_named(&a->o.daemon.config, key, eq + 1, why, sizeof why) < 0) {
            fprintf(stderr, "perchd run: refused: %s\n", why);
            return PERCHD_EXIT_USAGE;
        }
    }
    return -1;
}

int perchd_cmd_run(int argc, char **argv)
{
    static struct run_args a;
    int rc;
    memset(&a, 0, sizeof a);
    a.o.daemon.sz = sizeof a.o.daemon;
    for (int i = 1; i < argc; i++) {
        if (perchd_is_help(argv[i])) {
            usage(stdout);
            return PERCHD_EXIT_OK;
        }
        if ((rc = parse_one(&a, argc, argv, &i)) >= 0)
            return rc;
    }
    if (a.defaults)
        perch_config_defaults(&a.o.daemon.config);
    else
        perch_win_config_load(&a.o.daemon.config, collect_issue, &a);
    if ((rc = apply_sets(&a)) >= 0)
        return rc;
    a.o.daemon.issues = a.issue_ptr;
    a.o.daemon.issue_count = a.issue_count;
    int err = perch_console_run(&a.o);
    return err < 0 ? PERCHD_EXIT_FAILED : PERCHD_EXIT_OK;
}
