/*
 * The Perch event source (src/win/eventlog.h). Registration writes
 * HKLM\SYSTEM\CurrentControlSet\Services\EventLog\Application\Perch with EventMessageFile
 * (perchd.exe, which carries the message table compiled from messages.mc) and TypesSupported;
 * Event Viewer then shows each sentence as the event's description. Reporting uses one
 * message ID per severity, the sentence being the only insertion string.
 */
#include <windows.h>
#include <wchar.h>

#include "eventlog.h"
#include "messages.h"
#include "perch/error.h"
#include "perch/win_error.h"
#include "util/mem.h"
#include "wstr.h"

#define SOURCE_KEY L"SYSTEM\\CurrentControlSet\\Services\\EventLog\\Application\\Perch"
#define SOURCE     L"Perch"

static HANDLE source = NULL;

int perch__eventlog_register(const char *exe_path)
{
    HKEY h;
    DWORD types = EVENTLOG_ERROR_TYPE | EVENTLOG_WARNING_TYPE | EVENTLOG_INFORMATION_TYPE;
    wchar_t *path = perch__utf8_to_wide(exe_path);
    if (path == NULL)
        return PERCH_EINVAL;
    LSTATUS st =
        RegCreateKeyExW(HKEY_LOCAL_MACHINE, SOURCE_KEY, 0, NULL, 0, KEY_SET_VALUE, NULL, &h, NULL);
    if (st == ERROR_SUCCESS) {
        st = RegSetValueExW(h, L"EventMessageFile", 0, REG_EXPAND_SZ, (const BYTE *)path,
                            (DWORD)((wcslen(path) + 1) * sizeof *path));
        if (st == ERROR_SUCCESS)
            st = RegSetValueExW(h, L"TypesSupported", 0, REG_DWORD, (const BYTE *)&types,
                                sizeof types);
        RegCloseKey(h);
    }
    perch__free(path);
    return perch_win_error((uint32_t)st);
}

int perch__eventlog_unregister(void)
{
    LSTATUS st = RegDeleteKeyW(HKEY_LOCAL_MACHINE, SOURCE_KEY);
    return st == ERROR_FILE_NOT_FOUND ? 0 : perch_win_error((uint32_t)st);
}

int perch__eventlog_is_registered(void)
{
    HKEY h;
    if (RegOpenKeyExW(HKEY_LOCAL_MACHINE, SOURCE_KEY, 0, KEY_READ, &h) != ERROR_SUCCESS)
        return 0;
    RegCloseKey(h);
    return 1;
}

int perch__eventlog_open(void)
{
    if (source != NULL)
        return 0;
    source = RegisterEventSourceW(NULL, SOURCE);
    return source != NULL ? 0 : perch_win_last_error();
}

int perch__eventlog_report(perch_log_level level, const char *sentence)
{
    static const WORD types[] = {EVENTLOG_INFORMATION_TYPE, EVENTLOG_WARNING_TYPE,
                                 EVENTLOG_ERROR_TYPE};
    static const DWORD ids[] = {PERCH_MSG_INFO, PERCH_MSG_WARNING, PERCH_MSG_ERROR};
    if (source == NULL)
        return PERCH_ESTATE;
    unsigned i = (unsigned)level < 3 ? (unsigned)level : 2u;
    wchar_t *w = perch__utf8_to_wide(sentence);
    if (w == NULL)
        return PERCH_EINVAL;
    LPCWSTR strings[1] = {w};
    BOOL ok = ReportEventW(source, types[i], 0, ids[i], NULL, 1, 0, strings, NULL);
    int err = ok ? 0 : perch_win_last_error();
    perch__free(w);
    return err;
}

void perch__eventlog_close(void)
{
    if (source != NULL)
        DeregisterEventSource(source);
    source = NULL;
}
