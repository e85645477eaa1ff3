/*
 * The PE tables the symbol reader uses: the debug directory's CodeView RSDS record (the PDB's
 * GUID, age and path), the export directory (forwarders, whose RVA points inside the export
 * directory, are skipped) and the x64 exception directory (.pdata RUNTIME_FUNCTION entries,
 * a chained entry credited to the primary entry its UNWIND_INFO chains to). Layouts:
 * Microsoft's "PE Format" and "x64 exception handling" (docs/symbols.md "PE images").
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "decode/cursor.h"
#include "model/mem.h"
#include "perch/error.h"
#include "perch/sym.h"
#include "sym/pe_internal.h"
#include "sym/sym_internal.h"

#define MAX_DEBUG_ENTRIES         1024u
#define MAX_EXPORTS               (1u << 20)
#define MAX_FUNCTIONS             (16u << 20)
#define MAX_CHAIN                 32
#define IMAGE_DEBUG_TYPE_CODEVIEW 2
#define UNW_FLAG_CHAININFO        0x4

static const struct perch__pe_dir *dir(const perch__pe_reader *rd, unsigned i)
{
    return i < rd->dir_count && rd->dirs[i].rva != 0 && rd->dirs[i].size != 0 ? &rd->dirs[i] : NULL;
}

/* Reads a table of count entries of elem bytes at rva into a new buffer. */
static int read_table(perch__pe_reader *rd, uint32_t rva, uint32_t count, size_t elem,
                      uint8_t **out)
{
    if ((uint64_t)count * elem > rd->in->size)
        return perch__sym_fail(&rd->why, PERCH_EFORMAT, "a table is larger than the file");
    uint8_t *buf = perch__alloc((size_t)count * elem);
    if (buf == NULL)
        return PERCH_ENOMEM;
    int err = perch__pe_read_rva(rd, rva, buf, (size_t)count * elem);
    if (err) {
        perch__free(buf);
        return err;
    }
    *out = buf;
    return 0;
}

/* One CodeView record of len bytes at file offset off: takes it if it is RSDS. */
static int take_rsds(perch__pe_reader *rd, uint64_t off, uint32_t len)
{
    uint8_t rec[PERCH__SYM_MAX_NAME + 24];
    perch_pe *pe = rd->pe;
    cursor c;
    if (len < 24)
        return 0;
    len = len < sizeof rec ? len : (uint32_t)sizeof rec;
    int err = perch__pe_read_file(rd, off, rec, len);
    if (err)
        return perch__sym_read_fail(&rd->why, err, PERCH_ETRUNC,
                                    "the CodeView record is cut short");
    if (memcmp(rec, "RSDS", 4) != 0)
        return 0;
    cur_init(&c, rec + 4, len - 4, 8);
    cur_guid(&c, &pe->info.pdb_guid);
    pe->info.pdb_age = cur_u32(&c);
    size_t n = perch__sym_strnlen(rec + 24, len - 24);
    err = perch__grow_array((void **)&pe->pool, 1, &pe->pool_cap, pe->pool_len + (uint32_t)n + 1,
                            PERCH__SYM_MAX_READ);
    if (err)
        return err;
    memcpy(pe->pool + pe->pool_len, rec + 24, n);
    pe->pool[pe->pool_len + n] = '\0';
    pe->pdb_off = pe->pool_len;
    pe->pool_len += (uint32_t)n + 1;
    pe->info.has_codeview = true;
    return 0;
}

int perch__pe_read_codeview(perch__pe_reader *rd)
{
    const struct perch__pe_dir *d = dir(rd, PERCH__PE_DIR_DEBUG);
    uint8_t *t = NULL;
    if (d == NULL)
        return 0;
    uint32_t n = d->size / 28;
    if (n > MAX_DEBUG_ENTRIES)
        return perch__sym_fail(&rd->why, PERCH_EFORMAT, "the debug directory is too large");
    int err = n ? read_table(rd, d->rva, n, 28, &t) : 0;
    for (uint32_t i = 0; i < n && !err && !rd->pe->info.has_codeview; i++) {
        const uint8_t *e = t + 28 * i;
        if (le32(e + 12) != IMAGE_DEBUG_TYPE_CODEVIEW)
            continue;
        err = take_rsds(rd, le32(e + 24), le32(e + 16));
    }
    perch__free(t);
    return err;
}

struct export_dir {
    uint32_t base, nfunc, nname, eat, names, ords;
    uint8_t *eat_t, *name_t, *ord_t, *named;
};

static int add_export(perch_pe *pe, uint32_t rva, uint32_t ordinal, uint32_t name_off)
{
    uint32_t n = pe->info.export_count;
    int err = perch__grow_array((void **)&pe->exports, sizeof *pe->exports, &pe->export_cap, n + 1,
                                MAX_EXPORTS * 2);
    if (!err)
        err = perch__grow_array((void **)&pe->name_off, sizeof *pe->name_off, &pe->name_cap, n + 1,
                                MAX_EXPORTS * 2);
    if (err)
        return err;
    pe->exports[n] = (perch_pe_export){rva, ordinal, NULL};
    pe->name_off[n] = name_off;
    pe->info.export_count = n + 1;
    return 0;
}

static bool forwarder(const struct perch__pe_dir *d, uint32_t rva)
{
    return rva >= d->rva && rva - d->rva < d->size;
}

static int read_export_tables(perch__pe_reader *rd, struct export_dir *x)
{
    int err = read_table(rd, x->eat, x->nfunc, 4, &x->eat_t);
    if (!err && x->nname)
        err = read_table(rd, x->names, x->nname, 4, &x->name_t);
    if (!err && x->nname)
        err = read_table(rd, x->ords, x->nname, 2, &x->ord_t);
    if (!err && (x->named = perch__calloc(x->nfunc, 1)) == NULL)
        err = PERCH_ENOMEM;
    return err;
}

static int walk_exports(perch__pe_reader *rd, const struct perch__pe_dir *d, struct export_dir *x)
{
    perch_pe *pe = rd->pe;
    for (uint32_t j = 0; j < x->nname; j++) {
        uint16_t i = le16(x->ord_t + 2 * j);
        uint32_t off, rva;
        if (i >= x->nfunc)
            return perch__sym_fail(&rd->why, PERCH_EFORMAT, "an export ordinal is out of range");
        rva = le32(x->eat_t + 4 * i);
        x->named[i] = 1;
        if (rva == 0 || forwarder(d, rva))
            continue;
        int err = perch__pe_read_string(rd, le32(x->name_t + 4 * j), &off);
        if (!err)
            err = add_export(pe, rva, x->base + i, off);
        if (err)
            return err;
    }
    for (uint32_t i = 0; i < x->nfunc; i++) {
        uint32_t rva = le32(x->eat_t + 4 * i);
        if (rva != 0 && forwarder(d, rva))
            pe->info.forwarders_skipped++;
        else if (rva != 0 && !x->named[i]) {
            int err = add_export(pe, rva, x->base + i, UINT32_MAX);
            if (err)
                return err;
        }
    }
    return 0;
}

int perch__pe_read_exports(perch__pe_reader *rd)
{
    const struct perch__pe_dir *d = dir(rd, PERCH__PE_DIR_EXPORT);
    struct export_dir x;
    uint8_t h[40];
    if (d == NULL)
        return 0;
    memset(&x, 0, sizeof x);
    int err = perch__pe_read_rva(rd, d->rva, h, sizeof h);
    if (err)
        return err;
    x.base = le32(h + 16);
    x.nfunc = le32(h + 20);
    x.nname = le32(h + 24);
    x.eat = le32(h + 28);
    x.names = le32(h + 32);
    x.ords = le32(h + 36);
    if (x.nfunc > MAX_EXPORTS || x.nname > MAX_EXPORTS)
        return perch__sym_fail(&rd->why, PERCH_EFORMAT, "the export table is too large");
    err = le32(h + 12) ? perch__pe_read_string(rd, le32(h + 12), &rd->pe->dll_off) : 0;
    if (!err && x.nfunc)
        err = read_export_tables(rd, &x);
    if (!err && x.nfunc)
        err = walk_exports(rd, d, &x);
    perch__free(x.eat_t);
    perch__free(x.name_t);
    perch__free(x.ord_t);
    perch__free(x.named);
    return err;
}

/* The primary entry of a .pdata entry whose unwind info is at unwind (itself when it is not
 * chained). */
static int primary_of(perch__pe_reader *rd, uint32_t begin, uint32_t end, uint32_t unwind,
                      perch_pe_function *f)
{
    *f = (perch_pe_function){begin, end, begin, end};
    for (int depth = 0; depth <= MAX_CHAIN; depth++) {
        uint8_t h[4], rf[12];
        int err = perch__pe_read_rva(rd, unwind & ~1u, h, sizeof h);
        if (err)
            return err;
        if (((h[0] >> 3) & UNW_FLAG_CHAININFO) == 0)
            return 0;
        uint32_t at = (unwind & ~1u) + 4 + 2 * (((uint32_t)h[2] + 1) & ~1u);
        if ((err = perch__pe_read_rva(rd, at, rf, sizeof rf)) != 0)
            return err;
        f->primary_begin = le32(rf);
        f->primary_end = le32(rf + 4);
        unwind = le32(rf + 8);
        if (f->primary_end <= f->primary_begin)
            return perch__sym_fail(&rd->why, PERCH_EFORMAT, "a chained .pdata entry is empty");
    }
    return perch__sym_fail(&rd->why, PERCH_EFORMAT, "chained unwind entries loop");
}

int perch__pe_read_pdata(perch__pe_reader *rd)
{
    const struct perch__pe_dir *d = dir(rd, PERCH__PE_DIR_EXCEPTION);
    perch_pe *pe = rd->pe;
    uint8_t *t = NULL;
    if (d == NULL || pe->info.machine != 0x8664)
        return 0; /* RUNTIME_FUNCTION as read here is the x64 layout */
    uint32_t n = d->size / 12;
    if (n > MAX_FUNCTIONS)
        return perch__sym_fail(&rd->why, PERCH_EFORMAT, "the exception directory is too large");
    int err = n ? read_table(rd, d->rva, n, 12, &t) : 0;
    if (!err && n && (pe->functions = perch__calloc(n, sizeof *pe->functions)) == NULL)
        err = PERCH_ENOMEM;
    for (uint32_t i = 0; i < n && !err; i++) {
        const uint8_t *e = t + 12 * i;
        perch_pe_function *f = &pe->functions[i];
        if (le32(e) >= le32(e + 4)) {
            err = perch__sym_fail(&rd->why, PERCH_EFORMAT, "a .pdata entry is empty");
            break;
        }
        err = primary_of(rd, le32(e), le32(e + 4), le32(e + 8), f);
        pe->info.chained_count += !err && f->primary_begin != f->begin;
    }
    perch__free(t);
    pe->info.function_count = err ? 0 : n;
    return err;
}

int perch_pe_add_names(const perch_pe *pe, perch_symtab *t)
{
    const perch_pe_info *pi = &pe->info;
    char name[32];
    int err = 0;
    for (uint32_t i = 0; i < pi->section_count && !err; i++) {
        const perch_pe_section *s = &pi->sections[i];
        err = perch_symtab_add_section(t, s->rva, s->virtual_size ? s->virtual_size : s->raw_size,
                                       s->characteristics);
    }
    for (uint32_t i = 0; i < pi->export_count && !err; i++) {
        const perch_pe_export *x = &pi->exports[i];
        const char *s = x->name;
        if (s == NULL) {
            snprintf(name, sizeof name, "ordinal_%" PRIu32, x->ordinal);
            s = name;
        }
        err = perch_symtab_add(t, PERCH_SYM_EXPORT, x->rva, 0, s, strlen(s));
    }
    for (uint32_t i = 0; i < pi->function_count && !err; i++) {
        const perch_pe_function *f = &pi->functions[i];
        int n = snprintf(name, sizeof name, "fun_%" PRIx32, f->primary_begin);
        err = perch_symtab_add_fragment(t, PERCH_SYM_PDATA, f->begin, f->end - f->begin,
                                        f->primary_begin, f->primary_end - f->primary_begin, name,
                                        (size_t)n);
    }
    return err;
}
