/*
 * Finding and loading the files of one module (docs/symbols.md "Search order"). For each
 * local directory of the symbol path, in order: the plain folder (<dir>/<name>, bare entries
 * only) and the symbol store (<dir>/<name>/<GUID><age>/<name> for a PDB,
 * <dir>/<name>/<TimeDateStamp><SizeOfImage>/<name> for an image); then the module's own
 * directory. A PDB is taken only when its GUID and age equal the module's, an image only
 * when its TimeDateStamp and SizeOfImage do.
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
#include "sym/sympath_internal.h"

#define MAX_SEARCHED 65536u
#define IDS          3 /* store folder spellings tried */

static void text_add(perch__sym_text *t, const char *s)
{
    size_t n = strlen(s);
    if (t->len + n + 2 > MAX_SEARCHED)
        return;
    if (t->len + n + 2 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024;
        while (cap < t->len + n + 2)
            cap *= 2;
        char *d = perch__realloc(t->data, cap);
        if (d == NULL)
            return; /* the list is informative: a failed append only shortens it */
        t->data = d;
        t->cap = cap;
    }
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len++] = '\n';
    t->data[t->len] = '\0';
}

void perch__sym_search_free(perch__sym_search *s)
{
    perch__free(s->searched.data);
    perch_pe_destroy(s->pe);
    s->searched.data = NULL;
    s->pe = NULL;
}

/* Records outcome now for one file kind when it is better than *status (found, then
 * mismatched, then unreadable, then not found), with the file and the reason; returns
 * whether it was taken. */
static bool outcome(int *status, int now, char *file, const char *path, char *why,
                    const char *reason)
{
    static const int order[] = {0, 4, 1, 3, 2}; /* by perch_sym_status */
    if (order[now] < order[*status])
        return false;
    *status = now;
    snprintf(file, PERCH__SYM_PATH_MAX, "%s", path);
    snprintf(why, 256, "%s", reason);
    return true;
}

/* Opens path; false when it cannot be read (an unreadable file is recorded). */
static bool open_candidate(perch__sym_search *s, const char *path, perch_input *in, int *status,
                           char *file, char *why)
{
    text_add(&s->searched, path);
    int err = perch_input_open_file(in, path);
    if (err == PERCH_ENOENT)
        return false;
    s->files_opened++;
    if (err) {
        outcome(status, PERCH_SYMST_BAD, file, path, why, perch_strerror(err));
        return false;
    }
    return true;
}

static void guid_text(const perch_guid *g, char out[33])
{
    snprintf(out, 33, "%08" PRIX32 "%04X%04X%02X%02X%02X%02X%02X%02X%02X%02X", g->data1, g->data2,
             g->data3, g->data4[0], g->data4[1], g->data4[2], g->data4[3], g->data4[4], g->data4[5],
             g->data4[6], g->data4[7]);
}

/* 1 when the PDB at path is the module's, else 0. */
static int try_pdb(perch__sym_search *s, const perch_sym_module *m, const char *path)
{
    perch_input in;
    perch_pdb_info info;
    const char *why = NULL;
    char have[33], want[33], text[256];
    int *st = &s->rep.pdb_status;
    if (!open_candidate(s, path, &in, st, s->pdb_file, s->pdb_why))
        return 0;
    int err = perch_pdb_read(&in, NULL, 0, NULL, &info, &why);
    perch_input_close(&in);
    if (err == PERCH_ENOMEM || err == PERCH_ELIMIT)
        return err;
    if (err) {
        outcome(st, PERCH_SYMST_BAD, s->pdb_file, path, s->pdb_why, why);
        return 0;
    }
    if (perch_guid_equal(&info.guid, &m->pdb_guid) &&
        (info.age == m->pdb_age || info.dbi_age == m->pdb_age)) {
        outcome(st, PERCH_SYMST_FOUND, s->pdb_file, path, s->pdb_why, "");
        return 1;
    }
    guid_text(&info.guid, have);
    guid_text(&m->pdb_guid, want);
    snprintf(text, sizeof text, "its GUID/age is %s/%" PRIu32 ", the module's %s/%" PRIu32, have,
             info.age, want, m->pdb_age);
    outcome(st, PERCH_SYMST_MISMATCH, s->pdb_file, path, s->pdb_why, text);
    return 0;
}

/* 1 when the image at path is the module's (it is kept in s->pe), else 0. */
static int try_image(perch__sym_search *s, const perch_sym_module *m, const char *path)
{
    perch_input in;
    perch_pe *pe = NULL;
    const char *why = NULL;
    char text[256];
    int *st = &s->rep.image_status;
    if (!open_candidate(s, path, &in, st, s->image_file, s->image_why))
        return 0;
    int err = perch_pe_read(&in, &pe, &why);
    perch_input_close(&in);
    if (err == PERCH_ENOMEM || err == PERCH_ELIMIT)
        return err;
    if (err) {
        outcome(st, PERCH_SYMST_BAD, s->image_file, path, s->image_why, why);
        return 0;
    }
    const perch_pe_info *pi = perch_pe_get_info(pe);
    if ((m->time_date_stamp && pi->time_date_stamp != m->time_date_stamp) ||
        (m->size_of_image && pi->size_of_image != m->size_of_image)) {
        snprintf(text, sizeof text,
                 "its TimeDateStamp/SizeOfImage is %08" PRIX32 "/%" PRIx32
                 ", the module's %08" PRIX32 "/%" PRIx32,
                 pi->time_date_stamp, pi->size_of_image, m->time_date_stamp, m->size_of_image);
        outcome(st, PERCH_SYMST_MISMATCH, s->image_file, path, s->image_why, text);
        perch_pe_destroy(pe);
        return 0;
    }
    outcome(st, PERCH_SYMST_FOUND, s->image_file, path, s->image_why, "");
    s->pe = pe;
    return 1;
}

typedef int (*try_fn)(perch__sym_search *s, const perch_sym_module *m, const char *path);

/* dir/a, or dir/a/b/a for a store; the separator follows dir's. False when too long. */
static bool join(char *out, const char *dir, const char *a, const char *b)
{
    size_t n = strlen(dir);
    const char *sep = strchr(dir, '\\') && !strchr(dir, '/') ? "\\" : "/";
    const char *first = n > 0 && (dir[n - 1] == '/' || dir[n - 1] == '\\') ? "" : sep;
    int w = b ? snprintf(out, PERCH__SYM_PATH_MAX, "%s%s%s%s%s%s%s", dir, first, a, sep, b, sep, a)
              : snprintf(out, PERCH__SYM_PATH_MAX, "%s%s%s", dir, first, a);
    return w > 0 && w < PERCH__SYM_PATH_MAX;
}

/* Tries name (and its lower-case form) in every directory, then beside the module. ids are
 * the store folder names to try (NULL-terminated, at most IDS). 1 found, 0 not, or an
 * error. */
static int each_candidate(perch__sym_search *s, const perch_sym_module *m, const char *name,
                          const char *const *ids, try_fn fn)
{
    char path[PERCH__SYM_PATH_MAX], lower[PERCH__SYM_PATH_MAX];
    const char *names[2] = {name, NULL};
    size_t n = strlen(name);
    if (n == 0 || n >= sizeof lower)
        return 0;
    for (size_t i = 0; i <= n; i++)
        lower[i] = (char)tolower((unsigned char)name[i]);
    names[1] = strcmp(lower, name) != 0 ? lower : NULL;
    uint32_t dirs = s->sp ? s->sp->count : 0;
    for (uint32_t d = 0; d < dirs; d++)
        for (int k = 0; k < 2 && names[k]; k++) {
            const perch__sym_dir *dir = &s->sp->dirs[d];
            int rc = 0;
            if (!dir->store_only && join(path, dir->path, names[k], NULL))
                rc = fn(s, m, path);
            for (int j = 0; j < IDS && ids[j] && rc == 0; j++)
                if (join(path, dir->path, names[k], ids[j]))
                    rc = fn(s, m, path);
            if (rc != 0)
                return rc;
        }
    if (s->module_dir && m->path && *m->path) {
        const char *base = perch__sym_basename(m->path);
        size_t dl = (size_t)(base - m->path);
        if (dl + n + 1 < sizeof path) {
            memcpy(path, m->path, dl);
            memcpy(path + dl, name, n + 1);
            return fn(s, m, path);
        }
    }
    return 0;
}

/* The distinct spellings in v[0..n) (NULL-terminated in out): a store made on Windows may
 * use either case, and Linux file names are case-sensitive. */
static void distinct(char (*v)[48], int n, const char **out)
{
    int k = 0;
    for (int i = 0; i < n; i++) {
        bool seen = false;
        for (int j = 0; j < k; j++)
            seen = seen || strcmp(out[j], v[i]) == 0;
        if (!seen)
            out[k++] = v[i];
    }
    out[k] = NULL;
}

static int find_image(perch__sym_search *s, const perch_sym_module *m)
{
    char id[2][48];
    const char *ids[IDS + 1];
    const char *name = m->path ? perch__sym_basename(m->path) : "";
    if (*name == '\0')
        return 0;
    snprintf(id[0], sizeof id[0], "%08" PRIX32 "%" PRIX32, m->time_date_stamp, m->size_of_image);
    snprintf(id[1], sizeof id[1], "%08" PRIx32 "%" PRIx32, m->time_date_stamp, m->size_of_image);
    distinct(id, 2, ids);
    s->rep.image_status = PERCH_SYMST_NOT_FOUND;
    return each_candidate(s, m, name, ids, try_image);
}

static int find_pdb(perch__sym_search *s, const perch_sym_module *m)
{
    char g[33], id[3][48];
    const char *ids[IDS + 1];
    const char *name = m->pdb_name ? perch__sym_basename(m->pdb_name) : "";
    if (!m->has_pdb || *name == '\0')
        return 0;
    guid_text(&m->pdb_guid, g);
    snprintf(id[0], sizeof id[0], "%s%" PRIX32, g, m->pdb_age);
    snprintf(id[1], sizeof id[1], "%s%" PRIx32, g, m->pdb_age);
    for (int i = 0; g[i]; i++)
        g[i] = (char)tolower((unsigned char)g[i]);
    snprintf(id[2], sizeof id[2], "%s%" PRIx32, g, m->pdb_age);
    distinct(id, 3, ids);
    s->rep.pdb_status = PERCH_SYMST_NOT_FOUND;
    return each_candidate(s, m, name, ids, try_pdb);
}

/* Loads the found PDB (when found) and image names into a new table. A PDB that fails now
 * is reported unreadable and the image's names are still used. */
static int load(perch__sym_search *s, perch_symtab **out)
{
    perch_symtab *t = NULL;
    const perch_pe_info *pi = s->pe ? perch_pe_get_info(s->pe) : NULL;
    int err = perch_symtab_create(&t);
    if (!err && s->rep.pdb_status == PERCH_SYMST_FOUND) {
        perch_input in;
        perch_pdb_info info;
        const char *why = NULL;
        err = perch_input_open_file(&in, s->pdb_file);
        if (!err) {
            err = perch_pdb_read(&in, pi ? pi->sections : NULL, pi ? pi->section_count : 0, t,
                                 &info, &why);
            perch_input_close(&in);
        }
        if (err && err != PERCH_ENOMEM && err != PERCH_ELIMIT) {
            s->rep.pdb_status = PERCH_SYMST_BAD;
            snprintf(s->pdb_why, sizeof s->pdb_why, "%s", why ? why : perch_strerror(err));
            perch_symtab_destroy(t);
            t = NULL;
            err = perch_symtab_create(&t);
        }
    }
    if (!err && s->pe)
        err = perch_pe_add_names(s->pe, t);
    if (!err)
        err = perch_symtab_seal(t);
    if (err || perch_symtab_count(t) == 0) {
        perch_symtab_destroy(t);
        t = NULL;
    }
    *out = t;
    return err;
}

static void finish_report(perch__sym_search *s, perch_symtab *t)
{
    perch_sym_report *r = &s->rep;
    bool pdb_file = r->pdb_status == PERCH_SYMST_FOUND || r->pdb_status >= PERCH_SYMST_MISMATCH;
    bool img_file = r->image_status == PERCH_SYMST_FOUND || r->image_status >= PERCH_SYMST_MISMATCH;
    r->pdb_file = pdb_file ? s->pdb_file : "";
    r->image_file = img_file ? s->image_file : "";
    r->pdb_why = pdb_file ? s->pdb_why : "";
    r->image_why = img_file ? s->image_why : "";
    r->searched = s->searched.data ? s->searched.data : "";
    r->names = t ? perch_symtab_count(t) : 0;
}

int perch__sym_search_module(perch__sym_search *s, const perch_sym_module *m, perch_symtab **tab)
{
    perch_sym_module id = *m;
    *tab = NULL;
    int err = find_image(s, m);
    if (err < 0)
        return err;
    if (!id.has_pdb && s->pe && perch_pe_get_info(s->pe)->has_codeview) {
        const perch_pe_info *pi = perch_pe_get_info(s->pe); /* the image names its PDB */
        id.has_pdb = true;
        id.pdb_guid = pi->pdb_guid;
        id.pdb_age = pi->pdb_age;
        id.pdb_name = pi->pdb_path;
    }
    err = find_pdb(s, &id);
    if (err >= 0)
        err = load(s, tab);
    finish_report(s, *tab);
    return err;
}

/* The identity of the image already in s->pe, as a module to search a PDB for. */
static perch_sym_module image_module(const perch__sym_search *s, const char *path)
{
    const perch_pe_info *pi = perch_pe_get_info(s->pe);
    perch_sym_module m = {path,         pi->size_of_image, pi->time_date_stamp, pi->has_codeview,
                          pi->pdb_guid, pi->pdb_age,       pi->pdb_path};
    return m;
}

int perch__sym_search_file(perch__sym_search *s, const char *path, perch_symtab **tab,
                           const char **why)
{
    perch_input in;
    perch_pdb_info info;
    uint8_t magic[2] = {0, 0};
    *tab = NULL;
    int err = perch_input_open_file(&in, path);
    if (err)
        return perch__sym_fail(why, err, perch_strerror(err));
    s->files_opened++;
    err = perch_input_read_exact(&in, 0, magic, sizeof magic);
    if (!err && magic[0] == 'M' && magic[1] == 'Z')
        err = perch_pe_read(&in, &s->pe, why);
    else if (!err)
        err = perch_pdb_read(&in, NULL, 0, NULL, &info, why);
    else
        err = perch__sym_fail(why, err, "the file is too short to be an image or a PDB");
    perch_input_close(&in);
    if (err)
        return err;
    s->module_dir = true;
    if (s->pe != NULL) {
        perch_sym_module m = image_module(s, path);
        outcome(&s->rep.image_status, PERCH_SYMST_FOUND, s->image_file, path, s->image_why, "");
        err = find_pdb(s, &m);
    } else {
        outcome(&s->rep.pdb_status, PERCH_SYMST_FOUND, s->pdb_file, path, s->pdb_why, "");
    }
    if (err >= 0)
        err = load(s, tab);
    finish_report(s, *tab);
    return err;
}
