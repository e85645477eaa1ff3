/*
 * The console echo of perchd's log (src/win/log_echo.h): a bounded byte queue of whole lines
 * and one thread that writes it out. The thread takes everything queued at once, with the
 * count of lines dropped since its last take, and writes both outside the lock. Once a line
 * is dropped every later one is too, until that take: so the dropped lines were all put after
 * the lines taken with them and before any line put later, and the notice stands exactly
 * where they were.
 *
 * The thread writes with WriteFile on the stream's handle, not through the C library's stream:
 * a thread waiting inside fwrite holds the stream's lock, and the C library's exit flushes every
 * stream under that lock, so a stuck console would keep the process from exiting. Lines end in
 * CR LF, as the C library's text mode wrote them before.
 */
#include <windows.h>
#include <io.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "log_echo.h"

static SRWLOCK mu = SRWLOCK_INIT;
static CONDITION_VARIABLE ready = CONDITION_VARIABLE_INIT; /* lines queued, or stopped */
static CONDITION_VARIABLE ended = CONDITION_VARIABLE_INIT; /* the thread has left */
static char queue[PERCH_LOG_ECHO_QUEUE_BYTES];
static size_t used;
static uint64_t unshown; /* dropped since the thread's last take */
static uint64_t dropped; /* dropped in all */
static HANDLE out;       /* where the thread writes */
static HANDLE direct;    /* no thread could be had: put writes here itself */
static bool accepting;   /* started and not stopped */
static bool alive;       /* the thread has not left its loop */
static HANDLE thread;    /* the thread, until it is joined */

static void write_all(HANDLE to, const char *text, size_t len)
{
    while (len > 0) {
        DWORD n = 0;
        if (!WriteFile(to, text, len > 65536 ? 65536u : (DWORD)len, &n, NULL) || n == 0)
            return; /* a console or pipe that is gone: nothing more to show */
        text += n;
        len -= n;
    }
}

static void write_out(HANDLE to, const char *text, size_t len, uint64_t lost)
{
    char notice[320];
    write_all(to, text, len);
    if (lost > 0) {
        int n = snprintf(notice, sizeof notice,
                         "perchd: warning: %llu log line%s not shown here: this console took no "
                         "output for a while (a selection in its window, or nobody reading it). "
                         "The log file and the event log have %s.\r\n",
                         (unsigned long long)lost, lost == 1 ? " was" : "s were",
                         lost == 1 ? "it" : "them");
        if (n > 0)
            write_all(to, notice, strlen(notice));
    }
}

static DWORD WINAPI echo_main(LPVOID arg)
{
    static char taken[PERCH_LOG_ECHO_QUEUE_BYTES]; /* one echo thread at a time uses it */
    (void)arg;
    AcquireSRWLockExclusive(&mu);
    for (;;) {
        while (used == 0 && unshown == 0 && accepting)
            SleepConditionVariableSRW(&ready, &mu, INFINITE, 0);
        if (used == 0 && unshown == 0)
            break; /* stopped, everything written */
        size_t len = used;
        uint64_t lost = unshown;
        HANDLE to = out;
        memcpy(taken, queue, len);
        used = 0;
        unshown = 0;
        ReleaseSRWLockExclusive(&mu);
        write_out(to, taken, len, lost);
        AcquireSRWLockExclusive(&mu);
    }
    alive = false;
    WakeAllConditionVariable(&ended);
    ReleaseSRWLockExclusive(&mu);
    return 0;
}

void perch__log_echo_start(FILE *stream)
{
    HANDLE left = NULL, to = (HANDLE)_get_osfhandle(_fileno(stream));
    if (to == INVALID_HANDLE_VALUE || to == NULL)
        return; /* a stream without a handle (no console): nothing to show */
    AcquireSRWLockExclusive(&mu);
    out = to;
    direct = NULL;
    accepting = true;
    if (!alive) {
        left = thread; /* a thread left behind that has since ended: joined below */
        alive = true;
        thread = CreateThread(NULL, 0, echo_main, NULL, 0, NULL);
        if (thread == NULL) {
            alive = false;
            direct = to;
        }
    }
    ReleaseSRWLockExclusive(&mu);
    if (left != NULL) {
        WaitForSingleObject(left, INFINITE);
        CloseHandle(left);
    }
}

void perch__log_echo_put(const char *line, size_t len)
{
    HANDLE now = NULL;
    AcquireSRWLockExclusive(&mu);
    if (!accepting) {
        /* stopped: nothing to write to */
    } else if (direct != NULL) {
        now = direct;
    } else if (unshown == 0 && len <= sizeof queue - used) {
        /* after a drop, every line is dropped until the thread takes the queue: a shorter
         * line that still fits would otherwise come out before the notice */
        memcpy(queue + used, line, len);
        used += len;
        WakeConditionVariable(&ready);
    } else {
        unshown++;
        dropped++;
    }
    ReleaseSRWLockExclusive(&mu);
    if (now != NULL)
        write_out(now, line, len, 0);
}

bool perch__log_echo_stop(uint32_t wait_ms)
{
    HANDLE done = NULL;
    ULONGLONG end = GetTickCount64() + wait_ms;
    AcquireSRWLockExclusive(&mu);
    accepting = false;
    direct = NULL;
    WakeAllConditionVariable(&ready);
    while (alive) {
        ULONGLONG now = GetTickCount64();
        if (now >= end)
            break; /* still waiting for the console: left behind */
        SleepConditionVariableSRW(&ended, &mu, (DWORD)(end - now), 0);
    }
    bool gone = !alive;
    if (gone) {
        done = thread;
        thread = NULL;
    }
    ReleaseSRWLockExclusive(&mu);
    if (done != NULL) {
        WaitForSingleObject(done, INFINITE);
        CloseHandle(done);
    }
    return gone;
}

uint64_t perch__log_echo_dropped(void)
{
    AcquireSRWLockShared(&mu);
    uint64_t n = dropped;
    ReleaseSRWLockShared(&mu);
    return n;
}
