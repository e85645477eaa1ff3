/*
 * Event kinds: the short names Perch gives the kernel events it understands.
 *
 * A kind is a property of (kernel group, opcode) alone, so it can be computed for any
 * normalized record before decoding. The names are part of Perch's output (perch dump,
 * summaries, captures) and are stable.
 */
#ifndef PERCH_KIND_H
#define PERCH_KIND_H

#include <stdint.h>

#include "perch/event.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PERCH_KIND_MAP(X)                                                                      \
    X(SampledProfile)                                                                          \
    X(StackWalk)                                                                               \
    X(StackKeyKernel)                                                                          \
    X(StackKeyUser)                                                                            \
    X(StackKeyCreate)                                                                          \
    X(StackKeyDelete)                                                                          \
    X(StackKeyRundown)                                                                         \
    X(ImageLoad)                                                                               \
    X(ImageUnload)                                                                             \
    X(ImageDCStart)                                                                            \
    X(ImageDCEnd)                                                                              \
    X(ProcessStart)                                                                            \
    X(ProcessEnd)                                                                              \
    X(ProcessDCStart)                                                                          \
    X(ProcessDCEnd)                                                                            \
    X(ProcessDefunct)                                                                          \
    X(ThreadStart)                                                                             \
    X(ThreadEnd)                                                                               \
    X(ThreadDCStart)                                                                           \
    X(ThreadDCEnd)                                                                             \
    X(CSwitch)                                                                                 \
    X(ReadyThread)                                                                             \
    X(PmcCounterProf)                                                                          \
    X(PmcCounterConfig)                                                                        \
    X(LastBranchRecord)

typedef enum perch_kind {
#define PERCH_KIND_ENUM(name) PERCH_KIND_##name,
    PERCH_KIND_MAP(PERCH_KIND_ENUM)
#undef PERCH_KIND_ENUM
    PERCH_KIND_OTHER_KERNEL, /* a kernel group event Perch has no kind name for */
    PERCH_KIND_NON_KERNEL,   /* not a kernel (MOF group) event */
    PERCH_KIND_COUNT
} perch_kind;

/* The kind of a kernel event from its normalized group and opcode. */
perch_kind perch_kind_of(uint16_t group, uint8_t opcode);

static inline perch_kind perch_event_kind(const perch_event *ev)
{
    return perch_kind_of(ev->group, ev->opcode);
}

/* "SampledProfile", ..., "other_kernel", "non_kernel"; NULL for an out-of-range value. */
const char *perch_kind_name(perch_kind kind);

#ifdef __cplusplus
}
#endif

#endif
