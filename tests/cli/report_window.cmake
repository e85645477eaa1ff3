# cmake -P script behind cli.report_window (cli_report.cmake): perch report --from/--to on a
# synthetic trace and its capture. The windows [0, 1.5s) and [1.5s, end) split the samples
# between them with none lost or counted twice, and their slices' run and idle time add up
# to the whole trace's; the .etl and its capture give byte-identical JSON over the same window;
# the window is said in one line on stderr.   -DPERCH="<emulator;>perch"  -DDIR=work-dir
separate_arguments(perch UNIX_COMMAND "${PERCH}")
file(MAKE_DIRECTORY ${DIR})
set(etl ${DIR}/w.etl)
set(cap ${DIR}/w.perch)

function(run out_var err_var)
    execute_process(COMMAND ${perch} ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                    ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "perch ${ARGN} failed (${rc}): ${err}")
    endif()
    set(${out_var} "${out}" PARENT_SCOPE)
    set(${err_var} "${err}" PARENT_SCOPE)
endfunction()

# field(<json> <path...> <var>): a number in the report JSON (string(JSON) GET).
function(field json var)
    string(JSON v GET "${json}" ${ARGN})
    set(${var} ${v} PARENT_SCOPE)
endfunction()

run(o e synth -o ${etl} --seed 4 --size 2M --cpus 2)
run(o e import ${etl} -o ${cap})
run(whole e report --json ${etl})
run(first e1 report --json --from 0 --to 1.5s ${etl})
run(rest e2 report --json --from 1500ms ${etl})
run(first_cap e report --json --to 1.5s ${cap})

foreach(k samples)
    field("${whole}" n ${k})
    field("${first}" a ${k})
    field("${rest}" b ${k})
    math(EXPR sum "${a} + ${b}")
    if(a EQUAL 0 OR b EQUAL 0 OR NOT sum EQUAL n)
        message(FATAL_ERROR "${k}: ${a} before 1.5 s + ${b} after = ${sum}, the trace has ${n}")
    endif()
endforeach()
foreach(k run_ticks idle_ticks)
    field("${whole}" n slices ${k})
    field("${first}" a slices ${k})
    field("${rest}" b slices ${k})
    math(EXPR sum "${a} + ${b}")
    if(NOT sum EQUAL n)
        message(FATAL_ERROR "slices.${k}: ${a} + ${b} = ${sum}, the trace has ${n}")
    endif()
endforeach()
if(NOT first STREQUAL first_cap)
    message(FATAL_ERROR "the .etl and its capture differ over [0, 1.5 s)")
endif()
if(NOT e1 MATCHES "^perch report: from 0 s to 1.5 s after the trace's start: [1-9][0-9]* of [0-9]+ samples\n$")
    message(FATAL_ERROR "no window line on stderr: ${e1}")
endif()
message("report window ok: ${a} + ${b} samples")
