/*
 * perch stop: stops the recording perchd is making (started by perch record without a
 * duration, or by the configuration). The capture is finished and stays in the capture
 * directory; perch fetch copies it.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "perch/error.h"
#include "service_client.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: perch stop [--name NAME] [--json]\n\n"
                 "Stops the recording perchd is making (needs administrator rights).\n\n"
                 "  --name N  the recording to stop (default: the current one)\n"
                 "  --json    print the result as a JSON object\n"
                 "  --help    show this help\n");
}

int perch_cmd_stop(int argc, char **argv)
{
    perch_proto_stop_req req = {""};
    perch_proto_stop_rep rep;
    perch_proto_client *c;
    bool json = false;
    void *mem = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--name") == 0) {
            if (i + 1 == argc)
                return perch_cli_bad_value("stop", "--name", NULL, "the recording's name");
            req.name = argv[++i];
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else {
            fprintf(stderr, "perch stop: unknown argument '%s'\n\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    int rc = perch_cli_request("stop", PERCH_MSG_STOP, &req, &rep, sizeof rep, &mem, &c);
    if (rc != 0)
        return rc;
    if (json) {
        perch_json w;
        perch_cli_json(&w);
        perch_json_begin_object(&w);
        perch_cli_json_s(&w, "name", rep.name);
        perch_cli_json_u(&w, "bytes", rep.bytes);
        perch_cli_json_u(&w, "duration_ms", rep.duration_ms);
        perch_cli_json_done(&w);
    } else {
        printf("stopped %s: %" PRIu64 " bytes, %.1f s (fetch it with 'perch fetch %s -o "
               "FILE')\n",
               rep.name, rep.bytes, (double)rep.duration_ms / 1000.0, rep.name);
    }
    perch_free(mem);
    perch_proto_client_close(c);
    return rc;
}
