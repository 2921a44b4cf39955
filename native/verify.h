// Checks of untrusted CSR entries read from a file (the lean in-memory loader's pieces, the
// out-of-core graph's mapped regions) against trusted row pointers. Same answers as
// spsample/_entries.py (first_problems), the NumPy oracle.
//
// check_range
//   Inputs:  indptr (rows + 1 entries, checked by the caller: from 0, non-decreasing), n the
//            bound of the column ids (the graph's vertices); column ids
//            idx[e - base] and weights w[e - base] (w may be nullptr) of the entries e in
//            [a, b), base <= a; when `pred`, entry a is compared with the one before it
//            (idx[a - 1 - base], or `prev` when a == base).
//   Outputs: first[0], the lowest e with idx[e] outside [0, n); first[1], the lowest e whose
//            weight is not finite or is negative; first[2], the lowest e that is not the first
//            entry of its row and whose id is not above idx[e - 1]; each -1 when none (the
//            caller's values are lowered, never raised: results of several ranges combine).
//   Method:  one pass; entry e starts a row when e == indptr[r] for some r: the first row
//            boundary above a is found by binary search, then followed along.
//   Complexity: O(b - a + log rows) time, O(1) memory.
// check_ranges
//   Inputs:  as check_range (one base and prev), for the ranges [starts[i], ends[i]) (i < m),
//            split into pieces of at most VERIFY_PIECE entries spread over `threads` OpenMP
//            threads; pred[i] for range i.
//   Outputs: first[3], the minimum over every piece (so independent of the thread count).
//   Complexity: O(total entries + pieces * log rows) time, O(pieces) memory.
#ifndef SPSAMPLE_VERIFY_H
#define SPSAMPLE_VERIFY_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace spsample {

inline void lower_to(int64_t& slot, int64_t e) {
    if (slot < 0 || e < slot) slot = e;
}

inline void check_range(const int64_t* indptr, int64_t rows, int64_t n, const int64_t* idx,
                        const double* w,
                        int64_t base, int64_t prev, int64_t a, int64_t b, bool pred,
                        int64_t first[3]) {
    if (b <= a) return;
    const int64_t* bound = std::upper_bound(indptr, indptr + rows + 1, a);
    const bool starts_row = bound != indptr && bound[-1] == a;
    int64_t next = bound == indptr + rows + 1 ? INT64_MAX : *bound;
    int64_t bad_id = -1, bad_w = -1, unsorted = -1;
    for (int64_t e = a; e < b; ++e) {
        const int64_t v = idx[e - base];
        if (bad_id < 0 && (v < 0 || v >= n)) bad_id = e;
        if (w && bad_w < 0 && !(std::isfinite(w[e - base]) && w[e - base] >= 0.0)) bad_w = e;
        bool row_start = e == a ? starts_row : false;
        if (e == next) {
            row_start = true;
            while (bound != indptr + rows + 1 && *bound <= e) ++bound;
            next = bound == indptr + rows + 1 ? INT64_MAX : *bound;
        }
        const bool compare = e > a || pred;
        if (unsorted < 0 && compare && !row_start &&
            v <= (e == base ? prev : idx[e - 1 - base]))
            unsorted = e;
    }
    if (bad_id >= 0) lower_to(first[0], bad_id);
    if (bad_w >= 0) lower_to(first[1], bad_w);
    if (unsorted >= 0) lower_to(first[2], unsorted);
}

constexpr int64_t VERIFY_PIECE = int64_t(1) << 16;

inline void check_ranges(const int64_t* indptr, int64_t rows, int64_t n, const int64_t* idx,
                         const double* w,
                         int64_t base, int64_t prev, const int64_t* starts, const int64_t* ends,
                         const uint8_t* pred_of, int64_t m, int threads, int64_t first[3]) {
    std::vector<int64_t> lo, hi;
    std::vector<uint8_t> pred;
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t a = starts[i]; a < ends[i]; a += VERIFY_PIECE) {
            lo.push_back(a);
            hi.push_back(std::min(ends[i], a + VERIFY_PIECE));
            pred.push_back(a > starts[i] ? 1 : pred_of[i]);
        }
    }
    const int64_t pieces = static_cast<int64_t>(lo.size());
    std::vector<int64_t> found(3 * pieces, -1);
#ifdef _OPENMP
#pragma omp parallel for schedule(dynamic, 4) num_threads(threads)
#endif
    for (int64_t p = 0; p < pieces; ++p)
        check_range(indptr, rows, n, idx, w, base, prev, lo[p], hi[p], pred[p] != 0,
                    found.data() + 3 * p);
    (void)threads;
    for (int64_t p = 0; p < pieces; ++p)
        for (int c = 0; c < 3; ++c)
            if (found[3 * p + c] >= 0) lower_to(first[c], found[3 * p + c]);
}

}  // namespace spsample

#endif  // SPSAMPLE_VERIFY_H
