/*
 * perch export's command code (tools/perch/cmd_export.c, compiled into this test) driven with
 * the synthetic record stream injected through its input seam: option parsing, usage errors,
 * a missing input through the real seam, and a real run writing folded stacks to a file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../../tools/perch/cmd_export.c"
#include "../../tools/perch/input_kind.c"
#include "../../tools/perch/out_async.c"
#include "../../tools/perch/out_guard.c"
#include "../../tools/perch/partial.c"
#include "../../tools/perch/record_source.c"
#include "export_fixture.h"

/* main.c's helper, which the command calls on errors. */
int perch_cli_error(const char *what, int err)
{
    fprintf(stderr, "perch: %s: %s\n", what, perch_strerror(err));
    return 1;
}

static int opened;

static int open_fixture(const char *path, perch_record_source *src)
{
    if (strcmp(path, "synthetic") != 0)
        return PERCH_ENOENT;
    opened++;
    src->ctx = NULL;
    src->replay = fx_replay;
    src->close = NULL;
    return 0;
}

static int run_cmd(int argc, const char **argv)
{
    return perch_export_command(argc, (char **)argv, open_fixture);
}

static void test_usage_errors(void **state)
{
    const char *no_format[] = {"export", "synthetic"};
    const char *no_input[] = {"export", "--format", "folded"};
    const char *bad_format[] = {"export", "--format", "svg", "synthetic"};
    const char *bad_option[] = {"export", "-f", "folded", "--interval-us", "0", "synthetic"};
    const char *two_inputs[] = {"export", "-f", "folded", "a", "b"};
    const char *missing[] = {"export", "-f", "folded", "nothere"};
    const char *help[] = {"export", "--help"};
    (void)state;
    opened = 0;
    assert_int_equal(run_cmd(2, no_format), 2);
    assert_int_equal(run_cmd(3, no_input), 2);
    assert_int_equal(run_cmd(4, bad_format), 2);
    assert_int_equal(run_cmd(6, bad_option), 2);
    assert_int_equal(run_cmd(5, two_inputs), 2);
    assert_int_equal(opened, 0);
    assert_int_equal(run_cmd(4, missing), 1);
    assert_int_equal(run_cmd(2, help), 0);
}

/* Through the real seam: a missing input is "no such file", exit 1. */
static void test_real_seam(void **state)
{
    char *argv[] = {"export", "-f", "chrome", "no-such-trace.perch"};
    (void)state;
    assert_int_equal(perch_cmd_export(4, argv), 1);
}

static void test_export_to_file(void **state)
{
    const char *path = "test_export_cmd.folded.tmp";
    const char *argv[] = {
        "export", "--format=folded", "--interval-us", "250", "--folded-thread", "synthetic", "-o",
        path};
    char buf[4096];
    size_t n;
    FILE *f;
    (void)state;
    opened = 0;
    assert_int_equal(run_cmd(8, argv), 0);
    assert_int_equal(opened, 1);
    f = fopen(path, "rb");
    assert_non_null(f);
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    remove(path);
    buf[n] = 0;
    assert_non_null(strstr(buf, "thread 2001;ntdll.dll!+0x60;svc.exe!+0x300 5\n"));
    assert_int_equal(fx_count(buf, "\n"), 8); /* timer samples only */
}

static void test_two_pass_format_replays_twice(void **state)
{
    const char *path = "test_export_cmd.json.tmp";
    const char *argv[] = {"export", "-f", "chrome", "-o", path, "synthetic"};
    (void)state;
    opened = 0;
    assert_int_equal(run_cmd(6, argv), 0);
    assert_int_equal(opened, 1); /* opened once, replayed once per pass */
    remove(path);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_real_seam),
        cmocka_unit_test(test_export_to_file),
        cmocka_unit_test(test_two_pass_format_replays_twice),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
