/*
 * The supervisor (src/win/etw.h): the session and its consumer, polled by the engine about
 * once a second. A poll reads the losses (ControlTrace QUERY), notices an outside stop (the
 * query finds no session, or ProcessTrace returned), and restarts: at once on the poll that
 * noticed, then with a backoff of 1 s doubling to 60 s. When a restart succeeds the poll
 * reports the gap (monotonic duration and its bounds in QPC ticks, the trace clock) so the
 * engine can put it in the ledger. Losses and consumer counters are summed over every session
 * and consumer started, because each new session counts from zero.
 */
#include <stdio.h>
#include <string.h>

#include "etw_internal.h"
#include "perch/error.h"
#include "perch/platform.h"
#include "util/mem.h"

#define END_WAIT_MS 500u /* how long a poll waits for the consumer of a vanished session */

struct perch_etw_live {
    perch_etw_session *s;
    perch_etw_consumer *c;
    perch_event_queue *q;
    uint8_t state;
    perch_etw_losses base, last;    /* ended sessions; the current one's last query */
    perch_etw_consumer_stats cbase; /* ended consumers */
    uint32_t restarts, backoff_ms;
    uint64_t down_ns, down_raw, next_try_ns;
    bool leaked; /* a consumer was left running: no other may push into q */
};

static uint64_t qpc_now(void)
{
    LARGE_INTEGER q;
    QueryPerformanceCounter(&q);
    return (uint64_t)q.QuadPart;
}

static void add_losses(perch_etw_losses *sum, const perch_etw_losses *l)
{
    sum->events_lost += l->events_lost;
    sum->realtime_buffers_lost += l->realtime_buffers_lost;
    sum->log_buffers_lost += l->log_buffers_lost;
}

static void add_stats(perch_etw_consumer_stats *sum, const perch_etw_consumer_stats *st)
{
    sum->events += st->events;
    sum->pushed += st->pushed;
    sum->queue_full += st->queue_full;
    sum->oversized += st->oversized;
    sum->closed += st->closed;
    sum->bad_records += st->bad_records;
    sum->pmc_malformed += st->pmc_malformed;
    if (st->last_timestamp != 0)
        sum->last_timestamp = st->last_timestamp;
}

/* Session and consumer up, or a sentence in why and everything stopped again. */
static int bring_up(perch_etw_live *l, char *why, size_t n)
{
    char cwhy[300];
    int err = perch_etw_consumer_start(l->s, l->q, &l->c, cwhy, sizeof cwhy);
    if (err < 0) {
        snprintf(why, n,
                 "the session \"%s\" started but the real-time consumer could not open it: %s",
                 perch_etw_session_name(l->s), cwhy);
        perch_etw_session_stop(l->s);
        l->c = NULL;
    }
    return err;
}

int perch_etw_live_start(const perch_etw_config *cfg, perch_event_queue *q, perch_etw_live **out,
                         perch_etw_start_report *rep)
{
    perch_etw_live *l;
    perch_etw_start_report local;
    int err;
    if (rep == NULL)
        rep = &local;
    memset(rep, 0, sizeof *rep);
    if (q == NULL || out == NULL)
        return PERCH_EINVAL;
    if ((l = perch__calloc(1, sizeof *l)) == NULL)
        return PERCH_ENOMEM;
    l->q = q;
    err = perch_etw_session_start(cfg, &l->s, rep);
    if (err == 0 && (err = bring_up(l, rep->why, sizeof rep->why)) < 0)
        rep->kind = PERCH_ETW_NONE;
    if (err < 0) {
        perch_etw_session_destroy(l->s);
        perch__free(l);
        return err;
    }
    l->state = PERCH_ETW_LIVE_RUNNING;
    *out = l;
    return 0;
}

/* When the session stopped delivering, in the caller's clock: the consumer's end (read on
 * the real monotonic clock, so converted by how long ago it was), or now when it has not
 * ended within a moment of the query finding the session gone. */
static uint64_t end_time(perch_etw_live *l, uint64_t now_ns, bool consumer_ended, uint64_t *raw)
{
    uint64_t ns = 0;
    *raw = qpc_now();
    if (!consumer_ended && perch_etw_consumer_wait(l->c, END_WAIT_MS, NULL) == 0)
        consumer_ended = true;
    if (!consumer_ended || !perch__etw_consumer_ended(l->c, &ns, raw))
        return now_ns;
    uint64_t ago = perch_monotonic_ns() - ns;
    return ago < now_ns ? now_ns - ago : 0;
}

/* The session ended (or its consumer did): fold the counters, stop what is left. */
static void go_down(perch_etw_live *l, uint64_t now_ns, bool consumer_ended, int status,
                    perch_etw_poll *out)
{
    perch_etw_consumer_stats st;
    uint64_t raw;
    l->down_ns = end_time(l, now_ns, consumer_ended, &raw);
    l->down_raw = raw;
    perch_etw_consumer_get_stats(l->c, &st);
    add_stats(&l->cbase, &st);
    add_losses(&l->base, &l->last);
    memset(&l->last, 0, sizeof l->last);
    bool leaked = perch_etw_consumer_destroy(l->c);
    l->leaked = l->leaked || leaked;
    l->c = NULL;
    perch_etw_session_stop(l->s); /* only if still running and Perch's */
    l->state = PERCH_ETW_LIVE_DOWN;
    l->next_try_ns = now_ns;
    l->backoff_ms = PERCH_ETW_BACKOFF_FIRST_MS;
    out->went_down = true;
    snprintf(out->message, sizeof out->message,
             consumer_ended ? "the session \"%s\" ended: ProcessTrace returned (%s); it was "
                              "stopped from outside or its consumer failed"
                            : "the session \"%s\" was stopped from outside (%s)",
             perch_etw_session_name(l->s),
             consumer_ended ? (status ? perch_strerror(status) : "no error")
                            : "ControlTrace found no such session");
    if (leaked) {
        size_t len = strlen(out->message);
        snprintf(out->message + len, sizeof out->message - len,
                 "; its consumer did not return from ProcessTrace, so no new session starts "
                 "until perchd restarts");
    }
}

static void try_restart(perch_etw_live *l, uint64_t now_ns, perch_etw_poll *out)
{
    char why[400];
    size_t len = strlen(out->message);
    int err = perch_etw_session_restart(l->s);
    if (err == 0)
        err = bring_up(l, why, sizeof why);
    else
        snprintf(why, sizeof why, "%s", perch_etw_session_report(l->s)->why);
    if (err < 0) {
        out->next_retry_ms = l->backoff_ms;
        l->next_try_ns = now_ns + (uint64_t)l->backoff_ms * 1000000u;
        l->backoff_ms = l->backoff_ms * 2 > PERCH_ETW_BACKOFF_MAX_MS ? PERCH_ETW_BACKOFF_MAX_MS
                                                                     : l->backoff_ms * 2;
        snprintf(out->message + len, sizeof out->message - len,
                 "%srestarting failed (%s); next attempt in %u ms", len ? "; " : "", why,
                 (unsigned)out->next_retry_ms);
        return;
    }
    l->state = PERCH_ETW_LIVE_RUNNING;
    l->restarts++;
    out->restarted = true;
    out->gap_ns = now_ns - l->down_ns;
    out->gap_start_raw = l->down_raw;
    out->gap_end_raw = qpc_now();
    snprintf(out->message + len, sizeof out->message - len,
             "%sthe session was restarted after a gap of %llu ms", len ? "; " : "",
             (unsigned long long)(out->gap_ns / 1000000u));
}

static void check_running(perch_etw_live *l, uint64_t now_ns, perch_etw_poll *out)
{
    perch_etw_losses cur;
    int status = 0;
    int qerr = perch_etw_session_query(l->s, &cur);
    if (qerr == 0)
        l->last = cur;
    if (perch_etw_consumer_wait(l->c, 0, &status) == 0)
        go_down(l, now_ns, true, status, out);
    else if (qerr == PERCH_ENOENT)
        go_down(l, now_ns, false, 0, out);
}

int perch_etw_live_poll(perch_etw_live *l, uint64_t now_ns, perch_etw_poll *out)
{
    if (l == NULL || out == NULL)
        return PERCH_EINVAL;
    memset(out, 0, sizeof *out);
    if (l->state == PERCH_ETW_LIVE_RUNNING)
        check_running(l, now_ns, out);
    if (l->state == PERCH_ETW_LIVE_DOWN && !l->leaked && now_ns >= l->next_try_ns)
        try_restart(l, now_ns, out); /* never onto the queue a left consumer may still fill */
    out->state = l->state;
    out->restarts = l->restarts;
    out->no_restart = l->leaked;
    if (l->state == PERCH_ETW_LIVE_DOWN && !l->leaked && out->next_retry_ms == 0)
        out->next_retry_ms = (uint32_t)((l->next_try_ns - now_ns) / 1000000u);
    out->losses = l->base;
    add_losses(&out->losses, &l->last);
    out->losses.buffers = l->last.buffers;
    out->losses.free_buffers = l->last.free_buffers;
    out->consumer = l->cbase;
    if (l->c != NULL) {
        perch_etw_consumer_stats st;
        perch_etw_consumer_get_stats(l->c, &st);
        add_stats(&out->consumer, &st);
    }
    return 0;
}

const perch_etw_session *perch_etw_live_session(const perch_etw_live *l)
{
    return l->s;
}

const perch_etw_consumer *perch_etw_live_consumer(const perch_etw_live *l)
{
    return l->c;
}

bool perch_etw_live_destroy(perch_etw_live *l)
{
    if (l == NULL)
        return false;
    bool leaked = perch_etw_consumer_destroy(l->c) || l->leaked;
    perch_etw_session_destroy(l->s);
    perch__free(l);
    return leaked;
}
