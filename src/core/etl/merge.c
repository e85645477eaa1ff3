/*
 * The k-way merge of per-CPU streams: a loser tree (tournament) of stream heads keyed by
 * (event timestamp, cpu). Node 0 holds the winner, the smallest head; nodes 1..k-1 hold the
 * loser of the match played there; stream i's leaf is node k + i. When the winner's stream
 * moves on, its new head replays only the matches on its own leaf-to-root path: one compare
 * per level against a key copied into the node (a heap's sift-down mispredicted about 1.5
 * times per record). An exhausted stream stays in the tree with a key above every record's.
 * Keys are distinct (one stream per CPU), so the record picked is the one a heap or a sort
 * would pick: ties between CPUs go to the lower CPU, and inside one CPU file order holds
 * because a stream only ever offers its next record.
 *
 * The tree has two forms. The wide one keys a head by (ts, cpu << 32 | stream). The narrow one
 * (reader.h, struct perch__etl_narrow) packs the same order into one 64-bit word,
 * (ts - base) << shift | stream, which works because the streams are made in increasing CPU
 * order (the index is sorted by CPU), so the stream number orders ties as the CPU does. With
 * one word a level's compare and both moves are selects, not branches. The wide tree's
 * compare branched (gcc 12 at -O3; a 128-bit compare that made it branch-free measured no
 * faster on 2026-12-06), and which key wins follows the interleaving of the CPUs' records,
 * which no predictor learns. The reader builds the wide tree, takes the narrow form when every
 * head fits it (base is the smallest head) and keeps it until a head does not fit (a ts below
 * base, or at least 2^(64 - shift) ticks past it: 2^62 with up to four streams, 2^48 with
 * 65,536; a damaged file, or a cycle-counter clock running for days), when it goes back to the
 * wide tree for good. Both forms pick the same record at every step.
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

/* shift is at least 2 and base below 2^62, so span is below 2^62 and a ts below base wraps to
 * ts - base above span: settle_pending's one compare catches both ways of not fitting. */
void perch__etl_merge_narrow(struct perch_etl_reader *r)
{
    struct perch__etl_narrow *nw = &r->narrow;
    unsigned shift = 2;
    while ((1ull << shift) < r->nstreams)
        shift++;
    nw->shift = shift;
    nw->span = UINT64_MAX >> shift;
    nw->base = perch__etl_merge_empty(r->tree) ? 0 : r->tree[0].ts;
    nw->on = false;
    if (nw->base >= 1ull << 62)
        return;
    for (uint32_t n = 0; n < r->nstreams; n++) {
        const struct perch__etl_merge_key *key = &r->tree[n];
        bool done = key->tie >= DONE_TIE;
        uint64_t d = done ? nw->span : key->ts - nw->base;
        if (!done && d >= nw->span)
            return;
        nw->node[n] = d << shift | (uint32_t)key->tie; /* the tie's low half is the stream */
    }
    nw->on = true;
}

void perch__etl_merge_widen(struct perch_etl_reader *r)
{
    struct perch__etl_narrow *nw = &r->narrow;
    for (uint32_t n = 0; n < r->nstreams; n++) {
        uint64_t d = nw->node[n] >> nw->shift;
        uint32_t stream = (uint32_t)(nw->node[n] & ((1ull << nw->shift) - 1));
        r->tree[n] = d == nw->span
                         ? perch__etl_merge_done(stream)
                         : perch__etl_merge_key(nw->base + d, r->streams[stream].cpu, stream);
    }
    nw->on = false;
}
