/*
 * How perchd's stop waits for the model thread (perch__daemon_session_stop), and the bounds on
 * that wait. Once the session is stopped and the queue closed, the model thread feeds what is
 * still queued and finishes the model, so every sink gets its end. perchd waits for it in steps
 * of 0.5 s, each a new checkpoint for the service manager, for StopDrainSeconds at most; then
 * the events still queued are dropped (perch_live_drop_queued: counted in every capture's
 * ledger as live.stop_dropped, and logged) and the model finishes with what it took. A model
 * thread that has still not ended DROP_WAIT_MS later is inside a call that does not return (a
 * capture write on a hung disk or share): perchd logs it and stops without it, and nothing that
 * thread may still touch is freed (the engine, its queue and sinks, the recording, the daemon
 * itself), since freeing memory under a running thread could crash it; the process exits next.
 */
#include <windows.h>

#include "daemon_internal.h"
#include "log.h"
#include "perch/error.h"

#define DRAIN_STEP_MS 500u
#define DROP_WAIT_MS  5000u /* after the drop, for a sink's call to return */

static void drop_queued(perch_daemon *d)
{
    perch_live_drop_queued(d->live.engine);
    perch_log(PERCH_LOG_WARNING,
              "The model had not taken every event queued before the stop %u s after it "
              "(StopDrainSeconds): the rest are dropped and counted (ledger live.stop_dropped), "
              "and the captures end with what it took.",
              d->o.config.stop_drain_seconds);
}

int perch__daemon_drain(perch_daemon *d)
{
    uint64_t since = GetTickCount64(), limit = (uint64_t)d->o.config.stop_drain_seconds * 1000u;
    bool dropped = false;
    int err;
    while ((err = perch_live_stop(d->live.engine, DRAIN_STEP_MS)) == PERCH_ETIMEDOUT) {
        uint64_t waited = GetTickCount64() - since;
        if (!dropped && waited >= limit) {
            drop_queued(d);
            dropped = true;
            since = GetTickCount64();
            limit = DROP_WAIT_MS;
        } else if (dropped && waited >= limit) {
            return PERCH_ETIMEDOUT;
        }
        perch__daemon_progress(d, DRAIN_STEP_MS * 4); /* still draining: a new checkpoint */
    }
    return err;
}

void perch__daemon_leave_running(perch_daemon *d)
{
    struct perch_daemon_live *v = &d->live;
    perch_live_stats st;
    perch_event_queue_stats qs;
    perch_live_get_stats(v->engine, &st);
    perch_event_queue_get_stats(v->queue, &qs);
    perch_log(PERCH_LOG_ERROR,
              "The model thread has not ended %u s after the events still queued were dropped: "
              "one of its sinks is inside a call that does not return (a capture write on a "
              "hung disk or share?). perchd stops without it, after %llu events (about %llu "
              "were still queued), and leaves the engine, its queue, its sinks and the "
              "recording allocated, since that thread may still use them.",
              DROP_WAIT_MS / 1000u, (unsigned long long)st.events,
              (unsigned long long)(qs.pushed - qs.popped));
    perch__daemon_record_leave(d);
    AcquireSRWLockExclusive(&d->lock);
    d->last_live = st;
    v->engine = NULL; /* the status reads these under the lock */
    v->recorder = NULL;
    ReleaseSRWLockExclusive(&d->lock);
    v->query = NULL;
    v->symbols = NULL; /* its worker thread goes with the process, as a stuck one does */
    v->queue = NULL;
    v->left_running = true;
}
