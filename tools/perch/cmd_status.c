/*
 * perch status: what the running perchd is doing, from its STATUS reply: the session (state,
 * kind, name), the degraded-mode sentence, every feature on or off with the reason, events
 * per second, losses by reason, recordings in progress, the flight recorder and the live
 * window, the pipe's clients, uptime, and the role this client was given. --json prints the
 * same as one object (docs/protocol.md names the fields).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "perch/error.h"
#include "service_client.h"

static const char *const states[] = {"stopped",  "starting", "running",
                                     "degraded", "failed",   "restarting"};
static const char *const kinds[] = {"no session", "private system logger", "NT Kernel Logger"};

static void usage(FILE *out)
{
    fprintf(out, "Usage: perch status [--json]\n\n"
                 "Shows what the running perchd is doing: its kernel session, what is on and\n"
                 "what is off and why, events per second, losses, recordings, the flight\n"
                 "recorder, and the pipe's clients.\n\n"
                 "  --json   one JSON object instead (fields: docs/protocol.md)\n"
                 "  --help   show this help\n");
}

static void print_text(const perch_proto_status *st, const perch_proto_hello_rep *h)
{
    printf("%s (pid %u), up %.1f s; this client: %s\n", st->server, (unsigned)h->pid,
           (double)st->uptime_ms / 1000.0,
           h->role == PERCH_ROLE_ADMIN ? "administrator" : "read-only");
    printf("session: %s, %s%s%s%s\n", states[st->session_state], kinds[st->session_kind],
           st->session_name[0] ? " \"" : "", st->session_name, st->session_name[0] ? "\"" : "");
    if (st->degraded[0])
        printf("degraded: %s\n", st->degraded);
    printf("events: %" PRIu64 " total, %" PRIu64 "/s over the last %.1f s\n", st->events_total,
           st->events_per_sec, (double)st->rate_window_ms / 1000.0);
    for (uint32_t i = 0; i < st->feature_count; i++)
        printf("  %-20s %s%s%s\n", st->features[i].name, st->features[i].enabled ? "on" : "off",
               st->features[i].reason[0] ? ": " : "", st->features[i].reason);
    printf("losses:%s", st->loss_count ? "" : " none");
    for (uint32_t i = 0; i < st->loss_count; i++)
        printf("%s %s %" PRIu64, i ? "," : "", st->losses[i].name, st->losses[i].count);
    printf("\n");
    for (uint32_t i = 0; i < st->recording_count; i++) {
        const perch_proto_capture *r = &st->recordings[i];
        printf("recording: %s, %" PRIu64 " bytes, %.1f s", r->name, r->bytes,
               (double)r->elapsed_ms / 1000.0);
        if (r->duration_ms)
            printf(" of %.1f s", (double)r->duration_ms / 1000.0);
        printf("\n");
    }
    printf("flight recorder: %.1f s held, %" PRIu64 " of %" PRIu64 " bytes, %" PRIu64
           " chunks dropped\n",
           (double)st->recorder_span_ms / 1000.0, st->recorder_bytes, st->recorder_cap_bytes,
           st->recorder_dropped);
    printf("live window: %.1f s held, %" PRIu64 " bytes, %" PRIu64 " records dropped\n",
           (double)st->window_span_ms / 1000.0, st->window_bytes, st->window_dropped);
    printf("pipe: %u client(s), %" PRIu64 " dropped%s%s\n", (unsigned)st->clients,
           st->clients_dropped, st->pipe_state[0] ? "; " : "", st->pipe_state);
}

static void print_json(const perch_proto_status *st, const perch_proto_hello_rep *h)
{
    perch_json w;
    perch_cli_json(&w);
    perch_json_begin_object(&w);
    perch_cli_json_s(&w, "server", st->server);
    perch_cli_json_u(&w, "pid", h->pid);
    perch_cli_json_s(&w, "role", h->role == PERCH_ROLE_ADMIN ? "admin" : "read-only");
    perch_cli_json_u(&w, "uptime_ms", st->uptime_ms);
    perch_cli_json_s(&w, "session_state", states[st->session_state]);
    perch_cli_json_s(&w, "session_kind", kinds[st->session_kind]);
    perch_cli_json_s(&w, "session_name", st->session_name);
    perch_cli_json_s(&w, "degraded", st->degraded);
    perch_json_key(&w, "features");
    perch_json_begin_array(&w);
    for (uint32_t i = 0; i < st->feature_count; i++) {
        perch_json_begin_object(&w);
        perch_cli_json_s(&w, "name", st->features[i].name);
        perch_json_key(&w, "enabled");
        perch_json_bool(&w, st->features[i].enabled);
        perch_cli_json_s(&w, "reason", st->features[i].reason);
        perch_json_end_object(&w);
    }
    perch_json_end_array(&w);
    perch_cli_json_u(&w, "events_total", st->events_total);
    perch_cli_json_u(&w, "events_per_sec", st->events_per_sec);
    perch_cli_json_u(&w, "rate_window_ms", st->rate_window_ms);
    perch_json_key(&w, "losses");
    perch_json_begin_object(&w);
    for (uint32_t i = 0; i < st->loss_count; i++)
        perch_cli_json_u(&w, st->losses[i].name, st->losses[i].count);
    perch_json_end_object(&w);
    perch_json_key(&w, "recordings");
    perch_json_begin_array(&w);
    for (uint32_t i = 0; i < st->recording_count; i++) {
        perch_json_begin_object(&w);
        perch_cli_json_s(&w, "name", st->recordings[i].name);
        perch_cli_json_u(&w, "bytes", st->recordings[i].bytes);
        perch_cli_json_u(&w, "elapsed_ms", st->recordings[i].elapsed_ms);
        perch_cli_json_u(&w, "duration_ms", st->recordings[i].duration_ms);
        perch_json_end_object(&w);
    }
    perch_json_end_array(&w);
    perch_cli_json_u(&w, "recorder_span_ms", st->recorder_span_ms);
    perch_cli_json_u(&w, "recorder_bytes", st->recorder_bytes);
    perch_cli_json_u(&w, "recorder_cap_bytes", st->recorder_cap_bytes);
    perch_cli_json_u(&w, "recorder_dropped", st->recorder_dropped);
    perch_cli_json_u(&w, "window_span_ms", st->window_span_ms);
    perch_cli_json_u(&w, "window_bytes", st->window_bytes);
    perch_cli_json_u(&w, "window_dropped", st->window_dropped);
    perch_cli_json_u(&w, "clients", st->clients);
    perch_cli_json_u(&w, "clients_dropped", st->clients_dropped);
    perch_cli_json_s(&w, "pipe_state", st->pipe_state);
    perch_cli_json_done(&w);
}

int perch_cmd_status(int argc, char **argv)
{
    bool json = false;
    perch_proto_client *c;
    perch_proto_status st;
    void *mem = NULL;
    int rc = perch_cli_json_only("status", argc, argv, usage, &json);
    if (rc >= 0)
        return rc;
    if ((rc = perch_cli_request("status", PERCH_MSG_STATUS, NULL, &st, sizeof st, &mem, &c)))
        return rc;
    if (json)
        print_json(&st, perch_proto_client_hello(c));
    else
        print_text(&st, perch_proto_client_hello(c));
    perch_free(mem);
    perch_proto_client_close(c);
    return 0;
}
