/*
 * The session configuration (src/win/etw.h): Perch's defaults, the range checks with a
 * sentence per refusal, the name tables configuration parsers use (groups, events, LBR
 * filters, features), and the one-line-per-feature report text.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "etw.h"
#include "etw_sdk.h"
#include "perch/error.h"

static const char *const group_names[] = {
#define GROUP_NAME(s, name, mask, bit) name,
    PERCH_ETW_GROUP_MAP(GROUP_NAME)
#undef GROUP_NAME
};

static const char *const event_names[] = {
#define EVENT_NAME(s, name, hook) name,
    PERCH_ETW_EVENT_MAP(EVENT_NAME)
#undef EVENT_NAME
};

static const struct {
    const char *name;
    uint32_t bit;
} lbr_filters[] = {
#define LBR_FILTER(name, bit) {name, bit},
    PERCH_ETW_LBR_FILTER_MAP(LBR_FILTER)
#undef LBR_FILTER
};

static const char *const feature_names[] = {
#define FEATURE_NAME(s, name) name,
    PERCH_ETW_FEATURE_MAP(FEATURE_NAME)
#undef FEATURE_NAME
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *perch_etw_group_name(unsigned i)
{
    return i < COUNT(group_names) ? group_names[i] : NULL;
}

const char *perch_etw_event_name(unsigned i)
{
    return i < COUNT(event_names) ? event_names[i] : NULL;
}

const char *perch_etw_lbr_filter_name(unsigned i, uint32_t *bit)
{
    if (i >= COUNT(lbr_filters))
        return NULL;
    if (bit != NULL)
        *bit = lbr_filters[i].bit;
    return lbr_filters[i].name;
}

const char *perch_etw_feature_name(perch_etw_feature f)
{
    return (unsigned)f < COUNT(feature_names) ? feature_names[f] : NULL;
}

void perch_etw_config_defaults(perch_etw_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->sz = sizeof *cfg;
    cfg->groups = PERCH_ETW_GROUP_PROCESS | PERCH_ETW_GROUP_THREAD | PERCH_ETW_GROUP_IMAGE_LOAD |
                  PERCH_ETW_GROUP_CSWITCH | PERCH_ETW_GROUP_DISPATCHER | PERCH_ETW_GROUP_PROFILE;
    cfg->stacks =
        PERCH_ETW_EVENT_SAMPLED_PROFILE | PERCH_ETW_EVENT_CSWITCH | PERCH_ETW_EVENT_READY_THREAD;
    cfg->sample_interval = 10000; /* 1 ms */
    cfg->lbr_events = PERCH_ETW_EVENT_SAMPLED_PROFILE;
    cfg->buffer_kb = 64;
    cfg->flush_seconds = 1;
}

typedef int (*lookup_fn)(const char *name, size_t len, uint32_t *bit);

static int lookup_in(const char *const *names, size_t count, const char *name, size_t len,
                     uint32_t *bit)
{
    for (size_t i = 0; i < count; i++)
        if (strlen(names[i]) == len && strncmp(names[i], name, len) == 0) {
            *bit = 1u << i;
            return 0;
        }
    return PERCH_EINVAL;
}

static int lookup_group(const char *name, size_t len, uint32_t *bit)
{
    return lookup_in(group_names, COUNT(group_names), name, len, bit);
}

static int lookup_event(const char *name, size_t len, uint32_t *bit)
{
    return lookup_in(event_names, COUNT(event_names), name, len, bit);
}

static int lookup_lbr(const char *name, size_t len, uint32_t *bit)
{
    for (size_t i = 0; i < COUNT(lbr_filters); i++)
        if (strlen(lbr_filters[i].name) == len && strncmp(lbr_filters[i].name, name, len) == 0) {
            *bit = lbr_filters[i].bit;
            return 0;
        }
    return PERCH_EINVAL;
}

/* Comma-separated names (spaces around names ignored) into a bit set. */
static int parse_list(const char *list, lookup_fn lookup, const char *what, uint32_t *out,
                      char *why, size_t n)
{
    uint32_t bits = 0;
    if (list == NULL || out == NULL)
        return PERCH_EINVAL;
    if (strcmp(list, "none") == 0) {
        *out = 0;
        return 0;
    }
    for (const char *p = list; *p != '\0';) {
        while (*p == ' ' || *p == ',')
            p++;
        size_t len = strcspn(p, ", ");
        uint32_t bit = 0;
        if (len == 0)
            break;
        if (lookup(p, len, &bit) < 0) {
            if (why != NULL && n != 0)
                snprintf(why, n, "\"%.*s\" is not a known %s name", (int)len, p, what);
            return PERCH_EINVAL;
        }
        bits |= bit;
        p += len;
    }
    *out = bits;
    return 0;
}

int perch_etw_parse_groups(const char *list, uint32_t *out, char *why, size_t n)
{
    return parse_list(list, lookup_group, "event group", out, why, n);
}

int perch_etw_parse_events(const char *list, uint32_t *out, char *why, size_t n)
{
    return parse_list(list, lookup_event, "event", out, why, n);
}

int perch_etw_parse_lbr_filter(const char *list, uint32_t *out, char *why, size_t n)
{
    return parse_list(list, lookup_lbr, "LBR filter", out, why, n);
}

static int refuse(char *why, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int refuse(char *why, size_t n, const char *fmt, ...)
{
    if (why != NULL && n != 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, n, fmt, ap);
        va_end(ap);
    }
    return PERCH_EINVAL;
}

static int check_names(const char (*names)[PERCH_ETW_NAME_MAX], uint32_t count, const char *what,
                       char *why, size_t n)
{
    if (count > PERCH_ETW_MAX_PMC_NAMES)
        return refuse(why, n, "%s lists %u names; at most %u are allowed", what, (unsigned)count,
                      PERCH_ETW_MAX_PMC_NAMES);
    for (uint32_t i = 0; i < count; i++)
        if (memchr(names[i], '\0', PERCH_ETW_NAME_MAX) == NULL || names[i][0] == '\0')
            return refuse(why, n, "%s entry %u is empty or longer than %u bytes", what,
                          (unsigned)i + 1, PERCH_ETW_NAME_MAX - 1);
    return 0;
}

static int check_buffers(const perch_etw_config *c, char *why, size_t n)
{
    if (c->buffer_kb != 0 &&
        (c->buffer_kb < PERCH_ETW_BUFFER_KB_MIN || c->buffer_kb > PERCH_ETW_BUFFER_KB_MAX))
        return refuse(why, n, "buffer_kb %u is outside %u..%u KiB", (unsigned)c->buffer_kb,
                      PERCH_ETW_BUFFER_KB_MIN, PERCH_ETW_BUFFER_KB_MAX);
    if (c->max_buffers != 0 && c->max_buffers < c->min_buffers)
        return refuse(why, n, "max_buffers %u is below min_buffers %u", (unsigned)c->max_buffers,
                      (unsigned)c->min_buffers);
    if (c->flush_seconds > 3600)
        return refuse(why, n, "flush_seconds %u is outside 0..3600", (unsigned)c->flush_seconds);
    return 0;
}

int perch_etw_config_check(const perch_etw_config *c, char *why, size_t n)
{
    if (c == NULL || c->sz < sizeof *c)
        return refuse(why, n, "the configuration structure has the wrong size");
    if (memchr(c->session_name, '\0', sizeof c->session_name) == NULL)
        return refuse(why, n, "session_name is longer than %u bytes", PERCH_ETW_NAME_MAX - 1);
    if (c->groups >> PERCH_ETW_GROUP_COUNT || c->stacks >> PERCH_ETW_EVENT_COUNT ||
        c->lbr_events >> PERCH_ETW_EVENT_COUNT)
        return refuse(why, n, "groups, stacks or lbr_events holds an unknown bit");
    if (c->sample_interval != 0 && (c->sample_interval < PERCH_ETW_INTERVAL_MIN ||
                                    c->sample_interval > PERCH_ETW_INTERVAL_MAX))
        return refuse(why, n,
                      "sample_interval %u is outside %u..%u (100 ns units: 0.1221 ms to 1 s)",
                      (unsigned)c->sample_interval, PERCH_ETW_INTERVAL_MIN, PERCH_ETW_INTERVAL_MAX);
    if (c->lbr_filter & ~(uint32_t)PERCH_LBR_VALID_MASK)
        return refuse(why, n, "lbr_filter 0x%x holds unknown bits", (unsigned)c->lbr_filter);
    int err = check_names(c->pmc_sources, c->pmc_source_count, "pmc_sources", why, n);
    if (err == 0)
        err =
            check_names(c->cswitch_counters, c->cswitch_counter_count, "cswitch_counters", why, n);
    return err ? err : check_buffers(c, why, n);
}

static const char *state_text(uint8_t state)
{
    return state == PERCH_ETW_ON ? "on" : state == PERCH_ETW_REFUSED ? "refused" : "off";
}

size_t perch_etw_report_text(const perch_etw_start_report *rep, char *out, size_t n)
{
    size_t len = 0;
    if (out == NULL || n == 0)
        return 0;
    out[0] = '\0';
    for (unsigned f = 0; f < PERCH_ETW_F_COUNT && len + 1 < n; f++) {
        const perch_etw_feature_status *st = &rep->features[f];
        int w = snprintf(out + len, n - len, "%s: %s%s%s\n", feature_names[f],
                         state_text(st->state), st->reason[0] ? ": " : "", st->reason);
        if (w < 0)
            break;
        len += (size_t)w < n - len ? (size_t)w : n - len - 1;
    }
    return len;
}
