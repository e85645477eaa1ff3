/*
 * DbgHelp as a symbol source, for perchd on the machine where the modules and its symbol
 * server are (docs/symbols.md "DbgHelp"). One instance per thread: DbgHelp is not
 * thread-safe, so perchd's symbol worker owns one and nothing else calls it.
 *
 * A module is loaded by its image path, base and size (SymLoadModuleExW); DbgHelp finds the
 * PDB itself through its search path (symsrv included: downstream stores, the network). A
 * lookup answers with the same perch_sym_func the portable readers give (source
 * PERCH_SYM_DBGHELP, RVA from the module's base), so the capture's symbol chunk is written
 * from either the same way.
 */
#ifndef PERCH_WIN_SYM_DBGHELP_H
#define PERCH_WIN_SYM_DBGHELP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

#include "perch/sym.h"

typedef struct perch_dbghelp perch_dbghelp;

/* What DbgHelp loaded for a module. */
typedef struct perch_dbghelp_module {
    int status;         /* perch_sym_status: found (a PDB), not found (exports only or none) */
    char pdb_file[512]; /* the PDB DbgHelp loaded, "" when none */
    int sym_type;       /* DbgHelp's SYM_TYPE (3 = PDB, 4 = exports, 0 = none) */
} perch_dbghelp_module;

/* Starts DbgHelp with symbol_path (UTF-8, _NT_SYMBOL_PATH syntax; NULL lets DbgHelp use
 * _NT_SYMBOL_PATH and _NT_ALTERNATE_SYMBOL_PATH). 0, PERCH_ENOMEM, PERCH_EINVAL (not UTF-8)
 * or the translated Win32 error. */
int perch_dbghelp_create(const char *symbol_path, perch_dbghelp **out);
void perch_dbghelp_destroy(perch_dbghelp *d);

/* Loads the module at base (size bytes) from image_path (UTF-8), once: a second call for the
 * same base returns the first answer. *info says what DbgHelp found. 0, PERCH_ENOENT when
 * DbgHelp could not load it, PERCH_ENOMEM or the translated Win32 error. */
int perch_dbghelp_load(perch_dbghelp *d, const char *image_path, uint64_t base, uint32_t size,
                       perch_dbghelp_module *info);

/* The function covering addr (in a loaded module): *f gets its RVA (from the module's base),
 * size and name (valid until the next call), *offset addr's offset into it. False when
 * DbgHelp knows no symbol there. */
bool perch_dbghelp_lookup(perch_dbghelp *d, uint64_t base, uint64_t addr, perch_sym_func *f,
                          int64_t *offset);

/* The symbol worker's backend on Windows (include/perch/sym.h): DbgHelp started with
 * symbol_path (as perch_dbghelp_create), each identity loaded from its module record's path
 * (an NT path as logged, \Device\HarddiskVolumeN\..., \SystemRoot\... or \??\..., is
 * turned into a drive path first), base and size, once Perch's PE reader has seen that the file
 * is the logged image (TimeDateStamp, SizeOfImage). A function DbgHelp gives no size names the
 * run from its start to the address asked about. */
int perch_dbghelp_backend_create(const char *symbol_path, perch_symbackend *out);
void perch_dbghelp_backend_destroy(perch_symbackend *b);

/* The drive path (UTF-16, into out of cap characters) of a module path as the kernel logs it:
 * \Device\HarddiskVolumeN\ through QueryDosDeviceW, \SystemRoot\ through the Windows
 * directory, \??\ stripped; anything else converted as it is. 0, PERCH_EINVAL (not UTF-8)
 * or PERCH_ERANGE. */
int perch_dbghelp_dos_path(const char *path, wchar_t *out, size_t cap);

#endif
