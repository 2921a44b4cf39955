// Fused layer-wise bulk sampling (LADIES, FastGCN): all layers of all minibatches in one call.
//
// Layer l of minibatch j with vertex set B_j (its n_id so far, in local order):
//
//   LADIES  P[j, u] = sum over v in B_j (local order), entries of row v (storage order) of a_vu**2
//           (a = 1 on unweighted graphs) -- the segmented column accumulation of Q_b (A o A),
//           taken serially in that order into a generation-stamped dense array; no SpGEMM.
//           Columns with P = 0 are dropped. If there are at most s columns all are kept, else the
//           s smallest Efraimidis-Spirakis keys neg_log(open_unit(w_u)) / P[j, u], w_u = word 0 of
//           stream (u, hop word, global batch id), ties to the smaller u.
//   FastGCN P[u] = q[u] (global column weights, given) and s i.i.d. draws: draw i takes words 2i,
//           2i + 1 of stream (NO_VERTEX, hop word, batch id), U = unit53(w0, w1), u = first
//           column whose cumulative weight exceeds U * total (clamped to n - 1); deduplicated.
//
// The chosen columns are appended to n_id in ascending order (those not already present). The
// layer's edges are every entry a_vu > 0 of the rows v in B_j whose column u is in the new n_id,
// in (local v, storage) order, valued a_vu / P[j, u] and divided by their row's serial sum.
// This is exactly spsample.samplers.LADIES / FastGCN and spsample._reference.
//
// Complexity per layer of a minibatch: O(sum of degrees of B_j) for the accumulation and the
// edges, O(#columns) expected for the selection (nth_element); memory: two dense arrays of size
// n per thread plus the outputs.
#ifndef SPSAMPLE_LAYERWISE_H
#define SPSAMPLE_LAYERWISE_H

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "localmap.h"
#include "nodewise.h"
#include "rng.h"

namespace spsample {

struct LayerWiseOptions {
    std::vector<int64_t> fanouts;         // layer 1 first; -1 = all (LADIES only)
    Key key{0, 0};
    uint64_t epoch = 0;
    bool fastgcn = false;
    const double* q_global = nullptr;     // FastGCN: column weights, size n
    const double* cumulative = nullptr;   // FastGCN: serial prefix sums of q_global, size n
};

struct LayerWiseScratch {
    DenseMap<double> q;                    // column sums of the current layer (LADIES)
    DenseMap<uint32_t> local;              // vertex -> local id of the current minibatch
    std::vector<int64_t> cands, chosen;
    std::vector<std::pair<double, int64_t>> keyed;
    std::vector<double> raw;

    void resize(int64_t n) {
        q.resize(n);
        local.resize(n);
    }
};

// Sample all layers of one minibatch (see the header comment). seeds[0..b): distinct ids in
// [0, n); bid: global minibatch id; sc sized for g.n. Output: out (overwritten).
static void layerwise_minibatch(const CSRView& g, const int64_t* seeds, int64_t b, uint32_t bid,
                                const LayerWiseOptions& o, LayerWiseScratch& sc, MiniBatchOut& out) {
    const int L = static_cast<int>(o.fanouts.size());
    out.n_id.assign(seeds, seeds + b);
    out.counts.assign(1, b);
    out.hops.clear();
    out.hops.resize(L);
    PodBuf<int64_t>& n_id = out.n_id;
    sc.local.clear();
    for (int64_t i = 0; i < b; ++i) sc.local.set(seeds[i], static_cast<uint32_t>(i));
    const int64_t* indptr = g.indptr;
    const int64_t* indices = g.indices;
    const double* w = g.weights;
    for (int h = 1; h <= L; ++h) {
        const int64_t s = o.fanouts[h - 1];
        const uint32_t hw = hop_word(o.epoch, h);
        const int64_t B = static_cast<int64_t>(n_id.size());
        auto& chosen = sc.chosen;
        chosen.clear();
        if (!o.fastgcn) {
            // P[j, :] = Q_b (A o A), serial in (local v, storage) order
            sc.q.clear();
            auto& cands = sc.cands;
            cands.clear();
            for (int64_t i = 0; i < B; ++i) {
                const int64_t v = n_id[i];
                const int64_t e1 = indptr[v + 1];
                for (int64_t e = indptr[v]; e < e1; ++e) {
                    const int64_t u = indices[e];
                    const double val = w ? w[e] * w[e] : 1.0;
                    if (!sc.q.contains(u)) {
                        sc.q.set(u, 0.0);
                        cands.push_back(u);
                    }
                    sc.q.at(u) += val;
                }
            }
            int64_t c = 0;
            for (int64_t u : cands)
                if (sc.q.at(u) > 0) cands[c++] = u;
            cands.resize(c);
            if (s < 0 || c <= s) {
                chosen.assign(cands.begin(), cands.end());
            } else {
                auto& keyed = sc.keyed;
                keyed.resize(c);
                for (int64_t i = 0; i < c; ++i) {
                    const int64_t u = cands[i];
                    uint32_t words[4];
                    philox4x32(0u, static_cast<uint32_t>(u), hw, bid, o.key, words);
                    keyed[i] = std::make_pair(exp_key(words[0], sc.q.at(u)), u);
                }
                std::nth_element(keyed.begin(), keyed.begin() + (s - 1), keyed.end());
                for (int64_t i = 0; i < s; ++i) chosen.push_back(keyed[i].second);
            }
            std::sort(chosen.begin(), chosen.end());
        } else {
            const int64_t n = g.n;
            const double total = n > 0 ? o.cumulative[n - 1] : 0.0;
            if (n > 0 && total > 0) {
                Stream st(NO_VERTEX, hw, bid, o.key);
                for (int64_t i = 0; i < s; ++i) {
                    const uint32_t w0 = st.word(2 * static_cast<uint64_t>(i));
                    const uint32_t w1 = st.word(2 * static_cast<uint64_t>(i) + 1);
                    const double target = unit53(w0, w1) * total;
                    int64_t col = std::upper_bound(o.cumulative, o.cumulative + n, target) - o.cumulative;
                    chosen.push_back(std::min(col, n - 1));
                }
                std::sort(chosen.begin(), chosen.end());
                chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
            }
        }
        for (int64_t u : chosen) {
            if (!sc.local.contains(u)) {
                sc.local.set(u, static_cast<uint32_t>(n_id.size()));
                n_id.push_back(u);
            }
        }
        out.counts.push_back(static_cast<int64_t>(n_id.size()) - B);
        // edges B x n_id with a > 0: a / P[u], row-normalised by serial sums
        HopOut& ho = out.hops[h - 1];
        for (int64_t i = 0; i < B; ++i) {
            const int64_t v = n_id[i];
            const int64_t e1 = indptr[v + 1];
            const size_t first = ho.dst.size();
            for (int64_t e = indptr[v]; e < e1; ++e) {
                const int64_t u = indices[e];
                const double a = w ? w[e] : 1.0;
                if (!(a > 0) || !sc.local.contains(u)) continue;
                const double p = o.fastgcn ? o.q_global[u] : sc.q.at(u);
                ho.dst.push_back(i);
                ho.src.push_back(sc.local.at(u));
                ho.eid.push_back(e);
                ho.weight.push_back(a / p);
            }
            double total = 0.0;
            for (size_t k = first; k < ho.weight.size(); ++k) total += ho.weight[k];
            if (total > 0) {
                for (size_t k = first; k < ho.weight.size(); ++k) ho.weight[k] = ho.weight[k] / total;
            } else {
                for (size_t k = first; k < ho.weight.size(); ++k) ho.weight[k] = 0.0;
            }
        }
    }
}

}  // namespace spsample

#endif  // SPSAMPLE_LAYERWISE_H
