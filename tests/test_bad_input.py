"""Every bad input of the sampling API raises a typed SpsampleError naming the argument."""

import numpy as np
import pytest

import spsample
from spsample import ArgumentError, ArgumentTypeError, LADIES, NodeWise, SamplerError, SeedError

from graphs import random_graph


@pytest.fixture
def g():
    return random_graph(20, 80, seed=1)


@pytest.mark.parametrize("seeds,error", [
    ([], SeedError),                       # empty
    ([0, 20], SeedError),                  # out of range
    ([0, -1], SeedError),                  # negative
    ([0.0, 1.0], ArgumentTypeError),       # float seeds
    (np.array([0.5]), ArgumentTypeError),
    ([[0, 1], [2, 3]], SeedError),         # 2-D
    ([3, 4, 3], SeedError),                # duplicated within a minibatch
    (["a"], ArgumentTypeError),
])
def test_bad_seeds(g, seeds, error):
    with pytest.raises(error, match="'seeds'"):
        spsample.sample(g, seeds, sampler=NodeWise([2]), batch_size=4)


def test_duplicate_seeds_across_minibatches_allowed(g):
    out = spsample.sample(g, [3, 4, 3, 4], sampler=NodeWise([2]), batch_size=2)
    assert [m.seeds.tolist() for m in out] == [[3, 4], [3, 4]]


@pytest.mark.parametrize("fanouts", [[], [0], [-2], [3, 0], [1.5]])
def test_bad_fanouts(fanouts):
    with pytest.raises((SamplerError, ArgumentTypeError), match="'fanouts'"):
        NodeWise(fanouts)
    with pytest.raises((SamplerError, ArgumentTypeError), match="'fanouts'"):
        LADIES(fanouts)


def test_fanouts_not_a_sequence():
    with pytest.raises(ArgumentTypeError, match="'fanouts'"):
        NodeWise(5)


def test_fastgcn_rejects_all_neighbours():
    with pytest.raises(SamplerError, match="'fanouts'"):
        spsample.FastGCN([-1])


def test_unknown_sampler_options():
    with pytest.raises(SamplerError, match="replacement"):
        NodeWise([2], replacement=True)
    with pytest.raises(SamplerError, match="weighted"):
        LADIES([2], weighted=True)
    with pytest.raises(ArgumentTypeError, match="'replace'"):
        NodeWise([2], replace="yes")


@pytest.mark.parametrize("name,value,error", [
    ("batch_size", 0, ArgumentError), ("batch_size", -3, ArgumentError),
    ("batch_size", 2.0, ArgumentTypeError), ("seed", -1, ArgumentError),
    ("seed", 1.5, ArgumentTypeError), ("seed", 2**64, ArgumentError),
    ("epoch", -1, ArgumentError), ("epoch", 2**24, ArgumentError),
    ("batch_offset", -1, ArgumentError), ("batch_offset", 2**32, ArgumentError),
])
def test_bad_scalars(g, name, value, error):
    kw = dict(sampler=NodeWise([2]), batch_size=4, seed=0, epoch=0, batch_offset=0)
    kw[name] = value
    with pytest.raises(error, match=f"'{name}'"):
        spsample.sample(g, [0, 1], **kw)


def test_bad_sampler_and_options(g):
    with pytest.raises(ArgumentTypeError, match="'sampler'"):
        spsample.sample(g, [0], sampler="nodewise", batch_size=1)
    with pytest.raises(SamplerError, match="strategy"):
        spsample.sample(g, [0], sampler=NodeWise([1]), batch_size=1, strategy="push")
    with pytest.raises(SamplerError, match="'weighted'"):
        spsample.sample(g, [0], sampler=NodeWise([1], weighted=True), batch_size=1)
    with pytest.raises(ArgumentTypeError, match="'graph'"):
        spsample.sample(object(), [0], sampler=NodeWise([1]), batch_size=1)


def test_inputs_not_modified(g):
    seeds = np.array([5, 1, 7, 2], dtype=np.int32)
    before = seeds.copy()
    indices = g.indices.copy()
    spsample.sample(g, seeds, sampler=LADIES([3]), batch_size=2)
    spsample.sample(g, seeds, sampler=NodeWise([3]), batch_size=2)
    assert np.array_equal(seeds, before) and seeds.dtype == np.int32
    assert np.array_equal(g.indices, indices)
