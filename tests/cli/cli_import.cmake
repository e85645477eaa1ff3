# perch import: every real trace and two synthetic ones are imported, then 'perch report
# --json' of the capture must equal the report of the .etl byte for byte (import_roundtrip.cmake
# runs the three commands); plus help, usage errors and the refusals.
set(import_dir ${CMAKE_CURRENT_BINARY_DIR}/import)
file(MAKE_DIRECTORY ${import_dir})
set(import_perch "$<TARGET_FILE:perch>")
if(CMAKE_CROSSCOMPILING_EMULATOR)
    set(import_perch "${PERCH_WINE_RUN} $<TARGET_FILE:perch>")
endif()

# perch_import_roundtrip(name etl [seed]): imports etl (written by perch synth with seed when
# given) and compares the two reports.
function(perch_import_roundtrip name etl)
    set(extra)
    if(ARGC GREATER 2)
        set(extra -DSEED=${ARGV2})
    endif()
    add_test(NAME cli.import_roundtrip_${name}
             COMMAND ${CMAKE_COMMAND} "-DPERCH=${import_perch}" -DETL=${etl}
                     -DCAPTURE=${import_dir}/${name}.perch ${extra}
                     -P ${CMAKE_CURRENT_SOURCE_DIR}/import_roundtrip.cmake)
    set_tests_properties(cli.import_roundtrip_${name} PROPERTIES
                         PASS_REGULAR_EXPRESSION "round trip ok: [0-9]+ bytes of identical JSON"
                         LABELS cli ENVIRONMENT "PERCH_DATA_DIR=${PERCH_DATA_DIR}")
endfunction()

foreach(trace perfview_net.4.5.2.x64 airbus_ShutdownPerfDiagLogger airbus_AMSITrace
              airbus_lxcore_kernel perfview_SelfDescribingSingleEvent perfview_primitive-types
              perfview_smallEtlFile)
    perch_import_roundtrip(${trace} ${PERCH_DATA_DIR}/etl/${trace}.etl)
endforeach()
perch_import_roundtrip(synth_seed3 ${import_dir}/synth3.etl 3)
perch_import_roundtrip(synth_seed11 ${import_dir}/synth11.etl 11)

perch_cli_test(import_help "Usage: perch import TRACE.etl -o OUT.perch" import --help)
perch_cli_test(import_listed "import +turn an .etl trace into a compact capture file" --help)
perch_cli_test(import_needs_output "-o OUT.perch is required" import x.etl)
perch_cli_test(import_missing "perch: .*no-such.etl: no such file" import no-such.etl -o x.perch)
perch_cli_test(import_not_etl "perch import: .*README.md: not an .etl file .* at byte 0"
               import ${PERCH_DATA_DIR}/README.md -o ${import_dir}/not-etl.perch)
perch_cli_test(import_refuses_input "refusing to overwrite .*smallEtlFile.etl: it is the input"
               import ${PERCH_DATA_DIR}/etl/perfview_smallEtlFile.etl
               -o ${PERCH_DATA_DIR}/etl/perfview_smallEtlFile.etl)
perch_cli_test(import_refuses_other "refusing to overwrite .*README.md: it is not a capture"
               import ${PERCH_DATA_DIR}/etl/perfview_smallEtlFile.etl -o ${PERCH_DATA_DIR}/README.md)
