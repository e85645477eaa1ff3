/*
 * Formats whose writers are not in yet: they refuse with PERCH_ENOTSUP at creation.
 */
#include "export/export_internal.h"
#include "perch/error.h"

static int pending_create(const perch_export_options *opt, perch_output *out, void **state)
{
    (void)opt;
    (void)out;
    (void)state;
    return PERCH_ENOTSUP;
}

const perch__format perch__format_gecko = {"gecko", "profiler.firefox.com", 1, pending_create,
                                           perch__collect_bind_pass, perch__collect_destroy};
