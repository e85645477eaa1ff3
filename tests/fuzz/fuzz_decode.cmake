perch_add_fuzzer(decode ${CMAKE_CURRENT_SOURCE_DIR}/seeds/decode)
