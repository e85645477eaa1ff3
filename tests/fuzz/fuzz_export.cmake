perch_add_fuzzer(export ${CMAKE_CURRENT_SOURCE_DIR}/seeds/export)
