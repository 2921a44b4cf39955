// spsample._native_kernels: the pybind11 module, bindings only. What each binding does lives in
// a header named by its job:
//
//   bind/arrays.h    NumPy buffers in and out, argument checks, a bulk's seeds
//   bind/pooled.h    pooled output blocks handed to NumPy
//   bind/flatten.h   per-minibatch outputs flattened into one set of arrays per bulk
//   bind/decode.h    a lowered row-wise plan decoded into the engine's specs
//   bind/windows.h   windows of a memory-mapped graph (windowed hops, windowed requests)
//   bind/samplers.h  the sampling entry points (row-wise, requests, layer-wise)
//   bind/bulk_ops.h  relabelling, link minibatches, typed grouping, minibatch edges
//   bind/io.h        file ranges, entry checks, edge-list parsing
//   bind/hooks.h     settings, test hooks, host emulation of the GPU kernels
//   parallel.h       OpenMP over minibatches
//
// No torch; the only global state is the pool of recycled output blocks (BlockPool,
// mutex-protected). Every argument is checked by spsample.native before it gets here; the
// bindings re-check the cheap shape invariants and raise ValueError rather than read out of
// bounds. The GIL is released while the kernels run.
//
// The codes of a lowered plan (device/codes.cuh) are exported as codes(): the Python lowering
// reads them from here instead of copying them.
#include "bind/arrays.h"
#include "bind/bulk_ops.h"
#include "bind/hooks.h"
#include "bind/io.h"
#include "bind/samplers.h"
#include "device/codes.cuh"

using namespace spsample;
using namespace spsample::bind;

namespace {

// {"frontier": {...}, "select": {...}, "key": {...}, "value": {...}, "link": {...},
//  "value_stack": 32, "rule_constants": {...}}: each X-list of device/codes.cuh as {Python
// name: value}, and the selection rules' constants (device/rules.cuh).
py::dict codes() {
    py::dict out;
    py::dict d;
#define SPSAMPLE_CODE(name, value, py_name) d[#py_name] = static_cast<int>(value);
#define SPSAMPLE_EXPORT(key, LIST) \
    d = py::dict();                \
    LIST(SPSAMPLE_CODE)            \
    out[key] = d;
    SPSAMPLE_EXPORT("frontier", SPSAMPLE_FRONTIER_KINDS)
    SPSAMPLE_EXPORT("select", SPSAMPLE_SELECT_RULES)
    SPSAMPLE_EXPORT("key", SPSAMPLE_STREAM_KEYS)
    SPSAMPLE_EXPORT("value", SPSAMPLE_VALUE_OPS)
    SPSAMPLE_EXPORT("link", SPSAMPLE_LINK_MODES)
#undef SPSAMPLE_EXPORT
#undef SPSAMPLE_CODE
    out["value_stack"] = VALUE_STACK;
    py::dict rules;  // the rules' constants that spsample.engine._lazy defines again
    rules["REJECTION_ATTEMPTS"] = REJECTION_ATTEMPTS;
    rules["ALIAS_ATTEMPTS"] = ALIAS_ATTEMPTS;
    rules["ALIAS_SHARE_MAX"] = ALIAS_SHARE_MAX;
    out["rule_constants"] = rules;
    return out;
}

}  // namespace

PYBIND11_MODULE(_native_kernels, m) {
    m.doc() = "spsample native kernels (the lowered sampling engine); use through spsample.native";
    m.def("codes", &codes);
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const BudgetExceeded& e) {
            PyErr_SetString(PyExc_MemoryError, e.what());
        } catch (const BoundExceeded& e) {
            PyErr_SetString(PyExc_ArithmeticError, e.what());
        } catch (const AliasOverflow& e) {
            PyErr_SetString(PyExc_OverflowError, e.what());
        }
    });
    m.def("run_rowwise", &run_rowwise, py::arg("graphs"), py::arg("seeds"), py::arg("sizes"),
          py::arg("batch_ids"), py::arg("hops"), py::arg("f64_vectors"), py::arg("i64_vectors"),
          py::arg("k0"), py::arg("k1"), py::arg("epoch"), py::arg("budget"), py::arg("num_threads"),
          py::arg("minibatch_major") = false);
    m.def("layerwise_bulk", &layerwise_bulk, py::arg("indptr"), py::arg("indices"), py::arg("indices32"),
          py::arg("internal_of"), py::arg("vertex_of"),
          py::arg("weights"),
          py::arg("seeds"), py::arg("sizes"), py::arg("batch_ids"), py::arg("fanouts"), py::arg("k0"),
          py::arg("k1"), py::arg("epoch"), py::arg("q_global"), py::arg("cumulative"),
          py::arg("budget"), py::arg("num_threads"));
    m.def("philox_words", &philox_words);
    m.def("row_words", &row_words, py::arg("vertex"), py::arg("hw"), py::arg("bid"), py::arg("k0"),
          py::arg("k1"), py::arg("count"), py::arg("path") = "auto");
    m.def("column_words", &column_words_hook, py::arg("u"), py::arg("hw"), py::arg("bid"), py::arg("k0"),
          py::arg("k1"), py::arg("path"));
#ifdef SPSAMPLE_LW_PROFILE
    m.def("lw_profile", []() {  // per-phase seconds of layerwise_minibatch (profiling builds only)
        std::vector<double> v(std::begin(lw_prof), std::end(lw_prof));
        std::fill(std::begin(lw_prof), std::end(lw_prof), 0.0);
        return v;
    });
#endif
#ifdef SPSAMPLE_NW_PROFILE
    m.def("nw_profile", []() {  // per-phase CPU seconds of rowwise_minibatch (profiling builds)
        std::vector<double> v(std::begin(nw_prof), std::end(nw_prof));
        std::fill(std::begin(nw_prof), std::end(nw_prof), 0.0);
        return v;
    });
#endif
    m.def("threshold_limit", &threshold_limit, py::arg("d"), py::arg("s"));  // LABOR (tests)
    m.def("alias_tables", &alias_tables_native, py::arg("indptr"), py::arg("weights"),
          py::arg("num_threads"));
    m.def("det_log", &det_log_array);
    m.def("emulate", &emulate_kernel, py::arg("name"), py::arg("grid"), py::arg("block"),
          py::arg("args"), py::arg("threads"), py::arg("order_seed"));
    m.def("emulated_kernels", &emulated_kernel_names);
    m.def("kernel_arg_layouts", &kernel_arg_layouts);
    m.def("set_pool_limit", &set_pool_limit, py::arg("bytes"));
    m.def("pool_stats", &pool_stats);
    m.def("max_threads", &max_threads);
    m.def("last_timings", []() { return py::make_tuple(last_phase_seconds[0], last_phase_seconds[1]); });
    m.def("have_openmp", &have_openmp);
    m.def("select_requests", &select_requests, py::arg("graph"), py::arg("hop"), py::arg("f64_vectors"),
          py::arg("i64_vectors"), py::arg("n_vertices"), py::arg("vertex"), py::arg("row"), py::arg("keys"),
          py::arg("batch"), py::arg("hop_word"), py::arg("k0"), py::arg("k1"), py::arg("budget_bytes"),
          py::arg("num_threads"), py::arg("windows") = py::none(), py::arg("times") = py::none());
    m.def("insert_bulk", &insert_bulk_native, py::arg("known_off"), py::arg("known"),
          py::arg("cand_off"), py::arg("cand"), py::arg("num_threads"));
    m.def("lookup_bulk", &lookup_bulk_native, py::arg("known_off"), py::arg("known"),
          py::arg("cand_off"), py::arg("cand"), py::arg("num_threads"));
    m.def("link_bulk", &link_bulk_native, py::arg("pos_off"), py::arg("pos"),
          py::arg("src_ids"), py::arg("dst_ids"), py::arg("neg_off"), py::arg("batch_ids"),
          py::arg("mode"), py::arg("ratio"), py::arg("pickers"), py::arg("k0"), py::arg("k1"),
          py::arg("hop_word"), py::arg("block"), py::arg("max_attempts"), py::arg("off_src"),
          py::arg("off_dst"), py::arg("dedup"), py::arg("num_threads"));
    m.def("split_typed", &split_typed_native, py::arg("n_id"), py::arg("node_off"),
          py::arg("counts"), py::arg("step_hop"), py::arg("type_off"), py::arg("node_batch"),
          py::arg("dst"), py::arg("src"), py::arg("edge_off"), py::arg("num_hops"),
          py::arg("num_threads"));
    m.def("minibatch_edges", &minibatch_edges_native, py::arg("dst"), py::arg("src"),
          py::arg("eid"), py::arg("offsets"), py::arg("exclude"), py::arg("num_threads"));
    m.def("gather_ranges", &gather_ranges_native, py::arg("fd"), py::arg("base"),
          py::arg("itemsize"), py::arg("starts"), py::arg("ends"), py::arg("gap"));
    m.def("parse_edges", &parse_edges_native, py::arg("text"), py::arg("comment"),
          py::arg("delimiter"));
    m.def("run_rowwise_windowed", &run_rowwise_windowed, py::arg("graphs"), py::arg("seeds"),
          py::arg("sizes"), py::arg("batch_ids"), py::arg("hops"), py::arg("f64_vectors"),
          py::arg("i64_vectors"), py::arg("k0"), py::arg("k1"), py::arg("epoch"),
          py::arg("budget"), py::arg("num_threads"), py::arg("span"), py::arg("map"),
          py::arg("block"));
    m.def("check_entries", &check_entries_native, py::arg("indptr"), py::arg("num_nodes"),
          py::arg("indices"),
          py::arg("weights"), py::arg("base"), py::arg("prev"), py::arg("starts"),
          py::arg("ends"), py::arg("num_threads"));
}
