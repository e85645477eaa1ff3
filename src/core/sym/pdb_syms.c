/*
 * CodeView symbol records in a PDB: S_GPROC32 / S_LPROC32 (and their _ID and _DPC forms) and
 * S_THUNK32 from module streams, S_PUB32 from the symbol record stream. Each record is a
 * 16-bit length (of what follows it), a 16-bit kind and the payload; a table picks the
 * reader by kind. Sources: LLVM's "CodeView Symbol Records" and Microsoft's cvinfo.h via
 * pdb-rs (docs/symbols.md "Symbol records").
 */
#include <string.h>

#include "decode/cursor.h"
#include "perch/error.h"
#include "perch/sym.h"
#include "sym/pdb_internal.h"
#include "sym/sym_internal.h"

/* Where the fields of each kind are, in the payload after the kind. */
struct kind_layout {
    uint16_t kind;
    uint8_t source;
    uint8_t off_at, seg_at, size_at, size_len, name_at;
};

static const struct kind_layout kinds[] = {
    {0x110F, PERCH_SYM_PROC, 28, 32, 12, 4, 35},  /* S_LPROC32 */
    {0x1110, PERCH_SYM_PROC, 28, 32, 12, 4, 35},  /* S_GPROC32 */
    {0x1146, PERCH_SYM_PROC, 28, 32, 12, 4, 35},  /* S_LPROC32_ID */
    {0x1147, PERCH_SYM_PROC, 28, 32, 12, 4, 35},  /* S_GPROC32_ID */
    {0x1155, PERCH_SYM_PROC, 28, 32, 12, 4, 35},  /* S_LPROC32_DPC */
    {0x1156, PERCH_SYM_PROC, 28, 32, 12, 4, 35},  /* S_LPROC32_DPC_ID */
    {0x1102, PERCH_SYM_THUNK, 12, 16, 18, 2, 21}, /* S_THUNK32 */
    {0x110E, PERCH_SYM_PUBLIC, 4, 8, 0, 0, 10},   /* S_PUB32 */
};

static const struct kind_layout *layout_of(uint16_t kind, bool publics)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (kinds[i].kind == kind)
            return (kinds[i].source == PERCH_SYM_PUBLIC) == publics ? &kinds[i] : NULL;
    return NULL;
}

static void count(perch_pdb_info *info, int source)
{
    if (source == PERCH_SYM_PROC)
        info->proc_count++;
    else if (source == PERCH_SYM_THUNK)
        info->thunk_count++;
    else
        info->public_count++;
}

/* One record's payload p[0..len) of layout k. */
static int take(perch__pdb_reader *rd, const struct kind_layout *k, const uint8_t *p, uint32_t len)
{
    uint32_t rva, size = 0;
    if (len < k->name_at)
        return perch__sym_fail(rd->why, PERCH_EFORMAT, "a symbol record is too short");
    if (k->size_len == 4)
        size = le32(p + k->size_at);
    else if (k->size_len == 2)
        size = le16(p + k->size_at);
    if (!perch__pdb_rva(rd, le16(p + k->seg_at), le32(p + k->off_at), &rva))
        return 0; /* an absolute or unmapped symbol names no code */
    if (k->source != PERCH_SYM_PUBLIC && size == 0)
        return 0;
    size_t n = perch__sym_strnlen(p + k->name_at, len - k->name_at);
    count(rd->info, k->source);
    return perch_symtab_add(rd->tab, k->source, rva, size, (const char *)p + k->name_at, n);
}

/* Where the scan goes on after the procedure record at `at` (payload p): past its S_END,
 * whose offset from the stream start (base bytes before sym) the record holds, so the locals,
 * blocks and inline sites inside are never parsed; or at the next record when that offset
 * does not point forward inside the buffer. */
static uint32_t after_proc(const uint8_t *sym, uint32_t len, uint32_t at, const uint8_t *p,
                           uint32_t base)
{
    uint32_t next = at + 2u + le16(sym + at), end = le32(p + 4);
    if (end < base || end - base <= at || end - base > len - 4)
        return next;
    end -= base;
    return end + 2u + le16(sym + end);
}

int perch__pdb_read_records(perch__pdb_reader *rd, const uint8_t *sym, uint32_t len, uint32_t base,
                            bool publics)
{
    uint32_t at = 0;
    while (len - at >= 4) {
        uint16_t rec_len = le16(sym + at), kind = le16(sym + at + 2);
        if (rec_len < 2 || rec_len > len - at - 2)
            return perch__sym_fail(rd->why, PERCH_EFORMAT,
                                   "a symbol record runs past the end of its stream");
        const struct kind_layout *k = layout_of(kind, publics);
        uint32_t next = at + 2u + rec_len;
        if (k != NULL) {
            int err = take(rd, k, sym + at + 4, rec_len - 2u);
            if (err)
                return err;
            if (k->source == PERCH_SYM_PROC && rec_len - 2u >= k->name_at)
                next = after_proc(sym, len, at, sym + at + 4, base);
        }
        if (next <= at || next > len)
            break; /* past a bad S_END: nothing more can be read in order */
        at = next;
    }
    return 0;
}
