/*
 * The capture's move-to-front thread list (format.h): its slots stay put and a 4-bit-per-
 * position order word says which slot is at which position. These tests drive it with long
 * random sequences of finds, moves to the front and inserts, side by side with a plain array
 * kept in recency order, and check after every step that position i holds the same thread in
 * both, that find answers the same position, and that a slot handed back is the one at the
 * front.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "capture/format.h"

typedef struct model {
    unsigned count;
    uint64_t key[CAP_MRU];
    uint32_t tid[CAP_MRU];
} model;

static uint64_t rng(uint64_t *x)
{
    *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
    return *x;
}

static void model_front(model *m, unsigned pos, uint64_t key, uint32_t tid)
{
    memmove(&m->key[1], &m->key[0], pos * sizeof m->key[0]);
    memmove(&m->tid[1], &m->tid[0], pos * sizeof m->tid[0]);
    m->key[0] = key;
    m->tid[0] = tid;
}

static void check_same(perch__cap_mru *mru, const model *m)
{
    assert_int_equal(mru->count, m->count);
    for (unsigned i = 0; i < m->count; i++) {
        assert_int_equal(perch__cap_mru_at(mru, i)->key, m->key[i]);
        assert_int_equal(perch__cap_mru_at(mru, i)->tid, m->tid[i]);
        assert_int_equal(perch__cap_mru_find(mru, m->key[i], m->tid[i]), (int)i);
    }
    /* every position names a different slot */
    for (unsigned i = 0; i < m->count; i++)
        for (unsigned j = i + 1; j < m->count; j++)
            assert_ptr_not_equal(perch__cap_mru_at(mru, i), perch__cap_mru_at(mru, j));
}

/* One step as the encoder takes it: find the thread, move it to the front or insert it. */
static void step(perch__cap_mru *mru, model *m, uint64_t key, uint32_t tid, uint16_t cpu)
{
    int pos = perch__cap_mru_find(mru, key, tid);
    perch__cap_thread_slot *t;
    if (pos >= 0) {
        t = perch__cap_mru_promote(mru, (unsigned)pos);
        assert_int_equal(t->key, key);
        model_front(m, (unsigned)pos, key, tid);
    } else {
        perch__cap_thread_slot init = {key, tid, cpu, 0, 0, 0};
        t = perch__cap_mru_insert(mru, &init);
        assert_int_equal(t->cpu, cpu);
        unsigned keep = m->count < CAP_MRU ? m->count : CAP_MRU - 1;
        model_front(m, keep, key, tid);
        m->count = keep + 1;
    }
    assert_ptr_equal(t, perch__cap_mru_at(mru, 0));
    check_same(mru, m);
}

static void test_random_against_array(void **state)
{
    static const unsigned threads[] = {3, 14, 15, 16, 40};
    uint64_t x = 0x853c49e6748fea9bu;
    for (size_t k = 0; k < sizeof threads / sizeof threads[0]; k++) {
        perch__cap_state st;
        model m = {0};
        perch__cap_state_reset(&st);
        for (int i = 0; i < 20000; i++) {
            /* skewed: low thread numbers far more often, as in a real trace */
            uint64_t r = rng(&x);
            unsigned n = (unsigned)(r % threads[k]);
            if (r & 0x100)
                n /= 3;
            step(&st.mru, &m, 1000 + n, (uint32_t)(n * 4), (uint16_t)(r >> 32));
        }
    }
}

/* Moving the last position to the front when the list is full, and inserting into a full list,
 * touch the top of the order word. */
static void test_full_list_edges(void **state)
{
    perch__cap_state st;
    model m = {0};
    perch__cap_state_reset(&st);
    for (unsigned i = 0; i < CAP_MRU; i++)
        step(&st.mru, &m, i, i, 0);
    for (unsigned r = 0; r < 3 * CAP_MRU; r++)
        step(&st.mru, &m, m.key[CAP_MRU - 1], m.tid[CAP_MRU - 1], 0);
    for (unsigned i = 0; i < 3 * CAP_MRU; i++)
        step(&st.mru, &m, 100 + i, i, (uint16_t)i);
    assert_int_equal(perch__cap_mru_find(&st.mru, 100, 0), -1); /* fell off */
    step(&st.mru, &m, 100 + 3 * CAP_MRU - 1, 3 * CAP_MRU - 1, 0);
    assert_int_equal(m.count, CAP_MRU);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_against_array),
        cmocka_unit_test(test_full_list_edges),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
