/*
 * Rotating capture files (include/perch/capture_rotate.h): a perch_sink that keeps a store of
 * entities and stacks (store.h) and writes the records into the current file through a scope
 * (scope.h), so each file holds every entity and stack it uses. A file is finished and the
 * next one started when it reaches its size or age cap; after each file the oldest files of
 * the prefix are deleted while the prefix's total passes the disk cap. File-system calls go
 * through include/perch/fs.h.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/rotate_names.h"
#include "capture/scope.h"
#include "capture/store.h"
#include "perch/capture_rotate.h"
#include "perch/error.h"
#include "perch/fs.h"
#include "util/mem.h"

#define MAX_LISTING 100000u

struct perch_capture_rotate {
    perch__cap_ent_adapter entities; /* first: the sink's entity callbacks cast ctx to it */
    perch_capture_rotate_opts opts;  /* dir and prefix point at the copies below */
    char *dir, *prefix, *first;      /* first: the first file's name, or NULL */
    perch__cap_store store;
    perch__cap_scope scope;
    perch_output out;
    perch_capture_writer *w;
    perch_sink wsink;
    void *names; /* the names wrapper's state of the open file (opts.names), or NULL */
    bool open, finished;
    int error;
    char made[512];      /* the last file created (even one whose header failed), for discard */
    bool made_gone;      /* made was deleted already (its header failed): not deleted again */
    uint64_t made_count; /* files created, those that failed after the create included */
    uint64_t opened_ms;
    uint32_t seq, since_clock;
    perch_capture_rotate_stats stats;
};

void perch_capture_rotate_opts_default(perch_capture_rotate_opts *o)
{
    memset(o, 0, sizeof *o);
    o->size = sizeof *o;
    o->prefix = "perch";
    o->max_file_bytes = 64u << 20;
    o->max_file_age_ms = 3600u * 1000u;
    o->max_total_bytes = 1ull << 30;
    o->max_stack_frames = 1u << 22;
    o->max_entities = 1u << 20;
    perch_capture_writer_opts_default(&o->writer);
}

static int fail(perch_capture_rotate *r, int err)
{
    if (!r->error)
        r->error = err;
    return r->error;
}

/* Deletes the oldest files of the prefix while their total passes max_total_bytes. */
static int apply_disk_cap(perch_capture_rotate *r)
{
    perch_fs_entry *e = NULL;
    size_t n = 0;
    uint64_t total = 0;
    if (r->opts.max_total_bytes == 0)
        return 0;
    int err = perch_fs_list(r->dir, MAX_LISTING, &e, &n);
    if (err)
        return err;
    n = perch__rotate_keep_named(r->prefix, r->first, e, n); /* sorted oldest first */
    for (size_t i = 0; i < n; i++)
        total += e[i].size;
    for (size_t i = 0; i < n && total > r->opts.max_total_bytes && err == 0; i++) {
        char *path = perch_fs_join(r->dir, e[i].name);
        if (!path) {
            err = PERCH_ENOMEM;
        } else if (!r->open || strcmp(path, r->stats.current_path) != 0) {
            int e2 = r->opts.remove ? r->opts.remove(path) : perch_fs_remove(path);
            if (e2 == 0 || e2 == PERCH_ENOENT) {
                total -= e[i].size;
                r->stats.files_deleted += e2 == 0;
            } else if (e2 == PERCH_ENOMEM) {
                err = e2;
            } else { /* open elsewhere, say: kept, and a newer file goes instead */
                r->stats.deletes_failed++;
            }
        }
        perch__free(path);
    }
    perch_fs_list_free(e, n);
    return err;
}

/* Puts opts.names in front of the file's writer sink. */
static int wrap_names(perch_capture_rotate *r)
{
    const perch_sink_wrap *nw = &r->opts.names;
    perch_sink inner = r->wsink;
    return nw->open ? nw->open(nw->ctx, &inner, &r->wsink, &r->names) : 0;
}

static void unwrap_names(perch_capture_rotate *r)
{
    if (r->names != NULL)
        r->opts.names.close(r->opts.names.ctx, r->names);
    r->names = NULL;
}

/* Deletes the file just created whose header could not be written (a full disk, say): a
 * reader takes nothing from it, and left behind it would look like a capture. A delete that
 * fails is counted in headless_kept and the file stays; the header's error stands either way. */
static void remove_headless(perch_capture_rotate *r, const char *path, int why)
{
    int err = r->opts.remove ? r->opts.remove(path) : perch_fs_remove(path);
    r->stats.headless_removed += err == 0;
    err = err == PERCH_ENOENT ? 0 : err; /* gone already */
    r->stats.headless_kept += err != 0;
    r->made_gone = err == 0; /* path is made: discard must not delete that name again */
    if (r->opts.headless != NULL)
        r->opts.headless(r->opts.headless_ctx, path, r->stats.files_created, why, err);
}

static int open_file(perch_capture_rotate *r)
{
    char name[96];
    uint64_t now = r->opts.wall_ms(r->opts.clock_ctx);
    if (++r->seq == 1 && r->first)
        snprintf(name, sizeof name, "%s", r->first);
    else
        perch__rotate_name(r->prefix, now, r->seq, name, sizeof name);
    char *path = perch_fs_join(r->dir, name);
    if (!path || strlen(path) >= sizeof r->stats.current_path) {
        perch__free(path);
        return path ? PERCH_ERANGE : PERCH_ENOMEM;
    }
    int err = r->opts.open ? r->opts.open(&r->out, path) : perch_output_create_file(&r->out, path);
    if (err == 0) {
        snprintf(r->made, sizeof r->made, "%s", path); /* fits: checked above */
        r->made_gone = false;
        r->made_count++;
    }
    if (err == 0 && (err = perch_capture_writer_create(&r->out, &r->opts.writer, &r->w)) != 0) {
        r->out.close(r->out.ctx);
        remove_headless(r, path, err);
    }
    if (err == 0) {
        snprintf(r->stats.current_path, sizeof r->stats.current_path, "%s", path);
        perch_capture_writer_sink(r->w, &r->wsink);
        if ((err = wrap_names(r)) != 0) {
            perch_capture_writer_destroy(r->w);
            r->w = NULL;
            r->out.close(r->out.ctx);
        }
    }
    if (err == 0) {
        r->open = true;
        r->opened_ms = now;
        r->stats.files_created++;
        memset(&r->scope, 0, sizeof r->scope);
        r->scope.eager = true; /* what appears while the file is open goes in, used or not */
        err = perch__cap_scope_begin(&r->scope, &r->store, &r->wsink);
    }
    perch__free(path);
    return err ? err : apply_disk_cap(r);
}

/* A ledger (l) or stat (s) record into the open file. One the writer refuses (a name given
 * twice, not UTF-8, past the caps: perch_capture_writer_refusal) costs that record, not the
 * file: the writer counted it and goes on, and so does the rotation (an error here would stop
 * the file before its end chunk and the rotation for good). */
static int put_named(perch_capture_rotate *r, const perch_ledger_rec *l, const perch_stat_rec *s)
{
    perch_capture_writer_stats ws;
    perch_capture_writer_get_stats(r->w, &ws);
    uint64_t refused = ws.refused;
    int err = l ? r->wsink.ledger(r->wsink.ctx, l) : r->wsink.stat(r->wsink.ctx, s);
    if (err == 0)
        return 0;
    perch_capture_writer_get_stats(r->w, &ws);
    return ws.refused != refused ? 0 : err;
}

/* The writer's own losses of this file, as ledger entries at its end (left out, like any name
 * given twice, when the stream gave that reason already). */
static int put_missing(perch_capture_rotate *r)
{
    perch_ledger_rec l = {"capture.entity_forgotten", r->scope.missing_entities};
    int err = l.count ? put_named(r, &l, NULL) : 0;
    l.reason = "capture.stack_forgotten";
    l.count = r->scope.missing_stacks;
    r->stats.entities_forgotten += r->scope.missing_entities;
    r->stats.stacks_forgotten += r->scope.missing_stacks;
    return err == 0 && l.count ? put_named(r, &l, NULL) : err;
}

/* Finishes the current file (end chunk), closes it and applies the disk cap. */
static int close_file(perch_capture_rotate *r, bool finish)
{
    perch_capture_writer_stats ws;
    int err = finish ? put_missing(r) : 0;
    if (err == 0 && finish)
        err = r->wsink.finish(r->wsink.ctx);
    perch_capture_writer_get_stats(r->w, &ws);
    r->stats.bytes_written += ws.bytes;
    perch_capture_writer_destroy(r->w);
    r->w = NULL;
    unwrap_names(r);
    int cerr = r->out.close(r->out.ctx);
    perch__cap_scope_end(&r->scope);
    r->open = false;
    r->stats.current_path[0] = '\0';
    err = err ? err : cerr;
    return err ? err : apply_disk_cap(r);
}

static int ready(perch_capture_rotate *r)
{
    if (r->error)
        return r->error;
    if (r->finished)
        return PERCH_ESTATE;
    return r->open ? 0 : fail(r, open_file(r));
}

/* Whether the open file has reached its age cap (reads the clock). */
static bool aged(perch_capture_rotate *r)
{
    return r->opts.max_file_age_ms &&
           r->opts.wall_ms(r->opts.clock_ctx) - r->opened_ms >= r->opts.max_file_age_ms;
}

/* After a data record: rotate when the file reached its size or age (the clock is read once
 * per 64 records; perch_capture_rotate_tick covers the time between records). */
static int maybe_rotate(perch_capture_rotate *r)
{
    perch_capture_writer_stats ws;
    perch_capture_writer_get_stats(r->w, &ws);
    bool full = ws.bytes >= r->opts.max_file_bytes;
    if (!full && r->opts.max_file_age_ms && ++r->since_clock >= 64) {
        r->since_clock = 0;
        full = aged(r);
    }
    return full ? fail(r, close_file(r, true)) : 0;
}

static int on_info(void *ctx, const perch_trace_info *info)
{
    perch_capture_rotate *r = ctx;
    int err = r->error ? r->error : fail(r, perch__cap_store_info(&r->store, info));
    return err ? err : ready(r);
}

static int on_counters(void *ctx, const perch_counters_rec *rec)
{
    perch_capture_rotate *r = ctx;
    int err = r->error ? r->error : fail(r, perch__cap_store_counters(&r->store, rec));
    if (err == 0 && r->open)
        err = fail(r, r->wsink.counters(r->wsink.ctx, rec));
    return err;
}

static int on_entity(void *ctx, unsigned type, const perch__cap_ent *e)
{
    perch_capture_rotate *r = ctx;
    int err = r->error ? r->error : fail(r, perch__cap_store_entity(&r->store, type, e));
    if (err == 0 && r->open)
        err = fail(r, perch__cap_scope_entity(&r->scope, type, e));
    return err;
}

static int on_stack(void *ctx, const perch_stack_rec *rec)
{
    perch_capture_rotate *r = ctx;
    return r->error ? r->error : fail(r, perch__cap_store_stack(&r->store, rec));
}

static int on_sample(void *ctx, const perch_sample_rec *rec)
{
    perch_capture_rotate *r = ctx;
    int err = ready(r);
    err = err ? err : fail(r, perch__cap_scope_sample(&r->scope, rec));
    return err ? err : maybe_rotate(r);
}

static int on_slice(void *ctx, const perch_slice_rec *rec)
{
    perch_capture_rotate *r = ctx;
    int err = ready(r);
    err = err ? err : fail(r, perch__cap_scope_slice(&r->scope, rec));
    return err ? err : maybe_rotate(r);
}

static int on_lbr(void *ctx, const perch_lbr_rec *rec)
{
    perch_capture_rotate *r = ctx;
    int err = ready(r);
    err = err ? err : fail(r, perch__cap_scope_lbr(&r->scope, rec));
    return err ? err : maybe_rotate(r);
}

static int on_ledger(void *ctx, const perch_ledger_rec *rec)
{
    perch_capture_rotate *r = ctx;
    int err = ready(r);
    return err ? err : fail(r, put_named(r, rec, NULL));
}

static int on_stat(void *ctx, const perch_stat_rec *rec)
{
    perch_capture_rotate *r = ctx;
    int err = ready(r);
    return err ? err : fail(r, put_named(r, NULL, rec));
}

int perch_capture_rotate_finish(perch_capture_rotate *r)
{
    if (r->error)
        return r->error;
    if (r->finished)
        return PERCH_ESTATE;
    r->finished = true;
    return r->open ? fail(r, close_file(r, true)) : fail(r, apply_disk_cap(r));
}

static int on_finish(void *ctx)
{
    return perch_capture_rotate_finish(ctx);
}

int perch_capture_rotate_now(perch_capture_rotate *r)
{
    if (r->error || r->finished)
        return r->error ? r->error : PERCH_ESTATE;
    return r->open ? fail(r, close_file(r, true)) : 0;
}

int perch_capture_rotate_tick(perch_capture_rotate *r)
{
    if (r->error || r->finished)
        return r->error;
    return r->open && aged(r) ? fail(r, close_file(r, true)) : 0;
}

void perch_capture_rotate_sink(perch_capture_rotate *r, perch_sink *sink)
{
    static const perch_sink callbacks = {
        NULL,
        on_info,
        perch__cap_ent_on_process,
        perch__cap_ent_on_thread,
        perch__cap_ent_on_module,
        on_counters,
        on_stack,
        on_slice,
        on_sample,
        on_lbr,
        on_ledger,
        on_stat,
        on_finish,
        NULL,  /* symbol: a file's names come from opts.names */
        false, /* decode_ahead */
        false, /* skip_events */
    };
    *sink = callbacks;
    sink->ctx = r;
}

static bool first_name_ok(const char *prefix, const char *name);

static int check_opts(const perch_capture_rotate_opts *o)
{
    if (!o || o->size != sizeof *o || !o->dir || !o->wall_ms || !o->prefix)
        return PERCH_EINVAL;
    if (!perch__rotate_prefix_ok(o->prefix) || o->max_file_bytes < (64u << 10))
        return PERCH_EINVAL;
    if (o->writer.size != sizeof o->writer || o->max_entities == 0)
        return PERCH_EINVAL;
    if (o->first_name && !first_name_ok(o->prefix, o->first_name))
        return PERCH_EINVAL;
    return 0;
}

/* The first file is <prefix>.perch. */
static bool first_name_ok(const char *prefix, const char *name)
{
    size_t n = strlen(prefix);
    return strncmp(name, prefix, n) == 0 && strcmp(name + n, ".perch") == 0;
}

/* With a first name: a file of that name, or any of the prefix, is a clash. */
static int check_clash(perch_capture_rotate *r)
{
    uint64_t size;
    char *path = perch_fs_join(r->dir, r->first);
    if (!path)
        return PERCH_ENOMEM;
    int err = perch_fs_size(path, &size);
    perch__free(path);
    if (err == 0 || r->seq > 0)
        return PERCH_EEXIST;
    return err == PERCH_ENOENT ? 0 : err;
}

int perch_capture_rotate_create(const perch_capture_rotate_opts *opts, perch_capture_rotate **out)
{
    int err = check_opts(opts);
    if (err || !out)
        return PERCH_EINVAL;
    perch_capture_rotate *r = perch__calloc(1, sizeof *r);
    if (!r)
        return PERCH_ENOMEM;
    r->entities.on_entity = on_entity;
    r->opts = *opts;
    r->dir = perch__strdup(opts->dir);
    r->prefix = perch__strdup(opts->prefix);
    r->first = opts->first_name ? perch__strdup(opts->first_name) : NULL;
    perch__cap_store_init(&r->store, opts->max_entities, opts->max_stack_frames);
    err = r->dir && r->prefix && (r->first || !opts->first_name) ? perch_fs_mkdir(r->dir)
                                                                 : PERCH_ENOMEM;
    if (err == 0)
        err = perch__rotate_last_seq(r->dir, r->prefix, &r->seq);
    if (err == 0 && r->first)
        err = check_clash(r);
    if (err) {
        perch_capture_rotate_destroy(r);
        return err;
    }
    r->opts.dir = r->dir;
    r->opts.prefix = r->prefix;
    r->opts.first_name = r->first;
    *out = r;
    return 0;
}

void perch_capture_rotate_destroy(perch_capture_rotate *r)
{
    if (!r)
        return;
    if (r->open) {
        perch_capture_writer_destroy(r->w); /* no end chunk: as after a crash */
        unwrap_names(r);
        r->out.close(r->out.ctx);
        perch__cap_scope_end(&r->scope);
    }
    perch__cap_store_free(&r->store);
    perch__free(r->dir);
    perch__free(r->prefix);
    perch__free(r->first);
    perch__free(r);
}

int perch_capture_rotate_discard(perch_capture_rotate *r, char *path, size_t len)
{
    char made[sizeof r->made];
    if (path != NULL && len > 0)
        path[0] = '\0';
    if (!r)
        return 0;
    uint64_t count = r->made_count;
    bool gone = r->made_gone;
    int (*remove)(const char *) = r->opts.remove ? r->opts.remove : perch_fs_remove;
    snprintf(made, sizeof made, "%s", r->made);
    perch_capture_rotate_destroy(r); /* closes the file first: Windows deletes no open file */
    if (count != 1)
        return count == 0 ? 0 : PERCH_ESTATE;
    if (path != NULL && len > 0)
        snprintf(path, len, "%s", made); /* deleted or not: the caller says which */
    if (gone) /* the sink deleted it: the name may be another program's file by now */
        return 0;
    int err = remove(made);
    return err == PERCH_ENOENT ? 0 : err; /* gone already: nothing of it is left */
}

void perch_capture_rotate_get_stats(const perch_capture_rotate *r,
                                    perch_capture_rotate_stats *stats)
{
    *stats = r->stats;
    if (r->open) {
        perch_capture_writer_stats ws;
        perch_capture_writer_get_stats(r->w, &ws);
        stats->current_bytes = ws.bytes;
        /* the open file's so far (close_file adds a file's to r->stats) */
        stats->stacks_forgotten += r->scope.missing_stacks;
        stats->entities_forgotten += r->scope.missing_entities;
    }
}
