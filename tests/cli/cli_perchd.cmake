# perchd (Windows builds only, run under Wine): the commands that need no service. The service
# itself (install, start, stop, uninstall, console runs) is tested by tests/win/test_perchd_*.c.
if(TARGET perchd)
    function(perchd_cli_test name regex)
        add_test(NAME cli.perchd_${name} COMMAND perchd ${ARGN})
        set_tests_properties(cli.perchd_${name} PROPERTIES LABELS cli
                             PASS_REGULAR_EXPRESSION "${regex}" RESOURCE_LOCK perchd)
    endfunction()
    add_test(NAME cli.perchd_version COMMAND perchd --version)
    set_tests_properties(cli.perchd_version PROPERTIES LABELS cli
                         PASS_REGULAR_EXPRESSION "^perchd ${PROJECT_VERSION}\r?\n$")
    perchd_cli_test(help "Usage: perchd <command>.*install.*uninstall.*config.*run.*status" --help)
    perchd_cli_test(run_help "Ctrl\\+Break writes a snapshot.*--set KEY=VALUE" run --help)
    perchd_cli_test(config_help "HKLM.*Services.Perch.Parameters" config --help)
    perchd_cli_test(unknown_command "unknown command 'frobnicate'" frobnicate)
    perchd_cli_test(config_show_default "^1000\r?\n$" config show SampleIntervalUs)
    perchd_cli_test(config_show_all "SampleIntervalUs +[0-9]+.*125 to 1000000 microseconds"
                    config show)
    perchd_cli_test(run_refuses_bad_set
                    "refused: SampleIntervalUs: '5' is out of range; allowed: 125 to 1000000"
                    run --set SampleIntervalUs=5)
    perchd_cli_test(service_by_hand "not started by the service control manager" service)
    # exit codes: usage errors are 2, never 0
    foreach(args "frobnicate" "run;--duration;abc" "config;set;Frobnicate;1" "install;--bogus")
        string(REPLACE ";" "_" id "${args}")
        add_test(NAME cli.perchd_usage_exit_${id} COMMAND perchd ${args})
        set_tests_properties(cli.perchd_usage_exit_${id} PROPERTIES LABELS cli WILL_FAIL TRUE
                             RESOURCE_LOCK perchd)
    endforeach()
endif()
