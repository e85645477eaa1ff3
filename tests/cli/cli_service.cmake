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
