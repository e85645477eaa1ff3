# perch synth: writes a trace and says what it wrote; refuses bad options with a reason.
perch_cli_test(synth_writes "wrote .*synth-cli.etl: 1.0 MiB, 16 buffers, 4 CPUs.*samples \\([0-9]+ with stacks"
               synth -o ${CMAKE_CURRENT_BINARY_DIR}/synth-cli.etl --size 1M --cpus 4 --seed 7)
perch_cli_test(synth_help "Usage: perch synth -o FILE" synth --help)
perch_cli_test(synth_needs_output "missing -o FILE" synth --size 1M)
perch_cli_test(synth_bad_size "invalid value '12Q' for --size" synth -o x.etl --size 12Q)
perch_cli_test(synth_too_small "--size must be at least 393216 bytes for 4 CPUs"
               synth -o x.etl --size 64K --cpus 4)
perch_cli_test(synth_stats_json "\"samples_with_stack\":[1-9][0-9]*,.*\"synth\":{\"seed\":7,"
               synth -o ${CMAKE_CURRENT_BINARY_DIR}/synth-cli-stats.etl --size 1M --seed 7 --stats -)

# The same seed gives the same bytes with every compiler and platform (gcc, clang, mingw under
# Wine): tests and captures made from synth traces must not depend on the build. The digest is
# of `perch synth --seed 1 --size 1M` as first written; a deliberate change to the generator
# updates it here (and says so in docs/synth.md).
set(synth_perch "$<TARGET_FILE:perch>")
if(CMAKE_CROSSCOMPILING_EMULATOR)
    set(synth_perch "${PERCH_WINE_RUN} $<TARGET_FILE:perch>")
endif()
add_test(NAME cli.synth_same_bytes_everywhere
         COMMAND ${CMAKE_COMMAND} "-DPERCH=${synth_perch}"
                 -DETL=${CMAKE_CURRENT_BINARY_DIR}/synth-digest.etl
                 -DSHA256=ac7eba1f2d5a3687f85f6fbadcd4decf74015855d201b5d2f1adf8918c51e097
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/synth_digest.cmake)
set_tests_properties(cli.synth_same_bytes_everywhere PROPERTIES LABELS cli
                     PASS_REGULAR_EXPRESSION "synth digest ok")
