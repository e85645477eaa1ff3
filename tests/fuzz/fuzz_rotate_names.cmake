perch_add_fuzzer(rotate_names ${CMAKE_CURRENT_SOURCE_DIR}/seeds/rotate_names)
