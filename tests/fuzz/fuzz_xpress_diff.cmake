perch_add_fuzzer(xpress_diff ${PERCH_DATA_DIR}/etl)
