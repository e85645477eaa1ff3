/*
 * DbgHelp as a symbol source (see sym_dbghelp.h): SymInitializeW with the configured path,
 * SymLoadModuleExW per module by path, base and size, SymFromAddrW per address, all on one
 * thread. Options: undecorated names, no prompts, no critical-error boxes.
 * Win32 errors go through src/win/error.c.
 */
#include <windows.h>

#include <dbghelp.h>
#include <string.h>

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
