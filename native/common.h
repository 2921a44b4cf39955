// Types shared by spsample's native kernels: the CSR view of a graph, malloc'd growable arrays
// that can be handed to NumPy, per-minibatch outputs, and the memory budget of one call.
#ifndef SPSAMPLE_COMMON_H
#define SPSAMPLE_COMMON_H

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <list>
#include <map>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "device/hd.cuh"
#include "device/philox.cuh"

namespace spsample {


// Large output blocks, recycled: a bulk's flat arrays (given back when NumPy frees the last array
// viewing one, by the capsule destructor) and the row-wise engine's per-minibatch buffers (given
// back after flattening). A later call reuses them: memory that is already resident, so the
// kernels do not pay the OS for faulting in fresh zeroed pages (a quarter of the layer-wise
// time). No block is handed out while an array
// views it, so results of earlier calls never alias later ones. The pool keeps at most
// `limit` bytes (set_pool_limit; 0 = no pooling), the most recently given blocks first; a
// request takes the smallest held block that fits and is at most 1.5x the request, else malloc.
class BlockPool {
  public:
    void* take(size_t bytes, size_t* cap) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            auto it = by_size_.lower_bound(bytes);
            if (it != by_size_.end() && it->first <= bytes + bytes / 2) {
                void* p = it->second->p;
                *cap = it->first;
                held_ -= it->first;
                lru_.erase(it->second);
                by_size_.erase(it);
                return p;
            }
        }
        *cap = bytes;
        return std::malloc(bytes ? bytes : 1);
    }
    // Keep p for reuse; when that brings the pool over its limit, the least recently given
    // blocks are freed (the newest are the likeliest to fit the next call).
    void give(void* p, size_t cap) {
        std::vector<void*> drop;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (cap > limit_) {
                drop.push_back(p);
            } else {
                lru_.push_front(Held{p, cap, {}});
                lru_.front().where = by_size_.emplace(cap, lru_.begin());
                held_ += cap;
                evict_over_limit(drop);
            }
        }
        for (void* q : drop) std::free(q);
    }
    void set_limit(size_t limit) {
        std::vector<void*> drop;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            limit_ = limit;
            evict_over_limit(drop);
        }
        for (void* q : drop) std::free(q);
    }
    std::pair<size_t, size_t> stats() {
        std::lock_guard<std::mutex> lock(mutex_);
        return {held_, limit_};
    }

  private:
    struct Held;
    using BySize = std::multimap<size_t, std::list<Held>::iterator>;
    struct Held {
        void* p;
        size_t cap;
        BySize::iterator where;
    };
    std::mutex mutex_;
    std::list<Held> lru_;   // most recently given first
    BySize by_size_;        // capacity in bytes -> block
    size_t held_ = 0;
    size_t limit_ = size_t(1) << 30;

    void evict_over_limit(std::vector<void*>& drop) {
        while (held_ > limit_ && !lru_.empty()) {
            Held& old = lru_.back();
            held_ -= old.cap;
            drop.push_back(old.p);
            by_size_.erase(old.where);
            lru_.pop_back();
        }
    }
};

// Never destroyed: capsules may free blocks during interpreter shutdown.
inline BlockPool& block_pool() {
    static BlockPool* pool = new BlockPool();
    return *pool;
}

// A growable array of trivially copyable T in malloc'd memory that is never zero-filled (the
// kernels write every element they keep) and whose buffer can be handed to NumPy (release(),
// then free() it). Growth by realloc doubles, so push_back is O(1) amortised.
template <class T>
class PodBuf {
  public:
    PodBuf() = default;
    PodBuf(const PodBuf&) = delete;
    PodBuf& operator=(const PodBuf&) = delete;
    PodBuf(PodBuf&& o) noexcept : p_(o.p_), n_(o.n_), cap_(o.cap_), bytes_(o.bytes_), pooled_(o.pooled_) {
        o.p_ = nullptr;
        o.n_ = o.cap_ = o.bytes_ = 0;
    }
    PodBuf& operator=(PodBuf&& o) noexcept {
        if (this != &o) {
            drop();
            p_ = o.p_; n_ = o.n_; cap_ = o.cap_; bytes_ = o.bytes_; pooled_ = o.pooled_;
            o.p_ = nullptr;
            o.n_ = o.cap_ = o.bytes_ = 0;
        }
        return *this;
    }
    ~PodBuf() { drop(); }

    // Take (and give back) storage from the block pool instead of malloc: for buffers that die
    // within a call, whose memory a later call reuses resident. Call before the first growth;
    // a pooled buffer cannot be release()d.
    void use_pool() {
        if (!p_) pooled_ = true;
    }

    T* data() { return p_; }
    const T* data() const { return p_; }
    size_t size() const { return n_; }
    size_t capacity() const { return cap_; }
    T& operator[](size_t i) { return p_[i]; }
    const T& operator[](size_t i) const { return p_[i]; }

    void reserve(size_t c) {
        if (c > cap_) realloc_to(c);
    }
    // Set the size to k (contents of new elements undefined).
    void resize(size_t k) {
        reserve(k);
        n_ = k;
    }
    void clear() { n_ = 0; }
    inline void push_back(T x) {
        if (n_ == cap_) realloc_to(cap_ ? 2 * cap_ : 16);
        p_[n_++] = x;
    }
    template <class It>
    void assign(It first, It last) {
        resize(static_cast<size_t>(last - first));
        std::copy(first, last, p_);
    }
    // Give up the buffer (shrunk to size(); nullptr when empty); the caller free()s it.
    T* release() {
        if (pooled_) throw std::logic_error("PodBuf: a pooled buffer cannot be released");
        T* q = nullptr;
        if (n_ > 0) {
            if (n_ < cap_) realloc_to(n_);
            q = p_;
        } else {
            std::free(p_);
        }
        p_ = nullptr;
        n_ = cap_ = 0;
        return q;
    }

  private:
    T* p_ = nullptr;
    size_t n_ = 0, cap_ = 0, bytes_ = 0;
    bool pooled_ = false;

    void drop() {
        if (!p_) return;
        if (pooled_) block_pool().give(p_, bytes_);
        else std::free(p_);
        p_ = nullptr;
    }

    void realloc_to(size_t c) {
        if (pooled_) {
            size_t got = 0;
            void* q = block_pool().take((c ? c : 1) * sizeof(T), &got);
            if (!q) throw std::bad_alloc();
            if (n_) std::memcpy(q, p_, std::min(n_, c) * sizeof(T));
            drop();
            p_ = static_cast<T*>(q);
            cap_ = got / sizeof(T);
            bytes_ = got;
            return;
        }
        void* q = std::realloc(p_, (c ? c : 1) * sizeof(T));
        if (!q) throw std::bad_alloc();
        p_ = static_cast<T*>(q);
        cap_ = c;
    }
};

// One hop of one minibatch, in local ids (dst = the expanded vertex, src = its neighbour),
// edge_id = index of the entry in indices; weight only for layer-wise samplers.
struct HopOut {
    PodBuf<int64_t> dst, src, eid;
    PodBuf<double> weight;
};

// One minibatch: n_id (seeds first), counts[h] = vertices first reached at hop h (counts[0] =
// number of seeds), one HopOut per hop.
// Walks (rowwise.h: walk_minibatch) leave n_id and hops empty and write 32-bit words instead
// (packed): nodes32, the n_id; edges32, hop l's walk_edges[l] edges at walk_at[l] (destinations),
// walk_at[l] + walk_stride[l] (sources) and walk_at[l] + 2 walk_stride[l] (edge ids).
struct MiniBatchOut {
    PodBuf<int64_t> n_id;
    std::vector<int64_t> counts;
    std::vector<HopOut> hops;
    bool packed = false;
    PodBuf<uint32_t> nodes32, edges32;
    std::vector<int64_t> walk_at, walk_stride, walk_edges;

    int64_t num_nodes() const { return static_cast<int64_t>(packed ? nodes32.size() : n_id.size()); }
    int64_t num_edges(int l) const {
        return packed ? walk_edges[l] : static_cast<int64_t>(hops[l].src.size());
    }
};


// Thrown when a call would allocate more output than its budget; the bindings turn it into
// spsample.ResourceError with the message.
struct BudgetExceeded : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The bytes of output one call may allocate, shared by its threads. reserve() is called before
// an output buffer grows (not per element), so the check costs nothing measurable.
class Budget {
  public:
    explicit Budget(uint64_t limit) : limit_(limit) {}
    void reserve(uint64_t bytes) {
        const uint64_t used = used_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
        if (used > limit_)
            throw BudgetExceeded("the sampled output would need more than " +
                                 std::to_string(limit_ >> 20) + " MiB");
    }

  private:
    uint64_t limit_;
    std::atomic<uint64_t> used_{0};
};

}  // namespace spsample

#endif  // SPSAMPLE_COMMON_H
