perch_add_fuzzer(xpress ${PERCH_DATA_DIR}/etl)
