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
