"""The README's table of paths × samplers, made from the registry (``paths.PATHS``) so that
the README says what the suite checks (``test_cells.test_readme_table_is_the_registrys``)."""

from .paths import DIST_PATHS, PATHS

#: Table columns: (heading, the registry's paths it stands for).
COLUMNS = (
    ("NumPy (oracle)", ("numpy",)),
    ("native, 1 / 2 threads, bulk split 1 / 2 / each", ("native", "threads-1", "threads-2",
                                                         "split-2", "split-each")),
    ("scalar reference", ("reference",)),
    ('emulated GPU (`device="emulated"`)', ("emulated",)),
    ("`DiskGraph` (map, cache)", ("disk-map", "disk-cache")),
    ("`DistGraph` / `DistHeteroGraph` (p = 2, 3, 4, 8; push, pull, c = p, replicated)",
     tuple(DIST_PATHS)),
)

#: Table rows: (label, mode of its cells).
ROWS = (
    ("`NodeWise` (uniform, weighted by keys or alias tables, replace, fanout -1), per-vertex "
     "fanouts, `LABOR`", "node"),
    ("`LADIES`, `FastGCN` (weighted graph or not)", "node"),
    ("`RandomWalk`, node2vec", "node"),
    ("compositions (column / row / edge values, sums and squares, walks per row, given rows, "
     "no dedup)", "node"),
    ("disjoint (`NodeWise(..., disjoint=True)`)", "disjoint"),
    ("heterogeneous (`HeteroGraph`: `NodeWise`, `LABOR`, compositions)", "hetero"),
    ("temporal (`seed_time`)", "temporal"),
    ("link (`LinkLoader`)", "link"),
    ("link on a `HeteroGraph` (a relation's edges; temporal: `edge_time`)", "hetero-link"),
)

_ALL = dict(PATHS, **DIST_PATHS)


def _status(names, mode):
    seen = set()
    for name in names:
        refuses = _ALL[name].refuses
        if mode not in refuses:
            seen.add("✓")
        elif refuses[mode] is None:
            seen.add("—")
        else:
            error, match = refuses[mode]
            argument = match.split("'")[1] if "'" in match else match
            seen.add(f"`{error.__name__}` ('{argument}')")
    assert len(seen) == 1, (names, mode, seen)
    return seen.pop()


def readme_table():
    """The table as Markdown lines."""
    lines = ["| sampler \\ path | " + " | ".join(h for h, _ in COLUMNS) + " |",
             "|---" * (len(COLUMNS) + 1) + "|"]
    for label, mode in ROWS:
        lines.append(f"| {label} | " + " | ".join(_status(names, mode) for _, names in COLUMNS)
                     + " |")
    return lines
