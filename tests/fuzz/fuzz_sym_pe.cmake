perch_add_fuzzer(sym_pe ${PERCH_SYM_FIXTURES}/x86_64)
