/*
 * The checks of the rules across records that the capture reader and writer share
 * (rules.h): stack ids dense from 1 and defined before a sample names them, ledger and stat
 * names once each, valid UTF-8, within the caps. Each is a comparison or a hash lookup, cheap
 * enough for every stack and sample of an import; only a broken rule formats its reason.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "capture/rules.h"
#include "perch/capture.h"
#include "perch/utf16.h"

/* Writes a reason (cut to CAP_RULE_REASON - 1 bytes, which only absurd ids reach). */
static void say(char why[CAP_RULE_REASON], const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

static void say(char why[CAP_RULE_REASON], const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, CAP_RULE_REASON, fmt, ap);
    va_end(ap);
}

perch__cap_rule perch__cap_rule_stack(uint64_t stacks, uint64_t id, char why[CAP_RULE_REASON])
{
    if (id == stacks + 1)
        return CAP_RULE_OK;
    if (id == 0)
        say(why, "stack id 0 (ids are dense from 1; 0 means no stack)");
    else if (id <= stacks)
        say(why, "stack id %" PRIu64 " given twice", id);
    else
        say(why,
            "stack id %" PRIu64 " out of order: the next is %" PRIu64 " (ids are dense from 1)", id,
            stacks + 1);
    return CAP_RULE_BROKEN;
}

perch__cap_rule perch__cap_rule_sample(uint64_t stacks, uint64_t id, char why[CAP_RULE_REASON])
{
    if (id <= stacks)
        return CAP_RULE_OK;
    say(why, "a sample names stack id %" PRIu64 " before it is defined (%" PRIu64 " stacks so far)",
        id, stacks);
    return CAP_RULE_BROKEN;
}

/* Whether s (len bytes) is valid UTF-8. */
static bool utf8_text(const char *s, size_t len)
{
    const uint8_t *p = (const uint8_t *)s;
    for (size_t i = 0; i < len;) {
        size_t k = p[i] < 0x80 ? 1 : perch_utf8_seq_len(p + i, len - i);
        if (k == 0)
            return false;
        i += k;
    }
    return true;
}

/* At most 40 bytes of name for a reason, anything but printable ASCII as '?'. */
static void show(const char *name, size_t len, char out[48])
{
    size_t n = 0;
    for (; n < len && n < 40; n++)
        out[n] = name[n] >= 0x20 && name[n] < 0x7f && name[n] != '"' ? name[n] : '?';
    memcpy(out + n, n < len ? "..." : "", n < len ? 4 : 1);
}

/* Ledger and stat names are keys: a consumer lists them by name (the report's JSON object
 * keys), and no producer gives one twice (the model sums a reason given again), so a name
 * already seen, or one that is not UTF-8 (an invalid byte prints as the \u00XX escape that
 * the UTF-8 of another name reads back as), breaks a rule; at most PERCH_CAPTURE_MAX_NAMES
 * names of PERCH_CAPTURE_MAX_NAME_BYTES (each counted with its NUL) are held per type. */
perch__cap_rule perch__cap_rule_name(const perch__strtab *seen, unsigned which, const char *s,
                                     size_t len, char why[CAP_RULE_REASON])
{
    static const char *const kind[2] = {"ledger", "stat"};
    char shown[48];
    if (!s)
        s = "";
    if (!utf8_text(s, len)) {
        show(s, len, shown);
        say(why, "%s name \"%s\" is not UTF-8", kind[which], shown);
        return CAP_RULE_BROKEN;
    }
    if (perch__strtab_find(seen, s, len)) {
        show(s, len, shown);
        say(why, "%s name \"%s\" given twice", kind[which], shown);
        return CAP_RULE_BROKEN;
    }
    if (seen->count == PERCH_CAPTURE_MAX_NAMES ||
        len + 1 > PERCH_CAPTURE_MAX_NAME_BYTES - seen->arena_len) {
        say(why, "more than %u %s names or %u bytes of them", PERCH_CAPTURE_MAX_NAMES, kind[which],
            PERCH_CAPTURE_MAX_NAME_BYTES);
        return CAP_RULE_LIMIT;
    }
    return CAP_RULE_OK;
}
