perch_add_fuzzer(proto ${CMAKE_CURRENT_SOURCE_DIR}/seeds/proto)
