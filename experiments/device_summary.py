"""The JSON summary of ``experiments/device_run.sh``: per part, its status, seconds, key
numbers and error (``experiments/README.md``, "On a GPU machine", says how to read it).

Standard library only, so it runs whatever else failed::

    python3 experiments/device_summary.py init SUMMARY --mode device --deadline 450
    python3 experiments/device_summary.py part SUMMARY gpu_tests --status ok --seconds 41 \\
        --junit OUT/gpu_tests.xml
    python3 experiments/device_summary.py finish SUMMARY      # exit 1 if a part failed

Statuses: ``ok``, ``failed``, ``timeout`` (its ``timeout`` budget ran out), ``skipped`` (with
a ``reason`` such as ``skipped: no device``). The file is rewritten after every part (to a
temporary name, then renamed), so a run cut short still leaves the parts it finished.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

STATUSES = ("ok", "failed", "timeout", "skipped")
PARTS = ("setup", "build", "gpu_tests", "gpu_bench", "cpu_sweep", "calibrate", "validate")


def load(path):
    return json.loads(Path(path).read_text())


def save(path, summary):
    tmp = f"{path}.tmp{os.getpid()}"
    Path(tmp).write_text(json.dumps(summary, indent=1, sort_keys=False) + "\n")
    os.replace(tmp, path)


def now():
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def init(args):
    """A summary with the run's facts and every part still ``pending``."""
    load_avg = os.getloadavg() if hasattr(os, "getloadavg") else None
    summary = {
        "script": "experiments/device_run.sh", "mode": args.mode, "started": now(),
        "deadline_s": args.deadline, "status": "running",
        "host": {"name": platform.node(), "cores": os.cpu_count(),
                 "python": platform.python_version(), "load_average_at_start": load_avg,
                 "gpu": args.gpu or None},
        "parts": {name: {"status": "pending"} for name in PARTS},
    }
    save(args.summary, summary)


def parse_value(text):
    """``key=value`` values as JSON when they parse (numbers, lists, true), else strings."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def junit_numbers(path):
    """Counts of a pytest JUnit XML file, the failed tests and the skip reasons."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    count = {k: sum(int(s.get(k, 0)) for s in suites)
             for k in ("tests", "failures", "errors", "skipped")}
    count["passed"] = count["tests"] - count["failures"] - count["errors"] - count["skipped"]
    failed, skips = [], set()
    for case in root.iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(name)
        for skip in case.findall("skipped"):
            skips.add(skip.get("message", ""))
    return {**count, "failed_tests": failed[:20], "skip_reasons": sorted(skips)[:10]}


def bench_rows_from_log(path):
    """The JSON rows ``experiments/gpu/run.py`` prints per run, for a run cut short."""
    rows = []
    for line in Path(path).read_text(errors="replace").splitlines():
        if line.startswith('{"graph"'):
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
    return rows


def bench_row(r):
    """One benchmark row in short: edges/s, identity and the ratios."""
    cg = r.get("cugraph")
    cugraph = None if cg is None else cg.get("edges_per_s", cg.get("skipped", cg.get("error")))
    return {"graph": r.get("graph"), "sampler": r.get("sampler"),
            "sampled_edges": r.get("sampled_edges"), "identical": r.get("identical"),
            "gpu_edges_per_s": r.get("gpu", {}).get("edges_per_s"),
            "cpu_edges_per_s": r.get("cpu", {}).get("edges_per_s"),
            "cpu_threads": r.get("cpu", {}).get("threads"),
            "gpu_over_cpu": r.get("gpu_over_cpu"), "ratio_to_bound": r.get("ratio_to_bound"),
            "cugraph_edges_per_s": cugraph, "ratio_to_cugraph": r.get("ratio_to_cugraph")}


def gpu_bench_numbers(path, log):
    """Key numbers of ``run.py``'s JSON, or of its printed rows when it never wrote one."""
    if path and Path(path).is_file():
        doc = load(path)
        out = {k: doc.get(k) for k in ("device", "cupy", "random_sectors_per_s",
                                        "bound_edges_per_s", "sectors_per_edge_model")}
        rows = doc.get("runs", [])
    else:
        out, rows = {"partial": "run.py wrote no JSON; rows read from its log"}, []
        rows = bench_rows_from_log(log) if log and Path(log).is_file() else []
    out["runs"] = [bench_row(r) for r in rows]
    out["all_identical"] = bool(rows) and all(r.get("identical") is True for r in rows)
    return out


def sweep_numbers(directory):
    """Per scaling file (one per p): per sampler, c and k the slowest rank's phase times,
    the bytes of all ranks and the edges/s."""
    files = sorted(Path(directory).glob("*_p*.json"), key=lambda f: load(f)["config"]["p"])
    per_p = {}
    for f in files:
        doc = load(f)
        runs = [{"sampler": r["sampler"], "strategy": r["strategy"], "c": r["c"], "k": r["k"],
                 **{key: r["summary"][key] for key in
                    ("sample_s_max", "fetch_s_max", "sampling_bytes", "feature_bytes",
                     "edges_per_s", "ratio_to_push_ideal")}} for r in doc["runs"]]
        per_p[str(doc["config"]["p"])] = {"file": f.name, "cores": doc["config"].get("cores"),
                                          "complete": doc.get("complete", True), "runs": runs}
    return {"ranks_done": sorted(int(p) for p in per_p), "per_p": per_p}


def machine_numbers(path):
    m = load(path)
    return {k: m.get(k) for k in ("name", "cores_per_node", "alpha_s", "alpha_peer_s",
                                  "beta_intra", "sample_rate", "gather_rate")}


def rel_error(pred, meas):
    return abs(pred - meas) / meas if meas else None


def validation_numbers(path):
    """Median |error| in % by p over the runs with c < p (as ``model.py validate`` prints),
    and over all p > 1 together; ``fitted`` marks the p the overheads were fitted to."""
    rows = [r for r in load(path) if r["c"] < r["p"]]
    by_p = {}
    for p in sorted({r["p"] for r in rows}):
        by_p[str(p)] = {**median_errors([r for r in rows if r["p"] == p]),
                        "fitted": any(r.get("fitted") for r in rows if r["p"] == p)}
    return {"median_abs_error_pct_by_p": by_p,
            "median_abs_error_pct_all": median_errors(rows) if rows else None}


def median_errors(rows):
    out = {"runs": len(rows)}
    for name in ("bytes", "feature_bytes", "sample_s", "fetch_s"):
        errs = [e for e in (rel_error(r[f"{name}_pred"], r[f"{name}_meas"]) for r in rows)
                if e is not None]
        out[name] = round(100 * statistics.median(errs), 2) if errs else None
    return out


def part(args):
    """Record one part: its status and seconds, ``--set`` fields, numbers read from files."""
    summary = load(args.summary)
    entry = {"status": args.status, "seconds": args.seconds}
    if args.reason:
        entry["reason"] = args.reason
    for item in args.set or []:
        key, _, value = item.partition("=")
        entry[key] = parse_value(value)
    read_sources(args, entry)
    if entry["status"] == "ok" and "error" in entry:
        entry["status"] = "failed"        # its results are not there to read
    if args.junit and entry["status"] == "ok" and not entry.get("passed"):
        entry["status"] = "failed"        # every test skipped on a device is no pass
        entry["reason"] = f"no test passed ({entry.get('skipped', 0)} skipped)"
    summary["parts"][args.name] = entry
    save(args.summary, summary)


def read_sources(args, entry):
    """The numbers of the files a part names, into ``entry`` (``error`` if one is unreadable)."""
    readers = [(args.junit, lambda: junit_numbers(args.junit)),
               (args.gpu_run or args.bench_log,
                lambda: gpu_bench_numbers(args.gpu_run, args.bench_log)),
               (args.sweep_dir, lambda: sweep_numbers(args.sweep_dir)),
               (args.machine, lambda: machine_numbers(args.machine)),
               (args.validation, lambda: validation_numbers(args.validation))]
    for source, read in readers:
        if not source:
            continue
        try:
            entry.update(read())
        except (OSError, ValueError, KeyError, TypeError, ET.ParseError) as exc:
            entry.setdefault("error", f"reading {source}: {type(exc).__name__}: {exc}")
    if args.validation_fit and Path(args.validation_fit).is_file():
        try:
            entry["fit_below"] = {"p": args.fit_below,
                                  **validation_numbers(args.validation_fit)}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            entry["fit_below"] = {"p": args.fit_below, "error": f"{type(exc).__name__}: {exc}"}


def finish(args):
    """Overall status (``ok`` unless a part failed, timed out or never ran), elapsed time; a
    table of the parts on stdout. Exit status 0 when ok."""
    summary = load(args.summary)
    parts = summary["parts"]
    bad = [n for n, p in parts.items() if p["status"] not in ("ok", "skipped")]
    summary["status"] = "failed" if bad else "ok"
    summary["failed_parts"] = bad
    summary["finished"] = now()
    summary["elapsed_s"] = args.elapsed
    save(args.summary, summary)
    print(f"summary ({summary['mode']}, {args.elapsed} s of {summary['deadline_s']} s): "
          f"{summary['status']}")
    for name, p in parts.items():
        extra = p.get("reason") or p.get("error") or ""
        print(f"  {name:10s} {p['status']:8s} {p.get('seconds', '')!s:>5} s  {extra}")
    return 0 if not bad else 1


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    i = sub.add_parser("init")
    i.add_argument("summary")
    i.add_argument("--mode", choices=("device", "dry-run"), required=True)
    i.add_argument("--deadline", type=int, required=True)
    i.add_argument("--gpu", default="", help="nvidia-smi's line for the GPU, if any")
    pa = sub.add_parser("part")
    pa.add_argument("summary")
    pa.add_argument("name", choices=PARTS)
    pa.add_argument("--status", choices=STATUSES, required=True)
    pa.add_argument("--seconds", type=float, default=None)
    pa.add_argument("--reason", default=None)
    pa.add_argument("--set", action="append", metavar="KEY=VALUE")
    pa.add_argument("--junit")
    pa.add_argument("--gpu-run")
    pa.add_argument("--bench-log", help="run.py's console output (rows of a run cut short)")
    pa.add_argument("--sweep-dir")
    pa.add_argument("--machine")
    pa.add_argument("--validation")
    pa.add_argument("--validation-fit")
    pa.add_argument("--fit-below", type=int, default=None)
    f = sub.add_parser("finish")
    f.add_argument("summary")
    f.add_argument("--elapsed", type=float, default=None)
    args = ap.parse_args(argv)
    return {"init": init, "part": part, "finish": finish}[args.command](args) or 0


if __name__ == "__main__":
    sys.exit(main())
