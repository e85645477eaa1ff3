# cmake -P script behind the perch import golden tests: imports ETL into a capture, reports
# both with --json and fails unless the two JSON documents are byte for byte the same. It also
# holds the one-thread path to the default two-thread one: the capture of 'import --threads 1'
# must be the same file, and 'report --json' and 'dump --summary' / 'dump --limit' with
# PERCH_THREADS=1 the same text. Every export of the capture (its sink on a thread of its own
# behind a relay by default) must be the same file as with PERCH_THREADS=1 (one thread).
#   -DPERCH="<emulator;>perch"  -DETL=trace.etl  -DCAPTURE=out.perch
# With -DSEED=N it first writes ETL with 'perch synth --seed N --size 2M'.
foreach(v PERCH ETL CAPTURE)
    if(NOT DEFINED ${v})
        message(FATAL_ERROR "import_roundtrip.cmake: -D${v}= is required")
    endif()
endforeach()
separate_arguments(perch UNIX_COMMAND "${PERCH}")

function(run_perch out_var)
    execute_process(COMMAND ${perch} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                    ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "perch ${ARGN} failed (${rc}): ${err}")
    endif()
    set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

if(DEFINED SEED)
    run_perch(ignored synth -o ${ETL} --seed ${SEED} --size 2M)
endif()
file(REMOVE ${CAPTURE})
run_perch(imported import ${ETL} -o ${CAPTURE})
run_perch(from_etl report --json ${ETL})
run_perch(from_capture report --json ${CAPTURE})
string(LENGTH "${from_etl}" n)
if(n LESS 50)
    message(FATAL_ERROR "report of ${ETL} is too short to compare: '${from_etl}'")
endif()
if(NOT from_etl STREQUAL from_capture)
    file(WRITE ${CAPTURE}.etl.json "${from_etl}")
    file(WRITE ${CAPTURE}.capture.json "${from_capture}")
    message(FATAL_ERROR "report --json differs: compare ${CAPTURE}.etl.json and "
                        "${CAPTURE}.capture.json")
endif()
# One thread against two: the same bytes.
run_perch(imported import ${ETL} -o ${CAPTURE}.1 --threads 1)
execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${CAPTURE} ${CAPTURE}.1
                RESULT_VARIABLE same)
if(NOT same EQUAL 0)
    message(FATAL_ERROR "import --threads 1 wrote another capture than the default: "
                        "compare ${CAPTURE} and ${CAPTURE}.1")
endif()
file(REMOVE ${CAPTURE}.1)
foreach(args "report;--json" "dump;--summary" "dump;--limit;3000")
    run_perch(two ${args} ${ETL})
    set(perch_saved "${perch}")
    set(perch ${CMAKE_COMMAND} -E env PERCH_THREADS=1 ${perch})
    run_perch(one ${args} ${ETL})
    set(perch "${perch_saved}")
    if(NOT one STREQUAL two)
        string(REPLACE ";" " " shown "${args}")
        message(FATAL_ERROR "perch ${shown} differs with PERCH_THREADS=1")
    endif()
endforeach()
# The capture's report, its chunks decoded ahead on a second thread by default: the same
# with one thread.
set(perch_saved "${perch}")
set(perch ${CMAKE_COMMAND} -E env PERCH_THREADS=1 ${perch})
run_perch(capture_one report --json ${CAPTURE})
set(perch "${perch_saved}")
if(NOT capture_one STREQUAL from_capture)
    message(FATAL_ERROR "perch report --json of ${CAPTURE} differs with PERCH_THREADS=1")
endif()
foreach(fmt chrome gecko pprof speedscope folded)
    run_perch(ignored export --format ${fmt} -o ${CAPTURE}.${fmt} ${CAPTURE})
    set(perch_saved "${perch}")
    set(perch ${CMAKE_COMMAND} -E env PERCH_THREADS=1 ${perch})
    run_perch(ignored export --format ${fmt} -o ${CAPTURE}.1.${fmt} ${CAPTURE})
    set(perch "${perch_saved}")
    file(SIZE ${CAPTURE}.${fmt} export_size)
    execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${CAPTURE}.${fmt}
                            ${CAPTURE}.1.${fmt} RESULT_VARIABLE same)
    if(NOT same EQUAL 0 OR (fmt STREQUAL "chrome" AND export_size LESS 100))
        message(FATAL_ERROR "export --format ${fmt} differs with PERCH_THREADS=1 (or is empty): "
                            "compare ${CAPTURE}.${fmt} and ${CAPTURE}.1.${fmt}")
    endif()
    file(REMOVE ${CAPTURE}.${fmt} ${CAPTURE}.1.${fmt})
endforeach()
file(SIZE ${ETL} etl_size)
file(SIZE ${CAPTURE} capture_size)
message("round trip ok: ${n} bytes of identical JSON; ${etl_size} -> ${capture_size} bytes; "
        "the same with one thread, exports included")
