/*
 * perch: the command line for both sides of Perch. It talks to the service (status, record,
 * fetch) and analyses traces and captures offline (dump, report, import, export). This file
 * only dispatches: each command lives in its own cmd_<name>.c.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "out_guard.h"
#include "perch/capture.h"
#include "perch/error.h"

static const struct perch_command commands[] = {
    {"dump", perch_cmd_dump, "print the records of an .etl file as JSON Lines, or a summary"},
    {"synth", perch_cmd_synth,
     "write a synthetic kernel trace (.etl) for demos, tests and benchmarks"},
    {"import", perch_cmd_import, "turn an .etl trace into a compact capture file"},
    {"info", perch_cmd_info, "describe a capture file"},
    {"report", perch_cmd_report, "summarize where the CPU went (text or --json)"},
    {"export", perch_cmd_export, "convert a capture to chrome, gecko, pprof, speedscope or folded"},
    {"resolve", perch_cmd_resolve, "name the functions at RVAs of an image or PDB (addr2line)"},
    {"symbolize", perch_cmd_symbolize, "add function names to a capture from PDBs and images"},
    {"status", perch_cmd_status, "what the running perchd is doing (session, rates, losses)"},
    {"record", perch_cmd_record, "make perchd record a capture (for a duration, or until stop)"},
    {"stop", perch_cmd_stop, "stop perchd's recording"},
    {"snapshot", perch_cmd_snapshot, "copy the flight recorder's last seconds into a capture"},
    {"captures", perch_cmd_captures, "list the captures in perchd's capture directory"},
    {"fetch", perch_cmd_fetch, "copy one of perchd's captures into a file"},
    {"top", perch_cmd_top, "the processes, threads or stacks using the CPU right now"},
    {"watch", perch_cmd_watch, "a live view: events/s and the busiest threads, refreshed"},
};

static const size_t command_count = sizeof commands / sizeof commands[0];

static void print_usage(FILE *out)
{
    fprintf(out, "Usage: perch <command> [options] [arguments]\n"
                 "       perch --version | --help\n\n"
                 "Perch records and analyses Windows kernel traces (context switches, CPU\n"
                 "samples with kernel+user stacks, PMC counters, image loads).\n\n"
                 "Commands:\n");
    for (size_t i = 0; i < command_count; i++)
        fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
    fprintf(out, "\nstatus, record, stop, snapshot, captures, fetch, top and watch talk to perchd\n"
                 "over \\\\.\\pipe\\perch (Windows; PERCH_PIPE names another pipe).\n"
                 "\nExit status: 0 success; 1 failure; 2 usage error; 3 partial input (a cut or\n"
                 "damaged capture or .etl: the output covers everything readable before the\n"
                 "damage, and one warning on stderr says where it stopped and what was lost);\n"
                 "for the commands that talk to perchd also 4 not on Windows, 5 the service is\n"
                 "not installed, 6 perchd is not running, 7 access denied, 8 perchd did not\n"
                 "answer (busy, timed out, or the pipe is served by a program that is not\n"
                 "perchd: its owner is not Administrators or LocalSystem).\n"
                 "\nRun 'perch <command> --help' for a command's options.\n");
}

int perch_cli_error(const char *what, int err)
{
    fprintf(stderr, "perch: %s: %s\n", what, perch_strerror(err));
    return 1;
}

void perch_cli_say_refusal(const char *cmd, const struct perch_capture_writer *w, const char *input)
{
    if (w != NULL && perch_capture_writer_refusal(w)[0] != '\0')
        fprintf(stderr,
                "perch %s: the capture writer refused a record: %s (a bug in perch: please "
                "report it with %s)\n",
                cmd, perch_capture_writer_refusal(w), input);
}

/* A command that succeeded but whose standard output could not be written in full (a full
 * disk, a closed pipe: stdio reports it only at the final flush) fails, saying so. */
static int checked_stdout(int rc)
{
    if ((rc == 0 || rc == PERCH_EXIT_PARTIAL) && (fflush(stdout) != 0 || ferror(stdout)))
        return perch_cli_error("standard output", perch_cli_stdio_error());
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        print_usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
        printf("perch %s\n", PERCH_VERSION);
        return 0;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "help") == 0) {
        print_usage(stdout);
        return 0;
    }
    for (size_t i = 0; i < command_count; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return checked_stdout(commands[i].run(argc - 1, argv + 1));
    fprintf(stderr, "perch: unknown command '%s'\n\n", argv[1]);
    print_usage(stderr);
    return 2;
}
