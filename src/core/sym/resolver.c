/*
 * The resolver: a cache of module symbol tables keyed by the module's identity (PDB name,
 * GUID and age; image name, TimeDateStamp and SizeOfImage), misses included, so each module
 * costs one search however many processes load it and however many frames hit it. The
 * search itself is resolver_search.c.
 */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "model/mem.h"
#include "perch/error.h"
#include "perch/sym.h"
#include "sym/resolver_internal.h"
#include "sym/sym_internal.h"

#define MAX_MODULES (1u << 20)
#define KEY_MAX     1024

struct cached {
    uint64_t hash;
    char *key;
    perch_symtab *tab;
    perch_sym_report rep;
    char *text; /* the report's strings */
};

struct perch_resolver {
    const perch_sympath *sp;
    bool module_dir;
    struct cached *c;
    uint32_t count, cap;
    perch_resolver_stats st;
};

static const char *const status_names[] = {"unknown", "found", "not found", "mismatched",
                                           "unreadable"};

const char *perch_sym_status_name(int status)
{
    return status >= 0 && status <= PERCH_SYMST_BAD ? status_names[status] : "unknown";
}

int perch_resolver_create(const perch_sympath *sp, bool use_module_dir, perch_resolver **out)
{
    perch_resolver *r = perch__calloc(1, sizeof *r);
    if (r == NULL)
        return PERCH_ENOMEM;
    r->sp = sp;
    r->module_dir = use_module_dir;
    *out = r;
    return 0;
}

void perch_resolver_destroy(perch_resolver *r)
{
    if (r == NULL)
        return;
    for (uint32_t i = 0; i < r->count; i++) {
        perch__free(r->c[i].key);
        perch__free(r->c[i].text);
        perch_symtab_destroy(r->c[i].tab);
    }
    perch__free(r->c);
    perch__free(r);
}

void perch_resolver_get_stats(const perch_resolver *r, perch_resolver_stats *st)
{
    *st = r->st;
}

static uint64_t hash_of(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
    return h;
}

static struct cached *find(perch_resolver *r, const char *key, uint64_t h)
{
    for (uint32_t i = 0; i < r->count; i++)
        if (r->c[i].hash == h && strcmp(r->c[i].key, key) == 0)
            return &r->c[i];
    return NULL;
}

/* Copies the report's strings into one block owned by the cache entry. */
static int keep_report(struct cached *c, const perch_sym_report *rep)
{
    const char *parts[5] = {rep->pdb_file, rep->pdb_why, rep->image_file, rep->image_why,
                            rep->searched};
    size_t len[5], total = 0;
    for (int i = 0; i < 5; i++)
        total += (len[i] = strlen(parts[i] ? parts[i] : "")) + 1;
    char *t = perch__alloc(total), *p = t;
    if (t == NULL)
        return PERCH_ENOMEM;
    const char **dst[5] = {&c->rep.pdb_file, &c->rep.pdb_why, &c->rep.image_file, &c->rep.image_why,
                           &c->rep.searched};
    c->rep = *rep;
    for (int i = 0; i < 5; i++) {
        memcpy(p, parts[i] ? parts[i] : "", len[i] + 1);
        *dst[i] = p;
        p += len[i] + 1;
    }
    c->text = t;
    return 0;
}

/* Adds the outcome of a search under key; on failure nothing is cached and tab is freed. */
static int remember(perch_resolver *r, const char *key, uint64_t h, perch_symtab *tab,
                    const perch_sym_report *rep, struct cached **out)
{
    int err = perch__grow_array((void **)&r->c, sizeof *r->c, &r->cap, r->count + 1, MAX_MODULES);
    struct cached *c = err ? NULL : &r->c[r->count];
    if (c != NULL) {
        memset(c, 0, sizeof *c);
        if ((c->key = perch__strdup(key)) == NULL)
            err = PERCH_ENOMEM;
        else if ((err = keep_report(c, rep)) != 0)
            perch__free(c->key);
    }
    if (err) {
        perch_symtab_destroy(tab);
        return err;
    }
    c->hash = h;
    c->tab = tab;
    r->count++;
    *out = c;
    return 0;
}

static void lower_copy(char *out, size_t cap, const char *s)
{
    size_t i = 0;
    for (; s && s[i] && i + 1 < cap; i++)
        out[i] = (char)tolower((unsigned char)s[i]);
    out[i] = '\0';
}

static void module_key(const perch_sym_module *m, char *key)
{
    char img[256], pdb[256];
    lower_copy(img, sizeof img, m->path ? perch__sym_basename(m->path) : "");
    lower_copy(pdb, sizeof pdb, m->pdb_name ? perch__sym_basename(m->pdb_name) : "");
    snprintf(key, KEY_MAX,
             "m|%s|%08" PRIx32 "%04x%04x%02x%02x%02x%02x%02x%02x%02x%02x|%" PRIu32 "|%d|%s|%" PRIx32
             "|%" PRIx32,
             pdb, m->pdb_guid.data1, m->pdb_guid.data2, m->pdb_guid.data3, m->pdb_guid.data4[0],
             m->pdb_guid.data4[1], m->pdb_guid.data4[2], m->pdb_guid.data4[3], m->pdb_guid.data4[4],
             m->pdb_guid.data4[5], m->pdb_guid.data4[6], m->pdb_guid.data4[7], m->pdb_age,
             m->has_pdb, img, m->time_date_stamp, m->size_of_image);
}

/* Runs one search (module m, or the file path when m is NULL) and caches it under key. */
static int search(perch_resolver *r, const char *key, const perch_sym_module *m, const char *path,
                  struct cached **out, const char **why)
{
    perch__sym_search s;
    perch_symtab *tab = NULL;
    uint64_t h = hash_of(key);
    if ((*out = find(r, key, h)) != NULL) {
        r->st.cache_hits++;
        return 0;
    }
    memset(&s, 0, sizeof s);
    s.sp = r->sp;
    s.module_dir = r->module_dir;
    int err =
        m ? perch__sym_search_module(&s, m, &tab) : perch__sym_search_file(&s, path, &tab, why);
    r->st.files_opened += s.files_opened;
    if (!err) {
        r->st.modules++;
        err = remember(r, key, h, tab, &s.rep, out);
    } else {
        perch_symtab_destroy(tab);
    }
    perch__sym_search_free(&s);
    return err;
}

int perch_resolver_module(perch_resolver *r, const perch_sym_module *m, const perch_symtab **tab,
                          const perch_sym_report **rep)
{
    char key[KEY_MAX];
    struct cached *c;
    module_key(m, key);
    int err = search(r, key, m, NULL, &c, NULL);
    if (err)
        return err;
    *tab = c->tab;
    *rep = &c->rep;
    return 0;
}

int perch_resolver_file(perch_resolver *r, const char *path, const perch_symtab **tab,
                        const perch_sym_report **rep, const char **why)
{
    char key[KEY_MAX];
    struct cached *c;
    snprintf(key, sizeof key, "f|%s", path);
    int err = search(r, key, NULL, path, &c, why);
    if (err)
        return err;
    *tab = c->tab;
    *rep = &c->rep;
    return 0;
}
