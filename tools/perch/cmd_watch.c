/*
 * perch watch: a live view of the running trace, refreshed in the terminal: events per
 * second, losses, and the threads that used the most CPU over the last window, from a
 * subscription (perchd sends an update every interval, at most ten a second, and skips
 * updates this client has not read yet rather than queueing them). Ctrl+C ends it. When
 * stdout is not a terminal each update is printed after the last; --json prints one JSON
 * object per line.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "perch/error.h"
#include "perch/platform.h"
#include "service_client.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: perch watch [--interval D] [--window D] [--top N] [--count N] [--json]\n\n"
                 "Shows events per second and the busiest threads of the trace perchd is\n"
                 "recording, refreshed until Ctrl+C.\n\n"
                 "  --interval D  time between updates (default 1s, at least 100ms)\n"
                 "  --window D    the busiest threads over this much time (default 5s)\n"
                 "  --top N       threads shown (default 15, at most 50)\n"
                 "  --count N     stop after N updates\n"
                 "  --json        one JSON object per update and line\n"
                 "  --help        show this help\n");
}

struct watch_args {
    perch_proto_subscribe_req req;
    uint64_t count;
    bool json;
};

static int parse(int argc, char **argv, struct watch_args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t n;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--interval") == 0 || strcmp(argv[i], "--window") == 0) {
            if (v == NULL || perch_cli_parse_duration(v, &n) < 0 || n == 0 || n > UINT32_MAX)
                return perch_cli_bad_value("watch", argv[i], v,
                                           "a duration above 0 and under 49 days, such as 1s or "
                                           "500ms");
            if (argv[i][2] == 'i')
                a->req.interval_ms = (uint32_t)n;
            else
                a->req.window_ms = (uint32_t)n;
            i++;
        } else if (strcmp(argv[i], "--top") == 0) {
            if (v == NULL || perch_cli_parse_uint(v, 50, &n) < 0)
                return perch_cli_bad_value("watch", "--top", v, "a number of threads up to 50");
            a->req.top = (uint32_t)n;
            i++;
        } else if (strcmp(argv[i], "--count") == 0) {
            if (v == NULL || perch_cli_parse_uint(v, UINT32_MAX, &a->count) < 0)
                return perch_cli_bad_value("watch", "--count", v, "a number of updates");
            i++;
        } else if (strcmp(argv[i], "--json") == 0) {
            a->json = true;
        } else {
            fprintf(stderr, "perch watch: unexpected argument '%s'\n\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    return -1;
}

static int show(const perch_proto_update *u, const perch_proto_top_rep *top, bool json, bool tty)
{
    if (json) {
        perch_json w;
        perch_cli_json(&w);
        perch_json_begin_object(&w);
        perch_cli_json_u(&w, "seq", u->seq);
        perch_cli_json_u(&w, "events_total", u->events_total);
        perch_cli_json_u(&w, "events_per_sec", u->events_per_sec);
        perch_cli_json_u(&w, "lost_total", u->lost_total);
        perch_cli_json_u(&w, "skipped", u->skipped);
        perch_json_key(&w, "top");
        int rc = top ? perch_cli_json_top("watch", top, PERCH_TOP_THREADS, PERCH_ORDER_CPU, &w)
                     : (perch_json_null(&w), 0);
        perch_cli_json_done(&w);
        fflush(stdout);
        return rc;
    }
    if (tty)
        printf("\x1b[H\x1b[2J"); /* home, clear: redraw in place */
    printf("perch watch: %" PRIu64 " events/s, %" PRIu64 " events, %" PRIu64 " lost%s\n\n",
           u->events_per_sec, u->events_total, u->lost_total,
           u->skipped ? " (some updates were skipped: this terminal was slow)" : "");
    int rc =
        top ? perch_cli_print_top("watch", top, PERCH_TOP_THREADS, PERCH_ORDER_CPU, stdout) : 0;
    if (!tty)
        printf("\n");
    fflush(stdout);
    return rc;
}

static int loop(perch_proto_client *c, const struct watch_args *a)
{
    bool tty = perch_is_terminal(stdout);
    char why[400] = "";
    perch_cli_catch_interrupt();
    for (uint64_t n = 0; !perch_cli_interrupted() && (a->count == 0 || n < a->count);) {
        perch_proto_update u;
        perch_proto_top_rep top;
        void *mem = NULL, *tmem = NULL;
        int err = perch_proto_client_update(c, &u, &mem, 250, why, sizeof why);
        if (err == PERCH_ETIMEDOUT)
            continue; /* look at Ctrl+C again */
        if (err < 0)
            return perch_cli_request_failed("watch", err, why);
        bool have = u.top_len > 0 && perch_proto_decode(PERCH_MSG_TOP, true, u.top, u.top_len, &top,
                                                        sizeof top, &tmem, NULL, 0) == 0;
        int rc = show(&u, have ? &top : NULL, a->json, tty);
        perch_free(tmem);
        perch_free(mem);
        if (rc != 0)
            return rc;
        n++;
    }
    return 0;
}

int perch_cmd_watch(int argc, char **argv)
{
    struct watch_args a = {{1000, 15, 5000}, 0, false};
    perch_proto_subscribe_rep rep;
    perch_proto_client *c;
    char why[400] = "";
    int rc = parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    if ((rc = perch_cli_connect("watch", &c)) != 0)
        return rc;
    int err = perch_proto_client_call(c, PERCH_MSG_SUBSCRIBE, &a.req, &rep, sizeof rep, NULL,
                                      PERCH_CLI_TIMEOUT_MS, why, sizeof why);
    rc = err < 0 ? perch_cli_request_failed("watch", err, why) : loop(c, &a);
    perch_proto_client_close(c);
    return rc;
}
