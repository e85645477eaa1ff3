/*
 * perchd's function names (src/win/daemon_internal.h): the symbol worker of
 * include/perch/sym.h with the DbgHelp backend (sym_dbghelp.h), a sink of the live engine
 * that queues the addresses samples and stacks hit when the engine is idle; every file of a
 * recording (the rotation) and every flight-recorder snapshot gets, through
 * perch_symworker_names, a symbol chunk with the names of what its own records hit, so each
 * names its frames on any machine. The worker's drops go to the engine's losses (the ledger).
 * DbgHelp's path is
 * the SymbolPath key when set, else PERCH_SYMBOL_PATH, else its own default (_NT_SYMBOL_PATH,
 * _NT_ALTERNATE_SYMBOL_PATH).
 * Names are optional: when DbgHelp cannot start, perchd logs it and records without them.
 */
#include <windows.h>
#include <string.h>

#include "daemon_internal.h"
#include "log.h"
#include "perch/error.h"
#include "sym_dbghelp.h"
#include "util/mem.h"
#include "wstr.h"

/* How long a recording's end waits for the worker to name what was queued (on the model
 * thread, so the queue fills meanwhile; the live queue holds seconds of events). */
#define FINISH_WAIT_MS 2000u
/* perchd's stop waits for a worker inside DbgHelp (a PDB coming from a symbol server) in
 * steps, reporting progress to the service manager, and gives up on it after this long. */
#define STOP_STEP_MS    1000u
#define STOP_GIVE_UP_MS 30000u

/* The symbol path in UTF-8 into path: the SymbolPath key, else PERCH_SYMBOL_PATH; NULL when
 * neither is set (DbgHelp then uses _NT_SYMBOL_PATH). *from names where it came from. */
static const char *symbol_path(const perch_daemon *d, char *path, size_t len, const char **from)
{
    wchar_t w[4096];
    *from = "SymbolPath";
    if (d->o.config.symbol_path[0] != '\0') {
        wchar_t *raw = perch__utf8_to_wide(d->o.config.symbol_path);
        DWORD n = raw ? ExpandEnvironmentStringsW(raw, w, sizeof w / sizeof w[0]) : 0;
        perch__free(raw);
        if (n > 0 && n <= sizeof w / sizeof w[0] && perch__wide_to_utf8(w, path, len) == 0)
            return path; /* %VARIABLES% expanded */
        return d->o.config.symbol_path;
    }
    *from = "PERCH_SYMBOL_PATH";
    DWORD n = GetEnvironmentVariableW(L"PERCH_SYMBOL_PATH", w, sizeof w / sizeof w[0]);
    if (n > 0 && n < sizeof w / sizeof w[0] && perch__wide_to_utf8(w, path, len) == 0)
        return path;
    *from = "DbgHelp's default (_NT_SYMBOL_PATH)";
    return NULL;
}

void perch__daemon_symbols_add(perch_daemon *d)
{
    struct perch_daemon_live *v = &d->live;
    char buf[8192];
    const char *from;
    perch_symworker_options o = {.size = sizeof o, .finish_wait_ms = FINISH_WAIT_MS};
    perch_sink sink;
    const char *path = symbol_path(d, buf, sizeof buf, &from);
    int err = perch_dbghelp_backend_create(path, &v->sym_backend);
    if (err == 0) {
        o.backend = v->sym_backend;
        err = perch_symworker_create(&o, &v->symbols);
    }
    if (err == 0) {
        perch_symworker_sink(v->symbols, &sink);
        err = perch_live_add_sink(v->engine, "symbols", &sink, perch_symworker_idle);
    }
    if (err == 0)
        perch_log(PERCH_LOG_INFO, "Function names: DbgHelp's symbol path is %s (%s).",
                  path ? path : "its own", from);
    if (err != 0) {
        perch_log(PERCH_LOG_WARNING,
                  "Recordings carry no function names: the symbol worker could not start (%s).",
                  perch_strerror(err));
        perch__daemon_symbols_destroy(d);
    }
}

void perch__daemon_symbols_names(perch_daemon *d, bool model_thread, perch_sink_wrap *out)
{
    memset(out, 0, sizeof *out);
    if (d->live.symbols != NULL)
        perch_symworker_names(d->live.symbols, model_thread, out);
}

void perch__daemon_symbols_losses(perch_daemon *d)
{
    perch_symworker_stats st;
    if (d->live.symbols == NULL || d->live.engine == NULL)
        return;
    perch_symworker_get_stats(d->live.symbols, &st);
    perch_live_set_loss(d->live.engine, "symbols.queue_full", st.dropped);
    perch_live_set_loss(d->live.engine, "symbols.stacks_forgotten", st.stacks_forgotten);
    perch_live_set_loss(d->live.engine, "symbols.records_dropped", st.records_dropped);
}

void perch__daemon_symbols_destroy(perch_daemon *d)
{
    struct perch_daemon_live *v = &d->live;
    if (v->symbols != NULL) {
        perch_symworker_stats st;
        perch_symworker_get_stats(v->symbols, &st);
        perch_log(PERCH_LOG_INFO,
                  "Function names: %llu addresses looked up, %llu named, %llu dropped (queue "
                  "full); %u modules loaded, %u not found or not matching; %llu stacks "
                  "forgotten, %llu records dropped for the caps, %llu fresh starts of the "
                  "address set; %llu queueing passes failed (retried at the next).",
                  (unsigned long long)st.looked_up, (unsigned long long)st.named,
                  (unsigned long long)st.dropped, st.modules_loaded, st.modules_failed,
                  (unsigned long long)st.stacks_forgotten, (unsigned long long)st.records_dropped,
                  (unsigned long long)st.address_resets, (unsigned long long)st.pump_failures);
    }
    uint64_t since = GetTickCount64();
    int err;
    while ((err = perch_symworker_stop(v->symbols, STOP_STEP_MS)) == PERCH_ETIMEDOUT &&
           GetTickCount64() - since < STOP_GIVE_UP_MS)
        perch__daemon_progress(d, STOP_STEP_MS * 4); /* still in DbgHelp: a new checkpoint */
    if (err == PERCH_ETIMEDOUT) {
        /* the thread and DbgHelp are left as they are (perchd's process ends next): freeing
         * the worker or cleaning up DbgHelp under a thread still inside it would crash */
        perch_log(PERCH_LOG_WARNING,
                  "The symbol worker was still loading a module's symbols in DbgHelp %u s after "
                  "the stop; perchd stops without waiting for it.",
                  STOP_GIVE_UP_MS / 1000u);
        v->symbols = NULL;
        memset(&v->sym_backend, 0, sizeof v->sym_backend);
        return;
    }
    perch_symworker_destroy(v->symbols);
    v->symbols = NULL;
    perch_dbghelp_backend_destroy(&v->sym_backend);
}
