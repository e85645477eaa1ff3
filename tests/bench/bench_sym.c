/*
 * Symbol benchmark: loading a large PDB (tests/bench/gen-big-pdb.sh builds one with clang and
 * lld) beside `cat` of the same file, in one run, and what a loaded PDB costs in memory.
 *
 *   bench_sym FILE.pdb [FILE.exe]
 *
 * Times (best of three rounds, the machine is shared): `cat FILE > /dev/null`; the identity
 * read (superblock, directory, info stream, DBI header: what the resolver does per
 * candidate); the full load (procedures, publics, contributions) into a symbol table and its
 * sealing, with the image's names too when FILE.exe is given; and a million lookups at
 * random RVAs inside the image. Memory: the table's own bytes (perch_symtab_memory) and the
 * growth of the peak resident set over the first load.
 */
#define _POSIX_C_SOURCE 200809L
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "perch/error.h"
#include "perch/io.h"
#include "perch/platform.h"
#include "perch/sym.h"

enum { ROUNDS = 3, LOOKUPS = 1000000 };

static double since(uint64_t t0)
{
    return (double)(perch_monotonic_ns() - t0) / 1e9;
}

static double best(double a, double b)
{
    return a < b ? a : b;
}

static double time_cat(const char *path)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "cat '%s' > /dev/null", path);
    uint64_t t0 = perch_monotonic_ns();
    if (system(cmd) != 0)
        exit(1);
    return since(t0);
}

static perch_pe *read_pe(const char *path)
{
    perch_input in;
    perch_pe *pe = NULL;
    const char *why = NULL;
    if (path == NULL)
        return NULL;
    if (perch_input_open_file(&in, path) != 0 || perch_pe_read(&in, &pe, &why) != 0) {
        fprintf(stderr, "bench_sym: %s: %s\n", path, why ? why : "cannot open");
        exit(1);
    }
    perch_input_close(&in);
    return pe;
}

/* One load of the PDB (and the image's names) into a sealed table. */
static perch_symtab *load(const char *pdb, const perch_pe *pe, perch_pdb_info *info, double *t)
{
    perch_input in;
    perch_symtab *tab = NULL;
    const char *why = NULL;
    const perch_pe_info *pi = pe ? perch_pe_get_info(pe) : NULL;
    uint64_t t0 = perch_monotonic_ns();
    int err = perch_input_open_file(&in, pdb);
    err = err ? err : perch_symtab_create(&tab);
    err = err ? err
              : perch_pdb_read(&in, pi ? pi->sections : NULL, pi ? pi->section_count : 0, tab, info,
                               &why);
    err = err || !pe ? err : perch_pe_add_names(pe, tab);
    err = err ? err : perch_symtab_seal(tab);
    perch_input_close(&in);
    *t = since(t0);
    if (err) {
        fprintf(stderr, "bench_sym: %s: %s\n", pdb, why ? why : perch_strerror(err));
        exit(1);
    }
    return tab;
}

static double time_identity(const char *pdb)
{
    perch_input in;
    perch_pdb_info info;
    uint64_t t0 = perch_monotonic_ns();
    if (perch_input_open_file(&in, pdb) != 0 || perch_pdb_read(&in, NULL, 0, NULL, &info, NULL))
        exit(1);
    perch_input_close(&in);
    return since(t0);
}

static double time_lookups(const perch_symtab *tab, uint32_t span, uint64_t *hits)
{
    uint64_t x = 88172645463325252ull, t0 = perch_monotonic_ns();
    perch_sym_func f;
    int64_t off;
    *hits = 0;
    for (int i = 0; i < LOOKUPS; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        *hits += perch_symtab_lookup(tab, 0x1000 + (uint32_t)(x % span), &f, &off);
    }
    return since(t0);
}

int main(int argc, char **argv)
{
    perch_pdb_info info;
    double t_cat = 1e9, t_id = 1e9, t_load = 1e9, t_look = 1e9, t;
    uint64_t hits = 0;
    if (argc < 2) {
        fprintf(stderr, "usage: bench_sym FILE.pdb [FILE.exe]\n");
        return 2;
    }
    perch_pe *pe = read_pe(argc > 2 ? argv[2] : NULL);
    uint64_t rss0 = perch_peak_rss_bytes();
    perch_symtab *tab = load(argv[1], pe, &info, &t_load);
    uint64_t rss1 = perch_peak_rss_bytes();
    size_t mem = perch_symtab_memory(tab), names = perch_symtab_count(tab);
    uint32_t span = pe ? perch_pe_get_info(pe)->size_of_image : 1u << 24;
    for (int r = 0; r < ROUNDS; r++) {
        t_cat = best(t_cat, time_cat(argv[1]));
        t_id = best(t_id, time_identity(argv[1]));
        perch_symtab *again = load(argv[1], pe, &info, &t);
        t_load = best(t_load, t);
        perch_symtab_destroy(again);
        t_look = best(t_look, time_lookups(tab, span, &hits));
    }
    perch_input in;
    uint64_t size = 0;
    if (perch_input_open_file(&in, argv[1]) == 0) {
        size = in.size;
        perch_input_close(&in);
    }
    double mb = (double)size / 1e6;
    printf("PDB %s: %.1f MB, %" PRIu32 " procedures, %" PRIu32 " publics, %" PRIu32
           " modules, page size %" PRIu32 "\n",
           argv[1], mb, info.proc_count, info.public_count, info.module_count, info.block_size);
    printf("  cat > /dev/null      %8.3f s  %8.0f MB/s\n", t_cat, mb / t_cat);
    printf("  identity read        %8.3f s  = %.4fx cat\n", t_id, t_id / t_cat);
    printf("  load + seal          %8.3f s  = %.2fx cat  (%zu names)\n", t_load, t_load / t_cat,
           names);
    printf("  1M random lookups    %8.3f s  = %.0f ns each (%" PRIu64 " hits)\n", t_look,
           t_look * 1e9 / LOOKUPS, hits);
    printf("  memory: table %.1f MB (%.2f%% of the PDB), peak RSS grew %.1f MB over the load\n",
           (double)mem / 1e6, 100.0 * (double)mem / (double)(size ? size : 1),
           (double)(rss1 - rss0) / 1e6);
    perch_symtab_destroy(tab);
    perch_pe_destroy(pe);
    return 0;
}
