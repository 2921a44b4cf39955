"""A cost model of distributed sampling and feature fetching, and the planner built on it.

The model predicts, per rank and per bulk of ``k`` minibatches, the time of each phase from a
*workload* (what one minibatch samples, measured on one process) and a *machine* (its kernel
rates and its network, an α–β model per collective)::

    sample  = (k E / rate[sampler]                  the kernels (E sampled edges per minibatch)
               + bytes_sampling / β) · slowdown     row push: 8 (1 − c/p)(R + E) k bytes
                                                    layer push: (1 − c/p)(16 R + 16 D
                                                                 + 8 U + 8 E) k bytes
                                                    pull: (1 − c/p)(24 R' + 8 e') k bytes
            + hops · 2 · (α + (p/c − 1) α_peer)     two all-to-alls per hop (out and back)
    fetch   = ((1 − c/p) U' (8 + 4 f) k / β + U' 4 f k / gather) · slowdown
            + α + (p/c − 1) α_peer
    train   = k E / train_rate · slowdown          (from the machine file; optional)
    allreduce = 2 (p − 1)/p · params · 4 / β + log2(p) α   (once per step)

The fetch's work is multiplied by a cache factor ``1 + (F − 1) · max(0, 1 − LLC / W)`` where
the machine gives its last-level cache (``llc_bytes``; ``"host"`` in a machine file: this
host's, :func:`host_llc_bytes`) and how much slower that work runs out of it
(``beyond_cache_factor`` F, measured; 1 leaves it out), and ``W`` = :func:`bulk_working_set`
is what a bulk writes and reads back: its sampled edges (24 bytes each) and fetched rows.

``R`` = frontier rows, ``U`` = distinct vertices, ``D`` = layer-wise draws, per minibatch;
``R'``, ``e'``, ``U'`` = the rows, their entries and the vertices counted once per bulk of
``k`` (pull and the feature fetch deduplicate per bulk); ``f`` = feature width; ``slowdown``
= ranks per core beyond one (oversubscription: the kernels and the copies share the cores).

The byte formulas are the implementation's wire formats (``distributed/_sampling.py``,
``distributed/_layerpush.py``, ``distributed/_features.py``) with the remote share ``1 − c/p``
of an evenly spread frontier: expected bytes, within 5 % of the counted ones for row push, pull
and features and 20 % for LADIES's push (``tests/distributed/test_plan_bytes.py``; LADIES draws
more than ``s`` entries per layer). Times are a model, validated by ``experiments/model.py``.
:func:`plan` picks the replication ``c``, bulk size ``k`` and strategy (every registered one,
:mod:`spsample.distributed._strategies`, each with its own bytes model) that minimise the
predicted epoch time within the memory per rank.
"""

import dataclasses
import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from .._errors import ArgumentError
from .._validate import fail
from ..graph import _generate
from ..samplers._registry import NameView, registered
from ..samplers._sample import sample
from ._strategies import registered_strategy, strategy_names
from ._wire_bytes import pull_bytes, push_bytes

__all__ = ["Machine", "Workload", "predict", "plan", "memory_per_rank", "sampling_bytes",
           "push_bytes", "pull_bytes", "feature_bytes", "divisors", "MAX_RANKS", "STANDIN_EDGES",
           "host_llc_bytes", "bulk_working_set", "cache_factor"]

#: Samplers modelled as layer-wise draws: the registered layer-wise ones (a live view of
#: ``spsample.samplers``' registry).
LAYERWISE = NameView(layerwise=True)
#: The most ranks :func:`plan` and :func:`predict` model (a grid of 16.7 million ranks).
MAX_RANKS = 1 << 24
#: The most edges :meth:`Workload.like` draws for its R-MAT stand-in graph: a denser target is
#: measured at the stand-in's degree, its row degrees scaled up (see there).
STANDIN_EDGES = 1 << 22
MACHINE_NUMBERS = ("cores_per_node", "ranks_per_node", "alpha_s", "alpha_peer_s", "beta_intra",
                   "beta_inter", "gather_rate", "memory_per_rank")


@dataclass
class Machine:
    """What the model knows of a machine (a JSON file: ``experiments/machines/*.json``).

    Attributes
    ----------
    name : str
    cores_per_node : int
        Cores (CPU) or devices (GPU) per node; ranks beyond it share them (slowdown).
    ranks_per_node : int
    alpha_s, alpha_peer_s : float
        Latency of one collective and its growth per peer, seconds.
    beta_intra, beta_inter : float
        Bytes per second per rank inside a node and between nodes.
    sample_rate : dict
        Per rank and sampler (``nodewise``, ``labor``, ``ladies``): sampled edges per second
        for the node-wise samplers; for the layer-wise ones (``ladies``, ``fastgcn``) entries
        of the frontier rows per second (their selection reads every entry of those rows).
    gather_rate : float
        Bytes per second of a feature gather from local memory.
    train_rate : float
        Sampled edges per second of one training step (forward + backward), 0 to leave out.
    memory_per_rank : float
        Bytes.
    measured : bool
        Whether the numbers were measured (this machine) or assumed (a projection).
    hop_overhead_s, fetch_overhead_s : float
        Fixed seconds per hop of a distributed bulk (tracing, checks, bookkeeping) and per
        feature fetch; 0 unless fitted to scaling runs (``experiments/model.py validate
        --fit-below``).
    distributed_factor : float
        How much slower kernels and copies run in a distributed bulk than in the one-process
        calibration (1 unless fitted).
    llc_bytes : float
        Last-level cache per rank's share of a node, bytes (0: unknown, no cache term); a
        machine file may say ``"host"`` (this host's, :func:`host_llc_bytes`).
    beyond_cache_factor : float
        How much slower the feature fetch runs when a bulk's working set is beyond the LLC
        (>= 1; 1: no cache term). See :func:`cache_factor`.
    """

    name: str
    cores_per_node: int
    ranks_per_node: int
    alpha_s: float
    alpha_peer_s: float
    beta_intra: float
    beta_inter: float
    sample_rate: dict
    gather_rate: float
    train_rate: float = 0.0
    memory_per_rank: float = 16e9
    measured: bool = False
    notes: str = ""
    hop_overhead_s: float = 0.0
    fetch_overhead_s: float = 0.0
    distributed_factor: float = 1.0
    llc_bytes: float = 0.0
    beyond_cache_factor: float = 1.0

    @classmethod
    def load(cls, path):
        """A machine file (JSON), checked: every required number present, finite and > 0."""
        where = "Machine.load"
        try:
            data = json.loads(Path(path).read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            fail(ArgumentError, where, "path", f"is not a readable JSON file ({exc})", str(path))
        if not isinstance(data, dict):
            fail(ArgumentError, where, "path", "must hold a JSON object", str(path))
        for key in MACHINE_NUMBERS:
            if key not in data:
                fail(ArgumentError, where, key, f"is missing from {path}", None)
            _check_positive(where, key, data[key])
        rates = data["sample_rate"] if isinstance(data.get("sample_rate"), dict) else None
        if not rates or "nodewise" not in rates:
            fail(ArgumentError, where, "sample_rate", "must map sampler names to edges per "
                 "second, with at least 'nodewise'", data.get("sample_rate"))
        for name, rate in rates.items():
            _check_positive(where, f"sample_rate[{name!r}]", rate)
        if data.get("train_rate", 0) != 0:
            _check_positive(where, "train_rate", data["train_rate"])
        for key in ("hop_overhead_s", "fetch_overhead_s"):
            if data.get(key, 0) != 0:
                _check_positive(where, key, data[key])
        _check_positive(where, "distributed_factor", data.get("distributed_factor", 1.0))
        if data.get("llc_bytes") == "host":
            data = dict(data, llc_bytes=host_llc_bytes() or 0.0)
        llc = data.get("llc_bytes", 0.0)
        if llc != 0:
            _check_positive(where, "llc_bytes", llc)
        factor = data.get("beyond_cache_factor", 1.0)
        _check_positive(where, "beyond_cache_factor", factor)
        if factor < 1:
            fail(ArgumentError, where, "beyond_cache_factor", "must be >= 1", factor)
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})

    def beta(self, p):
        """Bandwidth of an all-to-all among ``p`` ranks: inter-node once they span nodes."""
        return self.beta_intra if p <= self.ranks_per_node else self.beta_inter

    def slowdown(self, p):
        return max(1.0, min(p, self.ranks_per_node) / self.cores_per_node)


@dataclass
class Workload:
    """What one minibatch samples (measured on one process) and the graph around it.

    Attributes
    ----------
    num_nodes, num_edges, feature_dim : int
    batch_size, hops : int
    edges, rows, unique : float
        Sampled edges, expanded frontier rows and distinct vertices per minibatch.
    row_degree : float
        Mean degree of the expanded rows (what pull moves per row).
    draws : float
        Layer-wise samplers: entries drawn per minibatch (the vertices per layer, summed).
    sampler : str
        ``nodewise``, ``labor``, ``ladies`` or ``fastgcn`` (layer-wise: the last two).
    params : int
        Model parameters (the gradient all-reduce), 0 to leave out.
    distinct : dict
        ``k -> (rows, row entries, vertices)`` per minibatch, each counted once per bulk of
        ``k`` minibatches: what pull and the feature fetch move (both deduplicate per bulk).
    extra : dict
        Anything else recorded with the measurement.
    """

    num_nodes: int
    num_edges: int
    feature_dim: int
    batch_size: int
    hops: int
    edges: float
    rows: float
    unique: float
    row_degree: float
    draws: float = 0.0
    sampler: str = "nodewise"
    params: int = 0
    distinct: dict = field(default_factory=dict)
    extra: dict = field(default_factory=dict)

    @classmethod
    def measure(cls, graph, sampler, *, name, batch_size=1024, minibatches=8, feature_dim=128,
                params=0, seed=0):
        """Sample a few minibatches of random seeds on one process and count what they sample."""
        import numpy as np

        rng = np.random.default_rng(seed)
        m = min(graph.num_nodes, batch_size * minibatches)
        seeds = rng.choice(graph.num_nodes, size=m, replace=False)
        bulk = sample(graph, seeds, sampler=sampler, batch_size=batch_size, seed=seed)
        return cls.from_bulk(graph, sampler, bulk, name=name, batch_size=batch_size,
                             feature_dim=feature_dim, params=params)

    @classmethod
    def from_bulk(cls, graph, sampler, bulk, *, name, batch_size, feature_dim=128, params=0):
        """The per-minibatch means of a sampled bulk (node-wise and layer-wise samplers whose
        frontier at hop ``h`` is the vertices first reached at hop ``h - 1``), and what a rank
        holding ``k`` of its minibatches fetches once per bulk (``distinct``)."""
        import numpy as np

        k = len(bulk)
        degree = np.diff(graph.indptr)
        expanded = [mb.n_id[:mb.n_id.size - mb.num_sampled_nodes[-1]] for mb in bulk]
        rows = sum(e.size for e in expanded) / k
        row_degree = float(np.mean(np.concatenate([degree[e] for e in expanded])))
        draws = float(sum(sampler.fanouts)) if name in LAYERWISE else 0.0
        distinct = {}
        size = 1
        while size <= k:
            groups = [range(i, i + size) for i in range(0, k - size + 1, size)]
            rows_d = [np.unique(np.concatenate([expanded[j] for j in g])) for g in groups]
            unique_d = [np.unique(np.concatenate([bulk[j].n_id for j in g])) for g in groups]
            distinct[size] = (float(np.mean([r.size for r in rows_d])) / size,
                              float(np.mean([degree[r].sum() for r in rows_d])) / size,
                              float(np.mean([u.size for u in unique_d])) / size)
            size *= 2
        return cls(num_nodes=graph.num_nodes, num_edges=graph.num_edges, feature_dim=feature_dim,
                   batch_size=batch_size, hops=sampler.num_hops, edges=bulk.num_edges / k,
                   rows=rows, unique=bulk.n_id.size / k, row_degree=row_degree, draws=draws,
                   sampler=name, params=params, distinct=distinct)

    @classmethod
    def like(cls, num_nodes, num_edges, *, sampler="nodewise", fanouts=(15, 10, 5),
             batch_size=1024, feature_dim=128, max_scale=17, seed=1):
        """The workload of a graph of ``num_nodes`` vertices and ``num_edges`` entries, measured
        on an R-MAT graph of the same mean degree.

        A graph of at most ``2**max_scale`` vertices stands in for the target: node-wise and
        LABOR minibatches keep the target's seeds per vertex (``batch_size × n' / n`` seeds,
        counts scaled back up by ``n / n'``), so a neighbourhood covers the same share of the
        graph and a bulk repeats rows as often; layer-wise samplers (whose layers hold ``s``
        vertices whatever the graph) are measured at the full batch size.

        The stand-in draws at most :data:`STANDIN_EDGES` edges, so planning takes seconds and
        little memory whatever ``num_edges`` says. A target denser than that is measured at
        the stand-in's mean degree (recorded as ``extra["standin_degree"]``) and the rows' degrees
        (``row_degree``, the row entries of ``distinct``: what pull moves and layer-wise
        samplers read) are scaled by the ratio of the mean degrees (``extra["row_degree_scale"]``,
        1 when not scaled); the sampled counts are the
        stand-in's (node-wise rows of degree above the fanout sample the fanout either way).
        """
        entry = registered(sampler, where="Workload.like", argname="sampler", walk=False)
        scale = max(10, min(max_scale, math.ceil(math.log2(max(num_nodes, 2)))))
        edge_factor = max(1, round(num_edges / num_nodes / 2))
        graph = _generate.rmat(scale, min(edge_factor, max(1, STANDIN_EDGES >> scale)), seed=seed)
        layerwise = sampler in LAYERWISE
        share = min(1.0, graph.num_nodes / num_nodes)
        batch = batch_size if layerwise else max(1, round(batch_size * share))
        batch = min(batch, graph.num_nodes // 16)
        w = cls.measure(graph, entry.make(fanouts), name=sampler, batch_size=batch,
                        minibatches=16, feature_dim=feature_dim)
        up = 1.0 if layerwise else batch_size / batch
        out = w.scaled(up, num_nodes=num_nodes, num_edges=num_edges, batch_size=batch_size)
        degree = graph.num_edges / graph.num_nodes
        denser = (num_edges / num_nodes) / degree if edge_factor << scale > STANDIN_EDGES \
            else 1.0
        out.extra = dict(out.extra, standin_degree=degree, row_degree_scale=max(1.0, denser))
        if denser > 1.0:
            out.row_degree *= denser
            out.distinct = {k: (r, e * denser, u) for k, (r, e, u) in out.distinct.items()}
        return out

    @property
    def layerwise(self):
        """Whether :attr:`sampler` is a registered layer-wise sampler (modelled as layer-wise
        draws)."""
        return self.sampler in LAYERWISE

    def per_bulk(self, k):
        """``(rows, row entries, vertices)`` per minibatch, each counted once per bulk of ``k``
        minibatches (the largest measured bulk size <= k; without measurements, no repeats)."""
        measured = [size for size in self.distinct if size <= k]
        if not measured:
            return self.rows, self.rows * self.row_degree, self.unique
        return self.distinct[max(measured)]

    def scaled(self, factor, **replace):
        """The workload with ``factor`` times the counts per minibatch (a larger batch), fields
        in ``replace`` set."""
        out = dataclasses.replace(self, **replace)
        out.edges, out.rows, out.unique = self.edges * factor, self.rows * factor, self.unique * factor
        out.distinct = {k: tuple(v * factor for v in vals) for k, vals in self.distinct.items()}
        return out


def sampling_bytes(w, p, c, k, strategy):
    """Expected bytes one rank's bulk moves for sampling (requests and replies), by the
    registered ``strategy``'s bytes model."""
    entry = registered_strategy(strategy, where="plan", argname="strategy")
    return entry.sampling_bytes(w, p, c, k)


def feature_bytes(w, p, c, k):
    """Expected bytes one rank's bulk moves for its features (ids out, float32 rows back)."""
    unique = w.per_bulk(k)[2]
    return (1.0 - c / p) * unique * (8.0 + 4.0 * w.feature_dim) * k


def predict(w, machine, p, c, k, strategy="push"):
    """Predicted seconds (and bytes) of one bulk of ``k`` minibatches on one rank.

    Returns
    -------
    dict with ``sample_s``, ``fetch_s``, ``train_s``, ``allreduce_s``, ``total_s``,
    ``sampling_bytes``, ``feature_bytes``, ``memory_bytes``.
    """
    _check_grid(p, c, k)
    beta, slow = machine.beta(p), machine.slowdown(p)
    terms = cost_terms(w, machine, p, c, k, strategy)
    s_bytes, f_bytes = terms["sampling_bytes"], terms["feature_bytes"]
    spread = p > c          # c = p samples and fetches locally, as one process does
    factor = machine.distributed_factor if spread else 1.0
    sample_s = factor * terms["sample_work_s"] + terms["sample_latency_s"] \
        + (w.hops * machine.hop_overhead_s if spread else 0.0)
    fetch_s = factor * terms["fetch_work_s"] + terms["fetch_latency_s"] \
        + (machine.fetch_overhead_s if spread else 0.0)
    train_s = k * w.edges / machine.train_rate * slow if machine.train_rate else 0.0
    allreduce_s = 0.0
    if w.params and p > 1:
        allreduce_s = k * (2 * (p - 1) / p * w.params * 4 / beta + math.log2(p) * machine.alpha_s)
    return {"sample_s": sample_s, "fetch_s": fetch_s, "train_s": train_s,
            "allreduce_s": allreduce_s, "total_s": sample_s + fetch_s + train_s + allreduce_s,
            "sampling_bytes": s_bytes, "feature_bytes": f_bytes,
            "cache_factor": terms["cache_factor"], "memory_bytes": memory_per_rank(w, p, c, k)}


def cost_terms(w, machine, p, c, k, strategy="push"):
    """The parts of :func:`predict`'s phase times that do not depend on the fitted overheads:
    kernel and copy seconds (``sample_work_s``, ``fetch_work_s``: rates, bytes / β, slowed
    down by oversubscription) and collective latencies (``*_latency_s``); plus the bytes."""
    beta, slow = machine.beta(p), machine.slowdown(p)
    peers = p // c - 1
    collective = machine.alpha_s + peers * machine.alpha_peer_s if peers else 0.0
    rate = machine.sample_rate.get(w.sampler) or machine.sample_rate["nodewise"]
    work = w.rows * w.row_degree if w.sampler in LAYERWISE else w.edges
    s_bytes = sampling_bytes(w, p, c, k, strategy)
    f_bytes = feature_bytes(w, p, c, k)
    unique = w.per_bulk(k)[2]
    cache = cache_factor(machine, bulk_working_set(w, k))
    return {"sample_work_s": (k * work / rate + s_bytes / beta) * slow,
            "sample_latency_s": 2 * w.hops * collective,
            "fetch_work_s": (f_bytes / beta + k * unique * w.feature_dim * 4
                             / machine.gather_rate) * slow * cache,
            "fetch_latency_s": collective,
            "sampling_bytes": s_bytes, "feature_bytes": f_bytes, "cache_factor": cache}


def bulk_working_set(w, k):
    """Bytes a bulk of ``k`` minibatches writes and reads back on one rank: its sampled edges
    (dst, src, edge id: 24 bytes each) and its fetched feature rows (an id and ``4 f`` bytes
    per vertex, counted once per bulk)."""
    unique = w.per_bulk(k)[2]
    return k * (24.0 * w.edges + unique * (8.0 + 4.0 * w.feature_dim))


def cache_factor(machine, working_set):
    """``1 + (F − 1) · max(0, 1 − LLC / working_set)``: how much slower the fetch of a bulk
    runs whose working set exceeds the machine's last-level cache (1 when it fits, when the
    LLC is unknown or F = 1)."""
    llc, f = machine.llc_bytes, machine.beyond_cache_factor
    if not llc or f <= 1.0 or working_set <= llc:
        return 1.0
    return 1.0 + (f - 1.0) * (1.0 - llc / working_set)


def host_llc_bytes(cache_dir="/sys/devices/system/cpu/cpu0/cache"):
    """This host's last-level cache in bytes: the largest data or unified cache level in
    ``cache_dir`` (Linux sysfs: ``index*/level``, ``type``, ``size`` such as ``32768K``), else
    ``os.sysconf("SC_LEVEL3_CACHE_SIZE")`` / ``SC_LEVEL2_CACHE_SIZE``, else None."""
    import os

    best = (0, 0)
    for index in sorted(Path(cache_dir).glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            level = int((index / "level").read_text().strip())
            size = _parse_size((index / "size").read_text().strip())
        except (OSError, ValueError):
            continue
        if kind in ("Data", "Unified") and size > 0:
            best = max(best, (level, size))
    if best[1]:
        return best[1]
    for name in ("SC_LEVEL3_CACHE_SIZE", "SC_LEVEL2_CACHE_SIZE"):
        try:
            size = os.sysconf(name)
        except (ValueError, OSError, AttributeError):
            continue
        if size and size > 0:
            return int(size)
    return None


def _parse_size(text):
    """``"32768K"`` -> 33554432 (sysfs cache sizes: bytes, or a K / M / G suffix)."""
    units = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    text = text.strip().upper()
    if text and text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text)


def memory_per_rank(w, p, c, k):
    """Bytes one rank holds: its graph block (``c/p`` of the rows: indptr, indices), its
    feature shard (``c/p`` of the rows), and a bulk's output and features."""
    share = c / p
    graph = share * (8.0 * (w.num_nodes + 1) + 8.0 * w.num_edges)
    features = share * w.num_nodes * w.feature_dim * 4.0
    bulk = k * (24.0 * w.edges + 8.0 * w.unique + 4.0 * w.unique * w.feature_dim)
    return graph + features + bulk


def plan(w, machine, p, *, epochs_minibatches=None, ks=(1, 2, 4, 8, 16, 32), memory=None):
    """The replication, bulk size and strategy that minimise the predicted epoch time within
    the memory per rank.

    Parameters
    ----------
    w : Workload
    machine : Machine
    p : int
        Ranks.
    epochs_minibatches : int, optional
        Minibatches per epoch (default: one per ``batch_size`` of the graph's vertices).
    memory : float, optional
        Bytes per rank (default: the machine's).

    Returns
    -------
    dict: ``best`` (c, k, strategy and the prediction), ``candidates`` (every feasible one,
    fastest first), ``why`` (a sentence per decision).
    """
    _check_grid(p, 1, 1)
    memory = machine.memory_per_rank if memory is None else float(memory)
    total = epochs_minibatches or math.ceil(w.num_nodes / w.batch_size)
    per_rank = math.ceil(total / p)
    feasible = []
    for c in divisors(p):
        for k in ks:
            for strategy in strategy_names():
                pred = predict(w, machine, p, c, k, strategy)
                if pred["memory_bytes"] > memory:
                    continue
                epoch = pred["total_s"] * math.ceil(per_rank / k)
                feasible.append(dict(c=c, k=k, strategy=strategy, epoch_s=epoch, **pred))
    if not feasible:
        fail(ArgumentError, "plan", "memory", "holds no configuration: even c = 1, k = 1 needs "
             f"{memory_per_rank(w, p, 1, 1) / 1e9:.1f} GB per rank", memory)
    feasible.sort(key=lambda r: (round(r["epoch_s"], 12), r["memory_bytes"]))
    best = feasible[0]
    return {"best": best, "candidates": feasible, "why": _why(best, feasible, w, p)}


def _why(best, feasible, w, p):
    """One sentence per decision, each against its best alternative."""
    out = [_why_replication(best, feasible, p)]
    other = next((r for r in feasible if r["c"] == best["c"] and r["k"] == best["k"]
                  and r["strategy"] != best["strategy"]), None)
    if best["c"] == p:
        out.append("strategy: none needed, every rank samples from its own copy")
    elif other:
        out.append(f"{best['strategy']}: sampling bytes {_mib(best['sampling_bytes'])} per bulk "
                   f"against {_mib(other['sampling_bytes'])} for {other['strategy']}")
    same = [r for r in feasible if r["c"] == best["c"] and r["strategy"] == best["strategy"]]
    smaller = [r for r in same if r["k"] < best["k"]]
    if best["c"] == p and len(same) > 1:
        out.append(f"k = {best['k']}: with no all-to-all to share, the bulk size changes no "
                   "time; the smallest holds the least memory")
    elif smaller:
        k1 = min(smaller, key=lambda r: r["k"])
        out.append(f"k = {best['k']}: epoch {_pct(best['epoch_s'], k1['epoch_s'])} against "
                   f"k = {k1['k']} (the {2 * w.hops} all-to-alls of a bulk shared by "
                   f"{best['k']} minibatches)")
    elif len(same) == 1:
        out.append(f"k = {best['k']}: a larger bulk does not fit the memory per rank")
    beyond = [r for r in same if r["k"] > best["k"] and r["cache_factor"] > 1.0]
    if beyond:
        k2 = min(beyond, key=lambda r: r["k"])
        out.append(f"k = {best['k']} rather than {k2['k']}: a bulk of {k2['k']} works beyond the "
                   f"last-level cache (fetch {k2['cache_factor']:.2f}× slower), epoch "
                   f"{_pct(k2['epoch_s'], best['epoch_s'])} against k = {best['k']}")
    return out


def _why_replication(best, feasible, p):
    c = best["c"]
    same = [r for r in feasible if r["k"] == best["k"] and r["strategy"] == best["strategy"]]
    memory = f"{best['memory_bytes'] / 1e9:.1f} GB per rank"
    if p == 1:
        return f"c = 1: one rank ({memory})"
    if c == p:
        return (f"c = {p}: the whole graph and feature matrix fit on every rank ({memory}); "
                "nothing crosses the network for sampling or features")
    c1 = next((r for r in same if r["c"] == 1), None)
    larger = [r for r in feasible if r["c"] > c]
    if larger:
        alt = larger[0]                                  # feasible is sorted, fastest first
        limit = (f"the fastest larger c (c = {alt['c']}, k = {alt['k']}, {alt['strategy']}) "
                 f"takes {alt['epoch_s'] / best['epoch_s']:.2f}× the epoch time")
    else:
        limit = "a larger c does not fit"
    if c > 1 and c1:
        return (f"c = {c}: graph block and feature shard fit ({memory}), fetch bytes "
                f"{_pct(best['feature_bytes'], c1['feature_bytes'])} against c = 1; {limit}")
    return f"c = {c}: {limit} ({memory})"


def _mib(nbytes):
    return f"{nbytes / 2**20:.1f} MiB"


def _pct(new, old):
    return f"{100 * (new / old - 1):+.0f} %" if old else "n/a"


def _check_positive(where, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            math.isfinite(value) and value > 0):
        fail(ArgumentError, where, name, "must be a finite number > 0", value)


def divisors(p):
    """The divisors of ``p``, ascending (``O(sqrt p)``)."""
    small = [d for d in range(1, math.isqrt(p) + 1) if p % d == 0]
    return small + [p // d for d in reversed(small) if d * d != p]


def _check_grid(p, c, k):
    if isinstance(p, bool) or not isinstance(p, int) or p < 1:
        fail(ArgumentError, "plan", "ranks", "must be a positive integer", p)
    if p > MAX_RANKS:
        fail(ArgumentError, "plan", "ranks", f"must be at most 2**24 = {MAX_RANKS:,d}", p)
    if not isinstance(c, int) or c < 1 or p % c:
        fail(ArgumentError, "plan", "replication", f"must divide the ranks ({p})", c)
    if not isinstance(k, int) or k < 1:
        fail(ArgumentError, "plan", "k", "must be a positive integer", k)
