perch_add_fuzzer(etl ${PERCH_DATA_DIR}/etl)
