# perch symbolize: help, usage errors, and inputs that are not captures. The names it adds
# are checked end to end in tests/fixtures/sym (sym_names.cmake).
perch_cli_test(symbolize_help "Usage: perch symbolize CAPTURE.perch \\[--symbols PATH\\] \\[-o OUT.perch\\]"
               symbolize --help)
perch_cli_test(symbolize_listed "symbolize +add function names to a capture" --help)
perch_cli_test(symbolize_needs_input "Usage: perch symbolize" symbolize)
perch_cli_test(symbolize_two_inputs "only one capture may be given" symbolize a.perch b.perch)
perch_cli_test(symbolize_bad_option "unknown option '--frob'" symbolize --frob a.perch)
perch_cli_test(symbolize_missing "perch: /nonexistent.perch: no such file" symbolize /nonexistent.perch)
perch_cli_test(symbolize_not_capture "perch symbolize: .*README.md: not a Perch capture"
               symbolize ${PERCH_DATA_DIR}/README.md -o /nonexistent-dir/x.perch)
