# The commands that talk to perchd: on a system without perchd they say so in a sentence
# and name what to use instead; under Wine with no perchd running they say that it is not
# installed or not running. (tests/win/test_pipe_cli.c runs every one of them against a real
# pipe.)
foreach(cmd status record stop captures top watch)
    if(WIN32)
        # not installed in this Wine prefix, or installed and stopped by a perchd test
        perch_cli_test(service_${cmd}_not_running
                       "perch ${cmd}: (the Perch service is not installed|perchd is not running)"
                       ${cmd})
        # perchd's own tests serve \\.\pipe\perch in the same Wine prefix: not at the same time.
        set_tests_properties(cli.service_${cmd}_not_running PROPERTIES RESOURCE_LOCK perchd)
    else()
        perch_cli_test(service_${cmd}_not_here
                       "talks to perchd, the Perch service on Windows.*perch report FILE.perch"
                       ${cmd})
    endif()
endforeach()
perch_cli_test(service_fetch_usage "Usage: perch fetch NAME -o FILE" fetch)
perch_cli_test(service_help_exit_codes "6 perchd is\n?.*not running, 7 access denied" --help)
# A bad or missing option value is named with what the option takes, before any connection
# (so the same on every system), instead of "bad or unknown argument".
perch_cli_test(service_top_bad_by "perch top: --by takes cpu or samples, not 'bogus'" top --by bogus)
perch_cli_test(service_top_zero_window "perch top: --window takes a duration above 0.*not '0s'"
               top --window 0s)
perch_cli_test(service_top_limit_missing "perch top: --limit takes a number of rows" top --limit)
perch_cli_test(service_watch_bad_top "perch watch: --top takes a number of threads up to 50, not '99'"
               watch --top 99)
perch_cli_test(service_snapshot_zero_last "perch snapshot: --last takes a duration above 0.*not '0s'"
               snapshot --last 0s -o x.perch)
perch_cli_test(service_snapshot_needs_o "perch snapshot: -o FILE .* is required" snapshot)
perch_cli_test(service_fetch_needs_o "perch fetch: -o FILE .* is required" fetch x.perch)
perch_cli_test(service_fetch_o_value "perch fetch: -o takes a file name" fetch x.perch -o)
perch_cli_test(service_record_duration_value "perch record: --duration takes a duration" record
               --duration)
