/*
 * Rotating capture files: a perch_sink that writes the model's output as a series of capture
 * files in one directory, for the service's always-on recording.
 *
 * Each file is a normal capture (include/perch/capture.h, docs/capture-format.md) that stands
 * on its own: the trace info, the counter names and every process, thread, module and stack
 * that the file's records use are written into that same file before the first record that
 * uses them (the rotation keeps the current record of every entity and the frames of recent
 * stacks, and re-emits them lazily in each new file; stack ids are renumbered per file, dense
 * from 1 in first-use order). An entity that appears or changes while a file is open is
 * written into it at once, used or not, so the first file of a rotation started with the
 * model holds every entity record an unrotated capture holds. A file is readable while it is being
 * written and after a crash, up to its last complete chunk, and such a prefix still names its
 * threads, processes and modules.
 *
 * Names: <prefix>-YYYYMMDD-HHMMSS-<seq>.perch, UTC time of the file's creation and a sequence
 * number of at least six digits that grows by one per file (the sequence restarts after the highest
 * one found in the directory at create time), so names sort by age. A file is rotated (finished
 * with its end chunk, a new one started) when it reaches max_file_bytes or is max_file_age_ms
 * old (checked at each record). After each rotation the oldest files of this prefix are deleted
 * until the total size of this prefix's files is at most max_total_bytes (also when a new file
 * is opened, and at finish); the file being written is never deleted. Only files whose names
 * match the pattern are counted or deleted. Records a file could not re-emit (forgotten by the
 * caps) are counted in that file's ledger as capture.entity_forgotten / capture.stack_forgotten.
 * A ledger or stat record the file's writer refuses (a name given twice, not UTF-8, past the
 * caps: perch_capture_writer_sink) is left out and the rotation goes on, so it costs that name,
 * not the file's end; so is the rotation's own entry when the stream gave that reason already.
 *
 * Thread safety: none; every call comes from the model thread (the sink's thread).
 */
#ifndef PERCH_CAPTURE_ROTATE_H
#define PERCH_CAPTURE_ROTATE_H

#include <stddef.h>
#include <stdint.h>

#include "perch/capture.h"
#include "perch/records.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct perch_capture_rotate_opts {
    size_t size;              /* sizeof(perch_capture_rotate_opts) */
    const char *dir;          /* directory of the files (created when missing; parent must exist) */
    const char *prefix;       /* file name prefix, [A-Za-z0-9_.-], 1..32 bytes; default "perch" */
    uint64_t max_file_bytes;  /* rotate at this size (default 64 MiB; at least 64 KiB) */
    uint64_t max_file_age_ms; /* rotate when this old (default 1 h; 0: never by age) */
    uint64_t max_total_bytes; /* delete oldest files past this (default 1 GiB; 0: no cap) */
    /* Entities and stacks kept for re-emission in later files. When the stack store passes
     * max_stack_frames, the oldest stacks are forgotten (a later record using one is written
     * without its stack and counted in the ledger as capture.stack_forgotten). */
    uint32_t max_stack_frames; /* default 1 << 22 (32 MiB of frames) */
    uint32_t max_entities;     /* entities kept per type (processes, threads, modules; default
                                * 1 << 20); past it the oldest key is forgotten, an ended one
                                * first (a later use: ledger capture.entity_forgotten) */
    perch_capture_writer_opts writer; /* chunk size and sync policy of every file */
    /* NULL, or "<prefix>.perch": the name of the first file (a named recording; the later
     * ones are named as usual, from sequence 2). Create refuses with PERCH_EEXIST when a file
     * of that name or any file of the prefix is already in dir; the disk cap counts that file
     * too, as the oldest. */
    const char *first_name;
    /* Wall clock for names and age: ms since 1970 UTC. Required (perch_fs_wall_ms). */
    uint64_t (*wall_ms)(void *clock_ctx);
    void *clock_ctx;
    /* Put in front of each file's writer (function names: perch_symworker_names); none by
     * default. */
    perch_sink_wrap names;
    /* Deletes a file for the total-size cap (0 or the error): NULL is perch_fs_remove. A file
     * it cannot delete (open in another program without delete sharing) is kept, counted in
     * deletes_failed and tried again at the next rotation; newer files go in its place. */
    int (*remove)(const char *path);
    /* Creates each file (0 or the error; a file already there must be refused, PERCH_EEXIST,
     * so that discard deletes only a file this rotation made): NULL is
     * perch_output_create_file. perchd's tests put a disk that fills or hangs on demand here. */
    int (*open)(perch_output *out, const char *path);
    /* Told, on the thread that feeds the sink, of a file whose header could not be written
     * (err, the write's error), after its delete (remove_err: 0, or the delete's error and the
     * file stays), with the number of files the rotation completed or still holds before it
     * (0: it was the first); may be NULL. perchd logs it. */
    void (*headless)(void *ctx, const char *path, uint64_t files_before, int err, int remove_err);
    void *headless_ctx;
} perch_capture_rotate_opts;

/* Fills the defaults (dir NULL, wall_ms NULL: the caller sets both). */
void perch_capture_rotate_opts_default(perch_capture_rotate_opts *opts);

typedef struct perch_capture_rotate perch_capture_rotate;

/* Creates the rotation (the directory if missing) without opening a file yet: the first file
 * is created at the first record (trace_info). opts is copied (strings too). PERCH_EINVAL for
 * bad options, PERCH_ENOMEM, or the file system's error. *out untouched on error. */
int perch_capture_rotate_create(const perch_capture_rotate_opts *opts, perch_capture_rotate **out);

/* Fills *sink with callbacks writing into the rotation (ctx is r). Each returns 0 or the
 * first error, which is sticky (a file that cannot be created or written stops the rotation;
 * the files already closed stay valid). A file whose header cannot be written, the first or
 * a later one, is deleted at once (through opts.remove): it holds nothing a reader could take;
 * one whose header went in stays, readable up to its last complete chunk. finish finishes the
 * current file (end chunk) and applies the total-size cap once more. */
void perch_capture_rotate_sink(perch_capture_rotate *r, perch_sink *sink);

/* Finishes the current file now and starts the next one at the next record (e.g. on request
 * from a client). 0 or the error. */
int perch_capture_rotate_now(perch_capture_rotate *r);

/* Rotates by age between records: when a file is open and has reached max_file_age_ms,
 * finishes it (end chunk) as a record would; the next file starts at the next record, so a
 * stream that went quiet leaves one complete file, not one that stays open. Call it from the
 * thread that feeds the sink, when no record is being written (an idle or timer path). 0 or
 * the sticky error; nothing after finish. */
int perch_capture_rotate_tick(perch_capture_rotate *r);

/* Same as the sink's finish. */
int perch_capture_rotate_finish(perch_capture_rotate *r);

/* Frees r. A file still open is closed as it is (no end chunk: a reader sees every complete
 * chunk and reports it as not finished). Accepts NULL. */
void perch_capture_rotate_destroy(perch_capture_rotate *r);

/* Frees r as perch_capture_rotate_destroy does, then deletes the file r created, for a
 * recording that could not start: that file holds no record anyone asked for, and left behind
 * it would make a retry with the same name fail (PERCH_EEXIST). Only a file r created itself
 * is deleted (one that was there before never is: create refuses a first_name that exists, and
 * every other name is new); one whose header could not be written is gone already (the sink
 * deleted it: it is not deleted again, the name may be another program's file by now, or
 * still taken by a delete pending on Windows), and its path is still given. A rotation that
 * created more than one file is past its start: nothing is deleted, PERCH_ESTATE. path (len
 * bytes, may be NULL) receives the path of the one file r created, deleted or not, else "".
 * Returns 0 (deleted, or no file) or the delete's error (the file stays). Accepts NULL. */
int perch_capture_rotate_discard(perch_capture_rotate *r, char *path, size_t len);

typedef struct perch_capture_rotate_stats {
    uint64_t files_created;
    uint64_t files_deleted;    /* by the total-size cap */
    uint64_t deletes_failed;   /* the cap's deletes refused (the file kept) */
    uint64_t headless_removed; /* files deleted because their header could not be written */
    uint64_t headless_kept;    /* such files whose delete failed too (they stay) */
    uint64_t bytes_written;    /* all files, headers included */
    uint64_t current_bytes;    /* of the file being written (0 when none is open) */
    uint64_t stacks_forgotten; /* records written without their stack (store cap) */
    uint64_t entities_forgotten;
    char current_path[512]; /* "" when no file is open */
} perch_capture_rotate_stats;

void perch_capture_rotate_get_stats(const perch_capture_rotate *r,
                                    perch_capture_rotate_stats *stats);

#ifdef __cplusplus
}
#endif

#endif
