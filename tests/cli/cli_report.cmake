# perch report: the JSON figures of the real traces equal the reference (model.json), the text
# summary names what a Windows user expects (Idle and ntoskrnl.exe on top), and bad input or
# options give a clear error.
set(ETL ${PERCH_DATA_DIR}/etl)

perch_cli_test(report_help "Usage: perch report \\[--json \\| --html OUT.html\\] \\[--top N\\]" report --help)
perch_cli_test(report_html_needs_file "--html needs an output file" report --html)
perch_cli_test(report_html_and_json "--json and --html: choose one" report --json --html x.html x.etl)

perch_cli_test(report_json_x64
    "\"frames_total\":126601,.*\"pdb_ids\":677,.*\"samples\":79528,\"samples_with_stack\":6318,.*\"stack_hash\":\"7afd94324e48d39a\",.*\"stacks_kernel_only\":304,\"stacks_merged\":458,\"stacks_user_only\":5556,.*\"top_modules\":\\[{\"name\":\"ntoskrnl.exe\",\"samples\":73096},{\"name\":\"\\?\",\"samples\":4678},{\"name\":\"hal.dll\",\"samples\":707}.*\"top_processes\":\\[{\"name\":\"Idle\",\"pid\":0,\"samples\":73313},{\"name\":\"Test.x64.exe\",\"pid\":3676"
    report --json ${ETL}/perfview_net.4.5.2.x64.etl)

perch_cli_test(report_json_airbus
    "\"build\":18362,.*\"samples\":0,.*\"stack_hash\":\"e3b0c44298fc1c14\""
    report --json ${ETL}/airbus_ShutdownPerfDiagLogger.etl)

perch_cli_test(report_text_x64
    "Samples: 79528 timer \\(6318 with a stack: 458 kernel\\+user, 304 kernel only, 5556 user only\\).*Processes \\(top 3 by samples\\).* 0 Idle +73313.*Modules.*ntoskrnl.exe +73096.*Top stacks.*Ledger.*sample.no_stack +73210"
    report --top 3 ${ETL}/perfview_net.4.5.2.x64.etl)

perch_cli_test(report_not_etl "perch report: .*not an .etl file" report ${PERCH_DATA_DIR}/README.md)
perch_cli_test(report_bad_top "--top needs a number" report --top 0 x.etl)
perch_cli_test(report_missing "perch: .*no such file" report /nonexistent.etl)

# A trace without context switches estimates CPU time from its samples and says so: the x64
# trace logged a 1 ms timer interval, so Test.x64.exe's 5129 samples are 5129 ms, marked "est.".
perch_cli_test(report_text_cpu_estimate
    "no context switches: CPU time estimated as timer samples x 1.0000 ms, the sample interval the trace logged.*pid name +samples +est. cpu ms.* 3676 Test.x64.exe +5129 +5129.000.*tid +process +thread +samples +est. cpu ms"
    report --top 3 ${ETL}/perfview_net.4.5.2.x64.etl)
# A synthetic trace has context switches: the column is measured, not estimated.
set(cpu_perch "$<TARGET_FILE:perch>")
if(CMAKE_CROSSCOMPILING_EMULATOR)
    set(cpu_perch "${PERCH_WINE_RUN} $<TARGET_FILE:perch>")
endif()
add_test(NAME cli.report_text_cpu_measured
         COMMAND ${CMAKE_COMMAND} "-DPERCH=${cpu_perch}"
                 -DETL=${CMAKE_CURRENT_BINARY_DIR}/cpu_measured.etl
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/report_cpu_measured.cmake)
set_tests_properties(cli.report_text_cpu_measured PROPERTIES LABELS cli
                     PASS_REGULAR_EXPRESSION "cpu column measured")
# --from/--to: a window of the trace (report_window.cmake).
add_test(NAME cli.report_window
         COMMAND ${CMAKE_COMMAND} "-DPERCH=${cpu_perch}" -DDIR=${CMAKE_CURRENT_BINARY_DIR}/window
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/report_window.cmake)
set_tests_properties(cli.report_window PROPERTIES LABELS cli PASS_REGULAR_EXPRESSION "report window ok")
perch_cli_test(report_bad_from "--from needs a time from the trace's start" report --from soon x.etl)
perch_cli_test(report_window_order "--from must come before --to" report --from 2s --to 1s x.etl)
