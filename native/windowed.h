// The row-wise engine hop-major, over the windows of a graph whose column ids (and weights) lie
// in a memory map of a file: the out-of-core graph (spsample/_disk_map.py, _disk_sampling.py).
//
// rowwise.h samples a bulk minibatch by minibatch, every hop of one minibatch before the next,
// so each minibatch reads rows all over the file. Here every minibatch takes hop h before any
// takes hop h + 1, and the hop's rows are sampled window by window -- a window is the rows that
// start in one span of `span` entries -- so that at most `threads` windows are mapped at once:
// a window's pages are released (madvise(MADV_DONTNEED): the page-table entries go, the page
// cache keeps the data) as soon as its last run is done.
//
// Per hop: A. every minibatch's frontier and row extents (build_frontier, as rowwise_minibatch);
// B. the rows bucketed by window (a stable counting sort) and cut into runs, each the rows of
// one minibatch in one window; C. the runs selected in window order over the threads
// (select_pass; the sampled columns are read while their window is mapped, and a column id
// outside [0, n) -- a file that changed -- stops the call); D. per minibatch, its runs' edges
// put back in frontier order and relabelled (relabel_hop, the minibatch's map rebuilt from the
// n_id entries it held). The bits are rowwise_minibatch's: a row's selection depends on the
// row, its stream and the rule only, and pass 4 sees the same edges in the same order.
//
// Inputs:  plan with one graph (indptr in memory; indices, weights inside the map), hops whose
//          frontiers are new vertices, all vertices or edge ends (no given rows, no aux rows,
//          no entry times), checked by the binding; the bulk's seeds; MapWindows (span >= 1,
//          the map and its length, the release block, a whole number of pages).
// Outputs: outs[k], as rowwise_minibatch's; returns false if a column id outside [0, n) was
//          read (outs are then incomplete).
// Complexity: rowwise_minibatch's work, plus O(rows + windows) per hop for B (O(rows log rows)
//          when the windows outnumber the rows) and O(E) copies for D; memory: the outputs,
//          the runs' edges of one hop, O(rows of a hop) of extents, per thread a VertexMap.
#ifndef SPSAMPLE_WINDOWED_H
#define SPSAMPLE_WINDOWED_H

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "rowwise.h"

namespace spsample {

struct MapWindows {
    int64_t span = 1;             // entries whose rows one window starts in
    uint8_t* map = nullptr;       // the mapping (page-aligned) and its bytes
    int64_t map_len = 0;
    int64_t block = 1;            // pages are released in aligned blocks of this many bytes
};

// One run: rows [first, first + count) of the hop's bucketed rows, all of minibatch j, window w.
struct WindowRun {
    int64_t j, w, first, count;
};

// A run's selection: its edges (dst, eid[, row ids]) and columns, and where each row's end.
struct WindowRunOut {
    HopOut ho;
    PodBuf<int64_t> erow, row_end;
    PodBuf<uint32_t> nbr;
};

// The hop's rows bucketed by window, in runs; per window its entries [lo, hi) and runs left.
struct WindowedHop {
    std::vector<int64_t> rows_r;               // bucketed rows: row of its minibatch
    std::vector<WindowRun> runs;
    std::vector<int64_t> lo, hi;               // per window
    std::unique_ptr<std::atomic<int64_t>[]> left;
    std::vector<std::vector<int64_t>> run_of, slot_of;   // per minibatch row: run, place in it
    std::vector<std::vector<int64_t>> runs_of;           // per minibatch: its runs
};

// Drop the pages of entries [lo, hi) of `arr` (an array inside the map), whole blocks.
inline void release_entries(const MapWindows& mw, const void* arr, int64_t itemsize, int64_t lo,
                            int64_t hi) {
    if (!mw.map || !arr || hi <= lo) return;
    const int64_t off = static_cast<const uint8_t*>(arr) - mw.map;
    const int64_t a = (off + lo * itemsize) / mw.block * mw.block;
    const int64_t end = off + hi * itemsize;
    const int64_t b = std::min(mw.map_len, (end + mw.block - 1) / mw.block * mw.block);
    if (b > a) madvise(mw.map + a, static_cast<size_t>(b - a), MADV_DONTNEED);
}

// The window of a row starting at entry `start`, numbered among the windows that hold rows when
// those are few against the file's windows (tiny spans), else as is.
struct WindowIds {
    int64_t span, count;
    std::vector<int64_t> ids;  // the windows holding rows, ascending (numbered mode)
    int64_t operator()(int64_t start) const {
        const int64_t w = start / span;
        if (ids.empty()) return w;
        return std::lower_bound(ids.begin(), ids.end(), w) - ids.begin();
    }
};

static WindowIds window_ids(const std::vector<RowWiseScratch>& mbs, const CSRView& g,
                            int64_t span) {
    WindowIds wid{span, g.indptr[g.n] / span + 1, {}};
    int64_t rows = 0;
    for (const RowWiseScratch& sc : mbs) rows += static_cast<int64_t>(sc.fv.size());
    if (wid.count <= 4 * rows + 1024) return wid;
    for (const RowWiseScratch& sc : mbs)
        for (size_t r = 0; r < sc.fv.size(); ++r) wid.ids.push_back(sc.start[r] / span);
    std::sort(wid.ids.begin(), wid.ids.end());
    wid.ids.erase(std::unique(wid.ids.begin(), wid.ids.end()), wid.ids.end());
    wid.count = static_cast<int64_t>(wid.ids.size());
    return wid;
}

// B: bucket the rows of every minibatch's frontier (mbs[j].start) by window, stably.
static void bucket_rows(const std::vector<RowWiseScratch>& mbs, const CSRView& g,
                        const MapWindows& mw, WindowedHop& wh) {
    const int64_t k = static_cast<int64_t>(mbs.size());
    const WindowIds window_of = window_ids(mbs, g, mw.span);
    const int64_t windows = window_of.count;
    std::vector<int64_t> next(static_cast<size_t>(windows) + 1, 0);
    for (const RowWiseScratch& sc : mbs)
        for (size_t r = 0; r < sc.fv.size(); ++r) ++next[window_of(sc.start[r]) + 1];
    for (int64_t w = 0; w < windows; ++w) next[w + 1] += next[w];
    const int64_t rows = next[windows];
    std::vector<int64_t> rows_j(static_cast<size_t>(rows));
    wh.rows_r.assign(static_cast<size_t>(rows), 0);
    wh.lo.assign(static_cast<size_t>(windows), INT64_MAX);
    wh.hi.assign(static_cast<size_t>(windows), 0);
    for (int64_t j = 0; j < k; ++j) {
        const RowWiseScratch& sc = mbs[j];
        for (size_t r = 0; r < sc.fv.size(); ++r) {
            const int64_t w = window_of(sc.start[r]), at = next[w]++;
            rows_j[at] = j;
            wh.rows_r[at] = static_cast<int64_t>(r);
            wh.lo[w] = std::min(wh.lo[w], sc.start[r]);
            wh.hi[w] = std::max(wh.hi[w], sc.start[r] + sc.deg[r]);
        }
    }
    wh.runs.clear();
    wh.left.reset(new std::atomic<int64_t>[windows]);
    for (int64_t w = 0; w < windows; ++w) wh.left[w] = 0;
    wh.run_of.resize(k);
    wh.slot_of.resize(k);
    wh.runs_of.assign(k, {});
    for (int64_t j = 0; j < k; ++j) {
        wh.run_of[j].resize(mbs[j].fv.size());
        wh.slot_of[j].resize(mbs[j].fv.size());
    }
    for (int64_t at = 0, w = 0; at < rows; ++at) {
        while (next[w] <= at) ++w;               // next[w] is now the end of window w
        const int64_t j = rows_j[at];
        if (wh.runs.empty() || wh.runs.back().w != w || wh.runs.back().j != j) {
            wh.runs_of[j].push_back(static_cast<int64_t>(wh.runs.size()));
            wh.runs.push_back(WindowRun{j, w, at, 0});
            ++wh.left[w];
        }
        WindowRun& run = wh.runs.back();
        wh.run_of[j][wh.rows_r[at]] = static_cast<int64_t>(wh.runs.size()) - 1;
        wh.slot_of[j][wh.rows_r[at]] = run.count++;
    }
}

// C: one run selected, its columns read (false: one is outside [0, n)), its window released
// when it was the last.
static bool select_run(const HopSpec& hs, const CSRView& g, const std::vector<RowWiseScratch>& mbs,
                       const int64_t* batch_ids, const MapWindows& mw, WindowedHop& wh, int64_t i,
                       RowWiseScratch& sc, WindowRunOut& ro, Budget& budget) {
    const WindowRun& run = wh.runs[i];
    const RowWiseScratch& mb = mbs[run.j];
    const int64_t m = run.count;
    size_rows(sc, m);
    for (int64_t t = 0; t < m; ++t) {
        const int64_t r = wh.rows_r[run.first + t];
        sc.fv[t] = mb.fv[r];
        sc.fl[t] = mb.fl[r];
        sc.fr[t] = mb.fr[r];
        sc.start[t] = mb.start[r];
        sc.deg[t] = mb.deg[r];
    }
    ro.row_end.resize(m);
    const int64_t E = select_pass(hs, g, m, hs.hop_word, static_cast<uint32_t>(batch_ids[run.j]),
                                  hs.rng_key, sc, ro.ho, budget, ro.row_end.data());
    if (hs.keep_row_ids) ro.erow.assign(sc.erow.data(), sc.erow.data() + E);
    ro.nbr.resize(E);
    bool ok = true;
    for (int64_t e = 0; e < E; ++e) {
        const int64_t v = g.indices[ro.ho.eid[e]];
        ok = ok && v >= 0 && v < g.n;
        ro.nbr[e] = static_cast<uint32_t>(v);
    }
    if (--wh.left[run.w] == 0) {
        release_entries(mw, g.indices, 8, wh.lo[run.w], wh.hi[run.w]);
        release_entries(mw, g.weights, 8, wh.lo[run.w], wh.hi[run.w]);
    }
    return ok;
}

// D: minibatch j's edges of hop h in frontier order (its runs' buffers freed), relabelled.
static void merge_minibatch(const HopSpec& hs, int h, int64_t j, WindowedHop& wh,
                            std::vector<WindowRunOut>& routs, RowWiseScratch& mb,
                            MiniBatchOut& out, std::vector<int64_t>& hop_end,
                            std::vector<uint8_t>& inserted, VertexMap& map, int64_t n,
                            PodBuf<uint32_t>& nbr, Budget& budget) {
    const int64_t m = static_cast<int64_t>(mb.fv.size());
    auto span_of = [&](int64_t r, int64_t& a, int64_t& e) {
        const WindowRunOut& ro = routs[wh.run_of[j][r]];
        const int64_t t = wh.slot_of[j][r];
        a = t ? ro.row_end[t - 1] : 0;
        e = ro.row_end[t];
    };
    int64_t E = 0;
    for (int64_t r = 0, a, e; r < m; ++r) {
        span_of(r, a, e);
        E += e - a;
    }
    HopOut& ho = out.hops[h - 1];
    budget.reserve(static_cast<uint64_t>(E) * (hs.keep_row_ids ? 24 : 16));
    ho.dst.resize(E);
    ho.eid.resize(E);
    nbr.resize(E);
    PodBuf<int64_t>& erow = mb.edge_row_id[h - 1];
    if (hs.keep_row_ids) erow.resize(E);
    for (int64_t r = 0, at = 0, a, e; r < m; ++r) {
        span_of(r, a, e);
        const WindowRunOut& ro = routs[wh.run_of[j][r]];
        std::copy(ro.ho.dst.data() + a, ro.ho.dst.data() + e, ho.dst.data() + at);
        std::copy(ro.ho.eid.data() + a, ro.ho.eid.data() + e, ho.eid.data() + at);
        std::copy(ro.nbr.data() + a, ro.nbr.data() + e, nbr.data() + at);
        if (hs.keep_row_ids) std::copy(ro.erow.data() + a, ro.erow.data() + e, erow.data() + at);
        at += e - a;
    }
    for (int64_t i : wh.runs_of[j]) routs[i] = WindowRunOut();
    map.begin(n, static_cast<uint64_t>(out.n_id.size() + E));
    for (size_t i = 0; i < out.n_id.size(); ++i) {
        bool ins;
        if (inserted[i])
            map.find_or_insert(static_cast<uint32_t>(out.n_id[i]), static_cast<uint32_t>(i), ins);
    }
    relabel_hop(hs, nbr.data(), E, map, out, ho, hop_end, budget, &inserted);
    map.end(out.n_id.data(), out.n_id.size());
}

}  // namespace spsample

#endif  // SPSAMPLE_WINDOWED_H
