/*
 * The public face of the exporters (include/perch/export.h): the table of formats, exporter
 * creation, the per-pass sinks, and perch_export_run, the driver that replays a record source
 * once per pass.
 */
#include <stdlib.h>
#include <string.h>

#include "export/export_internal.h"
#include "perch/error.h"
#include "util/mem.h"

struct perch_exporter {
    const perch__format *fmt;
    void *state;
    unsigned next_pass;
    bool threads; /* opt->threads != 1: a one-pass format's capture is decoded ahead */
};

static const perch__format *const formats[PERCH_EXPORT_FORMAT_COUNT] = {
    [PERCH_EXPORT_CHROME] = &perch__format_chrome,
    [PERCH_EXPORT_GECKO] = &perch__format_gecko,
    [PERCH_EXPORT_PPROF] = &perch__format_pprof,
    [PERCH_EXPORT_SPEEDSCOPE] = &perch__format_speedscope,
    [PERCH_EXPORT_FOLDED] = &perch__format_folded,
};

static const perch__format *format_of(perch_export_format fmt)
{
    return (unsigned)fmt < PERCH_EXPORT_FORMAT_COUNT ? formats[fmt] : NULL;
}

void perch_export_options_init(perch_export_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->size = sizeof *opt;
}

int perch_export_format_parse(const char *name, perch_export_format *fmt)
{
    for (unsigned i = 0; i < PERCH_EXPORT_FORMAT_COUNT; i++) {
        if (strcmp(name, formats[i]->name) == 0) {
            *fmt = (perch_export_format)i;
            return 0;
        }
    }
    return PERCH_EINVAL;
}

const char *perch_export_format_name(perch_export_format fmt)
{
    const perch__format *f = format_of(fmt);
    return f ? f->name : NULL;
}

const char *perch_export_format_opens(perch_export_format fmt)
{
    const perch__format *f = format_of(fmt);
    return f ? f->opens : NULL;
}

unsigned perch_export_passes(perch_export_format fmt)
{
    const perch__format *f = format_of(fmt);
    return f ? f->passes : 0;
}

/* Bit i: a driver gains nothing from a relay in front of pass i's sink (docs/exports.md,
 * "Threads"): chrome's pass 1 only gathers entities, and on two cores its pass 2 runs no
 * faster behind a relay while it takes the core the output's writes need; gecko's sink only
 * appends a few varints per sample and slice, less work than the relay's copy of its records
 * (at 512 MB the replay thread spent ~350 ms copying against the sink's ~240 ms); gecko,
 * pprof and speedscope ran faster with their capture decoded ahead instead
 * (perch_sink.decode_ahead, set by perch_exporter_sink). Folded keeps its relay. */
static const uint32_t unrelayed[PERCH_EXPORT_FORMAT_COUNT] = {
    [PERCH_EXPORT_CHROME] = 3u,
    [PERCH_EXPORT_GECKO] = UINT32_MAX,
    [PERCH_EXPORT_PPROF] = UINT32_MAX,
    [PERCH_EXPORT_SPEEDSCOPE] = UINT32_MAX,
};

bool perch_export_relay_pass(perch_export_format fmt, unsigned pass)
{
    const perch__format *f = format_of(fmt);
    return f && pass < f->passes && (pass >= 32 || !(unrelayed[fmt] >> pass & 1));
}

/* Copies the fields of the caller's version of the options over the defaults. */
static void merge_options(perch_export_options *dst, const perch_export_options *src)
{
    perch_export_options_init(dst);
    if (src && src->size >= sizeof(size_t)) {
        size_t n = src->size < sizeof *dst ? src->size : sizeof *dst;
        memcpy(dst, src, n);
        dst->size = sizeof *dst;
    }
}

int perch_exporter_create(perch_export_format fmt, const perch_export_options *opt,
                          perch_output *out, perch_exporter **exp)
{
    const perch__format *f = format_of(fmt);
    perch_export_options o;
    perch_exporter *e;
    int err;
    if (!f || !out || !out->write || !exp)
        return PERCH_EINVAL;
    merge_options(&o, opt);
    e = perch__calloc(1, sizeof *e);
    if (!e)
        return PERCH_ENOMEM;
    e->fmt = f;
    e->threads = o.threads != 1;
    err = f->create(&o, out, &e->state);
    if (err) {
        perch__free(e);
        return err;
    }
    *exp = e;
    return 0;
}

int perch_exporter_sink(perch_exporter *exp, unsigned pass, perch_sink *sink)
{
    if (!exp || pass >= exp->fmt->passes || pass != exp->next_pass)
        return PERCH_EINVAL;
    exp->fmt->bind(exp->state, pass, sink);
    /* A capture replayed into the sink itself (not behind a relay: unrelayed above) is decoded
     * ahead on a second thread, the callbacks staying on the replay's thread; for one-pass
     * formats only: chrome's pass 1 takes touches instead, and its pass 2 ran slower decoded
     * ahead (its formatter and output threads already share the second core) */
    sink->decode_ahead = exp->threads && exp->fmt->passes == 1;
    exp->next_pass++;
    return 0;
}

void perch_exporter_destroy(perch_exporter *exp)
{
    if (!exp)
        return;
    exp->fmt->destroy(exp->state);
    perch__free(exp);
}

int perch_export_run(perch_export_format fmt, const perch_export_options *opt,
                     const perch_record_source *src, perch_output *out)
{
    perch_exporter *exp;
    perch_sink sink;
    int err;
    if (!src || !src->replay)
        return PERCH_EINVAL;
    err = perch_exporter_create(fmt, opt, out, &exp);
    if (err)
        return err;
    for (unsigned pass = 0; !err && pass < exp->fmt->passes; pass++) {
        err = perch_exporter_sink(exp, pass, &sink);
        if (!err)
            err = src->replay(src->ctx, &sink);
    }
    perch_exporter_destroy(exp);
    return err;
}
