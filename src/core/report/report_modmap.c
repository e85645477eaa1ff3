/*
 * The report's modules by address, for naming stack frames: the M5 rule of report_names.c
 * (among the ranges of one process key holding an address, the highest base, then the
 * smallest size, then the smaller name, then the module seen first) as a sorted index
 * (model/module_index.h) instead of a scan of every module for every frame (200,000 modules
 * times 160,000 frames took a crafted capture's report a minute).
 */
#include <stdlib.h>

#include "model/mem.h"
#include "model/module_order.h"
#include "perch/error.h"
#include "report/report_internal.h"

void perch__rmodmap_free(rmodmap *m)
{
    perch__module_index_free(&m->index);
    m->built = false;
}

int perch__rmodmap_build(rmodmap *m, const rtable *mods)
{
    perch__module_sort *v = perch__alloc(sizeof *v * ((size_t)mods->count + 1));
    uint32_t n = 0;
    if (v == NULL)
        return PERCH_ENOMEM;
    for (uint32_t i = 0; i < mods->count; i++) {
        const rmod *md = (const rmod *)mods->rows + i;
        if (md->known && md->size > 0)
            v[n++] = (perch__module_sort){md->process_key, md->base, md->size,
                                          md->name ? md->name : "", i};
    }
    qsort(v, n, sizeof *v, perch__module_sort_cmp_first);
    int err = perch__module_index_build(&m->index, v, n);
    perch__free(v);
    m->built = err == 0;
    return err;
}

const rmod *perch__rmodmap_find(const rmodmap *m, const rtable *mods, uint64_t process_key,
                                uint64_t addr)
{
    uint32_t row = perch__module_index_find(&m->index, process_key, addr);
    return row != PERCH_MODULE_INDEX_NONE ? (const rmod *)mods->rows + row : NULL;
}
