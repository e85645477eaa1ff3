/*
 * The client side of \\.\pipe\perch (perch_pipe_connect in src/core/proto/client.h): open
 * the pipe (waiting while every instance is busy), and a perch_proto_transport over the
 * handle whose reads and writes are overlapped with a timeout, so a server that stops
 * answering never hangs the CLI. The client lets the server identify it (to check whether it
 * is an administrator) but not impersonate it, and talks only to a server whose pipe is owned
 * by Administrators or LocalSystem (perch__pipe_server_check), as perchd's is.
 */
#include <windows.h>

#include <stdio.h>
#include <string.h>

#include "perch/error.h"
#include "perch/win_error.h"
#include "pipe_internal.h"
#include "pipe_server.h"
#include "proto/client.h"
#include "scm.h"
#include "util/mem.h"
#include "wstr.h"

typedef struct pipe_conn {
    HANDLE h;
    OVERLAPPED ov;
} pipe_conn;

/* Waits for the overlapped operation started on conn; cancels it after timeout_ms. */
static int finish_io(pipe_conn *p, BOOL started, DWORD *n, uint32_t timeout_ms)
{
    DWORD e = started ? ERROR_SUCCESS : GetLastError();
    if (!started && e != ERROR_IO_PENDING)
        return e == ERROR_BROKEN_PIPE || e == ERROR_NO_DATA || e == ERROR_PIPE_NOT_CONNECTED
                   ? PERCH_EPIPE
                   : perch_win_error(e);
    if (WaitForSingleObject(p->ov.hEvent, timeout_ms == UINT32_MAX ? INFINITE : timeout_ms) ==
        WAIT_TIMEOUT) {
        CancelIoEx(p->h, &p->ov);
        GetOverlappedResult(p->h, &p->ov, n, TRUE);
        return PERCH_ETIMEDOUT;
    }
    if (!GetOverlappedResult(p->h, &p->ov, n, FALSE)) {
        e = GetLastError();
        return e == ERROR_BROKEN_PIPE || e == ERROR_PIPE_NOT_CONNECTED ? PERCH_EPIPE
                                                                       : perch_win_error(e);
    }
    return 0;
}

static int conn_write(void *ctx, const void *data, size_t len, uint32_t timeout_ms)
{
    pipe_conn *p = ctx;
    const uint8_t *b = data;
    while (len > 0) {
        DWORD n = 0, want = len > (1u << 20) ? (1u << 20) : (DWORD)len;
        ResetEvent(p->ov.hEvent);
        int err = finish_io(p, WriteFile(p->h, b, want, NULL, &p->ov), &n, timeout_ms);
        if (err < 0)
            return err;
        if (n == 0)
            return PERCH_EPIPE;
        b += n;
        len -= n;
    }
    return 0;
}

static int conn_read(void *ctx, void *buf, size_t cap, size_t *got, uint32_t timeout_ms)
{
    pipe_conn *p = ctx;
    DWORD n = 0, want = cap > (1u << 20) ? (1u << 20) : (DWORD)cap;
    *got = 0;
    ResetEvent(p->ov.hEvent);
    int err = finish_io(p, ReadFile(p->h, buf, want, NULL, &p->ov), &n, timeout_ms);
    if (err < 0)
        return err;
    if (n == 0)
        return PERCH_EPIPE;
    *got = n;
    return 0;
}

static void conn_close(void *ctx)
{
    pipe_conn *p = ctx;
    CloseHandle(p->h);
    CloseHandle(p->ov.hEvent);
    perch__free(p);
}

static HANDLE open_pipe(const wchar_t *name, uint32_t timeout_ms, int *err)
{
    ULONGLONG deadline = GetTickCount64() + timeout_ms;
    for (;;) {
        HANDLE h = CreateFileW(
            name, PERCH_PIPE_CLIENT_ACCESS, 0, NULL, OPEN_EXISTING,
            FILE_FLAG_OVERLAPPED | SECURITY_SQOS_PRESENT | SECURITY_IDENTIFICATION, NULL);
        DWORD e = GetLastError();
        ULONGLONG now = GetTickCount64();
        if (h != INVALID_HANDLE_VALUE)
            return h;
        if (e != ERROR_PIPE_BUSY || now >= deadline) {
            *err = e == ERROR_PIPE_BUSY ? PERCH_EBUSY : perch_win_error(e);
            return INVALID_HANDLE_VALUE;
        }
        if (!WaitNamedPipeW(name, (DWORD)(deadline - now)) &&
            GetLastError() == ERROR_FILE_NOT_FOUND) {
            *err = PERCH_ENOENT;
            return INVALID_HANDLE_VALUE;
        }
    }
}

int perch_pipe_connect(const char *name, uint32_t timeout_ms, perch_proto_transport *t, char *why,
                       size_t why_len)
{
    wchar_t *w = perch__utf8_to_wide(name ? name : PERCH_PIPE_NAME);
    pipe_conn *p = perch__calloc(1, sizeof *p);
    int err = w == NULL ? PERCH_EINVAL : p == NULL ? PERCH_ENOMEM : 0;
    HANDLE h = INVALID_HANDLE_VALUE;
    if (err == 0 && (p->ov.hEvent = CreateEventW(NULL, TRUE, FALSE, NULL)) == NULL)
        err = perch_win_last_error();
    if (err == 0)
        h = open_pipe(w, timeout_ms, &err);
    perch__free(w);
    if (err == 0 && (err = perch__pipe_server_check(h, why, why_len)) < 0) {
        CloseHandle(h); /* before a byte is written: the impostor learns nothing */
        CloseHandle(p->ov.hEvent);
        perch__free(p);
        return err;
    }
    if (err < 0) {
        if (why != NULL && why_len > 0)
            snprintf(why, why_len, "%s",
                     err == PERCH_ENOENT   ? "nothing serves the pipe"
                     : err == PERCH_EACCES ? "the pipe refused this user"
                     : err == PERCH_EBUSY  ? "every pipe instance stayed busy"
                                           : perch_strerror(err));
        if (p != NULL && p->ov.hEvent != NULL)
            CloseHandle(p->ov.hEvent);
        perch__free(p);
        return err;
    }
    p->h = h;
    t->ctx = p;
    t->write = conn_write;
    t->read = conn_read;
    t->close = conn_close;
    return 0;
}

int perch_pipe_service_state(bool *installed, bool *running)
{
    perch_scm_info info;
    int err = perch_scm_query(&info);
    if (err < 0)
        return err;
    *installed = info.installed;
    *running = info.installed && info.state == SERVICE_RUNNING;
    return 0;
}
