/*
 * util/bufring.c: every byte handed over reaches the consumer once, in order, across many
 * wraps of a small ring (the producer waits when it is full); the consumer's first call has
 * len 0; a drain waits for everything; the consumer's first error is returned by the next
 * hand-overs and the stop, and nothing after it is consumed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "perch/error.h"
#include "util/bufring.h"

struct sink {
    uint8_t seen[1 << 16];
    size_t len, calls, empty_calls, fail_at; /* fail_at: the call that fails (0: none) */
};

static int consume(void *ctx, const uint8_t *data, size_t len)
{
    struct sink *s = ctx;
    s->calls++;
    if (len == 0) {
        s->empty_calls++;
        return 0;
    }
    if (s->fail_at && s->calls >= s->fail_at)
        return PERCH_EIO;
    memcpy(s->seen + s->len, data, len);
    s->len += len;
    return 0;
}

/* Produces n bytes (byte i = i * 7) in buffers of at most `step` bytes. */
static int produce(perch__bufring *r, perch__bufring_fill *f, size_t n, size_t step)
{
    int err = 0;
    for (size_t i = 0; i < n && !err; i++) {
        f->fill[f->used++] = (uint8_t)(i * 7);
        if (f->used == f->cap || f->used == step)
            err = perch__bufring_hand_over(r, f, false);
    }
    return err ? err : perch__bufring_hand_over(r, f, true);
}

static void test_order(void **state)
{
    static struct sink s;
    perch__bufring *r;
    perch__bufring_fill f;
    (void)state;
    memset(&s, 0, sizeof s);
    assert_int_equal(perch__bufring_start(3, 64, 2, consume, &s, "test-ring", &r, &f), 0);
    assert_int_equal(produce(r, &f, 50000, 50), 0);
    assert_int_equal(s.len, 50000); /* the drain waited for every buffer */
    for (size_t i = 0; i < s.len; i++)
        assert_int_equal(s.seen[i], (uint8_t)(i * 7));
    assert_int_equal(perch__bufring_stop(r), 0);
    assert_int_equal(s.empty_calls, 1);
    assert_int_equal(perch__bufring_stop(NULL), 0);
}

static void test_error(void **state)
{
    static struct sink s;
    perch__bufring *r;
    perch__bufring_fill f;
    (void)state;
    memset(&s, 0, sizeof s);
    s.fail_at = 10; /* the 9th buffer fails */
    assert_int_equal(perch__bufring_start(4, 100, 1, consume, &s, "test-ring", &r, &f), 0);
    assert_int_equal(produce(r, &f, 20000, 100), PERCH_EIO);
    assert_int_equal(s.len, 800); /* the 8 buffers before the failure, nothing after */
    assert_int_equal(perch__bufring_error(r), PERCH_EIO);
    assert_int_equal(perch__bufring_stop(r), PERCH_EIO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order),
        cmocka_unit_test(test_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
