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
        raise SystemExit("unknown kind " + kind)

    def use(out):  # sample what loaded (native kernels included), touch its features
        graph = getattr(out, "graph", out)
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
            print("LOADED", i, getattr(out, "num_nodes", None), flush=True)
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
