/*
 * perch resolve: the addr2line of Perch. Loads one image (and the PDB its CodeView record
 * names, found on the symbol path or beside it) or one PDB alone, and prints for each RVA
 * the function covering it, the offset into it and the source of the name. Tests compare it
 * with llvm-symbolizer; users use it to check what a capture's frames will be called.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "perch/error.h"
#include "perch/sym.h"
#include "sym_path.h"

struct resolve_args {
    const char *file;
    const char *symbols;
    bool va;
    bool verbose;
    int first_addr; /* argv index of the first address */
};

static void usage(FILE *f)
{
    fprintf(f, "Usage: perch resolve [--symbols PATH] [--va] [-v] FILE.exe|FILE.dll|FILE.pdb "
               "ADDR...\n\n"
               "Prints, for each address (hexadecimal, 0x optional; an RVA unless --va), the\n"
               "function that covers it, one line each, tab-separated:\n"
               "  ADDR  NAME+0xOFFSET  SOURCE  START  SIZE\n"
               "SOURCE says where the name came from: pdb-proc, pdb-thunk, pdb-public, export or\n"
               "pdata (a .pdata range named fun_<rva>); an address no name covers prints '?'.\n"
               "For an image, its PDB is searched on the symbol path and beside the image, and\n"
               "used only when its GUID and age match (docs/symbols.md).\n\n"
               "Options:\n"
               "  --symbols PATH  symbol path searched first (';'-separated directories, symbol\n"
               "                  stores, srv*CACHE*URL: only local caches are searched); then\n"
               "                  PERCH_SYMBOL_PATH, then _NT_SYMBOL_PATH\n"
               "  --va            the addresses are virtual addresses at the image's preferred\n"
               "                  base (images only)\n"
               "  -v, --verbose   also print every path the search tried (stderr)\n"
               "  -h, --help      this text\n\n"
               "Exit status: 0 when the file was read, 1 when it could not be, 2 usage error.\n");
}

static int parse_args(int argc, char **argv, struct resolve_args *a)
{
    int i = 1;
    for (; i < argc && argv[i][0] == '-' && argv[i][1] != '\0'; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--symbols") == 0 && i + 1 < argc) {
            a->symbols = argv[++i];
        } else if (strcmp(argv[i], "--va") == 0) {
            a->va = true;
        } else if (strcmp(argv[i], "-v") == 0 || strcmp(argv[i], "--verbose") == 0) {
            a->verbose = true;
        } else {
            fprintf(stderr, "perch resolve: unknown option '%s'\n\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    if (argc - i < 2) {
        fprintf(stderr, "perch resolve: a file and at least one address are needed\n\n");
        usage(stderr);
        return 2;
    }
    a->file = argv[i];
    a->first_addr = i + 1;
    return -1;
}

static bool parse_addr(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    if (s[0] == '-' || s[0] == '\0')
        return false;
    unsigned long long v = strtoull(s, &end, 16);
    if (errno != 0 || *end != '\0')
        return false;
    *out = v;
    return true;
}

/* The image's preferred base when the file is an image (else 0), and a line on stderr with
 * what the image's own tables hold. */
static uint64_t describe_image(const char *path)
{
    perch_input in;
    perch_pe *pe = NULL;
    uint64_t base = 0;
    if (perch_input_open_file(&in, path) != 0)
        return 0;
    if (perch_pe_read(&in, &pe, NULL) == 0) {
        const perch_pe_info *pi = perch_pe_get_info(pe);
        base = pi->image_base;
        fprintf(stderr,
                "%s: %" PRIu32 " exports (%" PRIu32 " forwarders skipped), %" PRIu32
                " .pdata entries (%" PRIu32 " chained)\n",
                path, pi->export_count, pi->forwarders_skipped, pi->function_count,
                pi->chained_count);
    }
    perch_pe_destroy(pe);
    perch_input_close(&in);
    return base;
}

static void print_one(const perch_symtab *tab, const char *arg, uint64_t addr, uint64_t base)
{
    perch_sym_func f;
    int64_t off = 0;
    uint64_t rva = addr - base;
    if (tab == NULL || addr < base || rva > UINT32_MAX ||
        !perch_symtab_lookup(tab, (uint32_t)rva, &f, &off)) {
        printf("%s\t?\tnone\t-\t-\n", arg);
        return;
    }
    printf("%s\t%s%s0x%" PRIx64 "\t%s\t0x%" PRIx32 "\t0x%" PRIx32 "\n", arg, f.name,
           off < 0 ? "-" : "+", off < 0 ? (uint64_t)-off : (uint64_t)off,
           perch_sym_source_name(f.source), f.rva, f.size);
}

int perch_cmd_resolve(int argc, char **argv)
{
    struct resolve_args a = {NULL, NULL, false, false, 0};
    perch_sympath *sp = NULL;
    perch_resolver *r = NULL;
    const perch_symtab *tab = NULL;
    const perch_sym_report *rep = NULL;
    const char *why = NULL;
    uint64_t base = 0;
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    for (int i = a.first_addr; i < argc; i++) {
        uint64_t v;
        if (!parse_addr(argv[i], &v)) {
            fprintf(stderr, "perch resolve: '%s' is not a hexadecimal address\n", argv[i]);
            return 2;
        }
    }
    int err = perch_cli_sympath("resolve", a.symbols, &sp);
    if (!err)
        err = perch_resolver_create(sp, true, &r);
    if (!err)
        err = perch_resolver_file(r, a.file, &tab, &rep, &why);
    if (err) {
        fprintf(stderr, "perch resolve: %s: %s\n", a.file, why ? why : perch_strerror(err));
        rc = 1;
        goto out;
    }
    perch_cli_print_sym_report(stderr, a.file, rep, a.verbose);
    base = describe_image(a.file);
    base = a.va ? base : 0;
    for (int i = a.first_addr; i < argc; i++) {
        uint64_t v = 0;
        parse_addr(argv[i], &v);
        print_one(tab, argv[i], v, base);
    }
    rc = fflush(stdout) == 0 ? 0 : perch_cli_error("resolve", PERCH_EIO);
out:
    perch_resolver_destroy(r);
    perch_sympath_destroy(sp);
    return rc;
}
