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
    uint64_t first_raw, last_raw;     /* the earliest and latest sample, in or out */
    uint64_t start_raw, perf_freq;    /* the trace info's clock */
} perch_window;

/* Fills *out with a sink that filters into next through w (w and next must outlive it).
 * from_ns < to_ns. */
void perch_window_sink(perch_window *w, const perch_sink *next, uint64_t from_ns, uint64_t to_ns,
                       perch_sink *out);

/* Where the stream's samples lay, in or out of the window: the first and the last sample's
 * time in ns from the trace's start (0 for one before it). False when no sample came (or no
 * trace info), so a report of an empty window can say where to look instead. */
bool perch_window_sample_span(const perch_window *w, uint64_t *first_ns, uint64_t *last_ns);

#ifdef __cplusplus
}
#endif

#endif
