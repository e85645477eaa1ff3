/*
 * The chrome export's timer samples as CPU-profile trace events ("Profile" + "ProfileChunk",
 * the events V8 writes and the DevTools Performance panel and Perfetto import), one call tree
 * per track (chrome_profile.c). Stateful: one thread feeds and writes it, in stream order.
 */
#ifndef PERCH_EXPORT_CHROME_PROFILE_H
#define PERCH_EXPORT_CHROME_PROFILE_H

#include "export/export_internal.h"

typedef struct perch__pnode {
    uint32_t parent; /* node id (1 = the root) */
    uint32_t module; /* module index, UINT32_MAX = none, PERCH_PNODE_LATER = not resolved yet */
    uint64_t addr;
} perch__pnode;

/* A node's module not resolved yet: it is the module of its address in its track's process
 * (perch__ptrack.pk), found when the node is named. */
#define PERCH_PNODE_LATER (UINT32_MAX - 1)

typedef struct perch__psample {
    uint64_t us;   /* microseconds from the trace start */
    uint32_t node; /* node id */
    uint32_t seq;  /* arrival order, so sorting by time is stable */
} perch__psample;

typedef struct perch__ptrack {
    uint32_t pid, tid;
    perch__pnode *nodes; /* node id = index + 2 (the root is 1) */
    size_t node_count, node_cap, nodes_written;
    perch__psample *pend; /* real samples not written yet */
    size_t pend_count, pend_cap;
    uint32_t seq;
    uint64_t first_us;     /* the first sample written (the profile's start) */
    uint64_t last_us;      /* the last sample written: the base of the next delta */
    uint64_t last_real_us; /* the last real (not gap) sample written */
    bool started;          /* the "Profile" event is out */
    bool open;             /* the last sample written is a real one (not a gap) */
    uint64_t span_key;     /* the thread key of its last sample: no slices, then a span */
    bool pk_known;         /* pk is set */
    uint64_t pk; /* the process key of the track's first stack: its nodes' modules resolve there */
    /* the path of the last stack walked from the root (frames, their node ids): the next
     * walk reuses the nodes of the frames it shares from the root without a lookup */
    struct perch__pstep {
        uint64_t addr;
        uint32_t node;
    } *path;
    size_t path_len, path_cap;
    /* (parent, addr) -> node id (0: empty), at its path's hash (chrome_profile.c) */
    struct perch__pchild {
        uint64_t addr;
        uint32_t parent, node;
    } *kids;
    size_t kid_cap; /* a power of two, or 0 */
} perch__ptrack;

#define PERCH_PNAME_TEXT 100 /* the longest name text the node-name cache keeps */
/* A direct-mapped cache of nodes' function names as JSON text by (module, address): every
 * thread's call tree has its own nodes for the same frames. */
typedef struct perch__pnames {
    struct perch__pname {
        uint64_t addr;
        uint32_t module; /* module index + 1, 0 none */
        uint8_t len;     /* 0: empty */
        char text[PERCH_PNAME_TEXT];
    } * slots;
    size_t cap;
} perch__pnames;

/* The longest text of one node (perch__pnode_json). */
#define PERCH_PNODE_JSON_MAX (160 + PERCH_JSON_TEXT_MAX(PERCH_FRAME_NAME_MAX))

/* Node `id` (n, of a track of process pk) as its JSON text, {"id","parent","callFrame":
 * {"functionName"}}, into out (PERCH_PNODE_JSON_MAX
 * bytes): its length, or 0 with *err set (PERCH_ENOMEM, PERCH_ELIMIT: the cache cannot be had
 * or the name does not fit). Names come through the cache `names`, modules through rc; reads
 * only sealed entities, so each thread with caches of its own may call it. The call frame has
 * no url, scriptId, lineNumber or columnNumber: a native frame has none, and the readers of
 * these events take their absence as Chrome's own "" / 0 / -1 (docs/exports.md, chrome). */
size_t perch__pnode_json(perch__pnames *names, perch__budget *b, const perch__entities *e,
                         perch__resolve_cache *rc, uint64_t pk, uint32_t id, const perch__pnode *n,
                         char *out, int *err);
void perch__pnames_free(perch__pnames *names, perch__budget *b);

typedef struct perch__profiles {
    perch__budget *budget;
    const perch__entities *ents;
    perch__resolve_cache *rc;    /* in front of the module resolver (the entities are sealed) */
    const perch__stacks *stacks; /* where frames NULL finds an interned stack's frames */
    perch_json *w;
    /* thread keys with slices, complete at finish (NULL: none): a track whose last sample's
     * thread has none gets a complete event over its profile ("CPU samples"), without which
     * DevTools shows neither the thread nor a time range */
    const perch__map *sliced;
    uint64_t interval_us; /* a sample stands for this much time; longer gaps close it */
    perch__ptrack *tracks;
    size_t count, cap;
    perch__map track_map;   /* (pid << 32 | tid) + 1 -> track index */
    struct perch__pleaf {  /* a direct-mapped cache of stacks' leaf nodes */
        uint64_t key;      /* (track + 1) << 32 | stack id, 0 empty */
        uint32_t node;     /* that stack's leaf node id in that track */
    } *leaves;
    size_t leaves_cap;
    uint64_t *walk_hash; /* the path hash of each depth of the stack being walked */
    size_t walk_hash_cap;
    perch__psample *out; /* the samples of the chunk being written, gaps included */
    size_t out_count, out_cap;
    uint64_t samples; /* samples written (each count of a sample once) */
    perch__pnames names;
    /* when set, a chunk's samples (node ids) and time deltas go to runs(runs_ctx, ...) as
     * the chunk's samples, each run's base and whether they are the deltas, instead of
     * being written; the caller writes them where the writer stands (chrome_async.c) */
    int (*runs)(void *ctx, const perch__psample *out, size_t n, uint64_t base, bool deltas);
    void *runs_ctx;
    /* when set, a chunk's new nodes (nodes[from, to) of track t, ids from + 2 on) go to
     * nodes(runs_ctx, ...) instead of being written: the caller writes them as elements of
     * the writer's open array (chrome_async.c) */
    int (*nodes)(void *ctx, const perch__ptrack *t, size_t from, size_t to);
    /* a timer sample held back until the next record (perch__profiles_hold) */
    struct perch__pheld {
        uint64_t thread_key, module_key, ip, us;
        uint32_t pid, tid, stack_id, weight; /* stack_id 0: the sample's ip alone */
        bool on;
    } held;
    size_t held_track; /* the held sample's track (an index of tracks) */
} perch__profiles;

/* Queues one timer sample of a track (pid, tid) at us (microseconds from the trace start):
 * frames innermost first (is_ip: frames is the sample's own ip, resolved with module_key;
 * else interned stack stack_id, whose leaf node is remembered in a bounded cache; frames
 * NULL: the stack's frames from p->stacks, decoded only when the cache misses),
 * repeated `weight` times. Writes a chunk when enough are queued. */
int perch__profiles_sample(perch__profiles *p, uint32_t pid, uint32_t tid, uint64_t thread_key,
                           uint64_t module_key, const uint64_t *frames, uint32_t count,
                           uint32_t stack_id, uint64_t us, uint32_t weight);
/* perch__profiles_sample of the held sample, then of s at the next drain (its leaf cache
 * entry prefetched meanwhile): every record that writes or adds a stack drains first. */
int perch__profiles_hold(perch__profiles *p, const struct perch__pheld *s);
int perch__profiles_drain(perch__profiles *p);
/* Drains, closes every track (a last gap sample one interval after its last sample), writes
 * what is queued and the spans (`sliced` is read here). */
int perch__profiles_finish(perch__profiles *p);
void perch__profiles_free(perch__profiles *p);

#endif
