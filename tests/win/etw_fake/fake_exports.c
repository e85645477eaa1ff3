/*
 * The import-table entries of the fake: code compiled against the SDK headers calls an
 * advapi32 function through its __imp_<name> pointer (the functions are declared dllimport).
 * Defining those pointers here, in a library linked whole before advapi32's import library,
 * makes every such call land in the fake, and leaves advapi32's own entries for these
 * functions unused. Names are the x86-64 ones (no leading underscore).
 */
#define _WMI_SOURCE_
#include "fake_internal.h"

#define FAKE_IMPORT(name) void *__imp_##name = (void *)(name);

FAKE_IMPORT(StartTraceW)
FAKE_IMPORT(ControlTraceW)
FAKE_IMPORT(TraceSetInformation)
FAKE_IMPORT(TraceQueryInformation)
FAKE_IMPORT(EnableTraceEx2)
FAKE_IMPORT(OpenTraceW)
FAKE_IMPORT(ProcessTrace)
FAKE_IMPORT(CloseTrace)
