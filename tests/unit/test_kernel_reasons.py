"""lower.kernel_reasons (report.json `kernel_reason`): why the faster kernels of a board stepped aside
for a node, with synthetic variants on a Softmax node (the reasons do not depend on the op): the
variant's own why_not first, then the board's missing feature, the layout, `rounding: onnx` for a
registry.tflm_only kernel, and the generic "no <isa> kernel for these parameters" when a variant
gives no reason (why_not None everywhere still works); None when the chosen kernel is the fastest
the op has, or nothing faster exists for it."""
from __future__ import annotations

from dataclasses import replace

import pytest
from graph_builder import GraphBuilder

from toolchain.lower import kernel_reasons
from toolchain.ops.registry import KernelVariant, opdef, tflm_only

def _variant(isa: str, name: str = "", **kw) -> KernelVariant:
    return KernelVariant(name or isa, isa, f"{isa}/x.c.j2", f"ecc_{isa}", **kw)


@pytest.fixture
def softmax(monkeypatch):
    """(graph, node, set_variants(*variants)) for one Softmax node under rounding `tflm`."""
    b = GraphBuilder()
    y = b.softmax(b.input("x", (1, 10)))
    g = b.build(y)
    g = replace(g, meta={**g.meta, "rounding": "tflm"})
    node = g.nodes[0]
    return g, node, lambda *vs: monkeypatch.setattr(opdef(node), "variants", vs)


def _reason(g, node, chosen: KernelVariant, prefs=("dsp", "portable"), features=()) -> str | None:
    return kernel_reasons(g, {node.name: chosen}, prefs, features)[node.name]


def test_generic_reason_without_why_not(softmax):
    g, node, set_variants = softmax
    portable = _variant("portable")
    set_variants(_variant("dsp", applies=lambda n, gr: False), portable)
    assert _reason(g, node, portable) == "no dsp kernel for these parameters"


def test_the_variants_own_reason_wins_over_a_generic_one(softmax):
    g, node, set_variants = softmax
    portable = _variant("portable")
    set_variants(_variant("dsp", "dsp_a", applies=lambda n, gr: False),
                 _variant("dsp", "dsp_b", applies=lambda n, gr: False, why_not=lambda n, gr: "weights hold -128"),
                 _variant("dsp", "dsp_c", applies=lambda n, gr: False, why_not=lambda n, gr: "second reason"), portable)
    assert _reason(g, node, portable) == "dsp: weights hold -128"


def test_a_tflm_only_kernel_under_rounding_onnx(softmax):
    g, node, set_variants = softmax
    portable = _variant("portable", "portable_onnx")
    set_variants(_variant("dsp", applies=tflm_only(lambda n, gr: True)), portable)
    onnx = replace(g, meta={**g.meta, "rounding": "onnx"})
    assert _reason(onnx, node, portable) == "rounding onnx: no dsp twin"


def test_missing_board_feature_and_layout(softmax):
    g, node, set_variants = softmax
    portable = _variant("portable")
    set_variants(_variant("neon", requires=frozenset({"dotprod"})), portable)
    assert _reason(g, node, portable, ("neon", "portable")) == "neon: needs dotprod, which this board lacks"
    assert _reason(g, node, portable, ("neon", "portable"), ("dotprod",)) == \
        "optimize ram: a kernel with less scratch than neon"  # it applies: only `optimize: ram` passes it over
    set_variants(_variant("neon", requires=frozenset({"dotprod"}), requires_why="needs SDOT for speed"), portable)
    assert _reason(g, node, portable, ("neon", "portable")) == \
        "neon: needs SDOT for speed (dotprod, which this board lacks)"  # requires_why: the user's words
    set_variants(_variant("neon", layouts=frozenset({"CHWN"})), portable)
    assert _reason(g, node, portable, ("neon", "portable")) == "neon: no kernel for the NHWC layout"


def test_none_when_the_fastest_applies_or_nothing_faster_exists(softmax):
    g, node, set_variants = softmax
    dsp, portable = _variant("dsp"), _variant("portable")
    set_variants(dsp, portable)
    assert _reason(g, node, dsp) is None
    set_variants(portable)  # no dsp kernel at all for the op: portable is the fastest it has
    assert _reason(g, node, portable) is None
    set_variants(dsp, portable)  # `kernels: portable` cuts the preference to portable: nothing to explain
    assert _reason(g, node, portable, ("portable",)) is None


def test_real_kernels_on_the_m4_pass_when_the_dsp_kernel_applies():
    """The registered ops: a 1x1 conv with 8 input channels gets the DSP kernel (reason None); with 6
    input channels the 1x1 kernel steps aside but the general DSP conv applies (reason None); a
    grouped conv runs portable C with a reason naming dsp."""
    from graph_builder import random_inputs

    from quantize import quantize
    from toolchain.lower import select_kernels

    for cin, groups, dsp in ((8, 1, True), (6, 1, True), (8, 2, False)):
        b = GraphBuilder()
        x = b.input("x", (1, 4, 4, cin))
        y = b.conv(x, 8, 1, groups=groups)
        g = b.build(y)
        calib = {"x": random_inputs(g)["x"][None]}
        q = replace(quantize(g, calib, "minmax"), meta={**g.meta, "rounding": "tflm"})
        chosen = select_kernels(q, ("dsp", "portable"))
        reasons = kernel_reasons(q, chosen, ("dsp", "portable"))
        conv = q.nodes[-1].name
        assert (chosen[conv].isa == "dsp") == dsp and (reasons[conv] is None) == dsp, (cin, groups, reasons[conv])
        if not dsp:
            assert "dsp" in reasons[conv]
