/*
 * Internals shared by the format writers in src/core/export: a memory budget every growable
 * array charges, a u64 -> index map, the entity store (threads, processes, modules gathered
 * from the late-arriving records) with the address -> module resolver and frame naming, the
 * interned-stack store, the (thread, stack) sample aggregate, a buffered writer over
 * perch_output, and the table that describes each format.
 */
#ifndef PERCH_EXPORT_INTERNAL_H
#define PERCH_EXPORT_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "model/module_index.h"
#include "perch/export.h"
#include "perch/json.h"
#include "perch/scratch.h"
#include "perch/sym.h"
#include "util/ticks.h"

/* ---- memory budget: every allocation of an exporter is charged here ---------------------- */
/* `used` is atomic because a second thread of the exporter (the sample log's group decoder,
 * groups.c) charges the same budget while the writer does. */
typedef struct perch__budget {
    uint64_t limit;
    _Atomic uint64_t used;
} perch__budget;

/* Charges bytes to b: false (nothing charged) when they do not fit under the limit. */
static inline bool perch__budget_take(perch__budget *b, uint64_t bytes)
{
    uint64_t used = atomic_load_explicit(&b->used, memory_order_relaxed);
    do {
        if (bytes > b->limit - used)
            return false;
    } while (!atomic_compare_exchange_weak_explicit(&b->used, &used, used + bytes,
                                                    memory_order_relaxed, memory_order_relaxed));
    return true;
}

/* Refunds bytes charged by perch__budget_take. */
static inline void perch__budget_give(perch__budget *b, uint64_t bytes)
{
    atomic_fetch_sub_explicit(&b->used, bytes, memory_order_relaxed);
}

/* Grows *p (elements of elem bytes, capacity *cap) to hold at least need elements, charging
 * the growth to b. PERCH_ELIMIT past the budget, PERCH_ENOMEM when realloc fails. The check
 * is inline (most calls find the room there); perch__grow_slow reallocates. */
int perch__grow_slow(perch__budget *b, void **p, size_t *cap, size_t need, size_t elem);
static inline int perch__grow(perch__budget *b, void **p, size_t *cap, size_t need, size_t elem)
{
    return need <= *cap ? 0 : perch__grow_slow(b, p, cap, need, elem);
}
/* perch__grow, and the elements it adds are zeroed (at once: a later failure of the caller
 * leaves no stale entry). */
static inline int perch__grow_zeroed(perch__budget *b, void **p, size_t *cap, size_t need,
                                     size_t elem)
{
    size_t old = *cap;
    int err = need <= old ? 0 : perch__grow_slow(b, p, cap, need, elem);
    if (!err && *cap > old)
        memset((char *)*p + old * elem, 0, (*cap - old) * elem);
    return err;
}
/* Frees an array grown by perch__grow and refunds the budget. */
void perch__release(perch__budget *b, void **p, size_t *cap, size_t elem);

/* ---- u64 -> u32 map (open addressing; key 0 is reserved as empty) ---------------------- */
typedef struct perch__map {
    uint64_t *keys;
    uint32_t *vals;
    size_t cap; /* power of two or 0 */
    size_t count;
} perch__map;

int perch__map_put(perch__map *m, perch__budget *b, uint64_t key, uint32_t val);
void perch__map_free(perch__map *m, perch__budget *b);

/* A 64-bit mix (murmur3's finalizer); inline, as every map lookup starts with it. */
static inline uint64_t perch__hash64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

static inline bool perch__map_get(const perch__map *m, uint64_t key, uint32_t *val)
{
    size_t i;
    if (!m->cap || key == 0)
        return false;
    for (i = perch__hash64(key) & (m->cap - 1); m->keys[i]; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key) {
            *val = m->vals[i];
            return true;
        }
    }
    return false;
}

/* ---- string arena: copies of strings from the records ---------------------------------- */
typedef struct perch__strings {
    char *data;
    size_t len;
    size_t cap;
} perch__strings;

/* Copies s (n bytes, plus a NUL); *off receives its offset. */
int perch__strings_add(perch__strings *s, perch__budget *b, const char *str, size_t n,
                       uint32_t *off);
static inline const char *perch__str(const perch__strings *s, uint32_t off)
{
    return s->data ? s->data + off : "";
}

/* ---- string interner: dense indices in first-seen order ------------------------------ */
typedef struct perch__interner {
    perch__strings text;
    uint32_t *off, *len;
    size_t off_cap, len_cap;
    size_t count;
    perch__map map; /* text hash (chained on collision) -> index */
} perch__interner;

/* The index of s (n bytes), adding it if new. */
int perch__intern(perch__interner *t, perch__budget *b, const char *s, size_t n, uint32_t *index);
int perch__intern_str(perch__interner *t, perch__budget *b, const char *s, uint32_t *index);
static inline const char *perch__interned(const perch__interner *t, uint32_t index)
{
    return t->text.data + t->off[index];
}
void perch__interner_free(perch__interner *t, perch__budget *b);

/* ---- location table: dense indices for distinct (owner, address) pairs --------------- */
typedef struct perch__loc {
    uint64_t addr;
    uint64_t owner; /* pprof, gecko: module index + 1 (0 = none); name cache: process key */
    uint32_t extra; /* free for the user (pprof: function id, gecko: resource + 1) */
} perch__loc;

/* The slots are open-addressed (linear probing), one 64-bit word each: the index + 1 in the
 * low half (0 = empty) and the upper half of the key's hash above it, so a probe reads one
 * word and touches a location only when the hash halves match. */
typedef struct perch__loctab {
    perch__loc *locs;
    size_t count, cap;
    uint64_t *slots;
    size_t slot_cap; /* a power of two, or 0 */
} perch__loctab;

/* The index of (owner, addr); *is_new tells whether it was just added. */
int perch__loctab_get(perch__loctab *t, perch__budget *b, uint64_t owner, uint64_t addr,
                      uint32_t *index, bool *is_new);
void perch__loctab_free(perch__loctab *t, perch__budget *b);

/* ---- frame names cached per (process, address): each distinct frame is resolved and
 * formatted once, then reused by every row (folded, speedscope) ---------------------------- */
typedef struct perch__name_cache {
    perch__loctab seen;    /* (process key or 0 for kernel, addr) -> extra = name index */
    perch__interner names; /* the frame names, dense */
} perch__name_cache;

/* ---- protobuf encoding (pprof) ---------------------------------------------------------- */
typedef struct perch__pb {
    perch__budget *budget;
    uint8_t *data;
    size_t len, cap;
    int error; /* sticky */
} perch__pb;

void perch__pb_varint(perch__pb *p, uint64_t v);
/* Field with wire type 0 (varint); skipped when v is 0 (proto3 default). */
void perch__pb_uint(perch__pb *p, uint32_t field, uint64_t v);
void perch__pb_int(perch__pb *p, uint32_t field, int64_t v);
/* Bytes already encoded (fields of a message), as they are. */
void perch__pb_raw(perch__pb *p, const void *data, size_t len);
/* Field with wire type 2 (length-delimited). */
void perch__pb_bytes(perch__pb *p, uint32_t field, const void *data, size_t len);
/* Packed repeated varints. */
void perch__pb_packed(perch__pb *p, uint32_t field, const uint64_t *v, size_t count);
void perch__pb_free(perch__pb *p);

/* ---- entities --------------------------------------------------------------------------- */
typedef struct perch__thread {
    uint64_t key;
    uint64_t process_key;
    uint32_t tid;
    uint32_t pid;  /* UINT32_MAX when unknown */
    uint32_t name; /* offset in strings */
    int32_t cpu;   /* the idle thread (tid 0, one key per CPU): its CPU; -1 otherwise */
    bool seen_record;
} perch__thread;

typedef struct perch__process {
    uint64_t key;
    uint32_t pid;
    uint32_t image; /* offset in strings */
} perch__process;

typedef struct perch__module {
    uint64_t key;
    uint64_t process_key;
    uint64_t base;
    uint64_t size;
    uint32_t name; /* lower-case base name, offset in strings */
    uint32_t path; /* as logged */
} perch__module;

typedef struct perch__entities {
    perch__budget *budget;
    perch_trace_info info;
    perch__strings strings;
    perch__thread *threads;
    size_t thread_count, thread_cap;
    perch__process *processes;
    size_t process_count, process_cap;
    perch__module *modules;
    size_t module_count, module_cap;
    perch__map thread_map, process_map, module_map; /* key -> index */
    perch__module_index by_address; /* modules in M5 order, the one seen first last */
    uint64_t by_address_bytes;      /* what by_address charged to the budget */
    bool sorted;                    /* by_address holds every module */
    perch_symnames *names; /* the stream's symbol records (created with the first module) */
} perch__entities;

void perch__entities_init(perch__entities *e, perch__budget *b);
void perch__entities_free(perch__entities *e);
int perch__entities_info(perch__entities *e, const perch_trace_info *info);
int perch__entities_process(perch__entities *e, const perch_process_rec *rec);
int perch__entities_thread(perch__entities *e, const perch_thread_rec *rec);
int perch__entities_module(perch__entities *e, const perch_module_rec *rec);
/* A symbol record: names for frame naming (perch__frame_func). */
int perch__entities_symbol(perch__entities *e, const perch_symbol_rec *rec);
/* The thread with key, created (from what a sample or slice on cpu says) when no record came
 * yet. Key 0 (unknown) gets no entry: *index = UINT32_MAX. The first CPU an idle thread
 * (tid 0) is seen on names it. */
int perch__entities_touch_thread(perch__entities *e, uint64_t key, uint32_t tid, uint16_t cpu,
                                 uint32_t *index);

const perch__thread *perch__entities_thread_at(const perch__entities *e, uint64_t key);
const perch__process *perch__entities_process_at(const perch__entities *e, uint64_t key);
/* The pid of a thread (from the thread record, else its process), UINT32_MAX when unknown. */
uint32_t perch__thread_pid(const perch__entities *e, const perch__thread *t);
/* Image name of the thread's process ("" when unknown). */
const char *perch__thread_process_name(const perch__entities *e, const perch__thread *t);

/* Sorts the module ranges; call once all module records are in (at finish / pass end). */
int perch__entities_seal(perch__entities *e);
bool perch__is_kernel_address(const perch__entities *e, uint64_t addr);
/* The module containing addr for a thread of process_key (kernel modules for kernel
 * addresses): highest base wins, then smallest size, then name. NULL when none. */
const perch__module *perch__resolve(const perch__entities *e, uint64_t process_key, uint64_t addr);
const perch__module *perch__module_by_key(const perch__entities *e, uint64_t key);

/* The length snprintf wrote into a buffer of cap bytes (n its return): 0 on error, at most
 * cap - 1 when it was cut. */
static inline size_t perch__snlen(int n, size_t cap)
{
    if (n < 0)
        return 0;
    return (size_t)n < cap ? (size_t)n : cap - 1;
}

#define PERCH_FRAME_NAME_MAX 160
/* Frame naming, in this one place (frames.c) for every format and the report:
 * perch__frame_func names the code inside its module ("KiSwapContext+0x1a" when the stream's
 * symbol records name it, else "+0x1a2b3") and perch__frame_name the whole frame,
 * "module!function": "ntoskrnl.exe!KiSwapContext+0x1a", "ntoskrnl.exe!+0x1a2b3", or
 * "?!0xfffff80012345678" when mod is NULL. Both return the length written. */
size_t perch__frame_func(const perch__entities *e, const perch__module *mod, uint64_t addr,
                         char *buf, size_t cap);
size_t perch__frame_name(const perch__entities *e, const perch__module *mod, uint64_t addr,
                         char *buf, size_t cap);
/* The lower-case base name of a module path into buf. */
size_t perch__module_base_name(const char *path, char *buf, size_t cap);

/* ---- interned stacks ------------------------------------------------------------------- */
typedef struct perch__stacks {
    uint8_t *bytes; /* every stack's frames as varints of their zigzag deltas (stacks.c) */
    size_t byte_count, byte_cap;
    uint64_t *index; /* per id: bit 63 set once given, byte offset << 24 | frame count
                      * (count < 2^24) */
    size_t count, cap;
    uint64_t *known; /* bit id: the stack has frames (a few KiB, read by every sample) */
    size_t known_cap;
    uint64_t *frames; /* the stack perch__stacks_get decoded last */
    size_t frame_cap; /* frames of the longest stack */
} perch__stacks;

int perch__stacks_add(perch__stacks *s, perch__budget *b, const perch_stack_rec *rec);
/* Frames of id, innermost first; NULL (and *count 0) for an unknown id. The array is valid
 * until the next perch__stacks_get or perch__stacks_add. */
const uint64_t *perch__stacks_get(const perch__stacks *s, uint32_t id, uint32_t *count);
/* Whether id names an interned stack with frames (what perch__stacks_get decodes). */
static inline bool perch__stacks_known(const perch__stacks *s, uint32_t id)
{
    return id < s->count && (s->known[id / 64] >> (id % 64) & 1);
}
/* The innermost frame of id (what perch__stacks_get would give first), decoding nothing
 * else; false for an id without frames. */
bool perch__stacks_leaf(const perch__stacks *s, uint32_t id, uint64_t *leaf);
void perch__stacks_free(perch__stacks *s, perch__budget *b);

/* ---- sample aggregate: one row per (thread, stack, ip when no stack, kind, source) ------- */
typedef struct perch__agg_row {
    uint64_t thread_key;
    uint64_t ip; /* used when stack_id == 0 */
    uint64_t module_key;
    uint32_t stack_id;
    uint16_t kind;
    uint16_t profile_source;
    uint32_t seq;   /* the row's index before perch__agg_sort (creation order) */
    uint64_t count; /* sum of sample counts */
    uint64_t first_ts;
} perch__agg_row;

typedef struct perch__agg {
    perch__agg_row *rows;
    size_t count, cap;
    uint64_t *slots; /* hash slots: row index + 1 | hash tag, 0 = empty */
    size_t slot_cap;
    uint64_t samples; /* records seen */
    uint64_t total;   /* sum of counts */
    uint64_t last_ts; /* the latest sample time */
} perch__agg;

/* Adds a sample to its row; *seq (may be NULL) receives the row's creation index. */
int perch__agg_add(perch__agg *a, perch__budget *b, const perch_sample_rec *rec, uint32_t *seq);
void perch__agg_free(perch__agg *a, perch__budget *b);
/* Sorts rows by thread key, kind, PMC source, then first timestamp, so each (thread, kind,
 * source) group is contiguous. No perch__agg_add after a sort. */
void perch__agg_sort(perch__agg *a);

/* The frames of a row innermost first: its stack, or just its ip. */
const uint64_t *perch__agg_frames(const perch__stacks *s, const perch__agg_row *r, uint32_t *count);
/* The module of a frame of a thread's sample: for the sample's own ip (is_ip) the sample's
 * module_key when it contains addr, else the resolver with the thread's process. */
const perch__module *perch__resolve_frame(const perch__entities *e, uint64_t thread_key,
                                          uint64_t module_key, uint64_t addr, bool is_ip);
/* A direct-mapped cache in front of perch__resolve once the entities are sealed: (process key,
 * address) -> module, exact (perch__resolve is a function of the sealed entities). Zeroed is
 * empty. */
#define PERCH_RESOLVE_CACHE 4096
typedef struct perch__resolve_cache {
    struct perch__resolve_slot {
        uint64_t pk, addr;
        uint32_t mod; /* 0 empty, 1 no module, else module index + 2 */
    } slot[PERCH_RESOLVE_CACHE];
} perch__resolve_cache;

const perch__module *perch__resolve_cached(perch__resolve_cache *rc, const perch__entities *e,
                                           uint64_t process_key, uint64_t addr);
/* perch__frame_module of a frame of row r whose process key (perch__row_process) is pk,
 * through rc. */
const perch__module *perch__row_frame_module(perch__resolve_cache *rc, const perch__entities *e,
                                             const perch__agg_row *r, uint64_t pk, uint64_t addr,
                                             bool is_ip);
/* perch__resolve_frame through rc, for a thread of process pk. */
const perch__module *perch__frame_module_cached(perch__resolve_cache *rc, const perch__entities *e,
                                                uint64_t pk, uint64_t module_key, uint64_t addr,
                                                bool is_ip);
/* The process key a row's user addresses resolve in (0 when the thread is unknown). */
uint64_t perch__row_process(const perch__entities *e, const perch__agg_row *r);
/* The index in nc->names of the name of frame addr of row r (pk = perch__row_process). */
int perch__frame_name_index(perch__name_cache *nc, perch__budget *b, const perch__entities *e,
                            const perch__agg_row *r, uint64_t pk, uint64_t addr, uint32_t *index);
void perch__name_cache_free(perch__name_cache *nc, perch__budget *b);
/* perch__resolve_frame for a frame of an aggregate row. */
const perch__module *perch__frame_module(const perch__entities *e, const perch__agg_row *r,
                                         uint64_t addr, bool is_ip);

/* ---- buffered writer over perch_output ------------------------------------------------- */
typedef struct perch__writer {
    perch_output *out;
    int error;
    size_t used;
    char buf[1 << 15];
} perch__writer;

void perch__writer_init(perch__writer *w, perch_output *out);
void perch__writer_put(perch__writer *w, const void *data, size_t len);
int perch__writer_flush(perch__writer *w);
/* The text perch_json_string_n writes for s (n bytes): quoted and escaped, into out (cap
 * bytes; PERCH_JSON_TEXT_MAX(n) always fits); returns its length, 0 when it does not fit. */
#define PERCH_JSON_TEXT_MAX(n) ((n) * 6 + 2)
size_t perch__json_string_text(const char *s, size_t n, char *out, size_t cap);
/* A perch_json sink writing to a perch_output passed as ctx. */
int perch__json_output_sink(void *ctx, const char *data, size_t n);

/* ---- keyed varint logs (vlog.c) ------------------------------------------------------ */
typedef struct perch__vlog {
    uint64_t key;
    uint32_t tag;
    uint32_t aux;  /* free for the writer (the sample log: its thread's entity index + 1) */
    uint8_t *data; /* LEB128 varints not spilled yet */
    size_t len, cap;
    size_t count;       /* entries */
    uint64_t prev;      /* the writer's delta base */
    uint64_t prev2;     /* a second delta base (the sample log: the last logged ip) */
    uint64_t sum;       /* free for the writer (the sample log: the sum of the counts) */
    uint64_t spilled;   /* bytes in the scratch store, in segments seg_first .. seg_last */
    uint32_t seg_first; /* UINT32_MAX: none */
    uint32_t seg_last;
    bool unsorted; /* an entry came before the one ahead of it */
} perch__vlog;

typedef struct perch__vlog_seg {
    uint64_t off; /* in the scratch store */
    uint32_t len;
    uint32_t next; /* the log's next segment, UINT32_MAX: none */
} perch__vlog_seg;

typedef struct perch__vlogs {
    perch__vlog *v;
    size_t count, cap;
    perch__map index; /* hash of (key, tag) -> log index, probe chain on collisions */
    size_t memory;    /* log bytes held before they move to the scratch store; 0: never */
    size_t held;      /* log bytes held (capacities) */
    perch_scratch_open_fn open;
    void *open_ctx;
    perch_scratch scratch;
    bool scratch_open;
    uint64_t scratch_end;
    perch__vlog_seg *segs;
    size_t seg_count, seg_cap;
    uint8_t *load; /* a spilled log read back whole */
    size_t load_cap;
    uint8_t *stage; /* the segments of a spill not written yet (PERCH_VLOG_WINDOW bytes) */
    size_t stage_cap, stage_len;
    uint64_t spills; /* times the logs moved to the scratch store */
    int error;       /* a spill's staged bytes failed to reach the store: its logs are lost */
} perch__vlogs;

/* Signed deltas as small unsigned varints: 0, -1, 1, -2 ... -> 0, 1, 2, 3 ... */
static inline uint64_t perch__zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t perch__unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* An empty store that keeps up to memory bytes of logs (0: no cap) and then moves them to
 * scratch stores opened with open (NULL: never). A zeroed store is an uncapped one. */
void perch__vlogs_init(perch__vlogs *s, size_t memory, perch_scratch_open_fn open, void *open_ctx);
/* The log of (key, tag), created empty when create; *out NULL when absent. The pointer is
 * valid until the next call that creates a log. */
int perch__vlogs_get(perch__vlogs *s, perch__budget *b, uint64_t key, uint32_t tag, bool create,
                     perch__vlog **out);
/* Appends one entry of n varints to l (a log of s), first moving every log to the scratch
 * store when s holds its cap. 0, PERCH_ELIMIT, PERCH_ENOMEM or the scratch store's error.
 * Inline when the log has the room; perch__vlogs_put_slow grows (or spills) first. */
int perch__vlogs_put_slow(perch__vlogs *s, perch__budget *b, perch__vlog *l, const uint64_t *vals,
                          size_t n);
/* The n values as LEB128 varints at out (room for 10 bytes each); returns the bytes. */
static inline size_t perch__put_varints(uint8_t *out, const uint64_t *vals, size_t n)
{
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t v = vals[i];
        while (v >= 0x80) {
            out[len++] = (uint8_t)(v | 0x80);
            v >>= 7;
        }
        out[len++] = (uint8_t)v;
    }
    return len;
}
static inline int perch__vlogs_put(perch__vlogs *s, perch__budget *b, perch__vlog *l,
                                   const uint64_t *vals, size_t n)
{
    if (l->len + n * 10 > l->cap)
        return perch__vlogs_put_slow(s, b, l, vals, n);
    l->len += perch__put_varints(l->data + l->len, vals, n);
    l->count++;
    return 0;
}
/* The whole of log l (spilled segments read back into a buffer of s, valid until the next
 * read): *data, *len. */
int perch__vlogs_read(perch__vlogs *s, perch__budget *b, const perch__vlog *l, const uint8_t **data,
                      size_t *len);
/* A log read back in windows: the in-memory log as it is, a spilled one through a window
 * of the reader's own (perch__vlog_window, PERCH_VLOG_WINDOW bytes), so reading the largest
 * log holds a window, not the log, and two threads may read two logs of one store at once
 * (the scratch store's read_at is positioned). Short segments are read through a read-ahead
 * of PERCH_VLOG_AHEAD bytes of the store: the logs spilled together lie side by side, so a
 * store of millions of one-sample logs is read back with one system call for many logs. */
#define PERCH_VLOG_WINDOW (64u << 10)
#define PERCH_VLOG_AHEAD  (32u << 10)
typedef struct perch__vlog_window {
    uint8_t *buf; /* the window */
    size_t cap;
    uint8_t *ahead; /* bytes [ahead_off, ahead_off + ahead_len) of store's scratch */
    size_t ahead_cap, ahead_len;
    uint64_t ahead_off;
    const struct perch__vlogs *store;
} perch__vlog_window;
void perch__vlog_window_free(perch__vlog_window *w, perch__budget *b);

typedef struct perch__vlog_reader {
    perch__vlogs *s;
    const perch__vlog *l;
    perch__vlog_window *w;
    const uint8_t *data; /* the window: data[0, len) */
    size_t len;
    uint32_t seg; /* the next segment to read (UINT32_MAX: none) */
    uint32_t at;  /* bytes of it read */
    size_t tail;  /* bytes of the in-memory tail read */
    bool last;    /* the window reaches the log's end */
} perch__vlog_reader;

int perch__vlog_reader_open(perch__vlogs *s, perch__budget *b, const perch__vlog *l,
                            perch__vlog_window *w, perch__vlog_reader *r);
/* Keeps data[*off, len), moves it to the front and appends the log's next bytes, *off = 0;
 * call it when fewer bytes than an entry's largest remain and !r->last. */
int perch__vlog_reader_refill(perch__vlog_reader *r, size_t *off);
/* A varint of at most 8 bytes read with one 8-byte load at p (8 bytes must be readable
 * there): its value, and its length into *n; *n = 0 (and 0) when it is longer, or on a
 * big-endian host, and then the caller reads it byte by byte. The bytes up to the first without
 * its high bit are kept, and their 7-bit groups packed together in three steps. One branch
 * that nearly always goes the same way, where a byte loop mispredicts as the lengths vary. */
static inline uint64_t perch__varint8(const uint8_t *p, unsigned *n)
{
    uint64_t w, stop;
    memcpy(&w, p, sizeof w);
    stop = ~w & 0x8080808080808080ull; /* the bytes without the continuation bit */
    if (__BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__ || stop == 0) {
        *n = 0;
        return 0;
    }
    *n = ((unsigned)__builtin_ctzll(stop) + 1) / 8;
    w &= (stop ^ (stop - 1)) & 0x7f7f7f7f7f7f7f7full; /* the varint's bytes, their 7 bits */
    w = (w & 0x007f007f007f007full) | (w & 0x7f007f007f007f00ull) >> 1;
    w = (w & 0x00003fff00003fffull) | (w & 0x3fff00003fff0000ull) >> 2;
    return (w & 0x000000000fffffffull) | (w & 0x0fffffff00000000ull) >> 4;
}

/* The varint at *off (advanced) of data[0, len); 0 past the end. Where the ten bytes a varint
 * may take are left, its bytes are read without a check against len each. */
static inline uint64_t perch__vnext(const uint8_t *data, size_t len, size_t *off)
{
    uint64_t v = 0;
    if (len >= 10 && *off <= len - 10) {
        const uint8_t *p = data + *off;
        for (unsigned i = 0; i < 10; i++) {
            v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
            if (p[i] < 0x80 || i == 9) {
                *off += i + 1;
                return v;
            }
        }
    }
    for (unsigned shift = 0; *off < len && shift < 64; shift += 7) {
        uint8_t c = data[(*off)++];
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            break;
    }
    return v;
}
/* No log is looked up or created any more (the logs are only read from now on): frees the
 * key index (12 bytes a slot, about 24 a log), before the reader's own arrays grow. */
void perch__vlogs_seal(perch__vlogs *s, perch__budget *b);
void perch__vlogs_free(perch__vlogs *s, perch__budget *b);

/* ---- the sample log by group (groups.c) -------------------------------------------------
 * Every sample goes to the varint log of its group (thread key, kind, PMC source): time
 * delta, stack id, count, and the ip and module when the row needs them. At finish each group
 * is read back alone and aggregated into its rows (one per stack, or per (ip, module) for
 * samples without a stack), so memory holds one group's rows at a time, never every row. */
typedef struct perch__gsample {
    uint64_t ts;
    uint32_t row;   /* index in the group's rows */
    uint32_t count; /* the sample's Count */
    uint32_t order; /* arrival order in the group */
} perch__gsample;

typedef struct perch__group_ref {
    uint64_t key;
    uint32_t tag;
    uint32_t index; /* in the log store */
} perch__group_ref;

/* A direct-mapped cache of the sample log's groups: (thread key, tag) -> its log and the
 * thread's entity. */
#define PERCH_GROUP_CACHE 256
typedef struct perch__group_slot {
    uint64_t key;
    uint32_t tag;
    uint32_t log;    /* index in the log store + 1, 0 = empty */
    uint32_t thread; /* the thread's entity index, UINT32_MAX: none (key 0) */
} perch__group_slot;

/* One group's rows and samples as read back from its log (groups.c), and the scratch arrays
 * that build them. The sample log has three, so a helper thread can build the next large
 * group's in two of them while the writer reads this one's, or builds a small one in the
 * third (groups_each.c). */
typedef struct perch__gstate {
    perch__agg_row *rows;
    size_t row_count, row_cap;
    uint64_t *row_of; /* per stack id below row_of_cap: gen << 32 | its row in this group */
    size_t row_of_cap;
    uint32_t gen;
    perch__map far;    /* stack ids past row_of_cap -> row */
    perch__loctab ips; /* (module key, ip) of stackless rows -> extra = row */
    uint32_t *pos;     /* creation index -> sorted index */
    size_t pos_cap;
    perch__gsample *v; /* the group's samples by time (ties in arrival order) */
    size_t v_count, v_cap;
    uint64_t *keys, *keys_tmp; /* sorting the group's rows and samples (sort.c) */
    size_t keys_cap, keys_tmp_cap;
    perch__vlog_window window; /* reading the group's log back */
} perch__gstate;

typedef struct perch__samplelog {
    perch__vlogs log; /* tag = kind << 16 | PMC source */
    perch__group_slot cache[PERCH_GROUP_CACHE];
    uint64_t samples;  /* records seen */
    uint64_t last_ts;  /* the latest sample time */
    bool want_samples; /* keep each group's samples (gecko) */
    /* the groups being visited */
    perch__group_ref *order; /* the logs by (key, tag) */
    size_t order_cap;
    perch__gstate st[3]; /* two for the helper thread's groups, one for the writer's own */
} perch__samplelog;

/* ---- sorting (sort.c) ---------------------------------------------------------------- */
/* Orders n records (stride bytes apart from base) by the 64-bit time at byte off of each,
 * ties by index: keys[i] = (time - smallest) << *bits | index of the i-th, sorted (keys and
 * tmp hold n each). false (keys undefined) when n is 0 or the times' range and the indices
 * do not fit 64 bits together. */
bool perch__time_order(uint64_t *keys, uint64_t *tmp, const void *base, size_t stride, size_t off,
                       size_t n, unsigned *bits);
/* The same order as perch__time_order for records that mostly come in time order, from a
 * radix sort of only the records that come after a later one, merged with the others: tmp[i]
 * = the index of the i-th (keys and tmp hold n each). false (tmp undefined) when n is 0 or
 * the late records' time range and the indices do not fit 64 bits together. */
bool perch__time_order_late(uint64_t *keys, uint64_t *tmp, const void *base, size_t stride,
                            size_t off, size_t n);
/* Moves n records of size bytes (at most 128) so that place i holds the one at order[i];
 * order is used up (left as the identity). */
void perch__permute(void *base, size_t size, uint64_t *order, size_t n);

/* ---- common sample-exporter base: entities + stacks + the sample log --------------------- */
typedef struct perch__collect {
    perch__budget budget;
    perch__entities ents;
    perch__stacks stacks;
    perch__agg agg; /* the HTML report's aggregate (the exporters use `samples`) */
    perch__samplelog samples;
    perch_export_options opt;
    perch_output *out;
    int (*write)(struct perch__collect *c); /* the format's writer, called at finish */
} perch__collect;

void perch__collect_init(perch__collect *c, const perch_export_options *opt, perch_output *out);
void perch__collect_free(perch__collect *c);
/* Binds every callback; finish seals the entities and calls c->write. */
void perch__collect_bind(perch__collect *c, perch_sink *sink);
uint64_t perch__interval_ns(const perch_export_options *opt);
/* The log memory and the scratch opener of the options, defaults applied. */
size_t perch__log_memory(const perch_export_options *opt);
perch_scratch_open_fn perch__scratch_opener(const perch_export_options *opt);
/* Copies the PMC counter names of rec (at most PERCH_MAX_PMC) into the entities' strings:
 * names[i] = offset, *count = how many. */
int perch__counter_names(perch__collect *c, const perch_counters_rec *rec, uint32_t *names,
                         uint32_t *count);
/* Nanoseconds from the trace start for a raw timestamp. */
double perch__ts_ns(const perch_trace_info *info, uint64_t ts);

/* ---- format table ---------------------------------------------------------------------- */
typedef struct perch__format {
    const char *name;
    const char *opens;
    unsigned passes;
    int (*create)(const perch_export_options *opt, perch_output *out, void **state);
    void (*bind)(void *state, unsigned pass, perch_sink *sink);
    void (*destroy)(void *state);
} perch__format;

extern const perch__format perch__format_chrome;
extern const perch__format perch__format_gecko;
extern const perch__format perch__format_pprof;
extern const perch__format perch__format_speedscope;
extern const perch__format perch__format_folded;

/* Ticks as microseconds with 3 decimals ("-12.345") or milliseconds (ms: 6 decimals), the
 * text of a JSON number, into out (at least PERCH_TIME_TEXT_MAX bytes, no NUL); returns its
 * length. */
#define PERCH_TIME_TEXT_MAX 48
size_t perch__fmt_time(char *out, int64_t ticks, uint64_t freq, bool ms);
/* The same text for t - from, the difference of two raw times taken as a signed number of
 * any size (a cast of the unsigned difference to int64_t would turn one more than 2^63 ticks
 * apart into the wrong sign). Exact for every pair, as perch__fmt_time is for every tick count. */
size_t perch__fmt_time_since(char *out, uint64_t t, uint64_t from, uint64_t freq, bool ms);
/* The length of a time's text (len bytes at text) without its fraction's trailing zeros, nor
 * its point when no digit is left: the same number in fewer bytes ("1.5" for "1.500000"). */
size_t perch__trim_fraction(const char *text, size_t len);
/* perch__fmt_time_since's microseconds, trimmed (perch__trim_fraction): the chrome export's
 * times. At the 10 MHz QPC clock (a tick is 0.1 us) written without the general path. */
size_t perch__fmt_us_since(char *out, uint64_t t, uint64_t from, uint64_t freq);

/* A run of values of one JSON array, formatted into a local buffer and handed to the writer
 * a few KiB at a time (perch_json_raw_n), so each value costs a few stores instead of a
 * writer call: the bytes are the ones perch_json_uint/int/raw per value would write. Start
 * with {w} right after perch_json_begin_array (or after other values of the array), end with
 * perch__run_flush before anything else is written to w. */
typedef struct perch__run {
    perch_json *w;
    size_t len;
    char buf[4096];
} perch__run;

/* "00" .. "99": the text of each number below 100, two digits each. */
extern const char perch__digit_pairs[201];
/* v in decimal at out (at most 20 bytes, no NUL); returns the length. */
size_t perch__put_uint(char *out, uint64_t v);
/* The low n decimal digits of v at out, zero-padded (no NUL). */
void perch__put_digits(char *out, uint64_t v, size_t n);
void perch__run_int(perch__run *r, int64_t v);
/* n bytes of raw JSON value text (a number, null, true ...). */
void perch__run_raw(perch__run *r, const char *text, size_t n);
void perch__run_flush(perch__run *r);
/* Room for one more value of at most max bytes (max < sizeof r->buf) and its comma: where to
 * write it; add its length to r->len. */
static inline char *perch__run_reserve(perch__run *r, size_t max)
{
    if (r->len + max + 1 > sizeof r->buf)
        perch__run_flush(r);
    if (r->len)
        r->buf[r->len++] = ',';
    return r->buf + r->len;
}
/* Appends v (a comma first unless it is the run's first value); inline, as every column of
 * a profile's tables is a run of these. */
static inline void perch__run_uint(perch__run *r, uint64_t v)
{
    if (r->len > sizeof r->buf - 32)
        perch__run_flush(r);
    if (r->len)
        r->buf[r->len++] = ',';
    if (v < 10)
        r->buf[r->len++] = (char)('0' + v);
    else
        r->len += perch__put_uint(r->buf + r->len, v);
}

/* One group (thread, kind, PMC source) of the sample log: its rows sorted by first time,
 * then stack id, ip, module and creation order; with want_samples its samples too. */
typedef struct perch__group {
    const perch__agg_row *rows;
    size_t row_count;
    const perch__thread *thread; /* NULL when the thread has no entry */
    uint64_t count;              /* sum of the rows' counts */
    const perch__gsample *samples;
    size_t sample_count;
} perch__group;

/* The thread entity of a group of the sample log (what perch__entities_thread_at gives for
 * its key, found when its first sample came), NULL when none. */
static inline const perch__thread *perch__group_thread(const perch__collect *c,
                                                       const perch__vlog *g)
{
    return g->aux ? &c->ents.threads[g->aux - 1] : NULL;
}

/* Touches the sample's thread (perch__entities_touch_thread) and logs the sample in its
 * group. */
int perch__samplelog_add(perch__collect *c, const perch_sample_rec *rec);
/* Visits every group in (thread key, kind, PMC source) order; the group's arrays are valid
 * during the call. 0, the first error or visit's non-zero return. */
int perch__samplelog_each(perch__collect *c, int (*visit)(void *ctx, const perch__group *g),
                          void *ctx);
/* The same visit in two steps: prepare(ctx, group, slot) copies what the format's writer
 * needs of a group into the format's slot (below `slots`, at least 2; the group's arrays are
 * valid during the call), then visit(ctx, slot) writes it. With a helper thread, groups are
 * built and prepared there, group i in slot i % slots, while the calling thread visits: the
 * group after the one being visited always, further ones while their samples together stay
 * within `ahead`; with options threads = 1 both run on the calling thread, slot 0 only. */
int perch__samplelog_each_prepared(perch__collect *c, size_t slots, uint64_t ahead,
                                   int (*prepare)(void *ctx, const perch__group *g, size_t slot),
                                   int (*visit)(void *ctx, size_t slot), void *ctx);
void perch__samplelog_free(perch__samplelog *l, perch__budget *b);
/* Reads group g's log back into s: its rows (aggregated, sorted by first time, stack id, ip,
 * module and creation order) and, with want_samples, its samples by time (groups.c). Two
 * threads may build two groups at once, each into a state of its own. */
int perch__group_build(perch__collect *c, perch__gstate *s, const perch__vlog *g);
void perch__gstate_free(perch__gstate *s, perch__budget *b);
/* A human name for a thread, the same in every format: "app.exe (1234) main (1001)",
 * "app.exe (1234) thread 1001" when unnamed, "Idle (CPU 3)" for the idle thread of a CPU
 * ("?" parts when unknown). t may be NULL (then tid is used; UINT32_MAX: "thread ?"). */
size_t perch__thread_label(const perch__entities *e, const perch__thread *t, uint32_t tid,
                           char *buf, size_t cap);
/* The thread's own name without the process: "main", "thread 1001", "Idle (CPU 3)". */
size_t perch__thread_short_name(const perch__entities *e, const perch__thread *t, uint32_t tid,
                                char *buf, size_t cap);

/* Shared create/destroy for the one-pass aggregate formats. */
int perch__collect_create(const perch_export_options *opt, perch_output *out, void **state,
                          int (*write)(perch__collect *c));
void perch__collect_destroy(void *state);
void perch__collect_bind_pass(void *state, unsigned pass, perch_sink *sink);

#endif
