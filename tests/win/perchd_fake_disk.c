/*
 * A disk that fills or hangs on demand, for perchd_fake.exe only (tests/CMakeLists.txt). It
 * defines perch__daemon_create_capture_file in place of src/win/daemon_capture_file.c (see
 * there for why that file is linked only when this one is not): each file of a recording, and
 * each snapshot's, is created as perchd creates it, and its writes first look at two scenario
 * values of the fake ETW (tests/win/etw_fake/etw_fake.h, set with perch_fake_etw_set_string), read
 * at every write so that a test turns them on and off while perchd runs: DiskFull (REG_SZ)  a file
 * name prefix: a write to a file whose name starts with it fails as on a full disk
 * (ERROR_DISK_FULL: "no space left on device"); DiskHang (REG_SZ)  a file name prefix: a write to
 * such a file does not return while the value stays (a hung disk or share); the fake's ledger says
 * "disk hang NAME" when one starts waiting, "disk free NAME" when it goes on and "disk closed
 * NAME" when a file that hung is closed.
 *
 * Once a write has hung, the process's end waits (an atexit handler, which the CRT runs when
 * perchd's main returns, before ExitProcess ends the other threads) until no write hangs, every
 * file that hung is closed and EXIT_SETTLE_MS have passed since the last of those, or
 * EXIT_WAIT_MS at most; the ledger then says "disk exit with W write(s) hung and F file(s) that
 * hung open". Without it a write that comes back just as perchd gives up on its model thread
 * (daemon_drain.c) would race the exit, and a test could not see what that thread does next.
 */
#include <windows.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "daemon_internal.h"
#include "fake_internal.h"
#include "perch/error.h"
#include "perch/io.h"
#include "perch/win_error.h"

#define HANG_POLL_MS   20u
#define EXIT_WAIT_MS   6000u /* the most the exit waits for a write that hung */
#define EXIT_SETTLE_MS 1000u /* after the last write came back or file closed: time to go on */

struct disk_file {
    perch_output real;
    bool hung;      /* one of its writes hung: its close is counted */
    char name[260]; /* the file's name, without its directory */
};

static volatile LONG hung_writes;      /* writes waiting on DiskHang now */
static volatile LONG hung_files;       /* files one of whose writes hung, not closed yet */
static volatile LONG64 last_change_ms; /* GetTickCount64 at the last "disk free" or "closed" */
static INIT_ONCE exit_hook = INIT_ONCE_STATIC_INIT;

/* True when the scenario value names a prefix of the file's name. */
static bool named(const char *scenario, const char *name)
{
    char prefix[260];
    return fake_scenario_string(scenario, prefix, sizeof prefix) &&
           strncmp(name, prefix, strlen(prefix)) == 0;
}

static void note_change(void)
{
    InterlockedExchange64(&last_change_ms, (LONG64)GetTickCount64());
}

/* atexit: holds the process's end while a write that hung has not come back, or its file is
 * not closed, or it came back too recently for the thread that made it to go on (bounded). */
static void wait_for_hung_writes(void)
{
    ULONGLONG t0 = GetTickCount64(), now = t0;
    for (; now - t0 < EXIT_WAIT_MS; Sleep(HANG_POLL_MS), now = GetTickCount64()) {
        bool busy = InterlockedOr(&hung_writes, 0) > 0 || InterlockedOr(&hung_files, 0) > 0;
        if (!busy && now - (ULONGLONG)InterlockedOr64(&last_change_ms, 0) >= EXIT_SETTLE_MS)
            break;
    }
    fake_ledger("disk exit with %ld write(s) hung and %ld file(s) that hung open, after %llu ms",
                InterlockedOr(&hung_writes, 0), InterlockedOr(&hung_files, 0),
                (unsigned long long)(now - t0));
}

static BOOL CALLBACK hook_exit(PINIT_ONCE once, PVOID param, PVOID *ctx)
{
    (void)once;
    (void)param;
    (void)ctx;
    if (atexit(wait_for_hung_writes) != 0)
        fake_ledger("disk exit hook refused");
    return TRUE;
}

/* The write waits while DiskHang names its file. */
static void hang(struct disk_file *f)
{
    InitOnceExecuteOnce(&exit_hook, hook_exit, NULL, NULL);
    InterlockedIncrement(&hung_writes);
    if (!f->hung)
        InterlockedIncrement(&hung_files);
    f->hung = true;
    fake_ledger("disk hang %s", f->name);
    while (named("DiskHang", f->name))
        Sleep(HANG_POLL_MS);
    fake_ledger("disk free %s", f->name);
    note_change();
    InterlockedDecrement(&hung_writes);
}

static int disk_write(void *ctx, const void *buf, size_t len)
{
    struct disk_file *f = ctx;
    if (named("DiskFull", f->name))
        return perch_win_error(ERROR_DISK_FULL);
    if (named("DiskHang", f->name))
        hang(f);
    return f->real.write(f->real.ctx, buf, len);
}

static int disk_sync(void *ctx)
{
    struct disk_file *f = ctx;
    return f->real.sync != NULL ? f->real.sync(f->real.ctx) : 0;
}

static int disk_close(void *ctx)
{
    struct disk_file *f = ctx;
    int err = f->real.close(f->real.ctx);
    if (f->hung) {
        fake_ledger("disk closed %s", f->name);
        note_change();
        InterlockedDecrement(&hung_files);
    }
    free(f);
    return err;
}

int perch__daemon_create_capture_file(perch_output *out, const char *path)
{
    struct disk_file *f = calloc(1, sizeof *f);
    if (f == NULL)
        return PERCH_ENOMEM;
    int err = perch_output_create_file(&f->real, path);
    if (err < 0) {
        free(f);
        return err;
    }
    const char *base = path;
    for (const char *p = path; *p; p++)
        if (*p == '\\' || *p == '/')
            base = p + 1;
    strncpy(f->name, base, sizeof f->name - 1);
    out->write = disk_write;
    out->sync = disk_sync;
    out->close = disk_close;
    out->ctx = f;
    return 0;
}
