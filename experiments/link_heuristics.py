"""Usage: python experiments/link_heuristics.py FACEBOOK.h5 COLLEGEMSG.h5

Heuristic AUCs on the same splits as fit_link: common neighbours (facebook, 85/5/10 random
split, seed 0) and EdgeBank (CollegeMsg, chronological 70/15/15: a pair seen before scores 1);
one uniform random negative per positive (seeded), ties counted half."""
import sys

import numpy as np
import scipy.sparse as sp

import spsample
from spsample.train.link import split_edges, auc
rng = np.random.default_rng(0)
g = spsample.load(sys.argv[1]).graph
src, dst = g.edge_index()
once = src < dst
src, dst = src[once], dst[once]
parts = split_edges(src, dst, seed=0)
tr = parts["train"]
n = g.num_nodes
A = sp.csr_matrix((np.ones(2 * tr.size), (np.r_[src[tr], dst[tr]], np.r_[dst[tr], src[tr]])),
                  shape=(n, n))
A.data[:] = 1
te = parts["test"]
u, v = src[te], dst[te]
nu, nv = rng.integers(0, n, te.size), rng.integers(0, n, te.size)
cn = lambda a, b: np.asarray(A[a].multiply(A[b]).sum(1)).ravel()
print("facebook common-neighbours test AUC", auc(cn(u, v), cn(nu, nv)))
deg = np.asarray(A.sum(1)).ravel()
print("facebook preferential-attachment test AUC", auc(deg[u] * deg[v], deg[nu] * deg[nv]))
ds = spsample.load(sys.argv[2])
rel = ("node", "to", "node")
indptr, indices, _ = ds.graph.csr(rel)
d = np.repeat(np.arange(indptr.size - 1), np.diff(indptr))
t = ds.graph.edge_time(rel)
parts = split_edges(indices, d, time=t, fractions=(0.7, 0.15, 0.15))
n = ds.graph.num_nodes["node"]
seen = set(zip(indices[parts["train"]].tolist(), d[parts["train"]].tolist())) | set(
    zip(indices[parts["val"]].tolist(), d[parts["val"]].tolist()))
te = parts["test"]
u, v = indices[te], d[te]
nu, nv = rng.integers(0, n, te.size), rng.integers(0, n, te.size)
sc = lambda a, b: np.array([(x, y) in seen or (y, x) in seen for x, y in zip(a, b)], float)
print("CollegeMsg EdgeBank (either direction) test AUC", auc(sc(u, v), sc(nu, nv)))
degc = np.bincount(np.r_[indices[parts['train']], d[parts['train']]], minlength=n).astype(float)
print("CollegeMsg preferential-attachment test AUC", auc(degc[u] * degc[v], degc[nu] * degc[nv]))
