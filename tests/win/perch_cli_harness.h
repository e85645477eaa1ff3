/*
 * Running the perch command line from a Windows test: perch.exe (its path in PERCH_CLI, set by
 * ctest) with a command-line tail, its stdout and stderr captured through files, its exit
 * status and pid kept, and the checks the perchd tests make of it (the exit status, a count
 * in its output). It inherits this process's environment (PERCH_PIPE). Header-only.
 */
#ifndef PERCH_TEST_PERCH_CLI_HARNESS_H
#define PERCH_TEST_PERCH_CLI_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <windows.h>

#include "win_spawn.h"

typedef struct perch_cli_result {
    DWORD code, pid;
    char out[65536], err[8192];
} perch_cli_result;

static inline void perch_cli_slurp(const char *path, char *buf, size_t cap)
{
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buf, 1, cap - 1, f) : 0;
    buf[n] = '\0';
    if (f)
        fclose(f);
}

/* Runs perch.exe (PERCH_CLI) with args (a command-line tail), capturing stdout and stderr. */
static inline void perch_cli_run(const char *args, perch_cli_result *r)
{
    const char *cli = getenv("PERCH_CLI");
    char cmd[2048], out_path[MAX_PATH], err_path[MAX_PATH], tmp[MAX_PATH];
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};
    STARTUPINFOA si;
    PROCESS_INFORMATION pi;
    assert_non_null(cli);
    GetTempPathA(sizeof tmp, tmp);
    snprintf(out_path, sizeof out_path, "%sperch-cli-%lu.out", tmp, GetCurrentProcessId());
    snprintf(err_path, sizeof err_path, "%sperch-cli-%lu.err", tmp, GetCurrentProcessId());
    HANDLE out = CreateFileA(out_path, GENERIC_WRITE, FILE_SHARE_READ, &sa, CREATE_ALWAYS, 0, NULL);
    HANDLE err = CreateFileA(err_path, GENERIC_WRITE, FILE_SHARE_READ, &sa, CREATE_ALWAYS, 0, NULL);
    memset(&si, 0, sizeof si);
    si.cb = sizeof si;
    si.dwFlags = STARTF_USESTDHANDLES;
    si.hStdOutput = out;
    si.hStdError = err;
    si.hStdInput = GetStdHandle(STD_INPUT_HANDLE);
    snprintf(cmd, sizeof cmd, "\"%s\" %s", cli, args);
    assert_true(win_spawn(cmd, TRUE, 0, &si, &pi));
    assert_int_equal(WaitForSingleObject(pi.hProcess, 60000), WAIT_OBJECT_0);
    GetExitCodeProcess(pi.hProcess, &r->code);
    r->pid = pi.dwProcessId;
    CloseHandle(pi.hProcess);
    CloseHandle(pi.hThread);
    CloseHandle(out);
    CloseHandle(err);
    perch_cli_slurp(out_path, r->out, sizeof r->out);
    perch_cli_slurp(err_path, r->err, sizeof r->err);
    DeleteFileA(out_path);
    DeleteFileA(err_path);
}

/* perch_cli_run, failing the test (with perch's output) unless perch exits with want. */
static inline void perch_cli_expect(const char *args, DWORD want, perch_cli_result *r)
{
    perch_cli_run(args, r);
    if (r->code != want)
        fail_msg("perch %s: exit %lu, not %lu\n%s%s", args, (unsigned long)r->code,
                 (unsigned long)want, r->out, r->err);
}

/* The number after key (its first occurrence) in text; fails the test when key is not there. */
static inline unsigned long long perch_cli_count_of(const char *text, const char *key)
{
    const char *p = strstr(text, key);
    if (p == NULL)
        fail_msg("no %s in %s", key, text);
    return strtoull(p + strlen(key), NULL, 10);
}

#endif
