// Windows of a memory-mapped graph: one hop of the windowed row-wise engine (windowed.h:
// windowed_hop), and requested rows taken window by window with their pages released behind
// (RequestWindows, select_windows), with the decoding of their arguments (request_windows,
// request_times).
// Part of the bindings of spsample._native_kernels (included once, by native/module.cpp).
#ifndef SPSAMPLE_BIND_WINDOWS_H
#define SPSAMPLE_BIND_WINDOWS_H

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <vector>

#include "bind/decode.h"
#include "parallel.h"
#include "windowed.h"

namespace spsample {
namespace bind {

// One hop of windowed.h: A. frontiers, B. buckets, C. runs, D. merge and relabel. Returns false
// when a column id outside [0, n) was read.
bool windowed_hop(const RowWisePlan& plan, int h, const Bulk& b, const MapWindows& mw,
                  std::vector<RowWiseScratch>& mbs, std::vector<MiniBatchOut>& outs,
                  std::vector<std::vector<int64_t>>& hop_end,
                  std::vector<std::vector<uint8_t>>& inserted, int threads, Budget& budget) {
    const HopSpec& hs = plan.hops[h - 1];
    const CSRView& g = plan.graphs[0];
    for_each_minibatch<int>(b.k, threads, [](int&) {}, [&](int64_t j, int&) {
        RowWiseScratch& sc = mbs[j];
        const int64_t m = build_frontier(hs.frontier, j, outs[j], hop_end[j], sc, sc.fv, false);
        sc.start.resize(m);
        sc.deg.resize(m);
        for (int64_t r = 0; r < m; ++r) {
            sc.start[r] = g.indptr[sc.fv[r]];
            sc.deg[r] = g.indptr[sc.fv[r] + 1] - sc.start[r];
        }
    });
    WindowedHop wh;
    bucket_rows(mbs, g, mw, wh);
    const int64_t runs = static_cast<int64_t>(wh.runs.size());
    std::vector<WindowRunOut> routs(static_cast<size_t>(runs));
    std::atomic<bool> ok(true);
    for_each_minibatch<RowWiseScratch>(runs, threads, [](RowWiseScratch&) {},
        [&](int64_t i, RowWiseScratch& sc) {
            if (!select_run(hs, g, mbs, b.batch_ids, mw, wh, i, sc, routs[i], budget)) ok = false;
        });
    if (!ok) return false;
    for_each_minibatch<std::pair<VertexMap, PodBuf<uint32_t>>>(b.k, threads, [](auto&) {},
        [&](int64_t j, std::pair<VertexMap, PodBuf<uint32_t>>& t) {
            merge_minibatch(hs, h, j, wh, routs, mbs[j], outs[j], hop_end[j], inserted[j],
                            t.first, plan.n, t.second, budget);
        });
    return true;
}

// Requests taken window by window (the out-of-core graph's memory map): runs of one minibatch
// inside one window, spread over the threads in window order; when a window's last run is done,
// its pages are released (madvise(MADV_DONTNEED) on byte ranges of `map`, a read-only view of
// a shared file mapping: the page-table entries go, the page cache keeps the data), so at most
// `threads` windows are mapped at once. Without windows: one window, nothing released.
struct RequestWindows {
    const int64_t* end = nullptr;      // per window: one past its last request (ascending, r)
    int64_t count = 1;
    const int64_t* order = nullptr;    // request i's results go to row order[i] (or i)
    uint8_t* map = nullptr;            // the mapping whose pages are released (or nullptr)
    const int64_t* release = nullptr;  // per window: `ranges` pairs (lo, hi) of byte offsets
    int64_t ranges = 0;
};

// Runs of equal batch ids that do not cross a window end: their first requests, and r.
static std::vector<int64_t> request_runs(const RequestRows& q, const RequestWindows& w,
                                         std::vector<int64_t>& window_of) {
    std::vector<int64_t> start;
    int64_t wi = 0;
    for (int64_t i = 0; i < q.r; ++i) {
        const bool window_starts = i > 0 && wi < w.count && i == w.end[wi];
        while (wi < w.count && w.end[wi] <= i) ++wi;
        if (i == 0 || window_starts || q.batch[i] != q.batch[i - 1]) {
            start.push_back(i);
            window_of.push_back(wi);
        }
    }
    start.push_back(q.r);
    return start;
}

static void release_window(const RequestWindows& w, int64_t wi) {
    if (!w.map) return;
    for (int64_t k = 0; k < w.ranges; ++k) {
        const int64_t lo = w.release[2 * (wi * w.ranges + k)];
        const int64_t hi = w.release[2 * (wi * w.ranges + k) + 1];
        if (hi > lo) madvise(w.map + lo, static_cast<size_t>(hi - lo), MADV_DONTNEED);
    }
}

// Every run selected (columns gathered and rows counted while its window is mapped), then the
// results put in row order, run by run in parallel (the rows of a run are its own): count (r),
// edge and column (E) with the edges of row order[i] at its offsets.
static void select_windows(const HopSpec& hs, const CSRView& g, const RequestRows& q,
                           const RequestWindows& w, uint32_t hop_word, Key key, int threads,
                           Budget& budget, PodBuf<int64_t>& count, PodBuf<int64_t>& edge,
                           PodBuf<int64_t>& column) {
    std::vector<int64_t> window_of;
    const std::vector<int64_t> run_start = request_runs(q, w, window_of);
    const int64_t runs = static_cast<int64_t>(run_start.size()) - 1;
    std::unique_ptr<std::atomic<int64_t>[]> left(new std::atomic<int64_t>[w.count]);
    for (int64_t i = 0; i < w.count; ++i) left[i] = 0;
    for (int64_t j = 0; j < runs; ++j) ++left[window_of[j]];
    auto row = [&](int64_t i) { return w.order ? w.order[i] : i; };
    count.resize(static_cast<size_t>(q.r));
    std::fill(count.data(), count.data() + q.r, int64_t(0));
    std::vector<HopOut> outs(std::max<int64_t>(runs, 0));
    for_each_minibatch<RowWiseScratch>(
        runs, threads, [](RowWiseScratch&) {},
        [&](int64_t j, RowWiseScratch& sc) {
            HopOut& o = outs[j];
            select_request_run(hs, g, q, run_start[j], run_start[j + 1], hop_word, key, sc, o,
                               budget);
            o.src.resize(o.eid.size());
            for (size_t e = 0; e < o.eid.size(); ++e) {
                o.src[e] = g.indices[o.eid[e]];
                ++count[row(run_start[j] + o.dst[e])];
            }
            if (--left[window_of[j]] == 0) release_window(w, window_of[j]);
        });
    std::vector<int64_t> next(static_cast<size_t>(q.r) + 1, 0);
    for (int64_t i = 0; i < q.r; ++i) next[i + 1] = next[i] + count[i];
    edge.resize(static_cast<size_t>(next[q.r]));
    column.resize(static_cast<size_t>(next[q.r]));
    for_each_minibatch<int>(runs, threads, [](int&) {}, [&](int64_t j, int&) {
        const HopOut& o = outs[j];
        for (size_t e = 0; e < o.eid.size(); ++e) {
            const int64_t at = next[row(run_start[j] + o.dst[e])]++;
            edge[at] = o.eid[e];
            column[at] = o.src[e];
        }
    });
}

// The windows of select_requests, checked: window ends ascending up to r, `order` a
// permutation of [0, r) (checked through a mark per row), release ranges page-aligned inside
// `map`.
static RequestWindows request_windows(const py::object& windows, int64_t r,
                                      std::vector<py::object>& keep) {
    RequestWindows w;
    if (windows.is_none()) return w;
    const py::tuple t = windows.cast<py::tuple>();
    require(t.size() == 4, "windows: (order, ends, map, release)");
    const I64 order = t[0].cast<I64>(), ends = t[1].cast<I64>(), release = t[3].cast<I64>();
    keep.insert(keep.end(), {order, ends, release});
    require(order.ndim() == 1 && order.size() == r, "windows: one order entry per request");
    std::vector<uint8_t> seen(static_cast<size_t>(r), 0);
    for (int64_t i = 0; i < r; ++i) {
        const int64_t o = order.data()[i];
        require(o >= 0 && o < r && !seen[o], "windows: order must be a permutation");
        seen[o] = 1;
    }
    w.count = ends.size();
    require(ends.ndim() == 1 && w.count >= 1 && ends.data()[w.count - 1] == r &&
                ends.data()[0] >= 0, "windows: ends must run up to the number of requests");
    for (int64_t i = 1; i < w.count; ++i)
        require(ends.data()[i] >= ends.data()[i - 1], "windows: ends ascending");
    w.end = ends.data();
    w.order = order.data();
    if (!t[2].is_none()) {
        using U8 = py::array_t<uint8_t, py::array::c_style>;
        const U8 map = t[2].cast<U8>();
        keep.push_back(map);
        require(release.ndim() == 2 && release.shape(0) == w.count && release.shape(1) % 2 == 0,
                "windows: release ranges (windows, 2 * ranges)");
        const int64_t page = static_cast<int64_t>(sysconf(_SC_PAGESIZE));
        const auto base = reinterpret_cast<uintptr_t>(map.data());
        require(base % page == 0, "windows: the map must start on a page");
        for (int64_t i = 0; i < release.size(); i += 2) {
            const int64_t lo = release.data()[i], hi = release.data()[i + 1];
            require(hi <= lo || (lo >= 0 && lo % page == 0 && hi <= map.size()),
                    "windows: release ranges page-aligned inside the map");
        }
        w.map = const_cast<uint8_t*>(map.data());
        w.release = release.data();
        w.ranges = release.shape(1) / 2;
    }
    return w;
}

// A temporal request hop: the entry times of the rows (hop["time"]: an index into fvecs, one
// per entry of g; -1 or absent: not temporal) and the time each request is cut at (`times`),
// checked. Sortedness within rows is spsample's (time-sorted blocks, rows fetched from them).
static TimeVec request_times(HopSpec& hs, const py::dict& hop, const std::vector<F64>& fvecs,
                             const std::vector<I64>& ivecs, const CSRView& g,
                             const py::object& times, int64_t r, std::vector<py::object>& keep) {
    const int64_t ti = hop.contains("time") ? hop["time"].cast<int64_t>() : -1;
    require((ti >= 0) == !times.is_none(), "times: one per request exactly for temporal hops");
    TimeVec q;
    if (ti < 0) return q;
    hs.entry_time = time_vector(hop, ti, fvecs, ivecs, g.indptr[g.n],
                                "entry times (one per entry of the rows)");
    if (hs.entry_time.i) {  // integer entry times: integer cuts (exact), as the hop's kind
        const I64 t = times.cast<I64>();
        keep.push_back(t);
        require(t.ndim() == 1 && t.size() == r, "times: one per request exactly for temporal hops");
        q.i = t.data();
    } else {
        const F64 t = times.cast<F64>();
        keep.push_back(t);
        require(t.ndim() == 1 && t.size() == r, "times: one per request exactly for temporal hops");
        q.f = t.data();
    }
    return q;
}

}  // namespace bind
}  // namespace spsample

#endif  // SPSAMPLE_BIND_WINDOWS_H
