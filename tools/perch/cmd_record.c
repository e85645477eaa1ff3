/*
 * perch record: makes perchd record a capture. With --duration it waits for the recording
 * to finish (Ctrl+C stops it early) and, with -o, copies the capture into a file (every file
 * of it when it rotated: record_fetch.c); without a duration it starts the recording and
 * returns (perch stop ends it). --set KEY=VALUE overrides the service configuration for this
 * recording (docs/service.md lists the keys).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "perch/error.h"
#include "perch/thread.h"
#include "record_fetch.h"
#include "service_client.h"

#define MAX_OPTIONS     32
#define POLL_MS         250u
#define FINISH_SLACK_MS 30000u

struct record_args {
    perch_proto_record_req req;
    perch_proto_option options[MAX_OPTIONS];
    char keys[MAX_OPTIONS][64];
    const char *path;
    bool json;
};

static void usage(FILE *out)
{
    fprintf(out, "Usage: perch record [--duration D] [--name NAME] [--set KEY=VALUE]... [-o FILE]\n"
                 "                    [--json]\n\n"
                 "Makes perchd record a capture (needs administrator rights).\n\n"
                 "  --duration D     record for D (10s, 2m, 500ms) and wait for it; Ctrl+C stops\n"
                 "                   it early. Without it the recording runs until 'perch stop'.\n"
                 "  --name NAME      the capture's file name in the capture directory\n"
                 "  --set KEY=VALUE  override a configuration value for this recording\n"
                 "  -o FILE          with --duration: copy the capture into FILE when it is done;\n"
                 "                   a recording that rotated into several files is copied\n"
                 "                   as FILE, then FILE-2, FILE-3 ... (before FILE's extension)\n"
                 "  --json           print the result as a JSON object\n"
                 "  --help           show this help\n");
}

static int add_option(struct record_args *a, const char *kv)
{
    const char *eq = strchr(kv, '=');
    uint32_t n = a->req.option_count;
    if (eq == NULL || eq == kv || (size_t)(eq - kv) >= sizeof a->keys[0] || n >= MAX_OPTIONS)
        return -1;
    memcpy(a->keys[n], kv, (size_t)(eq - kv));
    a->keys[n][eq - kv] = '\0';
    a->options[n].key = a->keys[n];
    a->options[n].value = eq + 1;
    a->req.option_count++;
    return 0;
}

/* Returns -1 to go on, else the exit status. */
static int parse(int argc, char **argv, struct record_args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--duration") == 0) {
            if (v == NULL || perch_cli_parse_duration(v, &a->req.duration_ms) < 0 ||
                a->req.duration_ms == 0)
                return perch_cli_bad_value("record", "--duration", v,
                                           "a duration above 0 such as 10s or 2m");
            i++;
        } else if (strcmp(argv[i], "--name") == 0) {
            if (v == NULL)
                return perch_cli_bad_value("record", "--name", NULL, "a name");
            a->req.name = argv[++i];
        } else if (strcmp(argv[i], "--set") == 0) {
            if (v == NULL || add_option(a, v) < 0) {
                fprintf(stderr, "perch record: --set takes KEY=VALUE (at most %d)\n", MAX_OPTIONS);
                return 2;
            }
            i++;
        } else if (strcmp(argv[i], "-o") == 0) {
            if (v == NULL)
                return perch_cli_bad_value("record", "-o", NULL, "a file name");
            a->path = argv[++i];
        } else if (strcmp(argv[i], "--json") == 0) {
            a->json = true;
        } else {
            fprintf(stderr, "perch record: unexpected argument '%s'\n\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (a->path != NULL && a->req.duration_ms == 0) {
        fprintf(stderr, "perch record: -o needs --duration; without one, stop the recording "
                        "with 'perch stop' and copy it with 'perch fetch'\n");
        return 2;
    }
    return -1;
}

/* True while the capture `name` is still listed as recording. */
static int still_recording(perch_proto_client *c, const char *name, bool *yes, char *why,
                           size_t len)
{
    perch_proto_status st;
    void *mem = NULL;
    int err = perch_proto_client_call(c, PERCH_MSG_STATUS, NULL, &st, sizeof st, &mem,
                                      PERCH_CLI_TIMEOUT_MS, why, len);
    *yes = false;
    for (uint32_t i = 0; err == 0 && i < st.recording_count; i++)
        *yes = *yes || strcmp(st.recordings[i].name, name) == 0;
    perch_free(mem);
    return err;
}

static int wait_done(perch_proto_client *c, const struct record_args *a, const char *name)
{
    char why[400] = "";
    uint64_t waited = 0;
    bool stopped = false, yes = true;
    perch_cli_catch_interrupt();
    fprintf(stderr, "perch record: recording %s for %.1f s (Ctrl+C stops it now)\n", name,
            (double)a->req.duration_ms / 1000.0);
    while (yes && waited < a->req.duration_ms + FINISH_SLACK_MS) {
        if (perch_cli_interrupted() && !stopped) {
            perch_proto_stop_req sreq = {name};
            perch_proto_stop_rep srep;
            void *mem = NULL;
            int err = perch_proto_client_call(c, PERCH_MSG_STOP, &sreq, &srep, sizeof srep, &mem,
                                              PERCH_CLI_TIMEOUT_MS, why, sizeof why);
            perch_free(mem);
            if (err < 0 && err != PERCH_ESTATE)
                return perch_cli_request_failed("record", err, why);
            stopped = true;
        }
        int err = still_recording(c, name, &yes, why, sizeof why);
        if (err < 0)
            return perch_cli_request_failed("record", err, why);
        if (yes) {
            perch_sleep_ms(POLL_MS);
            waited += POLL_MS;
        }
    }
    if (yes) {
        fprintf(stderr, "perch record: %s did not finish %u s after its duration\n", name,
                FINISH_SLACK_MS / 1000);
        return 1;
    }
    return 0;
}

static void print_started(const struct record_args *a, const perch_proto_record_rep *rep)
{
    if (a->json) {
        perch_json w;
        perch_cli_json(&w);
        perch_json_begin_object(&w);
        perch_cli_json_s(&w, "name", rep->name);
        perch_cli_json_s(&w, "path", rep->path);
        perch_cli_json_u(&w, "duration_ms", a->req.duration_ms);
        perch_cli_json_done(&w);
    } else if (a->req.duration_ms == 0) {
        printf("recording to %s (%s); stop it with 'perch stop'\n", rep->name, rep->path);
    } else {
        printf("recorded %s (%s)\n", rep->name, rep->path);
    }
}

int perch_cmd_record(int argc, char **argv)
{
    struct record_args a;
    perch_proto_record_rep rep;
    perch_proto_client *c;
    void *mem = NULL;
    char why[400] = "";
    memset(&a, 0, sizeof a);
    a.req.name = "";
    a.req.options = a.options;
    int rc = parse(argc, argv, &a);
    if (rc >= 0)
        return rc;
    if ((rc = perch_cli_connect("record", &c)) != 0)
        return rc;
    int err = perch_proto_client_call(c, PERCH_MSG_RECORD, &a.req, &rep, sizeof rep, &mem,
                                      PERCH_CLI_TIMEOUT_MS, why, sizeof why);
    if (err < 0)
        rc = perch_cli_request_failed("record", err, why);
    else if (a.req.duration_ms != 0)
        rc = wait_done(c, &a, rep.name);
    if (err == 0 && rc == 0 && a.path != NULL) {
        rc = perch_cli_fetch_recording(c, rep.name, a.path, a.json);
    } else if (err == 0 && rc == 0) {
        print_started(&a, &rep);
    }
    perch_free(mem);
    perch_proto_client_close(c);
    return rc;
}
