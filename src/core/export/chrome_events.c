/*
 * The chrome export's slice and PMC-sample events (chrome_events.h): a slice as a complete
 * event ("X") with cpu, priority, wait reason, ready latency and PMC deltas in args, again on
 * its CPU's track with cpu_tracks; a PMC sample as a thread-scoped instant event ("i") named
 * by its leaf frame. Each event is written as one run of text, the bytes the writer's calls
 * for it would give (the writer's own calls only for a PMC counter name too long for its
 * cache). Times are microseconds from the trace start, exact from raw ticks, with up to 3
 * decimals (trailing zeros left out: perch__fmt_us_since).
 * Everything here reads the sealed entities only, except the PMC name (symbol lookups), so a
 * formatter on another thread can run it (chrome_async.c).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "export/chrome_events.h"
#include "perch/error.h"

#define NAME_CACHE 2048 /* entries of the PMC event name cache, a power of two */
#define NAME_TEXT  104  /* the longest name text the name cache keeps */

/* The most text a slice's event (its fast path) and a PMC sample's event may take, formatted
 * in place in the writer's buffer (perch_json_reserve). */
#define SLICE_TEXT_MAX (256 + 3 * PERCH_TIME_TEXT_MAX + PERCH_MAX_PMC * 96)
#define PMC_TEXT_MAX   (PERCH_CHROME_NAME_TEXT_MAX + 256 + PERCH_TIME_TEXT_MAX)
_Static_assert(SLICE_TEXT_MAX < PERCH_JSON_BUFFER && PMC_TEXT_MAX < PERCH_JSON_BUFFER,
               "an event's text fits the writer's buffer");

/* Appends a string literal (no byte needs escaping) to buf at len. */
#define PUT_LIT(buf, len, lit) (memcpy((buf) + (len), (lit), sizeof(lit) - 1), (len) += sizeof(lit) - 1)

struct perch__chrome_name {
    uint64_t pk, addr, module_key;
    uint8_t len; /* 0: empty */
    char text[NAME_TEXT];
};
_Static_assert(NAME_TEXT <= PERCH_CHROME_NAME_TEXT_MAX, "a cached name is copied whole");

void perch__chrome_fmt_reset(perch__chrome_fmt *f)
{
    memset(f->pmc_keys, 0, sizeof f->pmc_keys);
    memset(f->threads, 0, sizeof f->threads);
    memset(f->tracks, 0, sizeof f->tracks);
    f->names = NULL;
    f->names_cap = 0;
}

void perch__chrome_fmt_free(perch__chrome_fmt *f)
{
    perch__release(f->budget, (void **)&f->names, &f->names_cap, sizeof *f->names);
}

uint32_t perch__chrome_pid(const perch__entities *e, uint64_t thread_key)
{
    const perch__thread *t = perch__entities_thread_at(e, thread_key);
    uint32_t pid = t ? perch__thread_pid(e, t) : UINT32_MAX;
    return pid == UINT32_MAX ? PERCH_CHROME_UNKNOWN_PID : pid;
}

const perch__chrome_thread *perch__chrome_thread_fill(perch__chrome_fmt *f, perch__chrome_thread *t,
                                                      uint64_t key)
{
    const perch__thread *th = perch__entities_thread_at(f->ents, key);
    t->key = key;
    t->process_key = th ? th->process_key : 0;
    t->pid = perch__chrome_pid(f->ents, key);
    t->valid = true;
    return t;
}

static void put_lit(char *buf, size_t *len, const char *s)
{
    size_t n = strlen(s);
    memcpy(buf + *len, s, n);
    *len += n;
}

/* v in decimal at buf + *len: one below 100 without a call (an event's CPU, priority, wait
 * reason and PMC source nearly always are). */
static inline void put_u(char *buf, size_t *len, uint64_t v)
{
    if (v < 10) {
        buf[(*len)++] = (char)('0' + v);
    } else if (v < 100) {
        memcpy(buf + *len, perch__digit_pairs + 2 * v, 2);
        *len += 2;
    } else {
        *len += perch__put_uint(buf + *len, v);
    }
}

static void put_i(char *buf, size_t *len, int64_t v)
{
    if (v < 0)
        buf[(*len)++] = '-';
    put_u(buf, len, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
}

/* Renders track key's text `,"pid":pid,"tid":tid` into cache entry t. */
static void track_fill(struct perch__chrome_track *t, uint64_t key, uint32_t pid, uint32_t tid)
{
    size_t n = 0;
    memset(t->text, 0, sizeof t->text);
    PUT_LIT(t->text, n, ",\"pid\":");
    n += perch__put_uint(t->text + n, pid);
    PUT_LIT(t->text, n, ",\"tid\":");
    n += perch__put_uint(t->text + n, tid);
    t->key = key;
    t->len = (uint8_t)n;
}

/* Appends `,"pid":pid,"tid":tid` to buf at *len (which has PERCH_CHROME_TRACK_TEXT bytes of
 * room): rendered once per track, then copied at a fixed size. */
static inline void put_track(perch__chrome_fmt *f, char *buf, size_t *len, uint32_t pid,
                             uint32_t tid)
{
    uint64_t key = (uint64_t)pid << 32 | tid;
    struct perch__chrome_track *t = &f->tracks[perch__hash64(key) & (PERCH_CHROME_TRACKS - 1)];
    if (!t->len || t->key != key)
        track_fill(t, key, pid, tid);
    memcpy(buf + *len, t->text, sizeof t->text);
    *len += t->len;
}

/* A slice's end for its duration: an end before the start is a run of 0. */
static uint64_t end_of(const perch_slice_rec *r)
{
    return r->end_ts >= r->start_ts ? r->end_ts : r->start_ts;
}

/* {"name":name,"cat":"cpu","ph":"X","ts":ts,"pid":pid,"tid":tid (the object left open). */
static void event_head(perch__chrome_fmt *f, const char *name, uint64_t ts, uint32_t pid,
                       uint32_t tid)
{
    const perch_trace_info *info = &f->ents->info;
    char buf[128 + PERCH_TIME_TEXT_MAX];
    size_t len = 0;
    perch_json_begin_object(f->w);
    perch_json_key(f->w, "name");
    perch_json_string(f->w, name);
    PUT_LIT(buf, len, "\"cat\":\"cpu\",\"ph\":\"X\",\"ts\":");
    len += perch__fmt_us_since(buf + len, ts, info->start_raw, info->perf_freq);
    PUT_LIT(buf, len, ",\"pid\":");
    len += perch__put_uint(buf + len, pid);
    PUT_LIT(buf, len, ",\"tid\":");
    len += perch__put_uint(buf + len, tid);
    perch_json_raw_members(f->w, buf, len);
}

static int key_sink(void *ctx, const char *data, size_t n)
{
    struct perch__chrome_pmc_key *k = ctx;
    if (k->len + n > sizeof k->text)
        return PERCH_ELIMIT;
    memcpy(k->text + k->len, data, n);
    k->len += n;
    return 0;
}

/* The JSON key of PMC counter i: the counter's name, or "pmcI" past the named ones. */
static const char *pmc_name(const perch__chrome_fmt *f, uint32_t i, char name[16])
{
    if (i < f->pmc_name_count)
        return perch__str(&f->ents->strings, f->pmc_names[i]);
    snprintf(name, 16, "pmc%" PRIu32, i);
    return name;
}

/* The text `"name":` of PMC counter i as the writer escapes it, rendered once (fits false
 * when it is longer than the cache keeps). */
static const struct perch__chrome_pmc_key *pmc_key(perch__chrome_fmt *f, uint32_t i)
{
    struct perch__chrome_pmc_key *k = &f->pmc_keys[i];
    if (!k->done) {
        char name[16];
        perch_json w;
        k->len = 0;
        perch_json_init(&w, key_sink, k);
        perch_json_begin_object(&w); /* "{" then the key: the key's text is what follows */
        perch_json_key(&w, pmc_name(f, i, name));
        k->fits = perch_json_flush(&w) == 0 && k->len > 1;
        if (k->fits) {
            memmove(k->text, k->text + 1, k->len - 1);
            k->len--;
        }
        k->done = true;
    }
    return k;
}

/* PMC deltas from counter i on, through the writer's calls. */
static void slow_pmc(perch__chrome_fmt *f, const perch_slice_rec *r, uint32_t i)
{
    char name[16];
    for (; i < r->pmc_count && i < PERCH_MAX_PMC; i++) {
        perch_json_key(f->w, pmc_name(f, i, name));
        perch_json_uint(f->w, r->pmc_delta[i]);
    }
}

/* "dur" and "args" of a slice's complete event: {cpu, priority, wait_reason, ready_latency_us,
 * the PMC deltas under their counter names, open}. */
static void slice_args(perch__chrome_fmt *f, const perch_slice_rec *r)
{
    uint64_t freq = f->ents->info.perf_freq;
    char buf[160 + 2 * PERCH_TIME_TEXT_MAX + PERCH_MAX_PMC * 96];
    size_t len = 0;
    put_lit(buf, &len, "\"dur\":");
    len += perch__fmt_us_since(buf + len, end_of(r), r->start_ts, freq);
    perch_json_raw_members(f->w, buf, len);
    perch_json_key(f->w, "args");
    perch_json_begin_object(f->w);
    len = 0;
    put_lit(buf, &len, "\"cpu\":");
    len += perch__put_uint(buf + len, r->cpu);
    put_lit(buf, &len, ",\"priority\":");
    put_i(buf, &len, r->priority);
    if (r->wait_reason >= 0) {
        put_lit(buf, &len, ",\"wait_reason\":");
        put_i(buf, &len, r->wait_reason);
    }
    if ((r->flags & PERCH_SLICE_HAS_READY) && r->ready_ts <= r->start_ts) {
        put_lit(buf, &len, ",\"ready_latency_us\":");
        len += perch__fmt_us_since(buf + len, r->start_ts, r->ready_ts, freq);
    }
    for (uint32_t i = 0; i < r->pmc_count && i < PERCH_MAX_PMC; i++) {
        const struct perch__chrome_pmc_key *k = pmc_key(f, i);
        if (!k->fits) { /* a long name: the writer's own calls from here */
            perch_json_raw_members(f->w, buf, len);
            slow_pmc(f, r, i);
            len = 0;
            break;
        }
        buf[len++] = ',';
        memcpy(buf + len, k->text, k->len);
        len += k->len;
        len += perch__put_uint(buf + len, r->pmc_delta[i]);
    }
    if (len)
        perch_json_raw_members(f->w, buf, len);
    if (r->flags & (PERCH_SLICE_OPEN_START | PERCH_SLICE_OPEN_END)) {
        perch_json_key(f->w, "open");
        perch_json_string(f->w, (r->flags & PERCH_SLICE_OPEN_START) ? "start" : "end");
    }
    perch_json_end_object(f->w);
}

/* The "args" members of a slice after cpu and priority into buf at *len: wait reason, ready
 * latency, the PMC deltas (every key fits), open; and the two closing braces. */
static void slice_args_rest(perch__chrome_fmt *f, const perch_slice_rec *r, char *buf,
                            size_t *len)
{
    uint64_t freq = f->ents->info.perf_freq;
    size_t n = *len;
    if (r->wait_reason >= 0) {
        PUT_LIT(buf, n, ",\"wait_reason\":");
        put_i(buf, &n, r->wait_reason);
    }
    if ((r->flags & PERCH_SLICE_HAS_READY) && r->ready_ts <= r->start_ts) {
        PUT_LIT(buf, n, ",\"ready_latency_us\":");
        n += perch__fmt_us_since(buf + n, r->start_ts, r->ready_ts, freq);
    }
    for (uint32_t i = 0; i < r->pmc_count && i < PERCH_MAX_PMC; i++) {
        const struct perch__chrome_pmc_key *k = &f->pmc_keys[i];
        buf[n++] = ',';
        memcpy(buf + n, k->text, k->len);
        n += k->len;
        n += perch__put_uint(buf + n, r->pmc_delta[i]);
    }
    if (r->flags & PERCH_SLICE_OPEN_START)
        PUT_LIT(buf, n, ",\"open\":\"start\"");
    else if (r->flags & PERCH_SLICE_OPEN_END)
        PUT_LIT(buf, n, ",\"open\":\"end\"");
    PUT_LIT(buf, n, "}}");
    *len = n;
}

/* A slice's complete event on its thread's track as one run of text: the bytes event_head
 * and slice_args write through the writer's calls. false (nothing written) when a PMC
 * counter's key does not fit its cache. */
static bool slice_fast(perch__chrome_fmt *f, const perch_slice_rec *r, uint32_t pid, uint32_t tid)
{
    const perch_trace_info *info = &f->ents->info;
    char *buf;
    size_t len = 0;
    for (uint32_t i = 0; i < r->pmc_count && i < PERCH_MAX_PMC; i++)
        if (!pmc_key(f, i)->fits)
            return false;
    buf = perch_json_reserve(f->w, SLICE_TEXT_MAX);
    if (r->tid == 0)
        PUT_LIT(buf, len, "{\"name\":\"idle\",\"cat\":\"cpu\",\"ph\":\"X\",\"ts\":");
    else
        PUT_LIT(buf, len, "{\"name\":\"running\",\"cat\":\"cpu\",\"ph\":\"X\",\"ts\":");
    len += perch__fmt_us_since(buf + len, r->start_ts, info->start_raw, info->perf_freq);
    put_track(f, buf, &len, pid, tid);
    PUT_LIT(buf, len, ",\"dur\":");
    len += perch__fmt_us_since(buf + len, end_of(r), r->start_ts, info->perf_freq);
    PUT_LIT(buf, len, ",\"args\":{\"cpu\":");
    put_u(buf, &len, r->cpu);
    PUT_LIT(buf, len, ",\"priority\":");
    put_i(buf, &len, r->priority);
    slice_args_rest(f, r, buf, &len);
    perch_json_commit(f->w, len);
    return true;
}

static void slice_event(perch__chrome_fmt *f, const perch_slice_rec *r, const char *name,
                        uint32_t pid, uint32_t tid)
{
    event_head(f, name, r->start_ts, pid, tid);
    slice_args(f, r);
    perch_json_end_object(f->w);
}

int perch__chrome_slice(perch__chrome_fmt *f, const perch_slice_rec *r)
{
    char label[300];
    uint32_t pid = perch__chrome_thread_of(f, r->thread_key)->pid;
    uint32_t tid = perch__chrome_track_tid(r->tid, r->cpu);
    if (!slice_fast(f, r, pid, tid))
        slice_event(f, r, r->tid == 0 ? "idle" : "running", pid, tid);
    if (f->cpu_tracks) {
        const perch__thread *t = perch__entities_thread_at(f->ents, r->thread_key);
        if ((t ? t->tid : r->tid) == 0) /* an idle thread: its slice's CPU's */
            snprintf(label, sizeof label, "Idle (CPU %u)", (unsigned)r->cpu);
        else
            perch__thread_label(f->ents, t, r->tid, label, sizeof label);
        slice_event(f, r, label, PERCH_CHROME_CPU_PID, r->cpu);
    }
    return f->w->error;
}

/* The name text of (pk, leaf, the module key when the leaf is the sample's ip), uncached. */
static size_t leaf_name_text(perch__chrome_fmt *f, uint64_t pk, uint64_t module_key, uint64_t leaf,
                             bool is_ip, char *out)
{
    char name[PERCH_FRAME_NAME_MAX];
    const perch__module *m = perch__frame_module_cached(f->rc, f->ents, pk, module_key, leaf, is_ip);
    perch__frame_name(f->ents, m, leaf, name, sizeof name);
    return perch__json_string_text(name, strlen(name), out, PERCH_CHROME_NAME_TEXT_MAX);
}

/* The cached name text: the leaf's module, so its name, is a function of (pk, leaf, module
 * key when the leaf is the ip) once the entities are sealed. */
int perch__chrome_leaf_name(perch__chrome_fmt *f, uint64_t pk, uint64_t module_key, uint64_t leaf,
                            bool is_ip, char *out, size_t *len)
{
    uint64_t mk = is_ip ? module_key : 0;
    struct perch__chrome_name *slot;
    if (!f->names) {
        int err = perch__grow(f->budget, (void **)&f->names, &f->names_cap, NAME_CACHE,
                              sizeof *f->names);
        if (err)
            return err;
        memset(f->names, 0, f->names_cap * sizeof *f->names);
    }
    slot = &f->names[perch__hash64(leaf ^ perch__hash64(pk ^ perch__hash64(mk))) &
                     (NAME_CACHE - 1)];
    if (slot->len && slot->addr == leaf && slot->pk == pk && slot->module_key == mk) {
        memcpy(out, slot->text, sizeof slot->text); /* out has room: a fixed size copies fast */
        *len = slot->len;
        return 0;
    }
    *len = leaf_name_text(f, pk, module_key, leaf, is_ip, out);
    if (*len > 0 && *len <= NAME_TEXT) {
        slot->pk = pk;
        slot->addr = leaf;
        slot->module_key = mk;
        slot->len = (uint8_t)*len;
        memcpy(slot->text, out, *len);
    }
    return 0;
}

uint64_t perch__chrome_pmc_leaf(const perch__stacks *stacks, const perch_sample_rec *r)
{
    uint64_t leaf;
    return perch__stacks_leaf(stacks, r->stack_id, &leaf) ? leaf : r->ip;
}

int perch__chrome_pmc_name(perch__chrome_fmt *f, const perch__stacks *stacks, uint64_t pk,
                           const perch_sample_rec *r, char *out, size_t *len)
{
    uint64_t leaf = perch__chrome_pmc_leaf(stacks, r);
    return perch__chrome_leaf_name(f, pk, r->module_key, leaf, leaf == r->ip, out, len);
}

/* A PMC sample counts events, not time: an instant event named by its leaf frame, written as
 * one run of text (the bytes of the writer's calls for that object). No "s" (scope): an
 * instant event without one is the thread's (Trace Event Format, "Instant Events"), and its
 * stack id only when it has a stack. */
int perch__chrome_pmc(perch__chrome_fmt *f, const perch__chrome_pmc_ev *e)
{
    const perch_trace_info *info = &f->ents->info;
    const perch_sample_rec *r = &e->rec;
    char *text = perch_json_reserve(f->w, PMC_TEXT_MAX);
    size_t len = 0;
    PUT_LIT(text, len, "{\"name\":");
    memcpy(text + len, e->name, e->name_len);
    len += e->name_len;
    PUT_LIT(text, len, ",\"cat\":\"pmc_sample\",\"ph\":\"i\",\"ts\":");
    len += perch__fmt_us_since(text + len, r->ts, info->start_raw, info->perf_freq);
    put_track(f, text, &len, e->pid, perch__chrome_track_tid(r->tid, r->cpu));
    PUT_LIT(text, len, ",\"args\":{");
    if (r->stack_id) {
        PUT_LIT(text, len, "\"stack_id\":");
        len += perch__put_uint(text + len, r->stack_id);
        text[len++] = ',';
    }
    PUT_LIT(text, len, "\"cpu\":");
    put_u(text, &len, r->cpu);
    if (r->count > 1) {
        PUT_LIT(text, len, ",\"count\":");
        len += perch__put_uint(text + len, r->count);
    }
    PUT_LIT(text, len, ",\"pmc_source\":");
    put_u(text, &len, r->profile_source);
    PUT_LIT(text, len, "}}");
    perch_json_commit(f->w, len);
    return f->w->error;
}
