/*
 * Synthesized kernel events for the model tests (payloads built byte by byte per
 * docs/etw-layouts.md, pointer size 8 unless a builder takes one) and a recording sink that
 * keeps a copy of every record the model emits. Header-only: static inline helpers.
 */
#ifndef PERCH_TEST_MODEL_SYNTH_H
#define PERCH_TEST_MODEL_SYNTH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bytes.h"
#include "perch/decode.h"
#include "perch/error.h"
#include "perch/model.h"

/* ---- events --------------------------------------------------------------------------- */

typedef struct synth_ev {
    perch_event ev;
    uint8_t buf[4096];
} synth_ev;

static inline perch_event *synth_init(synth_ev *s, uint16_t group, uint8_t opcode,
                                      uint8_t version, uint64_t ts, uint16_t cpu, uint8_t *end)
{
    memset(&s->ev, 0, sizeof s->ev);
    const perch_guid *g = perch_kernel_group_guid(group);
    if (g != NULL)
        s->ev.provider = *g;
    s->ev.group = group;
    s->ev.hook = (uint16_t)(group << 8 | opcode);
    s->ev.opcode = opcode;
    s->ev.version = version;
    s->ev.timestamp = ts;
    s->ev.cpu = cpu;
    s->ev.pid = s->ev.tid = UINT32_MAX;
    s->ev.pointer_size = 8;
    s->ev.header_kind = PERCH_HEADER_PERFINFO;
    s->ev.flags = PERCH_EVENT_CLASSIC;
    s->ev.payload = s->buf;
    s->ev.payload_len = (uint32_t)(end - s->buf);
    return &s->ev;
}

static inline perch_event *ev_cswitch(synth_ev *s, uint64_t ts, uint16_t cpu, uint32_t new_tid,
                                      uint32_t old_tid, int8_t new_prio, int8_t wait_reason,
                                      int8_t state)
{
    uint8_t *p = s->buf;
    p = perch_test_put_u32(p, new_tid);
    p = perch_test_put_u32(p, old_tid);
    p = perch_test_put_u8(p, (uint8_t)new_prio);
    p = perch_test_put_u8(p, 9);               /* old priority */
    p = perch_test_put_u8(p, 0);               /* previous C-state */
    p = perch_test_put_u8(p, 0);               /* spare */
    p = perch_test_put_u8(p, (uint8_t)wait_reason);
    p = perch_test_put_u8(p, 1);               /* wait mode (v2): user */
    p = perch_test_put_u8(p, (uint8_t)state);
    p = perch_test_put_u8(p, 0);               /* ideal processor */
    p = perch_test_put_u32(p, 0);              /* new thread wait time */
    p = perch_test_put_u32(p, 0);              /* reserved */
    return synth_init(s, PERCH_GROUP_THREAD, 36, 2, ts, cpu, p);
}

static inline perch_event *ev_ready(synth_ev *s, uint64_t ts, uint16_t cpu, uint32_t tid)
{
    uint8_t *p = perch_test_put_u32(s->buf, tid);
    p = perch_test_put_u32(p, 0);
    return synth_init(s, PERCH_GROUP_THREAD, 50, 2, ts, cpu, p);
}

/* Thread v3 (72 bytes at P=8); name (may be NULL) as trailing UTF-16. */
static inline perch_event *ev_thread(synth_ev *s, uint8_t op, uint64_t ts, uint32_t pid,
                                     uint32_t tid, const char *name)
{
    uint8_t *p = perch_test_put_u32(s->buf, pid);
    p = perch_test_put_u32(p, tid);
    for (int i = 0; i < 7; i++)
        p = perch_test_put_u64(p, 0x1000u * (i + 1));
    p = perch_test_put_u32(p, 0);
    p = perch_test_put_u32(p, 0x08050200); /* priorities and flags */
    if (name != NULL)
        p = perch_test_put_utf16(p, name);
    return synth_init(s, PERCH_GROUP_THREAD, op, 3, ts, 0, p);
}

/* Process v4 with no SID. */
static inline perch_event *ev_process(synth_ev *s, uint8_t op, uint64_t ts, uint32_t pid,
                                      uint32_t parent, const char *name, const char *cmd)
{
    uint8_t *p = perch_test_put_u64(s->buf, 0xffffe00000001000ull + pid);
    p = perch_test_put_u32(p, pid);
    p = perch_test_put_u32(p, parent);
    p = perch_test_put_u32(p, 1);   /* session */
    p = perch_test_put_u32(p, 259); /* exit status */
    p = perch_test_put_u64(p, 0x1aa000);
    p = perch_test_put_u32(p, 0);   /* flags */
    p = perch_test_put_u32(p, 0);   /* no SID */
    size_t n = strlen(name) + 1;
    memcpy(p, name, n);
    p += n;
    p = perch_test_put_utf16(p, cmd);
    p = perch_test_put_utf16(p, "");
    p = perch_test_put_utf16(p, "");
    return synth_init(s, PERCH_GROUP_PROCESS, op, 4, ts, 0, p);
}

/* Image v2 at P=8. op: 10 Load, 2 Unload, 3 DCStart, 4 DCEnd. */
static inline perch_event *ev_image(synth_ev *s, uint8_t op, uint64_t ts, uint32_t pid,
                                    uint64_t base, uint64_t size, const char *path)
{
    uint8_t *p = perch_test_put_u64(s->buf, base);
    p = perch_test_put_u64(p, size);
    p = perch_test_put_u32(p, pid);
    p = perch_test_put_u32(p, 0x1234); /* checksum */
    p = perch_test_put_u32(p, 0x5678); /* time date stamp */
    p = perch_test_put_u32(p, 0);
    p = perch_test_put_u64(p, base);
    for (int i = 0; i < 4; i++)
        p = perch_test_put_u32(p, 0);
    p = perch_test_put_utf16(p, path);
    return synth_init(s, PERCH_GROUP_IMAGE, op, 2, ts, 0, p);
}

static inline perch_event *ev_sample(synth_ev *s, uint64_t ts, uint16_t cpu, uint64_t ip,
                                     uint32_t tid)
{
    uint8_t *p = perch_test_put_u64(s->buf, ip);
    p = perch_test_put_u32(p, tid);
    p = perch_test_put_u16(p, 1);
    p = perch_test_put_u8(p, 0x58);
    p = perch_test_put_u8(p, 0);
    return synth_init(s, PERCH_GROUP_PERFINFO, 46, 2, ts, cpu, p);
}

static inline perch_event *ev_pmc_sample(synth_ev *s, uint64_t ts, uint16_t cpu, uint64_t ip,
                                         uint32_t tid, uint16_t source)
{
    uint8_t *p = perch_test_put_u64(s->buf, ip);
    p = perch_test_put_u32(p, tid);
    p = perch_test_put_u16(p, source);
    p = perch_test_put_u16(p, 0);
    return synth_init(s, PERCH_GROUP_PERFINFO, 47, 2, ts, cpu, p);
}

/* StackWalk with frames in slots of psz bytes (psz 4 or 8). */
static inline perch_event *ev_walk(synth_ev *s, uint64_t ts, uint64_t event_ts, uint32_t tid,
                                   const uint64_t *frames, unsigned n, unsigned psz)
{
    uint8_t *p = perch_test_put_u64(s->buf, event_ts);
    p = perch_test_put_u32(p, 100);
    p = perch_test_put_u32(p, tid);
    for (unsigned i = 0; i < n; i++)
        p = perch_test_put_ptr(p, psz, frames[i]);
    perch_event *ev = synth_init(s, PERCH_GROUP_STACKWALK, 32, 2, ts, 0, p);
    ev->pointer_size = (uint8_t)psz;
    return ev;
}

/* StackKeyKernel (37) / StackKeyUser (38). */
static inline perch_event *ev_keyref(synth_ev *s, uint8_t op, uint64_t ts, uint64_t event_ts,
                                     uint32_t tid, uint64_t key)
{
    uint8_t *p = perch_test_put_u64(s->buf, event_ts);
    p = perch_test_put_u32(p, 100);
    p = perch_test_put_u32(p, tid);
    p = perch_test_put_u64(p, key);
    return synth_init(s, PERCH_GROUP_STACKWALK, op, 2, ts, 0, p);
}

/* KeyCreate (34) / KeyDelete (35) / KeyRundown (36). */
static inline perch_event *ev_keydef(synth_ev *s, uint8_t op, uint64_t ts, uint64_t key,
                                     const uint64_t *frames, unsigned n)
{
    uint8_t *p = perch_test_put_u64(s->buf, key);
    for (unsigned i = 0; i < n; i++)
        p = perch_test_put_u64(p, frames[i]);
    return synth_init(s, PERCH_GROUP_STACKWALK, op, 2, ts, 0, p);
}

/* LBR at P=8: 24-byte header then {from, to, reserved} entries. */
static inline perch_event *ev_lbr(synth_ev *s, uint64_t ts, uint32_t pid, uint32_t tid,
                                  const uint64_t *from, const uint64_t *to, unsigned n)
{
    uint8_t *p = perch_test_put_u64(s->buf, ts);
    p = perch_test_put_u32(p, pid);
    p = perch_test_put_u32(p, tid);
    p = perch_test_put_u32(p, 0x10);
    p = perch_test_put_u32(p, 0);
    for (unsigned i = 0; i < n; i++) {
        p = perch_test_put_u64(p, from[i]);
        p = perch_test_put_u64(p, to[i]);
        p = perch_test_put_u64(p, 0);
    }
    return synth_init(s, PERCH_GROUP_SPARE1, 32, 2, ts, 0, p);
}

/* PmcCounterConfig (PerfInfo 48): u32 count, then NUL-terminated UTF-16 names. */
static inline perch_event *ev_pmc_config(synth_ev *s, uint64_t ts, const char *const *names,
                                         unsigned n)
{
    uint8_t *p = perch_test_put_u32(s->buf, n);
    for (unsigned i = 0; i < n; i++)
        p = perch_test_put_utf16(p, names[i]);
    return synth_init(s, PERCH_GROUP_PERFINFO, 48, 2, ts, 0, p);
}

/* KernelTraceControl DbgID_RSDS (opcode 36). */
static inline perch_event *ev_rsds(synth_ev *s, uint64_t ts, uint32_t pid, uint64_t base,
                                   uint8_t guid_byte, uint32_t age, const char *pdb)
{
    uint8_t *p = perch_test_put_u64(s->buf, base);
    p = perch_test_put_u32(p, pid);
    for (int i = 0; i < 16; i++)
        p = perch_test_put_u8(p, (uint8_t)(guid_byte + i));
    p = perch_test_put_u32(p, age);
    size_t n = strlen(pdb) + 1;
    memcpy(p, pdb, n);
    p += n;
    perch_event *ev = synth_init(s, PERCH_GROUP_NONE, 36, 2, ts, 0, p);
    ev->provider = perch_kernel_trace_control_guid;
    ev->hook = 0;
    ev->header_kind = PERCH_HEADER_FULL;
    return ev;
}

/* ---- recording sink ---------------------------------------------------------------------- */

#define REC_MAX 256

typedef struct rec_thread {
    perch_thread_rec r;
    char name[64];
} rec_thread;

typedef struct rec_process {
    perch_process_rec r;
    char name[64], cmd[128];
} rec_process;

typedef struct rec_module {
    perch_module_rec r;
    char path[128], pdb[64];
} rec_module;

typedef struct rec_stack {
    perch_stack_rec r;
    uint64_t frames[64];
} rec_stack;

typedef struct rec_named {
    char name[64];
    uint64_t v;
} rec_named;

typedef struct recorder {
    int order; /* sequence number of the last callback */
    int info_calls, finish_calls;
    perch_trace_info info;
    rec_thread threads[REC_MAX];
    rec_process procs[REC_MAX];
    rec_module mods[REC_MAX];
    rec_stack stacks[REC_MAX];
    int stack_order[REC_MAX];
    perch_slice_rec slices[REC_MAX];
    perch_sample_rec samples[REC_MAX];
    int sample_order[REC_MAX];
    perch_lbr_rec lbrs[8];
    uint64_t lbr_from[8][16], lbr_to[8][16];
    rec_named ledger[REC_MAX], stats[REC_MAX];
    int nthreads, nprocs, nmods, nstacks, nslices, nsamples, nlbrs, nledger, nstats;
    int upserts;      /* entity records that replaced an earlier record of the same key */
    int unknown_refs; /* records naming a thread/process/module key not yet received */
    int fail_sample; /* return this from the sample callback when non-zero */
    char counter_names[PERCH_MAX_PMC][32];
    int ncounters, counters_calls;
} recorder;

static inline int rec_info(void *c, const perch_trace_info *i)
{
    recorder *r = c;
    r->info = *i;
    r->info_calls++;
    r->order++;
    return 0;
}
/* Entity records are upserts (records.h): a record replaces the earlier one of its key. Each
 * element's first field is its record, whose first field is the key. */
static inline int rec_slot(const void *arr, size_t stride, int *n, int *upserts, uint64_t key)
{
    for (int i = 0; i < *n && i < REC_MAX; i++) {
        uint64_t k;
        memcpy(&k, (const char *)arr + (size_t)i * stride, sizeof k);
        if (k == key) {
            (*upserts)++;
            return i;
        }
    }
    return (*n)++ % REC_MAX;
}
#define REC_SLOT(r, arr, n, k)                                                                 \
    (&(r)->arr[rec_slot((r)->arr, sizeof (r)->arr[0], &(r)->n, &(r)->upserts, (k))])
static inline bool rec_known(const recorder *r, int kind, uint64_t key)
{
    if (key == 0)
        return true;
    for (int i = 0; i < REC_MAX; i++)
        if ((kind == 0 && i < r->nthreads && r->threads[i].r.key == key) ||
            (kind == 1 && i < r->nprocs && r->procs[i].r.key == key) ||
            (kind == 2 && i < r->nmods && r->mods[i].r.key == key))
            return true;
    return false;
}
static inline int rec_thread_cb(void *c, const perch_thread_rec *t)
{
    recorder *r = c;
    r->unknown_refs += !rec_known(r, 1, t->process_key);
    rec_thread *o = REC_SLOT(r, threads, nthreads, t->key);
    o->r = *t;
    snprintf(o->name, sizeof o->name, "%s", t->name);
    o->r.name = o->name;
    r->order++;
    return 0;
}
static inline int rec_process_cb(void *c, const perch_process_rec *p)
{
    recorder *r = c;
    rec_process *o = REC_SLOT(r, procs, nprocs, p->key);
    o->r = *p;
    snprintf(o->name, sizeof o->name, "%s", p->image_name);
    snprintf(o->cmd, sizeof o->cmd, "%s", p->command_line);
    o->r.image_name = o->name;
    o->r.command_line = o->cmd;
    r->order++;
    return 0;
}
static inline int rec_module_cb(void *c, const perch_module_rec *m)
{
    recorder *r = c;
    r->unknown_refs += !rec_known(r, 1, m->process_key);
    rec_module *o = REC_SLOT(r, mods, nmods, m->key);
    o->r = *m;
    snprintf(o->path, sizeof o->path, "%s", m->path);
    snprintf(o->pdb, sizeof o->pdb, "%s", m->pdb_name);
    o->r.path = o->path;
    o->r.pdb_name = o->pdb;
    r->order++;
    return 0;
}
static inline int rec_stack_cb(void *c, const perch_stack_rec *s)
{
    recorder *r = c;
    int i = r->nstacks++ % REC_MAX;
    rec_stack *o = &r->stacks[i];
    o->r = *s;
    memcpy(o->frames, s->frames, sizeof(uint64_t) * (s->frame_count < 64 ? s->frame_count : 64));
    o->r.frames = o->frames;
    r->stack_order[i] = ++r->order;
    return 0;
}
static inline int rec_slice_cb(void *c, const perch_slice_rec *s)
{
    recorder *r = c;
    r->unknown_refs += !rec_known(r, 0, s->thread_key);
    r->slices[r->nslices++ % REC_MAX] = *s;
    r->order++;
    return 0;
}
static inline int rec_sample_cb(void *c, const perch_sample_rec *s)
{
    recorder *r = c;
    if (r->fail_sample)
        return r->fail_sample;
    r->unknown_refs += !rec_known(r, 0, s->thread_key) + !rec_known(r, 2, s->module_key);
    int i = r->nsamples++ % REC_MAX;
    r->samples[i] = *s;
    r->sample_order[i] = ++r->order;
    return 0;
}
static inline int rec_lbr_cb(void *c, const perch_lbr_rec *l)
{
    recorder *r = c;
    int i = r->nlbrs++ % 8;
    r->lbrs[i] = *l;
    for (uint32_t k = 0; k < l->branch_count && k < 16; k++) {
        r->lbr_from[i][k] = l->from[k];
        r->lbr_to[i][k] = l->to[k];
    }
    r->order++;
    return 0;
}
static inline int rec_ledger_cb(void *c, const perch_ledger_rec *l)
{
    recorder *r = c;
    rec_named *o = &r->ledger[r->nledger++ % REC_MAX];
    snprintf(o->name, sizeof o->name, "%s", l->reason);
    o->v = l->count;
    r->order++;
    return 0;
}
static inline int rec_stat_cb(void *c, const perch_stat_rec *s)
{
    recorder *r = c;
    rec_named *o = &r->stats[r->nstats++ % REC_MAX];
    snprintf(o->name, sizeof o->name, "%s", s->name);
    o->v = s->value;
    r->order++;
    return 0;
}
static inline int rec_counters_cb(void *c, const perch_counters_rec *k)
{
    recorder *r = c;
    r->counters_calls++;
    r->ncounters = (int)k->count;
    for (uint32_t i = 0; i < k->count && i < PERCH_MAX_PMC; i++)
        snprintf(r->counter_names[i], sizeof r->counter_names[i], "%s", k->names[i]);
    r->order++;
    return 0;
}
static inline int rec_finish_cb(void *c)
{
    ((recorder *)c)->finish_calls++;
    return 0;
}

static inline perch_sink recorder_sink(recorder *r)
{
    perch_sink s = {r,
                    rec_info,
                    rec_process_cb,
                    rec_thread_cb,
                    rec_module_cb,
                    rec_counters_cb,
                    rec_stack_cb,
                    rec_slice_cb,
                    rec_sample_cb,
                    rec_lbr_cb,
                    rec_ledger_cb,
                    rec_stat_cb,
                    rec_finish_cb,
                    NULL,
                    false,
                    false};
    return s;
}

/* The value of a ledger reason or statistic, 0 when absent. */
static inline uint64_t rec_named_get(const rec_named *v, int n, const char *name)
{
    for (int i = 0; i < n && i < REC_MAX; i++)
        if (strcmp(v[i].name, name) == 0)
            return v[i].v;
    return 0;
}
#define LEDGER(r, name) rec_named_get((r)->ledger, (r)->nledger, name)
#define STAT(r, name) rec_named_get((r)->stats, (r)->nstats, name)

/* A model on a recorder with the tests' trace info and opts (may be NULL). */
static inline perch_model *new_model_opts(recorder *r, perch_sink *sink,
                                          const perch_model_options *opts)
{
    perch_trace_info info;
    perch_model *m = NULL;
    memset(r, 0, sizeof *r);
    memset(&info, 0, sizeof info);
    info.source = "synth";
    info.cpu_count = 4;
    info.pointer_size = 8;
    info.clock_type = 1;
    info.perf_freq = 10000000;
    info.events_lost = 3;
    *sink = recorder_sink(r);
    if (perch_model_create(sink, &info, opts, &m) != 0)
        return NULL;
    return m;
}

static inline perch_model *new_model(recorder *r, perch_sink *sink)
{
    return new_model_opts(r, sink, NULL);
}

static inline const rec_thread *find_thread(const recorder *r, uint64_t key)
{
    for (int i = 0; i < r->nthreads && i < REC_MAX; i++)
        if (r->threads[i].r.key == key)
            return &r->threads[i];
    return NULL;
}

static inline const rec_stack *find_stack(const recorder *r, uint32_t id)
{
    for (int i = 0; i < r->nstacks && i < REC_MAX; i++)
        if (r->stacks[i].r.id == id)
            return &r->stacks[i];
    return NULL;
}

#endif
