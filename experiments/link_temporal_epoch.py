"""One epoch of temporal link prediction (training + one validation pass), timed by phase.

    python experiments/link_temporal_epoch.py msg.h5 [--fanouts 10,10 --eval-negatives 20
        --eval-batch 512] [--out R.json]

Runs what ``spsample train msg.h5 --task link`` runs for one epoch (GraphSAGE encoder,
dot-product decoder, binary cross-entropy with one negative per edge, strict triplet
negatives for validation), in this process, with one torch thread and no background
pipeline, so that the process's CPU seconds measure the work even on a machine shared with
other jobs. Without the three flags it takes the settings ``fit_link`` chooses (the code in
use must have ``spsample.train.link.link_settings``). Prints and writes: wall and CPU seconds
of the training epoch and of the validation pass, sampled vertices of each, the peak resident
memory of the process, and the settings.
"""

import argparse
import json
import resource
import time

import torch

import spsample
from spsample.train.link import _Task, _encoder, _features, _scores


def _ints(text):
    return tuple(int(x) for x in text.split(","))


def _vertices(batch):
    return sum(int(v.shape[0]) for v in batch.n_id_dict.values())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dataset")
    ap.add_argument("--fanouts", type=_ints)
    ap.add_argument("--eval-negatives", type=int)
    ap.add_argument("--eval-batch", type=int)
    ap.add_argument("--batch-size", type=int, default=512)
    ap.add_argument("--out")
    args = ap.parse_args()
    torch.set_num_threads(1)
    task = _Task(spsample.load(args.dataset), None, "auto", 0)
    fanouts, negatives, eval_batch = args.fanouts, args.eval_negatives, args.eval_batch
    if None in (fanouts, negatives, eval_batch):
        from spsample.train.link import link_settings
        fanouts, negatives, eval_batch = link_settings(
            task, fanouts=fanouts, eval_negatives=negatives, eval_batch_size=eval_batch,
            batch_size=args.batch_size, neg_ratio=1.0, seed=0)
    torch.manual_seed(0)
    model = _encoder(task, _features(task), 64, 64, len(fanouts), 0.5)
    opt = torch.optim.Adam(model.parameters(), lr=0.005)

    def loader(part, batch, **kw):
        rel, ei = task.edges[part]
        return spsample.LinkLoader(task.graph, (rel, ei), sampler=spsample.NodeWise(
            list(fanouts)), batch_size=batch, bulk_size=4, edge_time=task.times[part],
            exclude_seed_edges=True, seed=0, pipeline=False, **kw)
    result = dict(fanouts=list(fanouts), eval_negatives=negatives, eval_batch=eval_batch)
    wall, cpu, vertices = time.perf_counter(), time.process_time(), 0
    model.train()
    for b in loader("train", args.batch_size, neg_ratio=1.0):
        opt.zero_grad()
        score, label = _scores(task, model, b)
        torch.nn.functional.binary_cross_entropy_with_logits(score, label).backward()
        opt.step()
        vertices += _vertices(b)
    result["train"] = dict(wall=time.perf_counter() - wall, cpu=time.process_time() - cpu,
                           vertices=vertices)
    wall, cpu, vertices = time.perf_counter(), time.process_time(), 0
    model.eval()
    with torch.no_grad():
        for b in loader("val", eval_batch, neg_sampling="triplet", neg_ratio=negatives,
                        strict=True, shuffle=False):
            _scores(task, model, b)
            vertices += _vertices(b)
    result["validation"] = dict(wall=time.perf_counter() - wall,
                                cpu=time.process_time() - cpu, vertices=vertices)
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    with open("/proc/loadavg") as fh:
        result["load"] = fh.read().split()[:3]
    print(json.dumps(result))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump(result, fh, indent=2)


if __name__ == "__main__":
    main()
