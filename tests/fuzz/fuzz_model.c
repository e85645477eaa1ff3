/*
 * Fuzz target for the model and the report: the input is a sequence of records, each a 8-byte
 * header {u8 group selector, u8 opcode, u8 version | 0x80 for pointer size 4, u8 cpu,
 * u16 timestamp delta, u16 payload length} and its payload. Records are fed to a model whose
 * sink is a report; the report is then written as JSON and as text into a null writer. Small
 * caps (pending samples) make the bounded paths reachable.
 *
 * The same records are also fed to a second model and report with the payload of every record
 * perch_model_reads_payload says the model does not read dropped (what the import's reader
 * thread hands the model): the feeds must fail alike and the two reports' JSON must be the
 * same byte for byte, or the target aborts.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perch/decode.h"
#include "perch/json.h"
#include "perch/model.h"
#include "perch/report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint16_t groups[] = {PERCH_GROUP_THREAD,    PERCH_GROUP_PERFINFO,
                                  PERCH_GROUP_STACKWALK, PERCH_GROUP_IMAGE,
                                  PERCH_GROUP_PROCESS,   PERCH_GROUP_SPARE1,
                                  PERCH_GROUP_NONE,      PERCH_GROUP_HEADER};

/* A report's JSON, kept to compare (failed: an allocation or the run failed, no comparison). */
struct text {
    char *p;
    size_t len, cap;
    bool failed;
};

static int keep_json(void *ctx, const char *d, size_t n)
{
    struct text *t = ctx;
    if (t->failed)
        return 0;
    if (t->len + n > t->cap) {
        size_t cap = (t->len + n) * 2;
        char *p = realloc(t->p, cap);
        if (p == NULL) {
            t->failed = true;
            return 0;
        }
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->len, d, n);
    t->len += n;
    return 0;
}

/* Feeds the records; with shed, a record the model does not read goes without its payload.
 * Returns the first feed error, or 0. */
static int feed_all(perch_model *m, const uint8_t *data, size_t size, bool shed)
{
    perch_event ev;
    uint64_t ts = 1000;
    size_t off = 0;
    while (off + 8 <= size) {
        const uint8_t *h = data + off;
        uint16_t len = (uint16_t)(h[6] | h[7] << 8);
        if (len > size - off - 8)
            len = (uint16_t)(size - off - 8);
        memset(&ev, 0, sizeof ev);
        ev.group = groups[h[0] % (sizeof groups / sizeof groups[0])];
        const perch_guid *g = perch_kernel_group_guid(ev.group);
        if (g != NULL)
            ev.provider = *g;
        else if (ev.group == PERCH_GROUP_NONE)
            ev.provider = perch_kernel_trace_control_guid;
        ev.opcode = h[1];
        ev.version = h[2] & 0x7f;
        ev.pointer_size = (h[2] & 0x80) ? 4 : 8;
        ev.cpu = h[3];
        ts += (uint64_t)(h[4] | h[5] << 8);
        ev.timestamp = ts;
        ev.pid = ev.tid = UINT32_MAX;
        ev.payload = h + 8;
        ev.payload_len = len;
        ev.pmc_count = (uint8_t)(h[1] & 3);
        for (unsigned i = 0; i < ev.pmc_count; i++)
            ev.pmc[i] = ts * (i + 1);
        if (shed && !perch_model_reads_payload(&ev)) {
            ev.payload = NULL;
            ev.payload_len = 0;
        }
        int err = perch_model_feed(m, &ev);
        if (err != 0)
            return err;
        off += 8u + len;
    }
    return 0;
}

/* One model and report over the input: the feed's error, finish's, and the JSON in *json
 * (after a successful finish). With text, the report is also written as text. */
static void run(const uint8_t *data, size_t size, bool shed, bool text, int *feed_err,
                int *finish_err, struct text *json)
{
    perch_report *r = NULL;
    perch_model *m = NULL;
    perch_sink sink;
    perch_trace_info info;
    perch_model_options o = {sizeof o, 0.001, 64, 0.0001, 64, 32}; /* small caps: reach them */
    memset(&info, 0, sizeof info);
    info.pointer_size = 8;
    info.perf_freq = 10000000;
    *feed_err = *finish_err = 1; /* not run */
    if (perch_report_create(NULL, &r) != 0) {
        json->failed = true;
        return;
    }
    perch_report_sink(r, &sink);
    if (perch_model_create(&sink, &info, &o, &m) == 0) {
        *feed_err = feed_all(m, data, size, shed);
        *finish_err = perch_model_finish(m);
        if (*finish_err == 0) {
            perch_json w;
            perch_json_init(&w, keep_json, json);
            perch_report_write_json(r, &w);
            FILE *f = text ? fopen("/dev/null", "w") : NULL;
            if (f != NULL) {
                perch_report_write_text(r, f);
                fclose(f);
            }
        }
    } else {
        json->failed = true;
    }
    perch_model_destroy(m);
    perch_report_destroy(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct text whole = {NULL, 0, 0, false}, shed = {NULL, 0, 0, false};
    int feed_whole, feed_shed, finish_whole, finish_shed;
    run(data, size, false, true, &feed_whole, &finish_whole, &whole);
    run(data, size, true, false, &feed_shed, &finish_shed, &shed);
    if (!whole.failed && !shed.failed &&
        (feed_whole != feed_shed || finish_whole != finish_shed || whole.len != shed.len ||
         (whole.len > 0 && memcmp(whole.p, shed.p, whole.len) != 0))) {
        fprintf(stderr,
                "fuzz_model: shedding the unread payloads changed the model: feed %d/%d, "
                "finish %d/%d, JSON %zu/%zu bytes\n",
                feed_whole, feed_shed, finish_whole, finish_shed, whole.len, shed.len);
        abort();
    }
    free(whole.p);
    free(shed.p);
    return 0;
}
