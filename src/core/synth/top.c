/*
 * Samples per process and per module, and the top-10 lists built from them at the end, with
 * the rules of shared/docs/report-reference.md (M3: group by pid and image name; M5: the module
 * that holds the sample's IP, named by its lower-cased file name; ties by pid, then name).
 */
#include <string.h>

#include "synth_internal.h"

#define KERNEL_MIN 0xFFFF800000000000ull

static bool inside(uint64_t ip, uint64_t base, uint32_t size)
{
    return ip >= base && ip - base < size;
}

void perch__synth_count_sample(struct synth_sim *s, const struct synth_thread *t, uint64_t ip)
{
    const struct synth_proc *p = &s->procs[t->proc];
    const struct synth_proc_tpl *tpl = &perch__synth_tpls[p->tpl];
    if (p->row != UINT32_MAX)
        s->rows[p->row].samples++;
    if (ip >= KERNEL_MIN) {
        for (unsigned k = 0; k < perch__synth_kmod_count; k++)
            if (inside(ip, perch__synth_kmods[k].base, perch__synth_kmods[k].size)) {
                s->mod_samples[0][k]++;
                return;
            }
        return;
    }
    for (unsigned i = 0; i < tpl->nmods; i++) {
        const struct synth_module *m = perch__synth_umod(s, tpl->mods[i]);
        if (inside(ip, m->base ? m->base : p->exe_base, m->size)) {
            s->mod_samples[1][tpl->mods[i]]++;
            return;
        }
    }
}

static bool ranks_before(const perch_synth_top_row *a, const perch_synth_top_row *b)
{
    if (a->samples != b->samples)
        return a->samples > b->samples;
    if (a->pid != b->pid)
        return a->pid < b->pid;
    return strcmp(a->name, b->name) < 0;
}

/* Keeps the PERCH_SYNTH_TOP best rows in order (insertion into a short sorted list). */
static void offer(perch_synth_top_row *top, uint32_t *n, const perch_synth_top_row *row)
{
    uint32_t i;
    if (row->samples == 0)
        return;
    if (*n == PERCH_SYNTH_TOP && !ranks_before(row, &top[PERCH_SYNTH_TOP - 1]))
        return;
    i = *n < PERCH_SYNTH_TOP ? (*n)++ : PERCH_SYNTH_TOP - 1;
    while (i > 0 && ranks_before(row, &top[i - 1])) {
        top[i] = top[i - 1];
        i--;
    }
    top[i] = *row;
}

static void lower_name(char *out, size_t cap, const char *name)
{
    size_t i = 0;
    for (; name[i] && i + 1 < cap; i++)
        out[i] = (char)(name[i] >= 'A' && name[i] <= 'Z' ? name[i] - 'A' + 'a' : name[i]);
    out[i] = 0;
}

static void row_of(const struct synth_sim *s, uint32_t i, perch_synth_top_row *row)
{
    memset(row, 0, sizeof *row);
    row->pid = s->rows[i].pid;
    row->samples = s->rows[i].samples;
    strncpy(row->name, perch__synth_tpls[s->rows[i].tpl].name, sizeof row->name - 1);
}

uint32_t perch__synth_new_row(struct synth_sim *s, uint32_t pid, uint8_t tpl)
{
    perch_synth_top_row top[PERCH_SYNTH_TOP], row;
    uint32_t n = 0, i = s->nrows;
    if (s->nrows == SYNTH_MAX_ROWS) {
        for (uint32_t k = 0; k < s->nrows; k++) {
            row_of(s, k, &row);
            offer(top, &n, &row);
        }
        for (i = 0; i < s->nrows; i++) {
            row_of(s, i, &row);
            if (s->rows[i].ended &&
                (row.samples == 0 || (n == PERCH_SYNTH_TOP && ranks_before(&top[n - 1], &row))))
                break;
        }
        if (i == s->nrows)
            return UINT32_MAX;
    } else {
        s->nrows++;
    }
    s->rows[i] = (struct synth_row){pid, tpl, 0, 0};
    return i;
}

void perch__synth_top_lists(const struct synth_sim *s, perch_synth_stats *st)
{
    perch_synth_top_row row;
    memset(st->top_processes, 0, sizeof st->top_processes);
    memset(st->top_modules, 0, sizeof st->top_modules);
    st->top_process_count = st->top_module_count = 0;
    for (uint32_t i = 0; i < s->nrows; i++) {
        row_of(s, i, &row);
        offer(st->top_processes, &st->top_process_count, &row);
    }
    for (unsigned k = 0; k < 2 * SYNTH_FN_MODS; k++) {
        unsigned kernel = k < SYNTH_FN_MODS, m = k % SYNTH_FN_MODS;
        if (m >= (kernel ? perch__synth_kmod_count : SYNTH_UMOD_COUNT))
            continue;
        memset(&row, 0, sizeof row);
        row.samples = s->mod_samples[kernel ? 0 : 1][m];
        lower_name(row.name, sizeof row.name,
                   kernel ? perch__synth_kmods[m].name : perch__synth_umod(s, m)->name);
        offer(st->top_modules, &st->top_module_count, &row);
    }
}
