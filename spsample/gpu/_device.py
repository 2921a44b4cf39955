"""The GPU backend: lowered samplers run by the kernels of ``native/device`` (``rowwise.cuh``
for the row-wise engine, ``layerwise.cuh`` for the layer-wise one).

A driver (:class:`RowWiseDriver` here, :class:`spsample.gpu._layers.LayerWiseDriver`) launches
the kernels hop after hop for the whole bulk and takes the prefix sums (and, layer-wise, the
stable sorts) between them. It runs on a *device*:

* :class:`CupyDevice` -- an NVIDIA GPU: arrays are CuPy arrays, the kernels are compiled by
  ``cupy.RawModule`` from :func:`spsample.gpu._cuda_source.kernel_source` (the same ``.cuh`` files
  the CPU engine compiles) with ``--fmad=false``, and launched with 256 threads per block;
* :class:`EmulatedDevice` -- the host: arrays are NumPy arrays and every launch runs the very
  same kernel functions, compiled into the C++ extension, for every ``(block, thread)`` index
  of a small grid, in a shuffled order and from several threads
  (``spsample._native_kernels.emulate``, ``native/emulate.h``).

Both run the same Python driver, so everything but the launch itself and CuPy's array calls
is exercised on the host by the emulator tests, which require the CPU engine's (and the NumPy
oracle's) bits. Results do not depend on the device: the kernels decide per row from keyed
Philox streams, deduplication keeps first occurrences through an order-independent table
(``native/device/dedup.cuh``), and the layer-wise column sums are taken serially per column in
the CPU's order (never by floating-point atomics).

What runs on a GPU: every sampler that lowers onto the native engines -- ``NodeWise`` uniform,
weighted, with replacement, fanout vectors; ``LABOR``; ``RandomWalk`` and node2vec; ``LADIES``
(weighted and unweighted) and ``FastGCN``; users' compositions of the same lazy matrices. A
sampler the engine cannot lower raises :class:`~spsample.ArgumentError` naming ``device``.
"""

import itertools
import weakref

import numpy as np

from .. import native
from .._errors import (ArgumentError, MissingDependencyError, ResourceLimitError, SamplerError,
                      SpsampleError)
from .._rng import split_seed
from .._validate import check_memory, fail
from ..engine._lowering import lower
from ..engine._minibatch import Bulk, HopEdges
from ..engine._run import estimate_output_bytes, trace
from ._cuda_source import NVRTC_OPTIONS, kernel_source
from ._driver import DeviceDriver
from ._layers import run_layerwise

__all__ = ["INSTR_DTYPE", "EmulatedDevice", "CupyDevice", "get_device", "run_rowwise",
           "sample_on_device", "gpu_available"]

# The layout of native/device/rules.cuh's Instr (int32 op, ctx, arg; float64 value).
INSTR_DTYPE = np.dtype([("op", "<i4"), ("ctx", "<i4"), ("arg", "<i4"), ("value", "<f8")],
                       align=True)
_KERNEL_PREFIX = "spsample_k_"
_CUDA_BLOCK = 256
_DLPACK_CUDA, _DLPACK_CUDA_MANAGED = 2, 13
_CUDA_MAX_GRID = 65535 * 32


class EmulatedDevice:
    """The host, running the GPU kernels through their (block, thread) functions.

    Parameters
    ----------
    threads : int
        OS threads that run a launch's indices at once (>= 1).
    order_seed : int or None
        Seed of the shuffled index order (a new order per launch); ``None`` runs the indices
        in order.
    grid, block : int
        The emulated launch shape: few threads, so that the kernels' grid-stride loops wrap.
    long_row : int
        Rows longer than this whose rule decides per entry run as chunks, one thread each
        (``native/device/rowwise.cuh``, ``row_chunks``); the GPU's threshold by default.
    """

    name = "emulated"
    xp = np

    def __init__(self, threads=2, order_seed=0, grid=3, block=5, long_row=None):
        if not native.AVAILABLE:
            raise MissingDependencyError("emulating the GPU kernels needs the native extension: "
                                         f"pip install -e . ({native.IMPORT_ERROR})")
        self.threads, self.grid, self.block = int(threads), int(grid), int(block)
        self.long_row = CupyDevice.long_row if long_row is None else int(long_row)
        if self.long_row < 0:
            fail(ArgumentError, "EmulatedDevice", "long_row", "must be >= 0", long_row)
        self._orders = None if order_seed is None else itertools.count(int(order_seed) * 1000003)

    def upload(self, arr):
        return None if arr is None else np.ascontiguousarray(arr)

    def download(self, arr):
        return arr

    def ptr(self, arr):
        return 0 if arr is None else int(arr.ctypes.data)

    def stable_argsort(self, arr):
        """The permutation that sorts ``arr``, equal elements in their order (int64)."""
        return np.argsort(arr, kind="stable")

    def launch(self, kernel, n, args):
        if n <= 0:
            return
        seed = -1 if self._orders is None else next(self._orders)
        native.kernels.emulate(kernel, self.grid, self.block, np.array(args, dtype=np.int64),
                                 self.threads, seed)


class CupyDevice:
    """An NVIDIA GPU through CuPy (the kernels compiled once per process by NVRTC).

    Raises
    ------
    MissingDependencyError
        When CuPy is not installed or no GPU is visible.
    """

    name = "cuda"
    long_row = 512      # rows longer than this that decide per entry run as 128-entry chunks
    _module = None
    _uploads = {}   # id(read-only host array) -> device copy, dropped when the host array dies

    def __init__(self):
        cupy = _import_cupy()
        self.xp = cupy

    def module(self):
        if CupyDevice._module is None:
            CupyDevice._module = self.xp.RawModule(code=kernel_source(), options=NVRTC_OPTIONS)
        return CupyDevice._module

    def upload(self, arr):
        """A device copy of a host array; read-only host arrays (a graph's) are cached."""
        if arr is None:
            return None
        if isinstance(arr, self.xp.ndarray):
            return arr
        if isinstance(arr, np.ndarray) and not arr.flags.writeable:
            key = id(arr)
            hit = CupyDevice._uploads.get(key)
            if hit is None:
                hit = CupyDevice._uploads[key] = self.xp.asarray(arr)
                weakref.finalize(arr, CupyDevice._uploads.pop, key, None)
            return hit
        return self.xp.asarray(arr)

    def download(self, arr):
        return self.xp.asnumpy(arr)

    def ptr(self, arr):
        return 0 if arr is None else int(arr.data.ptr)

    def stable_argsort(self, arr):
        """The permutation that sorts ``arr``, equal elements in their order (CuPy's sort is
        always stable: Thrust's)."""
        return self.xp.argsort(arr)

    def launch(self, kernel, n, args):
        if n <= 0:
            return
        blocks = int(min(max(1, -(-n // _CUDA_BLOCK)), _CUDA_MAX_GRID))
        fn = self.module().get_function(_KERNEL_PREFIX + kernel)
        try:
            fn((blocks,), (_CUDA_BLOCK,), (self.xp.asarray(np.array(args, dtype=np.int64)),))
        except self.xp.cuda.memory.OutOfMemoryError as exc:
            raise ResourceLimitError(
                f"sample: argument 'device': the GPU is out of memory ({exc})") from None


def _import_cupy():
    try:
        import cupy
    except Exception as exc:  # ImportError, or a CuPy without its CUDA libraries
        raise MissingDependencyError(
            "device='cuda' needs CuPy and an NVIDIA GPU: pip install 'spsample[gpu]' "
            f"(cupy-cuda13x) ({type(exc).__name__}: {exc})") from None
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            raise RuntimeError("no device")
    except Exception as exc:
        raise MissingDependencyError(f"device='cuda': CuPy sees no NVIDIA GPU ({exc})") from None
    return cupy


def host_seeds(seeds):
    """``(on_gpu, host_seeds)``: whether ``seeds`` lives on a CUDA device (a CuPy array, or a
    DLPack tensor such as a torch CUDA tensor), and the seeds as something NumPy reads."""
    if type(seeds).__module__.startswith("cupy"):
        return True, seeds.get()
    dl = getattr(seeds, "__dlpack_device__", None)
    if dl is None or isinstance(seeds, np.ndarray):
        return False, seeds
    try:
        on_gpu = int(dl()[0]) in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED)
    except Exception:  # not a DLPack producer after all
        return False, seeds
    if not on_gpu:
        return False, seeds
    cupy = _import_cupy()
    return True, cupy.from_dlpack(seeds).get()


def gpu_available():
    """Whether ``device='cuda'`` can run here (CuPy imports and sees a GPU)."""
    try:
        _import_cupy()
        return True
    except MissingDependencyError:
        return False


def get_device(device):
    """The device object for ``device``: ``"cuda"``, ``"emulated"`` or a device object."""
    if isinstance(device, (EmulatedDevice, CupyDevice)):
        return device
    if device == "cuda":
        return CupyDevice()
    if device == "emulated":
        return EmulatedDevice()
    fail(ArgumentError, "sample", "device", "must be None, 'cpu', 'cuda' or 'emulated'", device)


def sample_on_device(graph, seeds, sizes, batch_ids, sampler, seed, epoch, device):
    """Trace and lower ``sampler`` and run it on ``device`` (the engine's GPU path).

    Raises
    ------
    ArgumentError
        Naming ``device`` when the sampler does not lower onto the native kernels (constructors
        the engine cannot lower).
    """
    dev = get_device(device)
    try:
        plans = trace(sampler, graph, batch_ids, seed, epoch)
        check_memory("sample", "sampler", estimate_output_bytes(plans, graph, sizes),
                     "the sampled output", "lower the fanouts, batch_size or the number of seeds "
                     "per call")
        lowered = lower(plans, graph, int(batch_ids.size), host_tables=False)
    except SpsampleError:
        raise
    except Exception as exc:  # NotLowerable, or a constructor that cannot run on placeholders
        what = getattr(exc, "what", None) or f"{type(exc).__name__}: {exc}"
        fail(ArgumentError, "sample", "device", f"runs only samplers that lower onto the native "
             f"engine; {type(sampler).__name__} does not ({what})", show_value=False)
    if lowered.kernel == "layerwise":
        return run_layerwise(lowered, graph, seeds, sizes, batch_ids, seed, epoch, dev)
    _check_gpu_hops(lowered, sampler, seed, epoch)
    return run_rowwise(lowered, graph, seeds, sizes, batch_ids, seed, epoch, dev)


#: Rules whose rows may keep fewer entries than their bound (outputs compacted after k_select).
_SHORT_ROWS = tuple(getattr(native.SelectRule, name, -1) for name in
                    ("WEIGHTED", "WEIGHTED_REP", "REJECTION", "ALIAS", "ALIAS_REP"))


def _check_gpu_hops(lowered, sampler, seed, epoch):
    """The GPU kernels key hop ``h``'s streams by ``(epoch, h)`` and the seed, read single-hop
    frontiers and have no temporal cut or ``"last"`` rule: refuse plans that need more."""
    key = tuple(int(x) for x in _rng_key(seed))
    for h, hs in enumerate(lowered.spec["hops"], start=1):
        f = hs["frontier"]
        plain = (hs["time"] < 0 and hs["select"] != native.SelectRule.LAST
                 and hs["hop_word"] == ((int(epoch) & 0xFFFFFF) << 8 | (h & 255))
                 and tuple(hs["rng_key"]) == key and (len(f) < 5 or f[4] == f[1]))
        alias_rules = (native.SelectRule.ALIAS, native.SelectRule.ALIAS_REP)
        if hs["select"] in alias_rules and "alias" not in hs:
            fail(ArgumentError, "sample", "device", "draws by alias tables only on the graph's "
                 f"own weights; {type(sampler).__name__} draws by other values: sample it with "
                 "device=None", show_value=False)
        if not plain:
            fail(ArgumentError, "sample", "device", "runs plain row-wise hops; "
                 f"{type(sampler).__name__} uses a temporal cut, the 'last' rule, per-relation "
                 "streams or hop ranges, which have no GPU kernels yet: sample it with "
                 "device=None", show_value=False)


def _rng_key(seed):
    return split_seed(seed)


def run_rowwise(lowered, graph, seeds, sizes, batch_ids, seed, epoch, device):
    """Run a row-wise :class:`~spsample.engine._lowering.Lowered` sampler on ``device``.

    Same arguments and checks as :func:`spsample.engine._native_run.run`; returns a
    :class:`~spsample.Bulk` whose ``n_id`` and edge arrays live on the device (CuPy arrays on
    a GPU) and whose offsets and counts are NumPy arrays; ``path`` is the device's name.
    """
    _, _, seeds, sizes, batch_ids, k0, k1 = native.bulk_args(graph, seeds, sizes, batch_ids,
                                                                 seed, epoch)
    return RowWiseDriver(lowered.spec, device, sizes, batch_ids, (k0, k1), int(epoch)).run(seeds)


class RowWiseDriver(DeviceDriver):
    """The launches of one bulk: every hop of every minibatch (see ``native/device/rowwise.cuh``).

    State between hops besides ``nid``: the node count of every minibatch at the end of every
    hop (``ends``, host), and every hop's edges (device) with their offsets (host).
    """

    def __init__(self, spec, device, sizes, batch_ids, key, epoch):
        super().__init__(device, sizes, batch_ids, key, epoch)
        self.spec = spec
        # (indptr, indices, weights, indices32): the host kernel's fence is not uploaded
        self.graphs = [tuple(device.upload(a) for a in g[:4]) for g in spec["graphs"]]
        self._alias = None
        self.f64 = [device.upload(v) for v in spec["f64"]]
        self.i64 = [device.upload(v) for v in spec["i64"]]
        self.i64_host = spec["i64"]
        self.vec_table = device.upload(np.array([device.ptr(v) for v in self.f64] or [0],
                                                dtype=np.int64))

    # ---------------------------------------------------------------- the bulk
    def run(self, seeds):
        self.nid = self.dev.upload(np.ascontiguousarray(seeds, dtype=np.int64))
        self.nid_off = self._off(self.sizes)
        self.ends = [self.sizes.copy()]
        self.hops = []
        for h, hs in enumerate(self.spec["hops"], start=1):
            self._hop(h, hs)
        L = len(self.hops)
        counts = np.empty((self.k, L + 1), dtype=np.int64)
        counts[:, 0] = self.sizes
        for h in range(1, L + 1):
            counts[:, h] = self.ends[h] - self.ends[h - 1]
        hops = [HopEdges(e["dst"], e["src"], e["eid"], None, e["off"]) for e in self.hops]
        bulk = Bulk(np.asarray(self._batch_ids_host()), self.sizes, self.nid, self.nid_off, counts,
                    hops, path=self.dev.name)
        return bulk

    def _batch_ids_host(self):
        return self.dev.download(self.batch_ids)

    def _hop(self, h, hs):
        rows = self._frontier(hs["frontier"], outputs=("fv", "fl", "fr", "fb"))
        if hs["frontier"][0] == native.Frontier.ROWS:
            rows["fl"] = self._append_unique(rows["fv"], rows["off"])
        fa = None
        if hs["aux"] is not None:
            fa = self._frontier(hs["aux"], outputs=("fv",))["fv"]
        edges = self._select(h, hs, rows, fa)
        nbr = self._empty(edges["E"])
        g = self.graphs[hs["graph"]]
        self._launch("gather", edges["E"], E=edges["E"], eid=edges["eid"], indices=g[1],
                     indices32=g[3], nbr=nbr)
        if hs["dedup"]:
            src = self._append_unique(nbr, edges["off"])
        else:
            src = self._append_all(nbr, edges["off"])
        self.ends.append(np.diff(self.nid_off))
        self.hops.append(dict(dst=edges["dst"], src=src, eid=edges["eid"], erow=edges["erow"],
                              off=edges["off"]))

    # ---------------------------------------------------------------- frontiers
    def _frontier(self, spec, outputs):
        kind, hop, off_index, vert_index = spec[:4]   # [4]: hop_last (== hop here)
        held = np.diff(self.nid_off)
        lo = ends = erow = given = None
        F = native.Frontier
        if kind in (F.NEW_NODES, F.ALL_NODES):
            lo_h = np.zeros(self.k, np.int64) if kind == F.ALL_NODES or hop == 0 \
                else self.ends[hop - 1]
            hi_h = held if kind == F.ALL_NODES else self.ends[hop]
            row_off = self._off(hi_h - lo_h)
            lo = self.dev.upload(lo_h)
        elif kind in (F.EDGE_SOURCES, F.EDGE_DESTINATIONS):
            e = self.hops[hop - 1]
            row_off = e["off"]
            ends = e["src"] if kind == F.EDGE_SOURCES else e["dst"]
            erow = e["erow"]
        else:
            row_off = np.asarray(self.i64_host[off_index], dtype=np.int64)
            given = self.i64[vert_index]
        m = int(row_off[-1])
        out = {name: self._empty(m) for name in outputs}
        row_off_d = self.dev.upload(row_off)
        self._launch("frontier", m, m=m, k=self.k, kind=kind, row_off=row_off_d, lo=lo,
                     nid=self.nid, nid_off=self.dev.upload(self.nid_off), ends=ends, erow=erow,
                     given=given, **{name: out.get(name) for name in ("fv", "fl", "fr", "fb")})
        out["off"], out["m"] = row_off, m
        return out

    # ---------------------------------------------------------------- selection
    def _rule_args(self, h, hs):
        """The RULE fields of the selection kernels (``native/device/args.cuh``)."""
        fanout_vec = None if hs["fanout_vec"] < 0 else self.i64[hs["fanout_vec"]]
        return dict(rule=hs["select"], fanout=hs["fanout"], fanout_vec=fanout_vec,
                    hw=self.hop_word(h), k0=self.key[0], k1=self.key[1],
                    batch_ids=self.batch_ids)

    def _value_args(self, hs):
        code = np.array([tuple(c) for c in hs["program"]], dtype=INSTR_DTYPE)
        code_d = self.dev.upload(code.view(np.uint8)) if code.size else None
        aux = self.graphs[hs["aux_graph"]] if hs["aux"] is not None else (None,) * 4
        n_aux = 0 if aux[0] is None else int(aux[0].size) - 1
        only_weight = len(hs["program"]) == 1 and hs["program"][0][0] == native.ValueOp.WEIGHT \
            and hs["program"][0][1] == 0
        uses_lookup = any(c[1] == 1 or c[0] == native.ValueOp.FOUND for c in hs["program"])
        return dict(code=code_d, code_size=len(hs["program"]), vectors=self.vec_table,
                    aux_indptr=aux[0], aux_indices=aux[1], aux_weights=aux[2], aux_n=n_aux,
                    uses_lookup=int(uses_lookup), only_weight=int(only_weight))

    def _alias_args(self, hs):
        """The alias rules' tables (the graph's, uploaded once per bulk), or none."""
        if "alias" not in hs:
            return dict(alias=None, alias_share=None, row_stats=None)
        if self._alias is None or self._alias[0] is not hs["alias"]:
            self._alias = (hs["alias"], self.dev.upload(hs["alias"]))
        return dict(alias=self._alias[1], alias_share=self.f64[hs["alias_share"]],
                    row_stats=self.f64[hs["row_stats"]])

    def _select(self, h, hs, rows, fa):
        xp, m, g = self.xp, rows["m"], self.graphs[hs["graph"]]
        rule = self._rule_args(h, hs)
        ext = self._extents(m, rule, g, rows)
        out_off, E = self._dev_off(ext["bound"])
        set_off, n_set = self._dev_off(ext["set"])
        key_off, n_keys = self._dev_off(ext["keys"])
        set_buf = xp.empty(max(n_set, 1), dtype=xp.uint64)
        key_buf = xp.empty(max(n_keys, 1), dtype=xp.float64)
        keep = hs["keep_row_ids"]
        dst, eid, erow = self._empty(E), self._empty(E), self._empty(E) if keep else None
        count = self._empty(m)
        err = xp.zeros(1, dtype=xp.uint32)
        self._launch("select", m, m=m, **rule, key_kind=hs["key"],
                     **{n: rows[n] for n in ("fv", "fl", "fr", "fb")}, fa=fa,
                     **{n: ext[n] for n in ("start", "deg", "fan")}, out_off=out_off,
                     set_off=set_off, key_off=key_off, set=set_buf, keys=key_buf, indptr=g[0],
                     indices=g[1], weights=g[2], **self._value_args(hs), bound=hs["bound"],
                     dst=dst, eid=eid, erow=erow, count=count, err=err,
                     long_row=self.dev.long_row, **self._alias_args(hs))
        if ext["C"]:
            self._launch("select_chunks", ext["C"], **ext["chunk_args"], fl=rows["fl"],
                         fr=rows["fr"], ccum=ext["ccum"], out_off=out_off, dst=dst, eid=eid,
                         erow=erow)
        if int(err[0]):
            raise SamplerError("sample: select_rows: argument 'bound' is exceeded (a value "
                               "exceeds the rejection bound)")
        if hs["select"] in _SHORT_ROWS:
            dst, eid, erow, out_off, E = self._compact(m, out_off, count, dst, eid, erow)
        row_off_d = self.dev.upload(rows["off"])
        off = np.asarray(self.dev.download(out_off[row_off_d]), dtype=np.int64)
        return dict(dst=dst, eid=eid, erow=erow, off=off, E=E)

    def _extents(self, m, rule, g, rows):
        """Each row's extent, fanout, output bound and scratch sizes (k_extents); rows longer
        than the device's ``long_row`` that decide per entry are cut into chunks, whose kept
        counts (k_chunk_counts) make up their bounds."""
        names = ("start", "deg", "fan", "bound", "set", "keys", "chunks")
        ext = {name: self._empty(m) for name in names}
        self._launch("extents", m, m=m, **rule, indptr=g[0], indices=g[1], fv=rows["fv"],
                     fb=rows["fb"], **{n: ext[n] for n in names[:-1]}, long_row=self.dev.long_row,
                     chunks=ext["chunks"])
        chunk_off, C = self._dev_off(ext["chunks"])
        ext["C"] = C
        if C:
            ext["chunk_off"] = chunk_off     # alive as long as the arguments that point to it
            ext["chunk_args"] = dict(C=C, m=m, chunk_off=chunk_off, **rule,
                                     **{n: ext[n] for n in ("start", "deg", "fan")},
                                     fb=rows["fb"], indices=g[1])
            ccount = self._empty(C)
            self._launch("chunk_counts", C, **ext["chunk_args"], ccount=ccount)
            ccum, _ = self._dev_off(ccount)
            ext["bound"] = ext["bound"] + (ccum[chunk_off[1:]] - ccum[chunk_off[:-1]])
            ext["ccum"] = ccum
        return ext

    def _compact(self, m, out_off, count, dst, eid, erow):
        new_off, E = self._dev_off(count)
        dst2, eid2 = self._empty(E), self._empty(E)
        erow2 = None if erow is None else self._empty(E)
        self._launch("compact", m, m=m, out_off=out_off, count=count, new_off=new_off, dst=dst,
                     eid=eid, erow=erow, dst2=dst2, eid2=eid2, erow2=erow2)
        return dst2, eid2, erow2, new_off, E
