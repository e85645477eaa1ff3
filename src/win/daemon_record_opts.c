/*
 * What a client may choose for one recording (src/win/daemon.h, perch_daemon_record_opts):
 * its name, checked here (a plain file name Windows accepts, not one of perchd's own name
 * patterns), and configuration keys for it alone. The rotation caps apply to the recording
 * directly; keys of the kernel session are refused with the reason, since the session is
 * shared by the flight recorder, the live queries and the recording; keys of perchd itself
 * likewise. Values are checked by the configuration table (src/core/config), so a bad one is
 * refused naming the key, the value and the range, whatever the key.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "capture/rotate_names.h"
#include "daemon_internal.h"
#include "perch/error.h"

/* The keys a recording takes for itself, and those of the kernel session. */
static const char *const recording_keys[] = {"RotateSizeMb", "RotateAgeMinutes", "DiskCapMb"};
static const char *const session_keys[] = {"Session",          "EventGroups",  "StackEvents",
                                           "SampleIntervalUs", "PmcSources",   "PmcInterval",
                                           "CSwitchCounters",  "Lbr",          "LbrEvents",
                                           "LbrFilters",       "BufferSizeKb", "BufferCount"};

static bool listed(const char *name, const char *const *keys, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(name, keys[i]) == 0)
            return true;
    return false;
}

static bool same_word(const char *a, const char *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
            return false;
    return b[n] == '\0';
}

/* CON, PRN, AUX, NUL, COM1-9, LPT1-9: device names Windows reserves, with any extension. */
static bool reserved_device(const char *stem)
{
    static const char *const names[] = {"con", "prn", "aux", "nul"};
    size_t n = strcspn(stem, ".");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (same_word(stem, names[i], n))
            return true;
    return n == 4 && (same_word(stem, "com", 3) || same_word(stem, "lpt", 3)) && stem[3] >= '1' &&
           stem[3] <= '9';
}

/* perch-..., snapshot-...: perchd's own names; a recording named so would mix with them. */
static bool own_pattern(const char *stem)
{
    static const char *const own[] = {"perch", "snapshot"};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        size_t n = strlen(own[i]);
        if ((stem[n] == '\0' || stem[n] == '-') && same_word(stem, own[i], n))
            return true;
    }
    return false;
}

int perch__daemon_record_name(const char *name, char *stem, size_t len, char *why, size_t why_len)
{
    size_t n = strlen(name);
    if (n > 6 && same_word(name + n - 6, ".perch", 6))
        n -= 6;
    snprintf(stem, len, "%.*s", (int)n, name);
    const char *problem = NULL;
    if (strpbrk(name, "\\/:") != NULL)
        problem = "it may not contain a directory or a drive (\\, / or :): give a plain name";
    else if (n == 0 || n > 32 || !perch__rotate_prefix_ok(stem))
        problem = "use 1 to 32 letters, digits, '_', '-' or '.'";
    else if (stem[0] == '.' || stem[n - 1] == '.')
        problem = "it may not start or end with '.'";
    else if (reserved_device(stem))
        problem = "Windows reserves it for a device (CON, PRN, AUX, NUL, COM1-9, LPT1-9)";
    else if (own_pattern(stem))
        problem = "perch and snapshot are the names perchd gives its own recordings and snapshots";
    if (problem == NULL)
        return 0;
    snprintf(why, why_len, "'%s' is not a capture name: %s", name, problem);
    return PERCH_EINVAL;
}

/* One KEY=VALUE: checked by the table; kept when it is a recording's key. */
static int take_option(perch_config *c, const char *key, const char *value, char *why,
                       size_t why_len)
{
    perch_config scratch = *c;
    const perch_config_key *k = perch_config_find(key);
    if (k == NULL) {
        snprintf(why, why_len, "%s is not a configuration key ('perchd config show' lists them)",
                 key);
        return PERCH_ENOENT;
    }
    int err = perch_config_set(&scratch, k, value, why, why_len);
    if (err < 0)
        return err; /* the sentence names the key, the value and the range */
    if (listed(k->name, recording_keys, sizeof recording_keys / sizeof recording_keys[0])) {
        *c = scratch;
        return 0;
    }
    if (listed(k->name, session_keys, sizeof session_keys / sizeof session_keys[0]))
        snprintf(why, why_len,
                 "%s is a setting of the kernel session, which the flight recorder and the live "
                 "queries share with every recording, so perchd does not change it for one "
                 "recording: set it with 'perchd config set %s %s' and restart perchd",
                 k->name, k->name, value);
    else
        snprintf(why, why_len,
                 "%s is a setting of perchd itself, not of one recording: set it with 'perchd "
                 "config set %s %s' and restart perchd; a recording takes RotateSizeMb, "
                 "RotateAgeMinutes and DiskCapMb",
                 k->name, k->name, value);
    return PERCH_ENOTSUP;
}

int perch__daemon_record_config(perch_daemon *d, const perch_daemon_record_opts *o, perch_config *c,
                                char *stem, size_t len, char *why, size_t why_len)
{
    *c = d->o.config;
    stem[0] = '\0';
    if (o == NULL)
        return 0;
    int err = o->name != NULL && o->name[0] != '\0'
                  ? perch__daemon_record_name(o->name, stem, len, why, why_len)
                  : 0;
    for (size_t i = 0; i < o->option_count && err == 0; i++)
        err = take_option(c, o->options[i].key, o->options[i].value, why, why_len);
    return err;
}
