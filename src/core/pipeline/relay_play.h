/*
 * The playing side of the sink relay (relay.c), for a thread that plays the relay's batches
 * between other work instead of the relay's own thread: the pipelined import's helper thread
 * reads the .etl (feeder.c) and plays the capture writer's batches, so the import keeps two
 * busy threads on two cores, not three. Internal to src/core/pipeline; the public relay
 * (include/perch/pipeline.h, perch_sink_relay_start) is these pieces on a thread of its own.
 *
 * One thread is the relay's player. It calls perch__sink_relay_wanted between its other steps
 * (a cheap look, no lock) and perch__sink_relay_play when it says so; when it has nothing else
 * to do it sleeps in perch__sink_relay_wait, which returns once a batch it may play is handed,
 * once its own condition holds, or (false) once the relay is stopped with nothing left to play.
 *
 * The filling thread (the model's) plays too when it would otherwise wait: when every batch
 * of the ring is full or it must wait for all to be played, and when it has nothing else to do
 * (perch__sink_relay_play_one, from the import's consumer loop while the queue is empty). One
 * batch is played at a time, oldest first, by whichever thread takes it (under the relay's
 * lock), so the inner sink still sees the records in order, one call at a time.
 */
#ifndef PERCH_PIPELINE_RELAY_PLAY_H
#define PERCH_PIPELINE_RELAY_PLAY_H

#include <stdbool.h>
#include <stddef.h>

#include "perch/pipeline.h"

/* A relay without a thread (*out untouched on error: PERCH_ENOMEM or the lock's error). Some
 * thread must play it (the calls below) until perch_sink_relay_stop, which then joins nothing
 * and frees it: stop that thread first. */
int perch__sink_relay_create(const perch_sink *inner, size_t batch_bytes, perch_sink_relay **out);

/* Player: true when enough batches wait (half the ring), or the filling thread waits for all
 * of them to be played, so that a player with other work should play now. No lock. */
bool perch__sink_relay_wanted(const perch_sink_relay *r);

/* Player: plays every batch handed so far (and those handed meanwhile), in order. */
void perch__sink_relay_play(perch_sink_relay *r);

/* Filling thread: plays the oldest handed batch if one waits and no other thread plays now.
 * True when it played one. */
bool perch__sink_relay_play_one(perch_sink_relay *r);

/* The import's model-thread loop (perch_pipeline_consume) that, whenever q is empty, plays
 * r's batches (perch__sink_relay_play_one) before it sleeps. */
int perch__pipeline_consume_play(perch_event_queue *q, perch_model *m,
                                 const perch_consume_options *opts, perch_sink_relay *r,
                                 uint64_t *records);

/* Player: sleeps until a batch it may play is handed, ready(ctx) is true (ready, may be NULL, is
 * called under the relay's lock: whoever makes it true must then call perch__sink_relay_wake), or
 * the relay is stopped. False only in the last case with nothing handed: the player may leave. */
bool perch__sink_relay_wait(perch_sink_relay *r, bool (*ready)(void *ctx), void *ctx);

/* Any thread: wakes a player sleeping in perch__sink_relay_wait to look at ready again. */
void perch__sink_relay_wake(perch_sink_relay *r);

/* Any thread: asks the player to leave once every handed batch is played. */
void perch__sink_relay_stop_player(perch_sink_relay *r);

#endif
