"""Small valid dataset files, and ways to run a load in a child process under a memory limit.

Used by the tests of hostile files (``test_untrusted_files.py``, ``test_fuzz_files.py``):
every file here loads correctly as written, so any failure comes from the tampering a test
applies afterwards.
"""

import collections
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import spsample

#: The checkout whose spsample the tests import (the child processes import the same one).
REPO = Path(spsample.__file__).resolve().parents[1]

#: Planetoid toy: 6 known nodes (0..5), test nodes 8, 6, 9; node 7 a gap; 4 features, 3 classes.
ALLX = np.arange(24, dtype=np.float32).reshape(6, 4) + 1
TX = -np.arange(12, dtype=np.float32).reshape(3, 4) - 1
TEST_INDEX = [8, 6, 9]


def onehot(classes, k=3):
    out = np.zeros((len(classes), k), dtype=np.int32)
    for i, c in enumerate(classes):
        out[i, c] = 1
    return out


def planetoid_parts():
    """The toy's pickled parts (``ind.toy.<part>``), before any tampering."""
    graph = collections.defaultdict(list)
    graph.update({0: [1, 2], 1: [0], 3: [3], 9: [4], 5: []})
    return {"x": sp.csr_matrix(ALLX[:2]), "y": onehot([2, 0]),
            "allx": sp.csr_matrix(ALLX), "ally": onehot([2, 0, 1, 1, 2, 0]),
            "tx": sp.csr_matrix(TX), "ty": onehot([1, 2, 0]), "graph": graph}


def write_planetoid(directory, parts=None, test_index=TEST_INDEX):
    """Write ``ind.toy.*`` (protocol-2 pickles, as Planetoid's) into ``directory``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for part, value in (planetoid_parts() if parts is None else parts).items():
        with open(directory / f"ind.toy.{part}", "wb") as f:
            pickle.dump(value, f, protocol=2)
    (directory / "ind.toy.test.index").write_text("".join(f"{i}\n" for i in test_index))
    return directory


def tampered_csr(matrix, **state):
    """A copy of ``matrix`` whose pickled state has ``state`` (e.g. ``indices=...``) set
    directly, as a crafted pickle would: SciPy checks nothing."""
    out = matrix.copy()
    out.__dict__.update(state)
    return out


def write_gnnbench(path):
    """A gnn-benchmark npz: 4 nodes, directed A (0->1, 0->2, 2->3, 3->3), 3 features."""
    adj = sp.csr_matrix(np.array([[0, 1, 1, 0], [0, 0, 0, 0], [0, 0, 0, 1], [0, 0, 0, 1]],
                                 dtype=np.float32))
    attr = sp.csr_matrix(np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [1, 1, 0]],
                                  dtype=np.float32))
    np.savez(path, adj_data=adj.data, adj_indices=adj.indices, adj_indptr=adj.indptr,
             adj_shape=np.array(adj.shape), attr_data=attr.data, attr_indices=attr.indices,
             attr_indptr=attr.indptr, attr_shape=np.array(attr.shape),
             labels=np.array([0, 1, 1, 0]))
    return path


def write_csr_npz(path):
    """A bare CSR npz of the 5-cycle with weights."""
    n = 5
    indptr = np.arange(n + 1, dtype=np.int64)
    indices = (np.arange(n) + 1) % n
    np.savez(path, indptr=indptr, indices=indices.astype(np.int32),
             data=np.arange(1, n + 1, dtype=np.float64))
    return path


def write_hdf5(path, *, compression="gzip"):
    """An spsample HDF5 file: a 40-node random graph, float32 features, labels, one split."""
    rng = np.random.default_rng(7)
    n = 40
    g = spsample.Graph.from_edge_index(rng.integers(0, n, 160), rng.integers(0, n, 160),
                                       num_nodes=n)
    ds = spsample.Dataset(g, features=rng.random((n, 6)).astype(np.float32),
                          labels=rng.integers(0, 3, n),
                          splits={"default": {"train": np.arange(20), "val": np.arange(20, 30),
                                              "test": np.arange(30, 40)}}, name="toy")
    spsample.save(ds, path, compression=compression)
    return path


#: The child's program: load each (kind, path) pair of argv, print one verdict line per file.
_CHILD = textwrap.dedent("""
    import sys
    import numpy as np
    import spsample
    from spsample import io

    def load(kind, path):
        if kind == "planetoid":
            return io.from_planetoid(path, verify=False)
        if kind == "gnnbench":
            return io.from_npz_gnnbench(path)
        if kind == "csr_npz":
            return io.from_csr_npz(path)
        if kind == "hdf5":
            return io.load(path)
        if kind == "edge_list":
            return io.from_edge_list(path)
        if kind == "csr":
            with np.load(path) as z:
                return spsample.Graph.from_csr(z["indptr"], z["indices"])
        if kind == "temporal":
            return io.from_temporal_edges(path)
        if kind == "kg":
            return io.from_kg(path)
        if kind == "heco":
            return io.from_heco(path)
        if kind == "partition":      # a .perm.npz against the dataset beside it
            from pathlib import Path
            from spsample.distributed._partition import load_partition
            base = spsample.load(Path(path).parent / "perm_base.h5")
            return load_partition(path, base.graph)
        raise SystemExit("unknown kind " + kind)

    def use_hetero(graph):  # node-wise per relation; temporally too, when it has times
        for t in graph.node_types:
            seeds = np.arange(min(graph.num_nodes[t], 6))
            if seeds.size == 0:
                continue
            spsample.sample(graph, (t, seeds), sampler=spsample.NodeWise([3, 2]),
                            batch_size=3)
            if graph.is_temporal:
                times = [graph.edge_time(r) for r in graph.relations] + \
                    [graph.node_time(u) for u in graph.node_types]
                times = [x for x in times if x is not None and x.size]
                cut = np.full(seeds.size, times[0][times[0].size // 2]) if times else \
                    np.zeros(seeds.size)
                for strategy in ("uniform", "last"):
                    spsample.sample(graph, (t, seeds), batch_size=3, seed_time=cut,
                                    sampler=spsample.NodeWise([3, 2],
                                                              temporal_strategy=strategy))

    def use(out):  # sample what loaded (native kernels included), touch its features
        if isinstance(out, np.ndarray):          # a permutation
            out.sum()
            return
        graph = getattr(out, "graph", out)
        if hasattr(graph, "relations"):
            use_hetero(graph)
            for f in getattr(out, "features", {}).values():
                f.sum()
            return
        seeds = np.arange(min(graph.num_nodes, 6))
        for sampler in (spsample.NodeWise([3, 2]), spsample.LADIES([4])):
            spsample.sample(graph, seeds, sampler=sampler, batch_size=3)
        features = getattr(out, "features", None)
        if features is not None:
            features.sum()

    sample, args = sys.argv[1] == "sample", sys.argv[2:]
    for i, (kind, path) in enumerate(zip(args[::2], args[1::2])):
        print("START", i, flush=True)
        try:
            out = load(kind, path)
            if sample:
                use(out)
            print("LOADED", i, getattr(out, "num_nodes", None) if not
                  isinstance(out, np.ndarray) else out.size, flush=True)
        except spsample.SpsampleError as exc:
            text = str(exc)[:300].replace("\\n", " ")
            print("TYPED", i, type(exc).__name__, text, flush=True)
""")


def load_in_child(items, *, memory_mib=1536, timeout=120, sample=False):
    """Load each ``(kind, path)`` of ``items`` in one child Python under ``ulimit -v``
    (``sample``: then sample what loaded, with the native kernels when built).

    Returns ``(verdicts, returncode, stderr)``: ``verdicts[i]`` is ``"LOADED ..."`` or
    ``"TYPED <error class> <message>"`` for the files the child finished. A crash shows as a
    negative return code (the file after the last verdict is the culprit), any other
    exception, a huge allocation included, as a traceback on stderr and a non-zero code.
    """
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(REPO)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]),
        OMP_NUM_THREADS="1", SPSAMPLE_THREADS="1", OPENBLAS_NUM_THREADS="1")
    limit = memory_mib * 2**20

    def set_limit():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    argv = [str(part) for item in items for part in item]
    mode = "sample" if sample else "load"
    proc = subprocess.run([sys.executable, "-c", _CHILD, mode, *argv], env=env,
                          capture_output=True,
                          text=True, timeout=timeout, preexec_fn=set_limit)
    verdicts = {}
    for line in proc.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word in ("LOADED", "TYPED"):
            index, _, text = rest.partition(" ")
            verdicts[int(index)] = f"{word} {text}"
    return verdicts, proc.returncode, proc.stderr


# ---------------------------------------------------------------------- heterogeneous sources
def write_heco(directory):
    """A HeCo-style folder ``acm``: 4 papers, 3 authors, 2 subjects; ``pa.txt``, ``ps.txt``,
    paper features (CSR npz), author features (COO npz), labels, one split of size 20::

        paper 0 - author 0, 1;  paper 1 - author 1;  paper 2 - author 2;  paper 3 - author 0
        papers 0, 1 - subject 0;  papers 2, 3 - subject 1
    """
    directory = Path(directory) / "acm"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "pa.txt").write_text("0\t0\n0\t1\n1\t1\n2\t2\n3\t0\n")
    (directory / "ps.txt").write_text("0\t0\n1\t0\n2\t1\n3\t1\n")
    sp.save_npz(directory / "p_feat.npz", sp.csr_matrix(np.eye(4, 5, dtype=np.float64)))
    sp.save_npz(directory / "a_feat.npz", sp.coo_matrix(np.eye(3, 5, dtype=np.float64)))
    np.save(directory / "labels.npy", np.array([0.0, 1.0, 2.0, 1.0]))
    for part, ids in (("train", [0, 1]), ("val", [2]), ("test", [3])):
        np.save(directory / f"{part}_20.npy", np.array(ids, dtype=np.int64))
    return directory


KG_TRIPLES = {"train": "a\tr\tb\nb\tr\tc\nc\ts\ta\nd\ts\tb\n", "val": "a\ts\tc\n",
              "test": "b\tr\td\n"}


def write_kg(path, texts=None):
    """A ConvE-style ``.tar.gz`` of ``train.txt``, ``valid.txt``, ``test.txt`` (bytes or str
    per part; default :data:`KG_TRIPLES`: entities a-d, relations r and s)."""
    import io
    import tarfile

    names = {"train": "train.txt", "val": "valid.txt", "test": "test.txt"}
    with tarfile.open(path, "w:gz") as tar:
        for part, text in (KG_TRIPLES if texts is None else texts).items():
            data = text.encode() if isinstance(text, str) else text
            info = tarfile.TarInfo(names[part])
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return Path(path)


def write_hetero_hdf5(path, *, compression="gzip"):
    """An spsample heterogeneous HDF5 file: authors and papers with integer edge times,
    features, labels, a node split and an edge split (every group the layout has)."""
    rng = np.random.default_rng(11)
    writes, cites = ("author", "writes", "paper"), ("paper", "cites", "paper")
    edges = {writes: (rng.integers(0, 8, 30), rng.integers(0, 12, 30)),
             cites: (rng.integers(0, 12, 40), rng.integers(0, 12, 40))}
    g = spsample.HeteroGraph.from_edge_index(
        edges, num_nodes={"author": 8, "paper": 12},
        weights={cites: rng.random(40) + 0.1},
        edge_time={writes: 2**60 + rng.integers(0, 50, 30), cites: rng.random(40) * 50},
        node_time={"paper": rng.integers(0, 50, 12)})
    ds = spsample.io.HeteroDataset(
        g, features={"paper": rng.random((12, 3)).astype(np.float32),
                     "author": sp.csr_matrix(np.eye(8, 4, dtype=np.float32))},
        labels={"paper": rng.integers(0, 3, 12)}, target_type="paper",
        splits={"a": {"train": np.arange(6), "val": np.arange(6, 9), "test": np.arange(9, 12)}},
        edge_splits={"test": {cites: np.array([[0, 1], [2, 3]])}}, name="hetero")
    spsample.save(ds, path, compression=compression)
    return path


def write_temporal(path):
    """A SNAP temporal edge list (``SRC DST UNIXTS``, ids from 1)."""
    rng = np.random.default_rng(5)
    t = 1082040961 + np.cumsum(rng.integers(0, 1000, 60))
    src, dst = rng.integers(1, 20, 60), rng.integers(1, 20, 60)
    Path(path).write_text("".join(f"{a} {b} {c}\n" for a, b, c in zip(src, dst, t)))
    return Path(path)
