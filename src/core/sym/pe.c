/*
 * The PE reader: DOS and NT headers, the optional header (PE32 and PE32+), the data
 * directories and the section table, and reads by RVA through a small block cache. The
 * tables (debug directory, exports, .pdata) are in pe_tables.c. Layouts are from Microsoft's
 * "PE Format" specification (docs/symbols.md "PE images").
 */
#include <string.h>

#include "decode/cursor.h"
#include "model/mem.h"
#include "perch/error.h"
#include "perch/sym.h"
#include "sym/pe_internal.h"
#include "sym/sym_internal.h"

static void cache_free(perch__pe_reader *rd)
{
    for (unsigned i = 0; i < PERCH__PE_CACHE_SLOTS; i++)
        perch__free(rd->block[i]);
}

/* The cached block holding file offset off (loading it), or NULL with *err set. */
static const uint8_t *block_at(perch__pe_reader *rd, uint64_t base, size_t *len, int *err)
{
    for (unsigned i = 0; i < PERCH__PE_CACHE_SLOTS; i++)
        if (rd->block[i] != NULL && rd->block_off[i] == base) {
            *len = rd->block_len[i];
            return rd->block[i];
        }
    unsigned s = rd->next_slot++ % PERCH__PE_CACHE_SLOTS;
    if (rd->block[s] == NULL && (rd->block[s] = perch__alloc(PERCH__PE_CACHE_BLOCK)) == NULL) {
        *err = PERCH_ENOMEM;
        return NULL;
    }
    size_t want = PERCH__PE_CACHE_BLOCK;
    if (base + want > rd->in->size)
        want = (size_t)(rd->in->size - base);
    rd->block_off[s] = UINT64_MAX;
    *err = perch_input_read_exact(rd->in, base, rd->block[s], want);
    if (*err)
        return NULL;
    rd->block_off[s] = base;
    rd->block_len[s] = *len = want;
    return rd->block[s];
}

int perch__pe_read_file(perch__pe_reader *rd, uint64_t off, void *dst, size_t len)
{
    uint8_t *out = dst;
    if (off > rd->in->size || len > rd->in->size - off)
        return PERCH_ETRUNC;
    while (len > 0) {
        uint64_t base = off - off % PERCH__PE_CACHE_BLOCK;
        size_t blen = 0;
        int err = 0;
        const uint8_t *b = block_at(rd, base, &blen, &err);
        if (b == NULL)
            return err;
        size_t at = (size_t)(off - base), n = blen - at < len ? blen - at : len;
        if (n == 0)
            return PERCH_ETRUNC;
        memcpy(out, b + at, n);
        out += n;
        off += n;
        len -= n;
    }
    return 0;
}

int perch__pe_read_rva(perch__pe_reader *rd, uint32_t rva, void *dst, size_t len)
{
    const perch_pe_info *pi = &rd->pe->info;
    uint64_t end = (uint64_t)rva + len;
    if (end <= rd->size_of_headers)
        return perch__pe_read_file(rd, rva, dst, len);
    for (uint32_t i = 0; i < pi->section_count; i++) {
        const perch_pe_section *s = &rd->pe->sections[i];
        uint32_t span = s->virtual_size > s->raw_size ? s->virtual_size : s->raw_size;
        if (rva < s->rva || end > (uint64_t)s->rva + span)
            continue;
        uint32_t at = rva - s->rva;
        size_t raw = at < s->raw_size ? s->raw_size - at : 0;
        raw = raw < len ? raw : len;
        memset((uint8_t *)dst + raw, 0, len - raw);
        return raw ? perch__pe_read_file(rd, (uint64_t)s->raw_offset + at, dst, raw) : 0;
    }
    return perch__sym_fail(&rd->why, PERCH_EFORMAT, "a table lies outside every section");
}

int perch__pe_read_string(perch__pe_reader *rd, uint32_t rva, uint32_t *off)
{
    perch_pe *pe = rd->pe;
    uint8_t chunk[256];
    uint32_t len = 0;
    for (;;) {
        size_t n = sizeof chunk;
        int err = perch__pe_read_rva(rd, rva + len, chunk, n);
        while (err == PERCH_EFORMAT && n > 1) /* near a section end: read less */
            err = perch__pe_read_rva(rd, rva + len, chunk, n /= 2);
        if (err)
            return err;
        size_t z = perch__sym_strnlen(chunk, n);
        size_t take = len + z > PERCH__SYM_MAX_NAME ? PERCH__SYM_MAX_NAME - len : z;
        err = perch__grow_array((void **)&pe->pool, 1, &pe->pool_cap,
                                pe->pool_len + len + (uint32_t)take + 1, PERCH__SYM_MAX_READ);
        if (err)
            return err;
        memcpy(pe->pool + pe->pool_len + len, chunk, take);
        len += (uint32_t)take;
        if (z < n || len >= PERCH__SYM_MAX_NAME)
            break;
    }
    pe->pool[pe->pool_len + len] = '\0';
    *off = pe->pool_len;
    pe->pool_len += len + 1;
    return 0;
}

/* The COFF file header and optional header at nt (the "PE\0\0" signature's offset). */
static int read_optional(perch__pe_reader *rd, uint32_t nt, uint16_t *opt_size)
{
    uint8_t h[24 + 240];
    perch_pe_info *pi = &rd->pe->info;
    int err = perch__pe_read_file(rd, nt, h, 24);
    if (err)
        return perch__sym_read_fail(&rd->why, err, PERCH_EFORMAT, "no PE signature at e_lfanew");
    if (memcmp(h, "PE\0\0", 4) != 0)
        return perch__sym_fail(&rd->why, PERCH_EFORMAT, "no PE signature at e_lfanew");
    pi->machine = le16(h + 4);
    pi->time_date_stamp = le32(h + 8);
    *opt_size = le16(h + 20);
    pi->is_dll = (le16(h + 22) & 0x2000) != 0;
    uint32_t n = *opt_size < 240 ? *opt_size : 240;
    if (n >= 2 && (err = perch__pe_read_file(rd, nt + 24, h + 24, n)) != 0)
        return perch__sym_read_fail(&rd->why, err, PERCH_EFORMAT,
                                    "the optional header is cut short");
    if (n < 2)
        return perch__sym_fail(&rd->why, PERCH_EFORMAT, "the optional header is cut short");
    const uint8_t *o = h + 24;
    uint16_t magic = le16(o);
    uint32_t dir_at = magic == 0x20b ? 112 : 96;
    if ((magic != 0x10b && magic != 0x20b) || n < dir_at)
        return perch__sym_fail(&rd->why, PERCH_EFORMAT,
                               "the optional header is neither PE32 nor PE32+");
    pi->pe32plus = magic == 0x20b;
    pi->image_base = pi->pe32plus ? le64(o + 24) : le32(o + 28);
    pi->size_of_image = le32(o + 56);
    rd->size_of_headers = le32(o + 60);
    pi->checksum = le32(o + 64);
    rd->dir_count = le32(o + dir_at - 4);
    if (rd->dir_count > (n - dir_at) / 8)
        rd->dir_count = (n - dir_at) / 8;
    if (rd->dir_count > 16)
        rd->dir_count = 16;
    for (uint32_t i = 0; i < rd->dir_count; i++)
        rd->dirs[i] =
            (struct perch__pe_dir){le32(o + dir_at + 8 * i), le32(o + dir_at + 8 * i + 4)};
    return 0;
}

static int read_sections(perch__pe_reader *rd, uint64_t at, uint16_t count)
{
    perch_pe *pe = rd->pe;
    uint8_t h[40];
    pe->sections = perch__calloc(count + 1u, sizeof *pe->sections);
    if (pe->sections == NULL)
        return PERCH_ENOMEM;
    for (uint16_t i = 0; i < count; i++) {
        int err = perch__pe_read_file(rd, at + 40u * i, h, sizeof h);
        if (err)
            return perch__sym_read_fail(&rd->why, err, PERCH_ETRUNC,
                                        "the section table is cut short");
        perch_pe_section *s = &pe->sections[i];
        memcpy(s->name, h, 8);
        s->name[8] = '\0';
        s->virtual_size = le32(h + 8);
        s->rva = le32(h + 12);
        s->raw_size = le32(h + 16);
        s->raw_offset = le32(h + 20);
        s->characteristics = le32(h + 36);
        if (s->raw_size > 0 &&
            (s->raw_offset > rd->in->size || s->raw_size > rd->in->size - s->raw_offset))
            s->raw_size =
                (uint32_t)(s->raw_offset < rd->in->size ? rd->in->size - s->raw_offset : 0);
    }
    pe->info.section_count = count;
    pe->info.sections = pe->sections;
    return 0;
}

static int read_headers(perch__pe_reader *rd)
{
    uint8_t dos[64];
    uint16_t opt_size = 0, count;
    uint8_t coff[8];
    int err = perch__pe_read_file(rd, 0, dos, sizeof dos);
    if (err)
        return perch__sym_read_fail(&rd->why, err, PERCH_EFORMAT, "not a PE image (no MZ header)");
    if (dos[0] != 'M' || dos[1] != 'Z')
        return perch__sym_fail(&rd->why, PERCH_EFORMAT, "not a PE image (no MZ header)");
    uint32_t nt = le32(dos + 0x3c);
    err = read_optional(rd, nt, &opt_size);
    if (err)
        return err;
    if ((err = perch__pe_read_file(rd, nt, coff, sizeof coff)) != 0)
        return err;
    count = le16(coff + 6); /* at most 65535 by its width */
    return read_sections(rd, (uint64_t)nt + 24 + opt_size, count);
}

/* Turns the pool offsets kept while the pool grew into pointers. */
static void finish(perch_pe *pe)
{
    perch_pe_info *pi = &pe->info;
    pi->pdb_path = pe->pool + pe->pdb_off;
    pi->dll_name = pe->pool + pe->dll_off;
    for (uint32_t i = 0; i < pi->export_count; i++)
        pe->exports[i].name = pe->name_off[i] == UINT32_MAX ? NULL : pe->pool + pe->name_off[i];
    pi->exports = pe->exports;
    pi->functions = pe->functions;
}

int perch_pe_read(const perch_input *in, perch_pe **out, const char **why)
{
    perch__pe_reader rd;
    perch_pe *pe = perch__calloc(1, sizeof *pe);
    int err;
    if (pe == NULL)
        return PERCH_ENOMEM;
    memset(&rd, 0, sizeof rd);
    rd.in = in;
    rd.pe = pe;
    err = perch__grow_array((void **)&pe->pool, 1, &pe->pool_cap, 2, PERCH__SYM_MAX_READ);
    if (!err) {
        pe->pool[0] = '\0';
        pe->pool_len = 1;
        err = read_headers(&rd);
    }
    if (!err)
        err = perch__pe_read_codeview(&rd);
    if (!err)
        err = perch__pe_read_exports(&rd);
    if (!err)
        err = perch__pe_read_pdata(&rd);
    cache_free(&rd);
    if (err) {
        if (why != NULL)
            *why = rd.why ? rd.why : perch_strerror(err);
        perch_pe_destroy(pe);
        return err;
    }
    finish(pe);
    *out = pe;
    return 0;
}

void perch_pe_destroy(perch_pe *pe)
{
    if (pe == NULL)
        return;
    perch__free(pe->sections);
    perch__free(pe->exports);
    perch__free(pe->name_off);
    perch__free(pe->functions);
    perch__free(pe->pool);
    perch__free(pe);
}

const perch_pe_info *perch_pe_get_info(const perch_pe *pe)
{
    return &pe->info;
}
