/*
 * The M5 module order (module_order.h).
 */
#include <string.h>

#include "model/module_order.h"

int perch__module_sort_cmp(const void *a, const void *b)
{
    const perch__module_sort *x = a, *y = b;
    if (x->process_key != y->process_key)
        return x->process_key < y->process_key ? -1 : 1;
    if (x->base != y->base)
        return x->base < y->base ? -1 : 1;
    if (x->size != y->size)
        return x->size > y->size ? -1 : 1; /* a backward scan meets the smaller size first */
    return strcmp(y->name, x->name);
}

int perch__module_sort_cmp_first(const void *a, const void *b)
{
    const perch__module_sort *x = a, *y = b;
    int c = perch__module_sort_cmp(a, b);
    if (c != 0)
        return c;
    return x->index > y->index ? -1 : x->index < y->index;
}

int perch__module_sort_cmp_last(const void *a, const void *b)
{
    const perch__module_sort *x = a, *y = b;
    int c = perch__module_sort_cmp(a, b);
    if (c != 0)
        return c;
    return x->index < y->index ? -1 : x->index > y->index;
}
