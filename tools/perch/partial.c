/*
 * The partial-input warnings of the perch commands (partial.h): one line each, for a capture
 * that stops before its end chunk, for bytes after a capture's end chunk and for an .etl
 * whose reader skipped damaged parts.
 */
#include <inttypes.h>
#include <stdio.h>

#include "partial.h"

bool perch_cli_capture_partial(const perch_capture_status *st)
{
    switch (st->stop) {
    case PERCH_CAPTURE_STOP_NO_END:
    case PERCH_CAPTURE_STOP_TRUNCATED:
    case PERCH_CAPTURE_STOP_CRC:
    case PERCH_CAPTURE_STOP_BAD_CHUNK:
    case PERCH_CAPTURE_STOP_LIMIT:
        return true;
    default:
        return false;
    }
}

void perch_cli_warn_capture(const char *cmd, const char *path, const perch_capture_status *st,
                            uint64_t file_size)
{
    uint64_t lost = file_size > st->good_bytes ? file_size - st->good_bytes : 0;
    double pct = file_size ? 100.0 * (double)lost / (double)file_size : 0.0;
    fprintf(stderr,
            "perch %s: warning: %s: partial capture (%s at byte %" PRIu64 ": %s); used the "
            "first %" PRIu64 " of %" PRIu64 " bytes (every complete chunk), ignored %" PRIu64
            " bytes (%.1f %%)\n",
            cmd, path, perch_capture_stop_name(st->stop), st->offset, st->reason, st->good_bytes,
            file_size, lost, pct);
}

void perch_cli_warn_trailing(const char *cmd, const char *path, const perch_capture_status *st,
                             bool joined)
{
    fprintf(stderr,
            "perch %s: warning: %s: %" PRIu64 " bytes after the capture's end (at byte %" PRIu64
            ") were not read: %s\n",
            cmd, path, st->trailing_bytes, st->offset,
            joined ? "another capture starts there (files joined?); give each capture on its own"
                   : "they are not part of the capture");
}

bool perch_cli_warn_etl(const char *cmd, const char *path, const perch_etl_stats *st)
{
    bool any = false;
    for (int i = 0; i < PERCH_ETL_REASON_COUNT; i++) {
        if (st->errors[i] == 0)
            continue;
        if (!any)
            fprintf(stderr,
                    "perch %s: warning: %s: damaged .etl, skipped what could not be read:", cmd,
                    path);
        fprintf(stderr, "%s %s %" PRIu64 "x (last at byte %" PRIu64 ": %s)", any ? ";" : "",
                perch_etl_reason_name((perch_etl_reason)i), st->errors[i], st->error_offset[i],
                perch_etl_reason_text((perch_etl_reason)i));
        any = true;
    }
    if (any)
        fprintf(stderr, "; counted in the ledger as etl.<reason>\n");
    return any;
}
