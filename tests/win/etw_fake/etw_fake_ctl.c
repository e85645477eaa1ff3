/*
 * perch_etw_fake_ctl: the fake ETW's control API (etw_fake.h) from a command line, for
 * scripted tests (a service started by Wine's SCM reads the same state). It honours
 * PERCH_FAKE_ETW_ROOT like the fake itself.
 *
 *   perch_etw_fake_ctl reset
 *   perch_etw_fake_ctl set NAME VALUE        VALUE all digits: a DWORD, else a string
 *   perch_etw_fake_ctl refuse ENTRY...       "Name=Win32Code" entries (the Refuse list)
 *   perch_etw_fake_ctl plant NAME OWNER [--kernel] [LOGFILE]
 *   perch_etw_fake_ctl sessions [PREFIX]     prints the count of running sessions
 *   perch_etw_fake_ctl ledger
 * Exit status: 0 done, 1 the call failed, 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "etw_fake.h"

static int usage(void)
{
    fprintf(stderr, "usage: perch_etw_fake_ctl reset | set NAME VALUE | refuse ENTRY... |\n"
                    "       plant NAME OWNER [--kernel] [LOGFILE] | sessions [PREFIX] | ledger\n");
    return 2;
}

static int done(uint32_t rc, const char *what)
{
    if (rc != 0)
        fprintf(stderr, "perch_etw_fake_ctl: %s failed: Win32 error %u\n", what, (unsigned)rc);
    return rc != 0;
}

static int cmd_set(const char *name, const char *value)
{
    if (value[0] != '\0' && strspn(value, "0123456789") == strlen(value))
        return done(perch_fake_etw_set_dword(name, (uint32_t)strtoul(value, NULL, 10)), "set");
    return done(perch_fake_etw_set_string(name, value), "set");
}

static int cmd_refuse(int argc, char **argv)
{
    char list[4096];
    size_t at = 0;
    for (int i = 0; i < argc; i++) {
        size_t n = strlen(argv[i]) + 1;
        if (at + n + 1 > sizeof list)
            return usage();
        memcpy(list + at, argv[i], n);
        at += n;
    }
    list[at] = '\0';
    return done(perch_fake_etw_set_multi("Refuse", argc ? list : NULL), "refuse");
}

static int cmd_plant(int argc, char **argv)
{
    bool kernel = false;
    const char *log_file = NULL;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--kernel") == 0)
            kernel = true;
        else
            log_file = argv[i];
    }
    return done(perch_fake_etw_plant(argv[0], argv[1], log_file, kernel), "plant");
}

static int cmd_ledger(void)
{
    static char text[1 << 20];
    perch_fake_etw_ledger(text, sizeof text);
    fputs(text, stdout);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    const char *cmd = argv[1];
    if (strcmp(cmd, "reset") == 0 && argc == 2)
        return done(perch_fake_etw_reset(), "reset");
    if (strcmp(cmd, "set") == 0 && argc == 4)
        return cmd_set(argv[2], argv[3]);
    if (strcmp(cmd, "refuse") == 0)
        return cmd_refuse(argc - 2, argv + 2);
    if (strcmp(cmd, "plant") == 0 && argc >= 4)
        return cmd_plant(argc - 2, argv + 2);
    if (strcmp(cmd, "sessions") == 0 && argc <= 3) {
        printf("%u\n", perch_fake_etw_count(argc == 3 ? argv[2] : ""));
        return 0;
    }
    if (strcmp(cmd, "ledger") == 0 && argc == 2)
        return cmd_ledger();
    return usage();
}
