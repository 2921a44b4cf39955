// Row ranges of a contiguous array in a file, read with pread (the out-of-core graph's sparse
// hops): ranges closer than `gap` bytes are read as one run through a bounce buffer, then
// their pieces copied out back to back. Returns 0, or -1 - i for the first range i that the
// file could not give (short read: truncated; or an error).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

inline int64_t gather_ranges(int fd, int64_t base, int64_t itemsize, const int64_t* starts,
                             const int64_t* ends, int64_t n, int64_t gap, uint8_t* out) {
    std::vector<uint8_t> bounce;
    const int64_t cap = int64_t(1) << 24;      // 16 MiB runs at most
    int64_t written = 0;
    int64_t i = 0;
    while (i < n) {
        int64_t j = i + 1;
        const int64_t run_lo = starts[i] * itemsize;
        int64_t run_hi = ends[i] * itemsize;
        while (j < n && starts[j] * itemsize - run_hi <= gap &&
               ends[j] * itemsize - run_lo <= cap) {
            run_hi = std::max(run_hi, ends[j] * itemsize);
            ++j;
        }
        const int64_t len = run_hi - run_lo;
        uint8_t* dest = out + written;
        const bool single = (j == i + 1);
        if (!single) {
            if (static_cast<int64_t>(bounce.size()) < len) bounce.resize(len);
            dest = bounce.data();
        }
        int64_t done = 0;
        while (done < len) {
            const ssize_t got = pread(fd, dest + done, len - done, base + run_lo + done);
            if (got <= 0) return -1 - i;
            done += got;
        }
        if (single) {
            written += len;
        } else {
            for (int64_t r = i; r < j; ++r) {
                const int64_t piece = (ends[r] - starts[r]) * itemsize;
                std::memcpy(out + written, bounce.data() + (starts[r] * itemsize - run_lo),
                            piece);
                written += piece;
            }
        }
        i = j;
    }
    return 0;
}
