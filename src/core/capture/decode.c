/*
 * The capture reader's record decoders: the exact mirror of encode.c, one function per record
 * type (version 1 entity records here too; version 2 ones are in dec_entity.c), each reading one
 * record through the bounds-checked cursor, checking every value against its field's range, and
 * handing the record to the sink. A value out of range or a string id not in the table makes the
 * chunk malformed (PERCH_EFORMAT at that byte); nothing is ever read outside the chunk's payload.
 * So does a record that breaks a rule across records (docs/capture-format.md 2, "Rules across
 * records"), at its first byte, with the rule in r->rule (perch__cap_broke).
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "capture/reader.h"
#include "capture/rules.h"
#include "perch/error.h"

int perch__cap_broke(perch__cap_reader *r, perch__cap_cursor *c, size_t at, const char *fmt, ...)
{
    va_list ap;
    if (c->error)
        return c->error;
    va_start(ap, fmt);
    vsnprintf(r->rule, sizeof r->rule, fmt, ap);
    va_end(ap);
    c->pos = at;
    cap_fail(c, PERCH_EFORMAT);
    return c->error;
}

static const char *get_str(perch__cap_reader *r, perch__cap_cursor *c)
{
    uint64_t id = cap_get_varint(c);
    const char *s = id ? perch__strtab_get(&r->strings, id) : NULL;
    if (id && !s) {
        cap_fail(c, PERCH_EFORMAT);
        return "";
    }
    return s;
}

/* Hands a decoded record to the sink unless the cursor failed. */
#define DELIVER(r, c, cb, rec)                                                                     \
    do {                                                                                           \
        if ((c)->error)                                                                            \
            return (c)->error;                                                                     \
        if ((r)->sink->cb) {                                                                       \
            int err_ = (r)->sink->cb((r)->sink->ctx, (rec));                                       \
            if (err_)                                                                              \
                return (r)->sink_error = err_;                                                     \
        }                                                                                          \
        return 0;                                                                                  \
    } while (0)

/* One trace_info record per capture: no producer sends a second one (the model sends it
 * when it starts, a scope once per capture it writes), so a second is damage, and which of
 * the two describes the trace is unknown. */
static int dec_trace_info(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st)
{
    perch_trace_info t;
    (void)st;
    if (r->info_off)
        return perch__cap_broke(r, c, c->pos,
                                "a second trace_info record (the first is in the chunk at "
                                "offset %" PRIu64 ")",
                                r->info_off);
    t.source = get_str(r, c);
    t.os_build = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    t.cpu_count = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    t.pointer_size = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    t.clock_type = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    t.perf_freq = cap_get_varint(c);
    t.start_filetime = cap_get_varint(c);
    t.end_filetime = cap_get_varint(c);
    t.start_raw = cap_get_varint(c);
    t.events_lost = cap_get_varint(c);
    t.buffers_lost = cap_get_varint(c);
    t.session_config = get_str(r, c);
    if (!c->error)
        r->info_off = r->chunk_off;
    DELIVER(r, c, trace_info, &t);
}

static int dec_process(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st)
{
    perch_process_rec p;
    p.key = st->key = cap_get_delta(c, st->key);
    p.pid = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    p.parent_pid = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    p.session_id = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    int64_t exit_status = cap_unzigzag(cap_get_varint(c));
    if (exit_status < INT32_MIN || exit_status > INT32_MAX)
        cap_fail(c, PERCH_EFORMAT);
    p.exit_status = (int32_t)exit_status;
    p.flags = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    p.start_ts = cap_get_varint(c);
    p.end_ts = cap_get_varint(c);
    p.image_name = get_str(r, c);
    p.command_line = get_str(r, c);
    DELIVER(r, c, process, &p);
}

static int dec_thread(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st)
{
    perch_thread_rec t;
    t.key = st->key = cap_get_delta(c, st->key);
    t.process_key = st->id = cap_get_delta(c, st->id);
    t.tid = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    t.pid = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    t.flags = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    t.start_ts = cap_get_varint(c);
    t.end_ts = cap_get_varint(c);
    t.name = get_str(r, c);
    DELIVER(r, c, thread, &t);
}

static void get_guid(perch__cap_cursor *c, perch_guid *g)
{
    const uint8_t *p = cap_get_bytes(c, 16);
    memset(g, 0, sizeof *g);
    if (!p)
        return;
    g->data1 = (uint32_t)cap_load_le(p, 4);
    g->data2 = (uint16_t)cap_load_le(p + 4, 2);
    g->data3 = (uint16_t)cap_load_le(p + 6, 2);
    memcpy(g->data4, p + 8, 8);
}

static int dec_module(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st)
{
    perch_module_rec m;
    m.key = st->key = cap_get_delta(c, st->key);
    m.process_key = cap_get_varint(c);
    m.pid = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    m.base = cap_get_varint(c);
    m.size = cap_get_varint(c);
    m.load_ts = cap_get_varint(c);
    m.unload_ts = cap_get_varint(c);
    m.checksum = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    m.time_date_stamp = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    m.path = get_str(r, c);
    uint8_t flags = cap_get_u8(c);
    m.has_pdb = (flags & MOD_HAS_PDB) != 0;
    if (flags & MOD_GUID)
        get_guid(c, &m.pdb_guid);
    else
        memset(&m.pdb_guid, 0, sizeof m.pdb_guid);
    m.pdb_age = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    m.pdb_name = get_str(r, c);
    DELIVER(r, c, module, &m);
}

static int dec_counters(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st)
{
    perch_counters_rec k;
    (void)st;
    k.count = (uint32_t)cap_get_bounded(c, PERCH_CAPTURE_MAX_COUNTERS);
    for (uint32_t i = 0; i < k.count && !c->error; i++)
        r->names[i] = get_str(r, c);
    k.names = r->names;
    DELIVER(r, c, counters, &k);
}

/* A stack's id must be the next one (ids dense from 1: records.h), so that a sample's id names
 * one stack, known before the sample (rules.c). */
static void check_stack_id(perch__cap_reader *r, perch__cap_cursor *c, size_t at, uint64_t id)
{
    char why[CAP_RULE_REASON];
    if (!r->stacks_elsewhere && perch__cap_rule_stack(r->stacks, id, why) != CAP_RULE_OK)
        perch__cap_broke(r, c, at, "%s", why);
}

int perch__cap_dec_stack(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st)
{
    perch_stack_rec s;
    uint32_t shared = 0, ref_len = 0;
    const uint64_t *ref_frames = NULL;
    size_t at = c->pos;
    uint64_t id = cap_get_delta(c, st->id + 1);
    s.id = (uint32_t)id;
    st->id = id;
    s.frame_count = (uint32_t)cap_get_bounded(c, PERCH_CAPTURE_MAX_FRAMES);
    s.kernel_frames = (uint32_t)cap_get_bounded(c, s.frame_count);
    unsigned ref = (unsigned)cap_get_bounded(c, r->ring.count);
    if (ref) {
        ref_frames = perch__cap_ring_get(&r->ring, ref - 1, &ref_len);
        shared = (uint32_t)cap_get_bounded(c, ref_len < s.frame_count ? ref_len : s.frame_count);
    }
    if (id > UINT32_MAX)
        cap_fail(c, PERCH_EFORMAT);
    check_stack_id(r, c, at, id);
    if (c->error)
        return c->error;
    r->stacks = id;
    int err = perch__cap_reader_frames(r, s.frame_count);
    if (err)
        return r->limit_error = err;
    uint32_t lead = s.frame_count - shared;
    for (uint32_t i = 0; i < lead; i++)
        r->frames[i] = cap_get_delta(c, i ? r->frames[i - 1] : st->addr);
    if (shared)
        memcpy(r->frames + lead, ref_frames + ref_len - shared, shared * sizeof *r->frames);
    if (s.frame_count)
        st->addr = r->frames[0];
    perch__cap_ring_push(&r->ring, r->frames, s.frame_count);
    s.frames = r->frames;
    DELIVER(r, c, stack, &s);
}

/* The thread of a sample or slice: from the MRU (mask bits) or explicit after the cpu/ts. */
static perch__cap_thread_slot *get_thread(perch__cap_cursor *c, perch__cap_state *st, uint8_t mask)
{
    unsigned idx = mask & M_THREAD;
    if (idx) {
        if (idx > st->mru.count) {
            cap_fail(c, PERCH_EFORMAT);
            return NULL;
        }
        return perch__cap_mru_promote(&st->mru, idx - 1);
    }
    perch__cap_thread_slot init = {0, 0, st->cpu, st->addr, 0, 0};
    init.key = st->key = cap_get_delta(c, st->key);
    init.tid = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    return c->error ? NULL : perch__cap_mru_insert(&st->mru, &init);
}

static void get_sample_attrs(perch__cap_cursor *c, perch__cap_state *st, uint8_t mask)
{
    if (mask & S_ATTR_SAME)
        return;
    st->attr_kind = cap_get_u8(c);
    st->attr_flags = cap_get_u8(c);
    st->attr_source = (uint16_t)cap_get_bounded(c, UINT16_MAX);
    st->attr_count = (uint32_t)cap_get_bounded(c, UINT32_MAX);
}

static void check_sample_stack(perch__cap_reader *r, perch__cap_cursor *c, size_t at, uint64_t id)
{
    char why[CAP_RULE_REASON];
    if (perch__cap_rule_sample(r->stacks, id, why) != CAP_RULE_OK)
        perch__cap_broke(r, c, at, "%s", why);
}

int perch__cap_dec_sample(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st)
{
    perch_sample_rec s;
    size_t at = c->pos;
    uint8_t mask = cap_get_u8(c);
    /* A new thread's slot starts from the previous cpu, so read the cpu before inserting. */
    unsigned idx = mask & M_THREAD;
    uint16_t same_cpu =
        idx && idx <= st->mru.count ? perch__cap_mru_at(&st->mru, idx - 1)->cpu : st->cpu;
    s.cpu = mask & S_CPU_SAME ? same_cpu : (uint16_t)cap_get_bounded(c, UINT16_MAX);
    s.ts = cap_get_delta(c, st->ts);
    perch__cap_thread_slot *t = get_thread(c, st, mask);
    if (!t)
        return c->error;
    s.thread_key = t->key;
    s.tid = t->tid;
    get_sample_attrs(c, st, mask);
    s.kind = st->attr_kind;
    s.flags = st->attr_flags;
    s.profile_source = st->attr_source;
    s.count = st->attr_count;
    s.ip = t->ip = cap_get_delta(c, t->ip);
    s.module_key = t->module_key =
        mask & S_MODULE_SAME ? t->module_key : cap_get_delta(c, t->module_key);
    uint64_t stack = mask & S_STACK_SAME ? t->stack_id : cap_get_delta(c, t->stack_id);
    if (stack > UINT32_MAX)
        cap_fail(c, PERCH_EFORMAT);
    else if (stack > perch__cap_stack_limit(r))
        check_sample_stack(r, c, at, stack);
    s.stack_id = t->stack_id = (uint32_t)stack;
    t->cpu = st->cpu = s.cpu;
    st->ts = s.ts;
    st->addr = s.ip;
    DELIVER(r, c, sample, &s);
}

static void get_slice_attrs(perch__cap_cursor *c, perch__cap_state *st, uint8_t mask)
{
    if (mask & L_ATTR_SAME)
        return;
    st->s_flags = (uint16_t)cap_get_bounded(c, UINT16_MAX);
    st->s_prio = (int8_t)cap_get_u8(c);
    st->s_wait_reason = (int8_t)cap_get_u8(c);
    st->s_wait_mode = (int8_t)cap_get_u8(c);
    st->s_state = (int8_t)cap_get_u8(c);
}

int perch__cap_dec_slice(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st)
{
    perch_slice_rec s;
    memset(s.pmc_delta, 0, sizeof s.pmc_delta);
    uint8_t mask = cap_get_u8(c);
    s.cpu = mask & L_CPU_SAME ? st->cpu : (uint16_t)cap_get_bounded(c, UINT16_MAX);
    s.start_ts = cap_get_delta(c, st->ts);
    s.end_ts = cap_get_delta(c, s.start_ts);
    s.ready_ts = mask & L_READY_ZERO ? 0 : s.start_ts - (uint64_t)cap_unzigzag(cap_get_varint(c));
    perch__cap_thread_slot *t = get_thread(c, st, mask);
    if (!t)
        return c->error;
    s.thread_key = t->key;
    s.tid = t->tid;
    get_slice_attrs(c, st, mask);
    s.flags = st->s_flags;
    s.priority = st->s_prio;
    s.wait_reason = st->s_wait_reason;
    s.wait_mode = st->s_wait_mode;
    s.state = st->s_state;
    s.pmc_count = mask & L_PMC ? (uint8_t)cap_get_bounded(c, PERCH_MAX_PMC) : 0;
    if ((mask & L_PMC) && !s.pmc_count)
        cap_fail(c, PERCH_EFORMAT);
    for (unsigned i = 0; i < s.pmc_count; i++)
        s.pmc_delta[i] = cap_get_varint(c);
    st->cpu = s.cpu;
    st->ts = s.start_ts;
    DELIVER(r, c, slice, &s);
}

int perch__cap_dec_lbr(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st)
{
    perch_lbr_rec l;
    uint64_t prev = st->addr;
    l.thread_key = st->key = cap_get_delta(c, st->key);
    l.tid = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    l.pid = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    l.ts = st->ts = cap_get_delta(c, st->ts);
    l.filters = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    l.branch_count = (uint32_t)cap_get_bounded(c, PERCH_CAPTURE_MAX_BRANCHES);
    int err = c->error ? 0 : perch__cap_reader_branches(r, l.branch_count);
    if (err)
        return r->limit_error = err;
    for (uint32_t i = 0; i < l.branch_count && !c->error; i++) {
        r->from[i] = cap_get_delta(c, prev);
        r->to[i] = prev = cap_get_delta(c, r->from[i]);
    }
    if (l.branch_count && !c->error)
        st->addr = r->from[0];
    l.from = r->from;
    l.to = r->to;
    DELIVER(r, c, lbr, &l);
}

/* Ledger (which 0) and stat (1) names: each once, UTF-8, within the caps (rules.c). A NULL
 * name is "" (as consumers print it). */
static int check_name(perch__cap_reader *r, perch__cap_cursor *c, size_t at, unsigned which,
                      const char *name)
{
    perch__strtab *t = &r->named[which];
    const char *s = name ? name : "";
    size_t len = strlen(s);
    uint32_t id;
    char why[CAP_RULE_REASON];
    if (c->error)
        return c->error;
    switch (perch__cap_rule_name(t, which, s, len, why)) {
    case CAP_RULE_OK:
        break;
    case CAP_RULE_LIMIT:
        memcpy(r->rule, why, sizeof r->rule);
        c->pos = at;
        return r->limit_error = PERCH_ELIMIT;
    default:
        return perch__cap_broke(r, c, at, "%s", why);
    }
    int err = perch__strtab_add(t, s, len, true, &id);
    return err ? (r->limit_error = err) : 0;
}

static int dec_ledger(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st)
{
    perch_ledger_rec l;
    size_t at = c->pos;
    (void)st;
    l.reason = get_str(r, c);
    l.count = cap_get_varint(c);
    int err = check_name(r, c, at, 0, l.reason);
    if (err)
        return err;
    DELIVER(r, c, ledger, &l);
}

static int dec_stat(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st)
{
    perch_stat_rec s;
    size_t at = c->pos;
    (void)st;
    s.name = get_str(r, c);
    s.value = cap_get_varint(c);
    int err = check_name(r, c, at, 1, s.name);
    if (err)
        return err;
    DELIVER(r, c, stat, &s);
}

static uint32_t get_rva(perch__cap_cursor *c, uint64_t base)
{
    uint64_t v = cap_get_delta(c, base);
    if (v > UINT32_MAX)
        cap_fail(c, PERCH_EFORMAT);
    return (uint32_t)v;
}

static int dec_symbol(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st)
{
    perch_symbol_rec s;
    s.module_key = st->key = cap_get_delta(c, st->key);
    s.span_rva = get_rva(c, st->addr);
    s.span_size = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    s.func_rva = get_rva(c, s.span_rva);
    s.func_size = (uint32_t)cap_get_bounded(c, UINT32_MAX);
    s.source = cap_get_u8(c);
    s.name = get_str(r, c);
    st->addr = s.span_rva;
    if (s.name == NULL)
        s.name = "";
    DELIVER(r, c, symbol, &s);
}

static int dec_string(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st)
{
    uint32_t id;
    (void)st;
    size_t len = (size_t)cap_get_bounded(c, PERCH_CAPTURE_MAX_STRING);
    const uint8_t *p = cap_get_bytes(c, len);
    if (!p)
        return c->error;
    int err = perch__strtab_add(&r->strings, (const char *)p, len, false, &id);
    if (err)
        r->limit_error = err;
    return err;
}

typedef int (*decode_fn)(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st);

static const decode_fn decoders[PERCH_CHUNK_TYPE_LIMIT] = {
    [PERCH_CHUNK_TRACE_INFO] = dec_trace_info,
    [PERCH_CHUNK_STRINGS] = dec_string,
    [PERCH_CHUNK_PROCESS] = dec_process,
    [PERCH_CHUNK_THREAD] = dec_thread,
    [PERCH_CHUNK_MODULE] = dec_module,
    [PERCH_CHUNK_COUNTERS] = dec_counters,
    [PERCH_CHUNK_STACK] = perch__cap_dec_stack,
    [PERCH_CHUNK_SLICE] = perch__cap_dec_slice,
    [PERCH_CHUNK_SAMPLE] = perch__cap_dec_sample,
    [PERCH_CHUNK_LBR] = perch__cap_dec_lbr,
    [PERCH_CHUNK_LEDGER] = dec_ledger,
    [PERCH_CHUNK_STAT] = dec_stat,
    [PERCH_CHUNK_SYMBOL] = dec_symbol,
};

/* The fast loops of read_fast.c: the same records, errors and offsets as the checked decoder. */
typedef int (*chunk_fn)(perch__cap_reader *r, perch__cap_cursor *c, uint64_t count);

static const chunk_fn fast_loops[PERCH_CHUNK_TYPE_LIMIT] = {
    [PERCH_CHUNK_STACK] = perch__cap_fast_stacks,
    [PERCH_CHUNK_SLICE] = perch__cap_fast_slices,
    [PERCH_CHUNK_SAMPLE] = perch__cap_fast_samples,
    [PERCH_CHUNK_LBR] = perch__cap_fast_lbrs,
};

/* The strings chunk prefix: flags (reset) and the id its first string gets. */
static int strings_prefix(perch__cap_reader *r, perch__cap_cursor *c)
{
    uint64_t flags = cap_get_varint(c);
    uint64_t first = cap_get_varint(c);
    if (c->error)
        return c->error;
    if (flags & CAP_STRINGS_RESET)
        perch__strtab_clear(&r->strings);
    if (first != (uint64_t)r->strings.count + 1) {
        cap_fail(c, PERCH_EFORMAT);
        return c->error;
    }
    return 0;
}

static int dec_process_v2(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st)
{
    return perch__cap_dec_entity(r, c, st, CAP_ENT_PROCESS);
}

static int dec_thread_v2(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st)
{
    return perch__cap_dec_entity(r, c, st, CAP_ENT_THREAD);
}

static int dec_module_v2(perch__cap_reader *r, perch__cap_cursor *c, perch__cap_state *st)
{
    return perch__cap_dec_entity(r, c, st, CAP_ENT_MODULE);
}

/* The decoder of a chunk type in the capture's version: version 2 codes entities as updates. */
static decode_fn decoder_for(const perch__cap_reader *r, unsigned type)
{
    static const decode_fn v2[PERCH_CHUNK_TYPE_LIMIT] = {
        [PERCH_CHUNK_PROCESS] = dec_process_v2,
        [PERCH_CHUNK_THREAD] = dec_thread_v2,
        [PERCH_CHUNK_MODULE] = dec_module_v2,
    };
    return r->status->version >= 2 && v2[type] ? v2[type] : decoders[type];
}

int perch__cap_decode_chunk(perch__cap_reader *r, unsigned type, perch__cap_cursor *c)
{
    int err;
    decode_fn dec = decoder_for(r, type);
    r->records = 0;
    if (type == PERCH_CHUNK_STRINGS && (err = strings_prefix(r, c)) != 0)
        return err;
    uint64_t count = cap_get_varint(c);
    if (!c->error && count > c->len - c->pos)
        cap_fail(c, PERCH_EFORMAT); /* every record takes at least one byte */
    if (c->error)
        return c->error;
    perch__cap_state_reset(&r->state);
    perch__cap_ring_reset(&r->ring);
    if (fast_loops[type] && !r->checked_only) {
        if ((err = fast_loops[type](r, c, count)) != 0)
            return err;
    } else {
        for (uint64_t i = 0; i < count; i++) {
            if ((err = dec(r, c, &r->state)) != 0)
                return err;
            r->records++;
        }
    }
    if (c->error || c->pos != c->len) {
        cap_fail(c, PERCH_EFORMAT); /* bytes after the last record */
        return c->error;
    }
    return 0;
}
