# Partial input (a cut or damaged capture or .etl): exit status 3, one warning, output of what
# was readable, names kept (partial_input.cmake).
set(partial_dir ${CMAKE_CURRENT_BINARY_DIR}/partial)
set(partial_perch "$<TARGET_FILE:perch>")
set(partial_cut "$<TARGET_FILE:capture_sample>")
if(CMAKE_CROSSCOMPILING_EMULATOR)
    set(partial_perch "${PERCH_WINE_RUN} $<TARGET_FILE:perch>")
    set(partial_cut "${PERCH_WINE_RUN} $<TARGET_FILE:capture_sample>")
endif()
add_test(NAME cli.partial_input
         COMMAND ${CMAKE_COMMAND} "-DPERCH=${partial_perch}" "-DCUT=${partial_cut}"
                 -DDIR=${partial_dir} -P ${CMAKE_CURRENT_SOURCE_DIR}/partial_input.cmake)
set_tests_properties(cli.partial_input PROPERTIES
                     PASS_REGULAR_EXPRESSION "partial input ok" LABELS cli TIMEOUT 300)
perch_cli_test(help_exit_status "Exit status: 0 success; 1 failure; 2 usage error; 3 partial"
               --help)
