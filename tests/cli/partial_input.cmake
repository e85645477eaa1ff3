# cmake -P script behind the partial-input CLI tests (issue 11): a capture or an .etl cut at
# several points must give perch report / export / info (import for an .etl) output for
# everything before the cut, exactly one warning line on stderr saying where it was cut and
# how much was lost, exit status 3, and a report that still names the processes.
#   -DPERCH="<emulator;>perch"  -DCUT="<emulator;>capture_sample"  -DDIR=work-dir
foreach(v PERCH CUT DIR)
    if(NOT DEFINED ${v})
        message(FATAL_ERROR "partial_input.cmake: -D${v}= is required")
    endif()
endforeach()
separate_arguments(perch UNIX_COMMAND "${PERCH}")
separate_arguments(cut UNIX_COMMAND "${CUT}")
file(MAKE_DIRECTORY ${DIR})

function(must_run)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "${ARGN} failed (${rc}): ${err}")
    endif()
endfunction()

# expect_partial(<what the warning says> perch args...): exit 3, one warning line; sets
# partial_out to stdout.
function(expect_partial warning)
    execute_process(COMMAND ${perch} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                    ERROR_VARIABLE err)
    string(REGEX REPLACE "[^\n]" "" newlines "${err}") # the messages hold ';' (CMake lists)
    string(LENGTH "${newlines}" n)
    if(NOT rc EQUAL 3 OR NOT n EQUAL 1 OR NOT err MATCHES "warning: .*${warning}")
        message(FATAL_ERROR "perch ${ARGN}: exit ${rc} (want 3), ${n} stderr lines (want 1 "
                            "matching '${warning}'):\n${err}")
    endif()
    set(partial_out "${out}" PARENT_SCOPE)
endfunction()

must_run(${perch} synth -o ${DIR}/p.etl --seed 4 --cpus 2 --size 4M)
must_run(${perch} import ${DIR}/p.etl -o ${DIR}/p.perch)
file(SIZE ${DIR}/p.perch cap_size)
file(SIZE ${DIR}/p.etl etl_size)

foreach(pct 20 45 70 95)
    math(EXPR n "${cap_size} * ${pct} / 100")
    set(c ${DIR}/cut${pct}.perch)
    must_run(${cut} --cut ${DIR}/p.perch ${c} ${n})
    expect_partial("partial capture \\([a-z_]+ at byte [0-9]+: .*ignored [0-9]+ bytes"
                   report ${c})
    if(NOT partial_out MATCHES "Processes .*svchost.exe" OR partial_out MATCHES "\n +[0-9]+ \\? ")
        message(FATAL_ERROR "report of ${c} does not name its processes:\n${partial_out}")
    endif()
    # the ledger with the event counts is at the end: the report says they are missing
    # instead of printing zeros
    if(NOT partial_out MATCHES "no event counts in this capture \\(it has no ledger: cut before its end, or written without one\\); it names [1-9][0-9]* processes, [1-9][0-9]* threads")
        message(FATAL_ERROR "report of ${c} does not say its event counts are cut:\n${partial_out}")
    endif()
    expect_partial("partial capture" report --json ${c})
    if(NOT partial_out MATCHES "\"top_processes\":\\[{\"name\":\"[A-Za-z]")
        message(FATAL_ERROR "report --json of ${c} does not name its processes:\n${partial_out}")
    endif()
    expect_partial("partial capture" export --format folded ${c} -o ${c}.folded)
    expect_partial("partial capture" export --format chrome ${c} -o ${c}.json)
    expect_partial("partial capture" info ${c})
endforeach()

# Two captures joined (cat a b > ab): the reader stops at the first one's end chunk; the
# commands use it, say the rest was not read (and that it is a capture), and exit 3; symbolize
# -o writes the first capture named, and refuses to rewrite the file in place, which would
# drop the second capture.
execute_process(COMMAND ${CMAKE_COMMAND} -E cat ${DIR}/p.perch ${DIR}/p.perch
                OUTPUT_FILE ${DIR}/joined.perch RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cannot join two captures (cmake -E cat: ${rc})")
endif()
set(joined_warning
    "bytes after the capture's end \\(at byte ${cap_size}\\) were not read: another capture starts")
expect_partial("${joined_warning}" report ${DIR}/joined.perch)
expect_partial("${joined_warning}" report --json ${DIR}/joined.perch)
expect_partial("${joined_warning}" export --format folded ${DIR}/joined.perch -o ${DIR}/j.folded)
expect_partial("${joined_warning}" export --format chrome ${DIR}/joined.perch -o ${DIR}/j.json)
expect_partial("${joined_warning}" info ${DIR}/joined.perch)
expect_partial("${joined_warning}" symbolize ${DIR}/joined.perch -o ${DIR}/j.sym.perch)
must_run(${perch} report ${DIR}/j.sym.perch) # the first capture alone, whole
file(SHA256 ${DIR}/joined.perch before)
execute_process(COMMAND ${perch} symbolize ${DIR}/joined.perch RESULT_VARIABLE rc
                OUTPUT_QUIET ERROR_VARIABLE err)
file(SHA256 ${DIR}/joined.perch after)
if(rc EQUAL 0 OR NOT err MATCHES "another capture \\(files joined\\?\\); not rewritten"
   OR NOT before STREQUAL after)
    message(FATAL_ERROR "symbolize of two joined captures: exit ${rc}, file changed: "
                        "${before} -> ${after}:\n${err}")
endif()

math(EXPR n "${etl_size} * 60 / 100")
must_run(${cut} --cut ${DIR}/p.etl ${DIR}/cut60.etl ${n})
expect_partial("damaged .etl, skipped .* at byte [0-9]+" report ${DIR}/cut60.etl)
expect_partial("damaged .etl" export --format folded ${DIR}/cut60.etl -o ${DIR}/cut60.folded)
expect_partial("damaged .etl" import ${DIR}/cut60.etl -o ${DIR}/cut60.perch)
message("partial input ok: 4 capture cuts x 5 commands, two joined captures x 7 commands, "
        "one .etl cut x 3 commands")
