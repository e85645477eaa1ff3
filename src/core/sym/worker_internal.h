/*
 * The symbol worker's state (worker.c: the thread, the queue, the results; worker_tap.c: the
 * taps in front of capture-writing sinks). The model thread owns hits, seen and the pump
 * positions; everything under lock is shared with the worker thread.
 */
#ifndef PERCH_SYM_WORKER_INTERNAL_H
#define PERCH_SYM_WORKER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "model/hmap.h"
#include "perch/sym.h"
#include "perch/thread.h"

struct perch__sw_request {
    uint32_t ident, rva;
};

/* An identity the worker was asked about: its first module record (strings owned). */
struct perch__sw_ident {
    perch_module_rec rec;
    int state; /* worker only: 0 not loaded yet, 1 loaded, -1 failed */
};

struct perch_symworker {
    perch_symworker_options opt;
    /* model thread only */
    perch_symhits *hits;
    uint32_t pair_done, ip_done;
    perch__hmap seen; /* ident << 32 | rva */
    /* shared, under lock */
    perch_mutex *lock;
    perch_cond *wake, *idle;
    struct perch__sw_request *queue;
    uint32_t head, count;
    struct perch__sw_ident **ids; /* by identity number; NULL until asked about */
    uint32_t nids;
    perch_symbol_rec **results; /* each allocated once and kept (names owned) */
    uint32_t nresults, cap_results;
    bool stop, busy;
    perch_symworker_stats st;
    /* worker thread only */
    perch__hmap spans; /* ident << 32 | span_rva: runs already made */
    perch_thread *thread;
};

/* Result i (any thread), or NULL past the last one. A result is never freed or moved before
 * the worker is destroyed. */
const perch_symbol_rec *perch__symworker_result(perch_symworker *w, uint32_t i);

#endif
