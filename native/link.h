// Link minibatches (spsample/loader/_link.py, LinkLoader), per minibatch of a bulk: the
// negatives, the seed endpoints and their first-occurrence relabelling in one pass; and, once
// sampled, every minibatch's edges laid out as PyG wants them. The NumPy code is the oracle
// (spsample/_negatives.py draw_negatives, loader/_link.py _link and _first_occurrence,
// MiniBatch.edge_index): the same bits, whatever the thread count.
//
// link_minibatch (minibatch j of a LinkBulk)
//   Inputs:  pos[pos_off[j] .. pos_off[j + 1]), b_j seed-edge positions into src_ids / dst_ids
//            (local ids of the source / destination type, < n_src / n_dst); neg_off (k + 1),
//            the negative slots of each minibatch; batch_ids (k), global minibatch ids; mode:
//            LINK_BINARY (both ends drawn), LINK_TRIPLET (slot i keeps the source of positive
//            i / ratio, the destination is drawn), LINK_NONE (no negatives); the pickers of
//            each end (n, and cumulative weights of length n with `last` = the first index
//            holding the total, or nullptr for uniform); the Philox key and hop word; strict
//            with `block` (the relation's square block over global ids, sorted rows) and
//            `max_attempts`; the type offsets off_src / off_dst; dedup (false: disjoint, every
//            endpoint its own seed).
//   Outputs: nsrc, ndst at neg_off[j] .. neg_off[j + 1] (local ids); where[end_off[j] ..
//            end_off[j + 1]), each endpoint's position among the minibatch's seeds, endpoints
//            in the order [src, dst, nsrc, ndst] (binary), [src, dst, ndst] (triplet), [src,
//            dst] (none), global ids (local + type offset); seeds[end_off[j] .. end_off[j] +
//            fresh[j]), the distinct endpoints in first-occurrence order; failed[j], the strict
//            slots that found no non-edge in max_attempts draws.
//   Method:  slot i, attempt a reads the Philox block (a, i, hop_word, batch_id): words 0-1
//            pick the source, words 2-3 the destination: uniform_int(w0, n), or the first
//            vertex whose cumulative weight exceeds unit53(w0, w1) * total (capped at `last`);
//            strict draws again while (row dst, column src) is an entry of the block (binary
//            search). The endpoints go through the thread's LocalMap (first occurrence wins).
//   Complexity: O(b_j + slots * attempts * (log degree + log n with weights)) per minibatch,
//            expected O(1) per endpoint for the relabelling; memory: the outputs (the caller
//            allocates them) and one LocalMap per thread.
//
// minibatch_edges (minibatch j of a sampled bulk)
//   Inputs:  L hops; hop l: dst[l], src[l], eid[l] (flat, minibatch after minibatch) and
//            offsets[l] (k + 1); base[j] = 3 * (minibatch j's first edge over all hops);
//            optionally the exclusion of seed edges: the minibatch's n_id (node_off), its
//            positive pairs (u, v) (global ids < 2**32 - 1, pair_off).
//   Outputs: out[base[j] ..): its K_j kept sources (hop 1 first), its K_j destinations, its
//            K_j edge ids -- MiniBatch.edge_index() (2, K_j) and the concatenated edge_ids;
//            kept[j * L + l], the kept edges of hop l. An edge is dropped when (n_id[src],
//            n_id[dst]) is a positive pair or its reverse (LinkLoader(exclude_seed_edges)),
//            kept otherwise; bad[j] = 1 when a local id is not below the minibatch's N_j.
//   Method:  the pairs go into a per-thread open-addressing set of 64-bit keys (u << 32 | v);
//            a first pass flags the edges, a second writes the kept ones.
//   Complexity: O(E_j + pairs) expected; memory: the outputs, per thread O(E_j + pairs).
#ifndef SPSAMPLE_LINK_H
#define SPSAMPLE_LINK_H

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "device/codes.cuh"
#include "device/rules.cuh"
#include "localmap.h"
#include "rng.h"

namespace spsample {

// LinkMode (LINK_BINARY, LINK_TRIPLET, LINK_NONE): device/codes.cuh.

struct NegativePicker {
    int64_t n = 0;
    const double* cumulative = nullptr;  // n running sums, or nullptr (uniform)
    int64_t last = 0;                    // first index holding the total
};

struct LinkBulk {
    int64_t k = 0;
    const int64_t* pos_off = nullptr;
    const int64_t* pos = nullptr;
    const int64_t* src_ids = nullptr;
    const int64_t* dst_ids = nullptr;
    const int64_t* neg_off = nullptr;
    const int64_t* end_off = nullptr;
    const int64_t* batch_ids = nullptr;
    int32_t mode = LINK_BINARY;
    int64_t ratio = 1;  // LINK_TRIPLET: negatives per positive
    NegativePicker pick_src, pick_dst;
    Key key{0, 0};
    uint32_t hop_word = 0;
    bool strict = false;
    CSRView block{nullptr, nullptr, nullptr, 0};
    int64_t max_attempts = 1;
    int64_t off_src = 0, off_dst = 0;
    bool dedup = true;
};

struct LinkOut {
    int64_t* nsrc;
    int64_t* ndst;
    int64_t* where;
    int64_t* seeds;
    int64_t* fresh;
    int64_t* failed;
};

// A vertex of one end from two 32-bit words (_negatives._Picker).
inline int64_t pick_vertex(const NegativePicker& p, uint32_t w0, uint32_t w1) {
    if (!p.cumulative) return static_cast<int64_t>(uniform_int(w0, static_cast<uint64_t>(p.n)));
    const double u = unit53(w0, w1) * p.cumulative[p.n - 1];
    const int64_t i = std::upper_bound(p.cumulative, p.cumulative + p.n, u) - p.cumulative;
    return std::min(i, p.last);
}

// The negatives of minibatch j; returns the slots strict sampling could not fill.
inline int64_t draw_link_negatives(const LinkBulk& b, int64_t j, const LinkOut& out) {
    const int64_t s0 = b.neg_off[j], s1 = b.neg_off[j + 1], p0 = b.pos_off[j];
    const uint32_t bid = static_cast<uint32_t>(b.batch_ids[j]);
    const int64_t attempts = b.strict ? b.max_attempts : 1;
    int64_t failed = 0;
    for (int64_t s = s0; s < s1; ++s) {
        const int64_t slot = s - s0;
        int64_t src = 0, dst = 0;
        if (b.mode == LINK_TRIPLET) src = b.src_ids[b.pos[p0 + slot / b.ratio]];
        bool edge = true;
        for (int64_t a = 0; a < attempts && edge; ++a) {
            uint32_t w[4];
            philox4x32(static_cast<uint32_t>(a), static_cast<uint32_t>(slot), b.hop_word, bid,
                       b.key, w);
            if (b.mode != LINK_TRIPLET) src = pick_vertex(b.pick_src, w[0], w[1]);
            dst = pick_vertex(b.pick_dst, w[2], w[3]);
            edge = b.strict && find_in_row(b.block, dst + b.off_dst, src + b.off_src) >= 0;
        }
        failed += edge ? 1 : 0;
        out.nsrc[s] = src;
        out.ndst[s] = dst;
    }
    return failed;
}

// The endpoints of minibatch j, in _link's order, as global ids into ends[end_off[j] ..).
inline void link_ends(const LinkBulk& b, int64_t j, const LinkOut& out, int64_t* ends) {
    const int64_t p0 = b.pos_off[j], np_ = b.pos_off[j + 1] - p0;
    const int64_t s0 = b.neg_off[j], ns = b.neg_off[j + 1] - s0;
    int64_t* e = ends + b.end_off[j];
    for (int64_t i = 0; i < np_; ++i) e[i] = b.src_ids[b.pos[p0 + i]] + b.off_src;
    for (int64_t i = 0; i < np_; ++i) e[np_ + i] = b.dst_ids[b.pos[p0 + i]] + b.off_dst;
    e += 2 * np_;
    if (b.mode == LINK_BINARY) {
        for (int64_t i = 0; i < ns; ++i) e[i] = out.nsrc[s0 + i] + b.off_src;
        e += ns;
    }
    if (b.mode != LINK_NONE)
        for (int64_t i = 0; i < ns; ++i) e[i] = out.ndst[s0 + i] + b.off_dst;
}

// link_minibatch (see the header comment); `ends` is scratch of end_off[k] entries.
inline void link_minibatch(const LinkBulk& b, int64_t j, LocalMap& map, int64_t* ends,
                           const LinkOut& out) {
    out.failed[j] = draw_link_negatives(b, j, out);
    link_ends(b, j, out, ends);
    const int64_t e0 = b.end_off[j], e1 = b.end_off[j + 1];
    if (!b.dedup) {
        for (int64_t i = e0; i < e1; ++i) {
            out.seeds[i] = ends[i];
            out.where[i] = i - e0;
        }
        out.fresh[j] = e1 - e0;
        return;
    }
    map.clear(static_cast<uint64_t>(e1 - e0));
    uint32_t next = 0;
    bool inserted = false;
    for (int64_t i = e0; i < e1; ++i) {
        const uint32_t local = map.find_or_insert(static_cast<uint32_t>(ends[i]), next, inserted);
        if (inserted) out.seeds[e0 + next++] = ends[i];
        out.where[i] = local;
    }
    out.fresh[j] = next;
}

struct EdgeHops {
    std::vector<const int64_t*> dst, src, eid, offsets;
    // exclusion of seed edges (n_id == nullptr: none)
    const int64_t* n_id = nullptr;
    const int64_t* node_off = nullptr;
    const int64_t* u = nullptr;
    const int64_t* v = nullptr;
    const int64_t* pair_off = nullptr;
};

// A set of (u, v) pairs of ids < 2**32 - 1: open addressing, linear probing, key + 1 stored
// (0 = empty), load <= 1/2.
class PairSet {
  public:
    void clear(uint64_t expected) {
        uint64_t want = 16;
        while (want < 2 * expected) want <<= 1;
        slots_.assign(want, 0);
        mask_ = want - 1;
    }
    void insert(uint64_t u, uint64_t v) {
        const uint64_t tag = (u << 32 | v) + 1;
        uint64_t i = hash(tag);
        while (slots_[i] != 0 && slots_[i] != tag) i = (i + 1) & mask_;
        slots_[i] = tag;
    }
    bool contains(uint64_t u, uint64_t v) const {
        const uint64_t tag = (u << 32 | v) + 1;
        for (uint64_t i = hash(tag);; i = (i + 1) & mask_) {
            if (slots_[i] == tag) return true;
            if (slots_[i] == 0) return false;
        }
    }

  private:
    uint64_t hash(uint64_t tag) const { return (tag * 0x9E3779B97F4A7C15ull) >> 20 & mask_; }
    std::vector<uint64_t> slots_;
    uint64_t mask_ = 0;
};

struct EdgeScratch {
    PairSet pairs;
    std::vector<uint8_t> keep;
};

// Flags minibatch j's edges (hops one after the other) that are no positive pair of it;
// returns false when a local id is out of range.
inline bool flag_kept(const EdgeHops& h, int64_t j, EdgeScratch& sc) {
    const int64_t p0 = h.pair_off[j], p1 = h.pair_off[j + 1];
    sc.pairs.clear(static_cast<uint64_t>(2 * (p1 - p0)));
    for (int64_t i = p0; i < p1; ++i) {
        sc.pairs.insert(static_cast<uint64_t>(h.u[i]), static_cast<uint64_t>(h.v[i]));
        sc.pairs.insert(static_cast<uint64_t>(h.v[i]), static_cast<uint64_t>(h.u[i]));
    }
    const int64_t* n_id = h.n_id + h.node_off[j];
    const int64_t nodes = h.node_off[j + 1] - h.node_off[j];
    size_t at = 0;
    for (size_t l = 0; l < h.dst.size(); ++l) {
        for (int64_t e = h.offsets[l][j]; e < h.offsets[l][j + 1]; ++e, ++at) {
            const int64_t s = h.src[l][e], d = h.dst[l][e];
            if (s < 0 || s >= nodes || d < 0 || d >= nodes) return false;
            sc.keep[at] = !sc.pairs.contains(static_cast<uint64_t>(n_id[s]),
                                             static_cast<uint64_t>(n_id[d]));
        }
    }
    return true;
}

// Appends hop l's kept entries of `from` (all when keep is nullptr) at `to`; returns the count.
inline int64_t copy_kept(const int64_t* from, int64_t n, const uint8_t* keep, int64_t* to) {
    if (!keep) {
        if (n > 0) std::memcpy(to, from, static_cast<size_t>(n) * 8);
        return n;
    }
    int64_t c = 0;
    for (int64_t e = 0; e < n; ++e)
        if (keep[e]) to[c++] = from[e];
    return c;
}

// minibatch_edges (see the header comment); returns false where bad[j] is set.
inline bool minibatch_edges(const EdgeHops& h, int64_t j, int64_t base, int64_t* out,
                            int64_t* kept, EdgeScratch& sc) {
    const size_t L = h.dst.size();
    int64_t E = 0;
    for (size_t l = 0; l < L; ++l) E += h.offsets[l][j + 1] - h.offsets[l][j];
    const uint8_t* keep = nullptr;
    int64_t K = E;
    if (h.n_id) {
        sc.keep.resize(static_cast<size_t>(E));
        if (!flag_kept(h, j, sc)) return false;
        keep = sc.keep.data();
        K = 0;
        for (int64_t e = 0; e < E; ++e) K += keep[e];
    }
    int64_t at = base;
    for (size_t l = 0; l < L; ++l) {
        const int64_t a = h.offsets[l][j], n = h.offsets[l][j + 1] - a;
        copy_kept(h.src[l] + a, n, keep, out + at);
        copy_kept(h.dst[l] + a, n, keep, out + at + K);
        const int64_t c = copy_kept(h.eid[l] + a, n, keep, out + at + 2 * K);
        kept[j * static_cast<int64_t>(L) + l] = c;
        at += c;
        if (keep) keep += n;
    }
    return true;
}

}  // namespace spsample

#endif  // SPSAMPLE_LINK_H
