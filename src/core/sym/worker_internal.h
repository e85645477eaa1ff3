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

/* A symbol record the worker made, for the identity it names (a tap writes it for a module key
 * of that identity its own file holds). */
struct perch__sw_result {
    perch_symbol_rec rec; /* name owned */
    uint32_t ident;
};

/* An identity the worker was asked about: its first module record (strings owned). */
struct perch__sw_ident {
    perch_module_rec rec;
    char *key; /* perch_sym_module_identity's text */
    int state; /* worker only: 0 not loaded yet, 1 loaded, -1 failed */
};

struct perch_symworker {
    perch_symworker_options opt;
    /* model thread only */
    perch_symhits *hits;
    uint32_t pair_done, ip_done;
    perch__hmap seen; /* ident << 32 | rva */
    perch_sink hits_sink;
    /* shared, under lock */
    perch_mutex *lock;
    perch_cond *wake, *idle;
    struct perch__sw_request *queue;
    uint32_t head, count;
    struct perch__sw_ident **ids; /* by identity number; NULL until asked about */
    uint32_t nids;
    struct perch__sw_result **results; /* each allocated once and kept */
    uint32_t nresults, cap_results;
    bool stop, busy;
    perch_symworker_stats st;
    /* worker thread only */
    perch__hmap spans; /* ident << 32 | span_rva: runs already made */
    perch_thread *thread;
};

/* Result i (any thread), or NULL past the last one. A result is never freed or moved before
 * the worker is destroyed. */
const struct perch__sw_result *perch__symworker_result(perch_symworker *w, uint32_t i);

/* Any thread: the worker's number of the identity whose text is key, false when no address
 * of it was ever queued. */
bool perch__symworker_find_ident(perch_symworker *w, const char *key, uint32_t *ident);

/* Model thread: the identity of module key, false when the worker's sink never saw it. */
bool perch__symworker_ident_of(const perch_symworker *w, uint64_t module_key, uint32_t *ident);

#endif
