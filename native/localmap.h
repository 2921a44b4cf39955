// Per-minibatch relabelling: global vertex id -> local id, first occurrence wins.
//
// LocalMap is an open-addressing hash table with linear probing over 64-bit slots
// ((vertex + 1) << 32 | local; 0 = empty), kept at load factor <= 1/2 by doubling. One table
// per thread, cleared between minibatches; its size follows the largest minibatch seen, so a
// bulk holds O(threads * nodes of a minibatch) of it. Vertex ids must be < 2**32 - 1
// (spsample.Graph guarantees it) and a minibatch holds fewer than 2**32 vertices.
//
// DenseMap is the same mapping over a generation-stamped array of size n (O(1) clear), for
// kernels that touch a large share of the graph per minibatch (layer-wise sampling).
#ifndef SPSAMPLE_LOCALMAP_H
#define SPSAMPLE_LOCALMAP_H

#include <cstdint>
#include <cstring>
#include <vector>

namespace spsample {

class LocalMap {
  public:
    LocalMap() { reset_capacity(1 << 12); }

    // Empty the table, keeping (at least) room for `expected` keys at load <= 1/2.
    void clear(uint64_t expected) {
        uint64_t want = 16;
        while (want < 2 * expected) want <<= 1;
        if (want > slots_.size()) {
            reset_capacity(want);
        } else {
            std::memset(slots_.data(), 0, slots_.size() * sizeof(uint64_t));
            size_ = 0;
        }
    }

    // The local id of `v`, inserting it as `next` if absent; `inserted` says which happened.
    // Complexity: O(1) expected.
    inline uint32_t find_or_insert(uint32_t v, uint32_t next, bool& inserted) {
        const uint64_t tag = static_cast<uint64_t>(v) + 1;
        uint64_t i = hash(v);
        for (;;) {
            const uint64_t s = slots_[i];
            if (s == 0) {
                if (2 * (size_ + 1) > slots_.size()) {
                    grow();
                    return find_or_insert(v, next, inserted);
                }
                slots_[i] = (tag << 32) | next;
                ++size_;
                inserted = true;
                return next;
            }
            if ((s >> 32) == tag) {
                inserted = false;
                return static_cast<uint32_t>(s);
            }
            i = (i + 1) & mask_;
        }
    }

    // The local id of `v`, or -1 when absent.
    inline int64_t find(uint32_t v) const {
        const uint64_t tag = static_cast<uint64_t>(v) + 1;
        uint64_t i = hash(v);
        for (;;) {
            const uint64_t s = slots_[i];
            if (s == 0) return -1;
            if ((s >> 32) == tag) return static_cast<uint32_t>(s);
            i = (i + 1) & mask_;
        }
    }

    // Hint the cache about the slot of `v` (no effect on results).
    inline void prefetch(uint32_t v) const { __builtin_prefetch(&slots_[hash(v)]); }

  private:
    std::vector<uint64_t> slots_;
    uint64_t mask_ = 0;
    uint64_t size_ = 0;
    int shift_ = 0;

    inline uint64_t hash(uint32_t v) const {
        return ((static_cast<uint64_t>(v) + 1) * 0x9E3779B97F4A7C15ull) >> shift_;
    }

    void reset_capacity(uint64_t cap) {
        slots_.assign(cap, 0);
        mask_ = cap - 1;
        shift_ = 64 - __builtin_ctzll(cap);
        size_ = 0;
    }

    void grow() {
        std::vector<uint64_t> old;
        old.swap(slots_);
        reset_capacity(old.size() * 2);
        for (uint64_t s : old) {
            if (s == 0) continue;
            uint64_t i = hash(static_cast<uint32_t>((s >> 32) - 1));
            while (slots_[i] != 0) i = (i + 1) & mask_;
            slots_[i] = s;
            ++size_;
        }
    }
};

// Generation-stamped dense map over [0, n): O(n) memory once, O(1) clear.
template <class T>
class DenseMap {
  public:
    void resize(uint64_t n) {
        if (stamp_.size() < n) {
            stamp_.assign(n, 0);
            value_.resize(n);
            gen_ = 1;  // stamps 0 != gen_: empty
        }
    }
    // Forget every entry (O(1); O(n) once every 2**32 - 1 calls).
    void clear() {
        if (++gen_ == 0) {  // wrapped: restart stamps
            std::fill(stamp_.begin(), stamp_.end(), 0);
            gen_ = 1;
        }
    }
    inline bool contains(uint64_t v) const { return stamp_[v] == gen_; }
    inline T& at(uint64_t v) { return value_[v]; }
    inline void set(uint64_t v, T x) {
        stamp_[v] = gen_;
        value_[v] = x;
    }

  private:
    std::vector<uint32_t> stamp_;
    std::vector<T> value_;
    uint32_t gen_ = 0;
};

}  // namespace spsample

#endif  // SPSAMPLE_LOCALMAP_H
