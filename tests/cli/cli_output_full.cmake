# A full disk or a file-size limit on the output (issue 11, write failures): the command fails
# with one message naming the output (not the input it was reading), a report to a full
# standard output fails instead of exiting 0, and an import cut short by the limit leaves a
# capture that info and report read up to its last whole chunk (output_full.cmake). Linux
# only: it needs /dev/full and a shell's file-size limit.
if(NOT CMAKE_CROSSCOMPILING AND EXISTS /dev/full)
    add_test(NAME cli.output_full
             COMMAND ${CMAKE_COMMAND} "-DPERCH=$<TARGET_FILE:perch>"
                     -DDIR=${CMAKE_CURRENT_BINARY_DIR}/output_full
                     -P ${CMAKE_CURRENT_SOURCE_DIR}/output_full.cmake)
    set_tests_properties(cli.output_full PROPERTIES PASS_REGULAR_EXPRESSION "output full ok"
                         LABELS cli TIMEOUT 300)
endif()
