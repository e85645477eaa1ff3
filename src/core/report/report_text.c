/*
 * The text form of the report: trace header, samples and CPU time per process and per thread,
 * top modules, top functions (when the stream has symbol records), top stacks (frames as
 * module!function+0xoffset when named, else module!+0xoffset), slice statistics and the
 * ledger.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "model/mem.h"
#include "perch/error.h"
#include "report/report_internal.h"
#include "util/ticks.h"

/* Windows' default timer profile interval, 1 ms in 100 ns units, for traces that never
 * logged a SetInterval / CollectionStart event. */
#define DEFAULT_TIMER_INTERVAL_100NS 10000u

static double ms(const perch_report *r, uint64_t ticks)
{
    return (double)ticks * 1000.0 / (double)perch__clock_hz(r->info.perf_freq);
}

static const rnamed *stat_named(const perch_report *r, const char *name)
{
    for (uint32_t i = 0; i < r->stat_count; i++)
        if (strcmp(r->stats[i].name, name) == 0)
            return &r->stats[i];
    return NULL;
}

static uint64_t stat_of(const perch_report *r, const char *name)
{
    const rnamed *s = stat_named(r, name);
    return s != NULL ? s->value : 0;
}

static uint64_t timer_interval_100ns(const perch_report *r, bool *from_trace)
{
    uint64_t v = stat_of(r, "profile.timer_interval_100ns");
    *from_trace = v != 0;
    return v != 0 ? v : DEFAULT_TIMER_INTERVAL_100NS;
}

uint64_t perch__report_interval_ns(const perch_report *r)
{
    bool from_trace;
    return timer_interval_100ns(r, &from_trace) * 100u;
}

bool perch__report_cpu_estimated(const perch_report *r)
{
    return r->slices == 0 && r->samples > 0;
}

double perch__report_cpu_ms(const perch_report *r, uint64_t ticks, uint64_t samples)
{
    bool from_trace;
    if (!perch__report_cpu_estimated(r))
        return ms(r, ticks);
    return (double)samples * (double)timer_interval_100ns(r, &from_trace) / 10000.0;
}

const char *perch__report_cpu_heading(const perch_report *r)
{
    return perch__report_cpu_estimated(r) ? "est. cpu ms" : "cpu ms";
}

/* Says how the cpu column was estimated when the trace has no context switches. */
static void print_cpu_note(const perch_report *r, FILE *f)
{
    bool from_trace;
    if (!perch__report_cpu_estimated(r))
        return;
    uint64_t iv = timer_interval_100ns(r, &from_trace);
    fprintf(f,
            "  (no context switches: CPU time estimated as timer samples x %.4f ms, the "
            "sample interval %s)\n",
            (double)iv / 10000.0, from_trace ? "the trace logged" : "Windows uses by default");
}

static int print_threads(perch_report *r, FILE *f)
{
    uint32_t n = 0;
    rthread **v = perch__report_sorted_threads(r, &n);
    if (v == NULL)
        return PERCH_ENOMEM;
    fprintf(f, "\nThreads (top %u by samples)\n  %8s %8s %-24s %-20s %10s %12s\n", r->top, "pid",
            "tid", "process", "thread", "samples", perch__report_cpu_heading(r));
    for (uint32_t i = 0; i < n && i < r->top; i++) {
        int64_t pid;
        const char *pname = perch__report_thread_process(r, v[i], &pid);
        fprintf(f, "  %8" PRId64 " %8u %-24s %-20s %10" PRIu64 " %12.3f\n", pid, v[i]->tid, pname,
                v[i]->name ? v[i]->name : "", v[i]->samples,
                perch__report_cpu_ms(r, v[i]->cpu_ticks, v[i]->samples));
    }
    perch__free(v);
    return 0;
}

static void print_stack(perch_report *r, FILE *f, const rstack *s, const uint64_t *frames)
{
    rthread *t = perch__rtable_get(&r->threads, s->thread_key, sizeof *t);
    uint64_t pkey = t != NULL && t->known ? t->process_key : 0;
    for (uint32_t i = 0; i < s->count; i++) {
        char name[256];
        perch_sym_func fn;
        int64_t off;
        bool named;
        const rmod *md = perch__report_module_at(r, frames[i], pkey);
        perch__report_frame(r, md, frames[i], name, sizeof name, &fn, &off, &named);
        fprintf(f, "      %s\n", name);
    }
}

/* The top functions by timer samples at the IP, when the stream names any. */
static int print_functions(perch_report *r, FILE *f)
{
    rfunc *v = NULL;
    uint32_t n = 0;
    if (!r->named)
        return 0;
    int err = perch__report_functions(r, &v, &n);
    if (err)
        return err;
    fprintf(f, "\nFunctions (top %u by samples at the IP; named frames only)\n", r->top);
    for (uint32_t i = 0; i < n && i < r->top; i++)
        fprintf(f, "  %-60s %10" PRIu64 "  %s\n", v[i].name, v[i].samples,
                perch_sym_source_name(v[i].source));
    perch__free(v);
    return 0;
}

static int print_stacks(perch_report *r, FILE *f)
{
    rstack_ref *v = NULL;
    uint64_t *frames = NULL;
    uint32_t n = 0, distinct = 0, cap = 0;
    int err = perch__rstacks_top(&r->stacks, r->top, &v, &n, &distinct);
    if (err)
        return err;
    fprintf(f, "\nTop stacks (%u distinct; innermost frame first)\n", distinct);
    for (uint32_t i = 0; i < n && err == 0; i++) {
        fprintf(f, "  #%u: %" PRIu64 " samples, %u frames (%u kernel)\n", i + 1, v[i].e.samples,
                v[i].e.count, v[i].e.kernel);
        err = perch__rstacks_frames(&r->stacks, &v[i].e, &frames, &cap);
        if (err == 0)
            print_stack(r, f, &v[i].e, frames);
    }
    perch__free(frames);
    perch__free(v);
    return err;
}

/* Threads and modules the stream named by their own records (rows made for a sample or a
 * slice alone are not counted). */
static void count_named(const perch_report *r, uint32_t *threads, uint32_t *modules)
{
    *threads = *modules = 0;
    for (uint32_t i = 0; i < r->threads.count; i++)
        *threads += ((const rthread *)r->threads.rows)[i].known;
    for (uint32_t i = 0; i < r->mods.count; i++)
        *modules += ((const rmod *)r->mods.rows)[i].known;
}

static void print_summary(perch_report *r, FILE *f)
{
    const perch_trace_info *h = &r->info;
    fprintf(f,
            "Trace %s\n  OS build %u, %u CPUs, pointer size %u, clock type %u, %" PRIu64
            " ticks/s\n  events lost %" PRIu64 ", buffers lost %" PRIu64 "\n",
            h->source ? h->source : "", h->os_build, h->cpu_count, h->pointer_size, h->clock_type,
            perch__clock_hz(h->perf_freq), h->events_lost, h->buffers_lost);
    if (h->perf_freq == 0)
        fprintf(f, "  the trace gives no clock rate: its times are read as %u ticks/s (100 ns)\n",
                PERCH_DEFAULT_CLOCK_HZ);
    if (stat_named(r, "records.total") != NULL)
        fprintf(f,
                "  %" PRIu64 " records; %" PRIu64 " processes, %" PRIu64 " threads, %" PRIu64
                " modules seen\n",
                stat_of(r, "records.total"), stat_of(r, "processes.total"),
                stat_of(r, "threads.total"), stat_of(r, "modules.total"));
    else { /* recorded live (the engine's counts span more than one file), or cut short */
        uint32_t threads, modules;
        count_named(r, &threads, &modules);
        fprintf(f,
                "  no event counts in this capture (%s); it names %u processes, %u threads and %u "
                "modules\n",
                h->source != NULL && strncmp(h->source, "live:", 5) == 0
                    ? "perchd recorded it live: its status counts the engine's events"
                    : "it has no ledger: cut before its end, or written without one",
                r->procs.count, threads, modules);
    }
    fprintf(f,
            "\nSamples: %" PRIu64 " timer (%" PRIu64 " with a stack: %" PRIu64
            " kernel+user, %" PRIu64 " kernel only, %" PRIu64 " user only), %" PRIu64 " PMC\n",
            r->samples, r->samples_with_stack, r->merged, r->kernel_only, r->user_only,
            r->samples_pmc);
    fprintf(f,
            "Slices: %" PRIu64 ", run %.3f ms, idle %.3f ms, open-start %" PRIu64
            ", open-end %" PRIu64 ", stale %" PRIu64 "\n",
            r->slices, ms(r, r->run_ticks), ms(r, r->idle_ticks), r->slice_flags[0],
            r->slice_flags[1], r->slice_flags[2]);
    if (r->slices > 0) {
        fprintf(f, "  wait reasons at switch-out:");
        for (int i = 0; i <= RPT_MAX_WAIT; i++)
            if (r->wait_reason[i] > 0)
                fprintf(f, " %d:%" PRIu64, i < RPT_MAX_WAIT ? i : -1, r->wait_reason[i]);
        fputc('\n', f);
    }
}

int perch_report_write_text(perch_report *r, FILE *f)
{
    print_summary(r, f);
    print_cpu_note(r, f);
    int err = perch__report_text_tables(r, f);
    err = err ? err : print_threads(r, f);
    err = err ? err : print_functions(r, f);
    err = err ? err : print_stacks(r, f);
    if (err) /* a section could not be sorted: stop rather than print a report without it */
        return err;
    fprintf(f, "\nLedger (not turned into model data)\n");
    for (uint32_t i = 0; i < r->ledger_count; i++)
        fprintf(f, "  %-36s %12" PRIu64 "\n", r->ledger[i].name, r->ledger[i].value);
    if (r->ledger_count == 0)
        fprintf(f, "  (empty)\n");
    if (err == 0 && ferror(f))
        err = PERCH_EIO;
    return err;
}
