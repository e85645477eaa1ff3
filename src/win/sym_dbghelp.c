/*
 * DbgHelp as a symbol source (see sym_dbghelp.h): SymInitializeW with the configured path,
 * SymLoadModuleExW per module by path, base and size, SymFromAddrW per address, all on one
 * thread. Options: undecorated names, no prompts, no critical-error boxes.
 * Win32 errors go through src/win/error.c.
 */
#include <windows.h>

#include <dbghelp.h>
#include <string.h>
#include <wchar.h>

#include "perch/io.h"
#include "perch/error.h"
#include "perch/sym.h"
#include "perch/win_error.h"
#include "sym_dbghelp.h"
#include "util/mem.h"
#include "wstr.h"

#define MAX_MODULES    4096
#define NAME_MAX_CHARS 1024

struct loaded {
    uint64_t base;
    int err;
    perch_dbghelp_module info;
};

struct perch_dbghelp {
    HANDLE id; /* DbgHelp's "process": any unique value (this struct's address) */
    struct loaded *mods;
    uint32_t count, cap;
    char name[4 * NAME_MAX_CHARS];
    union {
        SYMBOL_INFOW info;
        uint8_t bytes[sizeof(SYMBOL_INFOW) + NAME_MAX_CHARS * sizeof(WCHAR)];
    } sym;
};

int perch_dbghelp_create(const char *symbol_path, perch_dbghelp **out)
{
    perch_dbghelp *d = perch__calloc(1, sizeof *d);
    wchar_t *wpath = NULL;
    if (d == NULL)
        return PERCH_ENOMEM;
    if (symbol_path != NULL && (wpath = perch__utf8_to_wide(symbol_path)) == NULL) {
        perch__free(d);
        return PERCH_EINVAL;
    }
    d->id = (HANDLE)d;
    /* Not SYMOPT_DEFERRED_LOADS: a module's symbols load with it, so what was found is known
     * when it is loaded (the worker loads a module only when an address needs it). */
    SymSetOptions(SYMOPT_UNDNAME | SYMOPT_FAIL_CRITICAL_ERRORS | SYMOPT_NO_PROMPTS);
    BOOL ok = SymInitializeW(d->id, wpath, FALSE);
    int err = ok ? 0 : perch_win_error(GetLastError());
    perch__free(wpath);
    if (err) {
        perch__free(d);
        return err;
    }
    *out = d;
    return 0;
}

void perch_dbghelp_destroy(perch_dbghelp *d)
{
    if (d == NULL)
        return;
    SymCleanup(d->id);
    perch__free(d->mods);
    perch__free(d);
}

static struct loaded *find(perch_dbghelp *d, uint64_t base)
{
    for (uint32_t i = 0; i < d->count; i++)
        if (d->mods[i].base == base)
            return &d->mods[i];
    return NULL;
}

/* What DbgHelp loaded for the module at base (forcing the deferred load). */
static void describe(perch_dbghelp *d, uint64_t base, perch_dbghelp_module *info)
{
    IMAGEHLP_MODULEW64 mi;
    memset(&mi, 0, sizeof mi);
    mi.SizeOfStruct = sizeof mi;
    memset(info, 0, sizeof *info);
    info->status = PERCH_SYMST_NOT_FOUND;
    if (!SymGetModuleInfoW64(d->id, base, &mi))
        return;
    info->sym_type = (int)mi.SymType;
    if (mi.SymType == SymPdb || mi.SymType == SymDia) {
        info->status = PERCH_SYMST_FOUND;
        if (perch__wide_to_utf8(mi.LoadedPdbName, info->pdb_file, sizeof info->pdb_file) != 0)
            info->pdb_file[0] = '\0';
    }
}

int perch_dbghelp_load(perch_dbghelp *d, const char *image_path, uint64_t base, uint32_t size,
                       perch_dbghelp_module *info)
{
    struct loaded *l = find(d, base);
    wchar_t *wpath;
    if (l == NULL) {
        if (d->count >= MAX_MODULES)
            return PERCH_ELIMIT;
        if (d->count == d->cap) {
            uint32_t cap = d->cap ? d->cap * 2 : 16;
            struct loaded *m = perch__realloc(d->mods, cap * sizeof *m);
            if (m == NULL)
                return PERCH_ENOMEM;
            d->mods = m;
            d->cap = cap;
        }
        if ((wpath = perch__utf8_to_wide(image_path)) == NULL)
            return PERCH_EINVAL;
        l = &d->mods[d->count++];
        memset(l, 0, sizeof *l);
        l->base = base;
        DWORD64 got = SymLoadModuleExW(d->id, NULL, wpath, NULL, base, size, NULL, 0);
        DWORD last = GetLastError();
        perch__free(wpath);
        if (got == 0 && last != ERROR_SUCCESS)
            l->err = last == ERROR_FILE_NOT_FOUND || last == ERROR_PATH_NOT_FOUND
                         ? PERCH_ENOENT
                         : perch_win_error(last);
        if (l->err == 0)
            describe(d, base, &l->info);
    }
    *info = l->info;
    return l->err;
}

bool perch_dbghelp_lookup(perch_dbghelp *d, uint64_t base, uint64_t addr, perch_sym_func *f,
                          int64_t *offset)
{
    DWORD64 disp = 0;
    SYMBOL_INFOW *s = &d->sym.info;
    memset(&d->sym, 0, sizeof d->sym);
    s->SizeOfStruct = sizeof *s;
    s->MaxNameLen = NAME_MAX_CHARS;
    if (!SymFromAddrW(d->id, addr, &disp, s) || s->Address < base || s->Address - base > UINT32_MAX)
        return false;
    s->Name[s->NameLen < NAME_MAX_CHARS ? s->NameLen : NAME_MAX_CHARS - 1] = 0;
    if (perch__wide_to_utf8(s->Name, d->name, sizeof d->name) != 0)
        return false;
    f->rva = (uint32_t)(s->Address - base);
    f->size = s->Size;
    f->source = PERCH_SYM_DBGHELP;
    f->name = d->name;
    *offset = (int64_t)disp;
    return true;
}

static bool starts_ci(const wchar_t *s, const wchar_t *prefix)
{
    size_t n = wcslen(prefix);
    return _wcsnicmp(s, prefix, n) == 0;
}

/* \Device\HarddiskVolumeN\rest -> X:\rest for the drive whose device it is. */
static bool device_to_drive(const wchar_t *w, wchar_t *out, size_t cap)
{
    wchar_t drive[3] = L"A:", target[512];
    for (wchar_t c = L'A'; c <= L'Z'; c++) {
        drive[0] = c;
        if (QueryDosDeviceW(drive, target, sizeof target / sizeof target[0]) == 0)
            continue;
        size_t n = wcslen(target);
        if (n > 0 && _wcsnicmp(w, target, n) == 0 && w[n] == L'\\') {
            if (2 + wcslen(w + n) + 1 > cap)
                return false;
            swprintf(out, cap, L"%ls%ls", drive, w + n);
            return true;
        }
    }
    return false;
}

int perch_dbghelp_dos_path(const char *path, wchar_t *out, size_t cap)
{
    wchar_t *w = perch__utf8_to_wide(path);
    wchar_t windir[MAX_PATH];
    int err = 0;
    if (w == NULL)
        return PERCH_EINVAL;
    if (starts_ci(w, L"\\SystemRoot\\") && GetWindowsDirectoryW(windir, MAX_PATH) > 0) {
        if (wcslen(windir) + wcslen(w + 11) + 1 > cap)
            err = PERCH_ERANGE;
        else
            swprintf(out, cap, L"%ls%ls", windir, w + 11);
    } else if (starts_ci(w, L"\\??\\")) {
        err = wcslen(w + 4) + 1 > cap ? PERCH_ERANGE : 0;
        if (!err)
            wcscpy(out, w + 4);
    } else if (!(starts_ci(w, L"\\Device\\") && device_to_drive(w, out, cap))) {
        err = wcslen(w) + 1 > cap ? PERCH_ERANGE : 0;
        if (!err)
            wcscpy(out, w);
    }
    perch__free(w);
    return err;
}

struct dbghelp_backend {
    perch_dbghelp *d;
    uint64_t *base; /* by identity */
    uint32_t n;
};

/* The file at path is the image rec describes (its TimeDateStamp and SizeOfImage, read by
 * Perch's PE reader, equal the logged ones where those are known): DbgHelp itself would load
 * any file at the base given, and a file replaced since the trace would name wrong code. */
static int same_image(const char *path, const perch_module_rec *rec)
{
    perch_input in;
    perch_pe *pe = NULL;
    const char *why;
    int err = perch_input_open_file(&in, path);
    if (err < 0)
        return err;
    err = perch_pe_read(&in, &pe, &why);
    perch_input_close(&in);
    if (err < 0)
        return err;
    const perch_pe_info *pi = perch_pe_get_info(pe);
    bool same = (rec->time_date_stamp == 0 || pi->time_date_stamp == rec->time_date_stamp) &&
                (rec->size == 0 || pi->size_of_image == rec->size);
    perch_pe_destroy(pe);
    return same ? 0 : PERCH_ENOENT;
}

static int db_load(void *ctx, uint32_t ident, const perch_module_rec *rec)
{
    struct dbghelp_backend *b = ctx;
    wchar_t wpath[1024];
    char path[4096];
    perch_dbghelp_module info;
    if (ident >= b->n) {
        uint64_t *v = perch__realloc(b->base, (ident + 1u) * sizeof *v);
        if (v == NULL)
            return PERCH_ENOMEM;
        memset(v + b->n, 0, (ident + 1u - b->n) * sizeof *v);
        b->base = v;
        b->n = ident + 1;
    }
    int err = perch_dbghelp_dos_path(rec->path ? rec->path : "", wpath, 1024);
    if (!err)
        err = perch__wide_to_utf8(wpath, path, sizeof path);
    if (!err)
        err = same_image(path, rec);
    if (!err)
        err = perch_dbghelp_load(b->d, path, rec->base,
                                 rec->size > UINT32_MAX ? 0 : (uint32_t)rec->size, &info);
    if (!err)
        b->base[ident] = rec->base;
    return err;
}

static bool db_lookup(void *ctx, uint32_t ident, uint32_t rva, perch_sym_func *f)
{
    struct dbghelp_backend *b = ctx;
    int64_t off;
    if (ident >= b->n || b->base[ident] == 0 ||
        !perch_dbghelp_lookup(b->d, b->base[ident], b->base[ident] + rva, f, &off))
        return false;
    f->span_rva = f->rva;
    f->span_size = f->size > 0 ? f->size : rva - f->rva + 1;
    return off >= 0 && (uint64_t)off < f->span_size;
}

int perch_dbghelp_backend_create(const char *symbol_path, perch_symbackend *out)
{
    struct dbghelp_backend *b = perch__calloc(1, sizeof *b);
    if (b == NULL)
        return PERCH_ENOMEM;
    int err = perch_dbghelp_create(symbol_path, &b->d);
    if (err) {
        perch__free(b);
        return err;
    }
    *out = (perch_symbackend){b, db_load, db_lookup};
    return 0;
}

void perch_dbghelp_backend_destroy(perch_symbackend *b)
{
    if (b == NULL || b->ctx == NULL)
        return;
    struct dbghelp_backend *db = b->ctx;
    perch_dbghelp_destroy(db->d);
    perch__free(db->base);
    perch__free(db);
    b->ctx = NULL;
}
