"""graph/lineage.py's planned recipes (`recipe_plan`, `planned_recipes`: what a plan template's replay uses)
against the walk they stand for (`recipe`, with one memo over the outputs in order), on random graphs from
tests/fuzzgraph.py: shared values, constants, views and reductions, leaves with and without lineage (of
random weights), several outputs (one of them reachable from another), and MAX_RECIPE_NODES low enough to
cut some recipes. Equal means the same nodes: op, argument, shape, dtype, pin, weight and origin, the same
sharing, and the very same objects where the walk stops (a leaf's lineage, a constant)."""

from __future__ import annotations

import random

import fuzzgraph
import numpy as np
import pytest

import zyx_dist as zd
from zyx_dist.fuse.plan_cache import structure
from zyx_dist.graph import ir, lineage
from zyx_dist.graph.ir import Node, Op


def _graph(seed: int) -> list[Node]:
    prog = fuzzgraph.program_from_seed(seed)
    vals: list = list(fuzzgraph.zd_inputs(prog))
    for step in prog.steps:
        vals.append(fuzzgraph._apply(step, vals, "zd"))
    outs = [vals[o].node for o in prog.outputs]
    inner = [v.node for v in vals[len(prog.inputs):] if v.node.op is not Op.LEAF]
    if inner:  # an output that another output reaches too
        outs.insert(random.Random(seed).randrange(len(outs) + 1), inner[len(inner) // 2])
    return [n for n in outs if n.op is not Op.LEAF and n.op is not Op.CONST]


def _same(a: Node | None, b: Node | None) -> None:
    """`a` and `b` are the same recipe (see the module's docstring), checked without recursion."""
    pairs, seen = [(a, b)], {}
    while pairs:
        x, y = pairs.pop()
        if x is None or y is None or x.op is Op.LEAF or x.op is Op.CONST or x.origin is None:
            assert x is y  # (where the walk stops: the same objects)
            continue
        if x.id in seen:
            assert seen[x.id] is y  # the same sharing
            continue
        seen[x.id] = y
        assert (x.op, repr(x.arg), x.shape, x.dtype, x.device, x.weight) == \
               (y.op, repr(y.arg), y.shape, y.dtype, y.device, y.weight)
        assert x.origin() is y.origin() and len(x.srcs) == len(y.srcs)
        if y.op in (Op.PAD, Op.FLIP) and y.size <= ir.SMALL_VIEW:  # noted as the walk's are
            assert y in ir.SMALL_OFFSET_VIEWS
        pairs.extend(zip(x.srcs, y.srcs))


# the first 80 seeds whose programs compute something (a few only return inputs)
SEEDS = [seed for seed in range(120) if _graph(seed)][:80]


@pytest.mark.parametrize("seed", SEEDS)
def test_planned_recipes_are_the_walks_recipes(seed, monkeypatch):
    rng = random.Random(seed)
    monkeypatch.setattr(lineage, "MAX_RECIPE_NODES", rng.choice([100_000, 100_000, 12, 40]))
    targets = _graph(seed)
    _rows, order = structure(targets)
    for n in order:
        if n.op is Op.LEAF:  # most leaves have lineage, some do not
            n.lineage = None
            if rng.random() < 0.85:
                n.lineage = Node(Op.LEAF, (), None, n.shape, n.dtype, host=np.zeros(1, np.float32))
                n.lineage.weight = rng.randint(1, 30)
    at = {n.id: i for i, n in enumerate(order)}
    outputs = [at[t.id] for t in targets]
    memo: dict = {}
    walked = [lineage.recipe(order[p], memo) for p in outputs]
    planned = lineage.planned_recipes(lineage.recipe_plan(order, outputs), order)
    assert len(planned) == len(walked)
    for a, b in zip(walked, planned):
        _same(a, b)
    again = lineage.planned_recipes(lineage.recipe_plan(order, outputs), order)  # a plan is kept and reused
    for a, b in zip(walked, again):
        _same(a, b)


def test_a_plan_is_the_structures_not_the_nodes():
    """A plan made on one realize's nodes gives the next realize's recipes (same structure, new nodes)."""
    x = zd.tensor(np.ones((4, 4), np.float32))

    def build():
        y = zd.relu(x @ x + 1.0)
        return y.node, structure([y.node])[1]

    _first, order1 = build()
    for n in order1:
        if n.op is Op.LEAF:
            n.lineage = Node(Op.LEAF, (), None, n.shape, n.dtype, host=np.zeros(1, np.float32))
    plan = lineage.recipe_plan(order1, [0])
    second, order2 = build()
    (r,) = lineage.planned_recipes(plan, order2)
    _same(lineage.recipe(second, {}), r)
    assert r.origin() is second
