/*
 * The state of perch_symhits (hits.c collects it from a record stream; symbolize.c resolves
 * it): modules by key with their identities, threads, stacks, the (stack, thread) pairs and
 * the (module, IP) pairs samples used, and the names the stream already carried.
 */
#ifndef PERCH_SYM_HITS_INTERNAL_H
#define PERCH_SYM_HITS_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "model/hmap.h"
#include "perch/sym.h"

struct perch__hit_module {
    uint64_t key, process_key, base, size;
    uint32_t ident;
};

struct perch__hit_ident {
    char *key;
    perch_module_rec rec; /* the first module record with this identity (strings owned) */
    uint32_t modules;
    uint32_t *rvas; /* addresses hit, unsorted until perch_symbolize */
    uint32_t nrva, cap;
};

struct perch__hit_stack {
    uint32_t first; /* index of its first frame in frames */
    uint32_t count;
    uint32_t id;
};

struct perch__hit_ip {
    uint64_t module_key, ip;
};

struct perch_symhits {
    unsigned pointer_size;
    struct perch__hit_module *mods;
    uint32_t nmod, cap_mod;
    perch__hmap mod_by_key;
    struct perch__hit_ident *ids;
    uint32_t nid, cap_id;
    perch__hmap id_by_hash;
    uint64_t *thread_process; /* by thread index */
    uint32_t nthread, cap_thread;
    perch__hmap thread_by_key;
    struct perch__hit_stack *stacks;
    uint32_t nstack, cap_stack;
    perch__hmap stack_by_id;
    uint64_t *frames;
    uint32_t nframe, cap_frame;
    uint64_t *pairs; /* stack id << 32 | thread index, each once */
    uint32_t npair, cap_pair;
    perch__hmap pair_seen;
    struct perch__hit_ip *ips;
    uint32_t nip, cap_ip;
    perch__hmap ip_seen;
    perch_symnames *existing;
};

/* Adds rva to the hits of identity i. */
int perch__symhits_add(perch_symhits *h, uint32_t i, uint32_t rva);

/* Credits the frames of the (stack, thread) pairs from pair_from on and the (module, IP)
 * pairs from ip_from on to their modules' identities: fn(ctx, identity, rva) for each
 * (symbolize.c; the worker calls it for what arrived since its last pass). */
int perch__symhits_credit(perch_symhits *h, uint32_t pair_from, uint32_t ip_from,
                          int (*fn)(void *ctx, uint32_t ident, uint32_t rva), void *ctx);

/* Bounds h for a stream without end (the symbol worker, right after a pass credited every
 * pair): the (stack, thread) and (module, IP) pairs are forgotten (one seen again is credited
 * again), and when the stacks hold more than max_frames frames the oldest stacks are forgotten
 * until at most half of max_frames remain (a later sample with a forgotten stack credits its
 * IP only). Returns the number of stacks forgotten. */
uint32_t perch__symhits_trim(perch_symhits *h, uint32_t max_frames);

/* The first module key (in record order) of identity i, 0 when none. */
uint64_t perch__symhits_first_key(const perch_symhits *h, uint32_t i);

#endif
