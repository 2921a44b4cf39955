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

import gzip
import os

import h5py
import numpy as np
import pytest

import spsample

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


# ---------------------------------------------------------------------- issue 27: new surfaces
def _datasets(f):
    """Every dataset of an open HDF5 file, by path (sorted)."""
    names = []
    f.visititems(lambda name, obj: names.append(name) if hasattr(obj, "shape") else None)
    return sorted(names)


def _hh_value(f, rng, i):
    names = [n for n in _datasets(f) if f[n].size and f[n].dtype.kind in "iuf"]
    dset = f[names[i % len(names)]]
    flat = int(rng.integers(0, dset.size))
    index = np.unravel_index(flat, dset.shape)
    evil = EVIL[i % len(EVIL)] if dset.dtype.kind in "iu" else (np.nan, np.inf, -1.0,
                                                                 2.0**70)[i % 4]
    dset[index] = evil


def _hh_shape(f, rng, i):
    names = _datasets(f)
    name = names[i % len(names)]
    data = mutate_array(f[name][()], rng)
    del f[name]
    f[name] = data


def _hh_attr(f, rng, i):
    groups = ["/"] + [f"hetero/{part}/{k}" for part in ("node_types", "relations")
                      for k in f[f"hetero/{part}"]]
    grp = f[groups[i % len(groups)]]
    key = sorted(grp.attrs)[int(rng.integers(0, len(grp.attrs)))]
    grp.attrs[key] = (EVIL[i % len(EVIL)], "paper", "author", np.arange(3), b"\xff",
                      "x")[int(rng.integers(0, 6))]


def _hh_declared(f, rng, i):
    names = [n for n in _datasets(f) if f[n].ndim == 1]
    name = names[i % len(names)]
    dtype = f[name].dtype
    del f[name]
    big = 2**31 if i % 2 else 2**20
    f.create_dataset(name, shape=(big,), dtype=dtype, chunks=(1024,) if i % 2 else None)


def _hh_dtype(f, rng, i):
    names = _datasets(f)
    name = names[i % len(names)]
    shape = f[name].shape
    del f[name]
    choice = i % 3
    if choice == 0:
        f[name] = np.full(shape, b"7", dtype="S3")
    elif choice == 1:
        f[name] = np.full(shape, 2**63 + 5, dtype=np.uint64)
    else:
        f[name] = np.full(shape, 0.5)


def _hh_duplicate(f, rng, i):
    part = ("relations", "node_types", "edge_splits/test")[i % 3]
    grp = f[f"hetero/{part}"]
    grp.copy(grp[str(int(rng.integers(0, len(grp))))], str(len(grp)))


def hetero_hdf5_mutants(root, rng, compression):
    prefix = f"hh{compression or 'raw'}"
    base = crafted.write_hetero_hdf5(root / f"{prefix}_base.h5", compression=compression)
    out = byte_mutants(base, rng, f"{prefix}_bytes")
    edits = (_hh_value, _hh_shape, _hh_attr, _hh_declared, _hh_dtype, _hh_duplicate)
    for i in range(CASES):
        target = root / f"{prefix}{i}.h5"
        target.write_bytes(base.read_bytes())
        with h5py.File(target, "a") as f:
            edits[i % len(edits)](f, rng, i)
        out.append(target)
    return out


#: Lines a temporal edge list may hold instead of a good one.
TEMPORAL_EVIL = ("0 {evil} 5", "{big} 1 5", "1 2 {huge}", "1 2 nan", "1 2 1e400", "1 2",
                 "x y z", "1.5 2 3", "1 2 1289241911.5", "-3 2 7", "{evil} {evil} {evil}",
                 "9007199254740993.0 1 2")


def temporal_mutants(root, rng):
    base = crafted.write_temporal(root / "temporal_base.txt")
    lines = base.read_text().splitlines()
    out = []
    for i in range(CASES):
        changed = list(lines)
        j = int(rng.integers(0, len(changed)))
        changed[j] = TEMPORAL_EVIL[i % len(TEMPORAL_EVIL)].format(
            evil=EVIL[i % len(EVIL)], big=2**63, huge=2**64)
        data = ("\n".join(changed) + "\n").encode()
        if i % 5 == 4:
            data = data.replace(b"1", b"\xff", 1)          # not UTF-8
        target = root / f"temporal{i}.txt"
        target.write_bytes(data)
        out.append(target)
    gz = root / "temporal_base.txt.gz"
    gz.write_bytes(gzip.compress(base.read_bytes()))
    out += byte_mutants(gz, rng, "temporal_bytes")
    return out


#: Triples a knowledge graph's train.txt may hold instead of good ones.
KG_EVIL = (b"a\tr\n", b"a\tr\tb\tc\n", b"\xff\tr\tb\n", b"\t\t\n", b"a\tr\xed\xa0\x80\tb\n",
           b"a\t\tb\n", b"a r b\n")


def kg_mutants(root, rng):
    base = crafted.write_kg(root / "kg_base.tar.gz")
    out = byte_mutants(base, rng, "kg_bytes")
    for i in range(CASES):
        texts = {part: text.encode() for part, text in crafted.KG_TRIPLES.items()}
        part = ("train", "val", "test")[i % 3]
        texts[part] = texts[part] + KG_EVIL[i % len(KG_EVIL)]
        if i % 6 == 5:
            del texts["train"]
        if i % 8 == 7:                                      # many relations, few entities
            texts["train"] = b"".join(f"a\tr{k}\tb\n".encode() for k in range(2000))
        out.append(crafted.write_kg(root / f"kg{i}.tar.gz", texts))
    return out


def heco_mutants(root, rng):
    base = crafted.write_heco(root / "heco_base")
    out = []
    files = sorted(p.name for p in base.iterdir())
    for i in range(CASES):
        folder = crafted.write_heco(root / f"heco{i}")
        name = files[i % len(files)]
        path = folder / name
        if name.endswith(".txt"):
            lines = path.read_text().splitlines()
            lines[int(rng.integers(0, len(lines)))] = (
                f"0\t{EVIL[i % len(EVIL)]}", "1", "x\ty", "1.5\t2", f"{2**63}\t0")[i % 5]
            path.write_text("\n".join(lines) + "\n")
        elif name.endswith("_feat.npz"):
            with np.load(path) as z:
                arrays = dict(z)
            key = sorted(arrays)[i % len(arrays)]
            arrays[key] = mutate_array(arrays[key], rng) if arrays[key].dtype.kind != "S" \
                else np.array(b"bsr")
            np.savez(path, **arrays)
        elif i % 3 == 0:
            path.write_bytes(flip_bits(path.read_bytes(), rng, 1 + i % 6))
        else:
            arr = np.load(path)
            np.save(path, (mutate_array(arr, rng), arr.astype(np.float64) + 0.5,
                           np.full(arr.shape, 2**40))[i % 3])
        out.append(folder)
    return out


def partition_mutants(root, rng):
    """``.perm.npz`` files of the dataset ``perm_base.h5`` beside them, tampered."""
    from spsample.distributed._partition import relabel, save_partition
    folder = root / "perm"
    folder.mkdir()
    ds = spsample.load(crafted.write_hdf5(root / "perm_source.h5"))
    old_id = np.random.default_rng(3).permutation(ds.num_nodes)
    new = relabel(ds, old_id)
    spsample.save(new, folder / "perm_base.h5")
    base = folder / "base.perm.npz"
    save_partition(base, new.graph, old_id, method="metis", parts=2)
    out = [base] + byte_mutants(base, rng, "perm_bytes")
    with np.load(base) as z:
        arrays = dict(z)
    for i in range(CASES):
        changed = dict(arrays)
        choice = i % 4
        if choice == 0:
            changed["old_id"] = mutate_array(arrays["old_id"], rng)
        elif choice == 1:
            changed["old_id"] = arrays["old_id"].astype(np.float64)
        elif choice == 2:
            changed["fingerprint"] = np.str_("40:160:" + "0" * 32)
        else:
            del changed[("old_id", "fingerprint")[i % 2]]
        target = folder / f"p{i}.perm.npz"
        np.savez(target, **changed)
        out.append(target)
    return out


def new_surface_cases(root):
    rng = np.random.default_rng(SEED + 27)
    cases = []
    for compression in ("gzip", None):
        cases += [("hdf5", p) for p in hetero_hdf5_mutants(root, rng, compression)]
    cases += [("temporal", p) for p in temporal_mutants(root, rng)]
    cases += [("kg", p) for p in kg_mutants(root, rng)]
    cases += [("heco", p) for p in heco_mutants(root, rng)]
    cases += [("partition", p) for p in partition_mutants(root, rng)]
    return cases


def test_mutated_heterogeneous_temporal_kg_heco_and_partition_files(tmp_path):
    """Heterogeneous and temporal HDF5 files, temporal edge lists, KG archives, HeCo folders
    and partition files, mutated: a correct load (then sampled, temporally where the graph
    has times) or a typed error under ``ulimit -v``, never a crash or an untyped exception."""
    cases = new_surface_cases(tmp_path)
    assert len(cases) > 5 * CASES
    verdicts, code, err = crafted.load_in_child(cases, memory_mib=MEMORY_MIB, timeout=600,
                                                sample=True)
    if code != 0 or len(verdicts) < len(cases):
        kind, path = cases[len(verdicts)]
        pytest.fail(f"loading {kind} {path} ended the child (exit {code}) instead of a typed "
                    f"error or a load:\n{err[-3000:]}")
    kinds = {kind for (kind, _), v in zip(cases, verdicts.values()) if v.startswith("TYPED")}
    assert kinds == {kind for kind, _ in cases}


def test_the_new_base_files_load(tmp_path):
    """The unmutated heterogeneous, temporal, KG, HeCo and partition files load (and sample)."""
    partition = partition_mutants(tmp_path, np.random.default_rng(0))[0]
    cases = [("hdf5", crafted.write_hetero_hdf5(tmp_path / "h.h5")),
             ("temporal", crafted.write_temporal(tmp_path / "t.txt")),
             ("kg", crafted.write_kg(tmp_path / "k.tar.gz")),
             ("heco", crafted.write_heco(tmp_path / "heco")),
             ("partition", partition)]
    verdicts, code, err = crafted.load_in_child(cases, memory_mib=MEMORY_MIB, sample=True)
    assert code == 0, err
    assert [verdicts[i].split()[0] for i in range(len(cases))] == ["LOADED"] * len(cases), \
        verdicts
