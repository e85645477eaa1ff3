perch_add_fuzzer(capture ${CMAKE_CURRENT_SOURCE_DIR}/seeds/capture)
