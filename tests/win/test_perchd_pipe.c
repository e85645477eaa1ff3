/*
 * perchd's pipe (pipe_daemon.c) in front of a real daemon (daemon.h) under Wine, in this
 * process: STATUS carries the daemon's own state, summary and features as the protocol
 * says them; what the daemon cannot do is refused with a sentence; a second server on the
 * same name finds the first and refuses to serve (the squatter path), naming this pid; log
 * lines about clients that are not administrators stay within their budget, and read-only
 * clients' snapshots are paced.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <windows.h>

#include "daemon.h"
#include "log.h"
#include "perch/error.h"
#include "pipe_daemon.h"
#include "pipe_internal.h"
#include "pipe_raw.h"
#include "proto/client.h"

static perch_proto_client *connect_to(const char *name)
{
    perch_proto_transport t;
    perch_proto_client *c;
    char why[300];
    if (perch_pipe_connect(name, 5000, &t, why, sizeof why) != 0 ||
        perch_proto_client_open(&t, "test", 1, 5000, &c, why, sizeof why) != 0)
        fail_msg("connect: %s", why);
    return c;
}

/* A console daemon without privileges (so without kernel data) in this directory's
 * perchd-TAG-PID, and its pipe \\.\pipe\perchd-TAG-test-PID, whose name goes into name. */
static void start_daemon(const char *tag, perch_daemon **d, perch_pipe_daemon **p, char *name,
                         size_t name_len)
{
    perch_daemon_options o;
    char dir[MAX_PATH], why[400];
    unsigned long pid = (unsigned long)GetCurrentProcessId();
    memset(&o, 0, sizeof o);
    o.sz = sizeof o;
    perch_config_defaults(&o.config);
    GetCurrentDirectoryA(sizeof dir, dir);
    snprintf(o.config.data_dir, sizeof o.config.data_dir, "%s\\perchd-%s-%lu", dir, tag, pid);
    snprintf(o.config.capture_dir, sizeof o.config.capture_dir, "%s\\c", o.config.data_dir);
    o.console = true;
    o.no_privileges = true;
    assert_int_equal(perch_daemon_create(&o, d), 0);
    assert_int_equal(perch_daemon_start(*d), 0);
    snprintf(name, name_len, "\\\\.\\pipe\\perchd-%s-test-%lu", tag, pid);
    if (perch_pipe_daemon_start(*d, NULL, name, p, why, sizeof why) != 0)
        fail_msg("pipe: %s", why);
}

static void stop_daemon(perch_daemon *d, perch_pipe_daemon *p)
{
    perch_pipe_daemon_stop(p);
    assert_int_equal(perch_daemon_stop(d), 0);
    perch_daemon_destroy(d);
}

static void test_daemon_behind_the_pipe(void **state)
{
    (void)state;
    perch_daemon *d;
    perch_pipe_daemon *p, *second;
    char name[96], why[400];
    start_daemon("pipe", &d, &p, name, sizeof name);

    perch_proto_client *c = connect_to(name);
    perch_proto_status st;
    perch_daemon_status ds;
    void *mem = NULL;
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_STATUS, NULL, &st, sizeof st, &mem, 5000,
                                             why, sizeof why),
                     0);
    perch_daemon_status_get(d, &ds);
    assert_true(ds.degraded); /* no privileges: no kernel data */
    assert_int_equal(st.session_state, PERCH_SESSION_DEGRADED);
    assert_string_equal(st.degraded, ds.summary);
    assert_int_equal(st.feature_count, ds.feature_count);
    assert_int_equal(st.clients, 1);
    assert_true(strncmp(st.server, "perchd ", 7) == 0);
    assert_int_equal(perch_proto_client_hello(c)->pid, GetCurrentProcessId());
    perch_free(mem);

    perch_proto_option opt = {"SampleIntervalUs", "500"};
    perch_proto_record_req req = {1000, "", 1, &opt};
    perch_proto_record_rep rep;
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_RECORD, &req, &rep, sizeof rep, &mem,
                                             5000, why, sizeof why),
                     PERCH_ENOTSUP);
    assert_non_null(strstr(why, "SampleIntervalUs is a setting of the kernel session"));
    perch_proto_top_req top = {PERCH_TOP_THREADS, 0, 5, false, 0, {1000, 0, 0}};
    perch_proto_top_rep trep;
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_TOP, &top, &trep, sizeof trep, &mem, 5000,
                                             why, sizeof why),
                     PERCH_ENOTSUP);
    assert_non_null(strstr(why, "live queries are not available"));
    perch_proto_client_close(c);

    /* A second perchd pipe on the same name is a squatter's situation: refused, named. */
    char mine[40];
    assert_int_equal(perch_pipe_daemon_start(d, NULL, name, &second, why, sizeof why),
                     PERCH_EEXIST);
    snprintf(mine, sizeof mine, "pid %lu", (unsigned long)GetCurrentProcessId());
    assert_non_null(strstr(why, mine));

    stop_daemon(d, p);
}

static int as_read_only(HANDLE pipe, uint8_t *role)
{
    (void)pipe;
    *role = PERCH_ROLE_READ; /* as for a Performance Log User */
    return 0;
}

static int snapshot_of(perch_proto_client *c, char *why, size_t why_len)
{
    perch_proto_snapshot_req req = {1000};
    perch_proto_stream_rep hdr;
    perch_output out;
    perch_memory_out mem;
    void *hmem = NULL;
    size_t len;
    perch_output_memory(&out, &mem, 1u << 20);
    int err = perch_proto_client_stream(c, PERCH_MSG_SNAPSHOT, &req, &hdr, &hmem, &out, NULL, NULL,
                                        5000, why, why_len);
    perch_free(perch_output_memory_take(&mem, &len));
    perch_free(hmem);
    return err;
}

/* Read-only clients take one snapshot at a time among them, 5 s after the last one ended (a
 * snapshot holds the lock RECORD and STOP wait for); an administrator's are not held back.
 * This daemon has no engine, so each snapshot fails on its own: the turn is taken anyway. */
static void test_reader_snapshots_are_paced(void **state)
{
    (void)state;
    perch_daemon *d;
    perch_pipe_daemon *p;
    char name[96], why[400];
    start_daemon("pace", &d, &p, name, sizeof name);
    perch__pipe_os saved = perch__pipe_os_hooks;
    perch__pipe_os_hooks.client_role = as_read_only;
    perch_proto_client *reader = connect_to(name);
    perch__pipe_os_hooks = saved;
    assert_int_equal(perch_proto_client_hello(reader)->role, PERCH_ROLE_READ);
    int first = snapshot_of(reader, why, sizeof why);
    assert_true(first < 0 && first != PERCH_EBUSY); /* no engine here */
    assert_int_equal(snapshot_of(reader, why, sizeof why), PERCH_EBUSY);
    if (strstr(why, "clients that may only read take one snapshot every 5 s among them; try "
                    "again in ") == NULL)
        fail_msg("the refusal says: %s", why);
    perch_proto_client *admin = connect_to(name);
    assert_int_equal(perch_proto_client_hello(admin)->role, PERCH_ROLE_ADMIN);
    for (int i = 0; i < 2; i++) /* not held back */
        assert_int_equal(snapshot_of(admin, why, sizeof why), first);
    perch_proto_client_close(admin);
    perch_proto_client_close(reader);
    stop_daemon(d, p);
}

/* The whole file at path, NUL-terminated (malloc'ed). */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *text = malloc((size_t)n + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
    text[n] = '\0';
    fclose(f);
    return text;
}

static int count_of(const char *text, const char *what)
{
    int n = 0;
    for (const char *p = strstr(text, what); p != NULL; p = strstr(p + 1, what))
        n++;
    return n;
}

/* 70 connections that send garbage and hang up after their ERROR, as a user who may only read
 * could loop them: perchd logs 60 of their drops, then one notice, and counts the rest; an
 * administrator's refused RECORD after them is still logged. Without the budget every drop
 * was a line, and a loop of them rotated the log's older lines out. */
static void test_untrusted_lines_within_budget(void **state)
{
    (void)state;
    perch_daemon *d;
    perch_pipe_daemon *p;
    char name[96], why[400], log_path[MAX_PATH];
    start_daemon("budget", &d, &p, name, sizeof name);
    uint8_t garbage[100], buf[4096];
    perch_proto_header hdr;
    memset(garbage, 'Z', sizeof garbage);
    for (int i = 0; i < 70; i++) {
        HANDLE h = raw_open(name);
        raw_write(h, garbage, sizeof garbage);
        assert_true(raw_frame(h, &hdr, buf, sizeof buf));
        assert_int_equal(hdr.type, PERCH_MSG_ERROR);
        CloseHandle(h);
    }
    perch_proto_client *c = connect_to(name);
    perch_proto_option opt = {"SampleIntervalUs", "500"};
    perch_proto_record_req req = {1000, "", 1, &opt};
    perch_proto_record_rep rep;
    void *mem = NULL;
    assert_int_equal(perch_proto_client_call(c, PERCH_MSG_RECORD, &req, &rep, sizeof rep, &mem,
                                             5000, why, sizeof why),
                     PERCH_ENOTSUP);
    perch_proto_client_close(c);
    perch_log_file_path(log_path, sizeof log_path);
    stop_daemon(d, p); /* the pipe's I/O thread writes the drops' lines: all in by now */
    char *whole = slurp(log_path), *log = whole; /* from this run's start (Wine reuses pids) */
    for (char *at = strstr(log, "is starting in a console"); at != NULL;
         at = strstr(at + 1, "is starting in a console"))
        log = at;
    assert_int_equal(count_of(log, "disconnected by perchd: sent a frame that ends the connection"),
                     60);
    assert_int_equal(count_of(log, "Pipe clients that are not administrators caused 60 log lines "
                                   "within a minute"),
                     1);
    const char *notice = strstr(log, "Pipe clients that are not administrators");
    const char *record = strstr(log, "RECORD");
    assert_non_null(record);
    assert_true(strstr(notice, "refused: ") != NULL); /* the administrator's, after the notice */
    free(whole);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_daemon_behind_the_pipe),
        cmocka_unit_test(test_untrusted_lines_within_budget),
        cmocka_unit_test(test_reader_snapshots_are_paced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
