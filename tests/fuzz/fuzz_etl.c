/*
 * Fuzz target for the .etl reader: opens the input through the from-memory entry point,
 * reads every record in time order and touches every payload byte, so a bad length shows up
 * under ASan. Memory caps are lowered so that inputs claiming huge buffers stay cheap. The
 * single-record parser is also run over the input itself.
 */
#include <stddef.h>
#include <stdint.h>

#include "perch/etl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint8_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    perch_etl_options o = {sizeof o, 1u << 20, 64u << 20};
    perch_etl_reader *r = NULL;
    perch_event ev;
    size_t step = 0;
    uint8_t acc = 0;
    if (perch_etl_parse_record(data, size, 8, 0, &ev, &step) == 0) {
        for (uint32_t i = 0; i < ev.payload_len; i++)
            acc ^= ev.payload[i];
    }
    if (perch_etl_open_memory(data, size, &o, &r, NULL) != 0)
        return 0;
    while (perch_etl_next(r, &ev) == 0) {
        for (uint32_t i = 0; i < ev.payload_len; i++)
            acc ^= ev.payload[i];
        for (uint32_t i = 0; i < ev.ext_len; i++)
            acc ^= ev.ext[i];
        (void)perch_etl_filetime(perch_etl_header_of(r), ev.timestamp);
    }
    sink = acc;
    perch_etl_destroy(r);
    return 0;
}
