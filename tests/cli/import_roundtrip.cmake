# cmake -P script behind the perch import golden tests: imports ETL into a capture, reports
# both with --json and fails unless the two JSON documents are byte for byte the same.
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
file(SIZE ${ETL} etl_size)
file(SIZE ${CAPTURE} capture_size)
message("round trip ok: ${n} bytes of identical JSON; ${etl_size} -> ${capture_size} bytes")
