"""Epoch time of a GraphSAGE training loop with the loader's pipeline on and off.

The pipeline samples and fetches bulk i+1 in a background thread while the model trains on
bulk i (DSP's producer–consumer chain). This script trains GraphSAGE on an R-MAT
graph with random 128-dim features and labels, and reports per configuration:

* ``produce_s``: one epoch of the loader alone (sampling + feature fetch + tensor wrapping),
  no model, pipeline off;
* ``train_s``: one epoch of forward/backward/step on batches prepared beforehand;
* ``off_s`` / ``on_s``: the training epoch with the pipeline off / on (median of the timed
  epochs, after one warm-up epoch);
* ``ideal_s = max(produce_s, train_s)`` (perfect overlap) and ``serial_s = produce_s +
  train_s``; ``speedup = off_s / on_s``, ``overlap = (off_s - on_s) / min(produce_s,
  train_s)`` (1 = everything that could be hidden was hidden).

Example (2 cores: one torch thread, the sampler's kernels on the other)::

    python experiments/bench_pipeline.py --scale 16 --out experiments/results/pipeline.json
    python experiments/bench_pipeline.py --scale 16 --features-from hdf5

Batches are identical with the pipeline on and off (tests/test_loader.py); the script also
checks that the losses of the two runs agree.
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

import numpy as np


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--scale", type=int, default=16, help="R-MAT scale (2**scale vertices)")
    p.add_argument("--edge-factor", type=int, default=16)
    p.add_argument("--features", type=int, default=128, help="feature width")
    p.add_argument("--classes", type=int, default=16)
    p.add_argument("--seeds", type=int, default=16384, help="training seeds per epoch")
    p.add_argument("--batch-size", type=int, default=1024)
    p.add_argument("--bulk-size", type=int, default=4)
    p.add_argument("--fanouts", default="15,10,5")
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--epochs", type=int, default=3, help="timed epochs (plus one warm-up)")
    p.add_argument("--queue-size", type=int, default=2)
    p.add_argument("--threads", type=int, default=1, help="torch threads")
    p.add_argument("--features-from", choices=("memory", "hdf5"), default="memory",
                   help="feature rows from a NumPy array or read from an HDF5 file per bulk")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", default=None, help="write the JSON here (also printed)")
    return p.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    import torch

    import spsample
    from spsample import native as _native
    from spsample.train import GraphSAGE

    torch.set_num_threads(args.threads)
    fanouts = [int(f) for f in args.fanouts.split(",")]
    t = time.perf_counter()
    graph = spsample.rmat(args.scale, args.edge_factor, seed=args.seed)
    rng = np.random.default_rng(args.seed)
    x = rng.standard_normal((graph.num_nodes, args.features), dtype=np.float32)
    y = rng.integers(0, args.classes, graph.num_nodes)
    seeds = rng.choice(graph.num_nodes, size=min(args.seeds, graph.num_nodes), replace=False)
    setup_s = time.perf_counter() - t

    tmp = None
    features = x
    if args.features_from == "hdf5":
        import h5py

        tmp = tempfile.NamedTemporaryFile(suffix=".h5", delete=False)
        tmp.close()
        with h5py.File(tmp.name, "w") as fh:
            fh.create_dataset("features", data=x, chunks=(256, args.features))
        features = tmp.name

    sampler = spsample.NodeWise(fanouts)

    def make_loader(pipeline):
        return spsample.Loader(graph, seeds, sampler=sampler, batch_size=args.batch_size,
                               bulk_size=args.bulk_size, features=features, labels=y,
                               seed=args.seed, pipeline=pipeline, queue_size=args.queue_size)

    def make_model():
        torch.manual_seed(args.seed)
        model = GraphSAGE(args.features, args.hidden, args.classes, num_layers=len(fanouts),
                          dropout=0.0, conv="torch")
        return model, torch.optim.Adam(model.parameters(), lr=0.01)

    def step(model, opt, batch):
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(model(batch), batch.target)
        loss.backward()
        opt.step()
        return float(loss.detach())

    # the producer alone, and the trainer alone on prepared batches
    loader = make_loader(False)
    t = time.perf_counter()
    prepared = list(loader.iter_epoch(0))
    produce_s = time.perf_counter() - t
    model, opt = make_model()
    step(model, opt, prepared[0])                      # warm-up
    t = time.perf_counter()
    for batch in prepared:
        step(model, opt, batch)
    train_s = time.perf_counter() - t
    edges = sum(b.num_edges for b in prepared)
    del prepared

    runs = {}
    for pipeline in (False, True):
        loader = make_loader(pipeline)
        model, opt = make_model()
        times, losses = [], []
        for epoch in range(args.epochs + 1):
            t = time.perf_counter()
            epoch_losses = [step(model, opt, batch) for batch in loader.iter_epoch(epoch)]
            if epoch:                                   # epoch 0 warms up
                times.append(time.perf_counter() - t)
            losses.append(epoch_losses)
        runs["on" if pipeline else "off"] = dict(times=times, losses=losses)
    if runs["on"]["losses"] != runs["off"]["losses"]:
        print("warning: losses differ between pipeline on and off", file=sys.stderr)
    if tmp is not None:
        os.unlink(tmp.name)

    off_s = statistics.median(runs["off"]["times"])
    on_s = statistics.median(runs["on"]["times"])
    hideable = min(produce_s, train_s)
    result = dict(
        graph=dict(kind="rmat", scale=args.scale, edge_factor=args.edge_factor,
                   num_nodes=int(graph.num_nodes), num_edges=int(graph.num_edges)),
        features=args.features, features_from=args.features_from, seeds=int(seeds.size),
        batch_size=args.batch_size, bulk_size=args.bulk_size, fanouts=fanouts,
        hidden=args.hidden, queue_size=args.queue_size, torch_threads=args.threads,
        sampling_path=_native.active_path(), native_threads=_native.get_num_threads(),
        batches_per_epoch=-(-int(seeds.size) // args.batch_size),
        sampled_edges_per_epoch=int(edges), setup_s=setup_s,
        produce_s=produce_s, train_s=train_s, serial_s=produce_s + train_s,
        ideal_s=max(produce_s, train_s), off_s=off_s, on_s=on_s,
        off_epochs_s=runs["off"]["times"], on_epochs_s=runs["on"]["times"],
        speedup=off_s / on_s, overlap=(off_s - on_s) / hideable if hideable > 0 else 0.0,
        identical_losses=runs["on"]["losses"] == runs["off"]["losses"],
        cpu_count=os.cpu_count(), load_average=list(os.getloadavg()))
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
