// The row-wise engine: every hop of every minibatch of a bulk for any sampler whose hops are
// row selections (node-wise, weighted, walks, node2vec, LABOR and users' compositions of them).
//
// A plan (lowered from the traced constructors by spsample/native/_lowering.py) gives per hop:
//
//   Q   the frontier: vertices first reached at hops h'..h'' (F_NEW_NODES; one hop, or the
//       consecutive sub-hops of one heterogeneous hop), every vertex so far
//       (F_ALL_NODES), the sources / destinations of hop h''s edges (F_EDGE_SRC / F_EDGE_DST, one
//       row per edge, walks), or given rows (F_ROWS: added to the minibatch first if absent);
//       optionally an aligned aux frontier (the previous vertices of walks) for value lookups
//   P   rows of one graph of the plan, valued by a ValueProgram when the rule is weighted;
//       optionally cut at a time (temporal sampling: the graph's rows are sorted by entry time,
//       and a row keeps its prefix of entries with time <= the minibatch's time; times are
//       int64, exact for integer timestamps of any size, or double, one kind per hop)
//   S   a rule of select.h, or the last s entries (S_LAST, no randomness), the row's stream
//       keyed by its vertex (K_VERTEX) or its stable row id (K_ROW) under the hop's own counter
//       word 2 and Philox key (per relation for heterogeneous graphs), fanout per hop or per
//       row vertex
//   extraction: new vertices deduplicated per minibatch (LocalMap, first occurrence in edge
//       order) or appended per edge (no dedup); the edges in local ids
//
// exactly as spsample's NumPy evaluation of the same constructors and the scalar reference do.
//
// Method per minibatch and hop (one thread per minibatch, so results do not depend on the
// thread count), four streaming passes with software prefetching: 1. the frontier's rows and
// their extents; 2. selection into (dst, edge id); 3. gather of the sampled columns (fused
// into 2: a kept entry is prefetched when it is selected and its column read GATHER_LAG
// edges later, so that many misses are in flight); 4. relabel. LABOR hops that read many
// more entries than the graph has vertices look each column's word up in a table computed
// once per hop (labor_word_table); other hops compute the words of many short rows in one
// vectorised call (labor_words_ahead). Uniform hops at fanout 1 take select_fanout1, one
// branch-free loop with every row's stream word computed up front; plans made only of such hops,
// each reading the previous hop's sources (walks), take walk_minibatch: the whole walk in one
// kernel, its outputs packed as 32-bit words (MiniBatchOut) that the flattening widens; node2vec's
// plans (hop 1 uniform, every later hop a rejection at fanout 1 on a value table, looking up the
// previous vertices' rows) take node2vec_minibatch, the same way.
// Complexity per hop: O(m) for pass 1 (m rows), the rules' costs for pass 2, O(E) for 3-4.
// Memory: the outputs (3 int64 per sampled edge plus n_id, charged to the call's Budget before
// each buffer grows; walks: 32-bit words reserved once at the walk's bound, where walk_minibatch
// charges them; node2vec_minibatch charges what the hop-by-hop passes charge) and per thread
// O(largest frontier + largest hop) scratch.
//
// Profiling: compile with -DSPSAMPLE_NW_PROFILE (never in the shipped build) to accumulate the
// calling thread's CPU seconds per phase of rowwise_minibatch in nw_prof[] (NW_* below; the
// selection is run a second time without the gather to split the fused pass 2-3; walk_minibatch
// and node2vec_minibatch count their fused rows-selection-gather pass as NW_SELECT_GATHER); the
// module then exposes it as nw_profile() (reset on read). experiments/cost_model.py reads it.
#ifndef SPSAMPLE_ROWWISE_H
#define SPSAMPLE_ROWWISE_H

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <ctime>
#include <string>
#include <type_traits>
#include <vector>

#include "common.h"
#include "device/codes.cuh"
#include "localmap.h"
#include "rng.h"
#include "select.h"

namespace spsample {

#ifdef SPSAMPLE_NW_PROFILE
// begin/end of a minibatch, pass 1 (rows), pass 2-3 (selection + gather), selection alone,
// pass 4 (relabel); counts: frontier rows, sampled edges; LABOR's word tables (seconds, part
// of the selection), entries of rows longer than their fanout (every rule)
enum { NW_BEGIN, NW_ROWS, NW_SELECT_GATHER, NW_SELECT, NW_RELABEL, NW_NROWS, NW_NEDGES, NW_TABLE,
       NW_NLONG, NW_N };
inline double nw_prof[NW_N];
inline double nw_now() {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + 1e-9 * t.tv_nsec;
}
#define NW_T0 double nw_t = nw_now();
#define NW_TICK(i) { const double nw_n = nw_now(); nw_prof[i] += nw_n - nw_t; nw_t = nw_n; }
#define NW_COUNT(i, v) nw_prof[i] += static_cast<double>(v);
#else
#define NW_T0
#define NW_TICK(i)
#define NW_COUNT(i, v)
#endif

// FrontierKind, SelectRule and StreamKey: device/codes.cuh (shared with the GPU and Python).

// The times of a temporal hop: int64 (integer timestamps: exact at any size, e.g. nanoseconds
// beyond 2**53) or double, one kind per hop. The cut times are of the entries' kind: spsample
// converts them without changing any comparison (spsample/_times.py: cut_times).
struct TimeVec {
    const double* f = nullptr;
    const int64_t* i = nullptr;
    explicit operator bool() const { return f != nullptr || i != nullptr; }
};

// How many of the sorted entry times entries[first .. first + deg) are <= cut[at]: the length of
// the row's prefix a temporal hop keeps (upper_bound; O(log deg), exact comparisons).
inline int64_t time_prefix(const TimeVec& entries, int64_t first, int64_t deg, const TimeVec& cut,
                           int64_t at) {
    if (entries.i) {
        const int64_t* p = entries.i + first;
        return std::upper_bound(p, p + deg, cut.i[at]) - p;
    }
    const double* p = entries.f + first;
    return std::upper_bound(p, p + deg, cut.f[at]) - p;
}

struct FrontierSpec {
    int32_t kind = F_NEW_NODES;
    int32_t hop = 0;                        // F_NEW_NODES: node hop; F_EDGE_*: edge hop (>= 1)
    int32_t hop_last = 0;                   // F_NEW_NODES: last node hop of the range (>= hop - 1)
    const int64_t* rows_offsets = nullptr;  // F_ROWS: per bulk position (k + 1)
    const int64_t* rows_vertex = nullptr;   // F_ROWS: the rows' vertices
};

struct HopSpec {
    FrontierSpec frontier;
    bool has_aux = false;
    FrontierSpec aux;                   // aligned rows of value lookups / indicators
    int32_t graph = 0;                  // index into RowWisePlan::graphs
    ValueProgram values;                // weighted / rejection rules
    int32_t select = S_UNIFORM;
    int64_t fanout = 0;
    const int64_t* fanout_vec = nullptr;  // per row vertex, or nullptr
    const double* row_stats = nullptr;    // weighted: per row of the graph (eligible, wmax, wsum)
    const float* screen_weights = nullptr;  // with row_stats: the graph's float32 weights, or none
    const uint32_t* alias = nullptr;      // alias rules: (threshold, alias) per entry of the graph,
    const double* alias_share = nullptr;  // and per row its largest weight over its sum
    bool alias_all_positive = false;      // every weight of the graph > 0: a row's eligible count is d
    double bound = 0.0;                   // rejection
    int32_t key = K_VERTEX;
    bool dedup = true;
    bool keep_row_ids = false;            // a later hop reads this hop's edge ends
    uint32_t hop_word = 0;                // counter word 2 of the rows' streams
    Key rng_key{0, 0};                    // Philox key of the rows' streams
    TimeVec entry_time;                   // per entry of the graph, non-decreasing within rows
    TimeVec batch_time;                   // per bulk position: the time rows are cut at (same kind)
};

struct RowWisePlan {
    std::vector<CSRView> graphs;
    std::vector<HopSpec> hops;
    Key key{0, 0};
    uint64_t epoch = 0;
    int64_t n = 0;
};

// LABOR without a word table: rows at most LABOR_SHORT long get their words LABOR_ROWS rows
// (at most LABOR_BATCH entries) at a time (labor_words_ahead).
constexpr int64_t LABOR_ROWS = 64;
constexpr int64_t LABOR_SHORT = 256;
constexpr int64_t LABOR_BATCH = 2048;

// Per-thread scratch, reused across minibatches and hops.
struct RowWiseScratch {
    VertexMap map;                     // vertex -> local id of the current minibatch
    RowScratch rows;                   // the rules' buffers
    PodBuf<int64_t> fv, fl, fr, fa;    // frontier: vertex, local id, row id, aux vertex
    PodBuf<int64_t> start, deg, erow;  // extents; row id of each new edge
    std::vector<uint32_t> words;       // uniform rules: the next rows' stream words, ahead
    std::vector<int32_t> word_slot;    // row -> its words in `words`, or -1
    PodBuf<uint32_t> nbr;              // global ids of the hop's sampled neighbours
    std::vector<uint32_t> word_table;  // LABOR: the words of columns 0 .. n - 1 of one hop
    const uint32_t* col_words = nullptr;  // word_table while a hop uses it, else nullptr
    std::vector<uint32_t> kept;        // LABOR: a row's kept positions
    std::vector<uint32_t> key1, word1;  // fanout-1 hops: the rows' stream keys and word 0
    std::vector<uint32_t> lab_cols, lab_words;  // LABOR without a table: rows' columns, words
    int32_t lab_off[LABOR_ROWS];       // row -> its words in lab_words, or -1
    std::vector<PodBuf<int64_t>> edge_row_id;  // per hop (when kept)
    PodBuf<uint32_t> wv, wr, nv, nr;   // walks: the live walks' vertices and row ids, now and next
    PodBuf<uint32_t> wp, np;           // node2vec walks: the vertices they came from, now and next
    std::vector<uint32_t> rej_words;   // node2vec hops: the rows' first stream words,
    std::vector<int64_t> rej_got;      // and their drawn positions
};

// Thrown by a rejection rule whose values exceed its bound (spsample: SamplerError).
struct BoundExceeded : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Thrown by an alias rule on a row whose positive values sum past the largest double (spsample:
// SamplerError, as the NumPy evaluation's).
struct AliasOverflow : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The rows of frontier f of the current minibatch: vertex fv, local fl, row id fr (fv only
// when `only_vertex`). Given rows are added to the minibatch now when absent (dedup).
static int64_t build_frontier(const FrontierSpec& f, int64_t j, MiniBatchOut& out,
                              const std::vector<int64_t>& hop_end, RowWiseScratch& sc,
                              PodBuf<int64_t>& fv, bool only_vertex) {
    PodBuf<int64_t>& n_id = out.n_id;
    int64_t m = 0;
    auto size_rows = [&](int64_t rows) {
        fv.resize(rows);
        if (!only_vertex) {
            sc.fl.resize(rows);
            sc.fr.resize(rows);
        }
    };
    if (f.kind == F_NEW_NODES || f.kind == F_ALL_NODES) {
        const int64_t lo = f.kind == F_ALL_NODES ? 0 : (f.hop == 0 ? 0 : hop_end[f.hop - 1]);
        const int64_t hi = f.kind == F_ALL_NODES ? hop_end.back() : hop_end[f.hop_last];
        m = hi - lo;
        size_rows(m);
        for (int64_t r = 0; r < m; ++r) {
            fv[r] = n_id[lo + r];
            if (!only_vertex) sc.fl[r] = sc.fr[r] = lo + r;
        }
    } else if (f.kind == F_EDGE_SRC || f.kind == F_EDGE_DST) {
        const HopOut& e = out.hops[f.hop - 1];
        const int64_t* ends = f.kind == F_EDGE_SRC ? e.src.data() : e.dst.data();
        const int64_t* rid = sc.edge_row_id[f.hop - 1].data();
        m = static_cast<int64_t>(e.src.size());
        size_rows(m);
        for (int64_t r = 0; r < m; ++r) {
            fv[r] = n_id[ends[r]];
            if (!only_vertex) {
                sc.fl[r] = ends[r];
                sc.fr[r] = rid[r];
            }
        }
    } else {  // F_ROWS
        const int64_t a = f.rows_offsets[j], b = f.rows_offsets[j + 1];
        m = b - a;
        size_rows(m);
        for (int64_t r = 0; r < m; ++r) {
            const int64_t v = f.rows_vertex[a + r];
            fv[r] = v;
            if (!only_vertex) {
                bool ins;
                const uint32_t lu = sc.map.find_or_insert(static_cast<uint32_t>(v),
                                                          static_cast<uint32_t>(n_id.size()), ins);
                if (ins) n_id.push_back(v);
                sc.fl[r] = lu;
                sc.fr[r] = r;
            }
        }
    }
    return m;
}

// LABOR keeps position j of a row of length d > s >= 0 when its column's word is below
// T = ceil(s 2**32 / d) (< 2**32 as s < d): the same test as threshold_keeps (word * d <
// s 2**32).
static inline uint32_t threshold_limit(int64_t d, int64_t s) {
    const uint64_t du = static_cast<uint64_t>(d);
    return static_cast<uint32_t>(((static_cast<uint64_t>(s) << 32) + du - 1) / du);
}

// The positions j < d with words[j] < limit into out, ascending; returns the count.
// Branch-free (every position is written, the count advanced by the test).
static inline int64_t words_keeps(const uint32_t* words, int64_t d, uint32_t limit, uint32_t* out) {
    int64_t t = 0;
    for (int64_t j = 0; j < d; ++j) {
        out[t] = static_cast<uint32_t>(j);
        t += words[j] < limit;
    }
    return t;
}

// The positions j in [j0, d) whose column's word words[cols[j]] is below limit, appended to
// out[0..t0) in ascending order; returns the new count. Branch-free.
static inline int64_t table_keeps_scalar(const uint32_t* cols, int64_t d, uint32_t limit,
                                         const uint32_t* words, uint32_t* out, int64_t j0, int64_t t0) {
    int64_t t = t0;
    for (int64_t j = j0; j < d; ++j) {
        out[t] = static_cast<uint32_t>(j);
        t += words[cols[j]] < limit;
    }
    return t;
}

#ifdef SPSAMPLE_LW_X86
// AVX-512F: 16 entries per step (their words gathered from the table, compared with the limit,
// the positions below it compressed), the row's columns prefetched SCAN_AHEAD entries ahead (a
// long row spans pages, where the hardware's stream prefetch stops); the last d % 16 by
// table_keeps_scalar. Same positions.
constexpr int64_t SCAN_AHEAD = 256;

__attribute__((target("avx512f"))) static int64_t table_keeps_avx512(const uint32_t* cols, int64_t d,
                                                                       uint32_t limit, const uint32_t* words,
                                                                       uint32_t* out) {
    const int* table = reinterpret_cast<const int*>(words);
    const __m512i lim = _mm512_set1_epi32(static_cast<int>(limit));
    const __m512i sixteen = _mm512_set1_epi32(16);
    __m512i pos = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    int64_t t = 0, j = 0;
    for (; j + 16 <= d; j += 16) {
        __builtin_prefetch(cols + j + SCAN_AHEAD);
        const __m512i u = _mm512_loadu_si512(reinterpret_cast<const void*>(cols + j));
        const __m512i w = _mm512_i32gather_epi32(u, table, 4);
        const __mmask16 keep = _mm512_cmplt_epu32_mask(w, lim);
        _mm512_storeu_si512(reinterpret_cast<void*>(out + t), _mm512_maskz_compress_epi32(keep, pos));
        t += __builtin_popcount(static_cast<unsigned>(keep));
        pos = _mm512_add_epi32(pos, sixteen);
    }
    return table_keeps_scalar(cols, d, limit, words, out, j, t);
}
#endif

// LABOR's rule on a row (columns cols[0..d), d > s >= 0) with the hop's table of column words:
// the positions whose column's word is below threshold_limit(d, s), into out (room for d),
// ascending; returns the count.
static inline int64_t table_keeps(const uint32_t* cols, int64_t d, int64_t s, const uint32_t* words,
                                  uint32_t* out) {
    const uint32_t limit = threshold_limit(d, s);
#ifdef SPSAMPLE_LW_X86
    if (lw_avx512()) return table_keeps_avx512(cols, d, limit, words, out);
#endif
    return table_keeps_scalar(cols, d, limit, words, out, 0, 0);
}

// threshold_row_simd (select.h) on a row's 32-bit column ids: the same words and positions,
// half the bytes read, and the lines the deferred gather reads next.
template <class Emit>
static inline void threshold_row32(const uint32_t* cols, int64_t d, int64_t s, uint32_t hw,
                                   uint32_t bid, Key key, Emit&& emit) {
    constexpr int64_t CHUNK = 256;
    uint32_t words[CHUNK];
    for (int64_t at = 0; at < d; at += CHUNK) {
        const int64_t n = std::min(CHUNK, d - at);
        column_words(cols + at, n, hw, bid, key, words);
        for (int64_t i = 0; i < n; ++i)
            if (threshold_keeps(words[i], d, s)) emit(at + i);
    }
}

// LABOR without a word table, rows [r0, r1) (r1 - r0 <= LABOR_ROWS) of a hop: the columns of
// its rows longer than their fanout and at most LABOR_SHORT long are copied side by side (up to
// LABOR_BATCH entries; the rows after the last that fits are left to the next batch) and their
// words computed in one column_words call, so short rows share the vector code instead of each
// paying its own scalar tail. sc.lab_off[r - r0] = row r's first word in sc.lab_words, or -1
// (a row with nothing to test, or longer than LABOR_SHORT: threshold_row32). Returns the end
// of the batch (> r0).
static int64_t labor_words_ahead(const HopSpec& hs, const uint32_t* idx32, int64_t r0, int64_t r1,
                                 uint32_t hw, uint32_t bid, Key key, RowWiseScratch& sc) {
    const int64_t* rs = sc.start.data();
    const int64_t* rd = sc.deg.data();
    const int64_t* fv = sc.fv.data();
    if (sc.lab_cols.size() < static_cast<size_t>(LABOR_BATCH)) {
        sc.lab_cols.resize(LABOR_BATCH);
        sc.lab_words.resize(LABOR_BATCH);
    }
    uint32_t* lc = sc.lab_cols.data();
    for (int64_t r = r0; r < r1; ++r) __builtin_prefetch(idx32 + rs[r]);
    int64_t total = 0, r = r0;
    for (; r < r1; ++r) {
        const int64_t d = rd[r];
        const int64_t s = hs.fanout_vec ? hs.fanout_vec[fv[r]] : hs.fanout;
        sc.lab_off[r - r0] = -1;
        if (s <= 0 || d <= s || d > LABOR_SHORT) continue;
        if (total + d > LABOR_BATCH) break;
        sc.lab_off[r - r0] = static_cast<int32_t>(total);
        std::memcpy(lc + total, idx32 + rs[r], static_cast<size_t>(d) * 4);
        total += d;
    }
    column_words(lc, total, hw, bid, key, sc.lab_words.data());
    return r;
}

// Words drawn ahead for the uniform rules (and, per_draw = 2, the alias rules): for rows
// [r0, r0 + WORD_ROWS) that draw (s per_draw <= WORD_MAX words each), eight rows' streams at a
// time (stream_words8, vectorised), into sc.words; row r's slot in sc.word_slot[r - r0] (-1: it
// draws from its Stream as usual).
constexpr int64_t WORD_ROWS = 64;
constexpr int64_t WORD_MAX = 64;

template <bool REPLACE>
static void draw_words_ahead(const HopSpec& hs, int64_t r0, int64_t r1, uint32_t hw, uint32_t bid,
                             Key key, RowWiseScratch& sc, int64_t per_draw = 1) {
    sc.words.resize(WORD_ROWS * WORD_MAX);
    sc.word_slot.assign(WORD_ROWS, -1);
    uint32_t key_word[8];
    int32_t lane_row[8];
    int lanes = 0, slots = 0;
    int64_t count = 0;
    auto flush = [&]() {
        for (int i = lanes; i < 8; ++i) key_word[i] = key_word[lanes - 1];
        uint32_t block[8 * WORD_MAX];
        stream_words8(key_word, hw, bid, key, count, block, WORD_MAX);
        for (int i = 0; i < lanes; ++i) {
            std::copy(block + i * WORD_MAX, block + i * WORD_MAX + count,
                      sc.words.data() + static_cast<int64_t>(slots) * WORD_MAX);
            sc.word_slot[lane_row[i]] = slots++;
        }
        lanes = 0;
        count = 0;
    };
    for (int64_t r = r0; r < r1; ++r) {
        const int64_t d = sc.deg[r];
        const int64_t s = hs.fanout_vec ? hs.fanout_vec[sc.fv[r]] : hs.fanout;
        const bool draws = d > 0 && s > 0 && s * per_draw <= WORD_MAX && (REPLACE || d > s);
        if (!draws) continue;
        key_word[lanes] = static_cast<uint32_t>(hs.key == K_ROW ? sc.fr[r] : sc.fv[r]);
        lane_row[lanes++] = static_cast<int32_t>(r - r0);
        count = std::max(count, s * per_draw);
        if (lanes == 8) flush();
    }
    if (lanes) flush();
}

// Rejection on a value table (select.h): words 0 .. REJECTION_AHEAD - 1 of the streams of rows
// [r0, r1) (at most WORD_ROWS), eight rows at a time (stream_words8, vectorised), into
// sc.words (row r at (r - r0) * REJECTION_AHEAD), so that the columns of the rows' first
// draws can be prefetched rows ahead.
static void draw_rejection_ahead(const HopSpec& hs, int64_t r0, int64_t r1, uint32_t hw, uint32_t bid,
                                 Key key, RowWiseScratch& sc) {
    sc.words.resize(WORD_ROWS * REJECTION_AHEAD);
    uint32_t key_word[8];
    for (int64_t a = r0; a < r1; a += 8) {
        const int64_t n = std::min<int64_t>(8, r1 - a);
        for (int64_t i = 0; i < 8; ++i) {
            const int64_t r = a + std::min(i, n - 1);
            key_word[i] = static_cast<uint32_t>(hs.key == K_ROW ? sc.fr[r] : sc.fv[r]);
        }
        uint32_t block[8 * REJECTION_AHEAD];
        stream_words8(key_word, hw, bid, key, REJECTION_AHEAD, block, REJECTION_AHEAD);
        std::copy(block, block + n * REJECTION_AHEAD, sc.words.data() + (a - r0) * REJECTION_AHEAD);
    }
}

// Prefetch what row r's first REJECTION_AHEAD / 2 rejection draws read: their columns, and the
// aux row's extent (the lookups).
static inline void prefetch_rejection_row(const RowWiseScratch& sc, const CSRView& g, const CSRView& aux,
                                          const int64_t* fa, int64_t r, int64_t r0) {
    const int64_t d = sc.deg[r];
    if (d == 0) return;
    const uint32_t* w = sc.words.data() + (r - r0) * REJECTION_AHEAD;
    for (int a = 0; a < REJECTION_AHEAD / 2; ++a) {
        const int64_t p = static_cast<int64_t>(uniform_int(w[2 * a], static_cast<uint64_t>(d)));
        __builtin_prefetch(g.indices32 ? static_cast<const void*>(g.indices32 + sc.start[r] + p)
                                       : static_cast<const void*>(g.indices + sc.start[r] + p));
    }
    if (fa && aux.indptr) __builtin_prefetch(aux.indptr + fa[r]);
}

// The first lines of the weights of a weighted row with row statistics (start st, length d,
// vertex v) that its screen will read (d > its fanout s >= 1), up to WEIGHT_PF_LINES lines: the
// float32 copies when the hop has them. weight_lines counts them; prefetch_weights issues them.
constexpr int64_t WEIGHT_PF_LINES = 32;

static inline int64_t weight_lines(const HopSpec& hs, int64_t d, int64_t v) {
    const int64_t s = hs.fanout_vec ? hs.fanout_vec[v] : hs.fanout;
    if (s <= 0 || d <= s) return 0;
    const int shift = hs.screen_weights ? 4 : 3;  // 16 floats or 8 doubles to a line
    return std::min<int64_t>((d + (int64_t(1) << shift) - 1) >> shift, WEIGHT_PF_LINES);
}

static inline int64_t prefetch_weights(const HopSpec& hs, const CSRView& g, int64_t st, int64_t d, int64_t v) {
    const int64_t lines = weight_lines(hs, d, v);
    const char* w = hs.screen_weights ? reinterpret_cast<const char*>(hs.screen_weights + st)
                                      : reinterpret_cast<const char*>(g.weights + st);
    for (int64_t i = 0; i < lines; ++i) __builtin_prefetch(w + 64 * i);
    if (lines > 0) __builtin_prefetch(w + 64 * lines - 1);  // the row need not start on a line
    return lines;
}

// The weights of the rows a weighted hop screens, prefetched across rows: before row r is
// screened, the rows after it are prefetched (prefetch_weights) until WEIGHT_AHEAD_LINES of
// their lines are in flight, skipping rows that read no weights, so that a long row's lines
// are requested while the rows before it are screened, short ones included. Only for weights
// of at least WEIGHT_AHEAD_MIN_BYTES (the screen's copy): smaller ones stay in the core's
// cache, where running ahead costs more than it saves; their rows prefetch the next one.
constexpr int64_t WEIGHT_AHEAD_LINES = 48;
constexpr int64_t WEIGHT_AHEAD_MIN_BYTES = int64_t(4) << 20;

static inline bool weights_run_ahead(const HopSpec& hs, const CSRView& g) {
    const int64_t bytes = g.indptr[g.n] * (hs.screen_weights ? 4 : 8);
    return hs.row_stats && bytes >= WEIGHT_AHEAD_MIN_BYTES;
}

struct WeightLookahead {
    int64_t next = 0;   // the first row not prefetched
    int64_t lines = 0;  // lines prefetched for the rows in [current row, next)
};

static inline void weights_ahead(const HopSpec& hs, const CSRView& g, const int64_t* rs,
                                 const int64_t* rd, const int64_t* fv, int64_t r, int64_t m,
                                 WeightLookahead& la) {
    if (la.next <= r) {
        la.next = r + 1;
        la.lines = 0;
    } else {
        la.lines -= weight_lines(hs, rd[r], fv[r]);  // row r's, read now
    }
    for (; la.next < m && la.lines < WEIGHT_AHEAD_LINES; ++la.next)
        la.lines += prefetch_weights(hs, g, rs[la.next], rd[la.next], fv[la.next]);
}

// The deferred gather of the selection passes: a kept entry's column is prefetched when it is
// selected and read GATHER_LAG edges later, so that many misses are in flight.
constexpr int64_t GATHER_LAG = 64;

// cols[e] = the column of entry eid[e] (from the 32-bit copy where the graph has one) for
// e in [from, upto); returns the next edge to gather (max(from, upto)).
static inline int64_t gather_columns(const CSRView& g, const int64_t* eid, uint32_t* cols,
                                     int64_t from, int64_t upto) {
    if (g.indices32) {
        for (; from < upto; ++from) cols[from] = g.indices32[eid[from]];
    } else {
        for (; from < upto; ++from) cols[from] = static_cast<uint32_t>(g.indices[eid[from]]);
    }
    return from;
}

// The alias rules with the graph's table: the table entries of the rows' first s draws (their
// words drawn ahead, WORD_ROWS rows at a time), prefetched in row order ALIAS_LAG draws before
// they are read (more in flight than the memory system holds would be dropped).
constexpr int64_t ALIAS_LAG = 32;
// Words drawn ahead per unit of fanout: 2 per draw, for 1.5 s draws (attempts repeat kept
// entries; with replacement only the first s are read).
constexpr int64_t ALIAS_WORDS_AHEAD = 3;

struct AliasPrefetch {
    int64_t r0 = 0, r1 = 0;  // the batch of rows whose words are drawn ahead
    int64_t row = 0, a = 0;  // the next draw to prefetch: draw a of row `row`
    int64_t issued = 0;      // draws prefetched in this batch
    int64_t used = 0;        // draws of the rows selected so far in this batch
};

static void alias_prefetch_to(const HopSpec& hs, const RowWiseScratch& sc, AliasPrefetch& pa,
                              int64_t upto) {
    while (pa.issued < upto && pa.row < pa.r1) {
        const int32_t slot = sc.word_slot[pa.row - pa.r0];
        const int64_t s = hs.fanout_vec ? hs.fanout_vec[sc.fv[pa.row]] : hs.fanout;
        if (slot < 0 || pa.a >= s * ALIAS_WORDS_AHEAD / 2) {
            ++pa.row;
            pa.a = 0;
            continue;
        }
        const uint32_t* w = sc.words.data() + static_cast<int64_t>(slot) * WORD_MAX;
        const int64_t i = static_cast<int64_t>(uniform_int(w[2 * pa.a], sc.deg[pa.row]));
        __builtin_prefetch(hs.alias + 2 * (sc.start[pa.row] + i));
        ++pa.a;
        ++pa.issued;
    }
}

// A stream's word i, kept out of line so that alias_select's word(i), whose hot path reads
// the words drawn ahead, is inlined into its draws.
__attribute__((noinline)) static uint32_t stream_word_cold(Stream& stream, int64_t i) {
    return stream.word(static_cast<uint64_t>(i));
}

// An alias rule on row (vertex v, aligned vertex t, entries st .. st + d), `ahead` its words
// 0 .. ALIAS_WORDS_AHEAD s - 1 drawn ahead (or nullptr): with the graph's table (hs.alias, lowered only for whole
// rows valued by the graph's weights), its shares and row statistics, the concentrated rows
// taking the screened keys (weighted_row); otherwise the row's own table, built from its
// values (alias_table_row, the same table). Positions into rows.pos; returns their count.
static int64_t alias_select(const HopSpec& hs, const CSRView& g, int64_t v, int64_t t, int64_t st,
                            int64_t d, int64_t s, bool replace, Stream& stream,
                            const uint32_t* ahead, RowScratch& rows) {
    const int64_t n_ahead = ahead ? ALIAS_WORDS_AHEAD * s : 0;
    auto word = [&](int64_t i) __attribute__((always_inline)) {
        return i < n_ahead ? ahead[i] : stream_word_cold(stream, i);
    };
    if (hs.alias) {
        if (v >= g.n) return 0;
        const double* w = g.weights + st;
        const double* stats = hs.row_stats + 3 * v;
        const float* w32 = hs.screen_weights ? hs.screen_weights + st : nullptr;
        auto keys_sample = [&]() { return weighted_row(stream, w, d, s, rows, stats, w32); };
        const int64_t eligible = hs.alias_all_positive ? d : static_cast<int64_t>(stats[0]);
        // the share decides only rows drawn without replacement that keep fewer than all
        const bool drawn = s >= 0 && !replace && eligible > s;
        return alias_row(word, hs.alias + 2 * st, [w](int64_t p) { return w[p]; }, keys_sample,
                         eligible, drawn ? hs.alias_share[v] : 0.0, d, s, replace,
                         rows.pos.data(), rows.keys.data());
    }
    const ValueCode vc = hs.values.view();
    double* vals = rows.vals.data();
    for (int64_t p = 0; p < d; ++p) vals[p] = entry_value(vc, g, v, t, st, p);
    auto value = [vals](int64_t p) { return vals[p]; };
    rows.fit_alias(d);
    double share = 0.0;
    const int64_t eligible = alias_table_row(value, d, rows.alias.data(), rows.alias_x.data(),
                                             rows.alias_small.data(), rows.alias_large.data(), share);
    if (eligible < 0) throw AliasOverflow("a row's positive values sum past the largest double");
    auto keys_sample = [&]() { return weighted_row(stream, value, d, s, rows.pos.data(), rows.keys.data()); };
    return alias_row(word, rows.alias.data(), value, keys_sample, eligible, share, d, s, replace,
                     rows.pos.data(), rows.keys.data());
}

// Pass 2 of one hop: every row's kept positions -> (dst, edge id[, row id]). Returns E; with
// row_end (m entries), row r's edges are [row_end[r - 1], row_end[r]); with nbr, the kept
// entries' column ids too (nbr[e] = indices[eid[e]], read while the row is being selected,
// its entries prefetched PF_ROWS rows ahead).
template <int32_t RULE>
static int64_t select_rows_pass(const HopSpec& hs, const CSRView& g, int64_t m, uint32_t hw,
                                uint32_t bid, Key key, RowWiseScratch& sc, HopOut& ho,
                                Budget& budget, int64_t* row_end, PodBuf<uint32_t>* nbr) {
    constexpr int64_t PF_ROWS = 16;
    const int64_t* rs = sc.start.data();
    const int64_t* rd = sc.deg.data();
    const int64_t* fv = sc.fv.data();
    const int64_t* fl = sc.fl.data();
    const int64_t* fr = sc.fr.data();
    const int64_t* fa = hs.has_aux ? sc.fa.data() : nullptr;
    const bool keep_rows = hs.keep_row_ids;
    const ValueCode vc = hs.values.view();
    constexpr bool ALIAS = RULE == S_ALIAS || RULE == S_ALIAS_REP;
    const bool weighted = RULE == S_WEIGHTED || RULE == S_WEIGHTED_REP || ALIAS;
    const bool replace = RULE == S_UNIFORM_REP || RULE == S_WEIGHTED_REP || RULE == S_REJECTION ||
                         RULE == S_ALIAS_REP;
    // output capacity: the exact bound of the uniform rules, an upper bound otherwise (LABOR:
    // about s per row expected, grown on demand)
    int64_t cap = 0;
    for (int64_t r = 0; r < m; ++r) {
        const int64_t s = hs.fanout_vec ? hs.fanout_vec[fv[r]] : hs.fanout;
        cap += row_bound(rd[r], s, replace);
    }
    auto grow = [&](int64_t need) {
        budget.reserve(static_cast<uint64_t>(need - static_cast<int64_t>(ho.dst.size())) * 24);
        ho.dst.resize(need);
        ho.eid.resize(need);
        if (keep_rows) sc.erow.resize(need);
        if (nbr) nbr->resize(need);
    };
    ho.dst.clear();
    ho.eid.clear();
    grow(cap);
    int64_t* dst = ho.dst.data();
    int64_t* eid = ho.eid.data();
    int64_t* erow = keep_rows ? sc.erow.data() : nullptr;
    uint32_t* cols = nbr ? nbr->data() : nullptr;
    const uint32_t* idx32 = g.indices32;
    int64_t E = 0;
    constexpr bool UNIFORM = RULE == S_UNIFORM || RULE == S_UNIFORM_REP;
    // rejection: draws decided without lookups where the values allow (select.h)
    const ValueTable table = RULE == S_REJECTION ? value_table(vc, hs.bound) : ValueTable();
    // weighted with the graph's row statistics: those of a whole row of the graph (rows are
    // whole unless cut by time)
    auto stats_of = [&](int64_t q) -> const double* {
        const int64_t v = fv[q];
        if (v < g.n && (!hs.entry_time || (g.indptr[v] == rs[q] && g.indptr[v + 1] == rs[q] + rd[q])))
            return hs.row_stats + 3 * v;
        return nullptr;
    };
    int64_t gathered = 0;  // the deferred gather (gather_columns)
    auto gather_to = [&](int64_t upto) { gathered = gather_columns(g, eid, cols, gathered, upto); };
    const uint32_t* words = sc.col_words;  // LABOR: every column's word of this hop, or null
    int64_t lab_r0 = 0, lab_r1 = 0;  // LABOR without a table: the batch of rows whose words are in sc
    WeightLookahead ahead;           // weighted with row statistics: the rows' weights, ahead
    AliasPrefetch alias_ahead;       // alias rules with the graph's table
    const bool run_ahead = RULE == S_WEIGHTED && weights_run_ahead(hs, g);
    for (int64_t r = 0; r < m; ++r) {
        if (cols) gather_to(E - GATHER_LAG);
        if (row_end && r > 0) row_end[r - 1] = E;
        if (UNIFORM && r % WORD_ROWS == 0)
            draw_words_ahead<RULE == S_UNIFORM_REP>(hs, r, std::min(m, r + WORD_ROWS), hw, bid, key, sc);
        if (RULE == S_REJECTION && table.ok) {  // the first draws' columns, PF_DRAWS rows ahead
            constexpr int64_t PF_DRAWS = 8;
            const int64_t r0 = r - r % WORD_ROWS, r1 = std::min(m, r0 + WORD_ROWS);
            if (r == r0) {
                draw_rejection_ahead(hs, r0, r1, hw, bid, key, sc);
                for (int64_t q = r0; q < std::min(r1, r0 + PF_DRAWS); ++q)
                    prefetch_rejection_row(sc, g, vc.aux, fa, q, r0);
            }
            if (r + PF_DRAWS < r1) prefetch_rejection_row(sc, g, vc.aux, fa, r + PF_DRAWS, r0);
        }
        if (ALIAS && hs.alias) {  // the first draws' table entries, ALIAS_LAG draws ahead
            if (r % WORD_ROWS == 0) {
                const int64_t r1 = std::min(m, r + WORD_ROWS);
                draw_words_ahead<RULE == S_ALIAS_REP>(hs, r, r1, hw, bid, key, sc, ALIAS_WORDS_AHEAD);
                alias_ahead = AliasPrefetch{r, r1, r, 0, 0, 0};
            }
            if (r + PF_ROWS < m && fv[r + PF_ROWS] < g.n) {  // what the row's rule reads first
                const int64_t q = r + PF_ROWS;
                const int64_t sq = hs.fanout_vec ? hs.fanout_vec[fv[q]] : hs.fanout;
                const bool drawn = rd[q] > sq && sq >= 0;
                if (drawn || !hs.alias_all_positive) __builtin_prefetch(hs.row_stats + 3 * fv[q]);
                if (drawn) {
                    __builtin_prefetch(hs.alias_share + fv[q]);
                    __builtin_prefetch(hs.screen_weights ? static_cast<const void*>(hs.screen_weights + rs[q])
                                                         : static_cast<const void*>(g.weights + rs[q]));
                }
            }
            if (sc.word_slot[r % WORD_ROWS] >= 0) {
                const int64_t s = hs.fanout_vec ? hs.fanout_vec[fv[r]] : hs.fanout;
                const int64_t n = s * ALIAS_WORDS_AHEAD / 2;
                alias_prefetch_to(hs, sc, alias_ahead, alias_ahead.used + n + ALIAS_LAG);
                alias_ahead.used += n;
            }
        }
        if (cols && r + PF_ROWS < m)
            __builtin_prefetch(idx32 ? static_cast<const void*>(idx32 + rs[r + PF_ROWS])
                                     : static_cast<const void*>(g.indices + rs[r + PF_ROWS]));
        const int64_t d = rd[r];
        if (d == 0) continue;
        const int64_t s = hs.fanout_vec ? hs.fanout_vec[fv[r]] : hs.fanout;
        if (s == 0) continue;
        const int64_t st = rs[r];
        const int64_t local_v = fl[r];
        const int64_t row_id = fr[r];
        auto emit = [&](int64_t p) {
            if (E == static_cast<int64_t>(ho.dst.size())) {
                grow(2 * E + 16);
                dst = ho.dst.data();
                eid = ho.eid.data();
                erow = keep_rows ? sc.erow.data() : nullptr;
                cols = nbr ? nbr->data() : nullptr;
            }
            dst[E] = local_v;
            eid[E] = st + p;
            if (keep_rows) erow[E] = row_id;
            if (cols) {
                if (idx32)
                    __builtin_prefetch(idx32 + st + p);
                else
                    __builtin_prefetch(g.indices + st + p);
            }
            ++E;
        };
        if (RULE == S_LAST) {  // the latest s entries of a row sorted by time
            for (int64_t p = (s < 0 || d <= s) ? 0 : d - s; p < d; ++p) emit(p);
            continue;
        }
        if (RULE == S_THRESHOLD) {
            if (s < 0 || d <= s) {
                for (int64_t p = 0; p < d; ++p) emit(p);
            } else if (words && idx32) {  // the hop's table of column words
                if (static_cast<int64_t>(sc.kept.size()) < d) sc.kept.resize(d);
                const int64_t c = table_keeps(idx32 + st, d, s, words, sc.kept.data());
                for (int64_t i = 0; i < c; ++i) emit(sc.kept[i]);
            } else if (idx32) {
                if (r >= lab_r1) {
                    lab_r0 = r;
                    lab_r1 = labor_words_ahead(hs, idx32, r, std::min(m, r + LABOR_ROWS), hw, bid, key, sc);
                }
                const int32_t off = sc.lab_off[r - lab_r0];
                if (off < 0) {
                    threshold_row32(idx32 + st, d, s, hw, bid, key, emit);
                } else {
                    if (static_cast<int64_t>(sc.kept.size()) < d) sc.kept.resize(d);
                    const int64_t c = words_keeps(sc.lab_words.data() + off, d, threshold_limit(d, s),
                                                  sc.kept.data());
                    for (int64_t i = 0; i < c; ++i) emit(sc.kept[i]);
                }
            } else {
                threshold_row_simd(g.indices + st, d, s, hw, bid, key, emit);
            }
            continue;
        }
        if (!weighted && RULE != S_REJECTION && (s < 0 || (!replace && d <= s))) {
            for (int64_t p = 0; p < d; ++p) emit(p);
            continue;
        }
        Stream stream(static_cast<uint32_t>(hs.key == K_ROW ? row_id : fv[r]), hw, bid, key);
        sc.rows.fit(d, s, weighted || RULE == S_REJECTION);
        int64_t c = 0;
        const int64_t t = fa ? fa[r] : fv[r];
        if (UNIFORM) {
            const int32_t slot = sc.word_slot[r % WORD_ROWS];
            const uint32_t* ahead = sc.words.data() + static_cast<int64_t>(slot) * WORD_MAX;
            auto from_stream = [&](int64_t i) { return stream.word(static_cast<uint64_t>(i)); };
            auto drawn = [&](int64_t i) { return ahead[i]; };
            if (RULE == S_UNIFORM)
                c = slot >= 0 ? floyd_row(drawn, d, s, sc.rows) : floyd_row(from_stream, d, s, sc.rows);
            else
                c = slot >= 0 ? uniform_rep_row(drawn, d, s, sc.rows)
                              : uniform_rep_row(from_stream, d, s, sc.rows);
        } else if (RULE == S_REJECTION) {
            bool exceeded = false;
            auto value = [&](int64_t p) { return entry_value(vc, g, fv[r], t, st, p); };
            if (table.ok) {
                auto col = [&](int64_t p) {
                    return idx32 ? static_cast<int64_t>(idx32[st + p]) : g.indices[st + p];
                };
                auto found = [&](int64_t u) { return in_row(vc.aux, t, u); };
                const uint32_t* pre = sc.words.data() + (r % WORD_ROWS) * REJECTION_AHEAD;
                c = rejection_row_table(stream, d, s, hs.bound, table, fv[r], t, col, found, value,
                                        pre, sc.rows, exceeded);
            } else {
                c = rejection_row(stream, d, s, hs.bound, value, sc.rows, exceeded);
            }
            if (exceeded) throw BoundExceeded("a value exceeds the rejection bound");
        } else if (ALIAS) {
            const int32_t slot = hs.alias ? sc.word_slot[r % WORD_ROWS] : -1;
            c = alias_select(hs, g, fv[r], t, st, d, s, replace, stream,
                             slot >= 0 ? sc.words.data() + static_cast<int64_t>(slot) * WORD_MAX : nullptr,
                             sc.rows);
        } else {
            const double* w;
            if (hs.values.only_weight) {
                if (r + PF_ROWS < m) {
                    __builtin_prefetch(hs.screen_weights
                                           ? static_cast<const void*>(hs.screen_weights + rs[r + PF_ROWS])
                                           : static_cast<const void*>(g.weights + rs[r + PF_ROWS]));
                    if (hs.row_stats && fv[r + PF_ROWS] < g.n) {
                        __builtin_prefetch(hs.row_stats + 3 * fv[r + PF_ROWS]);
                        __builtin_prefetch(hs.row_stats + 3 * fv[r + PF_ROWS] + 2);
                    }
                }
                if (run_ahead)
                    weights_ahead(hs, g, rs, rd, fv, r, m, ahead);
                else if (hs.row_stats && r + 1 < m)  // the next row's weights
                    prefetch_weights(hs, g, rs[r + 1], rd[r + 1], fv[r + 1]);
                w = g.weights + st;
            } else {
                double* vals = sc.rows.vals.data();
                for (int64_t p = 0; p < d; ++p) vals[p] = entry_value(vc, g, fv[r], t, st, p);
                w = vals;
            }
            if (RULE == S_WEIGHTED_REP) {
                c = weighted_rep_row(stream, w, d, s, sc.rows);
            } else {
                c = weighted_row(stream, w, d, s, sc.rows, hs.row_stats ? stats_of(r) : nullptr,
                                 hs.screen_weights ? hs.screen_weights + st : nullptr);
            }
        }
        const int64_t* pos = sc.rows.pos.data();
        for (int64_t i = 0; i < c; ++i) emit(pos[i]);
    }
    if (cols) gather_to(E);
    if (row_end && m > 0) row_end[m - 1] = E;
    ho.dst.resize(E);
    ho.eid.resize(E);
    if (nbr) nbr->resize(E);
    return E;
}

// Pass 2 (and 3) of a uniform hop at fanout 1 for every row (walks): row r of degree d >= 1
// keeps position uniform_int(w, d), w word 0 of its stream -- Floyd's and the replacement
// rule's only draw, and position 0 when d = 1 (uniform_int(w, 1) = 0) -- and a row of degree 0
// nothing. Branch-free per row; the streams' words 0 of all rows at once (column_words:
// word 0 of block (0, key, hw, bid) is the stream's word 0);
// the kept entries prefetched as they are selected and their columns read GATHER_LAG edges
// later.
// Same outputs as select_rows_pass<S_UNIFORM / S_UNIFORM_REP>.
static int64_t select_fanout1(const HopSpec& hs, const CSRView& g, int64_t m, uint32_t hw,
                              uint32_t bid, Key key, RowWiseScratch& sc, HopOut& ho,
                              Budget& budget, int64_t* row_end, PodBuf<uint32_t>* nbr) {
    const int64_t* rs = sc.start.data();
    const int64_t* rd = sc.deg.data();
    const int64_t* fl = sc.fl.data();
    const int64_t* kw = hs.key == K_ROW ? sc.fr.data() : sc.fv.data();
    const bool keep_rows = hs.keep_row_ids;
    int64_t cap = 0;
    for (int64_t r = 0; r < m; ++r) cap += rd[r] > 0;
    ho.dst.clear();
    ho.eid.clear();
    budget.reserve(static_cast<uint64_t>(cap + 1) * 24);
    ho.dst.resize(cap + 1);  // + 1: rows of degree 0 write the next slot, then do not keep it
    ho.eid.resize(cap + 1);
    if (keep_rows) sc.erow.resize(cap + 1);
    int64_t* dst = ho.dst.data();
    int64_t* eid = ho.eid.data();
    int64_t* erow = keep_rows ? sc.erow.data() : nullptr;
    const uint32_t* idx32 = g.indices32;
    int64_t E = 0;
    sc.key1.resize(m);
    sc.word1.resize(m);
    for (int64_t r = 0; r < m; ++r) sc.key1[r] = static_cast<uint32_t>(kw[r]);
    column_words(sc.key1.data(), m, hw, bid, key, sc.word1.data());  // Stream's word 0, vectorised
    const uint32_t* words = sc.word1.data();
    uint32_t* cols = nullptr;
    if (nbr) {
        nbr->resize(cap + 1);
        cols = nbr->data();
    }
    int64_t gathered = 0;  // the deferred gather (gather_columns)
    auto gather_to = [&](int64_t upto) { gathered = gather_columns(g, eid, cols, gathered, upto); };
    for (int64_t a = 0; a < m; a += 8) {
        if (cols) gather_to(E - GATHER_LAG);
        for (int64_t r = a; r < std::min<int64_t>(a + 8, m); ++r) {
            const int64_t d = rd[r];
            const int64_t p = rs[r] + static_cast<int64_t>(uniform_int(words[r], static_cast<uint64_t>(d)));
            dst[E] = fl[r];
            eid[E] = p;
            if (keep_rows) erow[E] = sc.fr[r];
            if (nbr) __builtin_prefetch(idx32 ? static_cast<const void*>(idx32 + p)
                                              : static_cast<const void*>(g.indices + p));
            E += d > 0;
            if (row_end) row_end[r] = E;
        }
    }
    if (cols) {
        gather_to(E);
        nbr->resize(E);
    }
    ho.dst.resize(E);
    ho.eid.resize(E);
    return E;
}

// Pass 2 (and 3) of a rejection hop at fanout 1 for every row whose program has a value table
// (node2vec's steps), on 32-bit columns of the graph and of the aux graph (and the aux graph's
// fence): every row's draw first (select.h: rejection_rows1, the rows in rounds; their first
// REJ1_AHEAD words computed for all rows at once, vectorised), then the kept entries in row
// order, their columns read GATHER_LAG edges after their prefetch. Same outputs (and the same
// charge to the budget) as select_rows_pass<S_REJECTION>.
static int64_t select_rejection1(const HopSpec& hs, const CSRView& g, const ValueTable& table,
                                 int64_t m, uint32_t hw, uint32_t bid, Key key, RowWiseScratch& sc,
                                 HopOut& ho, Budget& budget, int64_t* row_end,
                                 PodBuf<uint32_t>* nbr) {
    const int64_t* rs = sc.start.data();
    const int64_t* rd = sc.deg.data();
    const int64_t* fv = sc.fv.data();
    const int64_t* kw = hs.key == K_ROW ? sc.fr.data() : sc.fv.data();
    const int64_t* t = hs.has_aux ? sc.fa.data() : fv;
    const uint32_t* idx32 = g.indices32;
    int64_t rows_drawing = 0;  // select_rows_pass's capacity: one entry per row with entries
    for (int64_t r = 0; r < m; ++r) rows_drawing += rd[r] > 0;
    budget.reserve(static_cast<uint64_t>(rows_drawing) * 24);
    sc.rej_words.resize(static_cast<size_t>(m) * (REJ1_AHEAD + 1));
    sc.rej_got.resize(static_cast<size_t>(m));
    uint32_t* kw32 = sc.rej_words.data() + m * REJ1_AHEAD;
    for (int64_t r = 0; r < m; ++r) kw32[r] = static_cast<uint32_t>(kw[r]);
    rejection_words1(kw32, m, hw, bid, key, sc.rej_words.data(), m);
    const ValueCode vc = hs.values.view();
    auto value = [&](int64_t r, int64_t p) { return entry_value(vc, g, fv[r], t[r], rs[r], p); };
    const Rej1Rows rows{m, rs, rd, fv, t, kw};
    int64_t* got = sc.rej_got.data();
    if (!rejection_rows1(rows, idx32, vc.aux, hs.bound, table, hw, bid, key, sc.rej_words.data(),
                         value, got))
        throw BoundExceeded("a value exceeds the rejection bound");
    int64_t cap = 0;
    for (int64_t r = 0; r < m; ++r) cap += got[r] >= 0;
    const bool keep_rows = hs.keep_row_ids;
    ho.dst.clear();
    ho.eid.clear();
    ho.dst.resize(cap);
    ho.eid.resize(cap);
    if (keep_rows) sc.erow.resize(cap);
    int64_t* dst = ho.dst.data();
    int64_t* eid = ho.eid.data();
    const int64_t* fl = sc.fl.data();
    uint32_t* cols = nullptr;
    if (nbr) {
        nbr->resize(cap);
        cols = nbr->data();
    }
    int64_t E = 0, gathered = 0;  // the deferred gather (gather_columns)
    for (int64_t r = 0; r < m; ++r) {
        if (got[r] >= 0) {
            const int64_t e = rs[r] + got[r];
            dst[E] = fl[r];
            eid[E] = e;
            if (keep_rows) sc.erow[E] = sc.fr[r];
            if (cols) {
                __builtin_prefetch(idx32 + e);
                gathered = gather_columns(g, eid, cols, gathered, E + 1 - GATHER_LAG);
            }
            ++E;
        }
        if (row_end) row_end[r] = E;
    }
    if (cols) gather_columns(g, eid, cols, gathered, E);
    return E;
}

static int64_t select_pass(const HopSpec& hs, const CSRView& g, int64_t m, uint32_t hw, uint32_t bid,
                           Key key, RowWiseScratch& sc, HopOut& ho, Budget& budget,
                           int64_t* row_end = nullptr, PodBuf<uint32_t>* nbr = nullptr) {
    if ((hs.select == S_UNIFORM || hs.select == S_UNIFORM_REP) && hs.fanout == 1 && !hs.fanout_vec)
        return select_fanout1(hs, g, m, hw, bid, key, sc, ho, budget, row_end, nbr);
    if (hs.select == S_REJECTION && hs.fanout == 1 && !hs.fanout_vec) {  // node2vec
        const ValueTable table = value_table(hs.values.view(), hs.bound);
        if (table.ok && g.indices32 && hs.values.aux && hs.values.aux->indices32 &&
            hs.values.aux->fence)
            return select_rejection1(hs, g, table, m, hw, bid, key, sc, ho, budget, row_end, nbr);
    }
    auto run = [&](auto rule) {
        return select_rows_pass<decltype(rule)::value>(hs, g, m, hw, bid, key, sc, ho, budget,
                                                       row_end, nbr);
    };
    switch (hs.select) {
        case S_UNIFORM: return run(std::integral_constant<int32_t, S_UNIFORM>());
        case S_UNIFORM_REP: return run(std::integral_constant<int32_t, S_UNIFORM_REP>());
        case S_WEIGHTED: return run(std::integral_constant<int32_t, S_WEIGHTED>());
        case S_WEIGHTED_REP: return run(std::integral_constant<int32_t, S_WEIGHTED_REP>());
        case S_REJECTION: return run(std::integral_constant<int32_t, S_REJECTION>());
        case S_LAST: return run(std::integral_constant<int32_t, S_LAST>());
        case S_ALIAS: return run(std::integral_constant<int32_t, S_ALIAS>());
        case S_ALIAS_REP: return run(std::integral_constant<int32_t, S_ALIAS_REP>());
        default: return run(std::integral_constant<int32_t, S_THRESHOLD>());
    }
}

// LABOR's words for a hop: when its rows longer than their fanout hold at least
// WORD_TABLE_RATIO * n entries, the words of all n columns (n <= WORD_TABLE_MAX) are computed
// once, in order and vectorised, into sc.word_table, and every entry looks its column's word up
// there instead of computing it (the same words: a column's word depends only on the column,
// the hop and the minibatch). Returns the table, or nullptr (words computed per row).
constexpr int64_t WORD_TABLE_RATIO = 2;
constexpr int64_t WORD_TABLE_MAX = int64_t(1) << 22;

static const uint32_t* labor_word_table(const HopSpec& hs, const CSRView& g, int64_t m, int64_t n,
                                        uint32_t bid, RowWiseScratch& sc) {
    if (hs.select != S_THRESHOLD || !g.indices32 || n <= 0 || n > WORD_TABLE_MAX) return nullptr;
    int64_t entries = 0;
    for (int64_t r = 0; r < m; ++r) {
        const int64_t s = hs.fanout_vec ? hs.fanout_vec[sc.fv[r]] : hs.fanout;
        if (s >= 0 && sc.deg[r] > s) entries += sc.deg[r];
    }
    NW_COUNT(NW_NLONG, entries)
    if (entries < WORD_TABLE_RATIO * n) return nullptr;
    sc.word_table.resize(static_cast<size_t>(n));
    constexpr int64_t CHUNK = 256;
    uint32_t ids[CHUNK];
    for (int64_t at = 0; at < n; at += CHUNK) {
        const int64_t c = std::min(CHUNK, n - at);
        for (int64_t i = 0; i < c; ++i) ids[i] = static_cast<uint32_t>(at + i);
        column_words(ids, c, hs.hop_word, bid, hs.rng_key, sc.word_table.data() + at);
    }
    return sc.word_table.data();
}

// The start of a minibatch's output: n_id = the b seeds, counts = {b}, L empty hops (pooled).
static void begin_minibatch(const int64_t* seeds, int64_t b, int L, RowWiseScratch& sc,
                            MiniBatchOut& out, Budget& budget) {
    PodBuf<int64_t>& n_id = out.n_id;
    budget.reserve(static_cast<uint64_t>(b) * 8);
    n_id.use_pool();
    n_id.assign(seeds, seeds + b);
    out.counts.assign(1, b);
    out.hops.clear();
    out.hops.resize(L);
    for (HopOut& ho : out.hops) {  // per-minibatch buffers live until the flat copy: pooled
        ho.dst.use_pool();
        ho.src.use_pool();
        ho.eid.use_pool();
    }
    if (static_cast<int>(sc.edge_row_id.size()) < L) sc.edge_row_id.resize(L);
}

// The dense table's relabel of vertex u, first occurrence wins: its local id; a new u gets id
// `next`, is appended to ids there and advances next (ids needs room for one more). Branch-free:
// masks, not ?: (which the compiler made a data-dependent branch).
template <class Id>
static inline uint32_t relabel_first(uint32_t* table, uint32_t u, Id* ids, size_t& next) {
    const uint32_t slot = table[u];
    const uint32_t fresh = 0u - static_cast<uint32_t>(slot == VertexMap::NONE);
    const uint32_t lu = (slot & ~fresh) | (static_cast<uint32_t>(next) & fresh);
    table[u] = lu;
    ids[next] = u;  // kept only when new
    next += fresh & 1u;
    return lu;
}

// Pass 4 of one hop: the E sampled neighbours nbr relabelled (first occurrence wins, new ones
// appended to n_id; without dedup one new vertex per edge) into ho.src, counts and hop_end
// extended. `inserted` (or nullptr) records per n_id entry whether `map` holds it.
static void relabel_hop(const HopSpec& hs, const uint32_t* nbr, int64_t E, VertexMap& map,
                        MiniBatchOut& out, HopOut& ho, std::vector<int64_t>& hop_end,
                        Budget& budget, std::vector<uint8_t>* inserted) {
    constexpr int64_t PF_EDGES = 24;
    PodBuf<int64_t>& n_id = out.n_id;
    ho.src.resize(E);
    int64_t* src = ho.src.data();
    budget.reserve(static_cast<uint64_t>(E) * 8);
    if (n_id.size() + E > n_id.capacity())  // geometric: many hops (walks) append to n_id
        n_id.reserve(std::max(n_id.size() + E, 2 * n_id.capacity()));
    if (hs.dedup && map.dense_table()) {  // branch-free: whether u is new is data-dependent
        uint32_t* table = map.dense_table();
        int64_t* ids = n_id.data();
        size_t next = n_id.size();
        for (int64_t e = 0; e < E; ++e) {  // room for E more ids was reserved
            if (e + PF_EDGES < E) __builtin_prefetch(table + nbr[e + PF_EDGES]);
            src[e] = relabel_first(table, nbr[e], ids, next);
        }
        n_id.resize(next);
    } else if (hs.dedup) {
        for (int64_t e = 0; e < E; ++e) {
            if (e + PF_EDGES < E) map.prefetch(nbr[e + PF_EDGES]);
            const uint32_t u = nbr[e];
            bool ins;
            const uint32_t lu = map.find_or_insert(u, static_cast<uint32_t>(n_id.size()), ins);
            if (ins) n_id.push_back(u);
            src[e] = lu;
        }
    } else {
        for (int64_t e = 0; e < E; ++e) {
            src[e] = static_cast<int64_t>(n_id.size());
            n_id.push_back(nbr[e]);
        }
    }
    if (inserted) inserted->resize(n_id.size(), hs.dedup ? 1 : 0);
    out.counts.push_back(static_cast<int64_t>(n_id.size()) - hop_end.back());
    hop_end.push_back(static_cast<int64_t>(n_id.size()));
}

// ---- walks -------------------------------------------------------------------------------
// The graph of a walk-shaped plan: one graph with 32-bit column ids and fewer than 2**32
// entries, whose vertices fit the dense table; or nullptr.
static const CSRView* walk_graph(const RowWisePlan& plan) {
    if (plan.hops.empty() || plan.n > VertexMap::DENSE_MAX) return nullptr;
    const CSRView& g = plan.graphs[plan.hops[0].graph];
    if (!g.indices32 || g.indptr[g.n] >= (int64_t(1) << 32)) return nullptr;
    return &g;
}

// Whether hop i (0-based) of a walk-shaped plan on graph gi moves every walk one step from
// where it stands: fanout 1 on graph gi, without times or fanout vectors, deduplicating, hop 1
// from the seeds (new nodes of hop 0) and hop i + 1 > 1 from the sources of hop i's edges.
static bool walk_step(const HopSpec& hs, size_t i, int32_t gi) {
    const FrontierSpec& f = hs.frontier;
    const bool frontier = i == 0 ? f.kind == F_NEW_NODES && f.hop == 0 && f.hop_last == 0
                                 : f.kind == F_EDGE_SRC && f.hop == static_cast<int32_t>(i);
    return frontier && hs.graph == gi && !hs.entry_time && !hs.fanout_vec && hs.fanout == 1 &&
           hs.dedup;
}

static bool uniform_step(const HopSpec& hs) {
    return (hs.select == S_UNIFORM || hs.select == S_UNIFORM_REP) && !hs.has_aux;
}

// A plan is a walk when every hop is uniform at fanout 1 (with or without replacement: the same
// rule at s = 1) on one graph with 32-bit column ids and fewer than 2**32 entries, without
// times, aux rows or fanout vectors, deduplicating into the dense table, hop 1's frontier the
// seeds (new nodes of hop 0) and hop h > 1's the sources of hop h - 1's edges (RandomWalk).
static bool walk_plan(const RowWisePlan& plan) {
    const CSRView* g = walk_graph(plan);
    if (!g) return false;
    const int32_t gi = plan.hops[0].graph;
    for (size_t i = 0; i < plan.hops.size(); ++i)
        if (!walk_step(plan.hops[i], i, gi) || !uniform_step(plan.hops[i])) return false;
    return true;
}

// A plan is a node2vec walk (RandomWalk with p or q not 1, or any sampler lowered the same way)
// when it is walk-shaped (walk_graph, walk_step: one graph with 32-bit columns, fanout 1, the
// dense table), hop 1 is uniform and every later hop h >= 2 is a rejection rule whose value
// program has a ValueTable (select.h: constants and indicators only, values within the bound),
// its aux rows the destinations of hop h - 1's edges (where each walk stood before) and its
// lookups in the same graph, which carries a column fence -- the hops select_pass gives to
// select_rejection1, read from the frontiers build_frontier would build.
static bool node2vec_plan(const RowWisePlan& plan) {
    const CSRView* g = walk_graph(plan);
    if (!g || plan.hops.size() < 2 || !g->fence) return false;
    const int32_t gi = plan.hops[0].graph;
    if (!walk_step(plan.hops[0], 0, gi) || !uniform_step(plan.hops[0])) return false;
    for (size_t i = 1; i < plan.hops.size(); ++i) {
        const HopSpec& hs = plan.hops[i];
        if (!walk_step(hs, i, gi) || hs.select != S_REJECTION || !hs.has_aux ||
            hs.aux.kind != F_EDGE_DST || hs.aux.hop != static_cast<int32_t>(i) ||
            hs.values.aux != g || !value_table(hs.values.view(), hs.bound).ok)
            return false;
    }
    return true;
}

// The packed outputs (MiniBatchOut) of a walk-shaped plan while its kernel runs: the seeds
// first in nodes32, then each hop's dst / src / eid words in edges32 (hop l at walk_at[l],
// walk_stride[l] words apart).
struct PackedWalk {
    uint32_t* table;          // the dense table: vertex -> local id
    uint32_t* ids;            // nodes32
    size_t next_node = 0;     // vertices so far
    int64_t local_at = -1;    // the live walks' local ids: edges32 from here (-1: the seeds)
    size_t used = 0;          // edge words so far
};

// Start the packed outputs of a walk of L hops from seeds[0..b): the buffers (pooled) reserved
// at the walk's bound (b + b L vertices and 3 (b + 1) L edge words: each hop's arrays hold one
// slot more than its rows; below the estimate spsample checked, 24 bytes per edge and 8 per
// vertex), `charge` bytes charged to the budget; the seeds are vertices 0 .. b - 1 (the first
// occurrence of a repeated one keeps its id), the live walks wv (vertex) and wr (row id = the
// seed's position), their rows' extents prefetched.
static PackedWalk begin_packed_walk(const RowWisePlan& plan, const int64_t* seeds, int64_t b, int L,
                                    uint64_t charge, RowWiseScratch& sc, MiniBatchOut& out,
                                    Budget& budget) {
    const int64_t* indptr = plan.graphs[plan.hops[0].graph].indptr;
    out.packed = true;
    out.n_id.clear();
    out.hops.clear();
    out.counts.assign(1, b);
    out.walk_at.assign(L, 0);
    out.walk_stride.assign(L, 0);
    out.walk_edges.assign(L, 0);
    PodBuf<uint32_t>& nodes = out.nodes32;
    PodBuf<uint32_t>& edges = out.edges32;
    nodes.use_pool();
    edges.use_pool();
    sc.map.begin(plan.n, static_cast<uint64_t>(b) * 16);
    PackedWalk w;
    w.table = sc.map.dense_table();
    budget.reserve(charge);
    nodes.reserve(static_cast<size_t>(b) * (L + 1));
    edges.reserve(3 * static_cast<size_t>(b + 1) * L);
    w.ids = nodes.data();
    sc.wv.resize(b + 1);
    sc.wr.resize(b + 1);
    sc.nv.resize(b + 1);
    sc.nr.resize(b + 1);
    constexpr int64_t PF_SEEDS = 16;
    for (int64_t i = 0; i < std::min(b, PF_SEEDS); ++i) __builtin_prefetch(w.table + seeds[i]);
    for (int64_t i = 0; i < b; ++i) {
        const uint32_t v = static_cast<uint32_t>(seeds[i]);
        if (i + PF_SEEDS < b) __builtin_prefetch(w.table + seeds[i + PF_SEEDS]);
        __builtin_prefetch(indptr + v);
        __builtin_prefetch(indptr + v + 1);
        w.ids[i] = v;
        if (w.table[v] == VertexMap::NONE) w.table[v] = static_cast<uint32_t>(i);
        sc.wv[i] = v;
        sc.wr[i] = static_cast<uint32_t>(i);
    }
    w.next_node = static_cast<size_t>(b);
    return w;
}

// The end of hop h of a packed walk with m live walks (stride m + 1) that kept E steps to the
// vertices nv[0..E): their relabel into src (first occurrence wins, new vertices appended,
// branch-free), the hop's counts and place in edges32.
static void end_packed_hop(PackedWalk& w, MiniBatchOut& out, int h, int64_t stride,
                           const uint32_t* nv, uint32_t* src, int64_t E) {
    uint32_t* table = w.table;
    uint32_t* ids = w.ids;
    const size_t before = w.next_node;
    size_t next = before;
    for (int64_t e = 0; e < E; ++e) src[e] = relabel_first(table, nv[e], ids, next);
    out.counts.push_back(static_cast<int64_t>(next - before));
    w.next_node = next;
    out.walk_at[h - 1] = static_cast<int64_t>(w.used);
    out.walk_stride[h - 1] = stride;
    out.walk_edges[h - 1] = E;
    w.local_at = static_cast<int64_t>(w.used) + stride;
    w.used += 3 * static_cast<size_t>(stride);
}

// The end of a packed walk: the buffers cut to their contents, the dense table reset.
static void end_packed_walk(const PackedWalk& w, MiniBatchOut& out) {
    out.nodes32.resize(w.next_node);
    out.edges32.resize(w.used);
    for (size_t i = 0; i < w.next_node; ++i) w.table[w.ids[i]] = VertexMap::NONE;
}

// Hops 1 .. L of a packed walk whose m live walks are in sc.wv / sc.wr: hop h's step
// step(h, m, wl, dst, stride) writes the walks' next vertices (sc.nv, sc.nr) and their edges
// at dst (stride words apart; wl: the live walks' local ids, or null for the seeds) and
// returns the steps kept, which are relabelled into the packed outputs (end_packed_hop) and
// become the live walks; then the outputs are closed (end_packed_walk).
template <class Step>
static void packed_walk_hops(PackedWalk& w, int64_t m, int L, RowWiseScratch& sc, MiniBatchOut& out,
                             Step&& step) {
    NW_T0
    for (int h = 1; h <= L; ++h) {
        const int64_t stride = m + 1;  // + 1: a walk that stops writes the next slot, not kept
        uint32_t* dst = out.edges32.data() + w.used;
        const uint32_t* wl = w.local_at < 0 ? nullptr : out.edges32.data() + w.local_at;
        const int64_t E = step(h, m, wl, dst, stride);
        NW_TICK(NW_SELECT_GATHER)  // profiling: rows, selection and gather are one pass here
        NW_COUNT(NW_NROWS, m)
        NW_COUNT(NW_NEDGES, E)
        end_packed_hop(w, out, h, stride, sc.nv.data(), dst + stride, E);
        std::swap(sc.wv, sc.nv);
        std::swap(sc.wr, sc.nr);
        m = E;
        NW_TICK(NW_RELABEL)
    }
    end_packed_walk(w, out);
    NW_TICK(NW_BEGIN)
}

// The deferred gather of a packed walk's steps: the columns of entries eid[from .. upto) into nv,
// then each next row's extent and table slot prefetched; returns where it stopped (upto, or
// from when upto is below it).
__attribute__((always_inline)) static inline int64_t gather_walk_steps(
    const int64_t* __restrict indptr, const uint32_t* __restrict idx32, const uint32_t* table,
    const uint32_t* eid, uint32_t* __restrict nv, int64_t from, int64_t upto) {
    for (; from < upto; ++from) {
        const uint32_t u = idx32[eid[from]];
        nv[from] = u;
        __builtin_prefetch(indptr + u);
        __builtin_prefetch(indptr + u + 1);
        __builtin_prefetch(table + u);
    }
    return from;
}

// One uniform step at fanout 1 of the m live walks (vertex wv[r], row id wr[r]) of a packed walk,
// hop hs: a walk at vertex v (row id = its seed's position, the stream's key word under K_ROW)
// keeps entry indptr[v] + uniform_int(w, d) of its row of degree d >= 1, w word 0 of its stream
// (all live walks' words at once, column_words), and stops where d = 0 -- select_fanout1's rule
// on build_frontier's rows. The kept entries' columns are read GATHER_LAG walks after their
// prefetch, and then their rows' extents (the next hop) and table slots are prefetched. Writes
// per kept step e its dst[e] (the walk's local id: wl[r], or r for the seeds), its entry at
// dst[2 stride + e], its vertex nv[e] and row id nr[e], and with PREV the vertex it left,
// prev[e] (sc.nv, sc.nr). Returns the steps kept (E).
template <bool PREV>
static int64_t uniform_walk_step(const HopSpec& hs, const CSRView& g, int64_t m, uint32_t bid,
                                 const uint32_t* wl, const uint32_t* table, RowWiseScratch& sc,
                                 uint32_t* dst, int64_t stride, uint32_t* prev) {
    const int64_t* indptr = g.indptr;
    const uint32_t* idx32 = g.indices32;
    uint32_t* eid = dst + 2 * stride;
    const uint32_t* wv = sc.wv.data();
    const uint32_t* wr = sc.wr.data();
    uint32_t* nv = sc.nv.data();
    uint32_t* nr = sc.nr.data();
    sc.word1.resize(std::max<int64_t>(m, 1));
    uint32_t* words = sc.word1.data();
    column_words(hs.key == K_ROW ? wr : wv, m, hs.hop_word, bid, hs.rng_key, words);
    int64_t E = 0, gathered = 0;
    for (int64_t a = 0; a < m; a += 8) {
        gathered = gather_walk_steps(indptr, idx32, table, eid, nv, gathered, E - GATHER_LAG);
        const int64_t stop = std::min<int64_t>(a + 8, m);
        for (int64_t r = a; r < stop; ++r) {
            const uint32_t v = wv[r];
            const int64_t st = indptr[v];
            const int64_t d = indptr[v + 1] - st;
            const int64_t p = st + static_cast<int64_t>(uniform_int(words[r], static_cast<uint64_t>(d)));
            dst[E] = wl ? wl[r] : static_cast<uint32_t>(r);
            eid[E] = static_cast<uint32_t>(p);
            nr[E] = wr[r];
            if (PREV) prev[E] = v;
            __builtin_prefetch(idx32 + p);
            E += d > 0;
        }
    }
    gather_walk_steps(indptr, idx32, table, eid, nv, gathered, E);
    return E;
}

// All hops of a walk plan (walk_plan) for one minibatch, the live walks hop after hop
// (uniform_walk_step), the relabel (first occurrence wins) over each hop's columns in edge order
// as relabel_hop's. The outputs are reserved and charged once, at the walk's bound.
// Output: out packed (MiniBatchOut), the same values as rowwise_minibatch's.
static void walk_minibatch(const RowWisePlan& plan, const int64_t* seeds, int64_t b, uint32_t bid,
                           RowWiseScratch& sc, MiniBatchOut& out, Budget& budget) {
    NW_T0
    const int L = static_cast<int>(plan.hops.size());
    const CSRView& g = plan.graphs[plan.hops[0].graph];
    const uint64_t bound = static_cast<uint64_t>(b) * (L + 1) + 3 * static_cast<uint64_t>(b + 1) * L;
    PackedWalk w = begin_packed_walk(plan, seeds, b, L, 4 * bound, sc, out, budget);
    NW_TICK(NW_BEGIN)
    packed_walk_hops(w, b, L, sc, out, [&](int h, int64_t m, const uint32_t* wl, uint32_t* dst,
                                           int64_t stride) {
        return uniform_walk_step<false>(plan.hops[h - 1], g, m, bid, wl, w.table, sc, dst, stride,
                                        nullptr);
    });
}

// One node2vec step (a rejection hop of node2vec_plan) of the m live walks of a packed walk:
// walk r stands at wv[r] (row id wr[r]), came from wp[r] and is dst wl[r]. The rows' extents,
// vertices, aux vertices and stream words as int64 (Rej1Rows), the 24 bytes per row with entries
// that select_rejection1 charges, every walk's draw by rejection_rows1 (the same words, attempts,
// decisions and exact phase as select_rejection1: words 0 .. REJ1_AHEAD - 1 by rejection_words1),
// then the kept entries in walk order, their columns read GATHER_LAG steps after their prefetch
// (and then the next rows' extents and table slots prefetched). Writes dst / eid, nv, nr and np
// (the vertex left) as uniform_walk_step. Returns the steps kept; throws BoundExceeded as
// select_rejection1.
static int64_t node2vec_walk_step(const HopSpec& hs, const CSRView& g, const ValueTable& tab,
                                  int64_t m, uint32_t bid, const uint32_t* wl, const uint32_t* table,
                                  RowWiseScratch& sc, uint32_t* dst, int64_t stride, Budget& budget) {
    const int64_t* indptr = g.indptr;
    const uint32_t* idx32 = g.indices32;
    const uint32_t* wv = sc.wv.data();
    const uint32_t* wr = sc.wr.data();
    const uint32_t* wp = sc.wp.data();
    sc.start.resize(m);
    sc.deg.resize(m);
    sc.fv.resize(m);
    sc.fa.resize(m);
    sc.fr.resize(m);
    int64_t* rs = sc.start.data();
    int64_t* rd = sc.deg.data();
    int64_t* fv = sc.fv.data();
    int64_t* fa = sc.fa.data();
    int64_t* kw = sc.fr.data();
    const uint32_t* kw32 = hs.key == K_ROW ? wr : wv;
    int64_t rows_drawing = 0;
    for (int64_t r = 0; r < m; ++r) {
        const uint32_t v = wv[r];
        const int64_t st = indptr[v];
        const int64_t d = indptr[v + 1] - st;
        rs[r] = st;
        rd[r] = d;
        fv[r] = v;
        fa[r] = wp[r];
        kw[r] = kw32[r];
        rows_drawing += d > 0;
    }
    budget.reserve(static_cast<uint64_t>(rows_drawing) * 24);
    sc.rej_words.resize(static_cast<size_t>(std::max<int64_t>(m, 1)) * REJ1_AHEAD);
    sc.rej_got.resize(static_cast<size_t>(std::max<int64_t>(m, 1)));
    rejection_words1(kw32, m, hs.hop_word, bid, hs.rng_key, sc.rej_words.data(), m);
    const ValueCode vc = hs.values.view();
    auto value = [&](int64_t r, int64_t p) { return entry_value(vc, g, fv[r], fa[r], rs[r], p); };
    const Rej1Rows rows{m, rs, rd, fv, fa, kw};
    const int64_t* got = sc.rej_got.data();
    if (!rejection_rows1(rows, idx32, vc.aux, hs.bound, tab, hs.hop_word, bid, hs.rng_key,
                         sc.rej_words.data(), value, sc.rej_got.data()))
        throw BoundExceeded("a value exceeds the rejection bound");
    uint32_t* eid = dst + 2 * stride;
    uint32_t* nv = sc.nv.data();
    uint32_t* nr = sc.nr.data();
    uint32_t* np = sc.np.data();
    int64_t E = 0, gathered = 0;
    for (int64_t r = 0; r < m; ++r) {
        gathered = gather_walk_steps(indptr, idx32, table, eid, nv, gathered, E - GATHER_LAG);
        const int64_t p = got[r];  // -1: the walk stops (its slot is written, not kept)
        const uint32_t e = static_cast<uint32_t>(rs[r] + (p < 0 ? 0 : p));
        dst[E] = wl[r];
        eid[E] = e;
        nr[E] = wr[r];
        np[E] = wv[r];
        __builtin_prefetch(idx32 + e);
        E += p >= 0;
    }
    gather_walk_steps(indptr, idx32, table, eid, nv, gathered, E);
    return E;
}

// All hops of a node2vec plan (node2vec_plan) for one minibatch, the live walks' vertex, previous
// vertex and row id kept in 32-bit arrays from hop to hop: hop 1 a uniform step
// (uniform_walk_step), every later hop a node2vec step (node2vec_walk_step), each relabelled into
// the packed outputs as walk_minibatch's. The budget is charged what rowwise_minibatch charges
// (8 bytes per seed, 24 per row with entries and 8 per step of each hop), at the same points.
// Output: out packed (MiniBatchOut), the same values as rowwise_minibatch's.
static void node2vec_minibatch(const RowWisePlan& plan, const int64_t* seeds, int64_t b, uint32_t bid,
                               RowWiseScratch& sc, MiniBatchOut& out, Budget& budget) {
    NW_T0
    const int L = static_cast<int>(plan.hops.size());
    const CSRView& g = plan.graphs[plan.hops[0].graph];
    PackedWalk w = begin_packed_walk(plan, seeds, b, L, static_cast<uint64_t>(b) * 8, sc, out, budget);
    sc.wp.resize(b + 1);
    sc.np.resize(b + 1);
    NW_TICK(NW_BEGIN)
    packed_walk_hops(w, b, L, sc, out, [&](int h, int64_t m, const uint32_t* wl, uint32_t* dst,
                                           int64_t stride) {
        const HopSpec& hs = plan.hops[h - 1];
        int64_t E;
        if (h == 1) {
            E = uniform_walk_step<true>(hs, g, m, bid, wl, w.table, sc, dst, stride, sc.np.data());
            budget.reserve(static_cast<uint64_t>(E + 1) * 24);  // select_fanout1's charge
        } else {
            const ValueTable tab = value_table(hs.values.view(), hs.bound);
            E = node2vec_walk_step(hs, g, tab, m, bid, wl, w.table, sc, dst, stride, budget);
        }
        budget.reserve(static_cast<uint64_t>(E) * 8);  // relabel_hop's charge
        std::swap(sc.wp, sc.np);  // the vertices left become the next hop's previous ones
        return E;
    });
}

// Sample all hops of one minibatch (position j of the bulk, global id bid).
//
// Inputs:  plan; seeds[0..b), distinct vertex ids in [0, n); sc, the calling thread's scratch.
// Output:  out, overwritten: n_id (N, int64; seeds first, then each hop's new vertices in first-
//          occurrence order), counts (L + 1), hops[l].dst/src/eid (E_l each, int64).
static void rowwise_minibatch(const RowWisePlan& plan, const int64_t* seeds, int64_t b, int64_t j,
                              uint32_t bid, RowWiseScratch& sc, MiniBatchOut& out, Budget& budget) {
    constexpr int64_t PF_ROWS = 16;   // prefetch distance of pass 1, in frontier rows
    if (walk_plan(plan)) return walk_minibatch(plan, seeds, b, bid, sc, out, budget);
    if (node2vec_plan(plan)) return node2vec_minibatch(plan, seeds, b, bid, sc, out, budget);
    const int L = static_cast<int>(plan.hops.size());
    PodBuf<int64_t>& n_id = out.n_id;
    NW_T0
    begin_minibatch(seeds, b, L, sc, out, budget);
    sc.map.begin(plan.n, static_cast<uint64_t>(b) * 16);
    for (int64_t i = 0; i < b; ++i) {
        bool ins;
        sc.map.find_or_insert(static_cast<uint32_t>(seeds[i]), static_cast<uint32_t>(i), ins);
    }
    std::vector<int64_t> hop_end(1, b);
    NW_TICK(NW_BEGIN)
    for (int h = 1; h <= L; ++h) {
        const HopSpec& hs = plan.hops[h - 1];
        const CSRView& g = plan.graphs[hs.graph];
        const uint32_t hw = hs.hop_word;
        // pass 1: the frontier and its rows' extents
        const int64_t m = build_frontier(hs.frontier, j, out, hop_end, sc, sc.fv, false);
        if (hs.has_aux) build_frontier(hs.aux, j, out, hop_end, sc, sc.fa, true);
        sc.start.resize(m);
        sc.deg.resize(m);
        const int64_t* fv = sc.fv.data();
        for (int64_t r = 0; r < m; ++r) {
            if (r + PF_ROWS < m) __builtin_prefetch(g.indptr + fv[r + PF_ROWS]);
            const int64_t st = g.indptr[fv[r]];
            sc.start[r] = st;
            sc.deg[r] = g.indptr[fv[r] + 1] - st;
        }
        if (hs.entry_time) {  // temporal: each row's prefix of entries no later than the time
            for (int64_t r = 0; r < m; ++r)
                sc.deg[r] = time_prefix(hs.entry_time, sc.start[r], sc.deg[r], hs.batch_time, j);
        }
        NW_TICK(NW_ROWS)
        // passes 2-3: selection, with the sampled neighbours gathered as the rows are selected
        HopOut& ho = out.hops[h - 1];
        sc.col_words = labor_word_table(hs, g, m, plan.n, bid, sc);
        NW_TICK(NW_TABLE)
        const int64_t E = select_pass(hs, g, m, hw, bid, hs.rng_key, sc, ho, budget, nullptr,
                                      &sc.nbr);
        NW_TICK(NW_SELECT_GATHER)
#ifdef SPSAMPLE_NW_PROFILE
        select_pass(hs, g, m, hw, bid, hs.rng_key, sc, ho, budget, nullptr, nullptr);
        NW_TICK(NW_SELECT)
        NW_COUNT(NW_NROWS, m)
        NW_COUNT(NW_NEDGES, E)
        if (hs.select != S_THRESHOLD) {  // LABOR's count is labor_word_table's
            for (int64_t r = 0; r < m; ++r) {
                const int64_t s = hs.fanout_vec ? hs.fanout_vec[sc.fv[r]] : hs.fanout;
                if (s >= 0 && sc.deg[r] > s) NW_COUNT(NW_NLONG, sc.deg[r])
            }
        }
        nw_t = nw_now();
#endif
        sc.col_words = nullptr;
        if (hs.keep_row_ids) sc.edge_row_id[h - 1].assign(sc.erow.data(), sc.erow.data() + E);
        // pass 4: relabel (first occurrence wins), appending new vertices to n_id
        relabel_hop(hs, sc.nbr.data(), E, sc.map, out, ho, hop_end, budget, nullptr);
        NW_TICK(NW_RELABEL)
    }
    sc.map.end(n_id.data(), n_id.size());
    NW_TICK(NW_BEGIN)
}

// The selection of one hop on requested rows: the owner side of push sampling (rows of the
// owner's block) and the rows a pulling rank fetched (stored in arrival order).
//
// Inputs:  hs (the hop's rule: select, values, fanouts, stream key; no frontier, no aux);
//          g, the rows (indices hold global column ids); per request i < r: row[i], its row of
//          g; vertex[i], the global vertex (stream word for K_VERTEX, fanout_vec index, value
//          lookups); key[i], the stream word for K_ROW (or nullptr); batch[i], the minibatch id;
//          time[i], temporal hops (hs.entry_time set): the time the row is cut at (its prefix
//          of entries with time <= time[i]).
// Output:  per run of equal batch ids [a, b), the HopOut of select_pass: dst = request - a,
//          eid = position in g.indices, in request order.
// Method:  a run is one minibatch's rows, selected as rowwise_minibatch selects its frontier:
//          the same rules, streams and bits whatever the split of the frontier into requests.
struct RequestRows {
    const int64_t* vertex;
    const int64_t* row;
    const int64_t* key;  // nullptr: requests keyed by vertex
    const int64_t* batch;
    int64_t r;
    TimeVec time;  // temporal hops: per request, of the entry times' kind
};

// Room for m frontier rows (vertex, local id, row id, extents) in the scratch.
static void size_rows(RowWiseScratch& sc, int64_t m) {
    sc.fv.resize(m);
    sc.fl.resize(m);
    sc.fr.resize(m);
    sc.start.resize(m);
    sc.deg.resize(m);
}

static void select_request_run(const HopSpec& hs, const CSRView& g, const RequestRows& q, int64_t a,
                               int64_t b, uint32_t hw, Key key, RowWiseScratch& sc, HopOut& ho,
                               Budget& budget) {
    const int64_t m = b - a;
    size_rows(sc, m);
    for (int64_t i = 0; i < m; ++i) {
        const int64_t row = q.row[a + i];
        sc.fv[i] = q.vertex[a + i];
        sc.fl[i] = i;
        sc.fr[i] = q.key ? q.key[a + i] : i;
        sc.start[i] = g.indptr[row];
        sc.deg[i] = g.indptr[row + 1] - sc.start[i];
        if (hs.entry_time)  // temporal: the prefix of the row no later than the request's time
            sc.deg[i] = time_prefix(hs.entry_time, sc.start[i], sc.deg[i], q.time, a + i);
    }
    select_pass(hs, g, m, hw, static_cast<uint32_t>(q.batch[a]), key, sc, ho, budget);
}

}  // namespace spsample

#endif  // SPSAMPLE_ROWWISE_H
