/*
 * The shared part of the service commands (service_client.h): the connection with its
 * sentences and exit statuses, durations, and the entity tables of reply captures.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "perch/capture.h"
#include "perch/error.h"
#include "perch/platform.h"
#include "service_client.h"

static const char *pipe_name(void)
{
    const char *env = getenv("PERCH_PIPE");
    return env && env[0] ? env : NULL;
}

/* Nothing serves the pipe: say whether the service is installed, and how to start it. */
static int not_running(const char *cmd, const char *why)
{
    bool installed = false, running = false;
    const char *pipe = pipe_name() ? pipe_name() : "\\\\.\\pipe\\perch";
    if (pipe_name() == NULL && perch_pipe_service_state(&installed, &running) == 0 && !installed) {
        fprintf(stderr,
                "perch %s: the Perch service is not installed and no perchd runs in a console "
                "(%s %s). Install it with 'perchd install' (elevated) or run 'perchd run'.\n",
                cmd, why, pipe);
        return PERCH_EXIT_SERVICE_NOT_INSTALLED;
    }
    fprintf(stderr, "perch %s: perchd is not running: %s %s. %s\n", cmd, why, pipe,
            installed && !running ? "The Perch service is installed but stopped: start it with "
                                    "'sc start Perch' (elevated)."
                                  : "Start it with 'perchd run' in an elevated console, or "
                                    "install and start the service ('perchd install', then "
                                    "'sc start Perch').");
    return PERCH_EXIT_SERVICE_NOT_RUNNING;
}

static int connect_failed(const char *cmd, int err, const char *why)
{
    switch (err) {
    case PERCH_ENOTSUP:
        fprintf(stderr,
                "perch %s: this command talks to perchd, the Perch service on Windows (%s). "
                "Here, look at a capture instead: perch report FILE.perch, perch export "
                "FILE.perch.\n",
                cmd, why);
        return PERCH_EXIT_SERVICE_NOT_HERE;
    case PERCH_ENOENT:
        return not_running(cmd, why);
    case PERCH_EACCES:
        fprintf(stderr,
                "perch %s: access denied: %s. perchd answers Administrators and LocalSystem, "
                "and members of Performance Log Users (read-only).\n",
                cmd, why);
        return PERCH_EXIT_ACCESS_DENIED;
    case PERCH_ENOTADMIN: /* the pipe's owner is not Administrators: not perchd */
        fprintf(stderr,
                "perch %s: refusing %s: %s. Stop that program, then start perchd ('sc start "
                "Perch' or 'perchd run', elevated).\n",
                cmd, pipe_name() ? pipe_name() : "\\\\.\\pipe\\perch", why);
        return PERCH_EXIT_NO_ANSWER;
    case PERCH_EBUSY:
    case PERCH_ETIMEDOUT:
    case PERCH_EPIPE:
    case PERCH_EFORMAT:
    case PERCH_EVERSION:
        fprintf(stderr, "perch %s: perchd did not answer: %s\n", cmd, why);
        return PERCH_EXIT_NO_ANSWER;
    default:
        fprintf(stderr, "perch %s: connecting to perchd failed: %s\n", cmd, why);
        return 1;
    }
}

int perch_cli_connect(const char *cmd, perch_proto_client **out)
{
    perch_proto_transport t;
    char why[1024] = "", name[64];
    int err = perch_pipe_connect(pipe_name(), PERCH_CLI_TIMEOUT_MS, &t, why, sizeof why);
    if (err < 0)
        return connect_failed(cmd, err, why);
    snprintf(name, sizeof name, "perch %s (%s)", PERCH_VERSION, cmd);
    err = perch_proto_client_open(&t, name, 0, PERCH_CLI_TIMEOUT_MS, out, why, sizeof why);
    return err < 0 ? connect_failed(cmd, err, why) : 0;
}

int perch_cli_request_failed(const char *cmd, int err, const char *why)
{
    if (err == PERCH_EACCES) {
        fprintf(stderr, "perch %s: %s\n", cmd, why);
        return PERCH_EXIT_ACCESS_DENIED;
    }
    if (err == PERCH_ETIMEDOUT || err == PERCH_EPIPE)
        return connect_failed(cmd, err, why);
    fprintf(stderr, "perch %s: %s\n", cmd, why[0] ? why : perch_strerror(err));
    return 1;
}

int perch_cli_request(const char *cmd, unsigned type, const void *req, void *rep, size_t rep_size,
                      void **mem, perch_proto_client **c)
{
    char why[1024] = "";
    int rc = perch_cli_connect(cmd, c);
    if (rc != 0)
        return rc;
    int err = perch_proto_client_call(*c, type, req, rep, rep_size, mem, PERCH_CLI_TIMEOUT_MS, why,
                                      sizeof why);
    if (err == 0)
        return 0;
    perch_proto_client_close(*c);
    *c = NULL;
    return perch_cli_request_failed(cmd, err, why);
}

int perch_cli_json_only(const char *cmd, int argc, char **argv, void (*usage)(FILE *), bool *json)
{
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--json") == 0) {
            *json = true;
        } else {
            fprintf(stderr, "perch %s: unknown argument '%s'\n\n", cmd, argv[i]);
            usage(stderr);
            return 2;
        }
    }
    return -1;
}

int perch_cli_parse_uint(const char *s, uint64_t max, uint64_t *v)
{
    char *end;
    errno = 0;
    unsigned long long x = strtoull(s, &end, 10);
    if (s[0] == '\0' || s[0] == '-' || *end != '\0' || errno != 0 || x > max)
        return -1;
    *v = x;
    return 0;
}

int perch_cli_bad_value(const char *cmd, const char *opt, const char *value, const char *what)
{
    if (value == NULL)
        fprintf(stderr, "perch %s: %s takes %s\n", cmd, opt, what);
    else
        fprintf(stderr, "perch %s: %s takes %s, not '%s'\n", cmd, opt, what, value);
    return 2;
}

int perch_cli_missing(const char *cmd, const char *what, void (*usage)(FILE *))
{
    fprintf(stderr, "perch %s: %s is required\n\n", cmd, what);
    usage(stderr);
    return 2;
}

int perch_cli_parse_duration_ns(const char *s, uint64_t *ns)
{
    static const struct {
        const char *suffix;
        double scale; /* ns per unit */
    } units[] = {{"ns", 1},   {"us", 1e3},   {"ms", 1e6}, {"s", 1e9},
                 {"m", 60e9}, {"h", 3600e9}, {"", 1e9}};
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno != 0 || !(v >= 0) || s[0] == '-')
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].suffix) != 0)
            continue;
        double x = v * units[i].scale;
        if (x > 1e18)
            return -1;
        *ns = (uint64_t)llround(x);
        return 0;
    }
    return -1;
}

int perch_cli_parse_duration(const char *s, uint64_t *ms)
{
    uint64_t ns;
    if (perch_cli_parse_duration_ns(s, &ns) < 0 || ns / 1000000u > 1000000000000000u)
        return -1;
    *ms = (ns + 500000u) / 1000000u;
    return 0;
}

double perch_cli_ms(uint64_t ticks, uint64_t freq)
{
    return freq ? (double)ticks * 1000.0 / (double)freq : 0.0;
}

static int stdout_sink(void *ctx, const char *data, size_t n)
{
    (void)ctx;
    return fwrite(data, 1, n, stdout) == n ? 0 : PERCH_EIO;
}

void perch_cli_json(perch_json *w)
{
    perch_json_init(w, stdout_sink, NULL);
}

void perch_cli_json_u(perch_json *w, const char *key, uint64_t v)
{
    perch_json_key(w, key);
    perch_json_uint(w, v);
}

void perch_cli_json_s(perch_json *w, const char *key, const char *v)
{
    perch_json_key(w, key);
    perch_json_string(w, v);
}

void perch_cli_json_done(perch_json *w)
{
    perch_json_end_object(w);
    perch_json_newline(w);
    perch_json_flush(w);
}

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

void perch_cli_catch_interrupt(void)
{
    interrupted = 0;
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
}

bool perch_cli_interrupted(void)
{
    return interrupted != 0;
}

static void progress(void *ctx, uint64_t done, uint64_t total)
{
    const char *cmd = ctx;
    if (total)
        fprintf(stderr, "\rperch %s: %" PRIu64 " of %" PRIu64 " bytes (%.0f%%)", cmd, done, total,
                100.0 * (double)done / (double)total);
    else
        fprintf(stderr, "\rperch %s: %" PRIu64 " bytes", cmd, done);
}

int perch_cli_stream_quiet(const char *cmd, perch_proto_client *c, unsigned type, const void *req,
                           const char *path, perch_cli_streamed *got)
{
    perch_output out;
    perch_proto_stream_rep hdr;
    void *mem = NULL;
    char why[1024] = "";
    bool tty = perch_is_terminal(stderr);
    int err = perch_output_open_file(&out, path);
    if (err < 0) {
        fprintf(stderr, "perch %s: %s: %s\n", cmd, path, perch_strerror(err));
        return 1;
    }
    err = perch_proto_client_stream(c, type, req, &hdr, &mem, &out, tty ? progress : NULL,
                                    (void *)cmd, PERCH_CLI_TIMEOUT_MS, why, sizeof why);
    if (tty)
        fprintf(stderr, "\n");
    int close_err = out.close(out.ctx);
    if (err == 0 && close_err < 0) {
        err = close_err;
        snprintf(why, sizeof why, "%s: %s", path, perch_strerror(close_err));
    }
    if (err < 0) {
        remove(path);
        perch_free(mem);
        int rc = perch_cli_request_failed(cmd, err, why);
        fprintf(stderr, "perch %s: %s was not kept\n", cmd, path);
        return rc;
    }
    snprintf(got->name, sizeof got->name, "%s", hdr.name);
    got->bytes = hdr.size;
    perch_free(mem);
    return 0;
}

int perch_cli_stream_to_file(const char *cmd, perch_proto_client *c, unsigned type, const void *req,
                             const char *path, bool json)
{
    perch_cli_streamed got;
    int rc = perch_cli_stream_quiet(cmd, c, type, req, path, &got);
    if (rc != 0)
        return rc;
    if (json) {
        perch_json w;
        perch_cli_json(&w);
        perch_json_begin_object(&w);
        perch_cli_json_s(&w, "name", got.name);
        perch_cli_json_u(&w, "bytes", got.bytes);
        perch_cli_json_s(&w, "file", path);
        perch_cli_json_done(&w);
    } else {
        printf("wrote %s: %" PRIu64 " bytes of %s\n", path, got.bytes, got.name);
    }
    return 0;
}
