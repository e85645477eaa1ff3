/*
 * Who may use the pipe and who is on the other end: the security descriptor every instance
 * is created with (from PERCH_PIPE_SDDL), the role of a connected client (impersonate it,
 * then ask whether its token is in Administrators or is LocalSystem), its pid and image path
 * for the log, the check for a squatter (a process that already serves the pipe name before
 * perchd creates it), and the client's check of the server (the pipe's owner, which only an
 * administrator or LocalSystem can make Administrators). The create and role calls are
 * reached through perch__pipe_os so tests can make them behave as Windows does where Wine
 * does not.
 */
#include <windows.h>
#include <aclapi.h>
#include <sddl.h>

#include <stdio.h>

#include "perch/error.h"
#include "perch/win_error.h"
#include "pipe_internal.h"
#include "wstr.h"

static HANDLE os_create(const wchar_t *name, DWORD open_mode, DWORD pipe_mode, DWORD max_instances,
                        DWORD out_size, DWORD in_size, DWORD timeout, SECURITY_ATTRIBUTES *sa)
{
    return CreateNamedPipeW(name, open_mode, pipe_mode, max_instances, out_size, in_size, timeout,
                            sa);
}

perch__pipe_os perch__pipe_os_hooks = {os_create, perch__pipe_token_role};

int perch__pipe_security(SECURITY_ATTRIBUTES *sa)
{
    PSECURITY_DESCRIPTOR sd = NULL;
    if (!ConvertStringSecurityDescriptorToSecurityDescriptorW(PERCH_PIPE_SDDL, SDDL_REVISION_1, &sd,
                                                              NULL))
        return perch_win_last_error();
    sa->nLength = sizeof *sa;
    sa->lpSecurityDescriptor = sd;
    sa->bInheritHandle = FALSE;
    return 0;
}

static bool token_is(HANDLE token, WELL_KNOWN_SID_TYPE type)
{
    BYTE sid[SECURITY_MAX_SID_SIZE];
    DWORD len = sizeof sid;
    BOOL member = FALSE;
    if (!CreateWellKnownSid(type, NULL, sid, &len))
        return false;
    return CheckTokenMembership(token, sid, &member) && member;
}

int perch__pipe_token_role(HANDLE pipe, uint8_t *role)
{
    HANDLE token = NULL;
    int err = 0;
    *role = PERCH_ROLE_READ;
    if (!ImpersonateNamedPipeClient(pipe))
        return perch_win_last_error();
    if (!OpenThreadToken(GetCurrentThread(), TOKEN_QUERY, TRUE, &token))
        err = perch_win_last_error();
    RevertToSelf(); /* before anything else: never run as the client */
    if (err < 0)
        return err;
    if (token_is(token, WinBuiltinAdministratorsSid) || token_is(token, WinLocalSystemSid))
        *role = PERCH_ROLE_ADMIN;
    CloseHandle(token);
    return 0;
}

static void image_of(uint32_t pid, char *image, size_t len)
{
    wchar_t path[MAX_PATH + 1];
    DWORD n = MAX_PATH;
    HANDLE p = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, FALSE, pid);
    image[0] = '\0';
    if (p == NULL)
        return;
    if (QueryFullProcessImageNameW(p, 0, path, &n) && perch__wide_to_utf8(path, image, len) < 0)
        image[0] = '\0';
    CloseHandle(p);
}

void perch__pipe_peer(HANDLE pipe, uint32_t *pid, char *image, size_t image_len)
{
    ULONG p = 0;
    *pid = GetNamedPipeClientProcessId(pipe, &p) ? (uint32_t)p : 0;
    image_of(*pid, image, image_len);
}

bool perch__pipe_squatted(const wchar_t *name, char *why, size_t why_len)
{
    char image[520] = "";
    ULONG pid = 0;
    if (!WaitNamedPipeW(name, 1) && GetLastError() == ERROR_FILE_NOT_FOUND)
        return false; /* nobody serves the name */
    HANDLE h = CreateFileW(name, GENERIC_READ | GENERIC_WRITE, 0, NULL, OPEN_EXISTING,
                           SECURITY_SQOS_PRESENT | SECURITY_ANONYMOUS, NULL);
    if (h != INVALID_HANDLE_VALUE) {
        if (GetNamedPipeServerProcessId(h, &pid))
            image_of((uint32_t)pid, image, sizeof image);
        CloseHandle(h);
    }
    if (why != NULL && why_len > 0) {
        if (pid != 0)
            snprintf(why, why_len,
                     "the pipe name is already served by pid %lu (%s): perchd does not serve a "
                     "pipe another program holds",
                     (unsigned long)pid, image[0] ? image : "image unknown");
        else
            snprintf(why, why_len,
                     "the pipe name is already served by another process: "
                     "perchd does not serve a pipe another program holds");
    }
    return true;
}

static void server_of(HANDLE pipe, char *who, size_t len)
{
    char image[520] = "";
    ULONG pid = 0;
    if (!GetNamedPipeServerProcessId(pipe, &pid) || pid == 0) {
        snprintf(who, len, "a process whose pid Windows did not give");
        return;
    }
    image_of((uint32_t)pid, image, sizeof image);
    snprintf(who, len, "pid %lu (%s)", (unsigned long)pid, image[0] ? image : "image unknown");
}

static void sid_text(PSID sid, char *out, size_t len)
{
    wchar_t *w = NULL;
    snprintf(out, len, "%s", sid == NULL ? "nobody (the pipe has no owner)" : "an unreadable SID");
    if (sid != NULL && ConvertSidToStringSidW(sid, &w)) {
        if (perch__wide_to_utf8(w, out, len) < 0)
            snprintf(out, len, "an unreadable SID");
        LocalFree(w);
    }
}

int perch__pipe_server_check(HANDLE pipe, char *why, size_t why_len)
{
    PSID owner = NULL;
    PSECURITY_DESCRIPTOR sd = NULL;
    char who[600], sid[200];
    DWORD e = GetSecurityInfo(pipe, SE_KERNEL_OBJECT, OWNER_SECURITY_INFORMATION, &owner, NULL,
                              NULL, NULL, &sd);
    bool trusted = e == ERROR_SUCCESS && owner != NULL &&
                   (IsWellKnownSid(owner, WinBuiltinAdministratorsSid) ||
                    IsWellKnownSid(owner, WinLocalSystemSid));
    if (!trusted && why != NULL && why_len > 0) {
        server_of(pipe, who, sizeof who);
        if (e == ERROR_SUCCESS)
            sid_text(owner, sid, sizeof sid);
        else /* perchd's DACL lets every client it admits read the owner */
            snprintf(sid, sizeof sid, "an owner it does not let clients read (%s)",
                     perch_strerror(perch_win_error(e)));
        snprintf(why, why_len,
                 "it is owned by %s, not Administrators or LocalSystem, so it is not perchd "
                 "(it is served by %s)",
                 sid, who);
    }
    if (e == ERROR_SUCCESS)
        LocalFree(sd);
    return trusted ? 0 : PERCH_ENOTADMIN;
}
