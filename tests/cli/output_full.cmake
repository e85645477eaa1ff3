# cmake -P script behind cli.output_full (cli_output_full.cmake): perch import, export and
# report writing to a full disk (/dev/full) or past a file-size limit (bash's ulimit -f, with
# SIGXFSZ ignored so the write fails instead of killing the process).
#   -DPERCH=perch  -DDIR=work-dir
foreach(v PERCH DIR)
    if(NOT DEFINED ${v})
        message(FATAL_ERROR "output_full.cmake: -D${v}= is required")
    endif()
endforeach()
file(MAKE_DIRECTORY ${DIR})

function(must_run)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "${ARGN} failed (${rc}): ${err}")
    endif()
endfunction()

# expect_failure(<stderr regex> command...): exit 1 and exactly one stderr line matching.
function(expect_failure regex)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
    string(REGEX REPLACE "[^\n]" "" newlines "${err}")
    string(LENGTH "${newlines}" n)
    if(NOT rc EQUAL 1 OR NOT n EQUAL 1 OR NOT err MATCHES "${regex}")
        message(FATAL_ERROR "${ARGN}: exit ${rc} (want 1), ${n} stderr lines (want one "
                            "matching '${regex}'):\n${err}")
    endif()
endfunction()

set(etl ${DIR}/f.etl)
must_run(${PERCH} synth -o ${etl} --seed 5 --cpus 2 --size 2M)
must_run(${PERCH} import ${etl} -o ${DIR}/f.perch)

# Full disk: the output is named with the reason, once; the input is not blamed.
foreach(in ${etl} ${DIR}/f.perch)
    expect_failure("^perch: /dev/full: no space left on device\n$"
                   ${PERCH} export --format folded ${in} -o /dev/full)
    expect_failure("^perch: /dev/full: no space left on device\n$"
                   ${PERCH} export --format chrome ${in} -o /dev/full)
    expect_failure("^perch: standard output: no space left on device\n$"
                   ${PERCH} report --json ${in} OUTPUT_FILE /dev/full)
endforeach()
# execute_process takes OUTPUT_FILE as its own option anywhere in the list: the reports
# above wrote to /dev/full. The text report, info, dump and an export to standard output too:
foreach(cmd "report;${etl}" "info;${DIR}/f.perch" "info;--json;${DIR}/f.perch"
            "dump;--summary;${etl}" "export;--format;folded;${DIR}/f.perch")
    expect_failure("^perch: standard output: no space left on device\n$"
                   ${PERCH} ${cmd} OUTPUT_FILE /dev/full)
endforeach()

# A file-size limit (bash's ulimit -f counts 1024-byte blocks) stops the import half way:
# the output is named (first line), it is said to be incomplete, and what was written reads
# as a partial capture (exit 3) that still names its processes.
file(SIZE ${DIR}/f.perch full)
math(EXPR blocks "${full} / 2 / 1024")
set(cut ${DIR}/cut.perch)
file(REMOVE ${cut})
execute_process(COMMAND bash -c "trap '' XFSZ; ulimit -f ${blocks}; exec \"$0\" import \"$1\" -o \"$2\""
                        ${PERCH} ${etl} ${cut}
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 1 OR NOT err MATCHES "^perch: [^\n]*cut.perch: [^\n]*\nperch import: [^\n]*cut.perch is incomplete"
   OR err MATCHES "f.etl")
    message(FATAL_ERROR "import past the file-size limit: exit ${rc} (want 1), stderr:\n${err}")
endif()
file(SIZE ${cut} cut_size)
if(cut_size EQUAL 0 OR NOT cut_size LESS full)
    message(FATAL_ERROR "import past the file-size limit wrote ${cut_size} of ${full} bytes")
endif()
foreach(cmd info report)
    execute_process(COMMAND ${PERCH} ${cmd} ${cut} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                    ERROR_VARIABLE err)
    if(NOT rc EQUAL 3 OR NOT err MATCHES "partial capture")
        message(FATAL_ERROR "perch ${cmd} ${cut}: exit ${rc} (want 3, partial):\n${err}")
    endif()
endforeach()
if(NOT out MATCHES "Processes .*svchost.exe")
    message(FATAL_ERROR "report of the cut import does not name its processes:\n${out}")
endif()
message("output full ok: export and report to a full disk, import past a size limit "
        "(${cut_size} of ${full} bytes kept)")
