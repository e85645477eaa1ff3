/*
 * The HTML report's collector (report_html_data.c) and writer (report_html.c). The page itself
 * (src/core/report/html/report.css, report.js) is embedded at build time
 * (cmake/PerchEmbed.cmake -> perch__report_css, perch__report_js).
 */
#ifndef PERCH_REPORT_HTML_H
#define PERCH_REPORT_HTML_H

#include <stdio.h>

#include "export/export_internal.h"
#include "perch/report.h"

#define HTML_BUCKETS 400u

typedef struct perch__html {
    perch_sink inner; /* the report's own callbacks */
    perch__collect c; /* entities, stacks, (thread, stack) aggregate of timer samples */
    uint64_t bucket_ticks;
    uint64_t origin;       /* raw time of the first bucket's start */
    bool origin_set;       /* false until known: the first timer sample's time sets it */
    uint32_t used;         /* buckets with a sample so far (the last one + 1) */
    perch__map series_map; /* thread key -> series */
    uint64_t *series_key;
    size_t series, series_key_cap;
    uint32_t *counts; /* series-major, HTML_BUCKETS per series */
    size_t counts_cap;
} perch__html;

int perch__html_create(perch__html **out);
/* Puts the tee in front of the report's callbacks in *sink. */
void perch__html_wrap(perch__html *h, perch_sink *sink);
void perch__html_destroy(perch__html *h);

/* Writes the flame graph, the timeline and the top functions as the members of the "html"
 * JSON object (report_html.c). */
int perch__html_data_json(perch__html *h, perch_json *w, uint32_t top, uint64_t interval_ns);

extern const char *const perch__report_page; /* html/report.html */
extern const char *const perch__report_css;  /* html/report.css */
extern const char *const perch__report_js;   /* html/report.js */

#endif
