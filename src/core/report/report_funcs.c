/*
 * The report's top functions in bounded memory. Timer samples are counted per (module, IP) as
 * they arrive, in a fixed open-addressed table; when it is three quarters full its rows are
 * appended to a spool (util/spool.h, which moves to a scratch store past its budget) and the
 * table starts empty again, so an IP can have rows in several flushes. At output every row
 * (spooled, then in the table) is named through the stream's symbol records and added to a
 * table keyed by its "module!function" name, which is bounded by the symbols the stream
 * holds. The names, sums and order are those of one table of every IP: only where the
 * counts wait changes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/hmap.h"
#include "perch/error.h"
#include "report/report_internal.h"
#include "model/mem.h"

#define MIN_SLOTS 16u
#define MAX_SLOTS (1u << 20)
#define MAX_FUNCS (1u << 24)

void perch__rips_init(rips *t, uint64_t memory, perch_scratch_open_fn open, void *open_ctx)
{
    memset(t, 0, sizeof *t);
    uint32_t slots = MIN_SLOTS;
    while (slots < MAX_SLOTS && (uint64_t)slots * 2 * sizeof(rip) <= memory / 16)
        slots *= 2;
    t->mask = slots - 1;
    perch__spool_init(&t->spool, (size_t)(memory / 16), open, open_ctx);
}

void perch__rips_free(rips *t)
{
    perch__free(t->slot);
    perch__spool_free(&t->spool);
}

static uint32_t slot_of(const rips *t, uint64_t module_key, uint64_t ip)
{
    return (uint32_t)perch__mix64(module_key * 0x9e3779b97f4a7c15ull ^ ip) & t->mask;
}

/* Appends the table's rows to the spool and empties it. */
static int flush(rips *t)
{
    for (uint32_t i = 0; i <= t->mask; i++) {
        if (t->slot[i].module_key == 0)
            continue;
        int err = perch__spool_append(&t->spool, &t->slot[i], sizeof t->slot[i]);
        if (err)
            return err;
    }
    memset(t->slot, 0, sizeof *t->slot * (t->mask + 1u));
    t->used = 0;
    return 0;
}

int perch__report_count_ip(perch_report *r, uint64_t module_key, uint64_t ip, uint32_t count)
{
    rips *t = &r->ips;
    if (t->slot == NULL && (t->slot = perch__calloc(t->mask + 1u, sizeof *t->slot)) == NULL)
        return PERCH_ENOMEM;
    for (uint32_t i = slot_of(t, module_key, ip);; i = (i + 1) & t->mask) {
        rip *s = &t->slot[i];
        if (s->module_key == module_key && s->ip == ip) {
            s->samples += count;
            return 0;
        }
        if (s->module_key != 0)
            continue;
        if (t->used >= (t->mask + 1u) / 4 * 3) {
            int err = flush(t);
            if (err)
                return err;
            return perch__report_count_ip(r, module_key, ip, count);
        }
        *s = (rip){module_key, ip, count};
        t->used++;
        return 0;
    }
}

/* The function table being built: rows and an index by the hash of their name. */
typedef struct funcs {
    rfunc *v;
    uint32_t n, cap;
    perch__hmap index;
} funcs;

static uint64_t name_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return perch__mix64(h);
}

/* Adds one (module, IP) row to its function, when the stream names it. */
static int add_row(perch_report *r, funcs *fs, const rip *row)
{
    const rmod *md = perch__rtable_get(&r->mods, row->module_key, sizeof *md);
    perch_sym_func f;
    int64_t off;
    char name[sizeof fs->v->name];
    uint32_t at;
    if (md == NULL || !md->known || row->ip - md->base > UINT32_MAX ||
        !perch_symnames_lookup(r->names, md->key, (uint32_t)(row->ip - md->base), &f, &off))
        return 0;
    snprintf(name, sizeof name, "%s!%s", md->name, f.name);
    uint64_t k = name_hash(name);
    while (perch__hmap_get(&fs->index, k, &at)) { /* rehash past a colliding name */
        if (strcmp(fs->v[at].name, name) == 0) {
            fs->v[at].samples += row->samples;
            return 0;
        }
        k = perch__mix64(k + 1);
    }
    int err = perch__grow_array((void **)&fs->v, sizeof *fs->v, &fs->cap, fs->n + 1, MAX_FUNCS);
    if (!err)
        err = perch__hmap_put(&fs->index, k, fs->n);
    if (err)
        return err;
    memcpy(fs->v[fs->n].name, name, sizeof name);
    fs->v[fs->n].samples = row->samples;
    fs->v[fs->n++].source = f.source;
    return 0;
}

static int cmp_samples(const void *a, const void *b)
{
    const rfunc *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    return strcmp(x->name, y->name);
}

static int add_all(perch_report *r, funcs *fs)
{
    rips *t = &r->ips;
    uint64_t size = perch__spool_size(&t->spool);
    int err = 0;
    for (uint64_t off = 0; off < size && !err; off += sizeof(rip)) {
        rip row;
        err = perch__spool_read(&t->spool, off, &row, sizeof row);
        if (!err)
            err = add_row(r, fs, &row);
    }
    for (uint32_t i = 0; t->slot != NULL && i <= t->mask && !err; i++)
        if (t->slot[i].module_key != 0)
            err = add_row(r, fs, &t->slot[i]);
    return err;
}

int perch__report_functions(perch_report *r, rfunc **rows, uint32_t *n)
{
    funcs fs = {0};
    int err = r->names != NULL ? add_all(r, &fs) : 0;
    perch__hmap_free(&fs.index);
    if (!err && fs.v == NULL && (fs.v = perch__calloc(1, sizeof *fs.v)) == NULL)
        err = PERCH_ENOMEM;
    if (err) {
        perch__free(fs.v);
        return err;
    }
    if (fs.n > 0)
        qsort(fs.v, fs.n, sizeof *fs.v, cmp_samples);
    *rows = fs.v;
    *n = fs.n;
    return 0;
}
