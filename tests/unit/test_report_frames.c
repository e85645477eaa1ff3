/*
 * The text report names stack frames by module: kernel addresses among the kernel modules,
 * others among the modules of the stack's thread's process entity (its process key, so a
 * reused pid does not borrow the modules of an earlier process), and when several ranges
 * contain the address the highest base wins, then the smallest size, then the name (M5).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "perch/report.h"

static void module(perch_sink *s, uint64_t key, uint64_t pkey, uint64_t base, uint64_t size,
                   const char *path)
{
    perch_module_rec m;
    memset(&m, 0, sizeof m);
    m.key = key;
    m.process_key = pkey;
    m.pid = pkey ? 100 : 0;
    m.base = base;
    m.size = size;
    m.path = path;
    m.pdb_name = "";
    assert_int_equal(s->module(s->ctx, &m), 0);
}

static void test_frame_modules(void **state)
{
    perch_report *r = NULL;
    perch_sink s;
    perch_trace_info info;
    (void)state;
    memset(&info, 0, sizeof info);
    info.source = "t";
    info.pointer_size = 8;
    info.perf_freq = 10000000;
    assert_int_equal(perch_report_create(NULL, &r), 0);
    perch_report_sink(r, &s);
    assert_int_equal(s.trace_info(s.ctx, &info), 0);
    perch_process_rec p1 = {1, 100, 4, 1, 0, 0, 0, 50, "old.exe", ""};
    perch_process_rec p2 = {2, 100, 4, 1, 0, 0, 60, 0, "new.exe", ""};
    assert_int_equal(s.process(s.ctx, &p1), 0);
    assert_int_equal(s.process(s.ctx, &p2), 0);
    perch_thread_rec t = {10, 2, 8, 100, 0, 60, 0, ""};
    assert_int_equal(s.thread(s.ctx, &t), 0);
    module(&s, 20, 1, 0x10000, 0x1000, "C:\\old.dll");   /* same pid, earlier process */
    module(&s, 21, 2, 0x10000, 0x2000, "C:\\wide.dll");  /* same base, larger */
    module(&s, 22, 2, 0x10000, 0x1000, "C:\\tight.dll"); /* same base, smaller: wins */
    module(&s, 23, 0, 0xfffff80000000000ull, 0x100000, "C:\\ntoskrnl.exe");
    uint64_t frames[] = {0xfffff80000000010ull, 0x10800};
    perch_stack_rec st = {1, 2, 1, frames};
    assert_int_equal(s.stack(s.ctx, &st), 0);
    perch_sample_rec sm;
    memset(&sm, 0, sizeof sm);
    sm.thread_key = 10;
    sm.tid = 8;
    sm.kind = PERCH_SAMPLE_TIMER;
    sm.ip = frames[0];
    sm.module_key = 23;
    sm.stack_id = 1;
    sm.count = 1;
    assert_int_equal(s.sample(s.ctx, &sm), 0);
    char text[8192];
    memset(text, 0, sizeof text);
    /* A named file in the working directory: tmpfile() needs a writable drive root on Windows. */
    FILE *f = fopen("test_report_frames.txt", "w+");
    assert_non_null(f);
    assert_int_equal(perch_report_write_text(r, f), 0);
    rewind(f);
    assert_true(fread(text, 1, sizeof text - 1, f) > 0);
    fclose(f);
    remove("test_report_frames.txt");
    assert_non_null(strstr(text, "ntoskrnl.exe!+0x10\n"));
    assert_non_null(strstr(text, "tight.dll!+0x800\n"));
    assert_null(strstr(text, "old.dll!+0x800"));
    perch_report_destroy(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_frame_modules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
