/*
 * perch captures: the capture files in perchd's capture directory (recordings, rotated
 * files, snapshots), with size, start time and state (complete, recording, partial), so one
 * can be fetched with perch fetch. --json prints them as one object.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "perch/error.h"
#include "service_client.h"

static const char *const states[] = {"complete", "recording", "partial"};

static void usage(FILE *out)
{
    fprintf(out, "Usage: perch captures [--json]\n\n"
                 "Lists the captures in perchd's capture directory (fetch one with\n"
                 "'perch fetch NAME -o FILE').\n\n"
                 "  --json   one JSON object instead\n"
                 "  --help   show this help\n");
}

/* FILETIME (100 ns since 1601) as UTC text. */
static void utc(uint64_t ft, char *buf, size_t len)
{
    const uint64_t epoch = 116444736000000000ull;
    if (ft < epoch) {
        snprintf(buf, len, "-");
        return;
    }
    time_t t = (time_t)((ft - epoch) / 10000000u);
    struct tm *tm = gmtime(&t);
    if (tm == NULL || strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", tm) == 0)
        snprintf(buf, len, "-");
}

static void print_json(const perch_proto_captures_rep *r)
{
    perch_json w;
    perch_cli_json(&w);
    perch_json_begin_object(&w);
    perch_cli_json_s(&w, "directory", r->directory);
    perch_json_key(&w, "captures");
    perch_json_begin_array(&w);
    for (uint32_t i = 0; i < r->count; i++) {
        const perch_proto_capture *c = &r->captures[i];
        perch_json_begin_object(&w);
        perch_cli_json_s(&w, "name", c->name);
        perch_cli_json_u(&w, "bytes", c->bytes);
        perch_cli_json_u(&w, "start_filetime", c->start_filetime);
        perch_cli_json_s(&w, "state", states[c->state]);
        perch_json_end_object(&w);
    }
    perch_json_end_array(&w);
    perch_cli_json_done(&w);
}

static void print_text(const perch_proto_captures_rep *rep)
{
    printf("%u capture(s) in %s\n", (unsigned)rep->count, rep->directory);
    for (uint32_t i = 0; i < rep->count; i++) {
        char when[40];
        utc(rep->captures[i].start_filetime, when, sizeof when);
        printf("  %-40s %12" PRIu64 " bytes  %-23s  %s\n", rep->captures[i].name,
               rep->captures[i].bytes, when, states[rep->captures[i].state]);
    }
}

int perch_cmd_captures(int argc, char **argv)
{
    bool json = false;
    perch_proto_client *c;
    perch_proto_captures_rep rep;
    void *mem = NULL;
    int rc = perch_cli_json_only("captures", argc, argv, usage, &json);
    if (rc >= 0)
        return rc;
    rc = perch_cli_request("captures", PERCH_MSG_CAPTURES, NULL, &rep, sizeof rep, &mem, &c);
    if (rc != 0)
        return rc;
    if (json)
        print_json(&rep);
    else
        print_text(&rep);
    perch_free(mem);
    perch_proto_client_close(c);
    return 0;
}
