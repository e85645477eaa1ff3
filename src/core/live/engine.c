/*
 * The live engine (include/perch/live.h): create, attach sinks, start the model thread, stop
 * once the producer closed the queue and everything queued was fed, destroy.
 *
 * The model thread pops records from the queue and feeds the model, whose sink is the fan-out
 * of engine_tee.c. Every tick (and whenever the queue runs dry) it does the housekeeping of
 * engine_books.c: ledger entries for drops, losses and gaps, the rate, the sinks' idle
 * functions, the calls other threads queued. A queued call does not wait for the tick: it
 * wakes an idle model thread, and a busy one looks for calls every 1024 records. After a
 * model error it keeps popping (and discarding) so the producer never sees a stuck queue,
 * until the queue ends. A stop that cannot wait for the whole queue cancels it
 * (perch_live_drop_queued): the thread counts what was left and finishes the model at once.
 */
#include <stdio.h>
#include <string.h>

#include "engine_internal.h"
#include "perch/error.h"
#include "perch/platform.h"
#include "util/mem.h"

#define DEFAULT_RATE_WINDOW_S 5u
#define DEFAULT_TICK_MS       200u
#define CLOCK_EVERY_EVENTS    1024u /* the clock is read once per this many records */
#define STATE_MAX_ENDED       4096u /* ended entities of each type kept for late sinks */

static uint64_t default_now(void *ctx)
{
    (void)ctx;
    return perch_monotonic_ns();
}

uint64_t perch__live_now(perch_live *l)
{
    return l->o.now_ns(l->o.clock_ctx);
}

int perch_live_create(const perch_live_options *o, perch_live **out)
{
    if (o == NULL || o->sz < sizeof *o || o->queue == NULL || out == NULL)
        return PERCH_EINVAL;
    perch_live *l = perch__calloc(1, sizeof *l);
    if (l == NULL)
        return PERCH_ENOMEM;
    l->o = *o;
    l->queue = o->queue;
    if (l->o.rate_window_s == 0)
        l->o.rate_window_s = DEFAULT_RATE_WINDOW_S;
    if (l->o.rate_window_s >= LIVE_RATE_SLOTS)
        l->o.rate_window_s = LIVE_RATE_SLOTS - 1;
    if (l->o.tick_ms == 0)
        l->o.tick_ms = DEFAULT_TICK_MS;
    if (l->o.now_ns == NULL)
        l->o.now_ns = default_now;
    int err = perch_mutex_create(&l->mu);
    err = err ? err : perch_cond_create(&l->cv);
    if (err == 0 && o->attachable)
        err = perch__live_state_create(
            o->max_stack_frames ? o->max_stack_frames : 1u << 22,
            o->max_ended_entities ? o->max_ended_entities : STATE_MAX_ENDED, &l->state);
    if (err < 0) {
        perch_cond_destroy(l->cv);
        perch_mutex_destroy(l->mu);
        perch__free(l);
        return err;
    }
    if (l->state != NULL)
        perch__live_state_sink(l->state, &l->state_sink);
    perch__live_tee_init(l);
    *out = l;
    return 0;
}

int perch_live_add_sink(perch_live *l, const char *name, const perch_sink *sink,
                        perch_live_idle_fn idle)
{
    if (l == NULL || name == NULL || sink == NULL || strlen(name) >= LIVE_NAME_MAX)
        return PERCH_EINVAL;
    if (atomic_load(&l->started))
        return PERCH_ESTATE;
    if (l->slot_count == PERCH_LIVE_MAX_SINKS)
        return PERCH_ELIMIT;
    perch__live_slot_fill(l, &l->slots[l->slot_count], name, sink, idle, sink->ctx, NULL);
    return 0;
}

/* Keeps owned copies of the trace info's strings in l; *copy points at them. */
static int copy_info(perch_live *l, const perch_trace_info *info, perch_trace_info *copy)
{
    *copy = *info;
    l->source = perch__strdup(info->source ? info->source : "live");
    l->session_config = info->session_config ? perch__strdup(info->session_config) : NULL;
    if (l->source == NULL || (info->session_config != NULL && l->session_config == NULL))
        return PERCH_ENOMEM;
    copy->source = l->source;
    copy->session_config = l->session_config;
    return 0;
}

static int create_model(perch_live *l, const perch_trace_info *info)
{
    perch_trace_info copy;
    int err = copy_info(l, info, &copy);
    return err ? err : perch_model_create(&l->tee, &copy, l->o.model, &l->model);
}

/* With a lazy trace info: creates the model now (model thread). */
static void ensure_model(perch_live *l)
{
    perch_trace_info info;
    if (l->model != NULL || atomic_load(&l->error) < 0)
        return;
    memset(&info, 0, sizeof info);
    l->o.trace_info(l->o.info_ctx, &info);
    int err = create_model(l, &info);
    if (err < 0)
        atomic_store(&l->error, err);
}

static void feed(perch_live *l, const perch_event *ev)
{
    if (l->model == NULL)
        ensure_model(l);
    if (atomic_load_explicit(&l->error, memory_order_relaxed) == 0) {
        int err = perch_model_feed(l->model, ev);
        if (err < 0)
            atomic_store(&l->error, err);
    }
    atomic_fetch_add_explicit(&l->events, 1, memory_order_relaxed);
    atomic_store_explicit(&l->last_timestamp, ev->timestamp, memory_order_relaxed);
}

static void housekeeping(perch_live *l, uint64_t now)
{
    int err = perch__live_apply_books(l, now, NULL);
    if (err < 0 && atomic_load(&l->error) == 0)
        atomic_store(&l->error, err);
    perch__live_idle(l);
    perch__live_run_calls(l);
}

/* Pops and feeds until the queue ends (EOF), is cancelled, or destroy asks to quit; returns
 * the pop's last answer (PERCH_EOF, PERCH_ECANCELED, or 0 when asked to quit). */
static int pump(perch_live *l)
{
    uint64_t tick_ns = (uint64_t)l->o.tick_ms * 1000000u, next = perch__live_now(l) + tick_ns;
    uint32_t since_clock = 0;
    perch_event ev;
    int err = 0;
    while (!atomic_load_explicit(&l->quit, memory_order_relaxed)) {
        uint64_t now = 0;
        if (++since_clock >= CLOCK_EVERY_EVENTS) {
            since_clock = 0;
            if ((now = perch__live_now(l)) >= next) {
                housekeeping(l, now);
                next = now + tick_ns;
            } else if (atomic_load_explicit(&l->calls_pending, memory_order_relaxed)) {
                perch__live_run_calls(l); /* a caller waits: not until the tick */
            }
        }
        err = perch_event_queue_pop(l->queue, &ev, 0);
        if (err == PERCH_ETIMEDOUT) {
            perch__live_idle(l);
            now = perch__live_now(l);
            if (now >= next) {
                housekeeping(l, now);
                next = now + tick_ns;
            } else if (atomic_load(&l->calls_pending)) {
                perch__live_run_calls(l); /* perch_live_call woke the wait below */
                now = perch__live_now(l); /* a call may take long: the tick stays on time */
            }
            uint64_t wait = next > now ? (next - now) / 1000000u + 1 : 1;
            err = perch_event_queue_pop(l->queue, &ev, (uint32_t)wait);
            since_clock = CLOCK_EVERY_EVENTS; /* read the clock after a wait */
        }
        if (err == 0)
            feed(l, &ev);
        else if (err != PERCH_ETIMEDOUT)
            break; /* PERCH_EOF, PERCH_ECANCELED */
    }
    perch_event_queue_release(l->queue);
    return err;
}

/* After perch_live_drop_queued: what the queue still held (it is closed and cancelled, so no
 * record comes in or goes out any more) goes into the ledger before the model's finish. */
static void count_dropped(perch_live *l)
{
    perch_event_queue_stats qs;
    perch_event_queue_get_stats(l->queue, &qs);
    uint64_t n = qs.pushed - qs.popped;
    atomic_store(&l->stop_dropped, n);
    if (n > 0 && l->model != NULL && atomic_load(&l->error) == 0) {
        int err = perch_model_ledger_add(l->model, "live.stop_dropped", n);
        if (err < 0)
            atomic_store(&l->error, err);
    }
}

static int model_main(void *arg)
{
    perch_live *l = arg;
    int end = pump(l);
    if (l->model == NULL && !atomic_load(&l->quit))
        ensure_model(l); /* no record came: the sinks still get the info and the end */
    if (end == PERCH_ECANCELED && !atomic_load(&l->quit))
        count_dropped(l);
    housekeeping(l, perch__live_now(l));
    if (atomic_load(&l->error) == 0 && !atomic_load(&l->quit)) {
        int err = perch_model_finish(l->model);
        if (err < 0)
            atomic_store(&l->error, err);
        else
            atomic_store(&l->finished, true);
        atomic_store(&l->samples_waiting, 0); /* the finish gave them to the sinks */
    }
    perch_mutex_lock(l->mu);
    l->ended = true;
    perch_mutex_unlock(l->mu);
    perch__live_run_calls(l); /* those queued before ended */
    perch_mutex_lock(l->mu);
    atomic_store(&l->running, false);
    perch_cond_broadcast(l->cv);
    perch_mutex_unlock(l->mu);
    return atomic_load(&l->error);
}

int perch_live_start(perch_live *l, const perch_trace_info *info)
{
    if (l == NULL || (info == NULL && l->o.trace_info == NULL))
        return PERCH_EINVAL;
    if (atomic_load(&l->started))
        return PERCH_ESTATE;
    int err = l->o.trace_info != NULL ? 0 : create_model(l, info);
    if (err < 0)
        return err;
    l->rate_second = perch__live_now(l) / 1000000000u;
    atomic_store(&l->running, true);
    err = perch_thread_start(model_main, l, "perch-model", &l->thread);
    if (err < 0) {
        atomic_store(&l->running, false);
        perch_model_destroy(l->model);
        l->model = NULL;
        return err;
    }
    atomic_store(&l->started, true);
    return 0;
}

int perch_live_stop(perch_live *l, uint32_t timeout_ms)
{
    if (l == NULL)
        return PERCH_EINVAL;
    if (!atomic_load(&l->started))
        return PERCH_ESTATE;
    if (l->thread == NULL)
        return 0;
    uint64_t deadline = perch__live_now(l) + (uint64_t)timeout_ms * 1000000u;
    perch_mutex_lock(l->mu);
    while (atomic_load(&l->running)) {
        uint64_t now = perch__live_now(l);
        if (now >= deadline)
            break;
        perch_cond_wait(l->cv, l->mu, (uint32_t)((deadline - now) / 1000000u + 1));
    }
    bool running = atomic_load(&l->running);
    perch_mutex_unlock(l->mu);
    if (running)
        return PERCH_ETIMEDOUT;
    perch_thread_join(l->thread, NULL);
    l->thread = NULL;
    return 0;
}

void perch_live_drop_queued(perch_live *l)
{
    if (l != NULL)
        perch_event_queue_cancel(l->queue); /* the model thread's next pop says so */
}

void perch_live_get_stats(const perch_live *l, perch_live_stats *st)
{
    perch_event_queue_stats qs;
    memset(st, 0, sizeof *st);
    if (l == NULL)
        return;
    perch_event_queue_get_stats(l->queue, &qs);
    st->events = atomic_load(&l->events);
    st->queue_dropped = qs.dropped;
    st->queue_oversized = qs.oversized;
    st->queue_bytes_high = qs.bytes_high;
    st->queue_capacity = qs.capacity;
    st->last_timestamp = atomic_load(&l->last_timestamp);
    st->samples_waiting = atomic_load(&l->samples_waiting);
    st->stop_dropped = atomic_load(&l->stop_dropped);
    st->failed_sinks = atomic_load(&l->failed_sinks);
    st->error = atomic_load(&l->error);
    st->running = atomic_load(&l->running);
    st->finished = atomic_load(&l->finished);
    perch_mutex_lock(l->mu);
    st->sinks = (uint32_t)l->slot_count; /* the model thread attaches under mu */
    st->events_per_second = l->rate;
    for (size_t i = 0; i < l->loss_count; i++)
        st->losses += l->losses[i].base + l->losses[i].total;
    st->gaps = l->gaps;
    st->gap_ms = l->gap_ms;
    perch_mutex_unlock(l->mu);
}

int perch_live_sink_state(const perch_live *l, size_t i, char name[PERCH_LIVE_SINK_NAME_MAX],
                          int *error)
{
    if (l == NULL)
        return PERCH_ERANGE;
    perch_mutex_lock(l->mu);
    bool in_range = i < l->slot_count;
    if (in_range && name != NULL)
        snprintf(name, LIVE_NAME_MAX, "%s", l->slots[i].used ? l->slots[i].name : "");
    if (in_range && error != NULL)
        *error = atomic_load(&l->slots[i].error);
    perch_mutex_unlock(l->mu);
    return in_range ? 0 : PERCH_ERANGE;
}

void perch_live_destroy(perch_live *l)
{
    if (l == NULL)
        return;
    if (l->thread != NULL) {
        atomic_store(&l->quit, true);
        perch_event_queue_cancel(l->queue);
        perch_thread_join(l->thread, NULL);
    }
    for (struct live_call *c = l->calls, *next; c != NULL; c = next) {
        next = c->next;
        perch__free(c); /* only abandoned calls can be left */
    }
    for (size_t i = 0; i < l->slot_count; i++)
        perch__live_counts_free(&l->slots[i].counts);
    perch_model_destroy(l->model);
    perch__live_state_destroy(l->state);
    perch_cond_destroy(l->cv);
    perch_mutex_destroy(l->mu);
    perch__free(l->source);
    perch__free(l->session_config);
    perch__free(l);
}
