/*
 * The chrome export's second formatter (chrome_events.h): a thread that names the PMC
 * samples and the profiles' call-tree nodes and formats the slices' and PMC samples' events
 * while the exporter's thread replays the stream and builds the CPU profiles. The exporter's
 * thread queues, in stream order, its own text (what its writer flushes: the profiles'
 * events), each slice and PMC sample as a compact entry (a PMC sample with its process key and
 * leaf frame, which that thread finds in the interned stacks), and each profile chunk's new
 * nodes (parent, address, module when known, the track's process key) and the node ids and
 * times of its samples; the formatter thread
 * plays the queue in order into a writer of its own over the output, so the output is the
 * bytes one thread writes. An event entry carries whether a comma goes before it (the
 * exporter's writer knows what came before).
 *
 * The queue is a ring of RING batches of entries (util/bufring.h), each entry an 8-byte head
 * (kind, payload bytes) and its payload, 8-byte aligned. The first error of the formatter (its
 * output's) is kept and returned by every later call; the thread then only empties the ring.
 */
#include <stddef.h>
#include <string.h>

#include "export/chrome_events.h"
#include "perch/error.h"
#include "util/bufring.h"
#include "util/mem.h"

#define RING          8u
#define DEFAULT_BATCH (128u << 10)
#define MIN_BATCH     4096u
/* Full batches that wake a waiting formatter (a drain or a stop wakes it at once): it is
 * faster than the exporter's thread, so it empties the ring and sleeps; each wake costs that
 * thread a futex call. 128 KiB batches and a wake at 4 of 8: 0.91 s at 512 MB, against 0.92 s
 * for 64 KiB at 2 and 256 KiB at 4, 1.04 s for 64 KiB at 6 (medians of 5 alternating rounds). */
#define WAKE 4u

size_t perch__chrome_async_batch;

/* An entry's kind: text as it is, a slice, a PMC sample, a profile chunk's node ids (u32
 * each) or times (a u64 base, then u64 each) as a run of numbers, or its new call-tree nodes
 * (a pnodes_head, then perch__pnode each); ENT_COMMA: a comma precedes it. */
enum { ENT_TEXT, ENT_SLICE, ENT_PMC, ENT_NODES, ENT_TIMES, ENT_PNODES, ENT_COMMA = 8 };

struct ent {
    uint32_t kind; /* ENT_*, ENT_COMMA or'ed into an event's */
    uint32_t len;  /* payload bytes after the head */
};

/* The payload of a PMC entry: what its event shows of the sample and what names it (the
 * process key, the leaf frame, the sample's module key and whether the leaf is its ip). */
struct pmc_entry {
    uint64_t ts, pk, leaf, module_key;
    uint32_t pid, tid, stack_id, count;
    uint16_t cpu, source;
    uint32_t is_ip;
};

/* The head of a run of new nodes: the track's process key, the first node's id. */
struct pnodes_head {
    uint64_t pk;
    uint64_t first_id;
};

#define SLICE_HEAD offsetof(perch_slice_rec, pmc_delta)

struct perch__chrome_async {
    perch__chrome_fmt fmt; /* the thread's; fmt.w = &w, fmt.rc = &rc */
    perch__resolve_cache rc;
    perch__pnames pnames; /* the profile nodes' name cache */
    perch_json w;
    perch__bufring *ring;
    perch__bufring_fill f; /* the batch the exporter fills */
    size_t charged;        /* the batches, charged to the exporter's budget */
};

static size_t pad8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* A run of numbers: node ids, or the differences of times from the base on. */
static int play_run(struct perch__chrome_async *a, const struct ent *e, const uint8_t *p)
{
    perch__run run;
    run.w = &a->w;
    run.len = 0;
    if ((e->kind & ~(uint32_t)ENT_COMMA) == ENT_NODES) {
        for (size_t i = 0; i < e->len / 4; i++) {
            uint32_t v;
            memcpy(&v, p + i * 4, 4);
            perch__run_uint(&run, v);
        }
    } else {
        uint64_t prev, us;
        memcpy(&prev, p, 8);
        for (size_t i = 1; i < e->len / 8; i++) {
            memcpy(&us, p + i * 8, 8);
            perch__run_uint(&run, us - prev);
            prev = us;
        }
    }
    perch__run_flush(&run);
    return a->w.error;
}

/* New call-tree nodes, named here, each an element of the open array. */
static int play_pnodes(struct perch__chrome_async *a, const struct ent *e, const uint8_t *p)
{
    struct pnodes_head h;
    char text[PERCH_PNODE_JSON_MAX];
    int err = 0;
    memcpy(&h, p, sizeof h);
    for (size_t i = 0; i < (e->len - sizeof h) / sizeof(perch__pnode) && !err; i++) {
        perch__pnode n;
        memcpy(&n, p + sizeof h + i * sizeof n, sizeof n);
        size_t len = perch__pnode_json(&a->pnames, a->fmt.budget, a->fmt.ents, &a->rc, h.pk,
                                       (uint32_t)(h.first_id + i), &n, text, &err);
        if (len)
            perch_json_raw_n(&a->w, text, len);
    }
    return err ? err : a->w.error;
}

/* Plays one entry on the formatter thread; returns its error. */
static int play_entry(struct perch__chrome_async *a, const struct ent *e, const uint8_t *p)
{
    uint32_t kind = e->kind & ~(uint32_t)ENT_COMMA;
    if (kind == ENT_TEXT) {
        perch_json_verbatim(&a->w, (const char *)p, e->len);
        return a->w.error;
    }
    a->w.need_comma[a->w.depth] = (e->kind & ENT_COMMA) != 0;
    if (kind == ENT_NODES || kind == ENT_TIMES)
        return play_run(a, e, p);
    if (kind == ENT_PNODES)
        return play_pnodes(a, e, p);
    if (kind == ENT_SLICE) {
        perch_slice_rec r;
        memcpy(&r, p, e->len);
        return perch__chrome_slice(&a->fmt, &r);
    }
    struct pmc_entry h;
    char name[PERCH_CHROME_NAME_TEXT_MAX];
    size_t n = 0;
    memcpy(&h, p, sizeof h);
    int err = perch__chrome_leaf_name(&a->fmt, h.pk, h.module_key, h.leaf, h.is_ip, name, &n);
    if (!err && n == 0)
        err = a->w.error ? a->w.error : PERCH_ELIMIT;
    if (err)
        return err;
    perch__chrome_pmc_ev ev = {{0}, h.pid, (uint32_t)n, name};
    ev.rec.ts = h.ts;
    ev.rec.tid = h.tid;
    ev.rec.stack_id = h.stack_id;
    ev.rec.count = h.count;
    ev.rec.cpu = h.cpu;
    ev.rec.profile_source = h.source;
    return perch__chrome_pmc(&a->fmt, &ev);
}

/* The ring's consumer, on the formatter thread. */
static int play_batch(void *ctx, const uint8_t *b, size_t len)
{
    struct perch__chrome_async *a = ctx;
    int err = 0;
    for (size_t off = 0; off < len && !err;) {
        struct ent e;
        memcpy(&e, b + off, sizeof e);
        err = play_entry(a, &e, b + off + sizeof e);
        off += sizeof e + pad8(e.len);
    }
    return err;
}

/* Room for need bytes in the batch being filled (need <= cap). */
static int room_for(struct perch__chrome_async *a, size_t need)
{
    return a->f.cap - a->f.used >= need ? perch__bufring_error(a->ring)
                                        : perch__bufring_hand_over(a->ring, &a->f, false);
}

static void *put_head(struct perch__chrome_async *a, uint32_t kind, size_t len)
{
    struct ent e = {kind, (uint32_t)len};
    memcpy(a->f.fill + a->f.used, &e, sizeof e);
    a->f.used += sizeof e + pad8(len);
    return a->f.fill + a->f.used - pad8(len);
}

int perch__chrome_async_text(void *ctx, const char *data, size_t n)
{
    struct perch__chrome_async *a = ctx;
    int err = 0;
    while (n && !err) {
        err = room_for(a, sizeof(struct ent) + 8);
        size_t k = a->f.cap - a->f.used - sizeof(struct ent);
        k = k < n ? k & ~(size_t)7 : n;
        if (!err)
            memcpy(put_head(a, ENT_TEXT, k), data, k);
        data += k;
        n -= k;
    }
    return err;
}

int perch__chrome_async_slice(perch__chrome_async *a, const perch_slice_rec *r, bool comma)
{
    size_t pmc = r->pmc_count < PERCH_MAX_PMC ? r->pmc_count : PERCH_MAX_PMC;
    size_t n = SLICE_HEAD + pmc * 8;
    int err = room_for(a, sizeof(struct ent) + pad8(n));
    if (err)
        return err;
    /* The head as one fixed-size copy and the deltas one word each: a copy of a variable size
     * here compiled to `rep movsq`, after which 7 % of the exporter thread's samples sat (its
     * stores into lines the formatter's core had just read; docs/exports.md). */
    uint8_t *p = put_head(a, ENT_SLICE | (comma ? ENT_COMMA : 0), n);
    memcpy(p, r, SLICE_HEAD);
    for (size_t i = 0; i < pmc; i++)
        memcpy(p + SLICE_HEAD + i * 8, &r->pmc_delta[i], 8);
    return 0;
}

int perch__chrome_async_pmc(perch__chrome_async *a, const perch_sample_rec *r, uint32_t pid,
                            uint64_t pk, uint64_t leaf, bool comma)
{
    int err = room_for(a, sizeof(struct ent) + sizeof(struct pmc_entry));
    if (err)
        return err;
    struct pmc_entry h = {r->ts,       pk,       leaf,   r->module_key,     pid,          r->tid,
                          r->stack_id, r->count, r->cpu, r->profile_source, leaf == r->ip};
    memcpy(put_head(a, ENT_PMC | (comma ? ENT_COMMA : 0), sizeof h), &h, sizeof h);
    return 0;
}

/* Room for an entry of a head and items of `each` bytes, at least 64 of them: how many of
 * the `left` items go into it (0 with *err on error). */
static size_t run_room(struct perch__chrome_async *a, size_t head, size_t each, size_t left,
                       int *err)
{
    *err = room_for(a, sizeof(struct ent) + head + 64 * each);
    if (*err)
        return 0;
    size_t k = (a->f.cap - a->f.used - sizeof(struct ent) - head) / each;
    return k < left ? k : left;
}

int perch__chrome_async_runs(perch__chrome_async *a, const perch__psample *out, size_t n,
                             uint64_t base, bool times)
{
    size_t each = times ? 8 : 4, head = times ? 8 : 0;
    int err = 0;
    for (size_t i = 0; i < n;) {
        size_t k = run_room(a, head, each, n - i, &err);
        if (err)
            break;
        uint8_t *p = put_head(a, (times ? ENT_TIMES : ENT_NODES) | (i ? ENT_COMMA : 0),
                              head + k * each);
        if (times) {
            uint64_t b = i ? out[i - 1].us : base;
            memcpy(p, &b, 8);
            for (size_t j = 0; j < k; j++)
                memcpy(p + 8 + j * 8, &out[i + j].us, 8);
        } else {
            for (size_t j = 0; j < k; j++)
                memcpy(p + j * 4, &out[i + j].node, 4);
        }
        i += k;
    }
    return err;
}

int perch__chrome_async_nodes(perch__chrome_async *a, uint64_t pk, size_t first_id,
                              const perch__pnode *nodes, size_t n, bool comma)
{
    const size_t each = sizeof *nodes, head = sizeof(struct pnodes_head);
    int err = 0;
    for (size_t i = 0; i < n;) {
        size_t k = run_room(a, head, each, n - i, &err);
        if (err)
            break;
        struct pnodes_head h = {pk, first_id + i};
        uint8_t *p = put_head(a, ENT_PNODES | (i || comma ? ENT_COMMA : 0), head + k * each);
        memcpy(p, &h, head);
        memcpy(p + head, nodes + i, k * each);
        i += k;
    }
    return err;
}

static void async_free(struct perch__chrome_async *a)
{
    perch__pnames_free(&a->pnames, a->fmt.budget);
    perch__chrome_fmt_free(&a->fmt);
    if (a->charged)
        perch__budget_give(a->fmt.budget, a->charged);
    perch__free(a);
}

int perch__chrome_async_stop(perch__chrome_async *a)
{
    if (!a)
        return 0;
    int err = perch__bufring_hand_over(a->ring, &a->f, true);
    int rerr = perch__bufring_stop(a->ring); /* every batch played */
    int ferr = err || rerr ? 0 : perch_json_flush(&a->w);
    async_free(a);
    return err ? err : rerr ? rerr : ferr;
}

int perch__chrome_async_start(const perch__chrome_fmt *like, const perch_json *w,
                              perch_output *out, perch__chrome_async **out_a)
{
    struct perch__chrome_async *a = perch__calloc(1, sizeof *a);
    size_t cap = perch__chrome_async_batch ? perch__chrome_async_batch : DEFAULT_BATCH;
    int err = a ? 0 : PERCH_ENOMEM;
    if (err)
        return err;
    a->fmt = *like;
    perch__chrome_fmt_reset(&a->fmt);
    a->fmt.w = &a->w;
    a->fmt.rc = &a->rc;
    perch_json_init(&a->w, perch__json_output_sink, out);
    a->w.depth = w->depth;
    memcpy(a->w.need_comma, w->need_comma, sizeof a->w.need_comma);
    cap = cap < MIN_BATCH ? MIN_BATCH : cap & ~(size_t)7;
    if (!perch__budget_take(a->fmt.budget, RING * cap))
        err = PERCH_ELIMIT;
    a->charged = err ? 0 : RING * cap;
    err = err ? err
              : perch__bufring_start(RING, cap, WAKE, play_batch, a, "perch-chrome", &a->ring,
                                     &a->f);
    if (err) {
        async_free(a);
        return err;
    }
    *out_a = a;
    return 0;
}
