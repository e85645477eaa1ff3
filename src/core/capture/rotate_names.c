/*
 * Names of rotated capture files (rotate_names.h): formatting with a UTC calendar date
 * computed from the day count (proleptic Gregorian calendar, the days-from-civil inversion
 * by 400-year eras), parsing, and listing a prefix's files in sequence order.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture/rotate_names.h"
#include "perch/error.h"
#include "util/mem.h"

bool perch__rotate_prefix_ok(const char *p)
{
    size_t n = strlen(p);
    if (n == 0 || n > 32)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = p[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}

static char ascii_lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

/* True when the n bytes at s are the lower-case word w in any case and w has n bytes. */
static bool is_word(const char *s, size_t n, const char *w)
{
    size_t i = 0;
    for (; i < n && w[i] != '\0'; i++)
        if (ascii_lower(s[i]) != w[i])
            return false;
    return i == n && w[i] == '\0';
}

/* CON, PRN, AUX, NUL, COM0-9, LPT0-9, COM and LPT with a superscript 1, 2 or 3, CONIN$,
 * CONOUT$, with any extension and spaces before it: device names Windows reserves (Microsoft
 * Learn, "Naming Files, Paths, and Namespaces"). */
static bool reserved_device(const char *stem)
{
    static const char *const names[] = {"con", "prn", "aux", "nul", "conin$", "conout$"};
    size_t n = strcspn(stem, ".");
    while (n > 0 && stem[n - 1] == ' ')
        n--;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (is_word(stem, n, names[i]))
            return true;
    if (n < 4 || !(is_word(stem, 3, "com") || is_word(stem, 3, "lpt")))
        return false;
    const unsigned char *d = (const unsigned char *)stem + 3; /* 0-9, or superscript 1-3 in UTF-8 */
    return (n == 4 && d[0] >= '0' && d[0] <= '9') ||
           (n == 5 && d[0] == 0xC2 && (d[1] == 0xB9 || d[1] == 0xB2 || d[1] == 0xB3));
}

/* perch, snapshot, alone or followed by '-': the prefixes of perchd's own files. */
static bool own_prefix(const char *stem)
{
    static const char *const own[] = {"perch", "snapshot"};
    size_t n = strcspn(stem, "-");
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++)
        if (is_word(stem, n, own[i]))
            return true;
    return false;
}

int perch__rotate_check_name(const char *name, char *stem, size_t len, char *why, size_t why_len)
{
    size_t n = strlen(name);
    if (n > 6 && is_word(name + n - 6, 6, ".perch"))
        n -= 6;
    char s[33] = "";
    if (n <= 32)
        memcpy(s, name, n);
    const char *problem = NULL;
    if (strpbrk(name, "\\/:") != NULL)
        problem = "it may not contain a directory or a drive (\\, / or :): give a plain name";
    else if (n == 0 || n > 32 || !perch__rotate_prefix_ok(s))
        problem = "use 1 to 32 letters, digits, '_', '-' or '.'";
    else if (s[0] == '.' || s[n - 1] == '.')
        problem = "it may not start or end with '.'";
    else if (reserved_device(s))
        problem = "Windows reserves it for a device (CON, PRN, AUX, NUL, COM0-9, LPT0-9)";
    else if (own_prefix(s))
        problem = "perch and snapshot are the names perchd gives its own recordings and snapshots";
    else if (len <= n)
        problem = "it is longer than this caller can hold";
    if (len > 0)
        snprintf(stem, len, "%s", problem == NULL ? s : "");
    if (problem == NULL)
        return 0;
    if (why_len > 0)
        snprintf(why, why_len, "'%s' is not a capture name: %s", name, problem);
    return PERCH_EINVAL;
}

bool perch__capture_fetch_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n <= 6 || !is_word(name + n - 6, 6, ".perch") || reserved_device(name))
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c < 0x20 || c == 0x7f || strchr("\\/:*?\"<>|", c) != NULL)
            return false;
    }
    return true;
}

/* Year, month (1..12) and day (1..31) of a day count since 1970-01-01. */
static void civil(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
    int64_t z = days + 719468; /* days since 0000-03-01 */
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);                          /* [0, 146096] */
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365; /* [0, 399] */
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);               /* [0, 365] */
    unsigned mp = (5 * doy + 2) / 153;                                    /* March = 0 */
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

void perch__rotate_name(const char *prefix, uint64_t wall_ms, uint32_t seq, char *out, size_t len)
{
    uint64_t s = wall_ms / 1000;
    int64_t y;
    unsigned mo, d;
    civil((int64_t)(s / 86400), &y, &mo, &d);
    unsigned sod = (unsigned)(s % 86400);
    snprintf(out, len, "%s-%04lld%02u%02u-%02u%02u%02u-%06u.perch", prefix, (long long)y, mo, d,
             sod / 3600, sod / 60 % 60, sod % 60, (unsigned)seq);
}

static bool digits(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] < '0' || p[i] > '9')
            return false;
    return true;
}

bool perch__rotate_parse(const char *prefix, const char *name, uint32_t *seq)
{
    size_t pl = strlen(prefix), nl = strlen(name);
    const char *p = name + pl;
    /* "-YYYYMMDD-HHMMSS-" is 17 bytes, then at least 6 digits, then ".perch" */
    if (nl < pl + 17 + 6 + 6 || strncmp(name, prefix, pl) != 0 || p[0] != '-' || p[9] != '-' ||
        p[16] != '-' || !digits(p + 1, 8) || !digits(p + 10, 6))
        return false;
    const char *q = p + 17;
    size_t sl = nl - pl - 17 - 6;
    if (sl > 9 || !digits(q, sl) || strcmp(q + sl, ".perch") != 0)
        return false;
    *seq = (uint32_t)strtoul(q, NULL, 10);
    return true;
}

typedef struct ranked {
    perch_fs_entry e;
    uint32_t seq;
} ranked;

static int by_seq(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return strcmp(x->e.name, y->e.name);
}

size_t perch__rotate_keep_ours(const char *prefix, perch_fs_entry *e, size_t n)
{
    return perch__rotate_keep_named(prefix, NULL, e, n);
}

size_t perch__rotate_keep_named(const char *prefix, const char *first, perch_fs_entry *e, size_t n)
{
    size_t k = 0;
    ranked *r = perch__calloc(n ? n : 1, sizeof *r);
    for (size_t i = 0; i < n; i++) {
        uint32_t seq;
        if (r && first && strcmp(e[i].name, first) == 0)
            r[k++] = (ranked){e[i], 0};
        else if (r && perch__rotate_parse(prefix, e[i].name, &seq))
            r[k++] = (ranked){e[i], seq};
        else
            perch__free(e[i].name);
    }
    if (!r)
        return 0; /* every name freed: nothing is deleted */
    qsort(r, k, sizeof *r, by_seq);
    for (size_t i = 0; i < k; i++)
        e[i] = r[i].e;
    perch__free(r);
    return k;
}

int perch__rotate_last_seq(const char *dir, const char *prefix, uint32_t *seq)
{
    perch_fs_entry *e = NULL;
    size_t n = 0;
    int err = perch_fs_list(dir, 100000, &e, &n);
    if (err)
        return err;
    n = perch__rotate_keep_ours(prefix, e, n);
    *seq = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t s;
        if (perch__rotate_parse(prefix, e[i].name, &s) && s > *seq)
            *seq = s;
    }
    perch_fs_list_free(e, n);
    return 0;
}
