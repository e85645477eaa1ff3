/*
 * The pipe server's I/O side (pipe_server.h): one thread waits on a completion port for the
 * overlapped connects, reads and writes of every instance, starts the next read or write of
 * each client when its state allows, hands read bytes and reply pumping to the workers
 * (pipe_worker.c), and runs the timers that drop silent and stuck clients and drive the
 * subscriptions. Every client field is changed under the server's lock; the thread holds it
 * only while it updates state, never while it waits.
 */
#include <windows.h>

#include <stdio.h>
#include <string.h>

#include "perch/error.h"
#include "perch/win_error.h"
#include "pipe_internal.h"
#include "util/mem.h"
#include "wstr.h"

#define KEY_IO      1
#define KEY_KICK    2
#define KEY_STOP    3
#define PIPE_BUFFER (64u << 10)
/* How long a client that got its last reply (a fatal frame's ERROR, a refusal) may keep the
 * pipe open before perchd disconnects it. Closing the server's handle alone would leave the
 * instance to the client, holding one of the pipe's instances for as long as it likes. */
#define LINGER_MS   2000u
#define FATAL_FRAME "sent a frame that ends the connection (see the ERROR reply it got)"
/* A silent connection this young keeps its slot when every slot is taken: perch checks who
 * serves the pipe before its HELLO, and must not lose its slot to the next connection. */
#define SILENT_GRACE_MS 250u

uint64_t perch__pipe_now_ms(void)
{
    return GetTickCount64();
}

void perch_pipe_server_opts_default(perch_pipe_server_opts *o)
{
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->max_clients = 64;
    o->listeners = 4;
    o->workers = 2;
    o->out_high = 1u << 20;
    o->stall_ms = 10000;
    o->hello_ms = 5000;
    o->tick_ms = 50;
}

void perch__pipe_kick(perch_pipe_server *s)
{
    PostQueuedCompletionStatus(s->port, 0, KEY_KICK, NULL);
}

/* ---- instances ----------------------------------------------------------------------------- */

static int create_instance(perch_pipe_server *s, bool first)
{
    DWORD open_mode =
        PIPE_ACCESS_DUPLEX | FILE_FLAG_OVERLAPPED | (first ? FILE_FLAG_FIRST_PIPE_INSTANCE : 0);
    DWORD pipe_mode = PIPE_TYPE_BYTE | PIPE_READMODE_BYTE | PIPE_WAIT | PIPE_REJECT_REMOTE_CLIENTS;
    DWORD max = s->o.max_clients + s->o.listeners + 1;
    pipe_client *c = perch__calloc(1, sizeof *c);
    if (c == NULL)
        return PERCH_ENOMEM;
    c->pipe = perch__pipe_os_hooks.create(s->name, open_mode, pipe_mode, max, PIPE_BUFFER,
                                          PIPE_BUFFER, 0, &s->sa);
    if (c->pipe == INVALID_HANDLE_VALUE) {
        int err = perch_win_last_error();
        perch__free(c);
        return err;
    }
    if (CreateIoCompletionPort(c->pipe, s->port, KEY_IO, 0) == NULL) {
        int err = perch_win_last_error();
        CloseHandle(c->pipe);
        perch__free(c);
        return err;
    }
    c->srv = s;
    c->op_connect.kind = OP_CONNECT;
    c->op_read.kind = OP_READ;
    c->op_write.kind = OP_WRITE;
    c->op_connect.c = c->op_read.c = c->op_write.c = c;
    c->next = s->clients;
    if (s->clients)
        s->clients->prev = c;
    s->clients = c;
    s->stats.instances++;
    s->listening++;
    if (!ConnectNamedPipe(c->pipe, &c->op_connect.ov)) {
        DWORD e = GetLastError();
        if (e == ERROR_PIPE_CONNECTED) /* connected before the call: no packet comes */
            PostQueuedCompletionStatus(s->port, 0, KEY_IO, &c->op_connect.ov);
        else if (e != ERROR_IO_PENDING) {
            perch__pipe_close(c, "listening failed");
            return 0;
        }
    }
    c->connect_pending = true;
    return 0;
}

/* Keeps `listeners` instances waiting while there is room for more clients. */
static void refill(perch_pipe_server *s)
{
    while (!s->stopping && s->listening < s->o.listeners &&
           s->stats.instances < s->o.max_clients + s->o.listeners)
        if (create_instance(s, false) < 0)
            break;
}

/* Queues a warning line (under the lock): no thread logs while it holds the lock, or a log
 * line that waits (a paused console) would stop every client and every STATUS with it. A line
 * that cannot be queued is lost, its drop still counted. */
static void queue_log(perch_pipe_server *s, const char *line, bool drop, bool untrusted)
{
    size_t n = strlen(line) + 1;
    pipe_log_line *l = s->backend.log ? perch__alloc(sizeof *l + n) : NULL;
    if (l == NULL) {
        s->stats.dropped += drop;
        return;
    }
    l->next = NULL;
    l->drop = drop;
    l->untrusted = untrusted;
    memcpy(l->text, line, n);
    if (s->log_tail)
        s->log_tail->next = l;
    else
        s->log_head = l;
    s->log_tail = l;
}

void perch__pipe_flush_log(perch_pipe_server *s)
{
    perch_mutex_lock(s->lock);
    pipe_log_line *l = s->log_head;
    s->log_head = s->log_tail = NULL;
    perch_mutex_unlock(s->lock);
    while (l != NULL) {
        pipe_log_line *next = l->next;
        s->backend.log(s->backend.ctx,
                       PERCH_PROTO_LOG_WARN | (l->untrusted ? PERCH_PROTO_LOG_UNTRUSTED : 0),
                       l->text);
        if (l->drop) {
            perch_mutex_lock(s->lock);
            s->stats.dropped++;
            perch_mutex_unlock(s->lock);
        }
        perch__free(l);
        l = next;
    }
}

void perch__pipe_queue(pipe_client *c, uint8_t *frame, size_t len)
{
    out_frame *f = perch__alloc(sizeof *f);
    if (f == NULL) {
        perch__free(frame);
        perch__pipe_close(c, "out of memory for a reply");
        return;
    }
    f->next = NULL;
    f->data = frame;
    f->len = len;
    f->off = 0;
    if (c->qtail)
        c->qtail->next = f;
    else
        c->qhead = f;
    c->qtail = f;
    if (c->queued == 0)
        c->progress_ms = perch__pipe_now_ms();
    c->queued += len;
    c->srv->stats.queued_bytes += len;
    if (c->queued > c->srv->stats.queued_high)
        c->srv->stats.queued_high = c->queued;
}

void perch__pipe_close(pipe_client *c, const char *reason)
{
    perch_pipe_server *s = c->srv;
    if (c->closing)
        return;
    c->closing = true;
    if (reason != NULL && c->connected) {
        char line[800];
        snprintf(c->reason, sizeof c->reason, "%s", reason);
        snprintf(line, sizeof line, "pipe client pid %u (%s) disconnected by perchd: %s",
                 (unsigned)c->pid, c->image[0] ? c->image : "image unknown", reason);
        queue_log(s, line, true, !c->admin);
    }
    CancelIoEx(c->pipe, NULL);
}

/* Frees a closed client once no I/O and no worker refer to it. */
static void finalize(perch_pipe_server *s, pipe_client *c)
{
    if (c->read_pending || c->write_pending || c->connect_pending || c->busy || c->finalized)
        return;
    c->finalized = true;
    if (c->reader_slot)
        s->readers--;
    if (c->connected) {
        s->stats.clients--;
        s->stats.closed++;
    } else {
        s->listening--;
    }
    s->stats.instances--;
    /* A listener again before this handle goes: when every instance was connected at once
     * none was left listening, and without this none would come back (refill runs on
     * connects); made before the close, so the name never lapses for another to take. */
    if (!s->stopping)
        refill(s);
    /* DisconnectNamedPipe discards what the client has not read yet: a client the server
     * drops (mid-way, or LINGER_MS after its last reply: an ERROR for a fatal frame, the busy
     * refusal) is cut off that way; one that hung up has nothing left to read. */
    if (c->disconnect || c->reason[0])
        DisconnectNamedPipe(c->pipe);
    CloseHandle(c->pipe);
    for (out_frame *f = c->qhead, *n; f != NULL; f = n) {
        n = f->next;
        perch__free(f->data);
        perch__free(f);
    }
    s->stats.queued_bytes -= c->queued;
    perch_proto_reply_destroy(c->pending);
    perch_proto_session_destroy(c->session);
    perch_proto_reader_destroy(c->reader);
    perch__free(c->rbuf);
    if (c->prev)
        c->prev->next = c->next;
    else
        s->clients = c->next;
    if (c->next)
        c->next->prev = c->prev;
    perch__free(c);
}

/* ---- per-client state machine (under the lock) ------------------------------------------- */

/* A read failed: the client hung up (ERROR_BROKEN_PIPE). After a fatal frame's ERROR that is
 * what it should do, and the line says why perchd ended the connection, whether the read
 * failed at once (the client was quicker) or later. */
static void read_failed(pipe_client *c)
{
    c->read_pending = false;
    perch__pipe_close(c, c->lingering && !c->refuse ? FATAL_FRAME : NULL);
}

static void start_read(perch_pipe_server *s, pipe_client *c)
{
    memset(&c->op_read.ov, 0, sizeof c->op_read.ov);
    c->read_pending = true;
    if (!ReadFile(c->pipe, c->rbuf, PIPE_READ_BUF, NULL, &c->op_read.ov) &&
        GetLastError() != ERROR_IO_PENDING)
        read_failed(c);
    (void)s;
}

static void start_write(pipe_client *c)
{
    out_frame *f = c->qhead;
    memset(&c->op_write.ov, 0, sizeof c->op_write.ov);
    c->write_pending = true;
    if (!WriteFile(c->pipe, f->data + f->off, (DWORD)(f->len - f->off), NULL, &c->op_write.ov) &&
        GetLastError() != ERROR_IO_PENDING) {
        c->write_pending = false;
        perch__pipe_close(c, NULL);
    }
}

static void step(perch_pipe_server *s, pipe_client *c)
{
    if (c->closing) {
        finalize(s, c);
        return;
    }
    if (!c->connected)
        return;
    if (!c->write_pending && c->qhead != NULL)
        start_write(c);
    if (c->closing || c->busy)
        return;
    if (c->close_after && c->qhead == NULL && c->pending == NULL && !c->write_pending) {
        /* the last reply is sent: wait for the client to hang up (what it still sends is
         * read and dropped), so the instance goes with it; timers cut it off at LINGER_MS */
        if (!c->lingering) {
            c->lingering = true;
            c->linger_ms = perch__pipe_now_ms();
        }
        if (!c->read_pending)
            start_read(s, c);
        return;
    }
    /* Requests are read and handled only while the client reads its replies: one that sends
     * without reading fills its queue to out_high, is not read any more, and is dropped
     * after stall_ms. */
    bool room = c->queued < s->o.out_high;
    if (c->pending != NULL && c->queued < s->o.out_high / 2)
        perch__pipe_post(s, c, JOB_PUMP);
    else if (c->pending == NULL && c->have_bytes && room)
        perch__pipe_post(s, c, JOB_HANDLE);
    else if (c->pending == NULL && !c->read_pending && !c->close_after && room)
        start_read(s, c);
}

void perch__pipe_refuse_busy(perch_pipe_server *s, pipe_client *c, const char *msg)
{
    uint8_t *p, *f;
    size_t n, fl;
    perch_proto_error e = {PERCH_EBUSY, PERCH_MSG_HELLO, PERCH_PROTO_VERSION, msg};
    c->refuse = true;
    c->close_after = true;
    s->stats.refused_busy++;
    if (perch_proto_encode(PERCH_MSG_ERROR, true, &e, &p, &n) < 0)
        return;
    if (perch_proto_frame(PERCH_PROTO_VERSION, PERCH_MSG_ERROR, 1, PERCH_PROTO_FLAG_REPLY, p, n, &f,
                          &fl) == 0)
        perch__pipe_queue(c, f, fl);
    perch__free(p);
}

/* Connected clients that are not closing (under the lock): a client being closed still
 * counts in stats.clients until its handle goes, but its slot is already freeing. */
static uint32_t clients_staying(const perch_pipe_server *s)
{
    uint32_t n = 0;
    for (const pipe_client *c = s->clients; c != NULL; c = c->next)
        n += c->connected && !c->closing;
    return n;
}

/* When every slot is taken, the connection a new one may replace (under the lock): one
 * already refused as busy and only waiting to hang up, else the one that has sent nothing for
 * the longest. Without this, a user who may only read could hold every slot with silent
 * connections (each dropped only after hello_ms, and opened again) and keep administrators
 * out. NULL when every connection has spoken. */
static pipe_client *replaceable(perch_pipe_server *s, const pipe_client *newcomer)
{
    pipe_client *silent = NULL;
    uint64_t now = perch__pipe_now_ms();
    for (pipe_client *c = s->clients; c != NULL; c = c->next) {
        if (c == newcomer || !c->connected || c->closing)
            continue;
        if (c->refuse && c->lingering)
            return c;
        /* busy first: a worker may be creating its session; a connection younger than
         * SILENT_GRACE_MS may be a client checking perchd's identity before its HELLO */
        if (!c->busy && !c->have_bytes && !c->refuse && c->session == NULL &&
            now - c->connected_ms >= SILENT_GRACE_MS &&
            (silent == NULL || c->connected_ms < silent->connected_ms))
            silent = c;
    }
    return silent;
}

static void on_connect(perch_pipe_server *s, pipe_client *c, bool ok)
{
    c->connect_pending = false;
    s->listening--;
    if (!ok || s->stopping) {
        s->listening++; /* finalize counts it as a listener */
        perch__pipe_close(c, NULL);
        return;
    }
    c->connected = true;
    s->stats.clients++;
    s->stats.accepted++;
    c->connected_ms = c->request_ms = perch__pipe_now_ms();
    perch__pipe_peer(c->pipe, &c->pid, c->image, sizeof c->image);
    c->rbuf = perch__alloc(PIPE_READ_BUF);
    if (c->rbuf == NULL || perch_proto_reader_create(PERCH_PROTO_MAX_REQUEST, &c->reader) < 0)
        perch__pipe_close(c, "out of memory for a new client");
    else if (s->stats.clients > s->o.max_clients && clients_staying(s) > s->o.max_clients) {
        char msg[160];
        pipe_client *old = replaceable(s, c);
        if (old != NULL && old->refuse) {
            old->disconnect = true; /* it has its answer */
            perch__pipe_close(old, NULL);
        } else if (old != NULL) {
            snprintf(msg, sizeof msg,
                     "sent nothing in %llu ms, and every connection was taken: a new one "
                     "has its slot",
                     (unsigned long long)(perch__pipe_now_ms() - old->connected_ms));
            old->disconnect = true;
            perch__pipe_close(old, msg);
        } else {
            snprintf(msg, sizeof msg,
                     "perchd is busy: it serves at most %u clients at once; try again",
                     (unsigned)s->o.max_clients);
            perch__pipe_refuse_busy(s, c, msg);
        }
    }
    refill(s);
}

static void on_io(perch_pipe_server *s, pipe_op *op, DWORD n, bool ok)
{
    pipe_client *c = op->c;
    if (op->kind == OP_CONNECT) {
        on_connect(s, c, ok);
    } else if (op->kind == OP_READ) {
        c->read_pending = false;
        if (!ok) {
            read_failed(c);
        } else if (n == 0) {
            /* a client's zero-byte write completes the read with nothing: step reads again.
             * Taken for a hang-up, it closed the handle without disconnecting, leaving the
             * instance to a client that could do it again, past the linger guard. */
        } else if (c->lingering) {
            s->stats.bytes_in += n; /* after its last reply: dropped unread */
        } else {
            c->rlen = n;
            c->roff = 0;
            c->have_bytes = true;
            s->stats.bytes_in += n;
        }
    } else {
        c->write_pending = false;
        if (!ok) {
            perch__pipe_close(c, NULL);
        } else {
            out_frame *f = c->qhead;
            f->off += n;
            c->queued -= n;
            s->stats.queued_bytes -= n;
            s->stats.bytes_out += n;
            c->progress_ms = perch__pipe_now_ms();
            if (f->off == f->len) {
                c->qhead = f->next;
                if (c->qhead == NULL)
                    c->qtail = NULL;
                perch__free(f->data);
                perch__free(f);
            }
        }
    }
    step(s, c);
}

/* ---- timers -------------------------------------------------------------------------------- */

static void timers(perch_pipe_server *s, pipe_client *c, uint64_t now)
{
    char why[160];
    if (!c->connected || c->closing)
        return;
    if (c->lingering) {
        if (now - c->linger_ms > LINGER_MS) {
            snprintf(why, sizeof why, "%s, and kept the pipe open %u ms after it", FATAL_FRAME,
                     LINGER_MS);
            c->disconnect = true;
            perch__pipe_close(c, c->refuse ? NULL : why);
        }
        return;
    }
    if (c->refuse)
        return;
    if (!c->hello_done && now - c->connected_ms > s->o.hello_ms) {
        snprintf(why, sizeof why, "sent no HELLO within %u ms of connecting",
                 (unsigned)s->o.hello_ms);
        perch__pipe_close(c, why);
    } else if (c->qhead != NULL && now - c->progress_ms > s->o.stall_ms) {
        snprintf(why, sizeof why, "read none of its %zu queued reply bytes for %u ms", c->queued,
                 (unsigned)s->o.stall_ms);
        perch__pipe_close(c, why);
    } else if (s->o.idle_ms && !c->subscribed && !c->busy && c->pending == NULL &&
               now - c->request_ms > s->o.idle_ms) {
        snprintf(why, sizeof why, "sent no request for %u ms", (unsigned)s->o.idle_ms);
        perch__pipe_close(c, why);
    } else if (c->subscribed && !c->busy && !c->close_after) { /* no update after an ERROR */
        perch_proto_reply *r = NULL;
        if (c->pending == NULL && c->qhead == NULL)
            perch__pipe_post(s, c, JOB_TICK);
        else if (perch_proto_session_tick(c->session, now, false, &r) == 0)
            perch_proto_reply_destroy(r); /* not idle: counted as skipped, r stays NULL */
    }
}

/* ---- the I/O thread -------------------------------------------------------------------- */

static void sweep(perch_pipe_server *s, bool run_timers)
{
    uint64_t now = perch__pipe_now_ms();
    for (pipe_client *c = s->clients, *n; c != NULL; c = n) {
        n = c->next;
        if (run_timers)
            timers(s, c, now);
        step(s, c);
    }
    if (run_timers)
        refill(s); /* again at each tick: a create that failed (for want of memory or of
                      instances) is retried, so perchd never stays without a listener */
}

static int io_thread(void *arg)
{
    perch_pipe_server *s = arg;
    uint64_t last_tick = perch__pipe_now_ms();
    for (;;) {
        DWORD n = 0;
        ULONG_PTR key = 0;
        OVERLAPPED *ov = NULL;
        BOOL ok = GetQueuedCompletionStatus(s->port, &n, &key, &ov, s->o.tick_ms);
        perch_mutex_lock(s->lock);
        if (ov != NULL)
            on_io(s, (pipe_op *)ov, n, ok != FALSE);
        uint64_t now = perch__pipe_now_ms();
        bool tick = now - last_tick >= s->o.tick_ms;
        if (tick)
            last_tick = now;
        if (key == KEY_STOP && !s->stopping) {
            s->stopping = true;
            for (pipe_client *c = s->clients; c != NULL; c = c->next)
                perch__pipe_close(c, NULL);
        }
        if (ov == NULL || tick || s->stopping)
            sweep(s, tick && !s->stopping);
        bool done = s->stopping && s->clients == NULL;
        perch_mutex_unlock(s->lock);
        perch__pipe_flush_log(s); /* what this turn and the workers' last jobs queued */
        if (done)
            return 0;
    }
}

/* ---- start and stop --------------------------------------------------------------------- */

static int start_threads(perch_pipe_server *s)
{
    int err = perch_mutex_create(&s->lock);
    err = err < 0 ? err : perch_cond_create(&s->work);
    s->workers = perch__calloc(s->o.workers, sizeof *s->workers);
    if (err == 0 && s->workers == NULL)
        err = PERCH_ENOMEM;
    for (uint32_t i = 0; err == 0 && i < s->o.workers; i++, s->nworkers++)
        err = perch_thread_start(perch__pipe_worker, s, "perch-pipe-w", &s->workers[i]);
    return err < 0 ? err : perch_thread_start(io_thread, s, "perch-pipe-io", &s->io);
}

static void destroy(perch_pipe_server *s)
{
    if (s->lock != NULL) {
        perch_mutex_lock(s->lock);
        s->workers_stop = true;
        perch_cond_broadcast(s->work);
        perch_mutex_unlock(s->lock);
    }
    for (uint32_t i = 0; i < s->nworkers; i++)
        perch_thread_join(s->workers[i], NULL);
    if (s->lock != NULL)
        perch__pipe_flush_log(s);                             /* the last lines, none lost */
    for (pipe_client *c = s->clients, *n; c != NULL; c = n) { /* the I/O thread never ran */
        DWORD got;
        n = c->next;
        if (CancelIoEx(c->pipe, &c->op_connect.ov) || GetLastError() != ERROR_NOT_FOUND)
            GetOverlappedResult(c->pipe, &c->op_connect.ov, &got, TRUE);
        CloseHandle(c->pipe);
        perch__free(c);
    }
    perch__free(s->workers);
    perch_cond_destroy(s->work);
    perch_mutex_destroy(s->lock);
    if (s->port)
        CloseHandle(s->port);
    LocalFree(s->sa.lpSecurityDescriptor);
    perch__free(s->name);
    perch__free(s);
}

static void say(char *why, size_t len, const char *what, int err)
{
    if (why != NULL && len > 0)
        snprintf(why, len, "%s: %s", what, perch_strerror(err));
}

/* err with its sentence in why. */
static int refused(int err, char *why, size_t why_len, const char *sentence)
{
    if (why != NULL && why_len > 0)
        snprintf(why, why_len, "%s", sentence);
    return err;
}

static int open_pipe(perch_pipe_server *s, char *why, size_t why_len)
{
    int err;
    if (perch__pipe_squatted(s->name, why, why_len))
        return PERCH_EEXIST;
    err = create_instance(s, true);
    if (err == PERCH_EACCES) /* FILE_FLAG_FIRST_PIPE_INSTANCE refused: it exists already */
        return refused(PERCH_EEXIST, why, why_len,
                       "the pipe name was created by another process first "
                       "(FILE_FLAG_FIRST_PIPE_INSTANCE refused): perchd does not serve a pipe "
                       "another program holds");
    if (err == PERCH_ENOTADMIN) /* the owner in PERCH_PIPE_SDDL was refused */
        return refused(err, why, why_len,
                       "creating the pipe failed: perchd runs without administrator rights, so "
                       "it cannot make Administrators the pipe's owner (perch checks the owner "
                       "before it talks to perchd); run it elevated or as the service");
    if (err < 0)
        say(why, why_len, "creating the pipe failed", err);
    return err;
}

int perch_pipe_server_start(const perch_pipe_server_opts *o, perch_pipe_server **out, char *why,
                            size_t why_len)
{
    perch_pipe_server *s;
    int err;
    if (out != NULL)
        *out = NULL;
    if (out == NULL || o == NULL || o->size != sizeof *o || o->backend == NULL ||
        o->max_clients == 0 || o->listeners == 0 || o->workers == 0 ||
        o->max_clients > PIPE_UNLIMITED_INSTANCES - 1 - o->listeners ||
        o->listeners >= PIPE_UNLIMITED_INSTANCES || o->out_high < PERCH_PROTO_HEADER_SIZE ||
        o->tick_ms == 0)
        return PERCH_EINVAL;
    if ((s = perch__calloc(1, sizeof *s)) == NULL)
        return PERCH_ENOMEM;
    s->o = *o;
    s->backend = *o->backend;
    s->name = perch__utf8_to_wide(o->name ? o->name : PERCH_PIPE_NAME);
    err = s->name == NULL ? PERCH_EINVAL : perch__pipe_security(&s->sa);
    if (err == 0 && (s->port = CreateIoCompletionPort(INVALID_HANDLE_VALUE, NULL, 0, 1)) == NULL)
        err = perch_win_last_error();
    if (err == 0)
        err = open_pipe(s, why, why_len);
    if (err == 0) {
        refill(s);
        *out = s; /* before the threads: a backend's request may already read it */
        err = start_threads(s);
        if (err < 0)
            say(why, why_len, "starting the pipe threads failed", err);
    }
    if (err < 0) {
        if (s->io != NULL) {
            PostQueuedCompletionStatus(s->port, 0, KEY_STOP, NULL);
            perch_thread_join(s->io, NULL);
        }
        *out = NULL;
        destroy(s);
        return err;
    }
    return 0;
}

void perch_pipe_server_stop(perch_pipe_server *s)
{
    if (s == NULL)
        return;
    PostQueuedCompletionStatus(s->port, 0, KEY_STOP, NULL);
    perch_thread_join(s->io, NULL);
    destroy(s);
}

void perch_pipe_server_get_stats(perch_pipe_server *s, perch_pipe_server_stats *st)
{
    perch_mutex_lock(s->lock);
    *st = s->stats;
    perch_mutex_unlock(s->lock);
}
