# perch export: the help lists every format and what opens it; usage errors and the input
# seam (captures/.etl not wired yet) give clear messages.
perch_cli_test(export_help "chrome +Perfetto UI.*gecko +profiler.firefox.com.*pprof +go tool pprof.*speedscope +speedscope.app.*folded +flamegraph.pl"
               export --help)
perch_cli_test(export_unknown_format "unknown format 'svg'" export --format svg trace.perch)
perch_cli_test(export_no_format "--format is required" export trace.perch)
perch_cli_test(export_missing_input "perch: no-such-trace.perch: .*no such file" export -f chrome no-such-trace.perch)
perch_cli_test(export_listed "export +convert a capture to chrome, gecko, pprof, speedscope or folded" --help)
