// Per-minibatch relabelling: global vertex id -> local id, first occurrence wins.
//
// LocalMap is an open-addressing hash table with linear probing over 64-bit slots
// ((vertex + 1) << 32 | local; 0 = empty), kept at load factor <= 1/2 by doubling. One table
// per thread, cleared between minibatches; its size follows the largest minibatch seen, so a
// bulk holds O(threads * nodes of a minibatch) of it. Vertex ids must be < 2**32 - 1
// (spsample.Graph guarantees it) and a minibatch holds fewer than 2**32 vertices.
//
// Complexity: find / find_or_insert O(1) expected (Fibonacci hashing, linear probing), clear
// O(capacity) (a memset of at most a few MiB per minibatch).
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

// The per-minibatch relabelling of the row-wise engine: a dense table of n 32-bit local ids when
// the graph has at most DENSE_MAX vertices (one random access per lookup, half a hash slot's
// bytes, no probing; reset after each minibatch through its n_id), a LocalMap otherwise.
class VertexMap {
  public:
    static constexpr int64_t DENSE_MAX = int64_t(1) << 24;  // 64 MiB of table per thread at most
    static constexpr uint32_t NONE = 0xFFFFFFFFu;

    // Start a minibatch of about `expected` vertices of a graph of n vertices.
    void begin(int64_t n, uint64_t expected) {
        dense_ = n <= DENSE_MAX;
        if (!dense_) {
            hash_.clear(expected);
        } else if (static_cast<int64_t>(table_.size()) != n) {
            table_.assign(static_cast<size_t>(n), NONE);
        }
    }

    inline uint32_t find_or_insert(uint32_t v, uint32_t next, bool& inserted) {
        if (!dense_) return hash_.find_or_insert(v, next, inserted);
        uint32_t& slot = table_[v];
        inserted = slot == NONE;
        if (inserted) slot = next;
        return slot;
    }

    // The dense table (local id per vertex, NONE when absent), or nullptr when hashed.
    uint32_t* dense_table() { return dense_ ? table_.data() : nullptr; }

    inline void prefetch(uint32_t v) const {
        if (dense_) __builtin_prefetch(&table_[v]);
        else hash_.prefetch(v);
    }

    // End the minibatch: forget its vertices (n_id holds every vertex inserted).
    void end(const int64_t* n_id, size_t count) {
        if (!dense_) return;
        for (size_t i = 0; i < count; ++i) table_[static_cast<size_t>(n_id[i])] = NONE;
    }

  private:
    bool dense_ = false;
    std::vector<uint32_t> table_;
    LocalMap hash_;
};

}  // namespace spsample

#endif  // SPSAMPLE_LOCALMAP_H
