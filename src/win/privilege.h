/*
 * Elevation and SeSystemProfilePrivilege: a kernel-logger session needs an administrator (or
 * LocalSystem) token, CPU sampling and stack walks need SeSystemProfilePrivilege enabled in
 * it. perchd checks both at start; without them it still starts, degraded, and says in one
 * sentence why kernel data is missing.
 */
#ifndef PERCH_WIN_PRIVILEGE_H
#define PERCH_WIN_PRIVILEGE_H

#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct perch_privileges {
    bool admin;    /* the process token is a member of Administrators (elevated) */
    bool profile;  /* SeSystemProfilePrivilege is now enabled */
    char why[320]; /* "" when both hold, else one sentence saying what is missing and why */
} perch_privileges;

/* Checks administrator rights and enables SeSystemProfilePrivilege; fills *p. */
void perch_privileges_acquire(perch_privileges *p);

/* True when the current process token is an elevated administrator's (for install,
 * uninstall and config set, which say so when it is not). */
bool perch_is_elevated(void);

#ifdef __cplusplus
}
#endif

#endif
