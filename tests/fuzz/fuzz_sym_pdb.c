/*
 * Fuzz target for the MSF container and the PDB reader: reads arbitrary bytes as a PDB from
 * memory, first for its identity, then with its names into a symbol table (with a fixed
 * fallback section table when the PDB has none), seals it and looks up a spread of RVAs.
 * A failure must come with a reason; a success must agree with the identity-only read.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perch/error.h"
#include "perch/io.h"
#include "perch/sym.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const perch_pe_section secs[2] = {
        {".text", 0x1000, 0x4000, 0x400, 0x4000, PERCH_SCN_CNT_CODE | PERCH_SCN_MEM_EXECUTE},
        {".rdata", 0x5000, 0x1000, 0x4400, 0x1000, 0},
    };
    perch_input in;
    perch_pdb_info id, full;
    perch_symtab *t = NULL;
    const char *why = NULL;
    perch_input_memory(&in, data, size);
    if (perch_pdb_read(&in, NULL, 0, NULL, &id, &why) != 0) {
        perch_input_close(&in);
        if (why == NULL)
            abort();
        return 0;
    }
    if (perch_symtab_create(&t) != 0) {
        perch_input_close(&in);
        return 0;
    }
    why = NULL;
    int err = perch_pdb_read(&in, secs, 2, t, &full, &why);
    perch_input_close(&in);
    if (err != 0 && why == NULL)
        abort();
    if (err == 0 && (full.age != id.age || memcmp(&full.guid, &id.guid, sizeof id.guid) != 0))
        abort();
    if (err == 0 && perch_symtab_seal(t) == 0) {
        for (uint32_t r = 0; r < 0x8000; r += 0x33) {
            perch_sym_func f;
            int64_t off;
            if (perch_symtab_lookup(t, r, &f, &off) &&
                (f.name == NULL || off != (int64_t)r - (int64_t)f.rva))
                abort();
        }
    }
    perch_symtab_destroy(t);
    return 0;
}
