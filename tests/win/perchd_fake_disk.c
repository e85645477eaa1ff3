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
 * "disk hang NAME" when one starts waiting and "disk free NAME" when it goes on.
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

#define HANG_POLL_MS 20u

struct disk_file {
    perch_output real;
    char name[260]; /* the file's name, without its directory */
};

/* True when the scenario value names a prefix of the file's name. */
static bool named(const char *scenario, const char *name)
{
    char prefix[260];
    return fake_scenario_string(scenario, prefix, sizeof prefix) &&
           strncmp(name, prefix, strlen(prefix)) == 0;
}

static int disk_write(void *ctx, const void *buf, size_t len)
{
    struct disk_file *f = ctx;
    if (named("DiskFull", f->name))
        return perch_win_error(ERROR_DISK_FULL);
    if (named("DiskHang", f->name)) {
        fake_ledger("disk hang %s", f->name);
        while (named("DiskHang", f->name))
            Sleep(HANG_POLL_MS);
        fake_ledger("disk free %s", f->name);
    }
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
