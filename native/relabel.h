// Per-minibatch relabelling of the NumPy engine's bulk state (spsample/_bulk.py, BulkState):
// deduplicating insertion and lookup of (minibatch, vertex) pairs, with a LocalMap per thread
// instead of BulkState's two n-sized tables. Same results as BulkState's NumPy code (its oracle).
//
// insert_bulk
//   Inputs:  k minibatches; known[known_off[j] .. known_off[j + 1]) the vertices of minibatch j
//            in local order (-1 marks a slot appended without deduplication: it holds a local
//            id but is never found); cand[cand_off[j] .. cand_off[j + 1]) the candidates of
//            minibatch j in edge order. Vertex ids in [0, 2**32 - 1) (checked by the caller).
//   Outputs: local[i], the local id of candidate i (an old one, or a new one); fresh[j], the
//            number of new vertices of minibatch j; added[cand_off[j] .. cand_off[j] + fresh[j])
//            those vertices, each once, in first-occurrence order, with local ids
//            (known_off[j + 1] - known_off[j]) + 0, 1, ... -- BulkState._insert's rule.
// lookup_bulk
//   Inputs:  as insert_bulk, the queries in cand.  Outputs: local[i], or -1 when absent.
// Method:    per minibatch (one thread each; results do not depend on the thread count), the
//            known vertices go into the thread's LocalMap, then each candidate is looked up
//            (inserted when absent), the slot prefetched 16 candidates ahead.
// Complexity: O(known + candidates) expected per minibatch; memory O(threads * largest
//            minibatch) besides the outputs (which the caller allocates).
#ifndef SPSAMPLE_RELABEL_H
#define SPSAMPLE_RELABEL_H

#include <cstdint>

#include "localmap.h"

namespace spsample {

struct RelabelBulk {
    const int64_t* known_off;
    const int64_t* known;
    const int64_t* cand_off;
    const int64_t* cand;
};

// Fill `map` with minibatch j's known vertices (their local ids), skipping -1 slots.
inline void load_known(const RelabelBulk& b, int64_t j, uint64_t extra, LocalMap& map) {
    const int64_t k0 = b.known_off[j], k1 = b.known_off[j + 1];
    map.clear(static_cast<uint64_t>(k1 - k0) + extra);
    bool inserted = false;
    for (int64_t i = k0; i < k1; ++i) {
        if (b.known[i] < 0) continue;
        map.find_or_insert(static_cast<uint32_t>(b.known[i]), static_cast<uint32_t>(i - k0),
                           inserted);
    }
}

// insert_bulk for minibatch j (see the header comment).
inline void insert_minibatch(const RelabelBulk& b, int64_t j, LocalMap& map, int64_t* local,
                             int64_t* added, int64_t* fresh) {
    const int64_t c0 = b.cand_off[j], c1 = b.cand_off[j + 1];
    load_known(b, j, static_cast<uint64_t>(c1 - c0), map);
    uint32_t next = static_cast<uint32_t>(b.known_off[j + 1] - b.known_off[j]);
    int64_t count = 0;
    bool inserted = false;
    for (int64_t i = c0; i < c1; ++i) {
        if (i + 16 < c1) map.prefetch(static_cast<uint32_t>(b.cand[i + 16]));
        const uint32_t v = static_cast<uint32_t>(b.cand[i]);
        const uint32_t got = map.find_or_insert(v, next, inserted);
        if (inserted) {
            added[c0 + count++] = b.cand[i];
            ++next;
        }
        local[i] = got;
    }
    fresh[j] = count;
}

// lookup_bulk for minibatch j (see the header comment).
inline void lookup_minibatch(const RelabelBulk& b, int64_t j, LocalMap& map, int64_t* local) {
    const int64_t c0 = b.cand_off[j], c1 = b.cand_off[j + 1];
    load_known(b, j, 0, map);
    for (int64_t i = c0; i < c1; ++i) {
        if (i + 16 < c1) map.prefetch(static_cast<uint32_t>(b.cand[i + 16]));
        local[i] = map.find(static_cast<uint32_t>(b.cand[i]));
    }
}

}  // namespace spsample

#endif  // SPSAMPLE_RELABEL_H
