perch_add_fuzzer(sym_pdb ${PERCH_SYM_FIXTURES}/i686)
