/*
 * The input seam of perch export (see record_source.h): a capture is replayed from the file
 * each pass, an .etl is run through the reader -> model pipeline each pass (input_kind.c
 * decides which). The source only keeps the path, so nothing stays open between passes.
 *
 * A capture's replay (read, CRC, decode) runs on the calling thread and the exporter's sink
 * on a thread of its own behind a sink relay (perch_sink_relay_start): the same records in
 * the same order, so the same output, on two cores; except the replays the caller names
 * (perch_record_source_unrelayed: chrome's, which gain nothing from it, and gecko's, pprof's
 * and speedscope's, whose capture is decoded ahead instead: perch_sink.decode_ahead).
 * PERCH_THREADS=1 keeps both on one thread. An .etl needs no relay: its pipeline already has
 * a reader thread.
 */
#include <stdlib.h>
#include <string.h>

#include "input_kind.h"
#include "perch/error.h"
#include "perch/pipeline.h"
#include "record_source.h"

/* The source's context: the path, whether a pass found the input partial, whether the sink
 * may run behind a relay (a capture, and PERCH_THREADS is not 1), the replays so far and
 * which of them are not relayed (bit i: replay i). */
struct path_source {
    bool partial;
    bool relay;
    unsigned replays;
    uint32_t unrelayed;
    char path[];
};

/* Plays the file into sink through a relay whose thread runs sink (on this thread when the
 * relay cannot start). The relay returns the sink's first error at the next record it is
 * given, and its finish plays every record. */
static int play_relayed(struct path_source *p, const perch_sink *sink)
{
    perch_sink_relay *relay;
    perch_sink front;
    int err = perch_sink_relay_start(sink, 0, &relay);
    if (err)
        return perch_cli_play_file_ex("export", p->path, sink, false, !p->partial);
    perch_sink_relay_sink(relay, &front);
    /* Records the exporter does not take are not copied for it (the relay plays only what
     * inner has a callback for, so nothing it would see changes). */
    front.process = sink->process ? front.process : NULL;
    front.thread = sink->thread ? front.thread : NULL;
    front.module = sink->module ? front.module : NULL;
    front.stack = sink->stack ? front.stack : NULL;
    front.slice = sink->slice ? front.slice : NULL;
    front.sample = sink->sample ? front.sample : NULL;
    front.lbr = sink->lbr ? front.lbr : NULL;
    front.ledger = sink->ledger ? front.ledger : NULL;
    front.stat = sink->stat ? front.stat : NULL;
    front.symbol = sink->symbol ? front.symbol : NULL;
    err = perch_cli_play_file_ex("export", p->path, &front, false, !p->partial);
    int rerr = perch_sink_relay_stop(relay);
    return err ? err : rerr;
}

static int replay_path(void *ctx, const perch_sink *sink)
{
    struct path_source *p = ctx;
    unsigned i = p->replays++;
    bool relay = p->relay && (i >= 32 || !(p->unrelayed >> i & 1));
    int err = relay ? play_relayed(p, sink)
                    : perch_cli_play_file_ex("export", p->path, sink, false, !p->partial);
    if (err == PERCH_CLI_PARTIAL) {
        p->partial = true;
        return 0; /* every readable record was played */
    }
    return err;
}

static void close_path(void *ctx)
{
    free(ctx);
}

void perch_record_source_unrelayed(perch_record_source *src, uint32_t replays)
{
    if (src->replay == replay_path)
        ((struct path_source *)src->ctx)->unrelayed = replays;
}

bool perch_record_source_partial(const perch_record_source *src)
{
    return src->replay == replay_path && ((const struct path_source *)src->ctx)->partial;
}

int perch_open_record_source(const char *path, perch_record_source *src)
{
    perch_input in;
    unsigned threads;
    int err = perch_input_open_file(&in, path); /* a missing file fails here, once */
    if (err < 0)
        return err;
    bool capture = perch_cli_is_capture(&in);
    perch_input_close(&in);
    if ((err = perch_cli_threads(&threads)) < 0)
        return err;
    size_t n = strlen(path) + 1;
    struct path_source *copy = malloc(sizeof *copy + n);
    if (!copy)
        return PERCH_ENOMEM;
    copy->partial = false;
    copy->relay = capture && threads != 1;
    copy->replays = 0;
    copy->unrelayed = 0;
    memcpy(copy->path, path, n);
    src->ctx = copy;
    src->replay = replay_path;
    src->close = close_path;
    return 0;
}
