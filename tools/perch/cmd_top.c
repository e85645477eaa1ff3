/*
 * perch top: what used the CPU over the last seconds of the running trace, from perchd's
 * live window: processes (default), threads (--threads) or stacks (--stacks), by CPU time
 * from context switches (default) or by timer samples (--by samples). --json prints one
 * object.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "perch/error.h"
#include "service_client.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: perch top [--threads | --stacks] [--by cpu|samples] [--window D]\n"
                 "                 [--pid PID] [--limit N] [--json]\n\n"
                 "Shows the processes (or threads, or stacks) that used the most CPU over the\n"
                 "last seconds of the trace perchd is recording.\n\n"
                 "  --threads     threads instead of processes\n"
                 "  --stacks      call stacks, by samples\n"
                 "  --by K        cpu (time from context switches, default) or samples\n"
                 "  --window D    how far back: 5s (default), 500ms, 1m\n"
                 "  --pid PID     only the threads or stacks of this process\n"
                 "  --limit N     rows (default 10, at most 1000)\n"
                 "  --json        one JSON object instead\n"
                 "  --help        show this help\n");
}

/* Returns -1 to go on, else the exit status. */
static int parse(int argc, char **argv, perch_proto_top_req *r, bool *json)
{
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t n;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--threads") == 0) {
            r->what = PERCH_TOP_THREADS;
        } else if (strcmp(argv[i], "--stacks") == 0) {
            r->what = PERCH_TOP_STACKS;
            r->order = PERCH_ORDER_SAMPLES;
        } else if (strcmp(argv[i], "--by") == 0) {
            if (v == NULL || (strcmp(v, "cpu") != 0 && strcmp(v, "samples") != 0))
                return perch_cli_bad_value("top", "--by", v, "cpu or samples");
            r->order = strcmp(argv[++i], "cpu") == 0 ? PERCH_ORDER_CPU : PERCH_ORDER_SAMPLES;
        } else if (strcmp(argv[i], "--window") == 0) {
            if (v == NULL || perch_cli_parse_duration(v, &r->window.last_ms) < 0 ||
                r->window.last_ms == 0)
                return perch_cli_bad_value("top", "--window", v,
                                           "a duration above 0 such as 5s, 500ms or 1m");
            i++;
        } else if (strcmp(argv[i], "--pid") == 0) {
            if (v == NULL || perch_cli_parse_uint(v, UINT32_MAX, &n) < 0)
                return perch_cli_bad_value("top", "--pid", v, "a process id");
            r->has_pid = true;
            r->pid = (uint32_t)n;
            i++;
        } else if (strcmp(argv[i], "--limit") == 0) {
            if (v == NULL || perch_cli_parse_uint(v, PERCH_PROTO_MAX_TOP, &n) < 0 || n == 0)
                return perch_cli_bad_value("top", "--limit", v, "a number of rows from 1 to 1000");
            r->limit = (uint32_t)n;
            i++;
        } else if (strcmp(argv[i], "--json") == 0) {
            *json = true;
        } else {
            fprintf(stderr, "perch top: unexpected argument '%s'\n\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    return -1;
}

int perch_cmd_top(int argc, char **argv)
{
    perch_proto_top_req req = {PERCH_TOP_PROCESSES, PERCH_ORDER_CPU, 10, false, 0, {5000, 0, 0}};
    perch_proto_top_rep rep;
    perch_proto_client *c;
    bool json = false;
    void *mem = NULL;
    int rc = parse(argc, argv, &req, &json);
    if (rc >= 0)
        return rc;
    if ((rc = perch_cli_request("top", PERCH_MSG_TOP, &req, &rep, sizeof rep, &mem, &c)) != 0)
        return rc;
    if (json) {
        perch_json w;
        perch_cli_json(&w);
        rc = perch_cli_json_top("top", &rep, req.what, req.order, &w);
        perch_json_newline(&w);
        perch_json_flush(&w);
    } else {
        rc = perch_cli_print_top("top", &rep, req.what, req.order, stdout);
    }
    perch_free(mem);
    perch_proto_client_close(c);
    return rc;
}
