/*
 * perch dump: prints the records of an .etl file as JSON Lines. (Placeholder until the ETL
 * reader lands: it reports that the reader is not built yet.)
 */
#include <stdio.h>

#include "commands.h"
#include "perch/error.h"

int perch_cmd_dump(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return perch_cli_error("dump", PERCH_ENOTSUP);
}
