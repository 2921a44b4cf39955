// Per-request node-wise row sampling: the owner side of distributed push sampling.
//
// A rank that owns a block of rows of A (global rows [row_offset, row_offset + n)) receives
// requests (vertex v, global minibatch id b) and samples row v exactly as the single-process
// samplers do: spsample._primitives.sample_rows over row_select(A, v) with the node-wise
// stream (v, hop word, b) -- the rule of nodewise_row in nodewise.h, which this file calls, so
// both draw the same positions by the same code.
//
// Inputs:  g, the block (CSRView over its n local rows; indices hold global column ids;
//          weights when weighted); vertex[0..r), global ids in [row_offset, row_offset + n);
//          batch[0..r), minibatch ids < 2**32; hop word hw; key; fanout s >= 1 or -1;
//          replace / weighted (weights required) -- all checked by spsample/_native.py.
// Outputs: count[0..r), the samples of request i; offsets are their prefix sums;
//          edge[0..E), positions in g.indices (block-local edge ids), ascending within a
//          request (with multiplicity under replacement); column[0..E) = g.indices[edge].
// Method:  pass 1 sizes every request by nodewise_bound (exact for uniform sampling, an upper
//          bound for weighted) and prefix-sums the bounds; pass 2 samples each request into
//          its slot (OpenMP, dynamic chunks of 32 requests, as a hub row may cost 10**4 times
//          a typical one; every request draws only from its own stream, so
//          the results do not depend on the number of threads) and gathers the columns;
//          weighted rows that kept fewer than their bound are compacted afterwards.
// Complexity: O(r + sum of the selection costs of nodewise_select + E).
// Memory:  the outputs (2 int64 per bounded sample) plus per thread one NodeWiseScratch.
#ifndef SPSAMPLE_ROWS_H
#define SPSAMPLE_ROWS_H

#include <atomic>
#include <cstdint>
#include <exception>
#include <memory>
#include <vector>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "nodewise.h"
#include "rng.h"

namespace spsample {

struct RowRequests {
    const int64_t* vertex;  // global ids
    const int64_t* batch;   // global minibatch ids
    int64_t r;
    int64_t row_offset;
};

struct RowSamples {
    PodBuf<int64_t> count, edge, column;
};

// Sample every request (see the header comment). `o` gives replace / weighted / key; its
// fanouts and epoch are not read (s and hw are passed). threads >= 1.
static void sample_requested_rows(const CSRView& g, const RowRequests& q, int64_t s, uint32_t hw,
                                  const NodeWiseOptions& o, int threads, RowSamples& out) {
    const int64_t r = q.r;
    std::vector<int64_t> offset(static_cast<size_t>(r) + 1, 0);
    out.count.resize(r);
    for (int64_t i = 0; i < r; ++i) {
        const int64_t row = q.vertex[i] - q.row_offset;
        const int64_t d = g.indptr[row + 1] - g.indptr[row];
        offset[i + 1] = offset[i] + nodewise_bound(d, s, o.replace);
    }
    const int64_t bound = offset[r];
    out.edge.resize(bound);
    out.column.resize(bound);
    int64_t* edge = out.edge.data();
    int64_t* column = out.column.data();
    int64_t* count = out.count.data();
    (void)threads;
    std::exception_ptr error = nullptr;
    std::atomic<bool> failed(false);
    auto record = [&]() {
#ifdef _OPENMP
#pragma omp critical(spsample_rows_error)
#endif
        if (!error) error = std::current_exception();
        failed = true;
    };
#ifdef _OPENMP
#pragma omp parallel num_threads(threads)
#endif
    {
        std::unique_ptr<NodeWiseScratch> sc;
        try {
            sc.reset(new NodeWiseScratch());
        } catch (...) {  // allocation failures only; no throw may leave an OpenMP construct
            record();
        }
#ifdef _OPENMP
#pragma omp for schedule(dynamic, 32)
#endif
        for (int64_t i = 0; i < r; ++i) {
            if (!sc || failed) continue;
            try {
                const int64_t row = q.vertex[i] - q.row_offset;
                const int64_t start = g.indptr[row];
                const int64_t d = g.indptr[row + 1] - start;
                int64_t* e = edge + offset[i];
                int64_t k = 0;
                nodewise_row(g, start, d, s, static_cast<uint32_t>(q.vertex[i]), hw,
                             static_cast<uint32_t>(q.batch[i]), o, *sc,
                             [&](int64_t p) { e[k++] = start + p; });
                count[i] = k;
                int64_t* c = column + offset[i];
                for (int64_t j = 0; j < k; ++j) c[j] = g.indices[e[j]];
            } catch (...) {
                record();
            }
        }
    }
    if (error) std::rethrow_exception(error);
    // compact (only weighted rows can keep fewer than their bound)
    int64_t at = 0;
    for (int64_t i = 0; i < r; ++i) {
        const int64_t from = offset[i], k = count[i];
        if (from != at) {
            for (int64_t j = 0; j < k; ++j) {
                edge[at + j] = edge[from + j];
                column[at + j] = column[from + j];
            }
        }
        at += k;
    }
    out.edge.resize(at);
    out.column.resize(at);
}

}  // namespace spsample

#endif  // SPSAMPLE_ROWS_H
