/*
 * A time window over a record stream: a sink that passes on what falls inside [from, to) of
 * the trace and everything that is not tied to a moment. Times are nanoseconds from the
 * trace's start (its trace info: start_raw and perf_freq), so the same window picks the same
 * records from an .etl, its capture and a capture perchd made live from the same session.
 *
 * Inside means: a sample or an LBR record whose timestamp is in [from, to); a slice cut to its
 * part inside (its ready time dropped when its start was cut; its counter deltas stay those of
 * the whole slice); trace info, entities,
 * counters, stacks, symbols, the ledger, statistics and the finish always pass, so the
 * window's records keep their names. A stream without trace info before its first timed record
 * is refused (PERCH_EFORMAT): the window could not be placed.
 */
#ifndef PERCH_WINDOW_H
#define PERCH_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "perch/records.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PERCH_WINDOW_END UINT64_MAX /* to: up to the end of the trace */

typedef struct perch_window {
    const perch_sink *next;
    uint64_t from_ns, to_ns;   /* as given */
    uint64_t from_raw, to_raw; /* in the trace's clock, once its info came */
    bool placed;
    uint64_t samples_in, samples_out; /* samples passed on, and left out */
} perch_window;

/* Fills *out with a sink that filters into next through w (w and next must outlive it).
 * from_ns < to_ns. */
void perch_window_sink(perch_window *w, const perch_sink *next, uint64_t from_ns, uint64_t to_ns,
                       perch_sink *out);

#ifdef __cplusplus
}
#endif

#endif
