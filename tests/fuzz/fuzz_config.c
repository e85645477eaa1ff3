/*
 * Fuzz target for the configuration table's parsers (src/core/config/config.c), which take
 * text from `perchd config set`, the registry and, for a recording's own keys, a pipe client.
 * The input's first byte picks the key (and, in its top bits, how small the refusal buffer
 * is), the second the size of the buffer the value is formatted into; the rest is the value,
 * or a key name when it names one.
 *   - A refused value leaves the configuration unchanged and gives a sentence that fits the
 *     buffer; buffers are allocated at their exact size, so a write past one is an error under
 *     AddressSanitizer.
 *   - An accepted value has one canonical text: formatting it and setting that text again
 *     gives the same configuration, and formatting again the same text. A buffer too small for
 *     it gives PERCH_ERANGE and a NUL-terminated prefix of it.
 *   - A number key's value survives the registry's DWORD path (perch_config_set_number).
 *   - A names key's value splits into names that, joined with ',' again, are the value.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perch/config.h"
#include "perch/error.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *exact(size_t n)
{
    char *p = malloc(n ? n : 1);
    if (p == NULL)
        abort();
    return p;
}

/* The canonical text of k's value, in a buffer of its exact size (the caller frees it). */
static char *formatted(const perch_config *c, const perch_config_key *k)
{
    char *big = exact(4 * PERCH_CONFIG_PATH_MAX);
    if (perch_config_format(c, k, big, 4 * PERCH_CONFIG_PATH_MAX) != 0)
        abort();
    size_t n = strlen(big) + 1;
    char *text = exact(n);
    memcpy(text, big, n);
    free(big);
    if (perch_config_format(c, k, text, n) != 0) /* exactly enough room */
        abort();
    return text;
}

/* Formats into a buffer of len bytes: all of it, or PERCH_ERANGE and a prefix. */
static void format_into(const perch_config *c, const perch_config_key *k, const char *whole,
                        size_t len)
{
    char *buf = exact(len);
    int err = perch_config_format(c, k, buf, len);
    size_t n = strlen(whole);
    if (len > n ? err != 0 || strcmp(buf, whole) != 0
                : err != PERCH_ERANGE || (len > 0 && strncmp(buf, whole, strlen(buf)) != 0) ||
                      (len > 0 && strlen(buf) >= len))
        abort();
    free(buf);
}

static void accepted(const perch_config *c, const perch_config_key *k, size_t small)
{
    char *text = formatted(c, k);
    perch_config again;
    memcpy(&again, c, sizeof again);
    if (perch_config_set(&again, k, text, NULL, 0) != 0 || memcmp(&again, c, sizeof again) != 0)
        abort();
    char *text2 = formatted(&again, k);
    if (strcmp(text, text2) != 0)
        abort();
    format_into(c, k, text, small);
    if (perch_config_is_number(k)) {
        uint32_t v = perch_config_number(c, k);
        if (perch_config_set_number(&again, k, v, NULL, 0) != 0 ||
            memcmp(&again, c, sizeof again) != 0)
            abort();
    }
    if (k->type == PERCH_CONFIG_NAMES) {
        char names[PERCH_CONFIG_MAX_NAMES][PERCH_CONFIG_NAME_LEN];
        const char *value = (const char *)c + k->offset;
        size_t n = perch_config_split_names(value, names, PERCH_CONFIG_MAX_NAMES);
        char joined[PERCH_CONFIG_NAMES_MAX] = "";
        size_t used = 0;
        for (size_t i = 0; i < n; i++) /* the names joined again are the stored value */
            used += (size_t)snprintf(joined + used, sizeof joined - used, "%s%s", i ? "," : "",
                                     names[i]);
        if (strcmp(joined, value) != 0)
            abort();
    }
    free(text);
    free(text2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || size > 4 * PERCH_CONFIG_PATH_MAX)
        return 0;
    size_t count = perch_config_key_count();
    const perch_config_key *k = perch_config_key_at(data[0] % count);
    size_t why_len = (size_t)(data[0] / count) * 24 % (PERCH_CONFIG_WHY_MAX + 1);
    size_t small = data[1] % 64;
    char *text = exact(size - 1);
    memcpy(text, data + 2, size - 2);
    text[size - 2] = '\0';

    const perch_config_key *named = perch_config_find(text);
    if (named != NULL && perch_config_find(named->name) != named)
        abort();

    perch_config c, before;
    perch_config_defaults(&c);
    memcpy(&before, &c, sizeof c);
    char *why = exact(why_len);
    int err = perch_config_set(&c, k, text, why_len ? why : NULL, why_len);
    if (err == 0) {
        accepted(&c, k, small);
    } else {
        if ((err != PERCH_EINVAL && err != PERCH_ERANGE) || memcmp(&c, &before, sizeof c) != 0)
            abort();
        if (why_len > 0 && (why[0] == '\0' || strlen(why) >= why_len))
            abort();
    }
    char range[64];
    perch_config_describe_range(k, range, small < sizeof range ? small + 1 : sizeof range);
    free(why);
    free(text);
    return 0;
}
