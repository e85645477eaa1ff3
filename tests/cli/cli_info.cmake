# perch info: golden tests over capture files that a small helper (capture_sample, built from
# the synthetic streams of tests/unit/capture_synth.h) writes in a fixture before the tests.
add_executable(capture_sample ${CMAKE_CURRENT_SOURCE_DIR}/capture_sample.c)
target_link_libraries(capture_sample PRIVATE perch_platform)
target_include_directories(capture_sample PRIVATE ${PROJECT_SOURCE_DIR}/tests/unit)

set(cap_dir ${CMAKE_CURRENT_BINARY_DIR}/captures)
file(MAKE_DIRECTORY ${cap_dir})
add_test(NAME cli.info_setup COMMAND capture_sample ${cap_dir})
set_tests_properties(cli.info_setup PROPERTIES FIXTURES_SETUP perch_captures LABELS cli)

# perch_info_test(name regex args...): a perch_cli_test that needs the capture files.
function(perch_info_test name regex)
    perch_cli_test(${name} "${regex}" ${ARGN})
    set_tests_properties(cli.${name} PROPERTIES FIXTURES_REQUIRED perch_captures)
endfunction()

perch_info_test(info_format "format: +version 2, header 64 bytes, required features 0x0"
                info ${cap_dir}/sample.perch)
perch_info_test(info_trace "source synth[\r\n]+ +os build 4294967295, 0 cpus, pointer size 8"
                info ${cap_dir}/sample.perch)
perch_info_test(info_counters "counters: TotalCycles InstructionRetired +LLCMisses"
                info ${cap_dir}/sample.perch)
perch_info_test(info_counts
                "sample +44 +1 .*[\r\n]lbr +2 +1 .*[\r\n]ledger +3 +1 .*[\r\n]stat +3 +1 "
                info ${cap_dir}/sample.perch)
perch_info_test(info_complete "read: +complete, end chunk ends at offset"
                info ${cap_dir}/sample.perch)
perch_info_test(info_chunks "offset +type +payload +records[\r\n]+64 +strings"
                info --chunks ${cap_dir}/random.perch)
perch_info_test(info_json
                "\"format\":{\"version\":2,\"header_size\":64,.*\"sample\":{\"records\":44,.*\"read\":{\"complete\":true,\"stop\":\"end\""
                info --json ${cap_dir}/sample.perch)
perch_info_test(info_empty "total +0 +1 +12[\r\n]" info ${cap_dir}/empty.perch)
perch_info_test(info_truncated "read: +stopped \\(truncated\\) at offset [0-9]+: stat chunk at offset"
                info ${cap_dir}/cut.perch)
perch_info_test(info_truncated_json "\"complete\":false,\"stop\":\"truncated\",\"error\":\"ETRUNC\""
                info --json ${cap_dir}/cut.perch)
perch_info_test(info_not_capture "perch: info: .*not-a-capture.bin: not a Perch capture \\(bad magic\\)"
                info ${cap_dir}/not-a-capture.bin)
perch_info_test(info_not_capture_hint "info describes captures; for an .etl trace, 'perch report \".*not-a-capture.bin\"' reads it"
                info ${cap_dir}/not-a-capture.bin)
perch_cli_test(info_missing "perch: info: no-such-file.perch: no such file" info no-such-file.perch)
perch_cli_test(info_usage "Usage: perch info \\[--json\\] \\[--chunks\\] FILE.perch" info)
# the failing cases must also fail: exit status checked with WILL_FAIL on a bare run
add_test(NAME cli.info_truncated_status COMMAND perch info ${cap_dir}/cut.perch)
set_tests_properties(cli.info_truncated_status PROPERTIES WILL_FAIL TRUE LABELS cli
                     FIXTURES_REQUIRED perch_captures)
add_test(NAME cli.info_complete_status COMMAND perch info ${cap_dir}/sample.perch)
set_tests_properties(cli.info_complete_status PROPERTIES LABELS cli FIXTURES_REQUIRED perch_captures)
# perch export names the file it wrote, its size and what opens it, on a terminal (`script`
# gives it one; Linux only), and prints nothing else when stdout is not one, not even with
# -o /dev/stdout, where the line would land inside the export.
find_program(SCRIPT_PROGRAM script)
if(SCRIPT_PROGRAM AND NOT CMAKE_CROSSCOMPILING)
    add_test(NAME cli.export_says_written
             COMMAND ${SCRIPT_PROGRAM} -qec
                     "$<TARGET_FILE:perch> export -f folded ${cap_dir}/random.perch -o ${cap_dir}/random.folded"
                     /dev/null)
    set_tests_properties(cli.export_says_written PROPERTIES
        PASS_REGULAR_EXPRESSION "wrote .*random.folded \\(folded, [0-9.]+ (bytes|KiB|MiB)\\): open it with flamegraph.pl"
        FIXTURES_REQUIRED perch_captures LABELS cli)
endif()
if(NOT CMAKE_CROSSCOMPILING)
    # the output is folded stacks alone: it ends with a count (a sanitizer preset replaces
    # FAIL_REGULAR_EXPRESSION, so the pass expression checks it too)
    perch_info_test(export_stdout_alone "^[^\n]+ [0-9]+\n.* [0-9]+\n$"
                    export -f folded ${cap_dir}/random.perch -o /dev/stdout)
    set_tests_properties(cli.export_stdout_alone PROPERTIES FAIL_REGULAR_EXPRESSION "wrote ")
endif()
