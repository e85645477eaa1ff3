# The fast and the checked XPRESS paths differ only on inputs long enough to reach the fast
# loop (over 48 bytes of output), so the short ctest run starts at full length instead of
# libFuzzer's default of growing the length slowly from a few bytes.
perch_add_fuzzer(xpress_diff ${PERCH_DATA_DIR}/etl -len_control=0)
