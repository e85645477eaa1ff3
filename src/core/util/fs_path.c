/*
 * The portable parts of include/perch/fs.h: joining a directory and a name, and freeing a
 * listing. The calls that touch the file system are per platform (src/posix/fs.c,
 * src/win/fs.c).
 */
#include <stdbool.h>
#include <string.h>

#include "perch/error.h"
#include "perch/fs.h"
#include "util/mem.h"

char *perch_fs_join(const char *dir, const char *name)
{
    size_t a = strlen(dir), b = strlen(name);
    bool sep = a > 0 && dir[a - 1] != '/' && dir[a - 1] != '\\';
    char *p = perch__alloc(a + sep + b + 1);
    if (!p)
        return NULL;
    memcpy(p, dir, a);
    if (sep)
        p[a] = '/';
    memcpy(p + a + sep, name, b + 1);
    return p;
}

void perch_fs_list_free(perch_fs_entry *entries, size_t count)
{
    for (size_t i = 0; entries && i < count; i++)
        perch__free(entries[i].name);
    perch__free(entries);
}

int perch__fs_list_append(perch_fs_entry **v, size_t *n, size_t *cap, const char *name,
                          uint64_t size, uint64_t mtime_ms)
{
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        perch_fs_entry *p = perch__realloc(*v, nc * sizeof *p);
        if (!p)
            return PERCH_ENOMEM;
        *v = p;
        *cap = nc;
    }
    char *copy = perch__strdup(name);
    if (!copy)
        return PERCH_ENOMEM;
    (*v)[(*n)++] = (perch_fs_entry){copy, size, mtime_ms};
    return 0;
}
