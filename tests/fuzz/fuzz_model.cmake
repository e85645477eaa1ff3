perch_add_fuzzer(model ${CMAKE_CURRENT_SOURCE_DIR}/seeds/model)
