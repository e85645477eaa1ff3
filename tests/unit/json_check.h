/*
 * A small strict JSON parser for the export tests (RFC 8259: objects, arrays, strings with
 * escapes, numbers, true/false/null; no trailing commas, no comments, one top-level value).
 * It builds a flat node tree so the tests can walk the output and assert the numbers in it.
 * Header-only (static inline); test code only.
 */
#ifndef PERCH_TEST_JSON_CHECK_H
#define PERCH_TEST_JSON_CHECK_H

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum jtype { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ };

struct jnode {
    enum jtype type;
    double num;          /* J_NUM, J_BOOL (0/1) */
    const char *s;       /* J_STR: raw text between the quotes (escapes not decoded) */
    size_t slen;
    const char *key;     /* member of an object: raw key text */
    size_t klen;
    long first, next;    /* children list */
    long count;          /* J_ARR/J_OBJ: number of children */
};

struct jdoc {
    struct jnode *n;
    long count, cap;
    const char *p;
    const char *err;
};

static inline void jws(struct jdoc *d)
{
    while (*d->p == ' ' || *d->p == '\t' || *d->p == '\n' || *d->p == '\r')
        d->p++;
}

static inline long jnew(struct jdoc *d, enum jtype t)
{
    if (d->count == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 1024;
        d->n = realloc(d->n, (size_t)d->cap * sizeof *d->n);
    }
    memset(&d->n[d->count], 0, sizeof *d->n);
    d->n[d->count].type = t;
    d->n[d->count].first = d->n[d->count].next = -1;
    return d->count++;
}

static inline bool jstring(struct jdoc *d, const char **s, size_t *len)
{
    const char *p = d->p + 1;
    if (*d->p != '"')
        return false;
    for (; *p != '"'; p++) {
        if ((unsigned char)*p < 0x20)
            return false;
        if (*p == '\\') {
            p++;
            if (*p == 'u') {
                for (int i = 1; i <= 4; i++)
                    if (!strchr("0123456789abcdefABCDEF", p[i]) || !p[i])
                        return false;
                p += 4;
            } else if (!*p || !strchr("\"\\/bfnrt", *p)) {
                return false;
            }
        }
    }
    *s = d->p + 1;
    *len = (size_t)(p - d->p - 1);
    d->p = p + 1;
    return true;
}

static inline bool jnumber(struct jdoc *d, double *v)
{
    const char *p = d->p;
    char *end;
    if (*p == '-')
        p++;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (*p >= '0' && *p <= '9')
            p++;
    else
        return false;
    if (*p == '.') {
        if (!(*++p >= '0' && *p <= '9'))
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        if (!(*p >= '0' && *p <= '9'))
            return false;
        while (*p >= '0' && *p <= '9')
            p++;
    }
    *v = strtod(d->p, &end);
    if (end != p)
        return false;
    d->p = p;
    return true;
}

static inline long jvalue(struct jdoc *d, int depth);

/* Parses the members of an array or object opened at d->p into node. */
static inline bool jcontainer(struct jdoc *d, long node, bool obj, int depth)
{
    long last = -1;
    d->p++;
    jws(d);
    if (*d->p == (obj ? '}' : ']')) {
        d->p++;
        return true;
    }
    for (;;) {
        const char *k = NULL;
        size_t kl = 0;
        long child;
        jws(d);
        if (obj) {
            if (!jstring(d, &k, &kl))
                return false;
            jws(d);
            if (*d->p++ != ':')
                return false;
        }
        child = jvalue(d, depth + 1);
        if (child < 0)
            return false;
        d->n[child].key = k;
        d->n[child].klen = kl;
        if (last < 0)
            d->n[node].first = child;
        else
            d->n[last].next = child;
        last = child;
        d->n[node].count++;
        jws(d);
        if (*d->p == ',') {
            d->p++;
            continue;
        }
        if (*d->p++ != (obj ? '}' : ']'))
            return false;
        return true;
    }
}

static inline long jvalue(struct jdoc *d, int depth)
{
    long node;
    jws(d);
    if (depth > 64)
        return -1;
    if (*d->p == '{' || *d->p == '[') {
        bool obj = *d->p == '{';
        node = jnew(d, obj ? J_OBJ : J_ARR);
        return jcontainer(d, node, obj, depth) ? node : -1;
    }
    if (*d->p == '"') {
        node = jnew(d, J_STR);
        return jstring(d, &d->n[node].s, &d->n[node].slen) ? node : -1;
    }
    if (strncmp(d->p, "true", 4) == 0 || strncmp(d->p, "false", 5) == 0) {
        node = jnew(d, J_BOOL);
        d->n[node].num = *d->p == 't';
        d->p += *d->p == 't' ? 4 : 5;
        return node;
    }
    if (strncmp(d->p, "null", 4) == 0) {
        d->p += 4;
        return jnew(d, J_NULL);
    }
    node = jnew(d, J_NUM);
    return jnumber(d, &d->n[node].num) ? node : -1;
}

/* Parses text; returns false (and d->n NULL) if it is not exactly one valid JSON value. */
static inline bool jparse(struct jdoc *d, const char *text)
{
    memset(d, 0, sizeof *d);
    d->p = text;
    if (jvalue(d, 0) != 0)
        goto fail;
    jws(d);
    if (*d->p == 0)
        return true;
fail:
    free(d->n);
    d->n = NULL;
    return false;
}

static inline void jfree(struct jdoc *d)
{
    free(d->n);
    d->n = NULL;
}

/* Member key of object node, or -1. */
static inline long jget(const struct jdoc *d, long node, const char *key)
{
    if (node < 0 || d->n[node].type != J_OBJ)
        return -1;
    for (long c = d->n[node].first; c >= 0; c = d->n[c].next)
        if (d->n[c].klen == strlen(key) && memcmp(d->n[c].key, key, d->n[c].klen) == 0)
            return c;
    return -1;
}

/* Element i of array (or object) node, or -1. */
static inline long jat(const struct jdoc *d, long node, long i)
{
    long c = node >= 0 ? d->n[node].first : -1;
    while (c >= 0 && i-- > 0)
        c = d->n[c].next;
    return c;
}

static inline bool jstreq(const struct jdoc *d, long node, const char *s)
{
    return node >= 0 && d->n[node].type == J_STR && d->n[node].slen == strlen(s) &&
           memcmp(d->n[node].s, s, d->n[node].slen) == 0;
}

static inline double jnum(const struct jdoc *d, long node)
{
    return node >= 0 && d->n[node].type == J_NUM ? d->n[node].num : -1e300;
}

static inline long jlen(const struct jdoc *d, long node)
{
    return node >= 0 ? d->n[node].count : -1;
}

static inline enum jtype jtype_of(const struct jdoc *d, long node)
{
    return node >= 0 ? d->n[node].type : J_NULL;
}

#endif
