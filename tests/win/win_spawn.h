/*
 * Starting a child process from a Windows test (the perchd and perch command-line harnesses):
 * CreateProcessA, tried again when it fails with ERROR_INTERNAL_ERROR (1359). Wine's
 * CreateProcess returns that now and then when the machine is loaded (seen once in
 * win.test_perchd_service, starting `perchd config reset` at a load of about 4; three runs
 * alone passed). It is the test host's failure, not the child's: a child that cannot load or
 * run fails after it starts, with its own exit status, which the tests check. Any other error
 * is returned at once. Header-only.
 */
#ifndef PERCH_TEST_WIN_SPAWN_H
#define PERCH_TEST_WIN_SPAWN_H

#include <stdio.h>

#include <windows.h>

#define WIN_SPAWN_TRIES    3
#define WIN_SPAWN_PAUSE_MS 500u

/* CreateProcessA(NULL, cmd, NULL, NULL, inherit, flags, NULL, NULL, si, pi), tried up to
 * WIN_SPAWN_TRIES times while it fails with ERROR_INTERNAL_ERROR; each retry is printed.
 * Returns what the last try returned, with GetLastError as it left it. */
static inline BOOL win_spawn(char *cmd, BOOL inherit, DWORD flags, STARTUPINFOA *si,
                             PROCESS_INFORMATION *pi)
{
    for (int attempt = 1;; attempt++) {
        if (CreateProcessA(NULL, cmd, NULL, NULL, inherit, flags, NULL, NULL, si, pi))
            return TRUE;
        DWORD err = GetLastError();
        if (err != ERROR_INTERNAL_ERROR || attempt == WIN_SPAWN_TRIES) {
            SetLastError(err);
            return FALSE;
        }
        printf("CreateProcess said ERROR_INTERNAL_ERROR (attempt %d of %d), trying again: %s\n",
               attempt, WIN_SPAWN_TRIES, cmd);
        fflush(stdout);
        Sleep(WIN_SPAWN_PAUSE_MS);
    }
}

#endif
