/*
 * Address -> module resolution and frame naming shared by every exporter (and usable by the
 * report). Kernel addresses (>= 0xFFFF800000000000 with 8-byte pointers, >= 0x80000000 with
 * 4-byte pointers) are looked up in the kernel modules (process_key 0), other addresses in the
 * modules of the sample thread's process. When several ranges contain an address the highest
 * base wins, then the smallest size, then the smaller name, then the module seen first
 * (model/module_index.h finds it in O(log n)). Until symbolization exists a frame
 * is named `module!+0xoffset`, or `?!0xaddress` when no module contains it.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "model/module_order.h"
#include "perch/error.h"

size_t perch__module_base_name(const char *path, char *buf, size_t cap)
{
    const char *base = path;
    size_t n = 0;
    for (const char *p = path; *p; p++)
        if (*p == '\\' || *p == '/')
            base = p + 1;
    while (base[n] && n + 1 < cap) {
        buf[n] = (char)tolower((unsigned char)base[n]);
        n++;
    }
    buf[n] = 0;
    return n;
}

int perch__entities_seal(perch__entities *e)
{
    perch__module_sort *recs = NULL;
    size_t cap = 0;
    if (e->sorted)
        return 0;
    uint64_t bytes = perch__module_index_bytes(e->module_count);
    perch__module_index_free(&e->by_address);
    perch__budget_give(e->budget, e->by_address_bytes);
    e->by_address_bytes = 0;
    int err = perch__grow(e->budget, (void **)&recs, &cap, e->module_count + 1, sizeof *recs);
    if (err)
        return err;
    for (size_t i = 0; i < e->module_count; i++) {
        const perch__module *m = &e->modules[i];
        recs[i] = (perch__module_sort){m->process_key, m->base, m->size,
                                       perch__str(&e->strings, m->name), (uint32_t)i};
    }
    qsort(recs, e->module_count, sizeof *recs, perch__module_sort_cmp_first);
    if (!perch__budget_take(e->budget, bytes))
        err = PERCH_ELIMIT;
    else if ((err = perch__module_index_build(&e->by_address, recs, e->module_count)) != 0)
        perch__budget_give(e->budget, bytes);
    else
        e->by_address_bytes = bytes;
    perch__release(e->budget, (void **)&recs, &cap, sizeof *recs);
    e->sorted = err == 0;
    return err;
}

bool perch__is_kernel_address(const perch__entities *e, uint64_t addr)
{
    /* A 32-bit trace has no address above 4 GiB; a replayed record that claims one is user. */
    if (e->info.pointer_size == 4 && addr > 0xffffffffu)
        return false;
    return perch_is_kernel_address(addr, e->info.pointer_size);
}

static const perch__module *lookup(const perch__entities *e, uint64_t pk, uint64_t addr)
{
    uint32_t i = perch__module_index_find(&e->by_address, pk, addr);
    return i != PERCH_MODULE_INDEX_NONE ? &e->modules[i] : NULL;
}

const perch__module *perch__resolve(const perch__entities *e, uint64_t process_key, uint64_t addr)
{
    if (!e->sorted || e->module_count == 0)
        return NULL;
    if (perch__is_kernel_address(e, addr))
        return lookup(e, 0, addr);
    if (process_key == 0)
        return NULL;
    return lookup(e, process_key, addr);
}

/* prefix then v as lower-case hex ("0x1a2b"), as snprintf(buf, cap, "%s%" PRIx64) writes
 * it, without printf on the common path. */
static size_t put_hex(char *buf, size_t cap, const char *prefix, size_t plen, uint64_t v)
{
    static const char digits[] = "0123456789abcdef";
    char tmp[16], *p = tmp + sizeof tmp;
    size_t n;
    do {
        *--p = digits[v & 15];
        v >>= 4;
    } while (v);
    n = (size_t)(tmp + sizeof tmp - p);
    if (plen + n + 1 > cap) /* cut short: exactly what snprintf does */
        return perch__snlen(snprintf(buf, cap, "%s%.*s", prefix, (int)n, p), cap);
    memcpy(buf, prefix, plen);
    memcpy(buf + plen, p, n);
    buf[plen + n] = '\0';
    return plen + n;
}

size_t perch__frame_func(const perch__entities *e, const perch__module *mod, uint64_t addr,
                         char *buf, size_t cap)
{
    perch_sym_func f;
    int64_t off;
    if (!mod)
        return put_hex(buf, cap, "0x", 2, addr);
    if (e->names && addr - mod->base <= UINT32_MAX &&
        perch_symnames_lookup(e->names, mod->key, (uint32_t)(addr - mod->base), &f, &off))
        return perch__snlen(snprintf(buf, cap, "%s%s0x%" PRIx64, f.name, off < 0 ? "-" : "+",
                                     off < 0 ? (uint64_t)-off : (uint64_t)off),
                            cap);
    return put_hex(buf, cap, "+0x", 3, addr - mod->base);
}

size_t perch__frame_name(const perch__entities *e, const perch__module *mod, uint64_t addr,
                         char *buf, size_t cap)
{
    const char *name = mod ? perch__str(&e->strings, mod->name) : "?";
    size_t len = strlen(name), n;
    if (len + 2 <= cap) { /* "name!" fits: what snprintf would write */
        memcpy(buf, name, len);
        buf[len] = '!';
        buf[len + 1] = '\0';
        n = len + 1;
    } else {
        n = perch__snlen(snprintf(buf, cap, "%s!", name), cap);
    }
    return n + perch__frame_func(e, mod, addr, buf + n, cap - n);
}

const perch__module *perch__resolve_frame(const perch__entities *e, uint64_t thread_key,
                                          uint64_t module_key, uint64_t addr, bool is_ip)
{
    const perch__thread *t;
    const perch__module *m;
    if (is_ip && module_key) {
        m = perch__module_by_key(e, module_key);
        if (m && addr - m->base < m->size)
            return m;
    }
    t = perch__entities_thread_at(e, thread_key);
    return perch__resolve(e, t ? t->process_key : 0, addr);
}

const perch__module *perch__frame_module(const perch__entities *e, const perch__agg_row *r,
                                         uint64_t addr, bool is_ip)
{
    return perch__resolve_frame(e, r->thread_key, r->module_key, addr, is_ip);
}

const perch__module *perch__resolve_cached(perch__resolve_cache *rc, const perch__entities *e,
                                           uint64_t process_key, uint64_t addr)
{
    struct perch__resolve_slot *slot =
        &rc->slot[perch__hash64(addr ^ perch__hash64(process_key)) & (PERCH_RESOLVE_CACHE - 1)];
    const perch__module *m;
    if (slot->mod && slot->pk == process_key && slot->addr == addr)
        return slot->mod == 1 ? NULL : &e->modules[slot->mod - 2];
    m = perch__resolve(e, process_key, addr);
    *slot = (struct perch__resolve_slot){process_key, addr, m ? (uint32_t)(m - e->modules) + 2 : 1};
    return m;
}

const perch__module *perch__frame_module_cached(perch__resolve_cache *rc, const perch__entities *e,
                                                uint64_t pk, uint64_t module_key, uint64_t addr,
                                                bool is_ip)
{
    if (is_ip && module_key) {
        const perch__module *m = perch__module_by_key(e, module_key);
        if (m && addr - m->base < m->size)
            return m;
    }
    return rc ? perch__resolve_cached(rc, e, pk, addr) : perch__resolve(e, pk, addr);
}

const perch__module *perch__row_frame_module(perch__resolve_cache *rc, const perch__entities *e,
                                             const perch__agg_row *r, uint64_t pk, uint64_t addr,
                                             bool is_ip)
{
    return perch__frame_module_cached(rc, e, pk, r->module_key, addr, is_ip);
}

uint64_t perch__row_process(const perch__entities *e, const perch__agg_row *r)
{
    const perch__thread *t = perch__entities_thread_at(e, r->thread_key);
    return t ? t->process_key : 0;
}

int perch__frame_name_index(perch__name_cache *nc, perch__budget *b, const perch__entities *e,
                            const perch__agg_row *r, uint64_t pk, uint64_t addr, uint32_t *index)
{
    char name[PERCH_FRAME_NAME_MAX];
    const perch__module *m;
    uint32_t slot;
    bool is_new;
    int err;
    if (r->stack_id == 0 && r->module_key) { /* the sample's own module: not cacheable by pk */
        m = perch__frame_module(e, r, addr, true);
        return perch__intern(&nc->names, b, name, perch__frame_name(e, m, addr, name, sizeof name),
                             index);
    }
    if (perch__is_kernel_address(e, addr))
        pk = 0;
    err = perch__loctab_get(&nc->seen, b, pk, addr, &slot, &is_new);
    if (err)
        return err;
    if (is_new) {
        m = perch__resolve(e, pk, addr);
        err = perch__intern(&nc->names, b, name, perch__frame_name(e, m, addr, name, sizeof name),
                            &nc->seen.locs[slot].extra);
        if (err)
            return err; /* the export stops here: the half-added entry is never read */
    }
    *index = nc->seen.locs[slot].extra;
    return 0;
}

void perch__name_cache_free(perch__name_cache *nc, perch__budget *b)
{
    perch__loctab_free(&nc->seen, b);
    perch__interner_free(&nc->names, b);
}
