/*
 * perchd: the Perch Windows service (Windows builds only). The service itself, the kernel
 * logger session and the pipe the CLI talks to, is not written yet: for now this program
 * answers --version and --help and otherwise says plainly that the service is not available,
 * exiting non-zero so no script mistakes it for a running service.
 */
#include <stdio.h>
#include <string.h>

#include "perch/error.h"

static void print_usage(FILE *out)
{
    fprintf(out, "Usage: perchd --version | --help\n\n"
                 "perchd will be the Perch Windows service that records kernel traces.\n"
                 "It is not implemented yet in this build.\n");
}

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("perchd %s\n", PERCH_VERSION);
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        print_usage(stdout);
        return 0;
    }
    fprintf(stderr, "perchd: the service is not implemented yet (%s); nothing was started\n",
            perch_strerror(PERCH_ENOTSUP));
    return 1;
}
