/*
 * Timer samples of the chrome export as CPU profiles: per track (pid, tid) one "Profile"
 * event (ph "P", its ts = the profile's start) and "ProfileChunk" events carrying the call
 * tree nodes first seen since the last chunk ({id, parent, callFrame}) and the samples as node
 * ids with time deltas in microseconds. This is what V8 writes into Chrome traces; the
 * DevTools Performance panel draws it as a flame chart under the thread and Perfetto imports
 * it as that thread's CPU samples. Instant events ("ph":"i") are drawn by neither.
 *
 * A profile sample lasts until the next one, so a thread sampled at 0 ms and then at 500 ms
 * would look busy for 500 ms. A sample of the root node ends the frames without starting
 * any (DevTools skips root samples), so one is queued one sampling interval after every real
 * sample that is not followed by another within 1.5 intervals, and after the last one.
 *
 * The model emits a sample when its stack is complete, so a thread's samples arrive slightly
 * out of time order (a sample waiting for its user half comes after later kernel-only ones).
 * Each track keeps up to 2 x CHUNK samples, sorts them by time and writes the older half: an
 * order error within CHUNK samples of one thread is repaired; an older one is written at the
 * time of the last sample written (a delta of 0), never as a negative delta.
 *
 * A thread with samples and no slices gets a complete event over its profile ("CPU
 * samples"): DevTools builds thread tracks and the trace's time range from complete events
 * only.
 *
 * Each track finds a node's children through a table of its own whose 16-byte slots hold the
 * whole key (parent, address) and the node id, so a probe of a stack walk reads one slot
 * (the shared location table read a slot, then the location it named: two cache misses).
 * A frame's module is resolved only when its node is named: it is the module of the address in
 * the track's process (that of its first stack; a node of another process, or the sample's own
 * ip with its module key, is resolved when it is made), so the thread that writes the node's
 * text resolves it (chrome_async.c: the second formatter).
 *
 * Memory: the distinct call-tree nodes of each track (a 16-byte node, and 16-byte child
 * slots filled 3/8 to 3/4) and up to 2 x CHUNK queued samples per track; every byte charged
 * to the exporter's budget.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/chrome_profile.h"
#include "perch/error.h"
#include "util/mem.h"

#define CHUNK      1024
#define MAX_WEIGHT 1000
#define ROOT_ID    1u
#define LEAF_CACHE ((size_t)1 << 16) /* entries of the leaf cache, a power of two */

static int track_for(perch__profiles *p, uint32_t pid, uint32_t tid, perch__ptrack **out)
{
    uint64_t key = ((uint64_t)pid << 32 | tid) + 1;
    uint32_t idx;
    int err;
    if (!perch__map_get(&p->track_map, key, &idx)) {
        err = perch__grow(p->budget, (void **)&p->tracks, &p->cap, p->count + 1, sizeof *p->tracks);
        if (!err)
            err = perch__map_put(&p->track_map, p->budget, key, (uint32_t)p->count);
        if (err)
            return err;
        idx = (uint32_t)p->count++;
        memset(&p->tracks[idx], 0, sizeof p->tracks[idx]);
        p->tracks[idx].pid = pid;
        p->tracks[idx].tid = tid;
    }
    *out = &p->tracks[idx];
    return 0;
}

/* A node's slot in its track's child table comes from the hash of its path from the root
 * (the root's is ROOT_HASH), so a walk computes every depth's slot from the frames alone
 * and prefetches them all before its probes, which depend on each other (each needs the
 * node the one above found). A slot matches on (parent, addr): a hash collision costs a
 * probe, never a wrong node. */
#define ROOT_HASH 0x9e3779b97f4a7c15ull
static uint64_t path_hash(uint64_t parent_hash, uint64_t addr)
{
    return perch__hash64(addr + parent_hash * 0x9e3779b97f4a7c15ull);
}

/* Doubles t's child table (at least 64 slots) and puts every node back at the slot of its
 * path's hash (a parent is older than its children, so the hashes come in node order). */
static int kids_rehash(perch__profiles *p, perch__ptrack *t)
{
    size_t ncap = t->kid_cap ? t->kid_cap * 2 : 64, mask = ncap - 1;
    struct perch__pchild *kids = NULL;
    uint64_t *h = NULL; /* the nodes' path hashes */
    size_t h_cap = 0;
    int err = perch__grow(p->budget, (void **)&h, &h_cap, t->node_count + 1, sizeof *h);
    if (!err && (ncap > SIZE_MAX / sizeof *kids ||
                 !perch__budget_take(p->budget, ncap * sizeof *kids)))
        err = PERCH_ELIMIT;
    if (!err && !(kids = perch__calloc(ncap, sizeof *kids))) {
        perch__budget_give(p->budget, ncap * sizeof *kids);
        err = PERCH_ENOMEM;
    }
    if (err) {
        perch__release(p->budget, (void **)&h, &h_cap, sizeof *h);
        return err;
    }
    for (size_t n = 0; n < t->node_count; n++) {
        const perch__pnode *nd = &t->nodes[n];
        h[n] = path_hash(nd->parent == ROOT_ID ? ROOT_HASH : h[nd->parent - 2], nd->addr);
        size_t i = h[n] & mask;
        while (kids[i].node)
            i = (i + 1) & mask;
        kids[i] = (struct perch__pchild){nd->addr, nd->parent, (uint32_t)(n + 2)};
    }
    perch__release(p->budget, (void **)&h, &h_cap, sizeof *h);
    perch__free(t->kids);
    perch__budget_give(p->budget, t->kid_cap * sizeof *kids);
    t->kids = kids;
    t->kid_cap = ncap;
    return 0;
}

/* Where a frame's module is found: the process key, the sample's module key, whether the
 * frame is the sample's own ip. */
struct frame_at {
    uint64_t pk, module_key;
    bool is_ip;
};

/* The node id of (parent, addr) in track t, its path's hash h, created when new (its module
 * resolved then). */
static int node_for(perch__profiles *p, perch__ptrack *t, uint32_t parent, uint64_t addr,
                    size_t h, const struct frame_at *at, uint32_t *id)
{
    size_t mask = t->kid_cap - 1, i;
    const perch__module *m;
    int err;
    for (i = h & mask; t->kid_cap && t->kids[i].node; i = (i + 1) & mask) {
        if (t->kids[i].addr == addr && t->kids[i].parent == parent) {
            *id = t->kids[i].node;
            return 0;
        }
    }
    if (t->node_count >= UINT32_MAX - 2)
        return PERCH_ELIMIT;
    err = perch__grow(p->budget, (void **)&t->nodes, &t->node_cap, t->node_count + 1,
                      sizeof *t->nodes);
    if (!err && (t->node_count + 1) * 4 > t->kid_cap * 3) {
        err = kids_rehash(p, t);
        mask = t->kid_cap - 1;
        for (i = h & mask; !err && t->kids[i].node;)
            i = (i + 1) & mask;
    }
    if (err)
        return err;
    t->nodes[t->node_count].parent = parent;
    t->nodes[t->node_count].addr = addr;
    t->nodes[t->node_count].module = PERCH_PNODE_LATER; /* resolved where it is named */
    if ((at->is_ip && at->module_key) || at->pk != t->pk) {
        m = perch__frame_module_cached(p->rc, p->ents, at->pk, at->module_key, addr, at->is_ip);
        t->nodes[t->node_count].module = m ? (uint32_t)(m - p->ents->modules) : UINT32_MAX;
    }
    *id = (uint32_t)(t->node_count + 2);
    t->kids[i] = (struct perch__pchild){addr, parent, *id};
    t->node_count++;
    return 0;
}

static int queue(perch__profiles *p, perch__ptrack *t, uint32_t node, uint64_t us)
{
    int err =
        perch__grow(p->budget, (void **)&t->pend, &t->pend_cap, t->pend_count + 1, sizeof *t->pend);
    if (err)
        return err;
    t->pend[t->pend_count++] = (perch__psample){us, node, t->seq++};
    return 0;
}

static int out_add(perch__profiles *p, uint32_t node, uint64_t us)
{
    int err =
        perch__grow(p->budget, (void **)&p->out, &p->out_cap, p->out_count + 1, sizeof *p->out);
    if (!err)
        p->out[p->out_count++] = (perch__psample){us, node, 0};
    return err;
}

static int cmp_psample(const void *x, const void *y)
{
    const perch__psample *a = x, *b = y;
    if (a->us != b->us)
        return a->us < b->us ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

/* Sorts t's pending samples by time, ties in arrival order. They arrive nearly sorted (a
 * sample waiting for its user half comes a little late), so an insertion sort moves few;
 * past a bound of moves the rest is left to qsort. The keys (time, arrival number) are
 * unique, so both give the same order. */
static void sort_pending(perch__ptrack *t)
{
    perch__psample *v = t->pend;
    size_t n = t->pend_count, moves = 0, limit = 8 * n + 64;
    for (size_t i = 1; i < n; i++) {
        perch__psample x = v[i];
        size_t j = i;
        for (; j > 0 && cmp_psample(&v[j - 1], &x) > 0; j--) {
            v[j] = v[j - 1];
            if (++moves > limit) {
                v[j - 1] = x;
                qsort(v, n, sizeof *v, cmp_psample);
                return;
            }
        }
        v[j] = x;
    }
}

/* The first n sorted pending samples of t as written: a gap sample (the root) one interval
 * after a real sample that the next one does not follow within 1.5 intervals; times never
 * before the last one written; with close, a last gap sample after the last real one. */
static int build_out(perch__profiles *p, perch__ptrack *t, size_t n, bool close)
{
    uint64_t last = t->started ? t->last_us : 0;
    int err = 0;
    p->out_count = 0;
    for (size_t i = 0; i < n && !err; i++) {
        uint64_t us = t->pend[i].us;
        if (t->open && us > t->last_real_us + p->interval_us * 3 / 2) {
            err = out_add(p, ROOT_ID, t->last_real_us + p->interval_us);
            last = t->last_real_us + p->interval_us;
        }
        if (us < last && (t->started || p->out_count))
            us = last;
        if (!err)
            err = out_add(p, t->pend[i].node, us);
        last = us;
        t->last_real_us = us;
        t->open = true;
    }
    if (!err && close && t->open) {
        err = out_add(p, ROOT_ID, t->last_real_us + p->interval_us);
        t->open = false;
    }
    return err;
}

#define NAME_CACHE 4096 /* entries of the node-name cache, a power of two */
_Static_assert(PERCH_PNAME_TEXT <= PERCH_JSON_TEXT_MAX(PERCH_FRAME_NAME_MAX),
               "a cached name is copied whole into its output");

/* The function name of node n (module index n_module) as JSON text (quoted, escaped) into out
 * (PERCH_JSON_TEXT_MAX(PERCH_FRAME_NAME_MAX) bytes), through the cache; 0 on failure. */
static size_t node_name(perch__pnames *names, perch__budget *b, const perch__entities *e,
                        uint32_t n_module, uint64_t addr, char *out, int *err)
{
    char name[PERCH_FRAME_NAME_MAX];
    const perch__module *m = n_module == UINT32_MAX ? NULL : &e->modules[n_module];
    uint32_t mod = n_module == UINT32_MAX ? 0 : n_module + 1;
    struct perch__pname *slot;
    size_t len;
    if (!names->slots) {
        *err =
            perch__grow(b, (void **)&names->slots, &names->cap, NAME_CACHE, sizeof *names->slots);
        if (*err)
            return 0;
        memset(names->slots, 0, names->cap * sizeof *names->slots);
    }
    slot = &names->slots[perch__hash64(addr ^ perch__hash64(mod)) & (NAME_CACHE - 1)];
    if (slot->len && slot->addr == addr && slot->module == mod) {
        memcpy(out, slot->text, sizeof slot->text); /* out has room: a fixed size copies fast */
        return slot->len;
    }
    len = perch__frame_name(e, m, addr, name, sizeof name);
    len = perch__json_string_text(name, len, out, PERCH_JSON_TEXT_MAX(PERCH_FRAME_NAME_MAX));
    if (len > 0 && len <= PERCH_PNAME_TEXT) {
        slot->addr = addr;
        slot->module = mod;
        slot->len = (uint8_t)len;
        memcpy(slot->text, out, len);
    }
    return len;
}

size_t perch__pnode_json(perch__pnames *names, perch__budget *b, const perch__entities *e,
                         perch__resolve_cache *rc, uint64_t pk, uint32_t id, const perch__pnode *n,
                         char *out, int *err)
{
    static const char rest[] = "}}"; /* no url, scriptId, lineNumber, columnNumber (above) */
    _Static_assert(6 + 20 + 10 + 10 + 29 + sizeof rest <=
                       PERCH_PNODE_JSON_MAX - PERCH_JSON_TEXT_MAX(PERCH_FRAME_NAME_MAX),
                   "a node's text fits");
    uint32_t module = n->module;
    size_t len = 0, name;
    if (module == PERCH_PNODE_LATER) {
        const perch__module *m = perch__frame_module_cached(rc, e, pk, 0, n->addr, false);
        module = m ? (uint32_t)(m - e->modules) : UINT32_MAX;
    }
    memcpy(out, "{\"id\":", 6);
    len = 6;
    len += perch__put_uint(out + len, id);
    memcpy(out + len, ",\"parent\":", 10);
    len += 10;
    len += perch__put_uint(out + len, n->parent);
    memcpy(out + len, ",\"callFrame\":{\"functionName\":", 29);
    len += 29;
    *err = 0;
    name = node_name(names, b, e, module, n->addr, out + len, err);
    if (*err || name == 0) {
        *err = *err ? *err : PERCH_ELIMIT;
        return 0;
    }
    len += name;
    memcpy(out + len, rest, sizeof rest - 1);
    return len + sizeof rest - 1;
}

void perch__pnames_free(perch__pnames *names, perch__budget *b)
{
    perch__release(b, (void **)&names->slots, &names->cap, sizeof *names->slots);
}

static int nodes_json(perch__profiles *p, perch__ptrack *t)
{
    perch_json *w = p->w;
    int err = 0;
    perch_json_key(w, "nodes");
    perch_json_begin_array(w);
    if (t->nodes_written == 0 && !t->started) {
        perch_json_raw(w, "{\"id\":1,\"callFrame\":{\"functionName\":\"(root)\"}}");
    }
    if (p->nodes && t->node_count > t->nodes_written) {
        err = p->nodes(p->runs_ctx, t, t->nodes_written, t->node_count);
    } else {
        char text[PERCH_PNODE_JSON_MAX];
        for (size_t i = t->nodes_written; i < t->node_count && !err; i++) {
            size_t n = perch__pnode_json(&p->names, p->budget, p->ents, p->rc, t->pk,
                                         (uint32_t)(i + 2), &t->nodes[i], text, &err);
            if (n)
                perch_json_raw_n(w, text, n);
        }
    }
    perch_json_end_array(w);
    t->nodes_written = t->node_count;
    return err;
}

static void event_head(perch__profiles *p, const perch__ptrack *t, const char *name, uint64_t us)
{
    char text[224];
    perch_json *w = p->w;
    /* name is "Profile" or "ProfileChunk": no byte needs escaping */
    int n = snprintf(text, sizeof text,
                     "\"name\":\"%s\",\"cat\":\"disabled-by-default-v8.cpu_profiler\","
                     "\"ph\":\"P\",\"id\":\"0x%zx\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32
                     ",\"ts\":%" PRIu64,
                     name, (size_t)(t - p->tracks) + 1, t->pid, t->tid, us);
    perch_json_begin_object(w);
    perch_json_raw_members(w, text, (size_t)n);
}

/* The "Profile" event: the profile of this track starts at its first sample. */
static void profile_json(perch__profiles *p, perch__ptrack *t, uint64_t us)
{
    perch_json *w = p->w;
    event_head(p, t, "Profile", us);
    perch_json_key(w, "args");
    perch_json_begin_object(w);
    perch_json_key(w, "data");
    perch_json_begin_object(w);
    perch_json_key(w, "startTime");
    perch_json_uint(w, us);
    perch_json_end_object(w);
    perch_json_end_object(w);
    perch_json_end_object(w);
    t->first_us = t->last_us = us;
}

/* Writes the oldest n of t's pending samples (sorted) as one chunk. */
static int write_chunk(perch__profiles *p, perch__ptrack *t, size_t n, bool close)
{
    perch_json *w = p->w;
    perch__run run = {w, 0, {0}};
    int err;
    sort_pending(t);
    err = build_out(p, t, n, close);
    if (err || p->out_count == 0)
        return err;
    if (!t->started)
        profile_json(p, t, p->out[0].us);
    event_head(p, t, "ProfileChunk", p->out[0].us);
    perch_json_key(w, "args");
    perch_json_begin_object(w);
    perch_json_key(w, "data");
    perch_json_begin_object(w);
    perch_json_key(w, "cpuProfile");
    perch_json_begin_object(w);
    err = nodes_json(p, t);
    if (err)
        return err;
    t->started = true;
    perch_json_key(w, "samples");
    perch_json_begin_array(w);
    if (p->runs) {
        err = p->runs(p->runs_ctx, p->out, p->out_count, 0, false);
    } else {
        for (size_t i = 0; i < p->out_count; i++)
            perch__run_uint(&run, p->out[i].node);
        perch__run_flush(&run);
    }
    perch_json_end_array(w);
    perch_json_end_object(w);
    perch_json_key(w, "timeDeltas");
    perch_json_begin_array(w);
    if (p->runs) {
        err = err ? err : p->runs(p->runs_ctx, p->out, p->out_count, t->last_us, true);
        t->last_us = p->out[p->out_count - 1].us;
    } else {
        for (size_t i = 0; i < p->out_count; i++) {
            perch__run_uint(&run, p->out[i].us - t->last_us);
            t->last_us = p->out[i].us;
        }
        perch__run_flush(&run);
    }
    perch_json_end_array(w);
    perch_json_end_object(w);
    perch_json_end_object(w);
    perch_json_end_object(w);
    memmove(t->pend, t->pend + n, (t->pend_count - n) * sizeof *t->pend);
    t->pend_count -= n;
    return err ? err : w->error;
}

/* The complete event over a sample-only track's profile. */
static void span_json(perch__profiles *p, const perch__ptrack *t)
{
    perch_json *w = p->w;
    perch_json_begin_object(w);
    perch_json_key(w, "name");
    perch_json_string(w, "CPU samples");
    perch_json_key(w, "cat");
    perch_json_string(w, "sample");
    perch_json_key(w, "ph");
    perch_json_string(w, "X");
    perch_json_key(w, "pid");
    perch_json_uint(w, t->pid);
    perch_json_key(w, "tid");
    perch_json_uint(w, t->tid);
    perch_json_key(w, "ts");
    perch_json_uint(w, t->first_us);
    perch_json_key(w, "dur");
    perch_json_uint(w, t->last_us - t->first_us);
    perch_json_end_object(w);
}

/* The path hash of each depth of frames (innermost first) into p->walk_hash (depth 0: the
 * outermost frame), the child slots from depth `from` on prefetched. */
static int walk_hashes(perch__profiles *p, const perch__ptrack *t, const uint64_t *frames,
                       uint32_t count, size_t from)
{
    uint64_t h = ROOT_HASH;
    int err = perch__grow(p->budget, (void **)&p->walk_hash, &p->walk_hash_cap, count,
                          sizeof *p->walk_hash);
    for (size_t d = 0; !err && d < count; d++) {
        h = path_hash(h, frames[count - 1 - d]);
        p->walk_hash[d] = h;
        if (d >= from && t->kid_cap)
            __builtin_prefetch(&t->kids[h & (t->kid_cap - 1)]);
    }
    return err;
}

/* The leaf node of frames (innermost first) in track t, the path from the root created as
 * needed. An interned stack's leaf is remembered in a direct-mapped cache of LEAF_CACHE
 * entries (a later stack whose key lands on the same entry replaces it), so the common case
 * (a stack sampled again on the same thread) costs one probe instead of one per frame. */
static int leaf_for(perch__profiles *p, perch__ptrack *t, uint64_t thread_key, uint64_t module_key,
                    const uint64_t *frames, uint32_t count, uint32_t stack_id, uint32_t *leaf)
{
    uint64_t key = ((uint64_t)(t - p->tracks) + 1) << 32 | stack_id;
    size_t at = (size_t)(perch__hash64(key) & (LEAF_CACHE - 1));
    uint32_t node = ROOT_ID;
    const perch__thread *th;
    struct frame_at fa = {0, module_key, stack_id == 0};
    int err = 0;
    if (stack_id != 0 && p->leaves == NULL) {
        err = perch__grow_zeroed(p->budget, (void **)&p->leaves, &p->leaves_cap, LEAF_CACHE,
                                 sizeof *p->leaves);
        if (err)
            return err;
    }
    if (stack_id != 0 && p->leaves[at].key == key) {
        *leaf = p->leaves[at].node;
        return 0;
    }
    if (!frames && p->stacks) /* decoded only when the cache misses */
        frames = perch__stacks_get(p->stacks, stack_id, &count);
    th = perch__entities_thread_at(p->ents, thread_key);
    fa.pk = th ? th->process_key : 0;
    if (!t->pk_known) {
        t->pk = fa.pk;
        t->pk_known = true;
    }
    err = perch__grow(p->budget, (void **)&t->path, &t->path_cap, count, sizeof *t->path);
    size_t depth = 0; /* root first: the frames shared with the last path keep its nodes */
    for (uint32_t i = count; !err && i-- > 0 && depth < t->path_len &&
                             t->path[depth].addr == frames[i];)
        node = t->path[depth++].node;
    if (!err)
        err = walk_hashes(p, t, frames, count, depth);
    for (uint32_t i = count - (uint32_t)depth; !err && i-- > 0;) {
        err = node_for(p, t, node, frames[i], (size_t)p->walk_hash[depth], &fa, &node);
        if (!err)
            t->path[depth++] = (struct perch__pstep){frames[i], node};
    }
    t->path_len = err ? 0 : depth;
    if (!err && stack_id != 0) {
        p->leaves[at] = (struct perch__pleaf){key, node};
    }
    *leaf = node;
    return err;
}

/* perch__profiles_sample on track t. */
static int sample_on(perch__profiles *p, perch__ptrack *t, uint64_t thread_key, uint64_t module_key,
                     const uint64_t *frames, uint32_t count, uint32_t stack_id, uint64_t us,
                     uint32_t weight)
{
    uint32_t node = ROOT_ID;
    int err = leaf_for(p, t, thread_key, module_key, frames, count, stack_id, &node);
    if (weight == 0)
        weight = 1;
    for (uint32_t i = 0; !err && i < weight && i < MAX_WEIGHT; i++) {
        err = queue(p, t, node, us);
        p->samples++;
    }
    if (err)
        return err;
    t->span_key = thread_key;
    return t->pend_count >= 2 * CHUNK ? write_chunk(p, t, CHUNK, false) : 0;
}

int perch__profiles_sample(perch__profiles *p, uint32_t pid, uint32_t tid, uint64_t thread_key,
                           uint64_t module_key, const uint64_t *frames, uint32_t count,
                           uint32_t stack_id, uint64_t us, uint32_t weight)
{
    perch__ptrack *t;
    int err = track_for(p, pid, tid, &t);
    return err ? err : sample_on(p, t, thread_key, module_key, frames, count, stack_id, us, weight);
}

int perch__profiles_drain(perch__profiles *p)
{
    const struct perch__pheld *h = &p->held;
    if (!h->on)
        return 0;
    p->held.on = false;
    /* its track was found when it was held (an index: tracks made since may have moved) */
    return sample_on(p, &p->tracks[p->held_track], h->thread_key, h->module_key,
                     h->stack_id ? NULL : &h->ip, h->stack_id ? 0 : 1, h->stack_id, h->us,
                     h->weight);
}

int perch__profiles_hold(perch__profiles *p, const struct perch__pheld *s)
{
    perch__ptrack *t;
    int err = track_for(p, s->pid, s->tid, &t); /* tracks are made in arrival order */
    if (!err && s->stack_id != 0 && p->leaves) {
        uint64_t key = ((uint64_t)(t - p->tracks) + 1) << 32 | s->stack_id;
        __builtin_prefetch(&p->leaves[perch__hash64(key) & (LEAF_CACHE - 1)]);
    }
    size_t track = err ? 0 : (size_t)(t - p->tracks);
    if (!err)
        err = perch__profiles_drain(p);
    if (!err) {
        p->held = *s;
        p->held.on = true;
        p->held_track = track;
    }
    return err;
}

int perch__profiles_finish(perch__profiles *p)
{
    int err = perch__profiles_drain(p);
    for (size_t i = 0; i < p->count && !err; i++) {
        perch__ptrack *t = &p->tracks[i];
        err = write_chunk(p, t, t->pend_count, true);
        uint32_t unused;
        if (!err && t->started && !(p->sliced && perch__map_get(p->sliced, t->span_key, &unused)))
            span_json(p, t);
    }
    return err ? err : p->w->error;
}

void perch__profiles_free(perch__profiles *p)
{
    for (size_t i = 0; i < p->count; i++) {
        perch__ptrack *t = &p->tracks[i];
        perch__release(p->budget, (void **)&t->nodes, &t->node_cap, sizeof *t->nodes);
        perch__release(p->budget, (void **)&t->pend, &t->pend_cap, sizeof *t->pend);
        perch__release(p->budget, (void **)&t->path, &t->path_cap, sizeof *t->path);
        perch__release(p->budget, (void **)&t->kids, &t->kid_cap, sizeof *t->kids);
    }
    perch__release(p->budget, (void **)&p->out, &p->out_cap, sizeof *p->out);
    perch__release(p->budget, (void **)&p->tracks, &p->cap, sizeof *p->tracks);
    perch__map_free(&p->track_map, p->budget);
    perch__release(p->budget, (void **)&p->leaves, &p->leaves_cap, sizeof *p->leaves);
    perch__release(p->budget, (void **)&p->walk_hash, &p->walk_hash_cap, sizeof *p->walk_hash);
    perch__pnames_free(&p->names, p->budget);
    p->count = 0;
}
