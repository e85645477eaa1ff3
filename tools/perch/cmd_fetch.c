/*
 * perch fetch NAME -o FILE: copies a capture from perchd's capture directory (see perch
 * captures) over the pipe into FILE. The bytes are the capture file itself, so FILE is
 * byte for byte the capture on the service's disk (as far as it was written when the fetch
 * began, for a recording still in progress).
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "perch/error.h"
#include "service_client.h"

static void usage(FILE *out)
{
    fprintf(out, "Usage: perch fetch NAME -o FILE [--json]\n\n"
                 "Copies the capture NAME (one of 'perch captures') from perchd into FILE.\n\n"
                 "  -o FILE  where to write it (replaced if it exists)\n"
                 "  --json   print what was written as a JSON object\n"
                 "  --help   show this help\n");
}

int perch_cmd_fetch(int argc, char **argv)
{
    const char *name = NULL, *path = NULL;
    bool json = false;
    perch_proto_client *c;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "-o") == 0) {
            if (i + 1 == argc)
                return perch_cli_bad_value("fetch", "-o", NULL, "a file name");
            path = argv[++i];
        } else if (strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (argv[i][0] != '-' && name == NULL) {
            name = argv[i];
        } else {
            fprintf(stderr, "perch fetch: unexpected argument '%s'\n\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (name == NULL)
        return perch_cli_missing("fetch", "NAME (a capture 'perch captures' lists)", usage);
    if (path == NULL)
        return perch_cli_missing("fetch", "-o FILE (where to write the capture)", usage);
    int rc = perch_cli_connect("fetch", &c);
    if (rc != 0)
        return rc;
    perch_proto_fetch_req req = {name, 0};
    rc = perch_cli_stream_to_file("fetch", c, PERCH_MSG_FETCH, &req, path, json);
    perch_proto_client_close(c);
    return rc;
}
