# cmake -P script: writes `perch synth --seed 1 --size 1M` and fails unless its SHA-256 is the
# expected one.   -DPERCH="<emulator;>perch"  -DETL=out.etl  -DSHA256=<hex>
separate_arguments(perch UNIX_COMMAND "${PERCH}")
execute_process(COMMAND ${perch} synth -o ${ETL} --seed 1 --size 1M RESULT_VARIABLE rc
                ERROR_VARIABLE err OUTPUT_QUIET)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "perch synth failed (${rc}): ${err}")
endif()
file(SHA256 ${ETL} got)
if(NOT got STREQUAL SHA256)
    message(FATAL_ERROR "perch synth --seed 1 --size 1M wrote ${got}, expected ${SHA256}: the "
                        "generator's output depends on the build or was changed")
endif()
message("synth digest ok: ${got}")
