/*
 * The chrome export's events that need no state of the stream once pass 1 has sealed the
 * entities (chrome_events.c): a slice's complete event ("X", and its copy on the CPU's track)
 * and a PMC sample's instant event ("i"), formatted by a perch__chrome_fmt into its writer. A
 * formatter's caches are its own, so two threads each with one format events at once; the
 * entities and the counter names are only read. A PMC sample is named by
 * its leaf frame: the thread that replays the stream finds the leaf in the interned stacks,
 * which it alone changes (perch__chrome_pmc_leaf); naming the leaf reads only what pass 1
 * sealed (the modules, and the symbol tables, every one sealed at the end of pass 1, so no
 * lookup changes them), so either thread names it (perch__chrome_leaf_name, through its
 * formatter's caches) and the event is formatted from the name text (perch__chrome_pmc).
 *
 * chrome_async.c runs a second formatter on a thread of its own: the exporter's thread queues
 * its own text, the slices and PMC samples (with their leaves) and the profile chunks' new
 * nodes and numbers in stream order, the formatter thread names the PMC samples and the profiles'
 * new nodes and formats everything in that order and writes it to the output, so the bytes are
 * those of one thread.
 */
#ifndef PERCH_EXPORT_CHROME_EVENTS_H
#define PERCH_EXPORT_CHROME_EVENTS_H

#include "export/chrome_profile.h"

#define PERCH_CHROME_UNKNOWN_PID 2147483646u /* threads whose process is unknown */
#define PERCH_CHROME_CPU_PID     2147483647u /* the per-CPU tracks */
#define PERCH_CHROME_IDLE_TID    2147418112u /* 0x7fff0000 + cpu: the idle thread of each CPU */
#define PERCH_CHROME_THREADS     256         /* the thread cache, a power of two */
#define PERCH_CHROME_TRACKS        256         /* the track text cache, a power of two */
#define PERCH_CHROME_TRACK_TEXT    40          /* `,"pid":P,"tid":T` at most (34 bytes) */
#define PERCH_CHROME_NAME_TEXT_MAX PERCH_JSON_TEXT_MAX(PERCH_FRAME_NAME_MAX)

/* What an event needs of its thread (perch__chrome_thread). */
typedef struct perch__chrome_thread {
    uint64_t key;
    uint64_t process_key;
    uint32_t pid;
    bool valid;
} perch__chrome_thread;

typedef struct perch__chrome_fmt {
    perch_json *w;
    const perch__entities *ents;
    const uint32_t *pmc_names;  /* PMC counter i is called ents->strings at pmc_names[i] */
    uint32_t pmc_name_count;
    bool cpu_tracks;
    perch__budget *budget;      /* the name cache's */
    perch__resolve_cache *rc;   /* the name cache's module lookups (the formatter's own) */
    struct perch__chrome_pmc_key {
        char text[64]; /* `"name":` escaped, when it fits */
        size_t len;
        bool done, fits;
    } pmc_keys[PERCH_MAX_PMC];
    perch__chrome_thread threads[PERCH_CHROME_THREADS];
    /* the text `,"pid":P,"tid":T` of a track by (pid << 32 | tid); len 0: empty */
    struct perch__chrome_track {
        uint64_t key;
        uint8_t len;
        char text[PERCH_CHROME_TRACK_TEXT];
    } tracks[PERCH_CHROME_TRACKS];
    /* a PMC sample's event name as JSON text by (process key, leaf address, module key when
     * the leaf is the sample's ip) */
    struct perch__chrome_name *names;
    size_t names_cap;
} perch__chrome_fmt;

/* A PMC sample's instant event: the sample, its thread's pid and its name as JSON text. */
typedef struct perch__chrome_pmc_ev {
    perch_sample_rec rec;
    uint32_t pid;
    uint32_t name_len;
    const char *name;
} perch__chrome_pmc_ev;

/* Prepares f (the caller owns it; every field but the caches must be set before). */
void perch__chrome_fmt_reset(perch__chrome_fmt *f);
/* Frees f's name cache (the rest is the caller's). */
void perch__chrome_fmt_free(perch__chrome_fmt *f);

/* The pid of a thread (PERCH_CHROME_UNKNOWN_PID when unknown). */
uint32_t perch__chrome_pid(const perch__entities *e, uint64_t thread_key);
/* The idle thread (tid 0) gets one track per CPU. */
static inline uint32_t perch__chrome_track_tid(uint32_t tid, uint16_t cpu)
{
    return tid == 0 ? PERCH_CHROME_IDLE_TID + cpu : tid;
}
/* Fills cache entry t for thread key (perch__chrome_thread_of's miss). */
const perch__chrome_thread *perch__chrome_thread_fill(perch__chrome_fmt *f, perch__chrome_thread *t,
                                                      uint64_t key);
/* What events need of thread key, through f's cache: the hit inline, as every slice and
 * sample asks. */
static inline const perch__chrome_thread *perch__chrome_thread_of(perch__chrome_fmt *f,
                                                                  uint64_t key)
{
    perch__chrome_thread *t = &f->threads[perch__hash64(key) & (PERCH_CHROME_THREADS - 1)];
    return t->valid && t->key == key ? t : perch__chrome_thread_fill(f, t, key);
}

/* A slice's complete event on its thread's track (and on its CPU's track with cpu_tracks);
 * returns the writer's error. */
int perch__chrome_slice(perch__chrome_fmt *f, const perch_slice_rec *r);
/* The leaf frame of PMC sample r: its stack's first frame, or its ip (no stack, or one not
 * interned). Reads the stacks: on the thread that replays the stream. */
uint64_t perch__chrome_pmc_leaf(const perch__stacks *stacks, const perch_sample_rec *r);
/* The name text of leaf address `leaf` in process pk (quoted, escaped; module_key is the
 * sample's, used when is_ip: the leaf is the sample's ip) into out (PERCH_CHROME_NAME_TEXT_MAX
 * bytes), its length in *len (0: it does not fit), through f's name cache; PERCH_ELIMIT or
 * PERCH_ENOMEM when the cache cannot be had. */
int perch__chrome_leaf_name(perch__chrome_fmt *f, uint64_t pk, uint64_t module_key, uint64_t leaf,
                            bool is_ip, char *out, size_t *len);
/* Both for PMC sample r of process pk, on the thread that replays the stream. */
int perch__chrome_pmc_name(perch__chrome_fmt *f, const perch__stacks *stacks, uint64_t pk,
                           const perch_sample_rec *r, char *out, size_t *len);
/* A PMC sample's instant event; returns the writer's error. */
int perch__chrome_pmc(perch__chrome_fmt *f, const perch__chrome_pmc_ev *e);

/* ---- the second formatter (chrome_async.c) ---------------------------------------------- */
typedef struct perch__chrome_async perch__chrome_async;

/* Batches of at most this many bytes go to the formatter thread (0: the default); tests set
 * it small to make many hand-overs. */
extern size_t perch__chrome_async_batch;

/* Starts the formatter thread with a formatter like `like` (caches its own) writing to out
 * through a writer at w's nesting (the caller's writer, which then writes into the queue:
 * perch__chrome_async_text). Its batches (a ring of 8, 1 MiB in all) are charged to like's
 * budget. Returns 0, PERCH_ELIMIT, PERCH_ENOMEM or the thread error; *a untouched on error. */
int perch__chrome_async_start(const perch__chrome_fmt *like, const perch_json *w,
                              perch_output *out, perch__chrome_async **a);
/* perch_json sink of the caller's writer: queues its text. */
int perch__chrome_async_text(void *a, const char *data, size_t n);
/* Queue a slice / a PMC sample's event; comma: the event follows another array element.
 * Each returns 0 or the first error of the formatter thread (its output's). */
int perch__chrome_async_slice(perch__chrome_async *a, const perch_slice_rec *r, bool comma);
/* A PMC sample of a thread of process pk (pid its track's) whose leaf frame is `leaf`
 * (perch__chrome_pmc_leaf): the formatter thread names it. */
int perch__chrome_async_pmc(perch__chrome_async *a, const perch_sample_rec *r, uint32_t pid,
                            uint64_t pk, uint64_t leaf, bool comma);
/* Queues a profile chunk's samples: their node ids, or with times the differences of their
 * times from base on (perch__profiles.runs), written as the writer's run of numbers. */
int perch__chrome_async_runs(perch__chrome_async *a, const perch__psample *out, size_t n,
                             uint64_t base, bool times);
/* Queues n new nodes of a track of process pk, ids first_id on (perch__profiles.nodes):
 * the formatter thread names them and writes them as elements of the open array (comma: one
 * goes before the first). */
int perch__chrome_async_nodes(perch__chrome_async *a, uint64_t pk, size_t first_id,
                              const perch__pnode *nodes, size_t n, bool comma);
/* Formats everything queued, flushes the formatter's writer, joins the thread, frees a.
 * Returns the first error. Accepts NULL. */
int perch__chrome_async_stop(perch__chrome_async *a);

#endif
