/*
 * Symbols: function names for the addresses in a profile, from the files Windows builds
 * leave behind, read on any OS (docs/symbols.md).
 *
 * Four parts, each usable alone:
 * - perch_symtab: the names of one module, from any number of sources, each an RVA range with
 *   a name and the source it came from. Sealing it applies one precedence rule (PDB
 *   procedures and thunks, then PDB publics, then PE exports, then .pdata ranges) and makes
 *   every lookup a binary search.
 * - perch_pe: a PE32 / PE32+ image: headers, sections, the CodeView RSDS record (the PDB's
 *   GUID, age and path), exports (forwarders skipped) and x64 .pdata (chained entries credited
 *   to their primary function).
 * - perch_pdb: an MSF 7.00 PDB: its identity (GUID, age, /DEBUG:FASTLINK) and its procedures,
 *   thunks and publics, added to a symtab as RVAs.
 * - perch_sympath and perch_resolver: where the files of a module are found (a symbol path
 *   like _NT_SYMBOL_PATH, local symbol stores, the module's own directory), with the GUID/age
 *   check and a cache that remembers misses.
 * - perch_symnames (what a report or an exporter keeps: the symbol records of a stream,
 *   looked up by module key and RVA) and perch_symhits / perch_symbolize (what perch
 *   symbolize does: collect the addresses a stream's samples and stacks hit, find each
 *   module's files, and produce the symbol records for those addresses).
 *
 * Readers take a perch_input (memory or file) that is only borrowed for the call: everything
 * they need is copied out. Every length and offset in a file is checked; bad input gives a
 * negative PERCH_E* and, where a pointer is offered, a static English reason.
 */
#ifndef PERCH_SYM_H
#define PERCH_SYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perch/event.h"
#include "perch/io.h"
#include "perch/records.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a name came from. The order of the values is not the precedence; see
 * perch_sym_source_rank. Values are stable: they are stored in captures. */
typedef enum perch_sym_source {
    PERCH_SYM_NONE = 0,
    PERCH_SYM_PROC = 1,    /* PDB module stream: S_GPROC32 / S_LPROC32 (and _ID, _DPC forms) */
    PERCH_SYM_THUNK = 2,   /* PDB module stream: S_THUNK32 */
    PERCH_SYM_PUBLIC = 3,  /* PDB symbol record stream: S_PUB32 */
    PERCH_SYM_EXPORT = 4,  /* PE export table */
    PERCH_SYM_PDATA = 5,   /* PE exception directory (.pdata): named fun_<rva> */
    PERCH_SYM_DBGHELP = 6, /* Windows DbgHelp, in perchd */
    PERCH_SYM_SOURCE_LIMIT
} perch_sym_source;

/* "pdb-proc", "pdb-thunk", "pdb-public", "export", "pdata", "dbghelp"; "none" otherwise. */
const char *perch_sym_source_name(int source);

/* The precedence of a source: lower wins where ranges of two sources overlap. Procedures,
 * thunks and DbgHelp share rank 0; publics 1; exports 2; .pdata 3. */
int perch_sym_source_rank(int source);

/* ---- symbol table ------------------------------------------------------------------------ */

typedef struct perch_symtab perch_symtab;

/* One function as a lookup returns it. */
typedef struct perch_sym_func {
    uint32_t rva;       /* start of the function */
    uint32_t size;      /* bytes; for publics and exports the extent Perch gave them */
    uint8_t source;     /* perch_sym_source */
    const char *name;   /* borrowed from the table (valid until it is destroyed) */
    uint32_t span_rva;  /* the run of addresses around the one looked up that this same */
    uint32_t span_size; /* answer covers (a lookup fills them; perch_symtab_get: the range) */
} perch_sym_func;

/* Section and characteristics flags that matter here (IMAGE_SCN_*). */
#define PERCH_SCN_CNT_CODE    0x00000020u
#define PERCH_SCN_MEM_EXECUTE 0x20000000u

/* A new, empty table. 0 or PERCH_ENOMEM. Destroy accepts NULL. */
int perch_symtab_create(perch_symtab **out);
void perch_symtab_destroy(perch_symtab *t);

/* Adds a name for [rva, rva + size). size 0 means "no size in the file" (publics, exports):
 * sealing gives it an extent: up to the next name of the same source, never past the end of
 * its bound (section contribution for publics, .pdata function for exports) or section.
 * Returns 0, PERCH_EINVAL (sealed table, bad source), PERCH_ENOMEM or PERCH_ELIMIT. */
int perch_symtab_add(perch_symtab *t, int source, uint32_t rva, uint32_t size, const char *name,
                     size_t name_len);

/* Adds a name for [range_rva, range_rva + range_size) that belongs to the function at
 * func_rva of func_size bytes (a chained .pdata fragment is credited to its primary
 * function). Errors as perch_symtab_add; range_size must not be 0. */
int perch_symtab_add_fragment(perch_symtab *t, int source, uint32_t range_rva, uint32_t range_size,
                              uint32_t func_rva, uint32_t func_size, const char *name,
                              size_t name_len);

/* Declares an image section [rva, rva + size) with its IMAGE_SCN_* characteristics, and a
 * section contribution (a piece of an object file's section) that bounds public extents. */
int perch_symtab_add_section(perch_symtab *t, uint32_t rva, uint32_t size,
                             uint32_t characteristics);
int perch_symtab_add_contribution(perch_symtab *t, uint32_t rva, uint32_t size);

/* Computes extents and the precedence map; the table is read-only afterwards. 0,
 * PERCH_ENOMEM or PERCH_ELIMIT (the table is unchanged then and may be sealed again). */
int perch_symtab_seal(perch_symtab *t);

/* The function covering rva in a sealed table: fills *f and *offset (rva - f->rva; negative
 * only for a fragment placed before its primary function) and returns true, or returns false
 * when no name covers rva. */
bool perch_symtab_lookup(const perch_symtab *t, uint32_t rva, perch_sym_func *f, int64_t *offset);

/* The names added (duplicates included), in the order added; i < perch_symtab_count(t). */
size_t perch_symtab_count(const perch_symtab *t);
void perch_symtab_get(const perch_symtab *t, size_t i, perch_sym_func *f);

/* Bytes the table holds (entries, names, maps): the memory a loaded module costs. */
size_t perch_symtab_memory(const perch_symtab *t);

/* ---- PE images --------------------------------------------------------------------------- */

typedef struct perch_pe_section {
    char name[9]; /* NUL-terminated, as in the header (8 bytes at most) */
    uint32_t rva;
    uint32_t virtual_size;
    uint32_t raw_offset;
    uint32_t raw_size;
    uint32_t characteristics;
} perch_pe_section;

typedef struct perch_pe_export {
    uint32_t rva;
    uint32_t ordinal;
    const char *name; /* NULL when exported by ordinal only */
} perch_pe_export;

/* One .pdata entry; primary_* equal begin/end unless the entry is a chained fragment. */
typedef struct perch_pe_function {
    uint32_t begin, end;
    uint32_t primary_begin, primary_end;
} perch_pe_function;

typedef struct perch_pe_info {
    uint16_t machine; /* IMAGE_FILE_MACHINE_*: 0x14c i386, 0x8664 AMD64, ... */
    bool pe32plus;    /* optional header magic 0x20b */
    bool is_dll;
    uint64_t image_base;
    uint32_t size_of_image;
    uint32_t time_date_stamp;
    uint32_t checksum;
    bool has_codeview; /* an RSDS record was found */
    perch_guid pdb_guid;
    uint32_t pdb_age;
    const char *pdb_path; /* as recorded (any OS's path form); "" without RSDS */
    const char *dll_name; /* the export directory's name; "" without exports */
    uint32_t section_count;
    const perch_pe_section *sections;
    uint32_t export_count; /* forwarders excluded */
    const perch_pe_export *exports;
    uint32_t forwarders_skipped;
    uint32_t function_count; /* .pdata entries (x64 only) */
    const perch_pe_function *functions;
    uint32_t chained_count; /* of which chained fragments */
} perch_pe_info;

typedef struct perch_pe perch_pe;

/* Reads the image in (borrowed for the call). 0, PERCH_EFORMAT / PERCH_ETRUNC (not a PE or
 * damaged: *why says what, when why is not NULL), PERCH_ENOMEM, PERCH_ELIMIT or the input's
 * error. A damaged optional table (exports, .pdata, debug directory) is an error too, never
 * half-read. */
int perch_pe_read(const perch_input *in, perch_pe **out, const char **why);
void perch_pe_destroy(perch_pe *pe);
const perch_pe_info *perch_pe_get_info(const perch_pe *pe);

/* Adds the image's sections, exports and .pdata ranges to t. */
int perch_pe_add_names(const perch_pe *pe, perch_symtab *t);

/* ---- PDB files --------------------------------------------------------------------------- */

typedef struct perch_pdb_info {
    uint32_t block_size;
    uint32_t version;   /* PDB info stream version (20000404 = VC70) */
    uint32_t signature; /* the old 32-bit signature */
    uint32_t age;       /* PDB info stream age */
    uint32_t dbi_age;   /* DBI stream age (0 without DBI) */
    perch_guid guid;
    bool fastlink;    /* /DEBUG:FASTLINK (MinimalDebugInfo): publics only are used */
    uint16_t machine; /* DBI machine (IMAGE_FILE_MACHINE_*), 0 when unknown */
    bool has_section_headers;
    uint32_t module_count;
    uint32_t proc_count, thunk_count, public_count;
} perch_pdb_info;

/* Reads the PDB's identity into *info and, when into is not NULL, adds its sections,
 * section contributions, procedures, thunks (except with fastlink) and publics to into.
 * Segment:offset addresses become RVAs through the PDB's own section headers, or through
 * sections[0..section_count) (the image's) when the PDB has none; without either only the
 * identity is read and into gets nothing. 0, PERCH_EVERSION (a PDB 2.00 "JG" file: refused),
 * PERCH_EFORMAT / PERCH_ETRUNC (with *why), PERCH_ENOTSUP (OMAP-rewritten PDB), PERCH_ENOMEM,
 * PERCH_ELIMIT or the input's error; *info is untouched then, and into may hold part of the
 * names: discard it. */
int perch_pdb_read(const perch_input *in, const perch_pe_section *sections, uint32_t section_count,
                   perch_symtab *into, perch_pdb_info *info, const char **why);

/* ---- finding the files of a module -------------------------------------------------------- */

/* What is known of a loaded module (any field may be empty). */
typedef struct perch_sym_module {
    const char *path;         /* image path as logged or on disk; NULL or "" when unknown */
    uint32_t size_of_image;   /* 0 when unknown */
    uint32_t time_date_stamp; /* 0 when unknown */
    bool has_pdb;
    perch_guid pdb_guid;
    uint32_t pdb_age;
    const char *pdb_name; /* as in the RSDS record; only its last component is used */
} perch_sym_module;

/* The outcome for one file kind (PDB or image). */
typedef enum perch_sym_status {
    PERCH_SYMST_UNKNOWN = 0, /* no identity to look for (no RSDS, no image name) */
    PERCH_SYMST_FOUND = 1,
    PERCH_SYMST_NOT_FOUND = 2,
    PERCH_SYMST_MISMATCH = 3, /* a file was there but its GUID/age or stamp/size differ */
    PERCH_SYMST_BAD = 4,      /* a matching name could not be read (damaged, unsupported) */
} perch_sym_status;

/* "unknown", "found", "not found", "mismatched", "unreadable". */
const char *perch_sym_status_name(int status);

typedef struct perch_sym_report {
    int pdb_status;       /* perch_sym_status */
    const char *pdb_file; /* found: the file used; mismatched/bad: the last one tried */
    const char *pdb_why;  /* mismatched/bad: what was wrong */
    int image_status;
    const char *image_file;
    const char *image_why;
    const char *searched; /* every candidate path tried, one per line */
    size_t names;         /* names the module's table holds */
} perch_sym_report;

typedef struct perch_sympath perch_sympath;

/* Parses a symbol path: ';'-separated entries, each a directory (a plain folder or a local
 * symbol store, both are tried), "srv*DIR*...", "srv*URL", "cache*DIR" or
 * "symsrv*DLL*DIR*...". Only local directories are used: an http(s) or \\server part is
 * skipped and said in the notes. NULL or "" gives an empty path. 0 or PERCH_ENOMEM. */
int perch_sympath_parse(const char *text, perch_sympath **out);
void perch_sympath_destroy(perch_sympath *sp);

/* One line per entry that was skipped or partly skipped ("" when none). */
const char *perch_sympath_notes(const perch_sympath *sp);

/* Number of local directories the path searches. */
size_t perch_sympath_dir_count(const perch_sympath *sp);

/* The resolver: per module, the files found on a symbol path loaded into one table, cached
 * by the module's identity (misses too, so a missing PDB costs one search). */
typedef struct perch_resolver perch_resolver;

/* sp is borrowed and must outlive the resolver; NULL searches the module's directory only.
 * use_module_dir: also look beside the image (for a path that exists on this machine). */
int perch_resolver_create(const perch_sympath *sp, bool use_module_dir, perch_resolver **out);
void perch_resolver_destroy(perch_resolver *r);

/* Finds and loads module m's names. *tab (may be NULL when nothing was found) and *rep stay
 * valid until the resolver is destroyed. 0, or PERCH_ENOMEM / PERCH_ELIMIT (nothing is
 * cached then). File problems are not errors: they are in *rep. */
int perch_resolver_module(perch_resolver *r, const perch_sym_module *m, const perch_symtab **tab,
                          const perch_sym_report **rep);

/* Loads a file named directly (an image, whose PDB is then searched for, or a PDB alone).
 * Like perch_resolver_module, but a file that cannot be read gives its error and *why. */
int perch_resolver_file(perch_resolver *r, const char *path, const perch_symtab **tab,
                        const perch_sym_report **rep, const char **why);

/* Lookups and loads so far: modules loaded, cache hits (misses included), files opened. */
typedef struct perch_resolver_stats {
    uint64_t modules, cache_hits, files_opened;
} perch_resolver_stats;
void perch_resolver_get_stats(const perch_resolver *r, perch_resolver_stats *st);

/* ---- module identity ---------------------------------------------------------------------- */

/* The fields of a module record the search uses (pointers borrowed from rec). */
void perch_sym_module_from_rec(const perch_module_rec *rec, perch_sym_module *m);

/* The identity of m as text (the PDB's name, GUID and age, the image's name, stamp and size;
 * names compared without case): modules with equal identities are the same file, so they
 * share names. Returns the length written to buf (cut to cap - 1). */
size_t perch_sym_module_identity(const perch_sym_module *m, char *buf, size_t cap);

/* ---- names of a record stream ---------------------------------------------------------------- */

/* The symbol records of a stream, by module identity: a consumer feeds it every module and
 * symbol record (upserts welcome) and looks names up by module key and RVA. Names arriving
 * for a module after the first lookup of that module are not added (counted as late). */
typedef struct perch_symnames perch_symnames;

int perch_symnames_create(perch_symnames **out);
void perch_symnames_destroy(perch_symnames *n);

/* 0, PERCH_ENOMEM or PERCH_ELIMIT. */
int perch_symnames_module(perch_symnames *n, const perch_module_rec *rec);
/* A symbol record of an unknown module key is ignored (counted). 0, PERCH_ENOMEM or
 * PERCH_ELIMIT. */
int perch_symnames_symbol(perch_symnames *n, const perch_symbol_rec *rec);

/* The name at rva of module module_key: true and *f, *offset (rva - f->rva), or false. The
 * module's table is sealed on its first lookup (a failure to seal it leaves it unnamed). */
bool perch_symnames_lookup(perch_symnames *n, uint64_t module_key, uint32_t rva, perch_sym_func *f,
                           int64_t *offset);

/* Seals every module's table now, as its first lookup would (a table that fails to seal
 * names nothing). Afterwards lookups change nothing, so threads may make them at once; names
 * arriving later are not added (counted as late). */
void perch_symnames_seal_all(perch_symnames *n);

/* Symbol records held, and those ignored (unknown module, or after the first lookup). */
typedef struct perch_symnames_stats {
    uint64_t names, unknown_module, late;
} perch_symnames_stats;
void perch_symnames_get_stats(const perch_symnames *n, perch_symnames_stats *st);

/* ---- perch symbolize ------------------------------------------------------------------------ */

/* Collects what a record stream's frames hit: modules, threads, stacks, and each sample's IP
 * and stack (per thread), plus the symbol records the stream already has. Feed it through
 * its sink (perch_symhits_sink), then call perch_symbolize. */
typedef struct perch_symhits perch_symhits;

int perch_symhits_create(perch_symhits **out);
void perch_symhits_destroy(perch_symhits *h);
/* A sink that feeds h (every callback but finish; finish does nothing). */
void perch_symhits_sink(perch_symhits *h, perch_sink *sink);

/* What perch_symbolize did for one module identity (pointers valid during the callback). */
typedef struct perch_symbolize_module {
    uint64_t module_key;         /* the key the records are written for */
    const perch_module_rec *rec; /* its module record */
    const perch_sym_report *rep; /* NULL when every hit already had a name */
    uint32_t modules;            /* module keys with this identity */
    uint64_t addresses;          /* distinct addresses hit */
    uint64_t named_before;       /* of which the stream already named */
    uint64_t named;              /* of which this run named */
    uint64_t records;            /* symbol records emitted */
} perch_symbolize_module;

typedef struct perch_symbolize_ops {
    void *ctx;
    /* Each new symbol record, in module then RVA order (may be NULL). */
    int (*symbol)(void *ctx, const perch_symbol_rec *rec);
    /* Each module identity with hits, in the order of their first module record (may be
     * NULL). */
    int (*module)(void *ctx, const perch_symbolize_module *m);
} perch_symbolize_ops;

/* Resolves every address h holds that the stream did not name yet, through r, into new
 * symbol records. A frame belongs to the module holding it among its process's modules (the
 * kernel's for kernel addresses): the highest base, then the smallest size, as the report
 * and exports choose. 0, or PERCH_ENOMEM / PERCH_ELIMIT, or an ops callback's error. */
int perch_symbolize(perch_symhits *h, perch_resolver *r, const perch_symbolize_ops *ops);

/* ---- the symbol worker (perchd's live path) ------------------------------------------------ */

/* What names a module's addresses for the worker; called on the worker's thread only. Module
 * identities are numbered (ident) as perch_symhits numbers them. */
typedef struct perch_symbackend {
    void *ctx;
    /* Makes identity ident ready from rec (its first module record: path, base, size, PDB
     * identity). 0 when its addresses can be named; an error makes them unnamed. */
    int (*load)(void *ctx, uint32_t ident, const perch_module_rec *rec);
    /* The function at rva of identity ident: true and *f (with its span), or false. f->name
     * is valid until the next call. */
    bool (*lookup)(void *ctx, uint32_t ident, uint32_t rva, perch_sym_func *f);
} perch_symbackend;

/* The portable backend: each identity's files found through r (a perch_resolver, borrowed).
 * 0 or PERCH_ENOMEM; destroy accepts a backend that was never created. */
int perch_symbackend_resolver_create(perch_resolver *r, perch_symbackend *out);
void perch_symbackend_resolver_destroy(perch_symbackend *b);

/* A worker thread that names what a live record stream's samples and stacks hit, off the
 * model thread: the model thread collects the addresses (perch_symworker_sink) and queues
 * the new ones (perch_symworker_pump, bounded: past the cap an address is dropped and
 * counted); the worker asks the backend and keeps one symbol record per run of addresses; a
 * tap in front of a capture-writing sink adds the records to what it writes. */
typedef struct perch_symworker perch_symworker;

/* Bounds for a service that runs for weeks (each counted in perch_symworker_stats). After
 * every pump the model thread's collection keeps no (stack, thread) or (module, IP) pairs
 * (those were queued), only the stacks' frames, at most max_stack_frames of them: past it the
 * oldest stacks are forgotten down to half (a later sample with a forgotten stack still gives
 * its IP; its frames are not queued again). The set of addresses already queued holds at most
 * max_addresses: past it, it starts afresh (each address is then queued, and looked up, once
 * more; no record is made twice). At most max_records symbol records are kept; past it a new
 * function's record is dropped. Taps and perch_symworker_names outputs keep their own. */
typedef struct perch_symworker_options {
    size_t size;               /* sizeof(perch_symworker_options) */
    uint32_t queue_cap;        /* addresses waiting for the worker; 0: 65536 */
    uint32_t finish_wait_ms;   /* how long a tap's finish waits for the worker; 0: 5000 */
    perch_symbackend backend;  /* borrowed; must outlive the worker */
    uint32_t max_stack_frames; /* 0: 1 << 22 (32 MiB of frames) */
    uint32_t max_addresses;    /* 0: 1 << 20 */
    uint32_t max_records;      /* 0: 1 << 20 */
} perch_symworker_options;

typedef struct perch_symworker_stats {
    uint64_t queued;    /* addresses handed to the worker */
    uint64_t dropped;   /* addresses the full queue refused */
    uint64_t looked_up; /* addresses the backend was asked about */
    uint64_t named;     /* of which it named */
    uint64_t records;   /* symbol records made (one per run) */
    uint32_t modules_loaded, modules_failed;
    uint64_t stacks_forgotten; /* by max_stack_frames */
    uint64_t address_resets;   /* times the set of queued addresses started afresh */
    uint64_t records_dropped;  /* by max_records */
    uint64_t pump_failures;    /* idle pumps that failed (out of memory, a limit) */
} perch_symworker_stats;

/* Starts the worker thread. 0, PERCH_EINVAL, PERCH_ENOMEM or the thread's error. */
int perch_symworker_create(const perch_symworker_options *o, perch_symworker **out);
/* Asks the thread to stop (what is queued is dropped) and waits, at most timeout_ms, for it
 * to leave the lookup it is in: 0 (destroy then joins at once) or PERCH_ETIMEDOUT (it is
 * still inside the backend, e.g. DbgHelp fetching a PDB; call again, or give up on it). */
int perch_symworker_stop(perch_symworker *w, uint32_t timeout_ms);
/* Stops the thread (what is queued is dropped; waits for the lookup it is in) and frees
 * everything. Accepts NULL. */
void perch_symworker_destroy(perch_symworker *w);

/* The model thread's sink (ctx is w): modules, threads, stacks and samples. */
void perch_symworker_sink(perch_symworker *w, perch_sink *sink);
/* A perch_live_idle_fn for that sink: perch_symworker_pump (cheap when nothing is new); a
 * failure is counted (pump_failures), and the addresses it did not queue are queued at the
 * next pump. */
void perch_symworker_idle(void *sink_ctx);
/* On the model thread: queues the addresses the records since the last pump hit that were
 * never queued before (call it when the engine is idle). 0, PERCH_ENOMEM or PERCH_ELIMIT. */
int perch_symworker_pump(perch_symworker *w);
/* Waits until the worker has looked up every queued address, at most timeout_ms in all
 * (however often another thread queues more meanwhile): 0 or PERCH_ETIMEDOUT. Any thread. */
int perch_symworker_wait(perch_symworker *w, uint32_t timeout_ms);
void perch_symworker_get_stats(perch_symworker *w, perch_symworker_stats *st);

/* A tap in front of inner (a capture writer's sink, borrowed): every record goes to inner;
 * the worker's symbol records go too, each once, at every perch_symworker_tap_flush and at
 * the stream's end: before inner's first ledger or stat record, or its finish, the tap pumps
 * the worker and waits up to finish_wait_ms for it, once. Each is written for a module key of its
 * identity that went through this tap (the first one), so a file that starts late, or holds only
 * some processes, names its own modules; a name for an identity the tap never saw is not written.
 * The worker's sink must be fed before or with the tap. All on the model thread. */
typedef struct perch_symworker_tap perch_symworker_tap;
int perch_symworker_tap_create(perch_symworker *w, const perch_sink *inner,
                               perch_symworker_tap **out);
void perch_symworker_tap_destroy(perch_symworker_tap *t);
void perch_symworker_tap_sink(perch_symworker_tap *t, perch_sink *sink);
int perch_symworker_tap_flush(perch_symworker_tap *t);

/* Names for outputs that each stand on their own (rotated capture files, flight-recorder
 * snapshots): fills *out with a perch_sink_wrap (include/perch/records.h) whose every output
 * collects what the records written through it hit (its own perch_symhits: the samples' IPs
 * and their stacks' frames, in the modules that output holds) and, at the output's end (its
 * first ledger or stat record, or its finish), writes the worker's names that cover those
 * addresses, one record per run, for the output's own module keys (the first of each module
 * identity). Before that it waits up to finish_wait_ms for the worker to look up what is
 * queued; with model_thread true (the output is written on the model thread, as a rotation
 * is) it first queues what the worker's sink collected since the last pump. An address the
 * worker has not named by then stays unnamed in that output. w must outlive every output. */
void perch_symworker_names(perch_symworker *w, bool model_thread, perch_sink_wrap *out);

#ifdef __cplusplus
}
#endif

#endif
