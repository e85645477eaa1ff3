perch_add_fuzzer(config ${CMAKE_CURRENT_SOURCE_DIR}/seeds/config)
