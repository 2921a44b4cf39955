// The typed arguments of every GPU kernel: one struct per kernel, defined once here from an
// X-list of its fields, read by the kernel as `a.field` (rowwise.cuh, layerwise.cuh).
//
// A launch passes the kernel one pointer to its struct (device memory on a GPU, host memory
// under the emulator, emulate.h). The host side fills it from Python: spsample/gpu/_args.py
// declares the same fields, in the same order, as a NumPy structured dtype, and
// tests/test_gpu_args.py checks that dtype against the layout the extension reports from these
// structs (kernel_arg_layouts(): names, offsetof, sizeof). Every field is 8 bytes -- int64_t,
// double or a pointer (0 = none) -- so a struct has no padding and its size is 8 * fields.
//
//   SPSAMPLE_KERNEL_ARGS(X)   X(kernel, Type, FIELDS) for every kernel; FIELDS(F) lists the
//                             struct's fields as F(type, name)
//
// Shared groups of fields: RULE (a hop's selection rule, rowwise.cuh's RuleArgs), VALUE (its
// value program, ValueCode) and ITEM (a batch of items being deduplicated, ItemArgs).
#ifndef SPSAMPLE_DEVICE_ARGS_CUH
#define SPSAMPLE_DEVICE_ARGS_CUH

#include "hd.cuh"
#include "rules.cuh"

#define SPSAMPLE_RULE_FIELDS(F)                                                            \
    F(int64_t, rule) F(int64_t, fanout) F(const int64_t*, fanout_vec) F(int64_t, hw)       \
    F(int64_t, k0) F(int64_t, k1) F(const int64_t*, batch_ids)

#define SPSAMPLE_VALUE_FIELDS(F)                                                           \
    F(const Instr*, code) F(int64_t, code_size) F(const double* const*, vectors)           \
    F(const int64_t*, aux_indptr) F(const int64_t*, aux_indices)                           \
    F(const double*, aux_weights) F(int64_t, aux_n) F(int64_t, uses_lookup)                \
    F(int64_t, only_weight)

#define SPSAMPLE_ITEM_FIELDS(F)                                                            \
    F(int64_t, I) F(int64_t, k) F(const int64_t*, items) F(const int64_t*, item_off)       \
    F(const int64_t*, tab_off) F(uint64_t*, slots)

// ------------------------------------------------------------------ the row-wise kernels
#define SPSAMPLE_FRONTIER_ARGS(F)                                                          \
    F(int64_t, m) F(int64_t, k) F(int64_t, kind) F(const int64_t*, row_off)                \
    F(const int64_t*, lo) F(const int64_t*, nid) F(const int64_t*, nid_off)                \
    F(const int64_t*, ends) F(const int64_t*, erow) F(const int64_t*, given)               \
    F(int64_t*, fv) F(int64_t*, fl) F(int64_t*, fr) F(int64_t*, fb)

#define SPSAMPLE_EXTENTS_ARGS(F)                                                           \
    F(int64_t, m) SPSAMPLE_RULE_FIELDS(F) F(const int64_t*, indptr)                        \
    F(const int64_t*, indices) F(const int64_t*, fv) F(const int64_t*, fb)                 \
    F(int64_t*, start) F(int64_t*, deg) F(int64_t*, fan) F(int64_t*, bound)                \
    F(int64_t*, set) F(int64_t*, keys) F(int64_t, long_row) F(int64_t*, chunks)

#define SPSAMPLE_SELECT_ARGS(F)                                                            \
    F(int64_t, m) SPSAMPLE_RULE_FIELDS(F) F(int64_t, key_kind) F(const int64_t*, fv)       \
    F(const int64_t*, fl) F(const int64_t*, fr) F(const int64_t*, fb)                      \
    F(const int64_t*, fa) F(const int64_t*, start) F(const int64_t*, deg)                  \
    F(const int64_t*, fan) F(const int64_t*, out_off) F(const int64_t*, set_off)           \
    F(const int64_t*, key_off) F(uint64_t*, set) F(double*, keys)                          \
    F(const int64_t*, indptr) F(const int64_t*, indices) F(const double*, weights)         \
    SPSAMPLE_VALUE_FIELDS(F) F(double, bound) F(int64_t*, dst) F(int64_t*, eid)            \
    F(int64_t*, erow) F(int64_t*, count) F(uint32_t*, err) F(int64_t, long_row)           \
    F(const uint32_t*, alias) F(const double*, alias_share) F(const double*, row_stats)

#define SPSAMPLE_CHUNK_COUNTS_ARGS(F)                                                      \
    F(int64_t, C) F(int64_t, m) F(const int64_t*, chunk_off) SPSAMPLE_RULE_FIELDS(F)       \
    F(const int64_t*, start) F(const int64_t*, deg) F(const int64_t*, fan)                 \
    F(const int64_t*, fb) F(const int64_t*, indices) F(int64_t*, ccount)

#define SPSAMPLE_SELECT_CHUNKS_ARGS(F)                                                     \
    F(int64_t, C) F(int64_t, m) F(const int64_t*, chunk_off) SPSAMPLE_RULE_FIELDS(F)       \
    F(const int64_t*, start) F(const int64_t*, deg) F(const int64_t*, fan)                 \
    F(const int64_t*, fb) F(const int64_t*, indices) F(const int64_t*, fl)                 \
    F(const int64_t*, fr) F(const int64_t*, ccum) F(const int64_t*, out_off)               \
    F(int64_t*, dst) F(int64_t*, eid) F(int64_t*, erow)

#define SPSAMPLE_COMPACT_ARGS(F)                                                           \
    F(int64_t, m) F(const int64_t*, out_off) F(const int64_t*, count)                      \
    F(const int64_t*, new_off) F(const int64_t*, dst) F(const int64_t*, eid)               \
    F(const int64_t*, erow) F(int64_t*, dst2) F(int64_t*, eid2) F(int64_t*, erow2)

#define SPSAMPLE_GATHER_ARGS(F)                                                            \
    F(int64_t, E) F(const int64_t*, eid) F(const int64_t*, indices)                        \
    F(const uint32_t*, indices32) F(int64_t*, nbr)

#define SPSAMPLE_TABLE_NODES_ARGS(F)                                                       \
    F(int64_t, N) F(int64_t, k) F(const int64_t*, nid) F(const int64_t*, nid_off)          \
    F(const int64_t*, tab_off) F(uint64_t*, slots)

#define SPSAMPLE_TABLE_ITEMS_ARGS(F) SPSAMPLE_ITEM_FIELDS(F)

#define SPSAMPLE_FIRST_FLAGS_ARGS(F) SPSAMPLE_ITEM_FIELDS(F) F(int64_t*, flags)

#define SPSAMPLE_ASSIGN_ARGS(F)                                                            \
    SPSAMPLE_ITEM_FIELDS(F) F(const int64_t*, rank) F(const int64_t*, base)                \
    F(int64_t*, local) F(int64_t*, newv)

#define SPSAMPLE_MERGE_NODES_ARGS(F)                                                       \
    F(int64_t, N2) F(int64_t, k) F(const int64_t*, out_off) F(const int64_t*, nid)         \
    F(const int64_t*, nid_off) F(const int64_t*, add) F(const int64_t*, add_off)           \
    F(int64_t*, out)

// ---------------------------------------------------------------- the layer-wise kernels
#define SPSAMPLE_LW_ROWS_ARGS(F)                                                           \
    F(int64_t, N) F(int64_t, k) F(const int64_t*, nid) F(const int64_t*, nid_off)          \
    F(const int64_t*, indptr) F(int64_t*, first) F(int64_t*, deg) F(int64_t*, rbatch)

#define SPSAMPLE_LW_ENTRIES_ARGS(F)                                                        \
    F(int64_t, D) F(int64_t, N) F(const int64_t*, ent_off) F(const int64_t*, first)        \
    F(const int64_t*, rbatch) F(const int64_t*, indices) F(int64_t, n) F(int64_t*, key)    \
    F(int64_t*, eid) F(int64_t*, erow)

#define SPSAMPLE_LW_COLSUM_ARGS(F)                                                         \
    F(int64_t, S) F(const int64_t*, seg_off) F(const int64_t*, order)                      \
    F(const int64_t*, eid) F(const double*, weights) F(double*, psum) F(int64_t*, seg_of)

#define SPSAMPLE_LW_DRAW_ENTRIES_ARGS(F)                                                   \
    F(int64_t, nd) F(const int64_t*, which) F(int64_t, s) F(int64_t, hw) F(int64_t, k0)    \
    F(int64_t, k1) F(const int64_t*, batch_ids) F(const int64_t*, nid_off)                 \
    F(const int64_t*, ent_off) F(const int64_t*, first) F(const int64_t*, indices)         \
    F(int64_t, n) F(uint64_t*, set) F(int64_t, cap) F(int64_t*, chosen)

#define SPSAMPLE_LW_KEYS_ARGS(F)                                                           \
    F(int64_t, M) F(const int64_t*, cand) F(const int64_t*, seg_key)                       \
    F(const double*, psum) F(int64_t, n) F(int64_t, hw) F(int64_t, k0) F(int64_t, k1)      \
    F(const int64_t*, batch_ids) F(int64_t*, bits)

#define SPSAMPLE_LW_FASTGCN_ARGS(F)                                                        \
    F(int64_t, M) F(int64_t, s) F(int64_t, hw) F(int64_t, k0) F(int64_t, k1)               \
    F(const int64_t*, batch_ids) F(const double*, cumulative) F(int64_t, n)                \
    F(int64_t, last_positive) F(double, total) F(int64_t*, keys)

#define SPSAMPLE_LW_HITS_ARGS(F)                                                           \
    F(int64_t, D) F(const int64_t*, key) F(const int64_t*, eid) F(int64_t, n)              \
    F(const double*, weights) F(const int64_t*, tab_off) F(const uint64_t*, slots)         \
    F(int64_t*, hit) F(int64_t*, lu)

#define SPSAMPLE_LW_EDGES_ARGS(F)                                                          \
    F(int64_t, D) F(const int64_t*, hit_off) F(const int64_t*, erow) F(const int64_t*, eid) \
    F(const int64_t*, key) F(const int64_t*, lu) F(const int64_t*, rbatch)                 \
    F(const int64_t*, nid_off) F(int64_t, n) F(const double*, weights) F(int64_t, fastgcn) \
    F(const double*, q) F(const double*, psum) F(const int64_t*, seg_of) F(int64_t*, dst)  \
    F(int64_t*, src) F(int64_t*, edge) F(double*, value) F(int64_t*, vrow)

#define SPSAMPLE_LW_ROW_SUMS_ARGS(F)                                                       \
    F(int64_t, N) F(const int64_t*, row_edges) F(const double*, value) F(double*, total)

#define SPSAMPLE_LW_NORMALISE_ARGS(F)                                                      \
    F(int64_t, E) F(const int64_t*, vrow) F(const double*, total) F(double*, value)

// X(kernel, Type, FIELDS): the CUDA entry of `kernel` is spsample_k_<kernel>(const Type*).
#define SPSAMPLE_ROWWISE_KERNELS(X)                                                        \
    X(frontier, FrontierArgs, SPSAMPLE_FRONTIER_ARGS)                                      \
    X(extents, ExtentsArgs, SPSAMPLE_EXTENTS_ARGS)                                         \
    X(select, SelectArgs, SPSAMPLE_SELECT_ARGS)                                            \
    X(chunk_counts, ChunkCountsArgs, SPSAMPLE_CHUNK_COUNTS_ARGS)                           \
    X(select_chunks, SelectChunksArgs, SPSAMPLE_SELECT_CHUNKS_ARGS)                        \
    X(compact, CompactArgs, SPSAMPLE_COMPACT_ARGS)                                         \
    X(gather, GatherArgs, SPSAMPLE_GATHER_ARGS)                                            \
    X(table_nodes, TableNodesArgs, SPSAMPLE_TABLE_NODES_ARGS)                              \
    X(table_items, TableItemsArgs, SPSAMPLE_TABLE_ITEMS_ARGS)                              \
    X(first_flags, FirstFlagsArgs, SPSAMPLE_FIRST_FLAGS_ARGS)                              \
    X(assign, AssignArgs, SPSAMPLE_ASSIGN_ARGS)                                            \
    X(merge_nodes, MergeNodesArgs, SPSAMPLE_MERGE_NODES_ARGS)

#define SPSAMPLE_LAYERWISE_KERNELS(X)                                                      \
    X(lw_rows, LwRowsArgs, SPSAMPLE_LW_ROWS_ARGS)                                          \
    X(lw_entries, LwEntriesArgs, SPSAMPLE_LW_ENTRIES_ARGS)                                 \
    X(lw_colsum, LwColsumArgs, SPSAMPLE_LW_COLSUM_ARGS)                                    \
    X(lw_draw_entries, LwDrawEntriesArgs, SPSAMPLE_LW_DRAW_ENTRIES_ARGS)                   \
    X(lw_keys, LwKeysArgs, SPSAMPLE_LW_KEYS_ARGS)                                          \
    X(lw_fastgcn, LwFastgcnArgs, SPSAMPLE_LW_FASTGCN_ARGS)                                 \
    X(lw_hits, LwHitsArgs, SPSAMPLE_LW_HITS_ARGS)                                          \
    X(lw_edges, LwEdgesArgs, SPSAMPLE_LW_EDGES_ARGS)                                       \
    X(lw_row_sums, LwRowSumsArgs, SPSAMPLE_LW_ROW_SUMS_ARGS)                               \
    X(lw_normalise, LwNormaliseArgs, SPSAMPLE_LW_NORMALISE_ARGS)

#define SPSAMPLE_KERNEL_ARGS(X) SPSAMPLE_ROWWISE_KERNELS(X) SPSAMPLE_LAYERWISE_KERNELS(X)

namespace spsample {
namespace gpu {

#define SPSAMPLE_ARG_FIELD(type, name) type name;
#define SPSAMPLE_ARG_STRUCT(kernel, Type, FIELDS) \
    struct Type {                                 \
        FIELDS(SPSAMPLE_ARG_FIELD)                \
    };
SPSAMPLE_KERNEL_ARGS(SPSAMPLE_ARG_STRUCT)
#undef SPSAMPLE_ARG_STRUCT
#undef SPSAMPLE_ARG_FIELD

// Every field is 8 bytes: the structs have no padding (spsample/gpu/_args.py relies on it).
#define SPSAMPLE_ARG_COUNT(type, name) +1
#define SPSAMPLE_ARG_SIZE_CHECK(kernel, Type, FIELDS)                        \
    static_assert(sizeof(Type) == 8 * (0 FIELDS(SPSAMPLE_ARG_COUNT)),        \
                  "kernel arguments must be 8-byte fields without padding");
SPSAMPLE_KERNEL_ARGS(SPSAMPLE_ARG_SIZE_CHECK)
#undef SPSAMPLE_ARG_SIZE_CHECK
#undef SPSAMPLE_ARG_COUNT

}  // namespace gpu
}  // namespace spsample

#endif  // SPSAMPLE_DEVICE_ARGS_CUH
