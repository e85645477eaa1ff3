/*
 * Registry I/O of the service configuration (src/win/config.h). The table, parsing and range
 * checks are portable (src/core/config/config.c); this file only moves values between the
 * Parameters key and a perch_config, in the registry type each key's kind calls for.
 */
#include <windows.h>
#include <shlobj.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include "config.h"
#include "perch/error.h"
#include "perch/win_error.h"
#include "util/mem.h"
#include "wstr.h"

#define SERVICE_KEY L"SYSTEM\\CurrentControlSet\\Services\\Perch"
#define PARAMS_KEY  SERVICE_KEY L"\\Parameters"

static bool is_text_key(const perch_config_key *k)
{
    return !perch_config_is_number(k);
}

static void say(perch_config_issue_fn issue, void *ctx, const perch_config_key *k, const char *why)
{
    char line[PERCH_CONFIG_WHY_MAX + 200];
    if (issue == NULL)
        return;
    snprintf(line, sizeof line, "%s (registry value %s under %s; the default, %s, is used)", why,
             k->name, PERCH_CONFIG_REG_PATH, k->def);
    issue(ctx, line);
}

/* Reads a REG_SZ / REG_EXPAND_SZ value as UTF-8; 0, PERCH_ERANGE or PERCH_EFORMAT. */
static int read_text(HKEY h, const wchar_t *name, char *out, size_t len)
{
    wchar_t w[PERCH_CONFIG_PATH_MAX];
    DWORD type = 0, size = sizeof w - sizeof w[0];
    LSTATUS st = RegQueryValueExW(h, name, NULL, &type, (BYTE *)w, &size);
    if (st == ERROR_MORE_DATA)
        return PERCH_ERANGE;
    if (st != ERROR_SUCCESS || (type != REG_SZ && type != REG_EXPAND_SZ))
        return PERCH_EFORMAT;
    w[size / sizeof w[0]] = L'\0';
    return perch__wide_to_utf8(w, out, len);
}

/* Applies one registry value to *c; false when it was present and refused. */
static bool load_one(HKEY h, const perch_config_key *k, perch_config *c,
                     perch_config_issue_fn issue, void *ctx)
{
    char why[PERCH_CONFIG_WHY_MAX], text[PERCH_CONFIG_PATH_MAX];
    wchar_t *name = perch__utf8_to_wide(k->name);
    DWORD type = 0, value = 0, size = sizeof value;
    int err = PERCH_ENOMEM;
    if (name == NULL)
        return false;
    LSTATUS st = RegQueryValueExW(h, name, NULL, &type, NULL, NULL);
    if (st == ERROR_FILE_NOT_FOUND) {
        perch__free(name);
        return true;
    }
    snprintf(why, sizeof why, "%s: the registry value has the wrong type (%s expected).", k->name,
             is_text_key(k) ? "REG_SZ" : "REG_DWORD or REG_SZ");
    if (type == REG_DWORD && !is_text_key(k) &&
        RegQueryValueExW(h, name, NULL, &type, (BYTE *)&value, &size) == ERROR_SUCCESS)
        err = perch_config_set_number(c, k, value, why, sizeof why);
    else if (type == REG_SZ || type == REG_EXPAND_SZ) {
        err = read_text(h, name, text, sizeof text);
        if (err == PERCH_ERANGE)
            snprintf(why, sizeof why, "%s: the registry value is too long.", k->name);
        err = err ? err : perch_config_set(c, k, text, why, sizeof why);
    }
    perch__free(name);
    if (err != 0)
        say(issue, ctx, k, why);
    return err == 0;
}

int perch_win_config_load(perch_config *c, perch_config_issue_fn issue, void *ctx)
{
    HKEY h;
    int refused = 0;
    perch_config_defaults(c);
    if (RegOpenKeyExW(HKEY_LOCAL_MACHINE, PARAMS_KEY, 0, KEY_QUERY_VALUE, &h) != ERROR_SUCCESS)
        return 0;
    for (size_t i = 0; i < perch_config_key_count(); i++)
        if (!load_one(h, perch_config_key_at(i), c, issue, ctx))
            refused++;
    RegCloseKey(h);
    return refused;
}

static int open_params(REGSAM access, HKEY *out)
{
    HKEY svc;
    LSTATUS st = RegOpenKeyExW(HKEY_LOCAL_MACHINE, SERVICE_KEY, 0, KEY_READ, &svc);
    if (st != ERROR_SUCCESS)
        return st == ERROR_FILE_NOT_FOUND ? PERCH_ENOENT : perch_win_error((uint32_t)st);
    RegCloseKey(svc);
    st = RegCreateKeyExW(HKEY_LOCAL_MACHINE, PARAMS_KEY, 0, NULL, 0, access, NULL, out, NULL);
    return st == ERROR_SUCCESS ? 0 : perch_win_error((uint32_t)st);
}

int perch_win_config_store(const perch_config *c, const perch_config_key *k)
{
    char text[PERCH_CONFIG_PATH_MAX];
    HKEY h;
    int err = open_params(KEY_SET_VALUE, &h);
    if (err < 0)
        return err;
    wchar_t *name = perch__utf8_to_wide(k->name), *wtext = NULL;
    LSTATUS st = ERROR_OUTOFMEMORY;
    if (name != NULL && !is_text_key(k)) {
        DWORD v = perch_config_number(c, k);
        st = RegSetValueExW(h, name, 0, REG_DWORD, (const BYTE *)&v, sizeof v);
    } else if (name != NULL && perch_config_format(c, k, text, sizeof text) == 0 &&
               (wtext = perch__utf8_to_wide(text)) != NULL) {
        DWORD type = k->type == PERCH_CONFIG_PATH ? REG_EXPAND_SZ : REG_SZ;
        st = RegSetValueExW(h, name, 0, type, (const BYTE *)wtext,
                            (DWORD)((wcslen(wtext) + 1) * sizeof *wtext));
    }
    perch__free(wtext);
    perch__free(name);
    RegCloseKey(h);
    return perch_win_error((uint32_t)st);
}

int perch_win_config_reset(const perch_config_key *k)
{
    HKEY h;
    int err = open_params(KEY_SET_VALUE, &h);
    if (err < 0)
        return err;
    wchar_t *name = perch__utf8_to_wide(k->name);
    LSTATUS st = name ? RegDeleteValueW(h, name) : ERROR_OUTOFMEMORY;
    perch__free(name);
    RegCloseKey(h);
    return st == ERROR_FILE_NOT_FOUND ? 0 : perch_win_error((uint32_t)st);
}

int perch_win_config_is_set(const perch_config_key *k)
{
    HKEY h;
    int set = 0;
    if (RegOpenKeyExW(HKEY_LOCAL_MACHINE, PARAMS_KEY, 0, KEY_QUERY_VALUE, &h) != ERROR_SUCCESS)
        return 0;
    wchar_t *name = perch__utf8_to_wide(k->name);
    if (name != NULL)
        set = RegQueryValueExW(h, name, NULL, NULL, NULL, NULL) == ERROR_SUCCESS;
    perch__free(name);
    RegCloseKey(h);
    return set;
}

/* A leading %ProgramData% is the known folder (CSIDL_COMMON_APPDATA), not the environment
 * variable: a service's environment need not have it (under Wine it names another folder),
 * and `perchd status` must find the directory the service uses. */
static const wchar_t *known_prefix(const wchar_t *in, wchar_t *buf)
{
    static const wchar_t var[] = L"%ProgramData%";
    size_t n = sizeof var / sizeof var[0] - 1;
    if (_wcsnicmp(in, var, n) != 0 ||
        SHGetFolderPathW(NULL, CSIDL_COMMON_APPDATA, NULL, SHGFP_TYPE_CURRENT, buf) != S_OK ||
        wcslen(buf) + wcslen(in + n) >= PERCH_CONFIG_PATH_MAX)
        return in;
    wcscat(buf, in + n);
    return buf;
}

int perch_win_expand_path(const char *in, char *out, size_t len)
{
    wchar_t expanded[PERCH_CONFIG_PATH_MAX], known[PERCH_CONFIG_PATH_MAX + MAX_PATH];
    wchar_t *w = perch__utf8_to_wide(in);
    if (w == NULL)
        return PERCH_EINVAL;
    DWORD n = ExpandEnvironmentStringsW(known_prefix(w, known), expanded, PERCH_CONFIG_PATH_MAX);
    perch__free(w);
    if (n == 0 || n > PERCH_CONFIG_PATH_MAX)
        return PERCH_ERANGE;
    if (wcschr(expanded, L'%') != NULL)
        return PERCH_EINVAL;
    return perch__wide_to_utf8(expanded, out, len);
}
