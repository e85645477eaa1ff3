/*
 * The service's configuration in the registry: one value per key of the portable table
 * (include/perch/config.h) under HKLM\SYSTEM\CurrentControlSet\Services\Perch\Parameters.
 * Numbers and switches are REG_DWORD, directories REG_EXPAND_SZ, everything else REG_SZ; a
 * value of the wrong registry type, or one its key refuses, is reported in a sentence and the
 * default is kept, so a bad edit in regedit degrades one setting, never the service.
 */
#ifndef PERCH_WIN_CONFIG_H
#define PERCH_WIN_CONFIG_H

#include <stddef.h>

#include "perch/config.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The service name the SCM knows, and where its settings live (for messages and docs). */
#define PERCH_SERVICE_NAME_UTF8 "Perch"
#define PERCH_CONFIG_REG_PATH   "HKLM\\SYSTEM\\CurrentControlSet\\Services\\Perch\\Parameters"

/* Receives one sentence per setting that could not be used. */
typedef void (*perch_config_issue_fn)(void *ctx, const char *sentence);

/* Fills *c with the defaults, then every value found in the Parameters key. A missing key
 * (service not installed, nothing configured) is not an error. Returns 0, or the number of
 * values refused (each reported through issue, which may be NULL). */
int perch_win_config_load(perch_config *c, perch_config_issue_fn issue, void *ctx);

/* Writes the value of k from *c into the Parameters key. PERCH_ENOENT when the service is not
 * installed (its key is missing: creating it would leave a broken service entry), PERCH_EACCES
 * when not elevated, else 0 or the translated Win32 error. */
int perch_win_config_store(const perch_config *c, const perch_config_key *k);

/* Removes k's value (back to its default). 0 also when it was not set. */
int perch_win_config_reset(const perch_config_key *k);

/* True when the Parameters key holds a value for k. */
int perch_win_config_is_set(const perch_config_key *k);

/* Expands %VARIABLES% of a directory setting into out (UTF-8, at most len bytes). Returns 0,
 * PERCH_ERANGE (does not fit) or PERCH_EINVAL (a variable left unexpanded). */
int perch_win_expand_path(const char *in, char *out, size_t len);

#ifdef __cplusplus
}
#endif

#endif
