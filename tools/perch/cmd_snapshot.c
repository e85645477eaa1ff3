/*
 * perch snapshot [--last 30s] -o FILE: asks perchd to write its flight recorder's last
 * seconds as a capture (kept in its capture directory) and copies it into FILE, without
 * pausing the session: the answer to "what just happened?".
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "perch/error.h"
#include "service_client.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: perch snapshot [--last DURATION] -o FILE [--json]\n\n"
                 "Writes the last seconds perchd's flight recorder holds as a capture and\n"
                 "copies it into FILE (perchd also keeps it in its capture directory).\n\n"
                 "  --last D  how much: 30s, 2m, 500ms (default: all it holds)\n"
                 "  -o FILE   where to write it (replaced if it exists)\n"
                 "  --json    print what was written as a JSON object\n"
                 "  --help    show this help\n");
}

int perch_cmd_snapshot(int argc, char **argv)
{
    const char *path = NULL;
    bool json = false;
    perch_proto_snapshot_req req = {0};
    perch_proto_client *c;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "-o") == 0) {
            if (i + 1 == argc)
                return perch_cli_bad_value("snapshot", "-o", NULL, "a file name");
            path = argv[++i];
        } else if (strcmp(argv[i], "--last") == 0) {
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            if (v == NULL || perch_cli_parse_duration(v, &req.last_ms) < 0 || req.last_ms == 0)
                return perch_cli_bad_value("snapshot", "--last", v,
                                           "a duration above 0 such as 30s or 2m (leave it out "
                                           "for all the flight recorder holds)");
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else {
            fprintf(stderr, "perch snapshot: unexpected argument '%s'\n\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (path == NULL)
        return perch_cli_missing("snapshot", "-o FILE (where to write the snapshot)", usage);
    int rc = perch_cli_connect("snapshot", &c);
    if (rc != 0)
        return rc;
    rc = perch_cli_stream_to_file("snapshot", c, PERCH_MSG_SNAPSHOT, &req, path, json);
    perch_proto_client_close(c);
    return rc;
}
