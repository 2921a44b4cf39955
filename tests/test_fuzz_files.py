"""Seeded, bounded fuzzing of every file reader (issue 17, "done means").

Valid Planetoid pickles, gnn-benchmark and CSR npz archives, spsample HDF5 files, CSR arrays
and edge lists are mutated (bit flips, truncation, changed indices and pointers, declared
sizes far beyond the data), then loaded in child processes under ``ulimit -v``. Every load
must end in a correct dataset or a typed :class:`spsample.SpsampleError`: never a crash, an
untyped exception or an allocation beyond the limit. A dataset that loads is then sampled
(native kernels included), so whatever the checks let through is safe to use.

``SPSAMPLE_FUZZ_CASES`` (default 24) sets the mutations per base file and
``SPSAMPLE_FUZZ_SEED`` the seed (default fixed, so a failure names a file that reproduces it);
raise both for a longer hunt.
"""

import os

import h5py
import numpy as np
import pytest

import crafted

CASES = int(os.environ.get("SPSAMPLE_FUZZ_CASES", "24"))
SEED = int(os.environ.get("SPSAMPLE_FUZZ_SEED", "20261123"))
MEMORY_MIB = 2048
#: Values an index or a size is replaced with: off by one, negative, huge, beyond int32.
EVIL = (-1, -(2**31), 2**31, 2**31 - 1, 2**32, 2**40, 2**62, 7, 0)


# ---------------------------------------------------------------------- byte-level mutations
def flip_bits(data, rng, count):
    data = bytearray(data)
    for pos in rng.integers(0, len(data) * 8, count):
        data[pos // 8] ^= 1 << int(pos % 8)
    return bytes(data)


def truncate(data, rng):
    return data[: int(rng.integers(0, len(data)))]


def byte_mutants(path, rng, prefix):
    """Bit-flipped and truncated copies of ``path`` (a file), written beside it."""
    data = path.read_bytes()
    out = []
    for i in range(CASES):
        mutated = truncate(data, rng) if i % 3 == 0 else flip_bits(data, rng, 1 + i % 8)
        target = path.with_name(f"{prefix}{i}{''.join(path.suffixes)}")
        target.write_bytes(mutated)
        out.append(target)
    return out


# ---------------------------------------------------------------------- structural mutations
def mutate_array(arr, rng):
    """A copy of ``arr`` with one element, or its length, changed."""
    arr = np.array(arr)
    choice = int(rng.integers(0, 4))
    if choice == 0 and arr.size:
        flat = arr.reshape(-1).astype(np.int64)
        flat[int(rng.integers(0, flat.size))] = EVIL[int(rng.integers(0, len(EVIL)))]
        return flat.reshape(arr.shape)
    if choice == 1 and arr.size:
        return arr[: int(rng.integers(0, arr.size))]
    if choice == 2 and arr.size > 1:
        return arr[::-1].copy()
    return np.concatenate([arr.reshape(-1), arr.reshape(-1)[:3]])


def planetoid_mutants(root, rng):
    """Planetoid folders with a tampered CSR part, shape, graph dict or test index, and
    byte-level mutants of single files."""
    out = []
    for i in range(CASES):
        parts = crafted.planetoid_parts()
        part = ("x", "tx", "allx")[i % 3]
        key = ("indices", "indptr", "data", "_shape")[(i // 3) % 4]
        state = parts[part].__dict__
        if key == "_shape":
            rows, cols = state["_shape"]
            state["_shape"] = (rows, EVIL[i % len(EVIL)]) if i % 2 else (EVIL[i % len(EVIL)],
                                                                          cols)
        else:
            state[key] = mutate_array(state[key], rng)
        test_index = crafted.TEST_INDEX
        if i % 5 == 4:
            test_index = [8, 6, int(rng.integers(10, 2**62))]
        if i % 7 == 6:
            shared = list(range(10)) * 40
            parts["graph"] = {k: shared for k in range(10)}
        out.append(crafted.write_planetoid(root / f"planetoid{i}", parts, test_index))
    base = crafted.write_planetoid(root / "planetoid_base")
    for i, name in enumerate(("x", "tx", "allx", "graph", "ty")):
        for j, mutant in enumerate(byte_mutants(base / f"ind.toy.{name}", rng, f"m{name}")[:4]):
            folder = crafted.write_planetoid(root / f"planetoid_bytes{i}_{j}")
            (folder / f"ind.toy.{name}").write_bytes(mutant.read_bytes())
            out.append(folder)
    return out


def npz_mutants(root, rng, writer, prefix):
    base = writer(root / f"{prefix}_base.npz")
    out = byte_mutants(base, rng, f"{prefix}_bytes")
    with np.load(base) as z:
        arrays = dict(z)
    names = sorted(arrays)
    for i in range(CASES):
        changed = dict(arrays)
        name = names[i % len(names)]
        changed[name] = mutate_array(arrays[name], rng)
        if i % 4 == 3:                                  # a declared size far beyond the data
            for key in [k for k in names if k.endswith("shape")]:
                changed[key] = np.array([EVIL[i % len(EVIL)]] * 2)
        target = root / f"{prefix}{i}.npz"
        np.savez(target, **changed)
        out.append(target)
    return out


def csr_array_mutants(root, rng):
    """``indptr``/``indices`` pairs for ``Graph.from_csr``, most of them inconsistent."""
    g_indptr = np.array([0, 2, 3, 5, 5, 6], dtype=np.int64)
    g_indices = np.array([1, 2, 0, 1, 4, 3], dtype=np.int64)
    out = []
    for i in range(CASES):
        indptr, indices = g_indptr.copy(), g_indices.copy()
        if i % 2:
            indptr = mutate_array(indptr, rng)
        else:
            indices = mutate_array(indices, rng)
        if i % 5 == 0:
            indices = indices.astype(np.float64)
        target = root / f"csr{i}.npz"
        np.savez(target, indptr=indptr, indices=indices)
        out.append(target)
    return out


def hdf5_mutants(root, rng, compression):
    prefix = f"h5{compression or 'raw'}"
    base = crafted.write_hdf5(root / f"{prefix}_base.h5", compression=compression)
    out = byte_mutants(base, rng, f"{prefix}_bytes")
    edits = (_h5_value, _h5_shape, _h5_attr, _h5_declared, _h5_dtype)
    for i in range(CASES):
        target = root / f"{prefix}{i}.h5"
        target.write_bytes(base.read_bytes())
        with h5py.File(target, "a") as f:
            edits[i % len(edits)](f, rng, i)
        out.append(target)
    return out


def _h5_value(f, rng, i):
    name = ("graph/indices", "graph/indptr", "labels", "splits/default/train")[i % 4]
    f[name][int(rng.integers(0, f[name].shape[0]))] = EVIL[i % len(EVIL)]


def _h5_shape(f, rng, i):
    name = ("graph/indices", "graph/indptr", "features", "labels")[i % 4]
    data = mutate_array(f[name][()], rng)
    del f[name]
    f[name] = data


def _h5_attr(f, rng, i):
    key = ("num_nodes", "version", "name", "format")[i % 4]
    f.attrs[key] = (EVIL[i % len(EVIL)], "x", np.arange(3), b"\xff")[int(rng.integers(0, 4))]


def _h5_declared(f, rng, i):
    name = ("graph/indices", "features", "labels")[i % 3]
    shape = f[name].shape
    del f[name]
    big = (2**31,) + shape[1:] if i % 2 else (2**20,) + shape[1:]
    f.create_dataset(name, shape=big, dtype=np.int64 if name != "features" else np.float32,
                     chunks=(1024,) + shape[1:] if i % 2 else None)


def _h5_dtype(f, rng, i):
    name = ("graph/indices", "features", "labels")[i % 3]
    shape = f[name].shape
    del f[name]
    f[name] = np.full(shape, b"7", dtype="S3") if i % 2 else np.zeros(shape, dtype=np.float64)


def edge_list_mutants(root, rng):
    out = []
    for i in range(CASES):
        lines = [f"{int(a)} {int(b)}" for a, b in rng.integers(0, 50, (30, 2))]
        j = int(rng.integers(0, len(lines)))
        lines[j] = (f"0 {EVIL[i % len(EVIL)]}", "1,2", "x y", "3", "4 5 6 7", "")[i % 6]
        target = root / f"edges{i}.txt"
        target.write_text("\n".join(lines) + "\n")
        out.append(target)
    return out


# ---------------------------------------------------------------------- the test
def all_cases(root):
    rng = np.random.default_rng(SEED)
    cases = [("planetoid", p) for p in planetoid_mutants(root, rng)]
    cases += [("gnnbench", p) for p in npz_mutants(root, rng, crafted.write_gnnbench, "gnn")]
    cases += [("csr_npz", p) for p in npz_mutants(root, rng, crafted.write_csr_npz, "csrnpz")]
    cases += [("csr", p) for p in csr_array_mutants(root, rng)]
    for compression in ("gzip", None):
        cases += [("hdf5", p) for p in hdf5_mutants(root, rng, compression)]
    cases += [("edge_list", p) for p in edge_list_mutants(root, rng)]
    return cases


def test_mutated_files_load_correctly_or_fail_typed(tmp_path):
    cases = all_cases(tmp_path)
    assert len(cases) > 8 * CASES
    verdicts, code, err = crafted.load_in_child(cases, memory_mib=MEMORY_MIB, timeout=600,
                                                sample=True)
    if code != 0 or len(verdicts) < len(cases):
        kind, path = cases[len(verdicts)]
        pytest.fail(f"loading {kind} {path} ended the child (exit {code}) instead of a typed "
                    f"error or a load:\n{err[-3000:]}")
    kinds = {kind for (kind, _), v in zip(cases, verdicts.values()) if v.startswith("TYPED")}
    assert kinds == {kind for kind, _ in cases}      # every reader met a mutation it refused


def test_the_base_files_load(tmp_path):
    """The unmutated files load (so every TYPED verdict above is the mutation's doing)."""
    cases = [("planetoid", crafted.write_planetoid(tmp_path / "p")),
             ("gnnbench", crafted.write_gnnbench(tmp_path / "g.npz")),
             ("csr_npz", crafted.write_csr_npz(tmp_path / "c.npz")),
             ("hdf5", crafted.write_hdf5(tmp_path / "h.h5"))]
    verdicts, code, err = crafted.load_in_child(cases, memory_mib=MEMORY_MIB, sample=True)
    assert code == 0, err
    assert [verdicts[i].split()[0] for i in range(len(cases))] == ["LOADED"] * len(cases), \
        verdicts
