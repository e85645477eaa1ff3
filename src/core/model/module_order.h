/*
 * The order that decides which module an address is in when modules overlap (M5,
 * docs/model.md): by process, then by base, the larger size first, then by name descending,
 * so the last range in order that holds an address (what module_index.h answers) has the
 * highest base, then the smallest size, then the smallest name. The report (report_modmap.c),
 * the exports (export/frames.c), the model's maps (modules.c, for their address index) and the
 * symbolizer (sym/symbolize.c) all sort their modules this way; one comparison keeps them
 * naming frames alike. They differ only in which of two equal modules wins.
 */
#ifndef PERCH_MODEL_MODULE_ORDER_H
#define PERCH_MODEL_MODULE_ORDER_H

#include <stdint.h>

/* What the sort compares (qsort has no context argument); index is the caller's. */
typedef struct perch__module_sort {
    uint64_t process_key, base, size;
    const char *name;
    uint32_t index;
} perch__module_sort;

/* qsort comparison of two perch__module_sort in M5 order; 0 when all but index are equal. */
int perch__module_sort_cmp(const void *a, const void *b);

/* M5, then the greater index first among equals: with distinct indices in the order the
 * modules were seen, the module seen first is the last in order, and so the one a lookup
 * (module_index.h) answers. */
int perch__module_sort_cmp_first(const void *a, const void *b);

/* M5, then the smaller index first among equals: the module with the greater index is the
 * one a lookup answers (the model's maps, whose backward scan meets it first, and the
 * symbolizer). */
int perch__module_sort_cmp_last(const void *a, const void *b);

#endif
