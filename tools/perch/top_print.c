/*
 * How the service commands show a TOP reply (perch top, perch watch): processes, threads or
 * stacks, named from the entities the reply's capture carries, with CPU time in ms, the
 * share of one CPU over the window, and timer samples; or the same as a JSON object.
 */
#include <inttypes.h>
#include <stdio.h>

#include "perch/error.h"
#include "service_client.h"

#define MAX_FRAMES 8

static const char *const whats[] = {"processes", "threads", "stacks"};
static const char *const orders[] = {"cpu", "samples"};

typedef struct row_names {
    int64_t pid, tid;
    const char *process, *thread;
    uint64_t process_key;
} row_names;

static row_names name_row(const perch_cli_names *n, const perch_proto_top_row *r, uint8_t what)
{
    row_names x = {-1, -1, "?", "", 0};
    const perch_thread_rec *t = NULL;
    const perch_process_rec *p = NULL;
    if (what == PERCH_TOP_PROCESSES)
        p = perch_cli_process(n, r->key);
    else
        t = perch_cli_thread(n, what == PERCH_TOP_THREADS ? r->key : r->owner);
    if (t != NULL) {
        x.tid = t->tid;
        x.pid = t->pid != UINT32_MAX ? (int64_t)t->pid : -1;
        x.thread = t->name ? t->name : "";
        p = perch_cli_process(n, t->process_key);
        x.process_key = t->process_key;
    }
    if (p != NULL) {
        x.pid = p->pid;
        x.process = p->image_name && p->image_name[0] ? p->image_name : "?";
        x.process_key = p->key;
    }
    return x;
}

static void print_stack(const perch_cli_names *n, const perch_proto_top_row *r, const row_names *x,
                        FILE *out)
{
    const perch_stack_rec *s = perch_cli_stack(n, (uint32_t)r->key);
    for (uint32_t i = 0; s != NULL && i < s->frame_count && i < MAX_FRAMES; i++) {
        char f[160];
        perch_cli_frame(n, x->process_key, s->frames[i], f, sizeof f);
        fprintf(out, "        %s\n", f);
    }
    if (s != NULL && s->frame_count > MAX_FRAMES)
        fprintf(out, "        ... %u more\n", (unsigned)(s->frame_count - MAX_FRAMES));
}

int perch_cli_print_top(const char *cmd, const perch_proto_top_rep *top, uint8_t what,
                        uint8_t order, FILE *out)
{
    perch_cli_names *n = perch_cli_names_load(cmd, top->entities, top->entities_len);
    double span = perch_cli_ms(top->to_ts - top->from_ts, top->perf_freq);
    if (n == NULL)
        return 1;
    fprintf(out, "top %s by %s over %.1f s%s: %" PRIu64 " samples, %.1f ms CPU, %.1f ms idle\n",
            whats[what], orders[order], span / 1000.0,
            top->complete ? "" : " (part of the window is no longer held)", top->samples,
            perch_cli_ms(top->cpu_ticks, top->perf_freq),
            perch_cli_ms(top->idle_ticks, top->perf_freq));
    if (what == PERCH_TOP_PROCESSES)
        fprintf(out, "  %8s  %-28s %10s %7s %9s\n", "pid", "process", "cpu ms", "cpu %", "samples");
    else if (what == PERCH_TOP_THREADS)
        fprintf(out, "  %8s %8s  %-24s %-16s %10s %7s %9s\n", "tid", "pid", "process", "thread",
                "cpu ms", "cpu %", "samples");
    for (uint32_t i = 0; i < top->row_count; i++) {
        const perch_proto_top_row *r = &top->rows[i];
        row_names x = name_row(n, r, what);
        double ms = perch_cli_ms(r->cpu_ticks, top->perf_freq);
        double pct = span > 0 ? 100.0 * ms / span : 0.0;
        if (what == PERCH_TOP_PROCESSES)
            fprintf(out, "  %8" PRId64 "  %-28.28s %10.1f %6.1f%% %9" PRIu64 "\n", x.pid, x.process,
                    ms, pct, r->samples);
        else if (what == PERCH_TOP_THREADS)
            fprintf(out,
                    "  %8" PRId64 " %8" PRId64 "  %-24.24s %-16.16s %10.1f %6.1f%% %9" PRIu64 "\n",
                    x.tid, x.pid, x.process, x.thread, ms, pct, r->samples);
        else {
            fprintf(out, "  %9" PRIu64 " samples  %s (pid %" PRId64 ", tid %" PRId64 ")\n",
                    r->samples, x.process, x.pid, x.tid);
            print_stack(n, r, &x, out);
        }
    }
    if (top->row_count == 0) /* an idle window, or a --pid that did not run in it */
        fprintf(out, "  (none over this window)\n");
    perch_cli_names_free(n);
    return 0;
}

static void json_row(perch_json *w, const perch_cli_names *n, const perch_proto_top_row *r,
                     uint8_t what, uint64_t freq)
{
    row_names x = name_row(n, r, what);
    perch_json_begin_object(w);
    perch_json_key(w, "pid");
    perch_json_int(w, x.pid);
    perch_cli_json_s(w, "process", x.process);
    if (what != PERCH_TOP_PROCESSES) {
        perch_json_key(w, "tid");
        perch_json_int(w, x.tid);
        perch_cli_json_s(w, "thread", x.thread);
    }
    perch_json_key(w, "cpu_ms");
    perch_json_double(w, perch_cli_ms(r->cpu_ticks, freq));
    perch_cli_json_u(w, "samples", r->samples);
    if (what == PERCH_TOP_STACKS) {
        const perch_stack_rec *s = perch_cli_stack(n, (uint32_t)r->key);
        perch_json_key(w, "frames");
        perch_json_begin_array(w);
        for (uint32_t i = 0; s != NULL && i < s->frame_count; i++) {
            char f[160];
            perch_cli_frame(n, x.process_key, s->frames[i], f, sizeof f);
            perch_json_string(w, f);
        }
        perch_json_end_array(w);
    }
    perch_json_end_object(w);
}

int perch_cli_json_top(const char *cmd, const perch_proto_top_rep *top, uint8_t what, uint8_t order,
                       perch_json *w)
{
    perch_cli_names *n = perch_cli_names_load(cmd, top->entities, top->entities_len);
    if (n == NULL)
        return 1;
    perch_json_begin_object(w);
    perch_cli_json_s(w, "what", whats[what]);
    perch_cli_json_s(w, "by", orders[order]);
    perch_cli_json_u(w, "from_ts", top->from_ts);
    perch_cli_json_u(w, "to_ts", top->to_ts);
    perch_cli_json_u(w, "perf_freq", top->perf_freq);
    perch_json_key(w, "complete");
    perch_json_bool(w, top->complete);
    perch_cli_json_u(w, "samples", top->samples);
    perch_json_key(w, "cpu_ms");
    perch_json_double(w, perch_cli_ms(top->cpu_ticks, top->perf_freq));
    perch_json_key(w, "idle_ms");
    perch_json_double(w, perch_cli_ms(top->idle_ticks, top->perf_freq));
    perch_json_key(w, "rows");
    perch_json_begin_array(w);
    for (uint32_t i = 0; i < top->row_count; i++)
        json_row(w, n, &top->rows[i], what, top->perf_freq);
    perch_json_end_array(w);
    perch_json_end_object(w);
    perch_cli_names_free(n);
    return 0;
}
