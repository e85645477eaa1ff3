/*
 * Clients of Perch's pipe for the Windows tests (tests/win): a raw one, a plain pipe handle to
 * write bytes no client library would (oversized, truncated, garbage frames) and to read the
 * frames the server answers with; and the worker the 32-clients tests run on each thread.
 * Header-only (static functions); the pipe name is the caller's.
 */
#ifndef PERCH_TEST_PIPE_RAW_H
#define PERCH_TEST_PIPE_RAW_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <windows.h>

#include "perch/proto.h"
#include "proto/client.h"
#include "perch/error.h"

/* A raw client handle on the pipe called name. */
static inline HANDLE raw_open(const char *name)
{
    wchar_t w[128];
    MultiByteToWideChar(CP_UTF8, 0, name, -1, w, 128);
    HANDLE h = CreateFileW(w, GENERIC_READ | GENERIC_WRITE | READ_CONTROL, 0, NULL, OPEN_EXISTING,
                           0, NULL);
    assert_true(h != INVALID_HANDLE_VALUE);
    return h;
}

static inline void raw_write(HANDLE h, const void *p, size_t n)
{
    DWORD w = 0;
    assert_true(WriteFile(h, p, (DWORD)n, &w, NULL));
    assert_int_equal(w, n);
}

/* Reads one frame; false when the server closed the pipe. */
static inline bool raw_frame(HANDLE h, perch_proto_header *hdr, uint8_t *payload, size_t cap)
{
    uint8_t b[PERCH_PROTO_HEADER_SIZE];
    DWORD got = 0, n;
    perch_proto_fault fault;
    while (got < sizeof b) {
        if (!ReadFile(h, b + got, (DWORD)(sizeof b - got), &n, NULL) || n == 0)
            return false;
        got += n;
    }
    assert_int_equal(perch_proto_header_read(b, 0, hdr, &fault, NULL, 0), 0);
    assert_true(hdr->payload_len <= cap);
    for (got = 0; got < hdr->payload_len; got += n)
        if (!ReadFile(h, payload + got, hdr->payload_len - got, &n, NULL) || n == 0)
            return false;
    return true;
}

/* Writes one frame of type with the encoded request req (may be NULL). */
static inline void raw_request(HANDLE h, uint16_t type, uint32_t id, const void *req)
{
    uint8_t *p = NULL, *f;
    size_t n = 0, fl;
    if (req != NULL)
        assert_int_equal(perch_proto_encode(type, false, req, &p, &n), 0);
    assert_int_equal(perch_proto_frame(1, type, id, 0, p, n, &f, &fl), 0);
    raw_write(h, f, fl);
    perch_free(p);
    perch_free(f);
}

static inline void raw_hello(HANDLE h)
{
    perch_proto_hello_req req = {1, 1, 1, "raw"};
    uint8_t buf[4096];
    perch_proto_header hdr;
    raw_request(h, PERCH_MSG_HELLO, 1, &req);
    assert_true(raw_frame(h, &hdr, buf, sizeof buf));
    assert_int_equal(hdr.type, PERCH_MSG_HELLO);
}

/* The hostile clients that need no server state to check, each on its own connection to
 * name: an oversized frame and garbage get an ERROR and a hang-up; a wrong version gets an
 * ERROR naming it and the connection stays (a PING after it is answered); half a header and
 * then gone. */
static inline void raw_hostile_basics(const char *name)
{
    perch_proto_header hdr;
    static uint8_t buf[8192];
    uint8_t hb[PERCH_PROTO_HEADER_SIZE], *f;
    size_t fl;
    HANDLE h = raw_open(name);
    raw_hello(h);
    perch_proto_header big = {PERCH_PROTO_MAGIC, 1, PERCH_MSG_STATUS, 7, 0, 512u << 20, {0}};
    perch_proto_header_write(&big, hb);
    raw_write(h, hb, sizeof hb);
    assert_true(raw_frame(h, &hdr, buf, sizeof buf));
    assert_int_equal(hdr.type, PERCH_MSG_ERROR);
    assert_false(raw_frame(h, &hdr, buf, sizeof buf));
    CloseHandle(h);
    h = raw_open(name);
    memset(buf, 'Z', 100);
    raw_write(h, buf, 100);
    assert_true(raw_frame(h, &hdr, buf, sizeof buf));
    assert_int_equal(hdr.type, PERCH_MSG_ERROR);
    assert_false(raw_frame(h, &hdr, buf, sizeof buf));
    CloseHandle(h);
    h = raw_open(name);
    raw_hello(h);
    assert_int_equal(perch_proto_frame(9, PERCH_MSG_STATUS, 3, 0, NULL, 0, &f, &fl), 0);
    raw_write(h, f, fl);
    perch_free(f);
    assert_true(raw_frame(h, &hdr, buf, sizeof buf));
    assert_int_equal(hdr.type, PERCH_MSG_ERROR);
    raw_request(h, PERCH_MSG_PING, 4, NULL);
    assert_true(raw_frame(h, &hdr, buf, sizeof buf));
    assert_int_equal(hdr.type, PERCH_MSG_PING);
    CloseHandle(h);
    h = raw_open(name);
    raw_write(h, hb, 10);
    CloseHandle(h);
}

/* One of many clients at once: connects to a->pipe, asks STATUS and TOP (threads by CPU over
 * the last window_ms) twenty times each; a->ok counts the answers (a TOP with rows when
 * a->need_rows), a->why keeps the last failure. */
typedef struct pipe_worker {
    const char *pipe;
    uint32_t window_ms;
    bool need_rows;
    int ok;
    char why[300];
} pipe_worker;

static inline int pipe_worker_run(void *arg)
{
    pipe_worker *a = arg;
    perch_proto_transport t;
    perch_proto_client *c;
    if (perch_pipe_connect(a->pipe, 30000, &t, a->why, sizeof a->why) != 0 ||
        perch_proto_client_open(&t, "c", 1, 30000, &c, a->why, sizeof a->why) != 0)
        return 0;
    for (int i = 0; i < 20; i++) {
        perch_proto_status st;
        perch_proto_top_rep top;
        perch_proto_top_req req = {PERCH_TOP_THREADS,   PERCH_ORDER_CPU, 10, false, 0,
                                   {a->window_ms, 0, 0}};
        void *m = NULL;
        if (perch_proto_client_call(c, PERCH_MSG_STATUS, NULL, &st, sizeof st, &m, 30000, a->why,
                                    sizeof a->why) == 0)
            a->ok++;
        perch_free(m);
        m = NULL;
        if (perch_proto_client_call(c, PERCH_MSG_TOP, &req, &top, sizeof top, &m, 30000, a->why,
                                    sizeof a->why) == 0 &&
            (top.row_count > 0 || !a->need_rows))
            a->ok++;
        perch_free(m);
    }
    perch_proto_client_close(c);
    return 0;
}

#endif
