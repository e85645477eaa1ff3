/*
 * The model: consumes normalized event records in time order (from the .etl reader today, from
 * the live consumer later, through the same perch_model_feed entry point), decodes them, and
 * maintains processes and threads over time, per-thread CPU slices, samples with assembled and
 * interned stacks, time-aware module maps, LBR attachments and a ledger of everything that did
 * not become model data. Each finished record goes to a perch_sink (include/perch/records.h)
 * as soon as it is final; the model itself keeps only live state (open slices, pending stack
 * parts and samples, the stack table, live entities and modules).
 *
 * Rules it follows (docs/model.md): a CSwitch is a switch-out of OldThreadId and a switch-in of
 * NewThreadId on the record's CPU; a sample's stack parts are the StackWalk / StackKey records
 * with its (timestamp, thread), assembled as the kernel segments of all parts then the user
 * segments; a key reference resolves to the first definition of its key at or after the
 * reference's own timestamp.
 */
#ifndef PERCH_MODEL_H
#define PERCH_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "perch/event.h"
#include "perch/records.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct perch_model perch_model;

typedef struct perch_model_options {
    size_t sz; /* sizeof(perch_model_options) */
    /* A sample with a stack part waits for the rest of its stack (its user part) at most this
     * long in trace time (seconds of the trace clock) once it has no unresolved key
     * reference. 0: the default, 4 s. */
    double stack_wait_seconds;
    /* At most this many samples wait at once; the oldest is emitted when it is exceeded
     * (counted as stack.wait_count_bound). 0: the default, 1 << 20. */
    uint32_t max_pending_samples;
    /* The same for samples that have no stack part yet, and for samples of threads that never
     * run in user mode (the idle thread, threads of the System process): a stack's first part
     * is logged right after its sample, or none is (docs/model.md). 0: the default, 0.1 s. */
    double kernel_wait_seconds;
    /* At most this many thread entities and this many process entities live at once. At the
     * cap an ended entity is forgotten to make room (ledger entity.thread_forgotten /
     * entity.process_forgotten: a late reference to it gets a new provisional entity); when
     * none has ended, the oldest live one is ended early (entity.thread_evicted /
     * entity.process_evicted). 0: the default, 1 << 20. */
    uint32_t max_entities;
    /* At most this many modules loaded at once in one address map (a process's, or the kernel
     * map). A load into a full map is emitted as a record but not mapped, so no sample is
     * attributed to it (ledger module.map_full). 0: the default, 1 << 16. */
    uint32_t max_modules_per_map;
} perch_model_options;

/* Creates a model that sends its records to *sink (copied; sink->ctx is borrowed and must
 * outlive the model). *info is copied (its strings too) and handed to sink->trace_info at
 * once. opts may be NULL. Returns 0, PERCH_EINVAL, PERCH_ENOMEM, or the sink's error; on
 * failure *out is untouched. */
int perch_model_create(const perch_sink *sink, const perch_trace_info *info,
                       const perch_model_options *opts, perch_model **out);

/* Feeds one record (time order expected; an earlier timestamp than the last is counted as
 * model.time_order and used as is). The model decodes it itself and counts the result.
 * ev->payload is only read during the call. Returns 0, or the first error of the sink or of an
 * allocation (PERCH_ENOMEM / PERCH_ELIMIT); after an error the model only accepts destroy. */
int perch_model_feed(perch_model *m, const perch_event *ev);

/* False when perch_model_feed reads none of ev's payload and ext bytes: no decoder knows the
 * record (perch_decode_known), its pointer size is 4 or 8 and its payload is not NULL with a
 * length, so the model only counts it (by kind, time and PERCH_EUNKNOWN from the fields
 * before the payload). A producer that copies records to the model's thread may then hand it
 * with payload and ext dropped (NULL, 0); the model's state and records are the same. */
bool perch_model_reads_payload(const perch_event *ev);

/* Adds count to the ledger reason (a producer's losses: "etl.record_size", ...). reason is
 * copied. Returns 0 or PERCH_ENOMEM / PERCH_ELIMIT. */
int perch_model_ledger_add(perch_model *m, const char *reason, uint64_t count);

/* Ends the trace: emits pending samples (kernel-only where the user part never came), closes
 * open slices at the last timestamp seen (marked open-end), emits live modules, threads and
 * processes, then the ledger, the statistics, and calls sink->finish. Returns 0 or the first
 * error. Feeding after finish is PERCH_ESTATE. */
int perch_model_finish(perch_model *m);

/* Emits to `to` (its ledger and stat callbacks; either may be NULL) the ledger and the
 * statistics perch_model_finish would write if the trace ended now: non-zero ledger entries,
 * every statistic. The model's own sink is not called and nothing changes. Same thread as
 * perch_model_feed. Returns 0 or the first error of `to`. The live engine gives a sink that
 * came late (a recording started while the service runs) the ledger's growth since it came. */
int perch_model_emit_counters(const perch_model *m, const perch_sink *to);

/* Samples the model holds back now, waiting for their stack parts (not yet given to the
 * sink). 0 for NULL. Same thread as perch_model_feed. */
uint64_t perch_model_samples_waiting(const perch_model *m);

/* Frees the model. Accepts NULL. Does not call the sink. */
void perch_model_destroy(perch_model *m);

/* Running CPU totals (raw ticks) kept consistent with the emitted slices: busy time of real
 * threads on cpu, idle-thread time on cpu. PERCH_ERANGE for a CPU never seen. */
int perch_model_cpu_totals(const perch_model *m, uint16_t cpu, uint64_t *busy, uint64_t *idle);

#ifdef __cplusplus
}
#endif

#endif
