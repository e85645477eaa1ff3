/*
 * Tests for perchd's console echo (src/win/log_echo.c and its use in src/win/log.c), run under
 * Wine: the console is played by an anonymous pipe that the test reads, or leaves unread to
 * stand for a console paused by a selection. Checks that a line never waits for the console,
 * that the lines dropped while it is stuck are counted and announced exactly where they were
 * dropped, that closing the log waits for the last lines but not for a stuck console, that a
 * thread left behind is taken on again by the next start, and that a process whose console is
 * stuck still exits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <windows.h>
#include <fcntl.h>
#include <io.h>

#include "log.h"
#include "log_echo.h"
#include "perchd_harness.h"

#define READ_MAX (4u << 20)

/* A pipe standing for the console: perchd writes through `out`; `reader` (once started)
 * collects everything into text until the write end is closed. */
struct console {
    HANDLE rd;
    FILE *out;
    HANDLE reader;
    char *text;
    volatile LONG len;
};

static void console_open(struct console *c)
{
    HANDLE wr;
    memset(c, 0, sizeof *c);
    assert_true(CreatePipe(&c->rd, &wr, NULL, 4096));
    int fd = _open_osfhandle((intptr_t)wr, _O_WRONLY | _O_BINARY);
    assert_true(fd >= 0);
    c->out = _fdopen(fd, "wb");
    assert_non_null(c->out);
    c->text = calloc(1, READ_MAX + 1);
    assert_non_null(c->text);
}

static DWORD WINAPI reader_main(LPVOID arg)
{
    struct console *c = arg;
    DWORD n;
    size_t len = 0;
    while (len < READ_MAX && ReadFile(c->rd, c->text + len, READ_MAX - (DWORD)len, &n, NULL) &&
           n > 0) {
        len += n;
        InterlockedExchange(&c->len, (LONG)len); /* the bytes before the length */
    }
    return 0;
}

/* True when what c has shown so far contains s. */
static bool console_shows(struct console *c, const char *s)
{
    LONG len = InterlockedCompareExchange(&c->len, 0, 0);
    char *copy = malloc((size_t)len + 1);
    assert_non_null(copy);
    memcpy(copy, c->text, (size_t)len);
    copy[len] = '\0';
    bool found = strstr(copy, s) != NULL;
    free(copy);
    return found;
}

/* Waits until a or b (NULL: only a) has shown s. */
static void console_wait_for(struct console *a, struct console *b, const char *s)
{
    for (int i = 0; i < 1000; i++) {
        if (console_shows(a, s) || (b != NULL && console_shows(b, s)))
            return;
        Sleep(10);
    }
    fail_msg("the console never showed '%s' (%ld bytes shown)", s, (long)a->len);
}

/* Starts taking the console's output (the selection ends). */
static void console_read(struct console *c)
{
    c->reader = CreateThread(NULL, 0, reader_main, c, 0, NULL);
    assert_non_null(c->reader);
}

/* Closes the write end and waits for everything written to be read. The echo thread must
 * be done with the stream (perch__log_echo_stop returned with it joined). */
static void console_close(struct console *c)
{
    if (c->reader == NULL)
        console_read(c);
    fclose(c->out);
    assert_int_equal(WaitForSingleObject(c->reader, 10000), WAIT_OBJECT_0);
    CloseHandle(c->reader);
    CloseHandle(c->rd);
    c->text[c->len] = '\0';
}

static void console_free(struct console *c)
{
    free(c->text);
}

static ULONGLONG ms_since(ULONGLONG t0)
{
    return GetTickCount64() - t0;
}

/* Puts numbered lines into an echo nobody reads until `extra` lines after the first dropped
 * one; returns how many were queued. No put may wait for the console. */
static unsigned fill_until_dropped(unsigned extra, uint64_t dropped_before)
{
    char line[96];
    unsigned queued = 0, after = 0;
    ULONGLONG t0 = GetTickCount64();
    for (unsigned i = 0; i < 400000 && after <= extra; i++) {
        int n = snprintf(line, sizeof line, "line %06u of the echo, padded to make it longer\n", i);
        perch__log_echo_put(line, (size_t)n);
        if (perch__log_echo_dropped() > dropped_before)
            after++;
        else
            queued++;
    }
    assert_true(after > extra); /* the pipe and the queue filled up */
    /* 0.1 ms a line would be 40 s for the whole loop: a put that waited shows */
    assert_true(ms_since(t0) < 5000);
    return queued;
}

/* Checks text: lines 0..queued-1 in order, then the notice for `lost`, then `rest`. */
static void check_lines(const char *text, unsigned queued, uint64_t lost, const char *rest)
{
    char want[96], notice[64];
    const char *p = text;
    for (unsigned i = 0; i < queued; i++) {
        int n = snprintf(want, sizeof want, "line %06u of the echo, padded to make it longer\n", i);
        if (strncmp(p, want, (size_t)n) != 0)
            fail_msg("line %u is not where it should be: '%.60s'", i, p);
        p += n;
    }
    snprintf(notice, sizeof notice, "perchd: warning: %llu log line%s not shown here",
             (unsigned long long)lost, lost == 1 ? " was" : "s were");
    if (strncmp(p, notice, strlen(notice)) != 0)
        fail_msg("no notice of %llu dropped lines after line %u: '%.120s'",
                 (unsigned long long)lost, queued, p);
    p = strchr(p, '\n');
    assert_non_null(p);
    assert_string_equal(p + 1, rest);
}

static void test_dropped_lines_are_announced_in_place(void **state)
{
    struct console c;
    uint64_t before = perch__log_echo_dropped();
    (void)state;
    console_open(&c);
    perch__log_echo_start(c.out);
    unsigned queued = fill_until_dropped(9, before);
    /* A line short enough for the room left is dropped too: shown, it would come out before
     * the notice of the lines dropped ahead of it. */
    perch__log_echo_put("short\n", 6);
    uint64_t lost = perch__log_echo_dropped() - before;
    assert_int_equal(lost, 11);
    console_read(&c);
    console_wait_for(&c, NULL, "log lines were not shown here"); /* the thread took the queue */
    perch__log_echo_put("after the selection\n", 20);
    assert_true(perch__log_echo_stop(10000));
    perch__log_echo_put("after the stop\n", 15); /* nowhere to go: not written, not counted */
    assert_int_equal(perch__log_echo_dropped() - before, lost);
    console_close(&c);
    check_lines(c.text, queued, lost, "after the selection\n");
    console_free(&c);
}

static void test_stop_leaves_a_stuck_console_behind(void **state)
{
    struct console stuck, next;
    uint64_t before = perch__log_echo_dropped();
    (void)state;
    console_open(&stuck);
    perch__log_echo_start(stuck.out);
    unsigned queued = fill_until_dropped(0, before);
    ULONGLONG t0 = GetTickCount64();
    assert_false(perch__log_echo_stop(300)); /* left behind, waiting in its write */
    ULONGLONG took = ms_since(t0);
    assert_true(took >= 250 && took < 3000);
    /* The thread still waits in its write; the next start takes it on, and it writes to the
     * new console from its next take (which lines were in the take it was writing depends on
     * when it woke: below, only the order of all of them is checked). */
    console_open(&next);
    console_read(&next);
    perch__log_echo_start(next.out);
    console_read(&stuck); /* the old selection ends: the thread finishes its write */
    console_wait_for(&stuck, &next, "log line was not shown here");
    perch__log_echo_put("to the new console\n", 19);
    assert_true(perch__log_echo_stop(10000));
    console_close(&next);
    console_close(&stuck);
    /* Nothing lost or repeated: the old console, then the new one, hold every queued line in
     * order, the notice of the one dropped line, and the line put after. */
    assert_true(strncmp(stuck.text, "line 000000 of the echo", 23) == 0);
    assert_null(strstr(stuck.text, "to the new console"));
    size_t a = strlen(stuck.text), b = strlen(next.text);
    char *both = malloc(a + b + 1);
    assert_non_null(both);
    memcpy(both, stuck.text, a);
    memcpy(both + a, next.text, b + 1);
    check_lines(both, queued, 1, "to the new console\n");
    free(both);
    console_free(&stuck);
    console_free(&next);
}

static void test_log_lines_never_wait_for_the_console(void **state)
{
    struct console c;
    perch_log_options o = {0};
    uint64_t before = perch__log_echo_dropped();
    (void)state;
    console_open(&c);
    o.echo = c.out;
    assert_int_equal(perch_log_open(&o), 0);
    ULONGLONG t0 = GetTickCount64();
    for (unsigned i = 0; i < 4000; i++)
        perch_log(PERCH_LOG_INFO, "A line of the log, number %u, long enough to fill a pipe.", i);
    perch_log(PERCH_LOG_WARNING, "The last line.");
    assert_true(ms_since(t0) < 5000);
    assert_true(perch__log_echo_dropped() > before);
    t0 = GetTickCount64();
    perch_log_close(); /* waits for the console a while, not for ever */
    assert_true(ms_since(t0) < 5000);
    console_read(&c);            /* the selection ends: what was queued comes out */
    assert_true(perch__log_echo_stop(10000)); /* and the thread left behind ends */
    console_close(&c);
    assert_true(strncmp(c.text, "perchd: A line of the log, number 0, long", 41) == 0);
    assert_non_null(strstr(c.text, "log lines were not shown here"));
    console_free(&c);
}

static void test_log_echo_format(void **state)
{
    struct console c;
    perch_log_options o = {0};
    (void)state;
    console_open(&c);
    console_read(&c);
    o.echo = c.out;
    assert_int_equal(perch_log_open(&o), 0);
    perch_log(PERCH_LOG_INFO, "perchd %s is starting.", "1.2.3");
    perch_log(PERCH_LOG_WARNING, "Degraded: %d feature.", 1);
    perch_log(PERCH_LOG_ERROR, "It failed.");
    perch_log_close();
    perch_log(PERCH_LOG_INFO, "Closed: not echoed.");
    console_close(&c);
    assert_string_equal(c.text, "perchd: perchd 1.2.3 is starting.\r\n"
                                "perchd: warning: Degraded: 1 feature.\r\n"
                                "perchd: error: It failed.\r\n");
    console_free(&c);
}

/* The child of test_exit_with_a_stuck_console: logs into its stderr, a pipe its parent does
 * not read, closes the log and returns from main. */
static int stuck_echo_child(void)
{
    perch_log_options o = {0};
    o.echo = stderr;
    perch_log_open(&o);
    for (unsigned i = 0; i < 3000; i++)
        perch_log(PERCH_LOG_INFO, "A line of the log, number %u, long enough to fill a pipe.", i);
    perch_log_close();
    return 0;
}

/* perchd's stop returns while its console is stuck, and the process then exits: the thread
 * left behind holds no C library lock that the exit's flush of stderr would wait for. */
static void test_exit_with_a_stuck_console(void **state)
{
    char self[MAX_PATH], cmd[MAX_PATH + 64];
    SECURITY_ATTRIBUTES sa = {sizeof sa, NULL, TRUE};
    HANDLE rd, wr;
    STARTUPINFOA si;
    PROCESS_INFORMATION pi;
    (void)state;
    assert_true(GetModuleFileNameA(NULL, self, sizeof self) > 0);
    snprintf(cmd, sizeof cmd, "\"%s\" --stuck-echo-child", self);
    assert_true(CreatePipe(&rd, &wr, &sa, 4096));
    SetHandleInformation(rd, HANDLE_FLAG_INHERIT, 0);
    harness_startup_info(&si, wr);
    assert_true(win_spawn(cmd, TRUE, 0, &si, &pi));
    CloseHandle(wr);
    /* the close waits 2 s for the console; then the exit must not wait for it */
    DWORD waited = WaitForSingleObject(pi.hProcess, 15000);
    if (waited != WAIT_OBJECT_0)
        TerminateProcess(pi.hProcess, 1);
    CloseHandle(rd); /* the selection ends only now */
    WaitForSingleObject(pi.hProcess, 10000);
    DWORD code = 99;
    GetExitCodeProcess(pi.hProcess, &code);
    CloseHandle(pi.hProcess);
    CloseHandle(pi.hThread);
    assert_int_equal(waited, WAIT_OBJECT_0);
    assert_int_equal(code, 0);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--stuck-echo-child") == 0)
        return stuck_echo_child();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_log_echo_format),
        cmocka_unit_test(test_dropped_lines_are_announced_in_place),
        cmocka_unit_test(test_stop_leaves_a_stuck_console_behind),
        cmocka_unit_test(test_log_lines_never_wait_for_the_console),
        cmocka_unit_test(test_exit_with_a_stuck_console),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
