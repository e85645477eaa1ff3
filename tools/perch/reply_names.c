/*
 * The entities a reply's capture carries (service_client.h), kept by key so the service
 * commands can print names: processes, threads, modules and stacks, copied out of the
 * capture reader's callbacks (a later record of a key replaces the earlier one).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "perch/capture.h"
#include "perch/error.h"
#include "service_client.h"

struct perch_cli_names {
    perch_trace_info info;
    perch_process_rec *procs;
    perch_thread_rec *threads;
    perch_module_rec *mods;
    perch_stack_rec *stacks;
    size_t nprocs, nthreads, nmods, nstacks;
    int error;
};

static char *dup(perch_cli_names *n, const char *s)
{
    size_t len = s ? strlen(s) : 0;
    char *c = malloc(len + 1);
    if (c == NULL) {
        n->error = PERCH_ENOMEM;
        return NULL;
    }
    if (len)
        memcpy(c, s, len);
    c[len] = '\0';
    return c;
}

static void *grow(perch_cli_names *n, void **arr, size_t *count, size_t elem)
{
    void *p = realloc(*arr, elem * (*count + 1));
    if (p == NULL) {
        n->error = PERCH_ENOMEM;
        return NULL;
    }
    *arr = p;
    return (char *)p + elem * (*count)++;
}

static int on_info(void *ctx, const perch_trace_info *r)
{
    ((perch_cli_names *)ctx)->info.perf_freq = r->perf_freq;
    return 0;
}

static int on_process(void *ctx, const perch_process_rec *r)
{
    perch_cli_names *n = ctx;
    perch_process_rec *p = grow(n, (void **)&n->procs, &n->nprocs, sizeof *p);
    if (p != NULL) {
        *p = *r;
        p->image_name = dup(n, r->image_name);
        p->command_line = NULL;
    }
    return n->error;
}

static int on_thread(void *ctx, const perch_thread_rec *r)
{
    perch_cli_names *n = ctx;
    perch_thread_rec *t = grow(n, (void **)&n->threads, &n->nthreads, sizeof *t);
    if (t != NULL) {
        *t = *r;
        t->name = dup(n, r->name);
    }
    return n->error;
}

static int on_module(void *ctx, const perch_module_rec *r)
{
    perch_cli_names *n = ctx;
    perch_module_rec *m = grow(n, (void **)&n->mods, &n->nmods, sizeof *m);
    if (m != NULL) {
        *m = *r;
        const char *base = r->path ? r->path : "";
        for (const char *p = base; *p; p++)
            if (*p == '\\' || *p == '/')
                base = p + 1;
        m->path = dup(n, base);
        m->pdb_name = NULL;
    }
    return n->error;
}

static int on_stack(void *ctx, const perch_stack_rec *r)
{
    perch_cli_names *n = ctx;
    perch_stack_rec *s = grow(n, (void **)&n->stacks, &n->nstacks, sizeof *s);
    if (s != NULL) {
        uint64_t *f = malloc(sizeof *f * (r->frame_count + 1));
        *s = *r;
        s->frames = f;
        if (f == NULL)
            n->error = PERCH_ENOMEM;
        else if (r->frame_count)
            memcpy(f, r->frames, sizeof *f * r->frame_count);
    }
    return n->error;
}

perch_cli_names *perch_cli_names_load(const char *cmd, const uint8_t *capture, size_t len)
{
    perch_cli_names *n = calloc(1, sizeof *n);
    perch_capture_status st;
    if (n == NULL)
        return NULL;
    perch_sink s = {n,    on_info, on_process, on_thread, on_module, NULL, on_stack, NULL,
                    NULL, NULL,    NULL,       NULL,      NULL,      NULL, false,    false};
    if (len > 0 && perch_capture_replay_memory(capture, len, &s, &st) < 0) {
        fprintf(stderr, "perch %s: the reply's capture is damaged: %s\n", cmd, st.reason);
        perch_cli_names_free(n);
        return NULL;
    }
    return n;
}

void perch_cli_names_free(perch_cli_names *n)
{
    if (n == NULL)
        return;
    for (size_t i = 0; i < n->nprocs; i++)
        free((char *)n->procs[i].image_name);
    for (size_t i = 0; i < n->nthreads; i++)
        free((char *)n->threads[i].name);
    for (size_t i = 0; i < n->nmods; i++)
        free((char *)n->mods[i].path);
    for (size_t i = 0; i < n->nstacks; i++)
        free((uint64_t *)n->stacks[i].frames);
    free(n->procs);
    free(n->threads);
    free(n->mods);
    free(n->stacks);
    free(n);
}

const perch_process_rec *perch_cli_process(const perch_cli_names *n, uint64_t key)
{
    for (size_t i = n->nprocs; i-- > 0;)
        if (n->procs[i].key == key)
            return &n->procs[i];
    return NULL;
}

const perch_thread_rec *perch_cli_thread(const perch_cli_names *n, uint64_t key)
{
    for (size_t i = n->nthreads; i-- > 0;)
        if (n->threads[i].key == key)
            return &n->threads[i];
    return NULL;
}

const perch_stack_rec *perch_cli_stack(const perch_cli_names *n, uint32_t id)
{
    for (size_t i = 0; i < n->nstacks; i++)
        if (n->stacks[i].id == id)
            return &n->stacks[i];
    return NULL;
}

void perch_cli_frame(const perch_cli_names *n, uint64_t process_key, uint64_t addr, char *buf,
                     size_t len)
{
    for (size_t i = 0; i < n->nmods; i++) {
        const perch_module_rec *m = &n->mods[i];
        if ((m->process_key == process_key || m->process_key == 0) && addr >= m->base &&
            addr - m->base < m->size) {
            snprintf(buf, len, "%s+0x%" PRIx64, m->path, addr - m->base);
            return;
        }
    }
    snprintf(buf, len, "0x%" PRIx64, addr);
}

uint64_t perch_cli_perf_freq(const perch_cli_names *n)
{
    return n->info.perf_freq;
}
