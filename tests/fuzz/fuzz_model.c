/*
 * Fuzz target for the model and the report: the input is a sequence of records, each a 8-byte
 * header {u8 group selector, u8 opcode, u8 version | 0x80 for pointer size 4, u8 cpu,
 * u16 timestamp delta, u16 payload length} and its payload. Records are fed to a model whose
 * sink is a report; the report is then written as JSON and as text into a null writer. Small
 * caps (pending samples) make the bounded paths reachable.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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

static int null_json(void *ctx, const char *d, size_t n)
{
    (void)ctx;
    (void)d;
    (void)n;
    return 0;
}

static void feed_all(perch_model *m, const uint8_t *data, size_t size)
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
        if (perch_model_feed(m, &ev) != 0)
            return;
        off += 8u + len;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    perch_report *r = NULL;
    perch_model *m = NULL;
    perch_sink sink;
    perch_trace_info info;
    perch_model_options o = {sizeof o, 0.001, 64, 0.0001, 64, 32}; /* small caps: reach them */
    memset(&info, 0, sizeof info);
    info.pointer_size = 8;
    info.perf_freq = 10000000;
    if (perch_report_create(NULL, &r) != 0)
        return 0;
    perch_report_sink(r, &sink);
    if (perch_model_create(&sink, &info, &o, &m) == 0) {
        feed_all(m, data, size);
        if (perch_model_finish(m) == 0) {
            perch_json w;
            perch_json_init(&w, null_json, NULL);
            perch_report_write_json(r, &w);
            FILE *f = fopen("/dev/null", "w");
            if (f != NULL) {
                perch_report_write_text(r, f);
                fclose(f);
            }
        }
    }
    perch_model_destroy(m);
    perch_report_destroy(r);
    return 0;
}
