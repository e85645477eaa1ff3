/*
 * Starting perchd_fake `run` on a trace the fake ETW replays, for the perchd tests that record
 * live (test_perchd_live_rotate.c, test_perchd_live_disk.c): the fake set to replay etl at a
 * pace (0: at full speed, N: N times its own speed) with no event lost, a pipe of this test
 * process's own (PERCH_PIPE, which perchd_fake and perch inherit), a fresh data directory with
 * its capture directory `cap`, and extra options; returns once perchd reports running.
 * Header-only.
 */
#ifndef PERCH_TEST_PERCHD_REPLAY_H
#define PERCH_TEST_PERCHD_REPLAY_H

#include <stdint.h>

#include "etw_fake.h"
#include "perchd_harness.h"

/* tag names the pipe; name the data directory (into dir, dir_len bytes); pipe (pipe_len
 * bytes) receives the pipe's name; child the perchd_fake process. */
static inline void harness_start_replay(const char *tag, const char *name, const char *etl,
                                        uint32_t pace, const char *extra, char *dir, size_t dir_len,
                                        char *pipe, size_t pipe_len, struct harness_child *child)
{
    char args[MAX_PATH * 4];
    assert_int_equal(perch_fake_etw_reset(), 0);
    assert_int_equal(perch_fake_etw_set_string("Replay", etl), 0);
    assert_int_equal(perch_fake_etw_set_dword("Pace", pace), 0);
    assert_int_equal(perch_fake_etw_set_dword("RealTimeLagMs", 600000), 0); /* none lost */
    snprintf(pipe, pipe_len, "\\\\.\\pipe\\perchd-%s-%lu", tag,
             (unsigned long)GetCurrentProcessId());
    SetEnvironmentVariableA("PERCH_PIPE", pipe); /* perchd_fake and perch inherit it */
    harness_fresh_dir(name, dir, dir_len);
    snprintf(args, sizeof args,
             "run --defaults --data-dir \"%s\" --capture-dir \"%s\\cap\" --duration 600 %s", dir,
             dir, extra);
    harness_spawn_with("PERCHD_FAKE_EXE", args, CREATE_NEW_CONSOLE, child); /* drained */
    if (!harness_wait_status(dir, "state: running", 30000)) {
        TerminateProcess(child->pi.hProcess, 1);
        fail_msg("perchd_fake run did not report running");
    }
}

#endif
