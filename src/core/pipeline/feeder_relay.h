/*
 * The import's helper thread (feeder.c): the .etl reader thread of perch_etl_feeder that also
 * plays a sink relay's batches (relay_play.h), so reading and the capture writer share one
 * thread beside the model's. Internal to src/core/pipeline (pipeline.c starts it).
 */
#ifndef PERCH_PIPELINE_FEEDER_RELAY_H
#define PERCH_PIPELINE_FEEDER_RELAY_H

#include <stdbool.h>
#include <stddef.h>

#include "perch/pipeline.h"

/* perch_etl_feeder_start (no limit) for the pipeline's model, whose records of events the
 * model does not read (perch_model_reads_payload) come without payload and ext bytes: when
 * relay is not NULL the thread also plays relay, a relay made with perch__sink_relay_create
 * (borrowed: stop it with perch_sink_relay_stop only after perch_etl_feeder_finish). The
 * thread then plays relay until perch_etl_feeder_finish, which plays every batch handed
 * before it; so the queue's EOF does not end the thread: the model's finish (its records go
 * through relay) comes before perch_etl_feeder_finish. track: perch_etl_feeder_position is
 * wanted (progress); without it the thread does not follow the buffer positions and the
 * position stays 0. Returns what perch_etl_feeder_start returns. */
int perch__etl_feeder_start_model(perch_etl_reader *r, size_t queue_bytes, perch_sink_relay *relay,
                                  bool track, perch_etl_feeder **out);

/* Whether that thread plays relay while the model is behind (more than half the queue waits
 * for it), not only when the queue is full: for a trace whose buffers are mostly
 * uncompressed. With XPRESS the reader thread is the longer one over the whole file, even where
 * the model falls behind for a while, so batches it played then were time the end of the import
 * lacked (docs/pipeline.md). */
bool perch__etl_feeder_volunteers(const perch_etl_stats *st);

#endif
