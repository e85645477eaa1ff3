/*
 * The symbol path: ';'-separated entries in the syntax of _NT_SYMBOL_PATH, reduced to the
 * local directories Perch searches (docs/symbols.md "Search order"). A bare entry is searched
 * both as a plain folder and as a symbol store; "srv*A*B*URL", "symsrv*DLL*A*URL" and
 * "cache*A" contribute their local stores A, B; an http(s) location is skipped (Perch has no
 * network client) and the skip is said in the notes.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "model/mem.h"
#include "perch/error.h"
#include "perch/sym.h"
#include "sym/sym_internal.h"
#include "sym/sympath_internal.h"

#define MAX_DIRS  256u
#define MAX_NOTES 16384u

const char *perch__sym_basename(const char *path)
{
    const char *base = path;
    for (const char *p = path; *p; p++)
        if (*p == '/' || *p == '\\')
            base = p + 1;
    return base;
}

static bool prefix_ci(const char *s, size_t len, const char *prefix)
{
    size_t n = strlen(prefix);
    if (len < n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (tolower((unsigned char)s[i]) != prefix[i])
            return false;
    return true;
}

static int add_dir(perch_sympath *sp, const char *s, size_t len, bool store_only)
{
    while (len > 0 && (s[0] == ' ' || s[0] == '\t'))
        s++, len--;
    while (len > 0 && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    if (len == 0 || sp->count >= MAX_DIRS)
        return 0;
    int err =
        perch__grow_array((void **)&sp->dirs, sizeof *sp->dirs, &sp->cap, sp->count + 1, MAX_DIRS);
    if (err)
        return err;
    char *d = perch__alloc(len + 1);
    if (d == NULL)
        return PERCH_ENOMEM;
    memcpy(d, s, len);
    d[len] = '\0';
    sp->dirs[sp->count++] = (perch__sym_dir){d, store_only};
    return 0;
}

static void note(perch_sympath *sp, const char *entry, size_t elen, const char *what, size_t wlen,
                 const char *why)
{
    size_t used = strlen(sp->notes);
    snprintf(sp->notes + used, MAX_NOTES - used, "symbol path entry '%.*s': %.*s %s\n",
             (int)(elen > 200 ? 200 : elen), entry, (int)(wlen > 200 ? 200 : wlen), what, why);
}

static bool is_url(const char *s, size_t len)
{
    return prefix_ci(s, len, "http://") || prefix_ci(s, len, "https://");
}

/* A "srv*...", "symsrv*DLL*..." or "cache*..." entry: its local parts become stores. */
static int add_starred(perch_sympath *sp, const char *e, size_t len, size_t skip_tokens)
{
    size_t locals = 0, pos = 0, token = 0;
    while (pos <= len) {
        const char *star = memchr(e + pos, '*', len - pos);
        size_t end = star ? (size_t)(star - e) : len;
        if (token++ >= skip_tokens && end > pos) {
            if (is_url(e + pos, end - pos)) {
                note(sp, e, len, e + pos, end - pos,
                     "skipped: Perch has no network client, only local stores are searched");
            } else {
                int err = add_dir(sp, e + pos, end - pos, true);
                if (err)
                    return err;
                locals++;
            }
        }
        pos = end + 1;
    }
    if (locals == 0)
        note(sp, e, len, "", 0, "names no local store: nothing searched for it");
    return 0;
}

static int add_entry(perch_sympath *sp, const char *e, size_t len)
{
    while (len > 0 && (e[0] == ' ' || e[0] == '\t'))
        e++, len--;
    if (len == 0)
        return 0;
    if (prefix_ci(e, len, "srv*") || prefix_ci(e, len, "cache*"))
        return add_starred(sp, e, len, 1);
    if (prefix_ci(e, len, "symsrv*"))
        return add_starred(sp, e, len, 2);
    if (is_url(e, len)) {
        note(sp, e, len, "", 0, "skipped: Perch has no network client");
        return 0;
    }
    return add_dir(sp, e, len, false);
}

int perch_sympath_parse(const char *text, perch_sympath **out)
{
    perch_sympath *sp = perch__calloc(1, sizeof *sp);
    int err = 0;
    if (sp == NULL || (sp->notes = perch__calloc(MAX_NOTES, 1)) == NULL) {
        perch_sympath_destroy(sp);
        return PERCH_ENOMEM;
    }
    for (const char *p = text ? text : ""; *p && !err;) {
        const char *semi = strchr(p, ';');
        size_t len = semi ? (size_t)(semi - p) : strlen(p);
        err = add_entry(sp, p, len);
        p += len + (semi != NULL);
    }
    if (err) {
        perch_sympath_destroy(sp);
        return err;
    }
    *out = sp;
    return 0;
}

void perch_sympath_destroy(perch_sympath *sp)
{
    if (sp == NULL)
        return;
    for (uint32_t i = 0; i < sp->count; i++)
        perch__free(sp->dirs[i].path);
    perch__free(sp->dirs);
    perch__free(sp->notes);
    perch__free(sp);
}

const char *perch_sympath_notes(const perch_sympath *sp)
{
    return sp->notes;
}

size_t perch_sympath_dir_count(const perch_sympath *sp)
{
    return sp->count;
}
