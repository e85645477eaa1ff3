/*
 * Internals of the pipe server shared by pipe_server.c (the completion port, instances and
 * clients), pipe_worker.c (the worker threads running sessions) and pipe_security.c (the
 * security descriptor, the client's identity and role, the squatter check). The OS calls
 * that Wine cannot make behave like Windows (a FILE_FLAG_FIRST_PIPE_INSTANCE create refused,
 * a client token outside Administrators) go through perch__pipe_os so tests can stand in
 * for them.
 */
#ifndef PERCH_WIN_PIPE_INTERNAL_H
#define PERCH_WIN_PIPE_INTERNAL_H

#include <windows.h>

#include <stdbool.h>
#include <stdint.h>

#include "perch/thread.h"
#include "pipe_server.h"
#include "proto/session.h"

/* The seam at the create and impersonation calls. */
typedef struct perch__pipe_os {
    HANDLE (*create)
    (const wchar_t *name, DWORD open_mode, DWORD pipe_mode, DWORD max_instances, DWORD out_size,
     DWORD in_size, DWORD timeout, SECURITY_ATTRIBUTES *sa);
    /* The role of the client on pipe (ImpersonateNamedPipeClient, then its token's groups).
     * 0 or the translated error (the role is then read-only). */
    int (*client_role)(HANDLE pipe, uint8_t *role);
} perch__pipe_os;

extern perch__pipe_os perch__pipe_os_hooks;

/* The owner and DACL every instance gets, as SDDL (documented in docs/protocol.md). The owner
 * is Administrators, which only an elevated administrator or LocalSystem may set: clients
 * check it (perch__pipe_server_check) to tell perchd from another program serving the name. */
#define PERCH_PIPE_SDDL L"O:BAD:P(D;;FA;;;NU)(A;;FA;;;SY)(A;;FA;;;BA)(A;;0x12008b;;;S-1-5-32-559)"

/* The security attributes of the pipe (the descriptor is LocalFree'd by the caller). */
int perch__pipe_security(SECURITY_ATTRIBUTES *sa);

/* Another process serves name already: fills why (its pid and image when they can be read)
 * and returns true. */
bool perch__pipe_squatted(const wchar_t *name, char *why, size_t why_len);

/* What a client asks for when it opens the pipe: FILE_GENERIC_READ and FILE_WRITE_DATA, no
 * more than the DACL grants Performance Log Users (GENERIC_WRITE would also ask for
 * FILE_APPEND_DATA, which is FILE_CREATE_PIPE_INSTANCE, and be refused to them). */
#define PERCH_PIPE_CLIENT_ACCESS (FILE_GENERIC_READ | FILE_WRITE_DATA)

/* The client's check of the server on a connected pipe handle: 0 when the pipe's owner is
 * Administrators or LocalSystem (as perchd makes it); PERCH_ENOTADMIN when it is anyone else
 * or cannot be read, with why naming the owner and the server's pid and image. */
int perch__pipe_server_check(HANDLE pipe, char *why, size_t why_len);

/* The client's pid and image path (UTF-8, "" when unknown). */
void perch__pipe_peer(HANDLE pipe, uint32_t *pid, char *image, size_t image_len);

/* The default role check (ImpersonateNamedPipeClient + CheckTokenMembership). */
int perch__pipe_token_role(HANDLE pipe, uint8_t *role);

enum { OP_CONNECT = 1, OP_READ = 2, OP_WRITE = 3 };

typedef struct pipe_op {
    OVERLAPPED ov;
    int kind;
    struct pipe_client *c;
} pipe_op;

typedef struct out_frame {
    struct out_frame *next;
    size_t len, off;
    uint8_t *data;
} out_frame;

enum { JOB_NONE = 0, JOB_HANDLE, JOB_PUMP, JOB_TICK };

#define PIPE_READ_BUF (64u << 10)

typedef struct pipe_client {
    struct perch_pipe_server *srv;
    struct pipe_client *next, *prev; /* all instances */
    struct pipe_client *next_job;
    HANDLE pipe;
    pipe_op op_connect, op_read, op_write;
    bool connected, closing, finalized, refuse;
    bool read_pending, write_pending, connect_pending;
    bool busy; /* a worker runs a job for it */
    int job;
    bool have_bytes;  /* read bytes (or a reader event) not yet handled */
    bool close_after; /* close once the queue is sent (a fatal frame, a refusal) */
    bool lingering;   /* close_after and all sent: waiting for the client to hang up */
    bool disconnect;  /* DisconnectNamedPipe before the close (a client that would not go) */
    bool reader_slot; /* a read-only client, counted in the server's readers */
    bool hello_done, subscribed;
    bool admin; /* lock: said HELLO as an administrator (else its log lines are untrusted) */
    uint8_t *rbuf;
    size_t rlen, roff;
    perch_proto_reader *reader;
    perch_proto_session *session;
    perch_proto_reply *pending; /* the reply being pulled into the queue */
    out_frame *qhead, *qtail;
    size_t queued;
    uint64_t connected_ms, progress_ms, request_ms, linger_ms;
    uint32_t pid;
    uint8_t role;
    char image[520];
    char reason[200]; /* why the server dropped it ("" when the client left) */
} pipe_client;

/* A log line written under the lock, logged after it is released (a log line can wait). */
typedef struct pipe_log_line {
    struct pipe_log_line *next;
    bool drop; /* counted in stats.dropped once logged, so the count never runs ahead */
    bool untrusted; /* about a client not known to be an administrator */
    char text[];
} pipe_log_line;

struct perch_pipe_server {
    perch_pipe_server_opts o;
    perch_proto_backend backend; /* copied */
    wchar_t *name;
    HANDLE port;
    SECURITY_ATTRIBUTES sa;
    perch_mutex *lock; /* every client field above, the job list and the stats */
    perch_cond *work;
    perch_thread *io;
    perch_thread **workers;
    uint32_t nworkers;
    bool stopping, workers_stop;
    pipe_client *clients; /* every instance, listening or connected */
    pipe_client *jobs_head, *jobs_tail;
    uint32_t listening;
    uint32_t readers; /* connected read-only clients (pipe_client.reader_slot) */
    perch_pipe_server_stats stats;
    pipe_log_line *log_head, *log_tail; /* waiting for perch__pipe_flush_log */
};

/* pipe_server.c */
uint64_t perch__pipe_now_ms(void);
void perch__pipe_kick(perch_pipe_server *s);
/* Appends a frame (taken) to c's queue (under the lock). */
void perch__pipe_queue(pipe_client *c, uint8_t *frame, size_t len);
/* Starts closing c with reason (NULL: the client left) (under the lock). */
void perch__pipe_close(pipe_client *c, const char *reason);
/* Logs the lines perch__pipe_close queued under the lock (call without it). */
void perch__pipe_flush_log(perch_pipe_server *s);
/* Queues an ERROR (PERCH_EBUSY, msg) for c and closes it once that is sent (under the lock). */
void perch__pipe_refuse_busy(perch_pipe_server *s, pipe_client *c, const char *msg);

/* pipe_worker.c */
int perch__pipe_worker(void *arg);
/* Queues a job for c (under the lock; c must not be busy). */
void perch__pipe_post(perch_pipe_server *s, pipe_client *c, int job);

#endif
