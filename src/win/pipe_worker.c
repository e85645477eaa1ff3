/*
 * The pipe server's workers: each takes a client's job from the server's list and runs it
 * without the lock: feeding the bytes a read brought to the client's frame reader and its
 * protocol session (which calls the daemon), pulling the frames of a reply into the client's
 * bounded queue, or building a subscription update. A client has at most one job at a time,
 * so its session and reply are only ever touched by one thread.
 */
#include <windows.h>

#include <stdio.h>

#include "perch/error.h"
#include "pipe_internal.h"
#include "util/mem.h"

void perch__pipe_post(perch_pipe_server *s, pipe_client *c, int job)
{
    c->busy = true;
    c->job = job;
    c->next_job = NULL;
    if (s->jobs_tail)
        s->jobs_tail->next_job = c;
    else
        s->jobs_head = c;
    s->jobs_tail = c;
    perch_cond_signal(s->work);
}

/* Pulls frames of c's reply into its queue until out_high bytes wait or the reply ends. */
static void pump(perch_pipe_server *s, pipe_client *c)
{
    for (;;) {
        uint8_t *f;
        size_t n;
        perch_mutex_lock(s->lock);
        bool full = c->closing || c->queued >= s->o.out_high;
        perch_mutex_unlock(s->lock);
        if (full)
            return;
        int got = perch_proto_reply_next(c->pending, &f, &n);
        perch_mutex_lock(s->lock);
        if (got == 1) {
            perch__pipe_queue(c, f, n);
        } else {
            perch_proto_reply_destroy(c->pending);
            c->pending = NULL;
            if (got < 0)
                perch__pipe_close(c, "out of memory while sending a reply");
        }
        perch_mutex_unlock(s->lock);
        if (got != 1)
            return;
    }
}

/* Read-only clients may hold all but an eighth of the slots (8 of 64): however many
 * connections a user who may only read keeps open, administrators still get in. True (and
 * the refusal queued) when c is one too many (under the lock). */
static bool readers_full(perch_pipe_server *s, pipe_client *c)
{
    uint32_t kept = s->o.max_clients / 8;
    char msg[200];
    if (s->readers < s->o.max_clients - kept) {
        s->readers++;
        c->reader_slot = true;
        return false;
    }
    snprintf(msg, sizeof msg,
             "perchd is busy: read-only clients hold %u of its %u connections (the other %u "
             "are kept for administrators); try again",
             (unsigned)s->readers, (unsigned)s->o.max_clients, (unsigned)kept);
    perch__pipe_refuse_busy(s, c, msg);
    return true;
}

/* The first bytes of a client: its role and its session. 1 when it was refused (no session). */
static int open_session(perch_pipe_server *s, pipe_client *c)
{
    uint8_t role = PERCH_ROLE_READ;
    if (perch__pipe_os_hooks.client_role(c->pipe, &role) < 0)
        role = PERCH_ROLE_READ; /* the least a client can be */
    c->role = role;
    if (role != PERCH_ROLE_ADMIN) {
        perch_mutex_lock(s->lock);
        bool full = readers_full(s, c);
        perch_mutex_unlock(s->lock);
        if (full)
            return 1;
    }
    perch_proto_peer peer = {c->pid, c->image, role};
    return perch_proto_session_create(&s->backend, &peer, &c->session);
}

/* Handles what the reader holds and the read bytes, up to the first reply. */
static void handle(perch_pipe_server *s, pipe_client *c)
{
    perch_proto_reply *reply = NULL;
    perch_proto_event ev;
    uint64_t handled = 0;
    int err = c->session == NULL ? open_session(s, c) : 0;
    if (err == 1) { /* refused: only its ERROR goes out */
        perch_mutex_lock(s->lock);
        c->have_bytes = false;
        perch_mutex_unlock(s->lock);
        return;
    }
    while (err == 0 && reply == NULL) {
        if (perch_proto_reader_next(c->reader, &ev) == 1) {
            err = perch_proto_session_handle(c->session, &ev, &reply);
            perch_proto_reader_set_version(c->reader, perch_proto_session_version(c->session));
            handled++;
        } else if (c->roff < c->rlen) {
            size_t used;
            perch_proto_reader_push(c->reader, c->rbuf + c->roff, c->rlen - c->roff, &used);
            c->roff += used;
        } else {
            break;
        }
    }
    perch_mutex_lock(s->lock);
    c->have_bytes = reply != NULL;
    c->pending = reply;
    s->stats.requests += handled;
    if (handled)
        c->request_ms = perch__pipe_now_ms();
    if (c->session != NULL) {
        c->hello_done = perch_proto_session_version(c->session) != 0;
        c->admin = c->hello_done && c->role == PERCH_ROLE_ADMIN;
        c->subscribed = perch_proto_session_subscribed(c->session);
    }
    if (err == PERCH_EPIPE) {
        c->close_after = true;
        c->have_bytes = false;
    } else if (err < 0) {
        perch__pipe_close(c, "out of memory while handling a request");
    }
    perch_mutex_unlock(s->lock);
}

static void tick(perch_pipe_server *s, pipe_client *c)
{
    perch_proto_reply *r = NULL;
    int err = perch_proto_session_tick(c->session, perch__pipe_now_ms(), true, &r);
    perch_mutex_lock(s->lock);
    c->pending = r;
    if (err < 0)
        perch__pipe_close(c, "out of memory while building an update");
    perch_mutex_unlock(s->lock);
}

static void run(perch_pipe_server *s, pipe_client *c, int job)
{
    if (job == JOB_HANDLE)
        handle(s, c);
    else if (job == JOB_TICK)
        tick(s, c);
    if (c->pending != NULL)
        pump(s, c);
}

int perch__pipe_worker(void *arg)
{
    perch_pipe_server *s = arg;
    perch_mutex_lock(s->lock);
    for (;;) {
        while (!s->workers_stop && s->jobs_head == NULL)
            perch_cond_wait(s->work, s->lock, UINT32_MAX);
        if (s->jobs_head == NULL)
            break;
        pipe_client *c = s->jobs_head;
        s->jobs_head = c->next_job;
        if (s->jobs_head == NULL)
            s->jobs_tail = NULL;
        int job = c->job;
        bool closing = c->closing;
        perch_mutex_unlock(s->lock);
        if (!closing)
            run(s, c, job);
        perch__pipe_flush_log(s); /* a close run() made, logged without the lock */
        perch_mutex_lock(s->lock);
        c->busy = false;
        perch__pipe_kick(s);
    }
    perch_mutex_unlock(s->lock);
    return 0;
}
