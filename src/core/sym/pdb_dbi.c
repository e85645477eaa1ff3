/*
 * The parts of the PDB's DBI stream the symbol reader uses: the optional debug header (its
 * section-header stream, and the OMAP streams Perch refuses), the section contributions that
 * bound public extents, and the module list whose streams hold procedures and thunks.
 * Sources: LLVM's "The DBI Stream" and Microsoft's pdb-rs "DBI" notes (docs/symbols.md
 * "PDB streams").
 */
#include <string.h>

#include "decode/cursor.h"
#include "perch/error.h"
#include "perch/sym.h"
#include "sym/pdb_internal.h"
#include "sym/sym_internal.h"
#include "util/mem.h"

#define DBG_OMAP_FROM_SRC 4
#define DBG_SECTION_HDR   5
#define SC_V60            (0xeffe0000u + 19970605u)
#define SC_V2             (0xeffe0000u + 20140516u)
#define CV_SIGNATURE_C13  4u
#define MAX_SECTIONS      65535u
#define MAX_MODULES       (1u << 20)

bool perch__pdb_rva(const perch__pdb_reader *rd, uint16_t seg, uint32_t off, uint32_t *rva)
{
    if (seg == 0 || seg > rd->sec_count)
        return false;
    const perch_pe_section *s = &rd->secs[seg - 1];
    if (off > UINT32_MAX - s->rva)
        return false;
    *rva = s->rva + off;
    return true;
}

/* Stream index i of the optional debug header, or 0xFFFF. */
static uint16_t dbg_stream(const perch__pdb_reader *rd, unsigned i)
{
    if (rd->dbg_len < 2 * (i + 1))
        return 0xFFFF;
    return le16(rd->dbi + rd->dbg_off + 2 * i);
}

static int parse_sections(perch__pdb_reader *rd, const uint8_t *s, uint32_t len)
{
    uint32_t n = len / 40;
    if (n > MAX_SECTIONS)
        return perch__sym_fail(rd->why, PERCH_EFORMAT, "too many section headers");
    rd->own_secs = perch__calloc(n + 1u, sizeof *rd->own_secs);
    if (rd->own_secs == NULL)
        return PERCH_ENOMEM;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *h = s + 40 * i;
        perch_pe_section *d = &rd->own_secs[i];
        memcpy(d->name, h, 8);
        d->virtual_size = le32(h + 8);
        d->rva = le32(h + 12);
        d->raw_size = le32(h + 16);
        d->raw_offset = le32(h + 20);
        d->characteristics = le32(h + 36);
    }
    rd->secs = rd->own_secs;
    rd->sec_count = n;
    rd->info->has_section_headers = true;
    return 0;
}

int perch__pdb_read_sections(perch__pdb_reader *rd)
{
    uint16_t omap = dbg_stream(rd, DBG_OMAP_FROM_SRC), sh = dbg_stream(rd, DBG_SECTION_HDR);
    if (perch__msf_size(&rd->msf, omap) > 0)
        return perch__sym_fail(rd->why, PERCH_ENOTSUP,
                               "the PDB maps addresses through OMAP (a rewritten image)");
    if (perch__msf_has(&rd->msf, sh)) {
        uint8_t *s;
        uint32_t len;
        int err = perch__msf_read(&rd->msf, sh, MAX_SECTIONS * 40, &s, &len, rd->why);
        if (!err)
            err = parse_sections(rd, s, len);
        perch__free(s);
        if (err)
            return err;
    }
    for (uint32_t i = 0; i < rd->sec_count; i++) {
        const perch_pe_section *s = &rd->secs[i];
        int err = perch_symtab_add_section(
            rd->tab, s->rva, s->virtual_size ? s->virtual_size : s->raw_size, s->characteristics);
        if (err)
            return err;
    }
    return 0;
}

int perch__pdb_read_contributions(perch__pdb_reader *rd)
{
    const uint8_t *p = rd->dbi + rd->con_off;
    if (rd->con_len < 4)
        return 0;
    uint32_t ver = le32(p), size = ver == SC_V60 ? 28 : ver == SC_V2 ? 32 : 0;
    if (size == 0)
        return 0; /* an unknown layout: publics then end at the next public or section end */
    for (uint32_t at = 4; at + size <= rd->con_len; at += size) {
        uint32_t rva;
        int32_t len = (int32_t)le32(p + at + 8);
        if (len <= 0 || !perch__pdb_rva(rd, le16(p + at), le32(p + at + 4), &rva))
            continue;
        int err = perch_symtab_add_contribution(rd->tab, rva, (uint32_t)len);
        if (err)
            return err;
    }
    return 0;
}

/* The symbols of one module stream s: sym_size bytes starting with the C13 signature. */
static int read_module(perch__pdb_reader *rd, uint16_t s, uint32_t sym_size)
{
    uint8_t *buf;
    uint32_t len;
    if (!perch__msf_has(&rd->msf, s) || sym_size < 4)
        return 0;
    int err = perch__msf_read(&rd->msf, s, sym_size, &buf, &len, rd->why);
    if (!err && len >= 4 && le32(buf) == CV_SIGNATURE_C13)
        err = perch__pdb_read_records(rd, buf + 4, len - 4, 4, false);
    perch__free(buf);
    return err;
}

int perch__pdb_read_modules(perch__pdb_reader *rd)
{
    const uint8_t *p = rd->dbi + rd->mod_off;
    uint32_t at = 0;
    while (at + 64 <= rd->mod_len) {
        if (rd->info->module_count >= MAX_MODULES)
            return perch__sym_fail(rd->why, PERCH_EFORMAT, "too many modules");
        uint16_t stream = le16(p + at + 34);
        uint32_t sym_size = le32(p + at + 36), names = at + 64;
        size_t n1 = perch__sym_strnlen(p + names, rd->mod_len - names);
        size_t n2 = names + n1 < rd->mod_len
                        ? perch__sym_strnlen(p + names + n1 + 1, rd->mod_len - names - n1 - 1)
                        : 0;
        uint64_t next = ((uint64_t)names + n1 + 1 + n2 + 1 + 3) & ~3ull;
        if (next > rd->mod_len)
            return perch__sym_fail(rd->why, PERCH_EFORMAT, "a module record is cut short");
        int err = read_module(rd, stream, sym_size);
        if (err)
            return err;
        rd->info->module_count++;
        at = (uint32_t)next;
    }
    return 0;
}
