/*
 * perch symbolize: names the frames of a capture. It reads the capture once to learn what its
 * samples and stacks hit, finds each module's files (its PDB and image, on the symbol path,
 * in symbol stores or beside the module: docs/symbols.md), and writes the capture again with
 * symbol records for the functions hit, so the capture names its frames on any machine with
 * no symbol files at all. It says, per module, what it found, where it looked and what did
 * not match. Names the capture already has (from an earlier run or from perchd) are kept and
 * not searched again.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "input_kind.h"
#include "partial.h"
#include "perch/capture.h"
#include "perch/error.h"
#include "perch/sym.h"
#include "sym_path.h"

struct sym_args {
    const char *in, *out, *symbols;
    bool verbose;
};

/* The new symbol records, with their names, until the second pass writes them. */
struct held {
    perch_symbol_rec *v;
    size_t n, cap;
    uint64_t modules, named_modules, addresses, named;
    bool verbose;
};

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: perch symbolize CAPTURE.perch [--symbols PATH] [-o OUT.perch] [-v]\n\n"
            "Finds the PDB and image of every module the capture's samples and stacks hit, and\n"
            "writes the capture again with the names of the functions hit (a symbol chunk), so\n"
            "report and export show module!function+0xoff on any machine. Without -o the\n"
            "capture is replaced. For each module it prints what was found (which file), what\n"
            "was not (with -v: every place tried) and what did not match (GUID/age, stamp).\n\n"
            "  --symbols PATH  symbol path searched first (';'-separated folders, symbol stores,\n"
            "                  srv*CACHE*URL: only local caches are used); then\n"
            "                  PERCH_SYMBOL_PATH, then _NT_SYMBOL_PATH; then each module's own\n"
            "                  folder when its path exists here\n"
            "  -o, --output F  write the named capture to F instead of replacing CAPTURE\n"
            "  -v, --verbose   list every path tried for each module\n"
            "  -h, --help      this text\n\n"
            "Exit status: 0 done (whatever was found), 1 the capture could not be read or\n"
            "written, 2 usage error.\n");
}

static int parse_args(int argc, char **argv, struct sym_args *a)
{
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(s, "--symbols") == 0 && i + 1 < argc) {
            a->symbols = argv[++i];
        } else if ((strcmp(s, "-o") == 0 || strcmp(s, "--output") == 0) && i + 1 < argc) {
            a->out = argv[++i];
        } else if (strcmp(s, "-v") == 0 || strcmp(s, "--verbose") == 0) {
            a->verbose = true;
        } else if (s[0] == '-' && s[1] != '\0') {
            fprintf(stderr, "perch symbolize: unknown option '%s'\n\n", s);
            usage(stderr);
            return 2;
        } else if (a->in == NULL) {
            a->in = s;
        } else {
            fprintf(stderr, "perch symbolize: only one capture may be given\n");
            return 2;
        }
    }
    if (a->in == NULL) {
        usage(stderr);
        return 2;
    }
    return -1;
}

static int keep_symbol(void *ctx, const perch_symbol_rec *rec)
{
    struct held *h = ctx;
    if (h->n == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 256;
        perch_symbol_rec *v = realloc(h->v, cap * sizeof *v);
        if (v == NULL)
            return PERCH_ENOMEM;
        h->v = v;
        h->cap = cap;
    }
    char *name = malloc(strlen(rec->name) + 1);
    if (name == NULL)
        return PERCH_ENOMEM;
    strcpy(name, rec->name);
    h->v[h->n] = *rec;
    h->v[h->n++].name = name;
    return 0;
}

static int say_module(void *ctx, const perch_symbolize_module *m)
{
    struct held *h = ctx;
    const char *path = m->rec->path && *m->rec->path ? m->rec->path : "(no path)";
    h->modules++;
    h->named_modules += m->named + m->named_before > 0;
    h->addresses += m->addresses;
    h->named += m->named + m->named_before;
    printf("%s: %" PRIu64 " of %" PRIu64 " addresses named (%" PRIu64 " already), %" PRIu64
           " symbol records added; %u module%s\n",
           path, m->named + m->named_before, m->addresses, m->named_before, m->records, m->modules,
           m->modules == 1 ? "" : "s");
    if (m->rep != NULL) {
        char what[300];
        snprintf(what, sizeof what, "  %s", path);
        perch_cli_print_sym_report(stdout, what, m->rep, h->verbose);
    }
    return 0;
}

/* The second pass: every record of the input, with the new symbol records before the first
 * ledger or stat entry (which come last but for finish), or before finish. */
struct tee {
    perch_sink out;
    const struct held *h;
    bool written;
};

static int put_held(struct tee *t)
{
    if (t->written)
        return 0;
    t->written = true;
    for (size_t i = 0; i < t->h->n; i++) {
        int err = t->out.symbol ? t->out.symbol(t->out.ctx, &t->h->v[i]) : PERCH_ENOTSUP;
        if (err)
            return err;
    }
    return 0;
}

static int tee_finish(void *ctx)
{
    struct tee *t = ctx;
    int err = put_held(t);
    return err ? err : t->out.finish ? t->out.finish(t->out.ctx) : 0;
}

static int tee_ledger(void *ctx, const perch_ledger_rec *rec)
{
    struct tee *t = ctx;
    int err = put_held(t);
    return err ? err : t->out.ledger ? t->out.ledger(t->out.ctx, rec) : 0;
}

static int tee_stat(void *ctx, const perch_stat_rec *rec)
{
    struct tee *t = ctx;
    int err = put_held(t);
    return err ? err : t->out.stat ? t->out.stat(t->out.ctx, rec) : 0;
}

#define FORWARD(name, type)                                                                        \
    static int tee_##name(void *ctx, const type *rec)                                              \
    {                                                                                              \
        struct tee *t = ctx;                                                                       \
        return t->out.name ? t->out.name(t->out.ctx, rec) : 0;                                     \
    }
FORWARD(trace_info, perch_trace_info)
FORWARD(process, perch_process_rec)
FORWARD(thread, perch_thread_rec)
FORWARD(module, perch_module_rec)
FORWARD(counters, perch_counters_rec)
FORWARD(stack, perch_stack_rec)
FORWARD(slice, perch_slice_rec)
FORWARD(sample, perch_sample_rec)
FORWARD(lbr, perch_lbr_rec)
FORWARD(symbol, perch_symbol_rec)

static void tee_sink(struct tee *t, perch_sink *s)
{
    *s = (perch_sink){t,          tee_trace_info, tee_process, tee_thread, tee_module, tee_counters,
                      tee_stack,  tee_slice,      tee_sample,  tee_lbr,    tee_ledger, tee_stat,
                      tee_finish, tee_symbol,     false,       false};
}

/* Replays the capture at path into sink; prints what stopped it. Bytes after the capture's
 * end: refused when the capture is to be rewritten in place (they would be lost), else one
 * warning (when warn) and *partial set. */
static int replay(const char *path, const perch_sink *sink, bool in_place, bool warn, bool *partial)
{
    perch_input in;
    perch_capture_status st;
    int err = perch_input_open_file(&in, path);
    if (err) {
        perch_cli_error(path, err);
        return err;
    }
    if (!perch_cli_is_capture(&in)) {
        perch_input_close(&in);
        fprintf(stderr, "perch symbolize: %s: not a Perch capture (run perch import first)\n",
                path);
        return PERCH_EFORMAT;
    }
    bool joined;
    err = perch_capture_replay(&in, sink, &st);
    bool trailing = err == 0 && perch_cli_capture_trailing(&in, &st, &joined);
    perch_input_close(&in);
    if (err)
        fprintf(stderr, "perch symbolize: %s: %s at byte %" PRIu64 "\n", path, st.reason,
                st.offset);
    if (trailing && in_place) { /* a rewrite would keep the first capture and drop the rest */
        fprintf(stderr,
                "perch symbolize: %s: %" PRIu64 " bytes after the capture's end (at byte %" PRIu64
                ") %s; not rewritten, since they would be lost (-o writes elsewhere)\n",
                path, st.trailing_bytes, st.offset,
                joined ? "are another capture (files joined?)" : "are not part of the capture");
        return PERCH_EFORMAT;
    }
    if (trailing && warn)
        perch_cli_warn_trailing("symbolize", path, &st, joined);
    *partial |= trailing;
    return err;
}

/* Writes the input again with the held records into out_path. */
static int write_named(const char *in_path, const char *out_path, const struct held *h)
{
    bool partial = false; /* said by resolve_all's replay */
    perch_output out;
    perch_capture_writer_opts opts;
    perch_capture_writer *w = NULL;
    struct tee t;
    perch_sink sink;
    int err = perch_output_open_file(&out, out_path);
    if (err) {
        perch_cli_error(out_path, err);
        return err;
    }
    perch_capture_writer_opts_default(&opts);
    err = perch_capture_writer_create(&out, &opts, &w);
    if (!err) {
        perch_capture_writer_sink(w, &t.out);
        t.h = h;
        t.written = false;
        tee_sink(&t, &sink);
        err = replay(in_path, &sink, false, false, &partial);
    }
    if (err) /* not the input's fault when the writer refused */
        perch_cli_say_refusal("symbolize", w, "the capture");
    perch_capture_writer_destroy(w);
    int cerr = out.close ? out.close(out.ctx) : 0;
    if (!err && cerr) {
        perch_cli_error(out_path, cerr);
        err = cerr;
    }
    return err;
}

static int resolve_all(const struct sym_args *a, struct held *h, bool *partial)
{
    perch_symhits *hits = NULL;
    perch_sympath *sp = NULL;
    perch_resolver *r = NULL;
    perch_sink sink;
    perch_symbolize_ops ops = {h, keep_symbol, say_module};
    int err = perch_symhits_create(&hits);
    if (!err) {
        perch_symhits_sink(hits, &sink);
        err = replay(a->in, &sink, a->out == NULL, true, partial);
    }
    if (!err)
        err = perch_cli_sympath("symbolize", a->symbols, &sp);
    if (!err)
        err = perch_resolver_create(sp, true, &r);
    if (!err)
        err = perch_symbolize(hits, r, &ops);
    perch_resolver_destroy(r);
    perch_sympath_destroy(sp);
    perch_symhits_destroy(hits);
    return err;
}

int perch_cmd_symbolize(int argc, char **argv)
{
    struct sym_args a = {NULL, NULL, NULL, false};
    struct held h;
    char tmp[4096];
    memset(&h, 0, sizeof h);
    int rc = parse_args(argc, argv, &a);
    if (rc >= 0)
        return rc;
    h.verbose = a.verbose;
    bool partial = false;
    int err = resolve_all(&a, &h, &partial);
    const char *target = a.out ? a.out : a.in;
    snprintf(tmp, sizeof tmp, "%s.symbolize-tmp", target);
    if (!err)
        err = write_named(a.in, tmp, &h);
    if (!err && remove(target) != 0 && a.out == NULL)
        err = PERCH_EIO;
    if (!err && rename(tmp, target) != 0)
        err = PERCH_EIO;
    if (err) {
        remove(tmp);
        if (err == PERCH_ENOMEM || err == PERCH_EIO)
            perch_cli_error("symbolize", err);
    } else {
        printf("symbolize: %" PRIu64 " of %" PRIu64 " modules hit have names, %" PRIu64
               " of %" PRIu64 " addresses; %zu symbol records added to %s\n",
               h.named_modules, h.modules, h.named, h.addresses, h.n, target);
    }
    for (size_t i = 0; i < h.n; i++)
        free((char *)h.v[i].name);
    free(h.v);
    return err ? 1 : partial ? PERCH_EXIT_PARTIAL : 0;
}
