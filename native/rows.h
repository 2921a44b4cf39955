// Per-request node-wise row sampling: the owner side of distributed push sampling.
//
// A rank that owns a block of rows of A (global rows [row_offset, row_offset + n)) receives
// requests (vertex v, global minibatch id b) and samples row v exactly as the single-process
// samplers do: spsample._primitives.sample_rows over row_select(A, v) with the node-wise
// stream (v, hop word, b) -- the rules of select.h, which the row-wise engine calls too, so
// both draw the same positions by the same code.
//
// Inputs:  g, the block (CSRView over its n local rows; indices hold global column ids;
//          weights when weighted); vertex[0..r), global ids in [row_offset, row_offset + n),
//          read from row vertex - row_offset of g -- or, when row[0..r) is given (rows fetched
//          from other ranks, stored in arrival order), from row row[i] in [0, n);
//          batch[0..r), minibatch ids < 2**32; hop word hw; key; fanout s >= 1 or -1;
//          replace / weighted (weights required) -- all checked by spsample/_native.py.
// Outputs: count[0..r), the samples of request i; offsets are their prefix sums;
//          edge[0..E), positions in g.indices (block-local edge ids), ascending within a
//          request (with multiplicity under replacement); column[0..E) = g.indices[edge].
// Method:  pass 1 sizes every request by nodewise_bound (exact for uniform sampling, an upper
//          bound for weighted) and prefix-sums the bounds; pass 2 samples each request into
//          its slot and gathers its columns (the caller spreads chunks of 32 requests over
//          threads dynamically, as a hub row may cost 10**4 typical ones; every request draws
//          only from its own stream, so the results do not depend on the number of threads);
//          pass 3 closes the gaps of weighted rows that kept fewer than their bound.
// Complexity: O(r + sum of the selection costs of nodewise_select + E).
// Memory:  the outputs (2 int64 per bounded sample) plus per thread one RowScratch.
#ifndef SPSAMPLE_ROWS_H
#define SPSAMPLE_ROWS_H

#include <algorithm>
#include <cstdint>
#include <vector>

#include "common.h"
#include "rng.h"
#include "select.h"

namespace spsample {

struct RowRequests {
    const int64_t* vertex;  // global ids (the streams' vertex word)
    const int64_t* batch;   // global minibatch ids
    int64_t r;
    int64_t row_offset;
    const int64_t* row = nullptr;  // row of each request in g, or nullptr: vertex - row_offset

    int64_t row_of(int64_t i) const { return row ? row[i] : vertex[i] - row_offset; }
};

struct RowSamples {
    PodBuf<int64_t> count, edge, column;
};

// The node-wise rule of one request: uniform or weighted (by the edge weights), with or
// without replacement.
struct RowRule {
    bool replace = false;
    bool weighted = false;
    Key key{0, 0};
};

// The positions row (start, d) of vertex v keeps at fanout s (emit(p), ascending, with
// multiplicity): the rules of select.h; rows kept whole are emitted directly. Returns the count.
template <class Emit>
static inline int64_t nodewise_row(const CSRView& g, int64_t start, int64_t d, int64_t s, uint32_t v,
                                   uint32_t hw, uint32_t bid, const RowRule& o, RowScratch& sc,
                                   Emit&& emit) {
    if (d == 0) return 0;
    if (!o.weighted && (s < 0 || (!o.replace && d <= s))) {
        for (int64_t p = 0; p < d; ++p) emit(p);
        return d;
    }
    Stream st(v, hw, bid, o.key);
    sc.fit(d, s, o.weighted);
    int64_t c;
    if (!o.weighted) {
        auto word = [&](int64_t i) { return st.word(static_cast<uint64_t>(i)); };
        c = o.replace ? uniform_rep_row(word, d, s, sc) : floyd_row(word, d, s, sc);
    } else {
        const double* w = g.weights + start;
        c = o.replace ? weighted_rep_row(st, w, d, s, sc) : weighted_row(st, w, d, s, sc);
    }
    const int64_t* pos = sc.pos.data();
    for (int64_t i = 0; i < c; ++i) emit(pos[i]);
    return c;
}

// The three passes of the header comment over one set of requests. The caller runs
// sample_chunk(c, scratch) once for every chunk c in [0, num_chunks()) -- in any order, on any
// threads, one RowScratch per thread -- between the constructor and finish().
// `o` gives replace / weighted / key.
class RowSampler {
  public:
    static constexpr int64_t CHUNK = 32;  // requests per unit of work (a hub may cost 10**4 rows)

    // Pass 1: bounds and their prefix sums; output buffers sized by the bound.
    RowSampler(const CSRView& g, const RowRequests& q, int64_t s, uint32_t hw, const RowRule& o,
               RowSamples& out)
        : g_(g), q_(q), s_(s), hw_(hw), o_(o), out_(out), offset_(static_cast<size_t>(q.r) + 1, 0) {
        for (int64_t i = 0; i < q.r; ++i) {
            const int64_t row = q.row_of(i);
            const int64_t d = g.indptr[row + 1] - g.indptr[row];
            offset_[i + 1] = offset_[i] + row_bound(d, s, o.replace);
        }
        out.count.resize(q.r);
        out.edge.resize(offset_[q.r]);
        out.column.resize(offset_[q.r]);
    }

    int64_t num_chunks() const { return (q_.r + CHUNK - 1) / CHUNK; }

    // Pass 2 for requests [c * CHUNK, (c + 1) * CHUNK): sample into their slots, gather columns.
    void sample_chunk(int64_t c, RowScratch& sc) {
        const int64_t i1 = std::min(q_.r, (c + 1) * CHUNK);
        for (int64_t i = c * CHUNK; i < i1; ++i) {
            const int64_t row = q_.row_of(i);
            const int64_t start = g_.indptr[row];
            const int64_t d = g_.indptr[row + 1] - start;
            int64_t* e = out_.edge.data() + offset_[i];
            int64_t k = 0;
            nodewise_row(g_, start, d, s_, static_cast<uint32_t>(q_.vertex[i]), hw_,
                         static_cast<uint32_t>(q_.batch[i]), o_, sc, [&](int64_t p) { e[k++] = start + p; });
            out_.count[i] = k;
            int64_t* col = out_.column.data() + offset_[i];
            for (int64_t j = 0; j < k; ++j) col[j] = g_.indices[e[j]];
        }
    }

    // Pass 3: close the gaps left by weighted rows that kept fewer than their bound.
    void finish() {
        int64_t* edge = out_.edge.data();
        int64_t* column = out_.column.data();
        int64_t at = 0;
        for (int64_t i = 0; i < q_.r; ++i) {
            const int64_t from = offset_[i], k = out_.count[i];
            if (from != at) {
                for (int64_t j = 0; j < k; ++j) {
                    edge[at + j] = edge[from + j];
                    column[at + j] = column[from + j];
                }
            }
            at += k;
        }
        out_.edge.resize(at);
        out_.column.resize(at);
    }

  private:
    const CSRView& g_;
    const RowRequests& q_;
    const int64_t s_;
    const uint32_t hw_;
    const RowRule& o_;
    RowSamples& out_;
    std::vector<int64_t> offset_;
};

}  // namespace spsample

#endif  // SPSAMPLE_ROWS_H
