/*
 * Elevation checks and SeSystemProfilePrivilege (src/win/privilege.h): CheckTokenMembership
 * against BUILTIN\Administrators, then AdjustTokenPrivileges, whose ERROR_NOT_ALL_ASSIGNED
 * says the token does not hold the privilege at all.
 */
#include <windows.h>
#include <stdio.h>

#include "perch/error.h"
#include "perch/win_error.h"
#include "privilege.h"

bool perch_is_elevated(void)
{
    SID_IDENTIFIER_AUTHORITY nt = {SECURITY_NT_AUTHORITY};
    PSID admins = NULL;
    BOOL member = FALSE;
    if (!AllocateAndInitializeSid(&nt, 2, SECURITY_BUILTIN_DOMAIN_RID, DOMAIN_ALIAS_RID_ADMINS, 0,
                                  0, 0, 0, 0, 0, &admins))
        return false;
    if (!CheckTokenMembership(NULL, admins, &member))
        member = FALSE;
    FreeSid(admins);
    return member != FALSE;
}

/* 0, or the reason SeSystemProfilePrivilege could not be enabled. */
static int enable_profile_privilege(void)
{
    HANDLE token;
    TOKEN_PRIVILEGES tp;
    int err = 0;
    if (!OpenProcessToken(GetCurrentProcess(), TOKEN_ADJUST_PRIVILEGES | TOKEN_QUERY, &token))
        return perch_win_last_error();
    tp.PrivilegeCount = 1;
    tp.Privileges[0].Attributes = SE_PRIVILEGE_ENABLED;
    if (!LookupPrivilegeValueW(NULL, SE_SYSTEM_PROFILE_NAME, &tp.Privileges[0].Luid))
        err = perch_win_last_error();
    else if (!AdjustTokenPrivileges(token, FALSE, &tp, sizeof tp, NULL, NULL))
        err = perch_win_last_error();
    else if (GetLastError() == ERROR_NOT_ALL_ASSIGNED)
        err = PERCH_EACCES;
    CloseHandle(token);
    return err;
}

void perch_privileges_acquire(perch_privileges *p)
{
    p->admin = perch_is_elevated();
    int err = enable_profile_privilege();
    p->profile = err == 0;
    p->why[0] = '\0';
    if (!p->admin)
        snprintf(p->why, sizeof p->why,
                 "perchd is not running as an administrator, so Windows refuses it a kernel "
                 "trace session and no kernel data is recorded (run it as the service, or "
                 "'perchd run' from an elevated prompt).");
    else if (!p->profile)
        snprintf(p->why, sizeof p->why,
                 "SeSystemProfilePrivilege could not be enabled (%s), so Windows refuses CPU "
                 "sampling and stack walks and no sample data is recorded.",
                 perch_strerror(err));
}
