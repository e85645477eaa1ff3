/*
 * The reader thread of the pipelined import (include/perch/pipeline.h, perch_etl_feeder): one
 * thread runs perch_etl_next (file reads, XPRESS, the per-CPU merge) and copies each record
 * into a perch_event_queue with the blocking push, so the consumer sees exactly the records,
 * in exactly the order, the reader yields (for the model, some without their bytes: below).
 * The ring is sized from the file's largest buffer so that no record is ever refused as
 * oversized: the one-thread and two-thread paths cannot differ on a large record. The queue
 * is in batched mode (queue_batch.h): the two threads exchange positions once per
 * BATCH_BYTES, not once per record.
 *
 * Started with a sink relay (perch__etl_feeder_start_model, the import's capture writer), the
 * same thread also plays the relay's batches (relay_play.h): between two records when the
 * relay wants it and the model is behind (more than half the ring waits for it, so this thread
 * has time the model's has not; when this thread is the slower one it leaves the batches to
 * the model's, which plays them while it waits for records), and whenever the queue is full,
 * sleeping only when it has neither room nor a batch; after the end of the file it plays the relay
 * until perch_etl_feeder_finish. So the import runs two busy threads on two cores (this one and the
 * model's), not three. The first of those (playing while the model is merely behind) is only
 * for a trace whose buffers are mostly uncompressed (perch__etl_feeder_volunteers).
 *
 * The thread that starts a feeder consumes its queue, so the two are the pipeline's two busy
 * threads: on a process with two CPUs they get one each (perch_thread_split_cpus), and the
 * starter has its CPUs back when perch_etl_feeder_finish has joined this thread.
 *
 * For the pipeline's model a record no decoder knows (perch_model_reads_payload) is only
 * counted, so this thread hands over a run of them as one queue record of their timestamps,
 * groups and opcodes (pipeline/counted.h), never their bytes. On the real x64 trace such records
 * are 42 % of the records and carry 80 % of the payload bytes.
 */
#include <stdatomic.h>
#include <string.h>

#include "perch/error.h"
#include "perch/model.h"
#include "perch/pipeline.h"
#include "perch/thread.h"
#include "pipeline/counted.h"
#include "pipeline/feeder_relay.h"
#include "pipeline/queue_batch.h"
#include "pipeline/relay_play.h"
#include "util/mem.h"

/* A queue record adds at most this much to the record's own bytes (16-byte header, fixed
 * fields, 8 PMC values; see event_queue.c). */
#define RECORD_OVERHEAD 256u
#define MAX_FEEDER_RING (64u << 20)
/* Publish and release every this many bytes (about 500 records of the synthetic traces). */
#define BATCH_BYTES (64u << 10)

struct perch_etl_feeder {
    perch_etl_reader *r;
    perch_event_queue *q;
    perch_thread *thread;
    perch_sink_relay *relay; /* NULL: reading only */
    uint64_t limit;
    _Atomic uint64_t position;
    bool track;  /* position is wanted (progress) */
    bool shed;   /* the queue feeds a model: records it only counts go in runs */
    bool behind; /* perch__event_queue_behind(q), looked at every BEHIND_EVERY records */
    bool volunteer; /* plays the relay while the model is behind, not only when the queue is full */
    perch__counted *run; /* shed: records the model only counts, not handed over yet */
    uint32_t run_len;
    perch_cpu_split *cpus; /* this thread and the one that started it, one CPU each */
};

/* How often the reader looks whether the model is behind: the answer can change only when a
 * batch is published (about 500 records of the synthetic traces), so not at every record. */
#define BEHIND_EVERY 64u

/* The next record, within the limit; notes the furthest buffer for progress (when tracked).
 * *counted: a record the model only counts (shed), which joins the run. */
static int next_record(struct perch_etl_feeder *f, uint64_t n, perch_event *ev, uint64_t *furthest,
                       bool *counted)
{
    if (f->limit != 0 && n >= f->limit)
        return PERCH_EOF; /* the limit ends the reading as the end of the file does */
    int err = perch_etl_next(f->r, ev);
    if (err < 0)
        return err;
    *counted = f->shed && !perch_model_reads_payload(ev);
    if (n % BEHIND_EVERY == 0)
        f->behind = perch__event_queue_behind(f->q);
    if (!f->track)
        return 0;
    uint64_t at = perch_etl_last_position(f->r).buffer;
    if (at > *furthest) { /* buffers of different CPUs interleave in the file */
        *furthest = at;
        atomic_store_explicit(&f->position, at, memory_order_relaxed);
    }
    return 0;
}

static int push_or_play(struct perch_etl_feeder *f, const perch_event *ev);

/* Into the queue: with a relay, playing it while the queue is full. */
static int push(struct perch_etl_feeder *f, const perch_event *ev)
{
    return f->relay != NULL ? push_or_play(f, ev) : perch_event_queue_push(f->q, ev);
}

/* Hands the run of counted records over as one queue record (pipeline/counted.h). */
static int push_run(struct perch_etl_feeder *f)
{
    perch_event ev;
    if (f->run_len == 0)
        return 0;
    memset(&ev, 0, sizeof ev);
    ev.flags = PERCH__EVENT_COUNTED;
    ev.pointer_size = 8;
    ev.payload = (const uint8_t *)f->run;
    ev.payload_len = f->run_len * (uint32_t)sizeof *f->run;
    f->run_len = 0;
    return push(f, &ev);
}

/* A record read goes to the queue, after the run before it; a counted one joins the run. */
static int hand_over(struct perch_etl_feeder *f, const perch_event *ev, bool counted)
{
    if (counted) {
        f->run[f->run_len++] = (perch__counted){ev->timestamp, ev->group, ev->opcode};
        return f->run_len == PERCH__COUNTED_MAX ? push_run(f) : 0;
    }
    int err = push_run(f);
    return err < 0 ? err : push(f, ev);
}

/* The end of the reading: the run and every record visible, the queue closed with the
 * reader's status. The records read before a read error still reach the model. */
static int end_reading(struct perch_etl_feeder *f, int err)
{
    if (err == PERCH_ESTATE)
        err = PERCH_ECANCELED; /* canceled while this reader was not waiting */
    if (err == PERCH_EOF)
        err = 0; /* the end of the file or the limit */
    if (err != PERCH_ECANCELED) {
        int e = push_run(f);
        if (e < 0)
            err = e == PERCH_ESTATE ? PERCH_ECANCELED : e;
    }
    perch__event_queue_flush(f->q);
    perch_event_queue_close(f->q, err);
    return err;
}

static int feed(void *arg)
{
    struct perch_etl_feeder *f = arg;
    perch_event ev;
    uint64_t n = 0, furthest = 0;
    bool counted;
    int err;
    while ((err = next_record(f, n, &ev, &furthest, &counted)) == 0) {
        if ((err = hand_over(f, &ev, counted)) < 0)
            break;
        n++;
    }
    return end_reading(f, err);
}

struct room {
    perch_event_queue *q;
    const perch_event *ev;
};

static bool has_room(void *ctx)
{
    const struct room *rm = ctx;
    return perch__event_queue_room_or_arm(rm->q, rm->ev);
}

/* Pushes ev, playing the relay while the queue is full. 0 or the push's error. */
static int push_or_play(struct perch_etl_feeder *f, const perch_event *ev)
{
    struct room rm = {f->q, ev};
    int err;
    while ((err = perch__event_queue_push_nowait(f->q, ev)) == PERCH_EBUSY) {
        bool more = perch__sink_relay_wait(f->relay, has_room, &rm);
        perch__event_queue_disarm(f->q);
        perch__sink_relay_play(f->relay);
        if (!more)
            return PERCH_ECANCELED; /* stopped (only after a cancel, which push sees first) */
    }
    return err;
}

static int feed_and_play(void *arg)
{
    struct perch_etl_feeder *f = arg;
    perch_event ev;
    uint64_t n = 0, furthest = 0;
    int err;
    bool counted;
    while ((err = next_record(f, n, &ev, &furthest, &counted)) == 0) {
        if (f->volunteer && f->behind && perch__sink_relay_wanted(f->relay)) {
            perch__event_queue_flush(f->q); /* the model must not wait while the writer runs */
            perch__sink_relay_play(f->relay);
        }
        if ((err = hand_over(f, &ev, counted)) < 0)
            break;
        n++;
    }
    err = end_reading(f, err);
    while (perch__sink_relay_wait(f->relay, NULL, NULL))
        perch__sink_relay_play(f->relay);
    return err;
}

bool perch__etl_feeder_volunteers(const perch_etl_stats *st)
{
    return st->compressed_buffers <= st->buffers / 2;
}

static void wake_player(void *ctx)
{
    perch__sink_relay_wake(ctx);
}

/* The ring: at least four records of the largest size fit (a record may take a quarter). */
static int ring_size(const perch_etl_reader *r, size_t want, size_t *out)
{
    uint64_t need = 4u * (perch_etl_max_record_len(r) + RECORD_OVERHEAD);
    uint64_t size = want != 0 ? want : PERCH_PIPELINE_QUEUE_BYTES;
    if (size < need)
        size = need;
    if (size > MAX_FEEDER_RING)
        return PERCH_ELIMIT;
    *out = (size_t)size;
    return 0;
}

static int start(perch_etl_reader *r, size_t queue_bytes, uint64_t limit, perch_sink_relay *relay,
                 bool track, bool shed, perch_etl_feeder **out)
{
    struct perch_etl_feeder *f;
    size_t ring = 0;
    int err;
    if (r == NULL || out == NULL)
        return PERCH_EINVAL;
    err = ring_size(r, queue_bytes, &ring);
    if (err < 0)
        return err;
    f = perch__calloc(1, sizeof *f);
    if (f == NULL)
        return PERCH_ENOMEM;
    f->r = r;
    f->limit = limit;
    f->relay = relay;
    f->track = track;
    f->shed = shed;
    if (shed && (f->run = perch__calloc(PERCH__COUNTED_MAX, sizeof *f->run)) == NULL) {
        perch__free(f);
        return PERCH_ENOMEM;
    }
    f->volunteer = perch__etl_feeder_volunteers(perch_etl_stats_of(r));
    err = perch_event_queue_create(ring, &f->q);
    if (err == 0)
        perch__event_queue_batch(f->q, BATCH_BYTES, BATCH_BYTES);
    if (err == 0 && relay != NULL)
        perch__event_queue_space_hook(f->q, wake_player, relay);
    if (err == 0)
        err = perch_thread_start(relay ? feed_and_play : feed, f, "perch-reader", &f->thread);
    if (err == 0)
        f->cpus = perch_thread_split_cpus(f->thread); /* the starter consumes: both are busy */
    if (err < 0) {
        perch_event_queue_destroy(f->q);
        perch__free(f->run);
        perch__free(f);
        return err;
    }
    *out = f;
    return 0;
}

int perch_etl_feeder_start(perch_etl_reader *r, size_t queue_bytes, uint64_t limit,
                           perch_etl_feeder **out)
{
    return start(r, queue_bytes, limit, NULL, true, false, out);
}

int perch__etl_feeder_start_model(perch_etl_reader *r, size_t queue_bytes, perch_sink_relay *relay,
                                  bool track, perch_etl_feeder **out)
{
    return start(r, queue_bytes, 0, relay, track, true, out);
}

perch_event_queue *perch_etl_feeder_queue(perch_etl_feeder *f)
{
    return f->q;
}

uint64_t perch_etl_feeder_position(const perch_etl_feeder *f)
{
    return atomic_load_explicit(&f->position, memory_order_relaxed);
}

int perch_etl_feeder_finish(perch_etl_feeder *f)
{
    int result = 0, err;
    if (f == NULL)
        return 0;
    perch_event_queue_cancel(f->q); /* no effect on a reader that already closed */
    if (f->relay != NULL)
        perch__sink_relay_stop_player(f->relay); /* after every batch handed so far */
    err = perch_thread_join(f->thread, &result);
    perch_cpu_split_end(f->cpus);
    perch_event_queue_destroy(f->q);
    perch__free(f->run);
    perch__free(f);
    return err < 0 ? err : result;
}
