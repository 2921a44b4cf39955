// Per-type views of a heterogeneous bulk: what spsample/_hetero_sample.py's split_hetero
// computes with NumPy (its oracle), in one pass per minibatch.
//
// split_typed_minibatch
//   Inputs:  TypedBulk: k minibatches; minibatch j's vertices n_id[node_off[j] ..
//            node_off[j + 1]) (global ids, seeds first, then each step's new ones:
//            counts[j * (S + 1) + s] of step s, s = 0 the seeds); step_hop[s] (S + 1 entries),
//            the hop of step s, < L + 1; type_off[0 .. T] the first global id of each of the T
//            node types (ascending; type_off[T] = total ids); node_batch (N) or nullptr; per
//            step i < S, its edges dst[i][e], src[i][e] (minibatch-local positions) for
//            e in [edge_off[i][j], edge_off[i][j + 1]).
//   Outputs: group(j, t) = the vertices of type t of minibatch j in n_id order, at
//            node_off[j] + (the vertices of types < t in minibatch j): local[] = their ids
//            minus type_off[t], batch_out[] = their node_batch; per_group[j * T + t], their
//            number; per_hop[(j * T + t) * (L + 1) + h], those new at hop h; per step, the edges'
//            ends as positions within their group (dst_out[i][e], src_out[i][e]).
//            Returns false (outputs undefined) when an id is outside [type_off[0], type_off[T])
//            or an edge end outside the minibatch; the caller raises.
//   Method:  types by comparison with the T offsets (T is small); per-type counts, then one
//            sweep placing every vertex at its group's next slot (a stable counting sort: the
//            same order as NumPy's stable argsort of (minibatch, type)); the ranks in the
//            thread's scratch, then every step's edges gathered through them.
//   Complexity: O(N_j * T + E_j) per minibatch; scratch O(N_j) per thread. Minibatches are
//            independent (one thread each): results do not depend on the thread count.
#ifndef SPSAMPLE_TYPED_H
#define SPSAMPLE_TYPED_H

#include <cstdint>
#include <vector>

namespace spsample {

struct TypedBulk {
    int64_t k = 0, T = 0, S = 0, L = 0;
    const int64_t* n_id = nullptr;
    const int64_t* node_off = nullptr;
    const int64_t* counts = nullptr;    // k * (S + 1)
    const int64_t* step_hop = nullptr;  // S + 1
    const int64_t* type_off = nullptr;  // T + 1
    const int64_t* node_batch = nullptr;
    std::vector<const int64_t*> dst, src, edge_off;  // per step
};

struct TypedOut {
    int64_t* local;
    int64_t* batch_out;  // nullptr without node_batch
    int64_t* per_group;  // k * T
    int64_t* per_hop;    // k * T * (L + 1)
    std::vector<int64_t*> dst_out, src_out;  // per step
};

// Scratch of one thread: the minibatch's types and ranks.
struct TypedScratch {
    std::vector<int32_t> type;
    std::vector<int64_t> rank, first, next;
};

inline bool split_typed_minibatch(const TypedBulk& b, int64_t j, TypedScratch& sc,
                                  const TypedOut& out) {
    const int64_t T = b.T, a = b.node_off[j], N = b.node_off[j + 1] - a;
    const int64_t lo = b.type_off[0], hi = b.type_off[T];
    sc.type.resize(static_cast<size_t>(N));
    sc.rank.resize(static_cast<size_t>(N));
    int64_t* per_group = out.per_group + j * T;
    int64_t* per_hop = out.per_hop + j * T * (b.L + 1);
    for (int64_t t = 0; t < T; ++t) per_group[t] = 0;
    for (int64_t t = 0; t < T * (b.L + 1); ++t) per_hop[t] = 0;
    // types, group sizes and per-hop counts, step by step
    int64_t p = 0;
    for (int64_t s = 0; s <= b.S; ++s) {
        const int64_t end = p + b.counts[j * (b.S + 1) + s], h = b.step_hop[s];
        if (end > N) return false;
        for (; p < end; ++p) {
            const int64_t v = b.n_id[a + p];
            if (v < lo || v >= hi) return false;
            int32_t t = 0;
            for (int64_t q = 1; q < T; ++q) t += v >= b.type_off[q];
            sc.type[p] = t;
            ++per_group[t];
            ++per_hop[t * (b.L + 1) + h];
        }
    }
    if (p != N) return false;
    // each group's first slot, then every vertex at its group's next slot; its rank within
    // the group is that slot minus the first
    std::vector<int64_t>& first = sc.first;
    std::vector<int64_t>& next = sc.next;
    first.resize(static_cast<size_t>(T));
    next.resize(static_cast<size_t>(T));
    for (int64_t t = 0, at = 0; t < T; ++t) {
        first[t] = next[t] = at;
        at += per_group[t];
    }
    for (int64_t q = 0; q < N; ++q) {
        const int32_t t = sc.type[q];
        const int64_t slot = next[t]++;
        out.local[a + slot] = b.n_id[a + q] - b.type_off[t];
        if (b.node_batch) out.batch_out[a + slot] = b.node_batch[a + q];
        sc.rank[q] = slot - first[t];
    }
    // every step's edges through the ranks
    for (int64_t i = 0; i < b.S; ++i) {
        const int64_t e0 = b.edge_off[i][j], e1 = b.edge_off[i][j + 1];
        const int64_t* d = b.dst[i];
        const int64_t* s = b.src[i];
        int64_t* dout = out.dst_out[i];
        int64_t* sout = out.src_out[i];
        for (int64_t e = e0; e < e1; ++e) {
            if (static_cast<uint64_t>(d[e]) >= static_cast<uint64_t>(N) ||
                static_cast<uint64_t>(s[e]) >= static_cast<uint64_t>(N))
                return false;
            dout[e] = sc.rank[d[e]];
            sout[e] = sc.rank[s[e]];
        }
    }
    return true;
}

}  // namespace spsample

#endif  // SPSAMPLE_TYPED_H
