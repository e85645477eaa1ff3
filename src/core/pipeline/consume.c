/*
 * The model-thread loop (include/perch/pipeline.h, perch_pipeline_consume): pop a record,
 * feed it to the model, until the producer closes the queue. Shared by the pipelined import
 * (behind the .etl reader thread) and the live engine (behind the ETW consumer thread). A
 * model or tick error cancels the queue so that the producer never waits on a consumer that
 * has stopped. The tick runs on this thread: progress, periodic ledger updates, status. The
 * import's variant (perch__pipeline_consume_play) plays the capture writer's batches whenever
 * the queue is empty, before it sleeps.
 */
#include <string.h>

#include "perch/error.h"
#include "perch/pipeline.h"
#include "perch/platform.h"
#include "pipeline/counted.h"
#include "pipeline/relay_play.h"

#define TIME_CHECK_RECORDS 256u /* how often a busy loop looks at the clock for tick_ms */

struct ticker {
    const perch_consume_options *o; /* NULL: no tick */
    uint64_t next_count;            /* records count of the next tick by count */
    uint64_t last_ns;               /* time of the last tick */
};

static int tick(struct ticker *t, uint64_t records)
{
    if (t->o->tick_records != 0)
        t->next_count = records + t->o->tick_records;
    if (t->o->tick_ms != 0)
        t->last_ns = perch_monotonic_ns();
    return t->o->tick(t->o->tick_ctx, records);
}

/* After a record: tick when its count has come, or (checked now and then) its time. */
static int maybe_tick(struct ticker *t, uint64_t records)
{
    if (t->o == NULL)
        return 0;
    if (records == t->next_count)
        return tick(t, records);
    if (t->o->tick_ms != 0 && records % TIME_CHECK_RECORDS == 0 &&
        perch_monotonic_ns() - t->last_ns >= (uint64_t)t->o->tick_ms * 1000000u)
        return tick(t, records);
    return 0;
}

/* The next record: with a relay, whenever the queue is empty, plays one of its batches and
 * looks again before waiting for records. */
static int next(perch_event_queue *q, perch_sink_relay *relay, perch_event *ev, uint32_t wait)
{
    if (relay != NULL) {
        int err;
        while ((err = perch_event_queue_pop(q, ev, 0)) == PERCH_ETIMEDOUT) {
            if (!perch__sink_relay_play_one(relay))
                break;
        }
        if (err != PERCH_ETIMEDOUT)
            return err;
    }
    return perch_event_queue_pop(q, ev, wait);
}

/* A run of records the model only counts (pipeline/counted.h), fed one by one as the records
 * they stand for, each counted and ticked for as it would be. */
static int feed_run(perch_model *m, const perch_event *ev, struct ticker *t, uint64_t *n)
{
    size_t count = ev->payload_len / sizeof(perch__counted);
    int err = 0;
    for (size_t i = 0; i < count && err == 0; i++) {
        perch__counted c;
        memcpy(&c, ev->payload + i * sizeof c, sizeof c);
        err = perch__model_feed_counted(m, &c);
        err = err < 0 ? err : maybe_tick(t, ++*n);
    }
    return err;
}

static int consume(perch_event_queue *q, perch_model *m, const perch_consume_options *opts,
                   perch_sink_relay *relay, uint64_t *records)
{
    const perch_consume_options *o =
        opts != NULL && opts->sz >= sizeof *opts && opts->tick != NULL ? opts : NULL;
    struct ticker t = {o, UINT64_MAX, 0};
    uint32_t wait = o != NULL && o->tick_ms != 0 ? o->tick_ms : UINT32_MAX;
    uint64_t n = 0;
    perch_event ev;
    int err;
    if (q == NULL || m == NULL)
        return PERCH_EINVAL;
    if (o != NULL && o->tick_records != 0)
        t.next_count = o->tick_records;
    if (o != NULL && o->tick_ms != 0)
        t.last_ns = perch_monotonic_ns();
    for (;;) {
        err = next(q, relay, &ev, wait);
        if (err == PERCH_EOF || err == PERCH_ECANCELED)
            break; /* the queue ended: nothing to cancel */
        if (err == 0 && (ev.flags & PERCH__EVENT_COUNTED)) {
            err = feed_run(m, &ev, &t, &n);
        } else if (err == 0) {
            err = perch_model_feed(m, &ev);
            err = err < 0 ? err : maybe_tick(&t, ++n);
        } else if (err == PERCH_ETIMEDOUT) {
            /* idle: a tick_ms passed, or perch_event_queue_wake (which may end a wait with no
             * time limit, so there may be no tick to call) */
            err = o != NULL ? tick(&t, n) : 0;
        }
        if (err < 0) {
            perch_event_queue_cancel(q); /* the model or tick stopped: so must the producer */
            break;
        }
    }
    if (err == PERCH_EOF)
        err = 0;
    perch_event_queue_release(q);
    if (records != NULL)
        *records = n;
    return err;
}

int perch_pipeline_consume(perch_event_queue *q, perch_model *m, const perch_consume_options *opts,
                           uint64_t *records)
{
    return consume(q, m, opts, NULL, records);
}

int perch__pipeline_consume_play(perch_event_queue *q, perch_model *m,
                                 const perch_consume_options *opts, perch_sink_relay *r,
                                 uint64_t *records)
{
    return consume(q, m, opts, r, records);
}
