# cmake -P script: a synthetic trace (it has context switches) reports measured CPU time: the
# columns say "cpu ms", never "est. cpu ms", there is no estimate note, and the busiest
# process has a non-zero measured time.   -DPERCH="<emulator;>perch"  -DETL=out.etl
separate_arguments(perch UNIX_COMMAND "${PERCH}")
execute_process(COMMAND ${perch} synth -o ${ETL} --seed 3 --size 1M RESULT_VARIABLE rc
                ERROR_VARIABLE err OUTPUT_QUIET)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "perch synth failed (${rc}): ${err}")
endif()
execute_process(COMMAND ${perch} report --top 3 ${ETL} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "perch report failed (${rc}): ${err}")
endif()
if(out MATCHES "est\\. cpu ms" OR out MATCHES "CPU time estimated")
    message(FATAL_ERROR "a trace with context switches was estimated:\n${out}")
endif()
if(NOT out MATCHES "Processes \\(top 3 by samples\\)\n +pid name +samples +cpu ms\n +[0-9]+ [^\n]* +[0-9]+ +([0-9]+\\.[0-9]+)\n")
    message(FATAL_ERROR "no process table with a cpu ms column:\n${out}")
endif()
if(CMAKE_MATCH_1 STREQUAL "0.000")
    message(FATAL_ERROR "the busiest process has no measured CPU time:\n${out}")
endif()
message("cpu column measured: ${CMAKE_MATCH_1} ms for the busiest process")
