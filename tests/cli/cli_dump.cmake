# perch dump: summaries of real traces match the reference figures (model.json and the
# *.ref.jsonl headers), records print as JSON Lines, and bad input gives a clear error.
set(ETL ${PERCH_DATA_DIR}/etl)

perch_cli_test(dump_help "Usage: perch dump \\[--summary\\]" dump --help)

perch_cli_test(dump_summary_small
    "\"header\":{\"pointer_size\":4,\"perf_freq\":3117777,\"start_time\":131159502220379266,\"end_time\":131159502220688637,\"cpus\":4,\"events_lost\":0,\"buffers_lost\":0,\"build\":10586,\"clock_type\":1.*\"records\":2,.*\"other_kernel\":1,\"non_kernel\":1}.*\"compressed_buffers\":1,.*\"errors\":{},"
    dump --summary ${ETL}/perfview_smallEtlFile.etl)

perch_cli_test(dump_summary_x64
    "\"pointer_size\":8,\"perf_freq\":10000000,\"start_time\":132404548206236167,\"end_time\":132404548306935923,\"cpus\":8,.*\"build\":9200,.*\"SampledProfile\":79528,\"StackWalk\":252,\"StackKeyKernel\":2061,\"StackKeyUser\":7046,.*\"ImageLoad\":35,.*\"other_kernel\":6518,\"non_kernel\":76126}.*\"errors\":{}"
    dump --summary ${ETL}/perfview_net.4.5.2.x64.etl)

perch_cli_test(dump_summary_airbus
    "\"build\":18362,.*\"ImageLoad\":72,\"ImageUnload\":4791,\"ImageDCStart\":6745,\"ImageDCEnd\":2145,.*\"ThreadDCStart\":1175,.*\"other_kernel\":71,\"non_kernel\":0}.*\"compressed_buffers\":0,"
    dump --summary ${ETL}/airbus_ShutdownPerfDiagLogger.etl)

# The first record of every trace is the logfile header (group 0, hook 0) at its raw time.
perch_cli_test(dump_first_record
    "^{\"ts\":185227195741,\"cpu\":0,\"pid\":2092,\"tid\":2256,\"provider\":\"68fdd900-4a3e-11d1-84f4-0000f80464e3\",\"hook\":\"0x0\",\"opcode\":0,\"version\":2,\"kind\":null,\"len\":366}\n$"
    dump --limit 1 ${ETL}/perfview_smallEtlFile.etl)

# Perfinfo records have no tid/pid in the header: null, never a made-up number.
perch_cli_test(dump_sample_has_null_tid
    "\"pid\":null,\"tid\":null,\"provider\":\"ce1dbfb4-137e-4da6-87b0-3f59aa102cbc\",\"hook\":\"0xf2e\",\"opcode\":46,\"version\":2,\"kind\":\"SampledProfile\",\"len\":16,"
    dump --limit 2000 ${ETL}/perfview_net.4.5.2.x64.etl)

perch_cli_test(dump_missing_file
    "perch dump: no/such/file.etl: no such file or object"
    dump no/such/file.etl)

perch_cli_test(dump_not_an_etl
    "LICENSE: input is malformed \\(not an .etl file"
    dump ${PROJECT_SOURCE_DIR}/LICENSE)

perch_cli_test(dump_bad_limit "--limit needs a positive number" dump --limit x a.etl)

# Decoded fields ride on every record Perch decodes: the first sample of the x64 trace and the
# stack walk that belongs to it (EventTimeStamp equals the sample's raw timestamp).
perch_cli_test(dump_fields_sample
    "\"ts\":1942903333,[^\n]*\"kind\":\"SampledProfile\",\"len\":16,\"fields\":{\"instruction_pointer\":\"0xffffffffffd03003\",\"thread_id\":584,\"count\":1,"
    dump --limit 2000 ${ETL}/perfview_net.4.5.2.x64.etl)
perch_cli_test(dump_fields_stack
    "\"kind\":\"StackWalk\",\"len\":32,\"fields\":{\"event_time_stamp\":1942903333,\"stack_process\":4,\"stack_thread\":584,\"stack\":.\"0xffffffffffd03003\",\"0xfffff88000dce191\".}}"
    dump --limit 2000 ${ETL}/perfview_net.4.5.2.x64.etl)

# Every kernel event of the real traces decodes: zero decode errors in the summary.
perch_cli_test(dump_summary_decodes_x64
    "\"decode\":{\"decoded\":104006,\"newer_version\":0,\"not_decoded\":75468,\"errors\":0}"
    dump --summary ${ETL}/perfview_net.4.5.2.x64.etl)
perch_cli_test(dump_summary_decodes_airbus
    "\"decode\":{\"decoded\":17013,\"newer_version\":0,\"not_decoded\":65,\"errors\":0}"
    dump --summary ${ETL}/airbus_ShutdownPerfDiagLogger.etl)
