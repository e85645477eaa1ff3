/*
 * The k-way merge of per-CPU streams: a loser tree (tournament) of stream heads keyed by
 * (event timestamp, cpu). Node 0 holds the winner, the smallest head; nodes 1..k-1 hold the
 * loser of the match played there; stream i's leaf is node k + i. When the winner's stream
 * moves on, its new head replays only the matches on its own leaf-to-root path: one compare
 * per level against a key copied into the node (a heap's sift-down mispredicted about 1.5
 * times per record). The compare is written for selects, but gcc 12 at -O3 branches on it;
 * a 128-bit compare that made it branch-free measured no faster (2026-12-06, `bench_stages
 * read` of the 512 MB synthetic trace, 15 alternating runs). An exhausted stream stays in the
 * tree with a key above every record's. Keys are distinct (one stream per CPU), so the record
 * picked is the one a heap or a sort would pick: ties between CPUs go to the lower CPU, and
 * inside one CPU file order holds because a stream only ever offers its next record.
 */
#include "etl/reader.h"

/* A real key's cpu is a u16: this tie is above every record's. */
#define DONE_TIE (UINT64_MAX << 32)

struct perch__etl_merge_key perch__etl_merge_done(uint32_t stream)
{
    struct perch__etl_merge_key key = {UINT64_MAX, DONE_TIE | stream};
    return key;
}

static inline bool less(const struct perch__etl_merge_key *a, const struct perch__etl_merge_key *b)
{
    return a->ts < b->ts || (a->ts == b->ts && a->tie < b->tie);
}

void perch__etl_merge_build(struct perch__etl_merge_key *tree, struct perch__etl_merge_key *work,
                            uint32_t k)
{
    /* work[k + i] holds stream i's head (the caller's leaves); work[n] the winner at node n. */
    for (uint32_t n = k - 1; n > 0; n--) {
        const struct perch__etl_merge_key *a = &work[2 * n], *b = &work[2 * n + 1];
        bool b_wins = less(b, a);
        tree[n] = b_wins ? *a : *b;
        work[n] = b_wins ? *b : *a;
    }
    tree[0] = k > 1 ? work[1] : work[k];
}

void perch__etl_merge_replace_top(struct perch__etl_merge_key *tree, uint32_t k, uint64_t ts,
                                  uint64_t tie)
{
    for (uint32_t n = (k + (uint32_t)tie) >> 1; n > 0; n >>= 1) {
        uint64_t o_ts = tree[n].ts, o_tie = tree[n].tie;
        if (o_ts < ts || (o_ts == ts && o_tie < tie)) {
            tree[n].ts = ts;
            tree[n].tie = tie;
            ts = o_ts;
            tie = o_tie;
        }
    }
    tree[0].ts = ts;
    tree[0].tie = tie;
}

bool perch__etl_merge_empty(const struct perch__etl_merge_key *tree)
{
    return tree[0].tie >= DONE_TIE;
}
