/*
 * perch_symhits: the sink perch symbolize feeds a capture through (include/perch/sym.h). It
 * keeps the last record of every module (with its identity), every thread's process, every
 * stack's frames, and, once each, the (stack, thread) and (module, IP) pairs samples used;
 * the stream's own symbol records go to a perch_symnames so that perch_symbolize only asks
 * for what is not named yet. Nothing is resolved here: a version 1 capture sends modules
 * after the samples that use them.
 */
#include <string.h>

#include "model/hmap.h"
#include "model/mem.h"
#include "perch/error.h"
#include "perch/sym.h"
#include "sym/hits_internal.h"

#define MAX_ITEMS (1u << 28)
#define ID_MAX    640

int perch_symhits_create(perch_symhits **out)
{
    perch_symhits *h = perch__calloc(1, sizeof *h);
    if (h == NULL)
        return PERCH_ENOMEM;
    h->pointer_size = 8;
    int err = perch_symnames_create(&h->existing);
    if (err) {
        perch__free(h);
        return err;
    }
    *out = h;
    return 0;
}

void perch_symhits_destroy(perch_symhits *h)
{
    if (h == NULL)
        return;
    for (uint32_t i = 0; i < h->nid; i++) {
        perch__free(h->ids[i].key);
        perch__free((char *)h->ids[i].rec.path);
        perch__free((char *)h->ids[i].rec.pdb_name);
        perch__free(h->ids[i].rvas);
    }
    perch__free(h->ids);
    perch__free(h->mods);
    perch__free(h->thread_process);
    perch__free(h->stacks);
    perch__free(h->frames);
    perch__free(h->pairs);
    perch__free(h->ips);
    perch__hmap_free(&h->mod_by_key);
    perch__hmap_free(&h->id_by_hash);
    perch__hmap_free(&h->thread_by_key);
    perch__hmap_free(&h->stack_by_id);
    perch__hmap_free(&h->pair_seen);
    perch__hmap_free(&h->ip_seen);
    perch_symnames_destroy(h->existing);
    perch__free(h);
}

int perch__symhits_add(perch_symhits *h, uint32_t i, uint32_t rva)
{
    struct perch__hit_ident *id = &h->ids[i];
    int err =
        perch__grow_array((void **)&id->rvas, sizeof *id->rvas, &id->cap, id->nrva + 1, MAX_ITEMS);
    if (!err)
        id->rvas[id->nrva++] = rva;
    return err;
}

static uint64_t hash_of(const char *s)
{
    uint64_t x = 0xcbf29ce484222325ull;
    for (; *s; s++)
        x = (x ^ (uint8_t)*s) * 0x100000001b3ull;
    return x;
}

/* A new identity for rec (its key text in key). */
static int new_ident(perch_symhits *h, const perch_module_rec *rec, const char *key,
                     uint32_t *index)
{
    int err =
        perch__grow_array((void **)&h->ids, sizeof *h->ids, &h->cap_id, h->nid + 1, MAX_ITEMS);
    if (err)
        return err;
    struct perch__hit_ident *id = &h->ids[h->nid];
    memset(id, 0, sizeof *id);
    id->rec = *rec;
    id->key = perch__strdup(key);
    id->rec.path = perch__strdup(rec->path ? rec->path : "");
    id->rec.pdb_name = perch__strdup(rec->pdb_name ? rec->pdb_name : "");
    if (!id->key || !id->rec.path || !id->rec.pdb_name) {
        perch__free(id->key);
        perch__free((char *)id->rec.path);
        perch__free((char *)id->rec.pdb_name);
        return PERCH_ENOMEM;
    }
    *index = h->nid++;
    return 0;
}

static int ident_of(perch_symhits *h, const perch_module_rec *rec, uint32_t *index)
{
    perch_sym_module m;
    char key[ID_MAX];
    uint32_t at;
    perch_sym_module_from_rec(rec, &m);
    perch_sym_module_identity(&m, key, sizeof key);
    uint64_t x = hash_of(key);
    if (perch__hmap_get(&h->id_by_hash, x, &at))
        for (uint32_t i = at; i < h->nid; i++) /* first the hashed one, then a collision */
            if (strcmp(h->ids[i].key, key) == 0) {
                *index = i;
                return 0;
            }
    int err = new_ident(h, rec, key, index);
    if (!err && !perch__hmap_get(&h->id_by_hash, x, &at))
        err = perch__hmap_put(&h->id_by_hash, x, *index);
    return err;
}

static int on_module(void *ctx, const perch_module_rec *rec)
{
    perch_symhits *h = ctx;
    uint32_t i, ident;
    int err = perch_symnames_module(h->existing, rec);
    if (!err)
        err = ident_of(h, rec, &ident);
    if (err)
        return err;
    if (!perch__hmap_get(&h->mod_by_key, rec->key, &i)) {
        err = perch__grow_array((void **)&h->mods, sizeof *h->mods, &h->cap_mod, h->nmod + 1,
                                MAX_ITEMS);
        if (!err)
            err = perch__hmap_put(&h->mod_by_key, rec->key, h->nmod);
        if (err)
            return err;
        i = h->nmod++;
        h->ids[ident].modules++;
    }
    h->mods[i] =
        (struct perch__hit_module){rec->key, rec->process_key, rec->base, rec->size, ident};
    return 0;
}

static int thread_index(perch_symhits *h, uint64_t key, uint32_t *index)
{
    if (perch__hmap_get(&h->thread_by_key, key, index))
        return 0;
    int err = perch__grow_array((void **)&h->thread_process, sizeof *h->thread_process,
                                &h->cap_thread, h->nthread + 1, MAX_ITEMS);
    if (!err)
        err = perch__hmap_put(&h->thread_by_key, key, h->nthread);
    if (err)
        return err;
    h->thread_process[h->nthread] = 0;
    *index = h->nthread++;
    return 0;
}

static int on_thread(void *ctx, const perch_thread_rec *rec)
{
    perch_symhits *h = ctx;
    uint32_t i;
    int err = thread_index(h, rec->key, &i);
    if (!err)
        h->thread_process[i] = rec->process_key;
    return err;
}

static int on_stack(void *ctx, const perch_stack_rec *rec)
{
    perch_symhits *h = ctx;
    uint32_t i;
    if (perch__hmap_get(&h->stack_by_id, rec->id, &i))
        return 0;
    int err = perch__grow_array((void **)&h->stacks, sizeof *h->stacks, &h->cap_stack,
                                h->nstack + 1, MAX_ITEMS);
    if (!err)
        err = perch__grow_array((void **)&h->frames, sizeof *h->frames, &h->cap_frame,
                                h->nframe + rec->frame_count, MAX_ITEMS);
    if (!err)
        err = perch__hmap_put(&h->stack_by_id, rec->id, h->nstack);
    if (err)
        return err;
    h->stacks[h->nstack++] = (struct perch__hit_stack){h->nframe, rec->frame_count, rec->id};
    if (rec->frame_count > 0)
        memcpy(h->frames + h->nframe, rec->frames, rec->frame_count * sizeof *rec->frames);
    h->nframe += rec->frame_count;
    return 0;
}

/* Records the (module, IP) pair once. */
static int note_ip(perch_symhits *h, uint64_t module_key, uint64_t ip)
{
    uint64_t k = perch__mix64(module_key * 0x9e3779b97f4a7c15ull ^ ip);
    uint32_t at;
    if (perch__hmap_get(&h->ip_seen, k, &at) && h->ips[at].module_key == module_key &&
        h->ips[at].ip == ip)
        return 0;
    int err =
        perch__grow_array((void **)&h->ips, sizeof *h->ips, &h->cap_ip, h->nip + 1, MAX_ITEMS);
    if (!err && !perch__hmap_get(&h->ip_seen, k, &at))
        err = perch__hmap_put(&h->ip_seen, k, h->nip);
    if (!err)
        h->ips[h->nip++] = (struct perch__hit_ip){module_key, ip};
    return err;
}

static int on_sample(void *ctx, const perch_sample_rec *rec)
{
    perch_symhits *h = ctx;
    uint32_t t, seen;
    int err = rec->module_key ? note_ip(h, rec->module_key, rec->ip) : 0;
    if (err || rec->stack_id == 0)
        return err;
    if ((err = thread_index(h, rec->thread_key, &t)) != 0)
        return err;
    uint64_t pair = (uint64_t)rec->stack_id << 32 | t;
    if (perch__hmap_get(&h->pair_seen, pair, &seen))
        return 0;
    err = perch__grow_array((void **)&h->pairs, sizeof *h->pairs, &h->cap_pair, h->npair + 1,
                            MAX_ITEMS);
    if (!err)
        err = perch__hmap_put(&h->pair_seen, pair, 1);
    if (!err)
        h->pairs[h->npair++] = pair;
    return err;
}

uint32_t perch__symhits_trim(perch_symhits *h, uint32_t max_frames)
{
    uint32_t drop = 0, left = h->nframe, kept = 0;
    h->npair = h->nip = 0;
    perch__hmap_free(&h->pair_seen);
    perch__hmap_free(&h->ip_seen);
    if (h->nframe <= max_frames)
        return 0;
    while (drop < h->nstack && left > max_frames / 2)
        left -= h->stacks[drop++].count;
    uint32_t first = drop < h->nstack ? h->stacks[drop].first : h->nframe;
    memmove(h->frames, h->frames + first, (size_t)(h->nframe - first) * sizeof *h->frames);
    h->nframe -= first;
    perch__hmap_free(&h->stack_by_id);
    for (uint32_t i = drop; i < h->nstack; i++) {
        struct perch__hit_stack s = h->stacks[i];
        s.first -= first;
        if (perch__hmap_put(&h->stack_by_id, s.id, kept) == 0)
            h->stacks[kept++] = s; /* out of memory: that one is forgotten too */
    }
    uint32_t gone = h->nstack - kept;
    h->nstack = kept;
    return gone;
}

static int on_info(void *ctx, const perch_trace_info *info)
{
    perch_symhits *h = ctx;
    h->pointer_size = info->pointer_size == 4 ? 4 : 8;
    return 0;
}

static int on_symbol(void *ctx, const perch_symbol_rec *rec)
{
    perch_symhits *h = ctx;
    return perch_symnames_symbol(h->existing, rec);
}

void perch_symhits_sink(perch_symhits *h, perch_sink *sink)
{
    memset(sink, 0, sizeof *sink);
    sink->ctx = h;
    sink->trace_info = on_info;
    sink->module = on_module;
    sink->thread = on_thread;
    sink->stack = on_stack;
    sink->sample = on_sample;
    sink->symbol = on_symbol;
}
