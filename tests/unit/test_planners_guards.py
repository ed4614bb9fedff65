"""Debug guards in the plan (toolchain.memory, `debug_guards: true`): every buffer is planned
GUARD_BYTES larger so its guard (from its last byte to its aligned end) never shares a byte with a
buffer live at the same time, the arena ends with a guard of its own, and the checker treats a
guard as part of its buffer. Also the harness lines the runner reads (targets.runlog), the YAML
key and the C string literals of buffer names."""
from __future__ import annotations

import random

import pytest
from graph_builder import GraphBuilder
from planner_cases import inplace_of, random_buffers

from toolchain.memory import GUARD_BYTES, MemoryPlan, PlanError, check_no_overlap, live_bound, plan_memory
from toolchain.planners import plan_best


def residual_graph():
    gb = GraphBuilder()
    x = gb.input("x", (1, 5, 5, 3))  # 75 B: odd sizes leave alignment slack for the guards to fill
    a = gb.conv(x, 13, 1, out="A")
    b = gb.conv(a, 13, 1, out="B")
    return gb.build(gb.fc(gb.reshape(gb.add(a, b, out="S"), (1, 325)), 10, out="Y"))


@pytest.mark.parametrize("alignment", [4, 16, 64])
def test_guards_follow_every_buffer_and_never_touch_a_live_buffer(alignment):
    g = residual_graph()
    scratch = {"n_B": 40}
    plan = plan_memory(g, scratch, alignment, inplace=inplace_of(g), guard_bytes=GUARD_BYTES)
    guards = plan.guards()
    assert [x[0] for x in guards] == [b.name for b in plan.buffers] + ["<arena end>"]
    end_name, end_off, end_len, end_first, end_last = guards[-1]
    assert end_off + end_len == plan.arena_bytes and end_len == max(GUARD_BYTES, alignment)
    assert (end_first, end_last) == (0, max(b.last for b in plan.buffers))
    by = {b.name: b for b in plan.buffers}
    for name, off, n, first, last in guards[:-1]:
        b = by[name]
        assert off == plan.offsets[name] + b.size and n >= GUARD_BYTES  # right after the last byte
        assert (off + n) % alignment == 0 and off + n <= end_off        # up to its aligned end
        assert (first, last) == (b.first, b.last)
        for o in plan.buffers:  # no byte of the guard belongs to a buffer live at the same time
            if o.name != name and o.first <= last and first <= o.last:
                oo = plan.offsets[o.name]
                assert oo + o.size <= off or off + n <= oo, (name, o.name)
    assert plan.arena_bytes == live_bound(plan.planned_buffers(), alignment) + end_len
    bare = plan_memory(g, scratch, alignment, inplace=inplace_of(g))
    assert bare.guards() == [] and bare.planned_buffers() == list(bare.buffers) and bare.end_guard_bytes == 0
    assert plan.arena_bytes > bare.arena_bytes
    assert plan_memory(g, scratch, alignment, inplace=inplace_of(g), guard_bytes=GUARD_BYTES) == plan  # deterministic


def test_random_lifetimes_with_guards_check_clean_and_a_buffer_in_a_guard_is_rejected():
    rng = random.Random(7)
    rejected = 0
    for _ in range(100):
        bs, a = random_buffers(rng), rng.choice([4, 16, 32])
        guarded = [type(b)(b.name, b.size + GUARD_BYTES, b.first, b.last) for b in bs]
        _, off = plan_best(guarded, a)
        top = max(off[b.name] + b.size for b in guarded)
        arena = -(-top // a) * a + max(GUARD_BYTES, a)
        plan = MemoryPlan(tuple(bs), off, arena, a, "t", {}, GUARD_BYTES)
        check_no_overlap(plan)
        pairs = [(x, y) for i, x in enumerate(bs) for y in bs[i + 1:]
                 if x.first <= y.last and y.first <= x.last and x.size % a == 0]
        if not pairs:
            continue
        x, y = rng.choice(pairs)  # y moved right behind x: legal without guards, inside x's guard with them
        moved = {**off, y.name: off[x.name] + x.size}
        clear = all(not (o.first <= y.last and y.first <= o.last) or o.name == y.name or
                    moved[o.name] + o.size <= moved[y.name] or moved[y.name] + y.size <= moved[o.name] for o in bs)
        big = max(arena, max(moved[b.name] + b.size + GUARD_BYTES for b in bs) + 2 * a)
        if clear:
            check_no_overlap(MemoryPlan(tuple(bs), moved, -(-big // a) * a, a, "t", {}))  # fine unguarded
        with pytest.raises(PlanError):
            check_no_overlap(MemoryPlan(tuple(bs), moved, -(-big // a) * a, a, "t", {}, GUARD_BYTES))
        rejected += 1
    with pytest.raises(PlanError, match="outside"):  # nothing may reach into the arena's end guard
        check_no_overlap(MemoryPlan(tuple(bs), off, arena - a, a, "t", {}, GUARD_BYTES))
    assert rejected > 50


def test_harness_lines_parse_into_a_guard_fault_and_a_stack_figure():
    from targets.runlog import parse_guard, parse_stack

    f = parse_guard("ECC_GUARD OP=3 BUFFER=model/conv 2;x\nECC_GUARD_INFO op 3 (a) broke ...\n")
    assert f is not None and (f.kind, f.reason, f.op, f.buffer) == ("guard", "GUARD", 3, "model/conv 2;x")
    assert f.as_dict()["buffer"] == "model/conv 2;x" and "pc" not in f.as_dict()
    assert parse_guard("ECC_DONE samples=1 status=0\n") is None
    assert parse_stack("x\nECC_STACK used=516 painted=32768\n") == (516, 32768)
    assert parse_stack("ECC_STACK used=12\n") is None


def test_debug_guards_yaml_key_is_a_boolean(tmp_path):
    from toolchain.config import load_config
    from toolchain.errors import InputError

    cfg = tmp_path / "p.yaml"
    cfg.write_text("model: m.onnx\n")
    assert load_config(cfg, {}).debug_guards is False
    assert load_config(cfg, {"debug_guards": True}).debug_guards is True  # --debug-guards
    cfg.write_text("model: m.onnx\ndebug_guards: true\n")
    assert load_config(cfg, {}).debug_guards is True
    cfg.write_text("model: m.onnx\ndebug_guards: maybe\n")
    with pytest.raises(InputError, match="debug_guards` must be true or false"):
        load_config(cfg, {})


def test_names_become_safe_c_string_literals():
    from toolchain.codegen.context import c_string

    assert c_string('conv/1:0') == '"conv/1:0"'
    assert c_string('a"b\\c??=') == '"a\\"b\\\\c\\?\\?="'
    assert c_string("tab\there é") == '"tab?here ?"'
