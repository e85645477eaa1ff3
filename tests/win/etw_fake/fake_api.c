/*
 * The read side of the fake's control API (etw_fake.h): what a test asks about sessions and
 * the ledger. The write side (reset, scenario values, planting) is in fake_state.c and
 * fake_control.c.
 */
#define _WMI_SOURCE_
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include "etw_fake.h"
#include "fake_internal.h"
#include "perch/error.h"
#include "perch/io.h"
#include "perch/synth.h"

bool perch_fake_etw_session(const char *name, perch_fake_etw_session_info *info)
{
    WCHAR wname[FAKE_NAME_CHARS];
    fake_session s;
    if (MultiByteToWideChar(CP_UTF8, 0, name, -1, wname, FAKE_NAME_CHARS) <= 0 ||
        !fake_find(wname, 0, &s, NULL))
        return false;
    if (info != NULL) {
        memset(info, 0, sizeof *info);
        info->logger_id = s.logger_id;
        info->owner_pid = s.owner_pid;
        fake_utf8(s.owner, info->owner, sizeof info->owner);
        info->log_file_mode = s.log_file_mode;
        info->enable_flags = s.enable_flags;
        memcpy(info->group_mask, s.group_mask, sizeof info->group_mask);
        info->stack_events = s.stack_events;
        info->pmc_counters = s.pmc_counters;
        info->pmc_events = s.pmc_events;
        info->lbr_filter = s.lbr_filter;
        info->lbr_events = s.lbr_events;
        info->delivered = s.delivered;
        info->replay_done = s.replay_done != 0;
    }
    return true;
}

/* Counts the <root>\Sessions names that start with prefix (case-insensitive). */
static unsigned each_session(const char *prefix)
{
    WCHAR path[300], name[FAKE_NAME_CHARS];
    char name8[FAKE_NAME_CHARS * 3];
    HKEY k;
    unsigned count = 0;
    swprintf(path, 300, L"%ls\\Sessions", fake_root());
    if (RegOpenKeyExW(HKEY_LOCAL_MACHINE, path, 0, KEY_READ, &k) != ERROR_SUCCESS)
        return 0;
    for (DWORD i = 0;; i++) {
        DWORD len = FAKE_NAME_CHARS;
        if (RegEnumKeyExW(k, i, name, &len, NULL, NULL, NULL, NULL) != ERROR_SUCCESS)
            break;
        fake_utf8(name, name8, sizeof name8);
        if (_strnicmp(name8, prefix, strlen(prefix)) == 0)
            count++;
    }
    RegCloseKey(k);
    return count;
}

unsigned perch_fake_etw_count(const char *prefix)
{
    unsigned n;
    fake_lock();
    n = each_session(prefix ? prefix : "");
    fake_unlock();
    return n;
}

unsigned perch_fake_etw_ledger(char *out, size_t cap)
{
    WCHAR path[300], value[32], text[1024];
    char line[2048];
    size_t used = 0;
    unsigned count = 0;
    HKEY k;
    if (cap != 0)
        out[0] = '\0';
    swprintf(path, 300, L"%ls\\Ledger", fake_root());
    if (RegOpenKeyExW(HKEY_LOCAL_MACHINE, path, 0, KEY_READ, &k) != ERROR_SUCCESS)
        return 0;
    for (DWORD i = 1;; i++) {
        DWORD type = 0, len = sizeof text - sizeof text[0];
        swprintf(value, 32, L"%06lu", (unsigned long)i);
        if (RegQueryValueExW(k, value, NULL, &type, (BYTE *)text, &len) != ERROR_SUCCESS)
            break;
        text[len / sizeof text[0]] = 0;
        fake_utf8(text, line, sizeof line);
        int w = snprintf(out + used, cap > used ? cap - used : 0, "%s\n", line);
        if (w > 0 && used + (size_t)w < cap)
            used += (size_t)w;
        count++;
    }
    RegCloseKey(k);
    return count;
}

bool perch_fake_etw_wait_replay(const char *name, uint32_t timeout_ms)
{
    DWORD start = GetTickCount();
    perch_fake_etw_session_info info;
    for (;;) {
        if (perch_fake_etw_session(name, &info) && info.replay_done)
            return true;
        if (GetTickCount() - start >= timeout_ms)
            return false;
        Sleep(10);
    }
}

int perch_fake_etw_write_synth(const char *path, uint64_t seed, uint64_t bytes)
{
    perch_synth_options opt;
    perch_output out;
    perch_synth_options_init(&opt);
    opt.seed = seed;
    opt.target_bytes = bytes;
    int err = perch_output_open_file(&out, path);
    if (err < 0)
        return err;
    err = perch_synth_write(&opt, &out, NULL);
    int cerr = out.close(out.ctx);
    return err ? err : cerr;
}
