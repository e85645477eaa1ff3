perch_add_fuzzer(capture ${CMAKE_CURRENT_SOURCE_DIR}/seeds/capture)
# The split-walk comparison's replay, shared with test_capture_split (cmocka-free).
target_sources(fuzz_capture PRIVATE ${PROJECT_SOURCE_DIR}/tests/support/touch_replay.c)
target_include_directories(fuzz_capture PRIVATE ${PROJECT_SOURCE_DIR}/tests/support)
