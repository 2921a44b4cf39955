// Per-row selection rules of node-wise sampling (spsample._primitives.choose_positions and
// threshold_positions, bit for bit), and the value programs that weigh a row's entries.
//
// A row is (start, d): its entries are g.indices[start .. start + d); it draws from one keyed
// Philox stream (Stream). Each rule writes the kept positions p (0 <= p < d, ascending, with
// multiplicity under replacement) to pos[] and returns how many. Rules (s = fanout, -1 = all):
//
//   uniform, no replacement : d <= s (or s = -1) keeps the row; else Floyd's algorithm, draw i
//                             uses word i: t = uniform_int(word_i, d - s + i + 1), taken -> d - s + i
//   uniform, replacement    : s positions uniform_int(word_i, d) (none when d = 0)
//   weighted, no replacement: among entries of weight > 0, the s smallest keys
//                             neg_log(open_unit(word_p)) / w_p, ties to the smaller position
//   weighted, replacement   : draw i = argmin_p neg_log(open_unit(word_{i*d+p})) / w_p over w_p > 0
//   rejection (weighted, replacement, values <= bound): draw i, attempt a < A: words
//                             2(A i + a), 2(A i + a) + 1; p = uniform_int(w0, d) accepted when
//                             open_unit(w1) * bound < value(p); after A rejections the exact
//                             keys on words 2 A s + i d + p (no sample if no value is > 0)
//   threshold (LABOR-0)     : d <= s (or s = -1) keeps the row; else entry p of column u is kept
//                             iff word0(u) * d < s * 2**32, word0(u) = word 0 of stream (u, hw, bid)
//
// Bodies allocate nothing: the caller sizes RowScratch (fit) before calling them.
#ifndef SPSAMPLE_SELECT_H
#define SPSAMPLE_SELECT_H

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "common.h"
#include "localmap.h"
#include "philox_simd.h"
#include "rng.h"

namespace spsample {

constexpr int64_t REJECTION_ATTEMPTS = 256;  // spsample._lazy.REJECTION_ATTEMPTS
// Rows up to 64 * BITMAP_WORDS entries long draw their Floyd sample in a bitmap (no sort).
constexpr int64_t BITMAP_WORDS = 16;

// Per-thread scratch of the row rules, sized by the caller.
struct RowScratch {
    std::vector<int64_t> pos;
    std::vector<std::pair<double, int64_t>> heap;
    std::vector<double> vals;
    LocalMap posset;  // Floyd membership for large fanouts

    // Room for a row of length d at fanout s (values when `valued`).
    void fit(int64_t d, int64_t s, bool valued) {
        const size_t need = static_cast<size_t>(std::max<int64_t>(d, s) + 1);
        if (pos.size() < need) pos.resize(need);
        if (valued) {
            if (heap.size() < need) heap.resize(need);
            if (vals.size() < static_cast<size_t>(d + 1)) vals.resize(d + 1);
        }
    }
};

// Ascending sort of a short array (insertion sort: the usual fanouts are 5 to 25).
static inline void sort_small(int64_t* a, int64_t k) {
    if (k > 32) {
        std::sort(a, a + k);
        return;
    }
    for (int64_t i = 1; i < k; ++i) {
        const int64_t x = a[i];
        int64_t j = i;
        while (j > 0 && a[j - 1] > x) {
            a[j] = a[j - 1];
            --j;
        }
        a[j] = x;
    }
}

// Upper bound on the entries a row of length d keeps at fanout s (exact for uniform rules).
static inline int64_t row_bound(int64_t d, int64_t s, bool replace) {
    if (s < 0) return d;
    if (replace) return d > 0 ? s : 0;
    return d < s ? d : s;
}

// Floyd's s distinct positions out of d > s >= 1, ascending; word(i) is word i of the row's
// stream (a Stream, or words computed ahead). Complexity: O(s + d / 64) for d <= 1024
// (bitmap), O(s^2) comparisons for s <= 32, else O(s log s) (hashed).
template <class Words>
static inline int64_t floyd_row(Words&& word, int64_t d, int64_t s, RowScratch& sc) {
    int64_t* pos = sc.pos.data();
    if (d <= 64 * BITMAP_WORDS) {  // membership in a bitmap of d bits; read out in order
        uint64_t bits[BITMAP_WORDS];
        const int64_t words = (d + 63) >> 6;
        for (int64_t q = 0; q < words; ++q) bits[q] = 0;
        for (int64_t i = 0; i < s; ++i) {
            const int64_t j = d - s + i;
            const int64_t t = static_cast<int64_t>(uniform_int(word(i), j + 1));
            const bool hit = (bits[t >> 6] >> (t & 63)) & 1u;
            const int64_t x = hit ? j : t;
            bits[x >> 6] |= uint64_t(1) << (x & 63);
        }
        int64_t k = 0;
        for (int64_t q = 0; q < words; ++q) {
            uint64_t word = bits[q];
            while (word) {
                pos[k++] = (q << 6) + __builtin_ctzll(word);
                word &= word - 1;
            }
        }
        return s;
    }
    if (s <= 32) {
        for (int64_t i = 0; i < s; ++i) {
            const int64_t j = d - s + i;
            const int64_t t = static_cast<int64_t>(uniform_int(word(i), j + 1));
            bool hit = false;
            for (int64_t q = 0; q < i; ++q) hit |= (pos[q] == t);
            pos[i] = hit ? j : t;
        }
    } else {
        sc.posset.clear(s);
        for (int64_t i = 0; i < s; ++i) {
            const int64_t j = d - s + i;
            const int64_t t = static_cast<int64_t>(uniform_int(word(i), j + 1));
            bool inserted;
            sc.posset.find_or_insert(static_cast<uint32_t>(t), 0, inserted);
            if (inserted) {
                pos[i] = t;
            } else {  // j exceeds every earlier pick: always new
                sc.posset.find_or_insert(static_cast<uint32_t>(j), 0, inserted);
                pos[i] = j;
            }
        }
    }
    sort_small(pos, s);
    return s;
}

// s uniform draws with replacement from d >= 1 positions, ascending (word as floyd_row's).
template <class Words>
static inline int64_t uniform_rep_row(Words&& word, int64_t d, int64_t s, RowScratch& sc) {
    int64_t* pos = sc.pos.data();
    for (int64_t i = 0; i < s; ++i) pos[i] = static_cast<int64_t>(uniform_int(word(i), d));
    sort_small(pos, s);
    return s;
}

// Weighted without replacement over values w[0..d) (s >= 1 or -1): Efraimidis-Spirakis.
static inline int64_t weighted_row(Stream& st, const double* w, int64_t d, int64_t s, RowScratch& sc) {
    int64_t* pos = sc.pos.data();
    int64_t k = 0;
    int64_t eligible = 0;
    for (int64_t p = 0; p < d; ++p) eligible += (w[p] > 0);
    if (s < 0 || eligible <= s) {
        for (int64_t p = 0; p < d; ++p)
            if (w[p] > 0) pos[k++] = p;
        return k;
    }
    // keep the s smallest (key, position) in a max-heap
    std::pair<double, int64_t>* heap = sc.heap.data();
    int64_t size = 0;
    for (int64_t p = 0; p < d; ++p) {
        if (!(w[p] > 0)) continue;
        const std::pair<double, int64_t> kp(exp_key(st.word(static_cast<uint64_t>(p)), w[p]), p);
        if (size < s) {
            heap[size++] = kp;
            std::push_heap(heap, heap + size);
        } else if (kp < heap[0]) {
            std::pop_heap(heap, heap + size);
            heap[size - 1] = kp;
            std::push_heap(heap, heap + size);
        }
    }
    for (int64_t i = 0; i < size; ++i) pos[i] = heap[i].second;
    sort_small(pos, size);
    return size;
}

// Weighted with replacement over values w[0..d) (s >= 1 or -1): exponential races.
static inline int64_t weighted_rep_row(Stream& st, const double* w, int64_t d, int64_t s, RowScratch& sc) {
    int64_t* pos = sc.pos.data();
    int64_t eligible = 0;
    for (int64_t p = 0; p < d; ++p) eligible += (w[p] > 0);
    if (s < 0) {
        int64_t k = 0;
        for (int64_t p = 0; p < d; ++p)
            if (w[p] > 0) pos[k++] = p;
        return k;
    }
    if (eligible == 0) return 0;
    for (int64_t i = 0; i < s; ++i) {
        double best = 0.0;
        int64_t arg = -1;
        const uint64_t base = static_cast<uint64_t>(i) * static_cast<uint64_t>(d);
        for (int64_t p = 0; p < d; ++p) {
            if (!(w[p] > 0)) continue;
            const double k = exp_key(st.word(base + static_cast<uint64_t>(p)), w[p]);
            if (arg < 0 || k < best) {
                best = k;
                arg = p;
            }
        }
        pos[i] = arg;
    }
    sort_small(pos, s);
    return s;
}

// Weighted draws with replacement by rejection against `bound` (s >= 0, d >= 1). value(p) is
// the value of position p. Sets `exceeded` (and returns 0) when a value is above bound.
template <class Value>
static inline int64_t rejection_row(Stream& st, int64_t d, int64_t s, double bound, Value&& value,
                                    RowScratch& sc, bool& exceeded) {
    constexpr int64_t A = REJECTION_ATTEMPTS;
    int64_t* pos = sc.pos.data();
    int64_t k = 0;
    for (int64_t i = 0; i < s; ++i) {
        int64_t got = -1;
        for (int64_t a = 0; a < A && got < 0; ++a) {
            const uint64_t index = 2 * static_cast<uint64_t>(A * i + a);
            const int64_t p = static_cast<int64_t>(uniform_int(st.word(index), d));
            const double v = value(p);
            if (v > bound) {
                exceeded = true;
                return 0;
            }
            if (open_unit(st.word(index + 1)) * bound < v) got = p;
        }
        if (got < 0) {  // exact keys over the row (rare)
            double best = 0.0;
            const uint64_t base = 2 * static_cast<uint64_t>(A) * static_cast<uint64_t>(s) +
                                  static_cast<uint64_t>(i) * static_cast<uint64_t>(d);
            for (int64_t p = 0; p < d; ++p) {
                const double v = value(p);
                if (v > bound) {
                    exceeded = true;
                    return 0;
                }
                if (!(v > 0)) continue;
                const double key = exp_key(st.word(base + static_cast<uint64_t>(p)), v);
                if (got < 0 || key < best) {
                    best = key;
                    got = p;
                }
            }
        }
        if (got >= 0) pos[k++] = got;
    }
    sort_small(pos, k);
    return k;
}

// LABOR-0's threshold rule for a row (columns cols[0..d)) longer than s >= 0: emit(p) for every
// kept position. The columns' words are computed CHUNK at a time by column_words (vectorised).
template <class Emit>
static inline int64_t threshold_row(const int64_t* cols, int64_t d, int64_t s, uint32_t hw, uint32_t bid,
                                    Key key, Emit&& emit) {
    constexpr int64_t CHUNK = 256;
    uint32_t c32[CHUNK], words[CHUNK];
    int64_t k = 0;
    const uint64_t limit = static_cast<uint64_t>(s) << 32;
    for (int64_t at = 0; at < d; at += CHUNK) {
        const int64_t n = std::min(CHUNK, d - at);
        for (int64_t i = 0; i < n; ++i) c32[i] = static_cast<uint32_t>(cols[at + i]);
        column_words(c32, n, hw, bid, key, words);
        for (int64_t i = 0; i < n; ++i) {
            if (static_cast<uint64_t>(words[i]) * static_cast<uint64_t>(d) < limit) {
                emit(at + i);
                ++k;
            }
        }
    }
    return k;
}

// ---------------------------------------------------------------------------- value programs
// A value Expr (spsample._lazy) in postfix form, evaluated per entry with exactly rounded IEEE
// operations in the tree's order, so the values equal NumPy's evaluation bit for bit.
enum ValueOp : int32_t {
    V_CONST = 0,      // push value
    V_WEIGHT = 1,     // push weight of the entry (ctx 0) / of the looked-up entry (ctx 1)
    V_COLUMN = 2,     // push vec[arg][u]
    V_ROW = 3,        // push vec[arg][v] (ctx 0) or vec[arg][t] (ctx 1)
    V_EDGE = 4,       // push vec[arg][e] (ctx 0) or vec[arg][e'] (ctx 1)
    V_INDICATOR = 5,  // push u == v (ctx 0) or u == t (ctx 1) ? 1 : 0
    V_FOUND = 6,      // pop x, push (u in row t of the aux graph) ? x : 0
    V_MUL = 7,
    V_ADD = 8,
    V_SQUARE = 9,
};

struct Instr {
    int32_t op, ctx, arg;
    double value;
};

constexpr int VALUE_STACK = 32;  // deepest program the lowering accepts

struct ValueProgram {
    std::vector<Instr> code;
    std::vector<const double*> vectors;  // float64 vectors referenced by arg
    const double* weights = nullptr;     // the base graph's weights (V_WEIGHT ctx 0)
    const CSRView* aux = nullptr;        // graph of lookups (V_WEIGHT/V_EDGE ctx 1, V_FOUND)
    bool uses_lookup = false;            // V_FOUND / ctx 1 leaves present
    bool only_weight = false;            // code == [V_WEIGHT ctx 0]: read weights directly
};

// The entry being valued: row vertex v, column u, edge id e; aligned row vertex t and the
// looked-up entry e' (found) in the aux graph.
struct EntryCtx {
    int64_t v, u, e, t, e2;
    bool found;
};

// Binary search of column u in row t of g: its edge id, or -1.
static inline int64_t find_in_row(const CSRView& g, int64_t t, int64_t u) {
    const int64_t* lo = g.indices + g.indptr[t];
    const int64_t* hi = g.indices + g.indptr[t + 1];
    const int64_t* it = std::lower_bound(lo, hi, u);
    return (it != hi && *it == u) ? static_cast<int64_t>(it - g.indices) : -1;
}

static inline double run_program(const ValueProgram& pg, const EntryCtx& c) {
    double stack[VALUE_STACK];
    int top = 0;
    for (const Instr& in : pg.code) {
        switch (in.op) {
            case V_CONST: stack[top++] = in.value; break;
            case V_WEIGHT:
                stack[top++] = in.ctx == 0 ? pg.weights[c.e]
                                           : (c.found ? pg.aux->weights[c.e2] : 0.0);
                break;
            case V_COLUMN: stack[top++] = pg.vectors[in.arg][c.u]; break;
            case V_ROW: stack[top++] = pg.vectors[in.arg][in.ctx == 0 ? c.v : c.t]; break;
            case V_EDGE:
                stack[top++] = in.ctx == 0 ? pg.vectors[in.arg][c.e]
                                           : (c.found ? pg.vectors[in.arg][c.e2] : 0.0);
                break;
            case V_INDICATOR: stack[top++] = c.u == (in.ctx == 0 ? c.v : c.t) ? 1.0 : 0.0; break;
            case V_FOUND: stack[top - 1] = c.found ? stack[top - 1] : 0.0; break;
            case V_MUL: { const double b = stack[--top]; stack[top - 1] = stack[top - 1] * b; break; }
            case V_ADD: { const double b = stack[--top]; stack[top - 1] = stack[top - 1] + b; break; }
            case V_SQUARE: { const double a = stack[top - 1]; stack[top - 1] = a * a; break; }
            default: break;
        }
    }
    return stack[0];
}

// The value of position p of row (v, start) with aligned vertex t, in graph g.
static inline double entry_value(const ValueProgram& pg, const CSRView& g, int64_t v, int64_t t,
                                 int64_t start, int64_t p) {
    EntryCtx c;
    c.v = v;
    c.e = start + p;
    c.u = g.indices[c.e];
    c.t = t;
    c.e2 = -1;
    c.found = false;
    if (pg.uses_lookup) {
        c.e2 = find_in_row(*pg.aux, t, c.u);
        c.found = c.e2 >= 0;
    }
    return run_program(pg, c);
}

}  // namespace spsample

#endif  // SPSAMPLE_SELECT_H
