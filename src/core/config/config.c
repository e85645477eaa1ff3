/*
 * The configuration table (include/perch/config.h): every key perchd reads, its type, default
 * and range, and the parsing, checking and formatting of values in their canonical text form.
 * Defaults are written here as text and go through the same parser as user input, so a
 * default can never be outside its own range (test_config checks each one).
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "perch/config.h"
#include "perch/error.h"

#define FIELD(f) offsetof(perch_config, f), sizeof(((perch_config *)0)->f)

static const char *const session_tokens[] = {"auto", "private", NULL};
static const char *const group_tokens[] = {"process",    "thread",  "image", "cswitch",
                                           "dispatcher", "profile", NULL};
static const char *const stack_tokens[] = {"profile", "pmc", "cswitch", "readythread", NULL};

#define U32(name, field, lo, hi, def, unit, help)                                                  \
    {                                                                                              \
        name, PERCH_CONFIG_U32, FIELD(field), lo, hi, def, unit, NULL, help                        \
    }
#define BOOL(name, field, def, help)                                                               \
    {                                                                                              \
        name, PERCH_CONFIG_BOOL, FIELD(field), 0, 1, def, "", NULL, help                           \
    }

static const perch_config_key keys[] = {
    {"DataDirectory", PERCH_CONFIG_PATH, FIELD(data_dir), 0, 0, "%ProgramData%\\Perch", "", NULL,
     "where perchd keeps its log files and its status"},
    {"CaptureDirectory", PERCH_CONFIG_PATH, FIELD(capture_dir), 0, 0,
     "%ProgramData%\\Perch\\captures", "", NULL, "where recordings and snapshots are written"},
    {"Session", PERCH_CONFIG_ENUM, FIELD(session), 0, 0, "auto", "", session_tokens,
     "auto: a private system-logger session, the NT Kernel Logger where that is refused; "
     "private: never the NT Kernel Logger"},
    {"EventGroups", PERCH_CONFIG_FLAGS, FIELD(event_groups), 1, 0, "all", "", group_tokens,
     "the kernel event groups the session enables"},
    {"StackEvents", PERCH_CONFIG_FLAGS, FIELD(stack_events), 0, 0, "all", "", stack_tokens,
     "the events that carry a kernel and user stack walk"},
    U32("SampleIntervalUs", sample_interval_us, 125, 1000000, "1000", "microseconds",
        "time between two CPU samples on each processor"),
    {"PmcSources", PERCH_CONFIG_NAMES, FIELD(pmc_sources), 0, 0, "none", "", NULL,
     "PMC overflow sources to sample by name (as the machine lists them), none for timer only"},
    U32("PmcInterval", pmc_interval, 4096, 0x7fffffffu, "65536", "events",
        "counter events between two PMC overflow samples"),
    {"CSwitchCounters", PERCH_CONFIG_NAMES, FIELD(cswitch_counters), 0, 0, "none", "", NULL,
     "PMC counters read on every context switch, by source name"},
    BOOL("Lbr", lbr, "off", "last branch records (Windows 10 1903 and later)"),
    {"LbrEvents", PERCH_CONFIG_FLAGS, FIELD(lbr_events), 0, 0, "profile", "", stack_tokens,
     "the events that carry last branch records when Lbr is on"},
    {"LbrFilters", PERCH_CONFIG_MASK, FIELD(lbr_filters), 0, 0x3ff, "0", "(a bit mask)", NULL,
     "LBR filter flags, as TraceLbrConfigurationInfo takes them"},
    U32("BufferSizeKb", buffer_size_kb, 4, 1024, "64", "KiB", "size of each session buffer"),
    U32("BufferCount", buffer_count, 0, 4096, "0", "buffers",
        "session buffers at least (0: two per processor, at least 16)"),
    U32("QueueMb", queue_mb, 1, 1024, "64", "MiB",
        "queue between the event callback and the model; events beyond it are dropped and "
        "counted"),
    U32("StopDrainSeconds", stop_drain_seconds, 1, 600, "10", "seconds",
        "at perchd's stop, how long the model may take for the events still queued; then the "
        "rest are dropped and counted"),
    U32("FlightRecorderSeconds", recorder_seconds, 0, 3600, "60", "seconds",
        "how much recent history the flight recorder keeps (0 turns it off)"),
    U32("FlightRecorderMb", recorder_mb, 16, 16384, "256", "MiB",
        "memory cap of the flight recorder; the oldest history is dropped first"),
    BOOL("RecordOnStart", record_on_start, "off",
         "record rotating capture files from the start of the service"),
    U32("RotateSizeMb", rotate_size_mb, 1, 65536, "256", "MiB",
        "a recording moves to a new capture file at this size"),
    U32("RotateAgeMinutes", rotate_age_minutes, 1, 10080, "60", "minutes",
        "a recording moves to a new capture file at this age"),
    U32("DiskCapMb", disk_cap_mb, 16, 16777216, "4096", "MiB",
        "total size of the capture files of recordings; the oldest are deleted first"),
    U32("SnapshotCapMb", snapshot_cap_mb, 16, 16777216, "4096", "MiB",
        "total size of the flight-recorder snapshots in the capture directory; once they reach "
        "it a new snapshot is refused (none is deleted)"),
    U32("LogFileKb", log_file_kb, 64, 1048576, "1024", "KiB",
        "the log file moves to perchd.1.log at this size"),
    U32("LogFiles", log_files, 1, 100, "4", "files", "log files kept, the current one included"),
    {"SymbolPath", PERCH_CONFIG_SYMPATH, FIELD(symbol_path), 0, 0, "none", "", NULL,
     "where DbgHelp looks for symbols (as _NT_SYMBOL_PATH); none: PERCH_SYMBOL_PATH, else "
     "DbgHelp's own _NT_SYMBOL_PATH"},
};

#define KEY_COUNT (sizeof keys / sizeof keys[0])

size_t perch_config_key_count(void)
{
    return KEY_COUNT;
}

const perch_config_key *perch_config_key_at(size_t i)
{
    return i < KEY_COUNT ? &keys[i] : NULL;
}

static bool same_word(const char *a, const char *b, size_t blen)
{
    size_t i = 0;
    for (; i < blen && a[i] != '\0'; i++)
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
            return false;
    return i == blen && a[i] == '\0';
}

const perch_config_key *perch_config_find(const char *name)
{
    if (name == NULL)
        return NULL;
    for (size_t i = 0; i < KEY_COUNT; i++)
        if (same_word(keys[i].name, name, strlen(name)))
            return &keys[i];
    return NULL;
}

/* ---- ranges and refusals ------------------------------------------------------------ */

static size_t token_count(const char *const *t)
{
    size_t n = 0;
    while (t[n] != NULL)
        n++;
    return n;
}

static void join_tokens(const char *const *t, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (size_t i = 0; t[i] != NULL && used < len; i++) {
        int n = snprintf(buf + used, len - used, "%s%s", i ? ", " : "", t[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

void perch_config_describe_range(const perch_config_key *k, char *buf, size_t len)
{
    char words[160];
    switch (k->type) {
    case PERCH_CONFIG_U32:
        snprintf(buf, len, "%u to %u %s", k->min, k->max, k->unit);
        break;
    case PERCH_CONFIG_MASK:
        snprintf(buf, len, "0x%x to 0x%x %s", k->min, k->max, k->unit);
        break;
    case PERCH_CONFIG_BOOL:
        snprintf(buf, len, "on or off");
        break;
    case PERCH_CONFIG_PATH:
        snprintf(buf, len,
                 "an absolute directory (C:\\..., \\\\server\\share\\... or %%VARIABLE%%\\...) "
                 "shorter than %zu bytes",
                 k->size);
        break;
    case PERCH_CONFIG_ENUM:
        join_tokens(k->tokens, words, sizeof words);
        snprintf(buf, len, "one of %s", words);
        break;
    case PERCH_CONFIG_FLAGS:
        join_tokens(k->tokens, words, sizeof words);
        snprintf(buf, len, "a comma list of %s, or all%s", words, k->min ? "" : ", or none");
        break;
    case PERCH_CONFIG_NAMES:
        snprintf(buf, len,
                 "a comma list of up to %d names (letters, digits, _; none is not a name), or none",
                 PERCH_CONFIG_MAX_NAMES);
        break;
    case PERCH_CONFIG_SYMPATH:
        snprintf(buf, len,
                 "entries separated by ; (an absolute directory, srv*DIR*URL, cache*DIR, "
                 "symsrv*DLL*DIR*URL or an http(s) URL), or none");
        break;
    }
}

/* Fills why with "<Key>: '<value>' is <problem>; allowed: <range>." and returns err. */
static int refuse(const perch_config_key *k, const char *text, const char *problem, int err,
                  char *why, size_t why_len)
{
    char range[200];
    if (why == NULL || why_len == 0)
        return err;
    perch_config_describe_range(k, range, sizeof range);
    snprintf(why, why_len, "%s: '%.60s%s' is %s; allowed: %s.", k->name, text,
             strlen(text) > 60 ? "..." : "", problem, range);
    return err;
}

/* ---- parsing -------------------------------------------------------------------------- */

/* Copies text without leading and trailing blanks into out (at most len bytes with NUL);
 * false when it does not fit. */
static bool trimmed(const char *text, char *out, size_t len)
{
    while (*text == ' ' || *text == '\t')
        text++;
    size_t n = strlen(text);
    while (n > 0 && (text[n - 1] == ' ' || text[n - 1] == '\t'))
        n--;
    if (n >= len)
        return false;
    memcpy(out, text, n);
    out[n] = '\0';
    return true;
}

/* 0 and *v, PERCH_EINVAL (not a number) or PERCH_ERANGE (more than 32 bits). */
static int parse_number(const char *s, uint32_t *v)
{
    unsigned base = 10;
    uint64_t acc = 0;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        base = 16;
        s += 2;
    }
    if (*s == '\0')
        return PERCH_EINVAL;
    for (; *s != '\0'; s++) {
        unsigned d;
        if (isdigit((unsigned char)*s))
            d = (unsigned)(*s - '0');
        else if (base == 16 && isxdigit((unsigned char)*s))
            d = (unsigned)(tolower((unsigned char)*s) - 'a' + 10);
        else
            return PERCH_EINVAL;
        acc = acc * base + d;
        if (acc > 0xffffffffull)
            return PERCH_ERANGE;
    }
    *v = (uint32_t)acc;
    return 0;
}

static int parse_bool(const char *s, uint32_t *v)
{
    static const char *const on[] = {"on", "1", "true", "yes", NULL};
    static const char *const off[] = {"off", "0", "false", "no", NULL};
    for (size_t i = 0; on[i] != NULL; i++) {
        if (same_word(on[i], s, strlen(s))) {
            *v = 1;
            return 0;
        }
        if (same_word(off[i], s, strlen(s))) {
            *v = 0;
            return 0;
        }
    }
    return PERCH_EINVAL;
}

/* The index of the token word[0..n) in t, or -1. */
static int token_index(const char *const *t, const char *word, size_t n)
{
    for (int i = 0; t[i] != NULL; i++)
        if (same_word(t[i], word, n))
            return i;
    return -1;
}

/* Calls fn(ctx, item, len) for each comma-separated item, blanks trimmed; stops at the first
 * non-zero return. */
static int each_item(const char *s, int (*fn)(void *ctx, const char *item, size_t n), void *ctx)
{
    while (*s != '\0') {
        const char *end = strchr(s, ',');
        size_t n = end ? (size_t)(end - s) : strlen(s);
        const char *item = s;
        while (n > 0 && (*item == ' ' || *item == '\t')) {
            item++;
            n--;
        }
        while (n > 0 && (item[n - 1] == ' ' || item[n - 1] == '\t'))
            n--;
        int err = fn(ctx, item, n);
        if (err != 0)
            return err;
        s = end ? end + 1 : s + strlen(s);
    }
    return 0;
}

struct flags_ctx {
    const char *const *tokens;
    uint32_t bits;
};

static int add_flag(void *ctx, const char *item, size_t n)
{
    struct flags_ctx *f = ctx;
    int i = token_index(f->tokens, item, n);
    if (i < 0)
        return PERCH_EINVAL;
    f->bits |= 1u << i;
    return 0;
}

static int parse_flags(const perch_config_key *k, const char *s, uint32_t *v)
{
    struct flags_ctx f = {k->tokens, 0};
    if (same_word("all", s, strlen(s))) {
        *v = (1u << token_count(k->tokens)) - 1u;
        return 0;
    }
    if (*s == '\0' || same_word("none", s, strlen(s)))
        f.bits = 0;
    else if (each_item(s, add_flag, &f) != 0)
        return PERCH_EINVAL;
    if (f.bits == 0 && k->min > 0)
        return PERCH_ERANGE;
    *v = f.bits;
    return 0;
}

struct names_ctx {
    char out[PERCH_CONFIG_NAMES_MAX];
    size_t used;
    size_t count;
};

static bool has_name(const struct names_ctx *c, const char *name)
{
    for (const char *p = c->out; *p != '\0';) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (same_word(name, p, len))
            return true;
        p += len + (end ? 1 : 0);
    }
    return false;
}

static int add_name(void *ctx, const char *item, size_t n)
{
    struct names_ctx *c = ctx;
    if (n == 0 || n >= PERCH_CONFIG_NAME_LEN || same_word("none", item, n))
        return PERCH_EINVAL; /* "none" is the empty list, never one of its names */
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)item[i]) && item[i] != '_')
            return PERCH_EINVAL;
    char name[PERCH_CONFIG_NAME_LEN];
    memcpy(name, item, n);
    name[n] = '\0';
    if (has_name(c, name))
        return 0;
    if (++c->count > PERCH_CONFIG_MAX_NAMES || c->used + n + 2 > sizeof c->out)
        return PERCH_ERANGE;
    c->used += (size_t)snprintf(c->out + c->used, sizeof c->out - c->used, "%s%s",
                                c->used ? "," : "", name);
    return 0;
}

static int parse_names(const char *s, char *out, size_t len)
{
    struct names_ctx c;
    memset(&c, 0, sizeof c);
    if (*s != '\0' && !same_word("none", s, strlen(s))) {
        int err = each_item(s, add_name, &c);
        if (err != 0)
            return err;
    }
    if (c.used + 1 > len)
        return PERCH_ERANGE;
    memcpy(out, c.out, c.used + 1);
    return 0;
}

static bool is_absolute_dir(const char *s)
{
    if (s[0] == '%')
        return strchr(s + 1, '%') != NULL;
    if (s[0] == '\\' && s[1] == '\\')
        return s[2] != '\0';
    return isalpha((unsigned char)s[0]) && s[1] == ':' && (s[2] == '\\' || s[2] == '/');
}

static int parse_path(const char *s)
{
    for (const char *p = s; *p != '\0'; p++)
        if ((unsigned char)*p < 0x20 || strchr("<>\"|?*", *p) != NULL)
            return PERCH_EINVAL;
    return is_absolute_dir(s) ? 0 : PERCH_EINVAL;
}

/* True when the n bytes at e begin with prefix (case-insensitive) and go on after it. */
static bool has_prefix(const char *e, size_t n, const char *prefix)
{
    size_t m = strlen(prefix);
    if (n <= m)
        return false;
    for (size_t i = 0; i < m; i++)
        if (tolower((unsigned char)e[i]) != prefix[i])
            return false;
    return true;
}

/* One entry of a symbol path (n bytes at e): a store form (srv*, cache*, symsrv*: DbgHelp
 * checks their parts), an http(s) URL, or an absolute directory. Empty entries are allowed. */
static bool sympath_entry(const char *e, size_t n)
{
    static const char *const forms[] = {"srv*", "cache*", "symsrv*", "http://", "https://"};
    char dir[PERCH_CONFIG_PATH_MAX];
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        if (has_prefix(e, n, forms[i]))
            return true;
    if (n == 0 || n >= sizeof dir)
        return n == 0;
    memcpy(dir, e, n);
    dir[n] = '\0';
    return is_absolute_dir(dir);
}

/* A symbol path: ';'-separated entries, no control or "<>| characters; "none" or "" clear it. */
static int parse_sympath(const char *s, char *out)
{
    if (*s == '\0' || same_word("none", s, strlen(s))) {
        out[0] = '\0';
        return 0;
    }
    for (const char *p = s; *p != '\0'; p++)
        if ((unsigned char)*p < 0x20 || strchr("<>\"|", *p) != NULL)
            return PERCH_EINVAL;
    for (const char *e = s; *e != '\0';) {
        size_t n = strcspn(e, ";");
        if (!sympath_entry(e, n))
            return PERCH_EINVAL;
        e += n + (e[n] == ';');
    }
    memcpy(out, s, strlen(s) + 1);
    return 0;
}

/* ---- set and get ---------------------------------------------------------------------- */

static int check_number(const perch_config_key *k, uint32_t v)
{
    return v < k->min || v > k->max ? PERCH_ERANGE : 0;
}

static const char *problem_of(const perch_config_key *k, int err)
{
    if (err == PERCH_ERANGE)
        return k->type == PERCH_CONFIG_FLAGS   ? "empty"
               : k->type == PERCH_CONFIG_NAMES ? "too many names"
                                               : "out of range";
    switch (k->type) {
    case PERCH_CONFIG_U32:
    case PERCH_CONFIG_MASK:
        return "not a number";
    case PERCH_CONFIG_BOOL:
        return "not on or off";
    case PERCH_CONFIG_PATH:
        return "not an absolute directory";
    case PERCH_CONFIG_NAMES:
        return "not a list of names";
    case PERCH_CONFIG_SYMPATH:
        return "not a symbol path";
    default:
        return "not a known word";
    }
}

/* Parses value into the field's bytes at dst (k->size of them). */
static int parse_value(const perch_config_key *k, const char *value, void *dst)
{
    uint32_t v = 0;
    int err;
    switch (k->type) {
    case PERCH_CONFIG_U32:
    case PERCH_CONFIG_MASK:
        err = parse_number(value, &v);
        err = err ? err : check_number(k, v);
        break;
    case PERCH_CONFIG_BOOL:
        err = parse_bool(value, &v);
        break;
    case PERCH_CONFIG_ENUM: {
        int i = token_index(k->tokens, value, strlen(value));
        err = i < 0 ? PERCH_EINVAL : 0;
        v = (uint32_t)i;
        break;
    }
    case PERCH_CONFIG_FLAGS:
        err = parse_flags(k, value, &v);
        break;
    case PERCH_CONFIG_NAMES:
        return parse_names(value, dst, k->size);
    case PERCH_CONFIG_PATH:
        err = parse_path(value);
        if (err == 0)
            memcpy(dst, value, strlen(value) + 1);
        return err;
    case PERCH_CONFIG_SYMPATH:
        return parse_sympath(value, dst);
    default:
        return PERCH_EINVAL;
    }
    if (err == 0)
        memcpy(dst, &v, sizeof v);
    return err;
}

int perch_config_set(perch_config *c, const perch_config_key *k, const char *text, char *why,
                     size_t why_len)
{
    char value[PERCH_CONFIG_PATH_MAX];
    char field[PERCH_CONFIG_PATH_MAX];
    if (c == NULL || k == NULL || text == NULL)
        return PERCH_EINVAL;
    bool path = k->type == PERCH_CONFIG_PATH || k->type == PERCH_CONFIG_SYMPATH;
    if (!trimmed(text, value, path ? k->size : sizeof value))
        return refuse(k, text, "too long", PERCH_ERANGE, why, why_len);
    int err = parse_value(k, value, field);
    if (err != 0)
        return refuse(k, value, problem_of(k, err), err, why, why_len);
    memcpy((char *)c + k->offset, field, perch_config_is_text(k) ? strlen(field) + 1 : k->size);
    return 0;
}

int perch_config_set_named(perch_config *c, const char *name, const char *text, char *why,
                           size_t why_len)
{
    const perch_config_key *k = perch_config_find(name);
    if (k == NULL) {
        if (why != NULL && why_len > 0)
            snprintf(why, why_len,
                     "'%.60s' is not a configuration key; 'perchd config show' lists them.",
                     name ? name : "");
        return PERCH_ENOENT;
    }
    return perch_config_set(c, k, text, why, why_len);
}

int perch_config_set_number(perch_config *c, const perch_config_key *k, uint32_t value, char *why,
                            size_t why_len)
{
    char text[16];
    if (c == NULL || k == NULL || !perch_config_is_number(k))
        return PERCH_EINVAL;
    snprintf(text, sizeof text, "%u", value);
    return perch_config_set(c, k, text, why, why_len);
}

bool perch_config_is_text(const perch_config_key *k)
{
    return k->type == PERCH_CONFIG_PATH || k->type == PERCH_CONFIG_NAMES ||
           k->type == PERCH_CONFIG_SYMPATH;
}

bool perch_config_is_number(const perch_config_key *k)
{
    return k->type == PERCH_CONFIG_U32 || k->type == PERCH_CONFIG_MASK ||
           k->type == PERCH_CONFIG_BOOL;
}

uint32_t perch_config_number(const perch_config *c, const perch_config_key *k)
{
    uint32_t v = 0;
    if (perch_config_is_number(k))
        memcpy(&v, (const char *)c + k->offset, sizeof v);
    return v;
}

static int format_flags(const perch_config_key *k, uint32_t bits, char *buf, size_t len)
{
    size_t n = token_count(k->tokens), used = 0;
    if (bits == 0)
        return snprintf(buf, len, "none");
    if (bits == (1u << n) - 1u)
        return snprintf(buf, len, "all");
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (!(bits & (1u << i)))
            continue;
        int w = snprintf(buf + used, len > used ? len - used : 0, "%s%s", used ? "," : "",
                         k->tokens[i]);
        used += (size_t)w;
    }
    return (int)used;
}

int perch_config_format(const perch_config *c, const perch_config_key *k, char *buf, size_t len)
{
    const char *field = (const char *)c + k->offset;
    uint32_t v = 0;
    int n;
    if (len == 0)
        return PERCH_ERANGE;
    if (!perch_config_is_text(k))
        memcpy(&v, field, sizeof v);
    switch (k->type) {
    case PERCH_CONFIG_U32:
        n = snprintf(buf, len, "%u", v);
        break;
    case PERCH_CONFIG_MASK:
        n = snprintf(buf, len, "0x%x", v);
        break;
    case PERCH_CONFIG_BOOL:
        n = snprintf(buf, len, "%s", v ? "on" : "off");
        break;
    case PERCH_CONFIG_ENUM:
        n = snprintf(buf, len, "%s", v < token_count(k->tokens) ? k->tokens[v] : "?");
        break;
    case PERCH_CONFIG_FLAGS:
        n = format_flags(k, v, buf, len);
        break;
    case PERCH_CONFIG_NAMES:
    case PERCH_CONFIG_SYMPATH:
        n = snprintf(buf, len, "%s", field[0] ? field : "none");
        break;
    default:
        n = snprintf(buf, len, "%s", field);
        break;
    }
    return n < 0 || (size_t)n >= len ? PERCH_ERANGE : 0;
}

void perch_config_defaults(perch_config *c)
{
    memset(c, 0, sizeof *c);
    for (size_t i = 0; i < KEY_COUNT; i++)
        (void)perch_config_set(c, &keys[i], keys[i].def, NULL, 0);
}

size_t perch_config_split_names(const char *value, char (*names)[PERCH_CONFIG_NAME_LEN], size_t max)
{
    size_t count = 0;
    while (value != NULL && *value != '\0' && count < max) {
        const char *end = strchr(value, ',');
        size_t n = end ? (size_t)(end - value) : strlen(value);
        if (n > 0 && n < PERCH_CONFIG_NAME_LEN) {
            memcpy(names[count], value, n);
            names[count++][n] = '\0';
        }
        value += n + (end ? 1 : 0);
    }
    return count;
}
