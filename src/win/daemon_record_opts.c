/*
 * What a client may choose for one recording (src/win/daemon.h, perch_daemon_record_opts):
 * its name, checked by the rotation's name rules (perch__rotate_check_name in
 * src/core/capture/rotate_names.c: a plain file name Windows accepts, not one of perchd's own
 * name patterns), and configuration keys for it alone. The rotation caps apply to the
 * recording directly; keys of the kernel session are refused with the reason, since the
 * session is shared by the flight recorder, the live queries and the recording; keys of
 * perchd itself likewise. Values are checked by the configuration table (src/core/config), so
 * a bad one is refused naming the key, the value and the range, whatever the key.
 */
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
                  ? perch__rotate_check_name(o->name, stem, len, why, why_len)
                  : 0;
    for (size_t i = 0; i < o->option_count && err == 0; i++)
        err = take_option(c, o->options[i].key, o->options[i].value, why, why_len);
    return err;
}
