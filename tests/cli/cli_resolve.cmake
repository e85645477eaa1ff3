# perch resolve: help, usage errors, and a file that is neither an image nor a PDB. The
# answers themselves are checked against LLVM's readers in tests/fixtures/sym.
perch_cli_test(resolve_help "Usage: perch resolve \\[--symbols PATH\\].*pdb-proc, pdb-thunk, pdb-public, export"
               resolve --help)
perch_cli_test(resolve_listed "resolve +name the functions at RVAs" --help)
perch_cli_test(resolve_needs_address "a file and at least one address are needed" resolve x.pdb)
perch_cli_test(resolve_bad_address "'0xzz' is not a hexadecimal address" resolve x.pdb 0xzz)
perch_cli_test(resolve_missing "perch resolve: /nonexistent.pdb: no such file" resolve /nonexistent.pdb 0x1000)
perch_cli_test(resolve_not_pdb "perch resolve: .*README.md: not a PDB \\(no MSF 7.00 signature\\)"
               resolve ${PERCH_DATA_DIR}/README.md 0x1000)
