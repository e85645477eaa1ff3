/*
 * Small ETW control helpers shared by the session code: the EVENT_TRACE_PROPERTIES buffer with
 * room for both names, query and stop through ControlTraceW, UTF-8/UTF-16 conversion into
 * fixed buffers (through src/win/wstr.c), and English text for the Win32 errors ETW returns (a
 * table, so the sentences do not depend on the system's language).
 */
#include <stdio.h>
#include <string.h>

#include "etw_internal.h"
#include "perch/error.h"
#include "perch/win_error.h"
#include "util/mem.h"
#include "wstr.h"

void perch__etw_props_init(perch_etw_props *b)
{
    memset(b, 0, sizeof *b);
    b->p.Wnode.BufferSize = sizeof *b;
    b->p.Wnode.Flags = WNODE_FLAG_TRACED_GUID;
    b->p.LoggerNameOffset = (ULONG)offsetof(perch_etw_props, logger_name);
    b->p.LogFileNameOffset = (ULONG)offsetof(perch_etw_props, log_file_name);
}

int perch__etw_query(TRACEHANDLE handle, const WCHAR *name, perch_etw_props *b, uint32_t *win32)
{
    perch__etw_props_init(b);
    ULONG rc = ControlTraceW(handle, handle != 0 ? NULL : name, &b->p, EVENT_TRACE_CONTROL_QUERY);
    *win32 = rc;
    if (rc == ERROR_MORE_DATA)
        rc = ERROR_SUCCESS; /* the numbers are there; a name did not fit */
    if (rc == ERROR_WMI_INSTANCE_NOT_FOUND)
        return PERCH_ENOENT;
    if (rc != ERROR_SUCCESS)
        return perch_win_error(rc);
    if (b->p.Wnode.HistoricalContext == 0 && b->p.BufferSize == 0 && b->p.NumberOfBuffers == 0)
        return PERCH_ENOENT; /* "success" describing no session: a stub ETW */
    b->logger_name[PERCH_ETW_NAME_CHARS - 1] = 0;
    b->log_file_name[PERCH_ETW_NAME_CHARS - 1] = 0;
    return 0;
}

int perch__etw_stop(TRACEHANDLE handle, const WCHAR *name, uint32_t *win32)
{
    perch_etw_props b;
    perch__etw_props_init(&b);
    ULONG rc = ControlTraceW(handle, handle != 0 ? NULL : name, &b.p, EVENT_TRACE_CONTROL_STOP);
    *win32 = rc;
    if (rc == ERROR_SUCCESS || rc == ERROR_MORE_DATA)
        return 0;
    if (rc == ERROR_WMI_INSTANCE_NOT_FOUND)
        return PERCH_ENOENT;
    return perch_win_error(rc);
}

int perch__etw_to_wide(const char *s, WCHAR *out, size_t cap)
{
    wchar_t *w = perch__utf8_to_wide(s);
    int err = PERCH_EINVAL;
    if (cap == 0)
        return err;
    out[0] = 0;
    if (w != NULL && wcslen(w) < cap) {
        memcpy(out, w, (wcslen(w) + 1) * sizeof *w);
        err = 0;
    }
    perch__free(w);
    return err;
}

void perch__etw_to_utf8(const WCHAR *s, char *out, size_t cap)
{
    if (out == NULL || cap == 0)
        return;
    if (s == NULL || perch__wide_to_utf8(s, out, cap) < 0)
        out[0] = '\0';
}

static const struct {
    uint32_t code;
    const char *text;
} error_texts[] = {
    {ERROR_ACCESS_DENIED, "access denied: perchd must run elevated or as LocalSystem"},
    {ERROR_INVALID_HANDLE, "invalid handle"},
    {ERROR_BAD_LENGTH, "a structure or buffer had the wrong size"},
    {ERROR_NOT_SUPPORTED, "not supported on this system or hardware"},
    {ERROR_INVALID_PARAMETER, "invalid parameter"},
    {ERROR_CALL_NOT_IMPLEMENTED, "not implemented by this system's ETW"},
    {ERROR_BAD_PATHNAME, "bad path name"},
    {ERROR_BUSY, "busy"},
    {ERROR_ALREADY_EXISTS, "a session of that name already runs"},
    {ERROR_MORE_DATA, "the buffer was too small"},
    {ERROR_NOT_FOUND, "not found"},
    {ERROR_PRIVILEGE_NOT_HELD, "a required privilege (SeSystemProfilePrivilege) is not held"},
    {ERROR_NO_SYSTEM_RESOURCES, "no system resources left (too many sessions)"},
    {ERROR_WMI_INSTANCE_NOT_FOUND, "no such session is running"},
    {ERROR_CTX_CLOSE_PENDING, "closing; events still being processed"},
    {ERROR_INVALID_STATE, "not valid in the session's current state"},
};

const char *perch__etw_error_text(uint32_t win32)
{
    for (size_t i = 0; i < sizeof error_texts / sizeof error_texts[0]; i++)
        if (error_texts[i].code == win32)
            return error_texts[i].text;
    return perch_strerror(perch_win_error(win32));
}

void perch__etw_say_failed(char *out, size_t n, const char *call, uint32_t win32)
{
    snprintf(out, n, "%s failed: error %u (%s)", call, (unsigned)win32,
             perch__etw_error_text(win32));
}
