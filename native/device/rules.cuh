// Per-row selection rules of node-wise sampling (spsample._primitives.choose_positions and
// threshold_positions, bit for bit) and the value programs that weigh a row's entries: the
// single-source bodies that the CPU engine (select.h, rowwise.h) and the GPU kernels
// (rowwise.cuh) both call. Rules of hd.cuh: no allocation, no exceptions, no containers;
// scratch comes in as pointers sized by the caller (row_scratch_* below).
//
// A row is (start, d): its entries are indices[start .. start + d); it draws from one keyed
// Philox stream (Stream). Each rule writes the kept positions p (0 <= p < d, ascending, with
// multiplicity under replacement) to pos[] and returns how many. Rules (s = fanout, -1 = all):
//
//   uniform, no replacement : d <= s (or s = -1) keeps the row; else Floyd's algorithm, draw i
//                             uses word i: t = uniform_int(word_i, d - s + i + 1),
//                             taken -> d - s + i
//   uniform, replacement    : s positions uniform_int(word_i, d) (none when d = 0)
//   weighted, no replacement: among entries of weight > 0, the s smallest keys
//                             neg_log(open_unit(word_p)) / w_p, ties to the smaller position
//   weighted, replacement   : draw i = argmin_p neg_log(open_unit(word_{i*d+p})) / w_p over w_p > 0
//   rejection (weighted, replacement, values <= bound): draw i, attempt a < A: words
//                             2(A i + a), 2(A i + a) + 1; p = uniform_int(w0, d) accepted when
//                             open_unit(w1) * bound < value(p); after A rejections the exact
//                             keys on words 2 A s + i d + p (no sample if no value is > 0)
//   threshold (LABOR-0)     : d <= s (or s = -1) keeps the row; else entry p of column u is kept
//                             iff word0(u) * d < s * 2**32, word0(u) = word 0 of stream
//                             (u, hw, bid)
//
// Scratch of a row of length d at fanout s (the caller provides it):
//   pos   row_bound(d, s, replace) int64 (d for the threshold rule): the kept positions
//   set   floyd_set_slots(d, s) uint64 (Floyd with d > 64 * BITMAP_WORDS and s > 32, else 0)
//   keys  s float64 (weighted without replacement, s >= 0): the heap of the s smallest keys
#ifndef SPSAMPLE_DEVICE_RULES_CUH
#define SPSAMPLE_DEVICE_RULES_CUH

#include "codes.cuh"
#include "hd.cuh"
#include "philox.cuh"

namespace spsample {

inline constexpr int64_t REJECTION_ATTEMPTS = 256;  // spsample._lazy.REJECTION_ATTEMPTS
// Rows up to 64 * BITMAP_WORDS entries long draw their Floyd sample in a bitmap (no sort).
inline constexpr int64_t BITMAP_WORDS = 16;

// Upper bound on the entries a row of length d keeps at fanout s (exact for uniform rules).
SPSAMPLE_HD inline int64_t row_bound(int64_t d, int64_t s, bool replace) {
    if (s < 0) return d;
    if (replace) return d > 0 ? s : 0;
    return d < s ? d : s;
}

// ------------------------------------------------------------------------------- sorting
SPSAMPLE_HD inline void sift_down(int64_t* a, int64_t i, int64_t n) {
    const int64_t x = a[i];
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && a[c + 1] > a[c]) ++c;
        if (a[c] <= x) break;
        a[i] = a[c];
        i = c;
    }
    a[i] = x;
}

// Ascending sort of a[0..k): insertion sort up to 32 entries (the usual fanouts are 5 to 25),
// heapsort beyond (O(k log k), in place). Integers have one sorted order: any method agrees.
SPSAMPLE_HD inline void sort_small(int64_t* a, int64_t k) {
    if (k > 32) {
        for (int64_t i = k / 2 - 1; i >= 0; --i) sift_down(a, i, k);
        for (int64_t n = k - 1; n > 0; --n) {
            const int64_t top = a[0];
            a[0] = a[n];
            a[n] = top;
            sift_down(a, 0, n);
        }
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

// ------------------------------------------------------------------------------- Floyd
// Slots of Floyd's membership set for a row of length d at fanout s (0: not needed).
SPSAMPLE_HD inline int64_t floyd_set_slots(int64_t d, int64_t s) {
    if (d <= 64 * BITMAP_WORDS || s <= 32 || d <= s) return 0;
    int64_t c = 64;
    while (c < 2 * s) c <<= 1;
    return c;
}

// Insert key != 0 into the open-addressing set slots[0..cap) (cap a power of two, load
// <= 1/2, Fibonacci hashing, linear probing); whether it was absent.
SPSAMPLE_HD inline bool set_insert(uint64_t* slots, int64_t cap, uint64_t key) {
    const int shift = 64 - ctz64(static_cast<uint64_t>(cap));
    uint64_t i = (key * 0x9E3779B97F4A7C15ull) >> shift;
    const uint64_t mask = static_cast<uint64_t>(cap) - 1;
    for (;;) {
        if (slots[i] == 0) {
            slots[i] = key;
            return true;
        }
        if (slots[i] == key) return false;
        i = (i + 1) & mask;
    }
}

// Floyd's s distinct positions out of d > s >= 1, ascending, into pos[0..s); word(i) is word i
// of the row's stream (a Stream, or words computed ahead); set: floyd_set_slots(d, s) slots.
// Complexity: O(s + d / 64) for d <= 1024 (bitmap), O(s^2) comparisons for s <= 32, else
// O(s log s) (hashed, then sorted).
template <class Words>
SPSAMPLE_HD inline int64_t floyd_row(Words&& word, int64_t d, int64_t s, int64_t* pos,
                                     uint64_t* set) {
    if (d <= 64) {  // the bitmap in one register (no store-to-load chain); pick j on a hit
        uint64_t bits = 0;
        for (int64_t i = 0; i < s; ++i) {
            const int64_t j = d - s + i;
            const int64_t t = static_cast<int64_t>(uniform_int(word(i), j + 1));
            const uint64_t hit = (bits >> t) & 1u;
            const int64_t x = t ^ ((t ^ j) & -static_cast<int64_t>(hit));
            bits |= uint64_t(1) << x;
        }
        for (int64_t k = 0; bits; ++k) {
            pos[k] = ctz64(bits);
            bits &= bits - 1;
        }
        return s;
    }
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
            uint64_t w = bits[q];
            while (w) {
                pos[k++] = (q << 6) + ctz64(w);
                w &= w - 1;
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
        const int64_t cap = floyd_set_slots(d, s);
        for (int64_t q = 0; q < cap; ++q) set[q] = 0;
        for (int64_t i = 0; i < s; ++i) {
            const int64_t j = d - s + i;
            const int64_t t = static_cast<int64_t>(uniform_int(word(i), j + 1));
            if (set_insert(set, cap, static_cast<uint64_t>(t) + 1)) {
                pos[i] = t;
            } else {  // j exceeds every earlier pick: always new
                set_insert(set, cap, static_cast<uint64_t>(j) + 1);
                pos[i] = j;
            }
        }
    }
    sort_small(pos, s);
    return s;
}

// s uniform draws with replacement from d >= 1 positions, ascending (word as floyd_row's).
template <class Words>
SPSAMPLE_HD inline int64_t uniform_rep_row(Words&& word, int64_t d, int64_t s, int64_t* pos) {
    for (int64_t i = 0; i < s; ++i) pos[i] = static_cast<int64_t>(uniform_int(word(i), d));
    sort_small(pos, s);
    return s;
}

// ------------------------------------------------------------------------------- weighted
// (key, position) pairs in lexicographic order.
SPSAMPLE_HD inline bool pair_less(double ka, int64_t pa, double kb, int64_t pb) {
    return ka < kb || (!(kb < ka) && pa < pb);
}

// Max-heap of (keys[i], pos[i]), i < n: restore it below i.
SPSAMPLE_HD inline void heap_down(double* keys, int64_t* pos, int64_t i, int64_t n) {
    const double k = keys[i];
    const int64_t p = pos[i];
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && pair_less(keys[c], pos[c], keys[c + 1], pos[c + 1])) ++c;
        if (!pair_less(k, p, keys[c], pos[c])) break;
        keys[i] = keys[c];
        pos[i] = pos[c];
        i = c;
    }
    keys[i] = k;
    pos[i] = p;
}

// Add (k, p) at index n of the max-heap of n pairs.
SPSAMPLE_HD inline void heap_push(double* keys, int64_t* pos, int64_t n, double k, int64_t p) {
    int64_t i = n;
    while (i > 0) {
        const int64_t up = (i - 1) / 2;
        if (!pair_less(keys[up], pos[up], k, p)) break;
        keys[i] = keys[up];
        pos[i] = pos[up];
        i = up;
    }
    keys[i] = k;
    pos[i] = p;
}

// Offer (k, p) to the max-heap of the `size` smallest pairs so far (at most s): added while
// there is room, else it replaces the largest when smaller. Returns the new size.
SPSAMPLE_HD inline int64_t heap_offer(double* keys, int64_t* pos, int64_t size, int64_t s, double k,
                                      int64_t p) {
    if (size < s) {
        heap_push(keys, pos, size, k, p);
        return size + 1;
    }
    if (pair_less(k, p, keys[0], pos[0])) {
        keys[0] = k;
        pos[0] = p;
        heap_down(keys, pos, 0, size);
    }
    return size;
}

// Weighted without replacement over values value(0..d) (s >= 1 or -1): Efraimidis-Spirakis on
// the keys exp_key(word(p), value(p)), the s smallest (key, position) kept in a max-heap over
// keys[0..s) / pos[0..s); every eligible entry when there are at most s. Positions ascending.
// Complexity O(d log s).
template <class Words, class Value>
SPSAMPLE_HD inline int64_t keys_row(Words&& word, Value&& value, int64_t d, int64_t s,
                                    int64_t* pos, double* keys) {
    int64_t eligible = 0;
    for (int64_t p = 0; p < d; ++p) eligible += (value(p) > 0);
    if (s < 0 || eligible <= s) {
        int64_t k = 0;
        for (int64_t p = 0; p < d; ++p)
            if (value(p) > 0) pos[k++] = p;
        return k;
    }
    int64_t size = 0;
    for (int64_t p = 0; p < d; ++p) {
        const double w = value(p);
        if (!(w > 0)) continue;
        size = heap_offer(keys, pos, size, s, exp_key(word(p), w), p);
    }
    sort_small(pos, size);
    return size;
}

// keys_row on the stream's words p: the weighted rule without replacement.
template <class Value>
SPSAMPLE_HD inline int64_t weighted_row(Stream& st, Value&& value, int64_t d, int64_t s,
                                        int64_t* pos, double* keys) {
    return keys_row([&](int64_t p) { return st.word(static_cast<uint64_t>(p)); }, value, d, s,
                    pos, keys);
}

// The alias rule (RowSelection, method="alias"; Python: engine/_primitives.py _alias): at most
// ALIAS_ATTEMPTS s draws per row without replacement before the exact keys fill the row.
inline constexpr int64_t ALIAS_ATTEMPTS = 4;
// ... and draws a row from its table only when s times its largest value's share of the row's
// sum is at most ALIAS_SHARE_MAX (spsample._lazy.ALIAS_SHARE_MAX); other rows take the keys.
inline constexpr double ALIAS_SHARE_MAX = 2.0;

// One alias draw on words w0, w1 of a row of d entries whose (threshold, alias) pairs are
// table[0 .. 2 d): i = uniform_int(w0, d), kept when w1 < threshold[i], else alias[i] (an alias
// outside the row, from a table that is not this row's, reads as i).
SPSAMPLE_HD inline int64_t alias_pick(const uint32_t* table, int64_t d, uint32_t w0, uint32_t w1) {
    const uint64_t i = uniform_int(w0, static_cast<uint64_t>(d));
    const uint32_t threshold = table[2 * i], alias = table[2 * i + 1];
    const uint64_t other = alias < static_cast<uint64_t>(d) ? alias : i;
    return static_cast<int64_t>(w1 < threshold ? i : other);
}

// Vose's alias table of one row of values value(0..d) into table[0 .. 2 d), with the steps and
// roundings of graph/_weights.py alias_tables (the graph's memoised tables): the positive values
// summed left to right into W, x_p = (w_p d) / W, the small stack (positive x < 1 ascending,
// then the zero entries) and the large one (x >= 1 ascending) paired from their tops; the zero
// entries left unpaired (all of them in a row without a table) get threshold 0 and alias the
// row's first positive entry (themselves in a row without one). Scratch: x (d doubles), small
// and large (d each). Returns the number of eligible entries (value > 0), or -1 when they sum
// past the largest double (no table); share: the largest value over W (0 without a table or
// without eligible entries).
template <class Value>
SPSAMPLE_HD inline int64_t alias_table_row(Value&& value, int64_t d, uint32_t* table, double* x,
                                           int64_t* small, int64_t* large, double& share) {
    double total = 0.0, largest = 0.0;
    int64_t eligible = 0, first = -1;
    share = 0.0;
    for (int64_t p = 0; p < d; ++p) {
        const double w = value(p);
        x[p] = w > 0 ? w : 0.0;
        eligible += w > 0;
        if (w > 0 && first < 0) first = p;
        largest = x[p] > largest ? x[p] : largest;
        total = total + x[p];
        table[2 * p] = 0xFFFFFFFFu;
        table[2 * p + 1] = static_cast<uint32_t>(p);
    }
    auto unpaired_zero = [&](int64_t p) {
        if (value(p) > 0) return;
        table[2 * p] = 0;
        if (first >= 0) table[2 * p + 1] = static_cast<uint32_t>(first);
    };
    const bool overflow = !(total <= 1.7976931348623157e308);
    if (overflow || eligible == 0) {
        for (int64_t p = 0; p < d; ++p) unpaired_zero(p);
        return overflow ? -1 : 0;
    }
    share = largest / total;
    int64_t ns = 0, nl = 0;
    for (int64_t p = 0; p < d; ++p) {
        const bool positive = x[p] > 0;
        x[p] = (x[p] * static_cast<double>(d)) / total;
        if (positive && x[p] < 1.0) small[ns++] = p;
        if (x[p] >= 1.0) large[nl++] = p;
    }
    for (int64_t p = 0; p < d; ++p)  // the zero entries, on top of the small stack
        if (!(value(p) > 0)) small[ns++] = p;
    while (ns > 0 && nl > 0) {
        const int64_t lo = small[--ns], hi = large[--nl];
        table[2 * lo] = static_cast<uint32_t>(x[lo] * 4294967296.0);
        table[2 * lo + 1] = static_cast<uint32_t>(hi);
        x[hi] = (x[hi] + x[lo]) - 1.0;
        if (x[hi] < 1.0)
            small[ns++] = hi;
        else
            large[nl++] = hi;
    }
    for (int64_t i = 0; i < ns; ++i) unpaired_zero(small[i]);
    return eligible;
}

// The alias rule's attempts: attempt a on words 2a, 2a + 1 (alias_pick) offered to insert(p),
// which keeps p unless already kept and says whether it did, until s are kept or ALIAS_ATTEMPTS s
// attempts were made. Returns how many were kept.
template <class Words, class Insert>
SPSAMPLE_HD inline int64_t alias_attempts(Words&& word, const uint32_t* table, int64_t d, int64_t s,
                                          Insert&& insert) {
    int64_t have = 0;
    for (int64_t a = 0; a < ALIAS_ATTEMPTS * s && have < s; ++a)
        have += insert(alias_pick(table, d, word(2 * a), word(2 * a + 1)));
    return have;
}

// The alias rule's last resort, after the attempts kept only `have` < s entries (pos[0..have)):
// the exact keys on words 2 ALIAS_ATTEMPTS s + p (keys_row) over the eligible entries not
// kept(p) fill the row. Positions ascending into pos; returns s (or fewer when the row has fewer
// eligible entries).
template <class Words, class Value, class Kept>
SPSAMPLE_HD inline int64_t alias_keys_fill(Words&& word, Value&& value, Kept&& kept, int64_t d,
                                           int64_t s, int64_t have, int64_t* pos, double* keys) {
    const int64_t base = 2 * ALIAS_ATTEMPTS * s;
    auto later = [&](int64_t p) { return word(base + p); };
    auto rest = [&](int64_t p) { return kept(p) ? 0.0 : static_cast<double>(value(p)); };
    const int64_t n = keys_row(later, rest, d, s - have, pos + have, keys);
    sort_small(pos, have + n);
    return have + n;
}

// Weighted draws by the row's alias table (graph/_weights.py alias_tables): word(i) the row's
// stream words, value(p) its values, `eligible` how many are > 0 and `share` the largest value
// over the row's sum (s >= 1 or -1). Every eligible entry when s < 0, or when eligible <= s
// without replacement. With replacement, draw i on words 2i, 2i + 1. Without, a row with
// s share > ALIAS_SHARE_MAX takes keys_sample() (the exact keys' sample on words p, its count);
// the others make attempts a on words 2a, 2a + 1, each keeping its entry unless already kept,
// until s are kept or ALIAS_ATTEMPTS s attempts were made, and then the exact keys
// exp_key(word(2 ALIAS_ATTEMPTS s + p), value(p)) of the eligible entries not kept fill the row
// (alias_keys_fill). Positions ascending into pos (room for max(d, s)); keys: room for s.
// Complexity O(s) expected draws; the kept entries of a row up to 64 BITMAP_WORDS long in a
// bitmap (read out in order), of a longer one in pos (O(s^2) membership tests, then sorted).
template <class Words, class Value, class KeysSample>
SPSAMPLE_HD inline int64_t alias_row(Words&& word, const uint32_t* table, Value&& value,
                                     KeysSample&& keys_sample, int64_t eligible, double share,
                                     int64_t d, int64_t s, bool replace, int64_t* pos,
                                     double* keys) {
    if (eligible <= 0 || s == 0) return 0;
    if (s < 0 || (!replace && eligible <= s)) {
        int64_t k = 0;
        for (int64_t p = 0; p < d; ++p)
            if (eligible == d || value(p) > 0) pos[k++] = p;
        return k;
    }
    if (replace) {
        for (int64_t i = 0; i < s; ++i) pos[i] = alias_pick(table, d, word(2 * i), word(2 * i + 1));
        sort_small(pos, s);
        return s;
    }
    if (static_cast<double>(s) * share > ALIAS_SHARE_MAX) return keys_sample();
    if (d <= 64 * BITMAP_WORDS) {  // kept entries in a bitmap of d bits, read out in order
        uint64_t bits[BITMAP_WORDS];
        const int64_t words = (d + 63) >> 6;
        for (int64_t q = 0; q < words; ++q) bits[q] = 0;
        auto kept = [&](int64_t p) { return ((bits[p >> 6] >> (p & 63)) & 1u) != 0; };
        const int64_t have = alias_attempts(word, table, d, s, [&](int64_t p) {
            const bool fresh = !kept(p);
            bits[p >> 6] |= uint64_t(1) << (p & 63);
            return fresh;
        });
        int64_t k = 0;
        for (int64_t q = 0; q < words; ++q)
            for (uint64_t w = bits[q]; w; w &= w - 1) pos[k++] = (q << 6) + ctz64(w);
        if (have == s) return s;
        return alias_keys_fill(word, value, kept, d, s, have, pos, keys);
    }
    int64_t n = 0;  // the kept entries, pos[0..n)
    auto kept = [&](int64_t p) {
        for (int64_t j = 0; j < n; ++j)
            if (pos[j] == p) return true;
        return false;
    };
    const int64_t have = alias_attempts(word, table, d, s, [&](int64_t p) {
        if (kept(p)) return false;
        pos[n++] = p;
        return true;
    });
    if (have == s) {
        sort_small(pos, have);
        return have;
    }
    return alias_keys_fill(word, value, kept, d, s, have, pos, keys);
}

// Weighted with replacement over values value(0..d) (s >= 1 or -1): exponential races.
// Complexity O(s d).
template <class Value>
SPSAMPLE_HD inline int64_t weighted_rep_row(Stream& st, Value&& value, int64_t d, int64_t s,
                                            int64_t* pos) {
    if (s < 0) {
        int64_t k = 0;
        for (int64_t p = 0; p < d; ++p)
            if (value(p) > 0) pos[k++] = p;
        return k;
    }
    int64_t eligible = 0;
    for (int64_t p = 0; p < d; ++p) eligible += (value(p) > 0);
    if (eligible == 0) return 0;
    for (int64_t i = 0; i < s; ++i) {
        double best = 0.0;
        int64_t arg = -1;
        const uint64_t base = static_cast<uint64_t>(i) * static_cast<uint64_t>(d);
        for (int64_t p = 0; p < d; ++p) {
            const double w = value(p);
            if (!(w > 0)) continue;
            const double k = exp_key(st.word(base + static_cast<uint64_t>(p)), w);
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

// Draw i of s when its A attempts were all rejected: the position of the row's smallest exact
// key exp_key(word, value(p)) over the entries with a value > 0 (the words after the s A
// attempts' pairs, d per draw), or -1 when there is none. Sets `exceeded` (and returns -1)
// when a value is above bound. Complexity O(d).
template <class Value>
SPSAMPLE_HD inline int64_t rejection_exact(Stream& st, int64_t A, int64_t s, int64_t i, int64_t d,
                                           double bound, Value&& value, bool& exceeded) {
    int64_t got = -1;
    double best = 0.0;
    const uint64_t base = 2 * static_cast<uint64_t>(A) * static_cast<uint64_t>(s) +
                          static_cast<uint64_t>(i) * static_cast<uint64_t>(d);
    for (int64_t p = 0; p < d; ++p) {
        const double v = value(p);
        if (v > bound) {
            exceeded = true;
            return -1;
        }
        if (!(v > 0)) continue;
        const double key = exp_key(st.word(base + static_cast<uint64_t>(p)), v);
        if (got < 0 || key < best) {
            best = key;
            got = p;
        }
    }
    return got;
}

// Weighted draws with replacement by rejection against `bound` (s >= 0, d >= 1). value(p) is
// the value of position p. Sets `exceeded` (and returns 0) when a value is above bound.
// Complexity O(s) expected attempts, O(s A + s d) at worst.
template <class Value>
SPSAMPLE_HD inline int64_t rejection_row(Stream& st, int64_t d, int64_t s, double bound,
                                         Value&& value, int64_t* pos, bool& exceeded) {
    const int64_t A = REJECTION_ATTEMPTS;
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
            got = rejection_exact(st, A, s, i, d, bound, value, exceeded);
            if (exceeded) return 0;
        }
        if (got >= 0) pos[k++] = got;
    }
    sort_small(pos, k);
    return k;
}

// ------------------------------------------------------------------------------- LABOR-0
// Whether LABOR-0 keeps an entry of a row of length d > s whose column's word is `word`.
SPSAMPLE_HD inline bool threshold_keeps(uint32_t word, int64_t d, int64_t s) {
    const uint64_t limit = static_cast<uint64_t>(s) << 32;
    return static_cast<uint64_t>(word) * static_cast<uint64_t>(d) < limit;
}

// LABOR-0's threshold rule for positions p0 <= p < p1 of a row (columns col(0..d)) longer than
// s >= 0, one column's word at a time: emit(p) for every kept position, ascending; returns
// the count. Every position decides alone, so a long row can be cut into ranges.
template <class Column, class Emit>
SPSAMPLE_HD inline int64_t threshold_range(Column&& col, int64_t p0, int64_t p1, int64_t d,
                                           int64_t s, uint32_t hw, uint32_t bid, Key key,
                                           Emit&& emit) {
    int64_t k = 0;
    for (int64_t p = p0; p < p1; ++p) {
        const uint32_t w = philox4x32_word0(0u, static_cast<uint32_t>(col(p)), hw, bid, key);
        if (threshold_keeps(w, d, s)) {
            emit(p);
            ++k;
        }
    }
    return k;
}

// threshold_range over the whole row. (The CPU engine computes the words 256 columns at a
// time with column_words and applies threshold_keeps.)
template <class Column, class Emit>
SPSAMPLE_HD inline int64_t threshold_row(Column&& col, int64_t d, int64_t s, uint32_t hw,
                                         uint32_t bid, Key key, Emit&& emit) {
    return threshold_range(col, 0, d, d, s, hw, bid, key, emit);
}

// ------------------------------------------------------------------------ value programs
// A value Expr (spsample._lazy) in postfix form, evaluated per entry with exactly rounded IEEE
// operations in the tree's order, so the values equal NumPy's evaluation bit for bit.
// The instructions (ValueOp) and VALUE_STACK are defined in codes.cuh.

// One instruction (24 bytes: the layout of spsample.gpu._device.INSTR_DTYPE).
struct Instr {
    int32_t op, ctx, arg;
    double value;
};

// A value program as the bodies read it (pointers only).
struct ValueCode {
    const Instr* code = nullptr;
    int32_t size = 0;
    const double* const* vectors = nullptr;  // float64 vectors referenced by arg
    const double* weights = nullptr;         // the base graph's weights (V_WEIGHT ctx 0)
    CSRView aux{nullptr, nullptr, nullptr, 0};  // graph of lookups (ctx 1 leaves, V_FOUND)
    bool uses_lookup = false;                // V_FOUND / ctx 1 leaves present
    bool only_weight = false;                // code == [V_WEIGHT ctx 0]: read weights directly
};

// The entry being valued: row vertex v, column u, edge id e; aligned row vertex t and the
// looked-up entry e' (found) in the aux graph.
struct EntryCtx {
    int64_t v, u, e, t, e2;
    bool found;
};

// Binary search of column u in row t of g (sorted, unique columns): its edge id, or -1.
SPSAMPLE_HD inline int64_t find_in_row(const CSRView& g, int64_t t, int64_t u) {
    int64_t lo = g.indptr[t], hi = g.indptr[t + 1];
    const int64_t end = hi;
    while (lo < hi) {  // first position whose column is >= u
        const int64_t mid = lo + (hi - lo) / 2;
        if (g.indices[mid] < u) lo = mid + 1;
        else hi = mid;
    }
    return (lo != end && g.indices[lo] == u) ? lo : -1;
}

SPSAMPLE_HD inline double run_program(const ValueCode& pg, const EntryCtx& c) {
    double stack[VALUE_STACK];
    int top = 0;
    for (int32_t i = 0; i < pg.size; ++i) {
        const Instr& in = pg.code[i];
        switch (in.op) {
            case V_CONST: stack[top++] = in.value; break;
            case V_WEIGHT:
                stack[top++] = in.ctx == 0 ? pg.weights[c.e]
                                           : (c.found ? pg.aux.weights[c.e2] : 0.0);
                break;
            case V_COLUMN: stack[top++] = pg.vectors[in.arg][c.u]; break;
            case V_ROW: stack[top++] = pg.vectors[in.arg][in.ctx == 0 ? c.v : c.t]; break;
            case V_EDGE:
                stack[top++] = in.ctx == 0 ? pg.vectors[in.arg][c.e]
                                           : (c.found ? pg.vectors[in.arg][c.e2] : 0.0);
                break;
            case V_INDICATOR:
                stack[top++] = c.u == (in.ctx == 0 ? c.v : c.t) ? 1.0 : 0.0;
                break;
            case V_FOUND: stack[top - 1] = c.found ? stack[top - 1] : 0.0; break;
            case V_MUL: {
                const double b = stack[--top];
                stack[top - 1] = stack[top - 1] * b;
                break;
            }
            case V_ADD: {
                const double b = stack[--top];
                stack[top - 1] = stack[top - 1] + b;
                break;
            }
            case V_SQUARE: {
                const double a = stack[top - 1];
                stack[top - 1] = a * a;
                break;
            }
            default: break;
        }
    }
    return stack[0];
}

// The value of position p of row (v, start) with aligned vertex t, in graph g.
SPSAMPLE_HD inline double entry_value(const ValueCode& pg, const CSRView& g, int64_t v, int64_t t,
                                      int64_t start, int64_t p) {
    EntryCtx c;
    c.v = v;
    c.e = start + p;
    c.u = g.indices[c.e];
    c.t = t;
    c.e2 = -1;
    c.found = false;
    if (pg.uses_lookup) {
        c.e2 = find_in_row(pg.aux, t, c.u);
        c.found = c.e2 >= 0;
    }
    return run_program(pg, c);
}

}  // namespace spsample

#endif  // SPSAMPLE_DEVICE_RULES_CUH
