/*
 * The fake ETW's system-wide state: sessions, the ledger and the scenario, kept in the
 * registry under HKLM\<root> so every process of the Wine prefix (a service started by the
 * SCM, the test that drives it, a process started after another was killed) sees the same
 * sessions, as with real ETW. A named mutex (one per root) serialises read-modify-write; a
 * process killed while holding it leaves it abandoned, which the next owner simply takes.
 */
#define _WMI_SOURCE_
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "etw_fake.h"
#include "fake_internal.h"

#define LEDGER_MAX 10000u

static WCHAR root_path[256];
static HANDLE lock_handle;

const WCHAR *fake_root(void)
{
    if (root_path[0] == 0) {
        DWORD n = GetEnvironmentVariableW(L"PERCH_FAKE_ETW_ROOT", root_path,
                                          sizeof root_path / sizeof root_path[0]);
        if (n == 0 || n >= sizeof root_path / sizeof root_path[0])
            wcscpy(root_path, L"Software\\Perch\\EtwFake");
    }
    return root_path;
}

void fake_lock(void)
{
    if (lock_handle == NULL) {
        WCHAR name[300];
        swprintf(name, sizeof name / sizeof name[0], L"Global\\PerchEtwFake_%ls", fake_root());
        for (WCHAR *p = name + 7; *p; p++)
            if (*p == L'\\')
                *p = L'_';
        HANDLE h = CreateMutexW(NULL, FALSE, name);
        if (InterlockedCompareExchangePointer(&lock_handle, h, NULL) != NULL)
            CloseHandle(h);
    }
    DWORD w = WaitForSingleObject(lock_handle, 10000);
    (void)w; /* WAIT_ABANDONED: an owner was killed; the state it left is what ETW would keep */
}

void fake_unlock(void)
{
    ReleaseMutex(lock_handle);
}

/* Opens (creating) <root>[\sub[\name]]. */
static HKEY open_key(const WCHAR *sub, const WCHAR *name, bool create)
{
    WCHAR path[300 + FAKE_NAME_CHARS];
    HKEY k = NULL;
    swprintf(path, sizeof path / sizeof path[0], L"%ls%ls%ls%ls%ls", fake_root(), sub ? L"\\" : L"",
             sub ? sub : L"", name ? L"\\" : L"", name ? name : L"");
    LSTATUS rc = create ? RegCreateKeyExW(HKEY_LOCAL_MACHINE, path, 0, NULL, 0, KEY_ALL_ACCESS,
                                          NULL, &k, NULL)
                        : RegOpenKeyExW(HKEY_LOCAL_MACHINE, path, 0, KEY_ALL_ACCESS, &k);
    return rc == ERROR_SUCCESS ? k : NULL;
}

static bool read_state(HKEY k, fake_session *s)
{
    DWORD type = 0, len = sizeof *s;
    if (RegQueryValueExW(k, L"State", NULL, &type, (BYTE *)s, &len) != ERROR_SUCCESS)
        return false;
    return type == REG_BINARY && len == sizeof *s && s->size == sizeof *s;
}

static bool find_by_id(uint32_t id, fake_session *s, WCHAR *name_out)
{
    HKEY all = open_key(L"Sessions", NULL, true);
    WCHAR name[FAKE_NAME_CHARS];
    bool found = false;
    if (all == NULL)
        return false;
    for (DWORD i = 0; !found; i++) {
        DWORD n = FAKE_NAME_CHARS;
        if (RegEnumKeyExW(all, i, name, &n, NULL, NULL, NULL, NULL) != ERROR_SUCCESS)
            break;
        HKEY k = open_key(L"Sessions", name, false);
        if (k == NULL)
            continue;
        if (read_state(k, s) && s->logger_id == id) {
            found = true;
            if (name_out != NULL)
                wcscpy(name_out, name);
        }
        RegCloseKey(k);
    }
    RegCloseKey(all);
    return found;
}

bool fake_find(const WCHAR *name, uint32_t logger_id, fake_session *s, WCHAR *name_out)
{
    bool found = false;
    fake_lock();
    if (name == NULL) {
        found = find_by_id(logger_id, s, name_out);
    } else {
        HKEY k = open_key(L"Sessions", name, false);
        if (k != NULL) {
            found = read_state(k, s);
            RegCloseKey(k);
            if (found && name_out != NULL) {
                /* Keep the stored spelling: ETW names are case-insensitive. */
                fake_session tmp;
                if (!find_by_id(s->logger_id, &tmp, name_out))
                    wcscpy(name_out, name);
            }
        }
    }
    fake_unlock();
    return found;
}

uint32_t fake_store(const WCHAR *name, const fake_session *s)
{
    HKEY k = open_key(L"Sessions", name, true);
    if (k == NULL)
        return ERROR_ACCESS_DENIED;
    LSTATUS rc = RegSetValueExW(k, L"State", 0, REG_BINARY, (const BYTE *)s, sizeof *s);
    RegSetValueExW(k, L"Owner", 0, REG_SZ, (const BYTE *)s->owner,
                   (DWORD)((wcslen(s->owner) + 1) * sizeof(WCHAR)));
    RegSetValueExW(k, L"LoggerId", 0, REG_DWORD, (const BYTE *)&s->logger_id, sizeof(DWORD));
    RegCloseKey(k);
    return (uint32_t)rc;
}

uint32_t fake_remove(const WCHAR *name)
{
    HKEY all = open_key(L"Sessions", NULL, true);
    if (all == NULL)
        return ERROR_ACCESS_DENIED;
    LSTATUS rc = RegDeleteTreeW(all, name);
    RegCloseKey(all);
    return (uint32_t)rc;
}

static DWORD bump_root_dword(const WCHAR *value)
{
    HKEY k = open_key(NULL, NULL, true);
    DWORD v = 0, len = sizeof v, type = 0;
    if (k == NULL)
        return 0;
    if (RegQueryValueExW(k, value, NULL, &type, (BYTE *)&v, &len) != ERROR_SUCCESS ||
        type != REG_DWORD)
        v = 0;
    v++;
    RegSetValueExW(k, value, 0, REG_DWORD, (const BYTE *)&v, sizeof v);
    RegCloseKey(k);
    return v;
}

uint32_t fake_next_logger_id(void)
{
    return (uint32_t)bump_root_dword(L"NextLoggerId") + 15u; /* ids below 16: well-known */
}

bool fake_guid_running(const GUID *guid)
{
    HKEY all = open_key(L"Sessions", NULL, true);
    WCHAR name[FAKE_NAME_CHARS];
    bool found = false;
    if (all == NULL)
        return false;
    for (DWORD i = 0; !found; i++) {
        DWORD n = FAKE_NAME_CHARS;
        fake_session s;
        if (RegEnumKeyExW(all, i, name, &n, NULL, NULL, NULL, NULL) != ERROR_SUCCESS)
            break;
        HKEY k = open_key(L"Sessions", name, false);
        if (k != NULL && read_state(k, &s) && IsEqualGUID(&s.guid, guid))
            found = true;
        if (k != NULL)
            RegCloseKey(k);
    }
    RegCloseKey(all);
    return found;
}

unsigned fake_count_sessions(uint32_t mode_bits)
{
    HKEY all = open_key(L"Sessions", NULL, true);
    WCHAR name[FAKE_NAME_CHARS];
    unsigned count = 0;
    if (all == NULL)
        return 0;
    for (DWORD i = 0;; i++) {
        DWORD n = FAKE_NAME_CHARS;
        fake_session s;
        if (RegEnumKeyExW(all, i, name, &n, NULL, NULL, NULL, NULL) != ERROR_SUCCESS)
            break;
        HKEY k = open_key(L"Sessions", name, false);
        if (k != NULL && read_state(k, &s) && (mode_bits == 0 || (s.log_file_mode & mode_bits)))
            count++;
        if (k != NULL)
            RegCloseKey(k);
    }
    RegCloseKey(all);
    return count;
}

void fake_utf8(const WCHAR *w, char *out, size_t cap)
{
    out[0] = '\0';
    if (WideCharToMultiByte(CP_UTF8, 0, w, -1, out, (int)cap, NULL, NULL) <= 0)
        out[0] = '\0';
}

void fake_ledger(const char *fmt, ...)
{
    char text[1024];
    WCHAR wtext[1024], value[16];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    if (MultiByteToWideChar(CP_UTF8, 0, text, -1, wtext, 1024) <= 0)
        return;
    fake_lock();
    DWORD n = bump_root_dword(L"LedgerCount");
    HKEY k = n <= LEDGER_MAX ? open_key(L"Ledger", NULL, true) : NULL;
    if (k != NULL) {
        swprintf(value, 16, L"%06lu", (unsigned long)n);
        RegSetValueExW(k, value, 0, REG_SZ, (const BYTE *)wtext,
                       (DWORD)((wcslen(wtext) + 1) * sizeof(WCHAR)));
        RegCloseKey(k);
    }
    fake_unlock();
}

static bool scenario_value(const char *name, DWORD want_type, void *buf, DWORD *len)
{
    WCHAR wname[64];
    DWORD type = 0;
    HKEY k = open_key(L"Scenario", NULL, false);
    bool ok = false;
    if (k == NULL || MultiByteToWideChar(CP_UTF8, 0, name, -1, wname, 64) <= 0) {
        if (k != NULL)
            RegCloseKey(k);
        return false;
    }
    ok = RegQueryValueExW(k, wname, NULL, &type, buf, len) == ERROR_SUCCESS && type == want_type;
    RegCloseKey(k);
    return ok;
}

uint32_t fake_scenario_dword(const char *name, uint32_t fallback)
{
    DWORD v = 0, len = sizeof v;
    return scenario_value(name, REG_DWORD, &v, &len) ? v : fallback;
}

bool fake_scenario_string(const char *name, char *out, size_t cap)
{
    WCHAR w[1024];
    DWORD len = sizeof w - sizeof w[0];
    if (!scenario_value(name, REG_SZ, w, &len))
        return false;
    w[len / sizeof w[0]] = 0;
    fake_utf8(w, out, cap);
    return out[0] != '\0';
}

uint32_t fake_refusal(const char *name)
{
    WCHAR w[2048];
    DWORD len = sizeof w - 2 * sizeof w[0];
    char entry[256];
    size_t nlen = strlen(name);
    if (!scenario_value("Refuse", REG_MULTI_SZ, w, &len))
        return 0;
    w[len / sizeof w[0]] = 0;
    w[len / sizeof w[0] + 1] = 0;
    for (const WCHAR *p = w; *p; p += wcslen(p) + 1) {
        fake_utf8(p, entry, sizeof entry);
        if (strncmp(entry, name, nlen) == 0 && entry[nlen] == '=')
            return (uint32_t)strtoul(entry + nlen + 1, NULL, 0);
    }
    return 0;
}

void fake_self_image(WCHAR *out, size_t cap)
{
    WCHAR path[MAX_PATH];
    DWORD n = GetModuleFileNameW(NULL, path, MAX_PATH);
    const WCHAR *base = path;
    if (n == 0 || n >= MAX_PATH) {
        wcsncpy(out, L"unknown", cap);
        return;
    }
    for (const WCHAR *p = path; *p; p++)
        if (*p == L'\\' || *p == L'/')
            base = p + 1;
    wcsncpy(out, base, cap - 1);
    out[cap - 1] = 0;
}

/* --- the control API (etw_fake.h) ---------------------------------------------------------- */

static uint32_t delete_sub(const WCHAR *sub)
{
    HKEY k = open_key(NULL, NULL, true);
    if (k == NULL)
        return ERROR_ACCESS_DENIED;
    LSTATUS rc = RegDeleteTreeW(k, sub);
    RegCloseKey(k);
    return rc == ERROR_FILE_NOT_FOUND ? 0 : (uint32_t)rc;
}

uint32_t perch_fake_etw_reset(void)
{
    uint32_t rc;
    fake_lock();
    rc = delete_sub(L"Sessions");
    if (rc == 0)
        rc = delete_sub(L"Scenario");
    if (rc == 0)
        rc = delete_sub(L"Ledger");
    HKEY k = open_key(NULL, NULL, true);
    if (k != NULL) {
        RegDeleteValueW(k, L"LedgerCount");
        RegCloseKey(k);
    }
    fake_unlock();
    return rc;
}

static uint32_t set_value(const char *name, DWORD type, const void *data, DWORD len)
{
    WCHAR wname[64];
    HKEY k = open_key(L"Scenario", NULL, true);
    LSTATUS rc;
    if (k == NULL)
        return ERROR_ACCESS_DENIED;
    if (MultiByteToWideChar(CP_UTF8, 0, name, -1, wname, 64) <= 0) {
        RegCloseKey(k);
        return ERROR_INVALID_PARAMETER;
    }
    rc = data == NULL ? RegDeleteValueW(k, wname) : RegSetValueExW(k, wname, 0, type, data, len);
    RegCloseKey(k);
    return rc == ERROR_FILE_NOT_FOUND && data == NULL ? 0 : (uint32_t)rc;
}

uint32_t perch_fake_etw_set_dword(const char *name, uint32_t value)
{
    DWORD v = value;
    return set_value(name, REG_DWORD, &v, sizeof v);
}

uint32_t perch_fake_etw_set_string(const char *name, const char *value)
{
    WCHAR w[1024];
    if (value == NULL)
        return set_value(name, REG_SZ, NULL, 0);
    int n = MultiByteToWideChar(CP_UTF8, 0, value, -1, w, 1024);
    if (n <= 0)
        return ERROR_INVALID_PARAMETER;
    return set_value(name, REG_SZ, w, (DWORD)n * sizeof(WCHAR));
}

uint32_t perch_fake_etw_set_multi(const char *name, const char *values)
{
    WCHAR w[2048];
    size_t at = 0;
    if (values == NULL)
        return set_value(name, REG_MULTI_SZ, NULL, 0);
    for (const char *p = values; *p; p += strlen(p) + 1) {
        int n = MultiByteToWideChar(CP_UTF8, 0, p, -1, w + at, (int)(2046 - at));
        if (n <= 0)
            return ERROR_INVALID_PARAMETER;
        at += (size_t)n;
    }
    w[at++] = 0;
    return set_value(name, REG_MULTI_SZ, w, (DWORD)(at * sizeof(WCHAR)));
}
