/*
 * The input seam of perch export (see record_source.h). Captures and .etl files are wired in
 * when the capture reader and the model land: until then every input is "not supported yet".
 */
#include "perch/error.h"
#include "record_source.h"

int perch_open_record_source(const char *path, perch_record_source *src)
{
    (void)path;
    (void)src;
    return PERCH_ENOTSUP;
}
