/*
 * The daemon's kernel session, consumer and live engine (src/win/daemon.h). This build has no
 * ETW session code yet (src/win/etw.h lands from the etw branch): the daemon starts without a
 * session and says so.
 */
#include <windows.h>
#include <stdio.h>

#include "daemon_internal.h"
#include "log.h"

void perch__daemon_session_start(perch_daemon *d)
{
    if (d->priv.why[0])
        return;
    perch__daemon_set_summary(d, true,
                              "No kernel data is recorded: this build of perchd has no ETW "
                              "session code yet.");
    perch_log(PERCH_LOG_WARNING, "Degraded: %s", d->summary);
}

int perch__daemon_session_stop(perch_daemon *d)
{
    (void)d;
    return 0;
}
