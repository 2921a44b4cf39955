// The codes of a lowered hop, defined once for every side that reads them: the CPU engine
// (rowwise.h, select.h, link.h), the GPU kernels (rowwise.cuh, rules.cuh) and spsample's
// lowering (spsample/native/_codes.py), which takes them from the extension
// (spsample._native_kernels.codes(), built from the X-lists below) instead of copying them.
//
//   SPSAMPLE_FRONTIER_KINDS(X)  which rows a hop reads (FrontierKind)
//   SPSAMPLE_SELECT_RULES(X)    how a row's entries are chosen (SelectRule)
//   SPSAMPLE_STREAM_KEYS(X)     what keys a row's random stream (StreamKey)
//   SPSAMPLE_VALUE_OPS(X)       the instructions of a value program (ValueOp)
//   SPSAMPLE_LINK_MODES(X)      how a link minibatch draws negatives (LinkMode)
//
// Each X(NAME, value, PYTHON_NAME) gives the C++ enumerator, its value and the member name of
// the Python enum. Values are part of nothing persistent (plans live for one call), but the
// three sides must agree, which this header guarantees.
#ifndef SPSAMPLE_DEVICE_CODES_CUH
#define SPSAMPLE_DEVICE_CODES_CUH

#include "hd.cuh"

#define SPSAMPLE_FRONTIER_KINDS(X)                                                         \
    X(F_NEW_NODES, 0, NEW_NODES) /* vertices first reached at hops h'..h'' */              \
    X(F_ALL_NODES, 1, ALL_NODES) /* every vertex so far */                                 \
    X(F_EDGE_SRC, 2, EDGE_SOURCES) /* one row per edge of hop h: its source */             \
    X(F_EDGE_DST, 3, EDGE_DESTINATIONS) /* one row per edge of hop h: its destination */   \
    X(F_ROWS, 4, ROWS) /* given rows, added to the minibatch first if absent */

#define SPSAMPLE_SELECT_RULES(X)                                                           \
    X(S_UNIFORM, 0, UNIFORM)             /* s distinct entries, uniformly */               \
    X(S_UNIFORM_REP, 1, UNIFORM_REP)     /* s entries with replacement */                  \
    X(S_WEIGHTED, 2, WEIGHTED)           /* s distinct entries by value (keys) */          \
    X(S_WEIGHTED_REP, 3, WEIGHTED_REP)   /* s entries by value, with replacement */        \
    X(S_REJECTION, 4, REJECTION)         /* s entries by value under a bound (walks) */    \
    X(S_THRESHOLD, 5, THRESHOLD)         /* entries under per-column variates (LABOR) */   \
    X(S_LAST, 6, LAST)                   /* the last s entries (time-sorted rows) */       \
    X(S_ALIAS, 7, ALIAS)                 /* s distinct entries by the rows' alias tables */ \
    X(S_ALIAS_REP, 8, ALIAS_REP)         /* s entries by the alias tables, with replacement */

#define SPSAMPLE_STREAM_KEYS(X)                                                            \
    X(K_VERTEX, 0, VERTEX) /* the row's vertex */                                          \
    X(K_ROW, 1, ROW)       /* the row's stable id (walks) */

#define SPSAMPLE_VALUE_OPS(X)                                                              \
    X(V_CONST, 0, CONST)         /* push value */                                          \
    X(V_WEIGHT, 1, WEIGHT)       /* push weight of the entry (ctx 0) / looked-up entry */  \
    X(V_COLUMN, 2, COLUMN)       /* push vec[arg][u] */                                    \
    X(V_ROW, 3, ROW)             /* push vec[arg][v] (ctx 0) or vec[arg][t] (ctx 1) */     \
    X(V_EDGE, 4, EDGE)           /* push vec[arg][e] (ctx 0) or vec[arg][e'] (ctx 1) */    \
    X(V_INDICATOR, 5, INDICATOR) /* push u == v (ctx 0) or u == t (ctx 1) ? 1 : 0 */       \
    X(V_FOUND, 6, FOUND)         /* pop x, push (u in row t of the aux graph) ? x : 0 */   \
    X(V_MUL, 7, MUL)                                                                       \
    X(V_ADD, 8, ADD)                                                                       \
    X(V_SQUARE, 9, SQUARE)

#define SPSAMPLE_LINK_MODES(X)                                                             \
    X(LINK_BINARY, 0, BINARY)   /* both ends drawn */                                      \
    X(LINK_TRIPLET, 1, TRIPLET) /* the source kept, the destination drawn */               \
    X(LINK_NONE, 2, NONE)       /* no negatives */

namespace spsample {

#define SPSAMPLE_ENUMERATOR(name, value, py_name) name = value,
enum FrontierKind : int32_t { SPSAMPLE_FRONTIER_KINDS(SPSAMPLE_ENUMERATOR) };
enum SelectRule : int32_t { SPSAMPLE_SELECT_RULES(SPSAMPLE_ENUMERATOR) };
enum StreamKey : int32_t { SPSAMPLE_STREAM_KEYS(SPSAMPLE_ENUMERATOR) };
enum ValueOp : int32_t { SPSAMPLE_VALUE_OPS(SPSAMPLE_ENUMERATOR) };
enum LinkMode : int32_t { SPSAMPLE_LINK_MODES(SPSAMPLE_ENUMERATOR) };
#undef SPSAMPLE_ENUMERATOR

inline constexpr int VALUE_STACK = 32;  // deepest value program the lowering accepts

}  // namespace spsample

#endif  // SPSAMPLE_DEVICE_CODES_CUH
