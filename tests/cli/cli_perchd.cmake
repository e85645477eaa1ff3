# perchd (Windows builds only, run under Wine): until the service exists it must answer
# --version and refuse to pretend it runs.
if(TARGET perchd)
    add_test(NAME cli.perchd_version COMMAND perchd --version)
    set_tests_properties(cli.perchd_version PROPERTIES LABELS cli
                         PASS_REGULAR_EXPRESSION "^perchd ${PROJECT_VERSION}\r?\n$")
    add_test(NAME cli.perchd_not_implemented COMMAND perchd)
    set_tests_properties(cli.perchd_not_implemented PROPERTIES LABELS cli WILL_FAIL TRUE)
    add_test(NAME cli.perchd_says_not_implemented COMMAND perchd)
    set_tests_properties(cli.perchd_says_not_implemented PROPERTIES LABELS cli
                         PASS_REGULAR_EXPRESSION "service is not implemented yet")
endif()
