"""Helpers shared by the planner tests (tests/unit/test_planners*.py): arena of a plan, a plan
checked twice (check_no_overlap and an independent pairwise check), Buffer lists, seeded random
lifetimes and the in-place inputs of the portable kernels."""
from __future__ import annotations

from toolchain.lower import select_kernels
from toolchain.memory import Buffer, MemoryPlan, check_no_overlap, inplace_inputs


def arena_of(buffers, offsets, a):
    return -(-max((offsets[b.name] + b.size for b in buffers), default=0) // a) * a


def checked(buffers, offsets, a, name="t"):
    """The plan, after check_no_overlap and an independent pairwise check."""
    plan = MemoryPlan(tuple(buffers), offsets, arena_of(buffers, offsets, a), a, name,
                      {b.name: b.name for b in buffers})
    check_no_overlap(plan)
    for i, x in enumerate(buffers):
        assert offsets[x.name] % a == 0
        for y in buffers[i + 1:]:
            if x.first <= y.last and y.first <= x.last:
                ox, oy = offsets[x.name], offsets[y.name]
                assert ox + x.size <= oy or oy + y.size <= ox, (x, y, ox, oy)
    return plan


def bufs(*spec):
    return [Buffer(*s) for s in spec]


def random_buffers(rng, n_max=24, steps_max=14):
    n, steps = rng.randrange(1, n_max), rng.randrange(1, steps_max)
    out = []
    for i in range(n):
        f = rng.randrange(steps)
        last = rng.randrange(f, min(steps, f + rng.choice([1, 2, 4, steps])))
        out.append(Buffer(f"t{i}", rng.choice([rng.randrange(1, 64), rng.randrange(1, 4096), 1024]), f, last))
    return out


def inplace_of(g):
    return inplace_inputs(select_kernels(g, ["portable"]))
