// Reading graphs: ranges of a file gathered in one pass (gather.h), the checks of a block of
// CSR entries (verify.h) and the parsing of edge-list text (parse.h).
// Part of the bindings of spsample._native_kernels (included once, by native/module.cpp).
#ifndef SPSAMPLE_BIND_IO_H
#define SPSAMPLE_BIND_IO_H

#include <string>
#include <vector>

#include "bind/arrays.h"
#include "gather.h"
#include "parallel.h"
#include "parse.h"
#include "verify.h"

namespace spsample {
namespace bind {

// Returns (bytes uint8 (sum of lengths * itemsize,), status): gather.h.
py::tuple gather_ranges_native(int fd, int64_t base, int64_t itemsize, const I64& starts,
                               const I64& ends, int64_t gap) {
    require(starts.ndim() == 1 && ends.ndim() == 1 && starts.size() == ends.size(),
            "starts and ends must be 1-d of equal length");
    require(itemsize >= 1 && base >= 0 && gap >= 0, "itemsize >= 1, base >= 0, gap >= 0");
    const int64_t n = starts.size();
    const int64_t* s = starts.data();
    const int64_t* e = ends.data();
    int64_t total = 0;
    for (int64_t i = 0; i < n; ++i) {
        require(s[i] >= 0 && e[i] >= s[i] && (i == 0 || s[i] >= e[i - 1]),
                "ranges must be ascending, non-overlapping and non-negative");
        total += e[i] - s[i];
    }
    py::array_t<uint8_t> out(total * itemsize);
    uint8_t* op = out.mutable_data();
    int64_t status = 0;
    {
        py::gil_scoped_release release;
        status = gather_ranges(fd, base, itemsize, s, e, n, gap, op);
    }
    return py::make_tuple(out, status);
}

// Returns (first column id outside [0, num_nodes), first weight not finite or negative, first entry
// not above its predecessor in its row), each -1 when none, over the ranges [starts[i],
// ends[i]) of the entries indices/weights hold from position `base` on; `prev` (or None): the
// column id before `base`. verify.h.
py::tuple check_entries_native(const I64& indptr, int64_t num_nodes, const I64& indices,
                               const py::object& weights, int64_t base, const py::object& prev,
                               const I64& starts, const I64& ends, int num_threads) {
    require(indptr.ndim() == 1 && indptr.size() >= 1 && indices.ndim() == 1,
            "indptr and indices must be 1-d");
    F64 warr;
    const double* w = nullptr;
    if (!weights.is_none()) {
        warr = weights.cast<F64>();
        require(warr.ndim() == 1 && warr.size() == indices.size(), "weights must match indices");
        w = warr.data();
    }
    require(starts.ndim() == 1 && ends.ndim() == 1 && starts.size() == ends.size(),
            "starts and ends must be 1-d of equal length");
    const int64_t m = starts.size(), held = indices.size();
    const int64_t* s = starts.data();
    const int64_t* e = ends.data();
    std::vector<uint8_t> pred(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i) {
        require(base <= s[i] && s[i] <= e[i] && e[i] <= base + held,
                "ranges must lie inside the entries held");
        pred[i] = s[i] > base || !prev.is_none();
    }
    const int64_t before = prev.is_none() ? 0 : prev.cast<int64_t>();
    int64_t first[3] = {-1, -1, -1};
    {
        py::gil_scoped_release release;
        check_ranges(indptr.data(), indptr.size() - 1, num_nodes, indices.data(), w, base,
                     before, s, e, pred.data(), m, resolve_threads(num_threads), first);
    }
    return py::make_tuple(first[0], first[1], first[2]);
}

// Returns (edges (E, 2) int64, E) or (None, -1 - offset of the first refused line); parse.h.
py::tuple parse_edges_native(const py::bytes& text, const std::string& comment,
                             const std::string& delim) {
    require(comment.size() <= 1 && delim.size() <= 1, "comment and delimiter are single bytes");
    char* data = nullptr;
    py::ssize_t len = 0;
    PYBIND11_BYTES_AS_STRING_AND_SIZE(text.ptr(), &data, &len);
    int64_t lines = 1;
    for (py::ssize_t i = 0; i < len; ++i) lines += data[i] == '\n';
    PodBuf<int64_t> out;
    out.resize(static_cast<size_t>(2 * lines));
    int64_t got = 0;
    {
        py::gil_scoped_release release;
        got = parse_edge_lines(data, len, comment.empty() ? 0 : comment[0],
                               delim.empty() ? 0 : delim[0], out.data());
    }
    if (got < 0) return py::make_tuple(py::none(), got);
    out.resize(static_cast<size_t>(2 * got));
    return py::make_tuple(own(std::move(out)).reshape({got, int64_t(2)}), got);
}

}  // namespace bind
}  // namespace spsample

#endif  // SPSAMPLE_BIND_IO_H
