// Per-minibatch deduplication on the GPU: an open-addressing table per minibatch whose result
// does not depend on the order in which threads reach it, so it equals the CPU engine's
// sequential "first occurrence wins" relabelling (rowwise.h) bit for bit.
//
// A table is cap 64-bit slots (cap a power of two >= 2 * entries: load <= 1/2, so probing
// ends), slot = (vertex + 1) << 32 | value, 0 = empty; Fibonacci hashing, linear probing.
// Values: a local id (< 2**31) for a vertex the minibatch already holds, or DEDUP_NEW | t for
// a new vertex whose first occurrence is item t of the batch being added. Inserting with
// table_insert_min keeps, per vertex, the minimum value over every insertion -- a local id
// beats any DEDUP_NEW value, and among new items the smallest t -- whatever the interleaving:
// the insert is an atomicCAS on an empty slot, the update an atomicMin on the slot (the tag in
// the high half is the same, so the minimum is taken over the values).
//
// Complexity: O(1) expected per operation at load <= 1/2.
#ifndef SPSAMPLE_DEVICE_DEDUP_CUH
#define SPSAMPLE_DEVICE_DEDUP_CUH

#include "atomic.cuh"
#include "hd.cuh"

namespace spsample {

inline constexpr uint32_t DEDUP_NEW = 0x80000000u;
inline constexpr uint32_t DEDUP_ABSENT = 0xFFFFFFFFu;

// Slots for a table of `entries` keys (a power of two, >= 16, >= 2 * entries).
SPSAMPLE_HD inline int64_t dedup_capacity(int64_t entries) {
    int64_t c = 16;
    while (c < 2 * entries) c <<= 1;
    return c;
}

SPSAMPLE_HD inline uint64_t dedup_home(uint32_t v, int64_t cap) {
    const int shift = 64 - ctz64(static_cast<uint64_t>(cap));
    return ((static_cast<uint64_t>(v) + 1) * 0x9E3779B97F4A7C15ull) >> shift;
}

// Insert vertex v with `value`, or lower v's value to `value` (the minimum of all insertions).
SPSAMPLE_HD inline void table_insert_min(uint64_t* slots, int64_t cap, uint32_t v, uint32_t value) {
    const uint64_t tag = static_cast<uint64_t>(v) + 1;
    const uint64_t want = (tag << 32) | value;
    const uint64_t mask = static_cast<uint64_t>(cap) - 1;
    for (uint64_t i = dedup_home(v, cap);; i = (i + 1) & mask) {
        uint64_t cur = atomic_load_u64(slots + i);
        if (cur == 0) {
            cur = atomic_cas_u64(slots + i, 0, want);
            if (cur == 0) return;
        }
        if ((cur >> 32) == tag) {
            if (want < cur) atomic_min_u64(slots + i, want);
            return;
        }
    }
}

// The value of vertex v, or DEDUP_ABSENT (after every insertion has finished).
SPSAMPLE_HD inline uint32_t table_find(const uint64_t* slots, int64_t cap, uint32_t v) {
    const uint64_t tag = static_cast<uint64_t>(v) + 1;
    const uint64_t mask = static_cast<uint64_t>(cap) - 1;
    for (uint64_t i = dedup_home(v, cap);; i = (i + 1) & mask) {
        const uint64_t cur = atomic_load_u64(slots + i);
        if (cur == 0) return DEDUP_ABSENT;
        if ((cur >> 32) == tag) return static_cast<uint32_t>(cur);
    }
}

}  // namespace spsample

#endif  // SPSAMPLE_DEVICE_DEDUP_CUH
