/*
 * perchd config show [KEY] | set KEY VALUE | reset KEY: reads and changes the service's
 * configuration in the registry (src/win/config.c) through the portable table of keys, types,
 * defaults and ranges (src/core/config/config.c). The service reads it at its next start.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "config.h"
#include "perch/config.h"
#include "perch/error.h"

static void usage(FILE *out)
{
    fprintf(out,
            "Usage: perchd config show [KEY]\n"
            "       perchd config set KEY VALUE\n"
            "       perchd config reset KEY\n\n"
            "The configuration lives in the registry, under\n"
            "  %s\n"
            "one value per key; a key with no value has its default, so no configuration\n"
            "is needed at all. 'show' lists every key with its value, default and range\n"
            "(with KEY: only its value); 'set' checks the value against the key's range and\n"
            "stores it; 'reset' returns a key to its default. Changes take effect at the\n"
            "service's next start. set and reset need an elevated prompt and an installed\n"
            "service ('perchd run --set KEY=VALUE' works without either).\n",
            PERCH_CONFIG_REG_PATH);
}

static void show_key(const perch_config *c, const perch_config_key *k)
{
    char value[PERCH_CONFIG_PATH_MAX], range[256];
    perch_config_format(c, k, value, sizeof value);
    perch_config_describe_range(k, range, sizeof range);
    printf("%c %-22s %s\n", perch_win_config_is_set(k) ? '*' : ' ', k->name, value);
    printf("      %s; %s; default %s\n", k->help, range, k->def);
}

static int show(int argc, char **argv)
{
    perch_config c;
    char value[PERCH_CONFIG_PATH_MAX];
    perch_win_config_load(&c, perchd_warn_issue, "config");
    if (argc == 3) {
        const perch_config_key *k = perch_config_find(argv[2]);
        if (k == NULL) {
            fprintf(stderr,
                    "perchd config: '%s' is not a configuration key; 'perchd config "
                    "show' lists them\n",
                    argv[2]);
            return PERCHD_EXIT_USAGE;
        }
        perch_config_format(&c, k, value, sizeof value);
        printf("%s\n", value);
        return PERCHD_EXIT_OK;
    }
    printf("Configuration of the Perch service (%s);\n"
           "* marks the values set there, the others have their default.\n\n",
           PERCH_CONFIG_REG_PATH);
    for (size_t i = 0; i < perch_config_key_count(); i++)
        show_key(&c, perch_config_key_at(i));
    return PERCHD_EXIT_OK;
}

static int store_error(const char *what, int err)
{
    if (err == PERCH_ENOENT)
        fprintf(stderr, "perchd config: the Perch service is not installed, so there is no "
                        "configuration to change; run 'perchd install' first (or give the "
                        "setting to 'perchd run --set KEY=VALUE')\n");
    else if (err == PERCH_EACCES)
        fprintf(stderr, "perchd config: not elevated: changing the service's configuration needs "
                        "an administrator; run it from an elevated prompt\n");
    else
        fprintf(stderr, "perchd config: %s could not be stored: %s\n", what, perch_strerror(err));
    return PERCHD_EXIT_FAILED;
}

static int set(const char *name, const char *value)
{
    perch_config c;
    char why[PERCH_CONFIG_WHY_MAX], before[PERCH_CONFIG_PATH_MAX], after[PERCH_CONFIG_PATH_MAX];
    const perch_config_key *k = perch_config_find(name);
    perch_win_config_load(&c, NULL, NULL);
    if (k != NULL)
        perch_config_format(&c, k, before, sizeof before);
    int err = perch_config_set_named(&c, name, value, why, sizeof why);
    if (err < 0) {
        fprintf(stderr, "perchd config: refused: %s\n", why);
        return err == PERCH_ENOENT ? PERCHD_EXIT_USAGE : PERCHD_EXIT_FAILED;
    }
    perch_config_format(&c, k, after, sizeof after);
    err = perch_win_config_store(&c, k);
    if (err < 0)
        return store_error(k->name, err);
    printf("perchd config: %s = %s (was %s); the service uses it from its next start\n", k->name,
           after, before);
    return PERCHD_EXIT_OK;
}

static int reset(const char *name)
{
    const perch_config_key *k = perch_config_find(name);
    if (k == NULL) {
        fprintf(stderr,
                "perchd config: '%s' is not a configuration key; 'perchd config show' "
                "lists them\n",
                name);
        return PERCHD_EXIT_USAGE;
    }
    int err = perch_win_config_reset(k);
    if (err < 0)
        return store_error(k->name, err);
    printf("perchd config: %s is back to its default, %s; the service uses it from its next "
           "start\n",
           k->name, k->def);
    return PERCHD_EXIT_OK;
}

int perchd_cmd_config(int argc, char **argv)
{
    if (argc >= 2 && perchd_is_help(argv[1])) {
        usage(stdout);
        return PERCHD_EXIT_OK;
    }
    if (argc >= 2 && strcmp(argv[1], "show") == 0 && argc <= 3)
        return show(argc, argv);
    if (argc == 4 && strcmp(argv[1], "set") == 0)
        return set(argv[2], argv[3]);
    if (argc == 3 && strcmp(argv[1], "reset") == 0)
        return reset(argv[2]);
    fprintf(stderr, "perchd config: %s\n\n",
            argc < 2 ? "say show, set or reset" : "wrong arguments for this subcommand");
    usage(stderr);
    return PERCHD_EXIT_USAGE;
}
